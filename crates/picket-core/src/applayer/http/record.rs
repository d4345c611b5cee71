//! The `http` object of eve records, as Suricata writes it: the basic fields every `http`
//! record has, the extended ones of `extended: yes` (alerts and `fileinfo` records always
//! carry both), and the header lists of `dump-all-headers` / `custom`.

use super::{uri, HttpTx};
use crate::record::RecordWriter;
use crate::stream::Direction;

/// Longest header name and value an eve header list writes (Suricata cuts at 255 and 2047).
const HEADER_NAME_MAX: usize = 255;
const HEADER_VALUE_MAX: usize = 2047;

impl HttpTx {
    /// Writes the fields of Suricata's `http` object of an alert or `fileinfo` record: the
    /// basic and the extended fields of what is known of the transaction so far.
    pub fn write_record(&self, w: &mut dyn RecordWriter) {
        self.write_basic(w);
        self.write_extended(w);
    }

    /// The fields every eve `http` object has: host, port, URL, user agent, X-Forwarded-For,
    /// response content type and Content-Range.
    pub fn write_basic(&self, w: &mut dyn RecordWriter) {
        if let Some(h) = &self.host {
            w.bytes("hostname", h);
        }
        if let Some(port) = self.request_port() {
            w.u64("http_port", port.into());
        }
        if !self.uri_raw.is_empty() {
            w.bytes("url", &self.uri_raw);
        }
        if let Some(ua) = self.user_agent() {
            w.bytes("http_user_agent", ua);
        }
        if let Some(xff) = self.request_header("x-forwarded-for") {
            w.bytes("xff", xff);
        }
        if let Some(ct) = self.content_type(Direction::ToClient) {
            // Logged without parameters, as Suricata does.
            let bare = ct.split(|&b| b == b';').next().unwrap_or(ct);
            w.bytes("http_content_type", bare);
        }
        if let Some(range) = self.response_header("content-range") {
            w.open("content_range");
            w.bytes("raw", range);
            if let Some((start, end, size)) = super::file::parse_content_range(range) {
                let mut put = |key, v: Option<u64>| {
                    if let Some(v) = v {
                        w.u64(key, v);
                    }
                };
                put("start", start);
                put("end", end);
                put("size", size);
            }
            w.close();
        }
    }

    /// The extended fields: referer, method, protocol, status, redirect and length.
    pub fn write_extended(&self, w: &mut dyn RecordWriter) {
        if let Some(r) = self.referer() {
            w.bytes("http_refer", r);
        }
        if !self.method.is_empty() {
            w.bytes("http_method", &self.method);
        }
        if !self.request_protocol.is_empty() {
            w.bytes("protocol", &self.request_protocol);
        }
        match self.status_code {
            Some(code) => w.u64("status", code.into()),
            None if !self.status.is_empty() => w.bytes("status_string", &self.status),
            None => {}
        }
        if let Some(location) = self.location() {
            w.bytes("redirect", location);
        }
        // Always present, as in Suricata: 0 until a response body arrives.
        w.u64("length", self.response_body_len);
    }

    /// `request_headers` or `response_headers`: the headers of `dir` that `keep` accepts
    /// (by lowercase-insensitive name), as `{name, value}` objects; nothing when none is kept.
    pub fn write_header_list(&self, w: &mut dyn RecordWriter, dir: Direction, keep: &dyn Fn(&[u8]) -> bool) {
        let mut kept = self.headers(dir).iter().filter(|h| keep(&h.name)).peekable();
        if kept.peek().is_none() {
            return;
        }
        w.open_list(match dir {
            Direction::ToServer => "request_headers",
            Direction::ToClient => "response_headers",
        });
        for h in kept {
            w.open_item();
            w.bytes("name", &h.name[..h.name.len().min(HEADER_NAME_MAX)]);
            w.bytes("value", &h.value[..h.value.len().min(HEADER_VALUE_MAX)]);
            w.close();
        }
        w.close_list();
    }

    /// The port the request names (absolute URI, else Host header), when it is a number.
    pub fn request_port(&self) -> Option<u16> {
        let port = match &self.uri.port {
            Some(p) => p.as_slice(),
            None => uri::split_host_port(self.request_header("host")?).1?,
        };
        let port = port.trim_ascii();
        if port.is_empty() || !port.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(port).ok()?.parse().ok()
    }
}
