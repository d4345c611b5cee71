//! The `http` object of eve records, as Suricata writes it.

use super::HttpTx;
use crate::record::RecordWriter;
use crate::stream::Direction;

impl HttpTx {
    /// Writes the fields of Suricata's `http` object of an eve record: what is known of
    /// the transaction so far.
    pub fn write_record(&self, w: &mut dyn RecordWriter) {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        if let Some(h) = &self.host {
            w.str("hostname", &text(h));
        }
        if !self.uri_raw.is_empty() {
            w.str("url", &text(&self.uri_raw));
        }
        if let Some(ua) = self.user_agent() {
            w.str("http_user_agent", &text(ua));
        }
        if let Some(ct) = self.content_type(Direction::ToClient) {
            // Logged without parameters, as Suricata does.
            let bare = ct.split(|&b| b == b';').next().unwrap_or(ct);
            w.str("http_content_type", &text(bare.trim_ascii()));
        }
        if !self.method.is_empty() {
            w.str("http_method", &text(&self.method));
        }
        if !self.request_protocol.is_empty() {
            w.str("protocol", &text(&self.request_protocol));
        }
        if let Some(code) = self.status_code {
            w.u64("status", code.into());
        }
        // Always present, as in Suricata: 0 until a response body arrives.
        w.u64("length", self.response_body_len);
    }
}
