//! The `smtp` and `email` objects of eve records, as Suricata writes them
//! (`output-json-smtp.c`, `output-json-email-common.c`, `rust/src/mime/smtp_log.rs`):
//! `smtp` has the session's `helo` and the mail's `mail_from` and `rcpt_to`; `email` the
//! mail's top-level `from`, `to` and `cc` headers, `status`, the `attachment` names and
//! the `url`s found (newest first), plus the custom header fields and MD5s configured.

use super::mime::MimeParser;
use super::SmtpTx;
use crate::record::{lossy_text, RecordWriter};

/// One mail with its session's HELO: what the records of a transaction show.
#[derive(Clone, Copy)]
pub struct SmtpView<'a> {
    pub helo: Option<&'a [u8]>,
    pub tx: &'a SmtpTx,
}

/// Header fields the `email` object can add (`custom:` of the eve-log `smtp` entry):
/// (key in the record, header name, kind), in Suricata's order.
pub const EMAIL_FIELDS: [(&str, &str, FieldKind); 16] = [
    ("reply_to", "reply-to", FieldKind::String),
    ("bcc", "bcc", FieldKind::Comma),
    ("message_id", "message-id", FieldKind::String),
    ("subject", "subject", FieldKind::String),
    ("x_mailer", "x-mailer", FieldKind::String),
    ("user_agent", "user-agent", FieldKind::String),
    ("received", "received", FieldKind::Array),
    ("x_originating_ip", "x-originating-ip", FieldKind::String),
    ("in_reply_to", "in-reply-to", FieldKind::String),
    ("references", "references", FieldKind::String),
    ("importance", "importance", FieldKind::String),
    ("priority", "priority", FieldKind::String),
    ("sensitivity", "sensitivity", FieldKind::String),
    ("organization", "organization", FieldKind::String),
    ("content_md5", "content-md5", FieldKind::String),
    ("date", "date", FieldKind::String),
];

/// How a custom header field is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// The first header's value.
    String,
    /// The first header's value split at commas outside quotes.
    Comma,
    /// Every header of that name.
    Array,
}

/// What the `email` object adds beyond its default fields (the eve-log `smtp` entry's
/// `custom:` and `md5:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmailOptions {
    /// Bit `i` set: [`EMAIL_FIELDS`]`[i]` is written.
    pub fields: u32,
    pub subject_md5: bool,
    pub body_md5: bool,
}

impl EmailOptions {
    /// Turns on the custom field named `name` (its record key, or its header name in any
    /// case); false if there is none of that name.
    pub fn enable_field(&mut self, name: &str) -> bool {
        match EMAIL_FIELDS.iter().position(|(key, header, _)| *key == name || header.eq_ignore_ascii_case(name)) {
            Some(i) => {
                self.fields |= 1 << i;
                true
            }
            None => false,
        }
    }
}

impl SmtpView<'_> {
    /// The fields of the `smtp` object.
    pub fn write_smtp(&self, w: &mut dyn RecordWriter) {
        if let Some(helo) = self.helo {
            w.bytes("helo", helo);
        }
        if let Some(from) = &self.tx.mail_from {
            w.bytes("mail_from", from);
        }
        if !self.tx.rcpt_to.is_empty() {
            w.open_list("rcpt_to");
            for r in &self.tx.rcpt_to {
                w.item_bytes(r);
            }
            w.close_list();
        }
    }

    /// Whether the mail has an `email` object (its DATA was MIME-parsed).
    pub fn has_email(&self) -> bool {
        self.tx.mime.is_some()
    }

    /// The fields of the `email` object (nothing without [`SmtpView::has_email`]).
    pub fn write_email(&self, w: &mut dyn RecordWriter, opts: &EmailOptions) {
        let Some(m) = self.tx.mime.as_deref() else { return };
        if let Some(from) = m.header(b"from") {
            w.str("from", &lossy_text(from));
        }
        write_comma_list(w, m, "to", b"to");
        write_comma_list(w, m, "cc", b"cc");
        w.str("status", "PARSE_DONE");
        if !m.attachments.is_empty() {
            w.open_list("attachment");
            for a in &m.attachments {
                w.item_str(&lossy_text(a));
            }
            w.close_list();
        }
        if !m.urls.is_empty() {
            w.open_list("url");
            for u in m.urls.iter().rev() {
                w.item_str(&lossy_text(u));
            }
            w.close_list();
        }
        for (i, (key, header, kind)) in EMAIL_FIELDS.iter().enumerate() {
            if opts.fields & (1 << i) == 0 {
                continue;
            }
            match kind {
                FieldKind::String => {
                    if let Some(v) = m.header(header.as_bytes()) {
                        w.str(key, &lossy_text(v));
                    }
                }
                FieldKind::Comma => write_comma_list(w, m, key, header.as_bytes()),
                FieldKind::Array => {
                    let mut values = m.main_headers().iter().filter(|h| h.name.eq_ignore_ascii_case(header.as_bytes()));
                    if let Some(first) = values.next() {
                        w.open_list(key);
                        w.item_str(&lossy_text(&first.value));
                        for h in values {
                            w.item_str(&lossy_text(&h.value));
                        }
                        w.close_list();
                    }
                }
            }
        }
        if opts.subject_md5 {
            if let Some(s) = m.header(b"subject") {
                w.str("subject_md5", &crate::applayer::tls::md5_hex(s));
            }
        }
        if opts.body_md5 {
            if let Some(md5) = &m.body_md5 {
                w.str("body_md5", md5);
            }
        }
    }
}

