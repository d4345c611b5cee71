//! The `http` object of eve records of an HTTP/2 transaction, in Suricata's shape
//! (`rust/src/http2/logger.rs`): `version` "2", every header field of both sides in
//! `request_headers`/`response_headers` (with `table_size_update` and `error` items), the
//! HTTP/1-style fields taken from them (`http_method`, `url`, `hostname` from a `host`
//! header, `http_user_agent`, `status`, `length` from `content-length`), and the `http2`
//! object: `stream_id`, and per side the SETTINGS, first error code and priority.

use super::hpack::Field;
use super::{error_code_name, settings_name, Http2Tx, SideFrames};
use crate::record::RecordWriter;
use crate::stream::Direction;

impl SideFrames {
    fn has_record(&self) -> bool {
        !self.settings.is_empty() || !self.error_codes.is_empty() || !self.priorities.is_empty()
    }

    fn write_record(&self, w: &mut dyn RecordWriter) {
        if !self.settings.is_empty() {
            w.open_list("settings");
            for &(id, value) in &self.settings {
                w.open_item();
                w.str("settings_id", settings_name(id).unwrap_or("SETTINGSUNKNOWN"));
                w.u64("settings_value", value.into());
                w.close();
            }
            w.close_list();
        }
        if let Some(&code) = self.error_codes.first() {
            match error_code_name(code) {
                Some(name) => w.str("error_code", name),
                None => w.str("error_code", &format!("unknown-{code}")),
            }
        }
        if let Some(&p) = self.priorities.first() {
            w.u64("priority", p.into());
        }
        if self.error_codes.len() > 1 {
            w.str("has_multiple", "error_code");
        } else if self.priorities.len() > 1 {
            w.str("has_multiple", "priority");
        }
    }
}

impl Http2Tx {
    /// Whether Suricata writes an `http` record for the transaction: it has header fields
    /// or SETTINGS, an error code or a priority (a PING or WINDOW_UPDATE has none).
    pub fn has_record(&self) -> bool {
        self.fields.iter().any(|f| !f.is_empty()) || self.frames.iter().any(SideFrames::has_record)
    }

    /// Writes the fields of the `http` object.
    pub fn write_record(&self, w: &mut dyn RecordWriter) {
        w.str("version", "2");
        for (dir, key) in [(Direction::ToServer, "request_headers"), (Direction::ToClient, "response_headers")] {
            let fields = &self.fields[dir.index()];
            if fields.is_empty() {
                continue;
            }
            w.open_list(key);
            for f in fields {
                w.open_item();
                match f {
                    Field::Header { name, value } => {
                        w.bytes("name", name);
                        w.bytes("value", value);
                    }
                    Field::SizeUpdate(size) => w.u64("table_size_update", *size),
                    Field::Error(e) => w.str("error", e.as_str()),
                }
                w.close();
            }
            w.close_list();
        }
        // The last value of each, over both sides, as Suricata's logger keeps them.
        let last = |name: &str| {
            [Direction::ToServer, Direction::ToClient]
                .into_iter()
                .flat_map(|d| self.headers(d))
                .filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                .last()
                .map(|(_, v)| v)
        };
        let number = |v: &[u8]| std::str::from_utf8(v).ok().and_then(|s| s.parse::<u64>().ok());
        if let Some(v) = last("host") {
            w.bytes("hostname", v);
        }
        if let Some(v) = last(":path") {
            w.bytes("url", v);
        }
        if let Some(v) = last("user-agent") {
            w.bytes("http_user_agent", v);
        }
        if let Some(v) = last(":method") {
            w.bytes("http_method", v);
        }
        if let Some(n) = last(":status").and_then(number) {
            w.u64("status", n);
        }
        if let Some(n) = last("content-length").and_then(number) {
            w.u64("length", n);
        }
        w.open("http2");
        w.u64("stream_id", self.stream_id.into());
        for (dir, key) in [(Direction::ToServer, "request"), (Direction::ToClient, "response")] {
            let side = &self.frames[dir.index()];
            if side.has_record() {
                w.open(key);
                side.write_record(w);
                w.close();
            }
        }
        w.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::value::record;

    #[test]
    fn settings_tx_record() {
        let mut tx = Http2Tx::default();
        tx.frames[0].settings = vec![(3, 100), (4, 65535)];
        tx.frames[1].error_codes = vec![0, 2];
        assert!(tx.has_record());
        let v = record(|w| tx.write_record(w));
        assert_eq!(v["version"], "2");
        assert_eq!(v["http2"]["stream_id"], 0);
        assert_eq!(v["http2"]["request"]["settings"][0]["settings_id"], "SETTINGSMAXCONCURRENTSTREAMS");
        assert_eq!(v["http2"]["request"]["settings"][1]["settings_value"], 65535);
        assert_eq!(v["http2"]["response"]["error_code"], "NOERROR");
        assert_eq!(v["http2"]["response"]["has_multiple"], "error_code");
        assert!(v.get("request_headers").is_none());
        assert!(!Http2Tx::default().has_record(), "a PING transaction logs nothing");
    }

    #[test]
    fn stream_record_fields_from_headers() {
        let mut tx = Http2Tx { stream_id: 3, ..Http2Tx::default() };
        let h = |n: &str, v: &str| Field::Header { name: n.as_bytes().to_vec(), value: v.as_bytes().to_vec() };
        tx.fields[0] = vec![
            Field::SizeUpdate(4096),
            h(":method", "GET"),
            h(":path", "/a"),
            h(":authority", "x"),
            h("user-agent", "ua"),
        ];
        tx.fields[1] = vec![
            h(":status", "404"),
            h("content-length", "12"),
            Field::Error(super::super::hpack::DecodeError::NotIndexed),
        ];
        let v = record(|w| tx.write_record(w));
        assert_eq!(v["request_headers"][0]["table_size_update"], 4096);
        assert_eq!(v["request_headers"][1]["name"], ":method");
        assert_eq!(v["url"], "/a");
        assert_eq!(v["http_method"], "GET");
        assert_eq!(v["http_user_agent"], "ua");
        assert_eq!(v["status"], 404);
        assert_eq!(v["length"], 12);
        assert!(v.get("hostname").is_none(), ":authority is not the hostname field");
        assert_eq!(v["response_headers"][2]["error"], "HTTP2HeaderDecodeNotIndexed");
        assert_eq!(v["http2"]["stream_id"], 3);
    }
}
