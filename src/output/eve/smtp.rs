//! eve `smtp` records: one per mail (SMTP transaction), when the server answered its end
//! of data (or RSET/QUIT), or when its flow ends, as Suricata's. The record carries the
//! `smtp` object (helo, mail_from, rcpt_to) and, for a mail whose DATA was MIME-parsed,
//! the `email` object; attachments' `fileinfo` records and alerts carry the same two
//! objects (alerts and files without the `custom:`/`md5:` additions, as in Suricata).

use super::header::{write_tx_header, write_tx_header_toward};
use crate::output::json::JsonObject;
use picket_core::applayer::http::HttpFile;
use picket_core::applayer::smtp::record::{EmailOptions, SmtpView};
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;

/// The `smtp:` entry of eve-log `types:`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SmtpLogOptions {
    /// `custom:` header fields and `md5:` (body, subject) of the `email` object.
    pub email: EmailOptions,
}

/// The `smtp` and `email` objects of a mail; `email` with the extra fields of `opts`.
pub fn write_smtp_objects(o: &mut JsonObject<'_>, v: &SmtpView<'_>, opts: &EmailOptions) {
    o.open("smtp");
    v.write_smtp(o);
    o.close();
    if v.has_email() {
        o.open("email");
        v.write_email(o, opts);
        o.close();
    }
}

/// One eve `smtp` line for the mail `v` of `t`.
pub fn write_smtp(buf: &mut Vec<u8>, t: &TxEvent<'_>, v: &SmtpView<'_>, opts: &SmtpLogOptions) {
    let mut o = write_tx_header(buf, t, "smtp");
    write_smtp_objects(&mut o, v, &opts.email);
    o.finish();
}

/// One eve `fileinfo` line for the attachment `file` of the mail `v` (client to server).
pub fn write_smtp_fileinfo(buf: &mut Vec<u8>, t: &TxEvent<'_>, v: &SmtpView<'_>, file: &HttpFile) {
    let mut o = write_tx_header_toward(buf, t, "fileinfo", Direction::ToServer);
    write_smtp_objects(&mut o, v, &EmailOptions::default());
    o.str("app_proto", "smtp");
    o.open("fileinfo");
    file.write_record(&mut o, v.tx.id);
    o.close();
    o.finish();
}