/// The first top-level header `header` split at commas outside double quotes, each item
/// without its leading spaces; nothing when it has no non-empty item.
fn write_comma_list(w: &mut dyn RecordWriter, m: &MimeParser, key: &str, header: &[u8]) {
    let Some(value) = m.header(header) else { return };
    let mut items: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    #[derive(PartialEq)]
    enum S {
        Start,
        Field,
        Quoted,
    }
    let mut s = S::Start;
    for (i, &c) in value.iter().enumerate() {
        match s {
            S::Start if c == b' ' || c == b'\t' => start += 1,
            S::Start if c == b'"' => s = S::Quoted,
            S::Start => s = S::Field,
            S::Field if c == b',' => {
                if i > start {
                    items.push(&value[start..i]);
                }
                start = i + 1;
                s = S::Start;
            }
            S::Field if c == b'"' => s = S::Quoted,
            S::Field => {}
            S::Quoted if c == b'"' => s = S::Field,
            S::Quoted => {}
        }
    }
    if value.len() > start {
        items.push(&value[start..]);
    }
    if items.is_empty() {
        return;
    }
    w.open_list(key);
    for item in items {
        w.item_str(&lossy_text(item));
    }
    w.close_list();
}

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::*;
    use crate::record::value::record;
    use serde_json::json;

    #[test]
    fn smtp_and_email_objects() {
        let st = session(
            b"220 mx\r\n250 ok\r\n250 ok\r\n250 ok\r\n250 ok\r\n354 go\r\n250 queued\r\n221 bye\r\n",
            b"EHLO GP\r\nMAIL FROM:<a@x> SIZE=10\r\nRCPT TO:<b@y>\r\nRCPT TO:<c@y>\r\nDATA\r\n\
From: \"A\" <a@x>\r\nTo: <b@y>, \"C, D\" <c@y>\r\nCc: ,\r\nSubject: hello\r\nReceived: r1\r\nReceived: r2\r\n\r\n\
go to http://e.com/x now\r\n.\r\nQUIT\r\n",
        );
        let view = SmtpView { helo: st.helo.as_deref(), tx: st.tx(0).expect("tx 0") };
        assert_eq!(
            record(|w| view.write_smtp(w)),
            json!({"helo": "GP", "mail_from": "<a@x>", "rcpt_to": ["<b@y>", "<c@y>"]})
        );
        let mut opts = EmailOptions { subject_md5: true, ..EmailOptions::default() };
        assert!(opts.enable_field("subject") && opts.enable_field("Received") && !opts.enable_field("nope"));
        assert_eq!(
            record(|w| view.write_email(w, &opts)),
            json!({
                "from": "\"A\" <a@x>",
                "to": ["<b@y>", "\"C, D\" <c@y>"],
                // As Suricata's splitter: a leading comma starts the first item.
                "cc": [","],
                "status": "PARSE_DONE",
                "url": ["e.com/x"],
                "subject": "hello",
                "received": ["r1", "r2"],
                "subject_md5": crate::applayer::tls::md5_hex(b"hello"),
            })
        );
    }
}
