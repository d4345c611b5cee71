//! A tiny JSON object writer that keeps fields in the order Suricata writes them (serde_json's
//! maps would sort them) and writes straight into the worker's output buffer. It is eve's
//! byte codec: the core's records ([`RecordWriter`]) become JSON here and nowhere else.

use picket_core::record::{lossy_text, RecordWriter};

pub struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    /// One entry per open object or list: whether it already has a member (to place commas)
    /// and whether it is a list.
    open: Vec<Frame>,
}

#[derive(Clone, Copy)]
struct Frame {
    has_member: bool,
    list: bool,
}

impl<'a> JsonObject<'a> {
    pub fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, open: vec![Frame { has_member: false, list: false }] }
    }

    /// The comma before a member of the innermost open object or list.
    fn separate(&mut self) {
        if let Some(top) = self.open.last_mut() {
            if top.has_member {
                self.out.push(b',');
            }
            top.has_member = true;
        }
    }

    fn key(&mut self, key: &str) {
        self.separate();
        write_str(self.out, key);
        self.out.push(b':');
    }

    fn push_frame(&mut self, list: bool) {
        self.out.push(if list { b'[' } else { b'{' });
        self.open.push(Frame { has_member: false, list });
    }

    /// Starts a list-valued field; end it with [`JsonObject::close_list`].
    pub fn open_list(&mut self, key: &str) -> &mut Self {
        self.key(key);
        self.push_frame(true);
        self
    }

    pub fn close_list(&mut self) -> &mut Self {
        self.close()
    }

    /// A number item of the innermost open list.
    pub fn item_u64(&mut self, value: u64) -> &mut Self {
        self.separate();
        push_u64(self.out, value);
        self
    }

    /// A string item of the innermost open list.
    pub fn item_str(&mut self, value: &str) -> &mut Self {
        self.separate();
        write_str(self.out, value);
        self
    }

    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        write_str(self.out, value);
        self
    }

    pub fn u64(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        push_u64(self.out, value);
        self
    }

    /// A string member whose text `write` puts straight into the output, sparing a `String`
    /// per field on the per-event path (timestamps, addresses, flag bytes). The text must
    /// need no JSON escaping: digits, ASCII punctuation, hex.
    pub fn str_plain(&mut self, key: &str, write: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        self.key(key);
        self.out.push(b'"');
        write(self.out);
        self.out.push(b'"');
        self
    }

    pub fn i64(&mut self, key: &str, value: i64) -> &mut Self {
        self.key(key);
        self.out.extend_from_slice(value.to_string().as_bytes());
        self
    }

    pub fn f64(&mut self, key: &str, value: f64) -> &mut Self {
        self.key(key);
        if value.is_finite() {
            self.out.extend_from_slice(value.to_string().as_bytes());
        } else {
            self.out.extend_from_slice(b"null");
        }
        self
    }

    pub fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        self.key(key);
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
        self
    }

    /// Inserts an already-serialized JSON value.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
        self
    }

    pub fn open(&mut self, key: &str) -> &mut Self {
        self.key(key);
        self.push_frame(false);
        self
    }

    /// Ends the innermost open object or list.
    pub fn close(&mut self) -> &mut Self {
        if let Some(frame) = self.open.pop() {
            self.out.push(if frame.list { b']' } else { b'}' });
        }
        self
    }

    /// Closes everything still open and ends the line.
    pub fn finish(mut self) {
        while !self.open.is_empty() {
            self.close();
        }
        self.out.push(b'\n');
    }
}

impl RecordWriter for JsonObject<'_> {
    fn str(&mut self, key: &str, value: &str) {
        JsonObject::str(self, key, value);
    }
    fn bytes(&mut self, key: &str, value: &[u8]) {
        JsonObject::str(self, key, &lossy_text(value));
    }
    fn u64(&mut self, key: &str, value: u64) {
        JsonObject::u64(self, key, value);
    }
    fn bool(&mut self, key: &str, value: bool) {
        JsonObject::bool(self, key, value);
    }
    fn open(&mut self, key: &str) {
        JsonObject::open(self, key);
    }
    fn close(&mut self) {
        JsonObject::close(self);
    }
    fn open_list(&mut self, key: &str) {
        JsonObject::open_list(self, key);
    }
    fn close_list(&mut self) {
        JsonObject::close_list(self);
    }
    fn open_item(&mut self) {
        self.separate();
        self.push_frame(false);
    }
    fn item_str(&mut self, value: &str) {
        JsonObject::item_str(self, value);
    }
    fn item_bytes(&mut self, value: &[u8]) {
        JsonObject::item_str(self, &lossy_text(value));
    }
}

/// Writes a JSON string literal with the escapes JSON requires. Runs of plain bytes are
/// copied whole; only quote, backslash and control characters are escaped.
/// Decimal digits of `value`, without the formatting machinery (eve writes several numbers
/// per event).
pub fn push_u64(out: &mut Vec<u8>, value: u64) {
    push_padded(out, value, 1);
}

/// Decimal digits of `value`, zero-padded to at least `width` digits (as `{value:0width$}`).
pub fn push_padded(out: &mut Vec<u8>, mut value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    while value > 0 {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
    }
    let start = start.min(digits.len().saturating_sub(width.max(1)));
    out.extend_from_slice(&digits[start..]);
}

pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Keys and most values need no escaping: one scan and one copy.
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut plain_from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain_from..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        plain_from = i + 1;
    }
    out.extend_from_slice(&bytes[plain_from..]);
    out.push(b'"');
}

/// Standard base64 (RFC 4648, with padding) of `data`, as eve writes payloads and packets.
pub fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// The JSON object `f` writes, as text without the line end (for tests of record writers).
#[cfg(test)]
pub(crate) fn object_text(f: impl FnOnce(&mut JsonObject<'_>)) -> String {
    let mut buf = Vec::new();
    let mut o = JsonObject::begin(&mut buf);
    f(&mut o);
    o.finish();
    String::from_utf8(buf).expect("utf-8").trim_end().to_string()
}

#[cfg(test)]
mod tests {

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("GOOD", "R09PRA==")]
        {
            assert_eq!(base64(input.as_bytes()), want);
        }
    }
    use super::*;

    /// Strings with and without characters to escape read back as themselves.
    #[test]
    fn strings_round_trip() {
        for text in ["", "plain", "back\\slash", "quote\"", "tab\tcr\rnl\n", "\u{0}\u{1f}", "caf\u{e9} \u{7f}"] {
            let mut out = Vec::new();
            write_str(&mut out, text);
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, text);
        }
    }

    /// The hand-written digit writers agree with the formatting machinery they replace.
    #[test]
    fn digits_match_std_formatting() {
        for v in [0u64, 7, 10, 99, 1000, 65_535, 1_234_567_890, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
            for width in [1, 2, 4, 6, 20] {
                let mut out = Vec::new();
                push_padded(&mut out, v, width);
                assert_eq!(out, format!("{v:0width$}").as_bytes(), "{v} width {width}");
            }
        }
    }

    #[test]
    fn nested_object_is_valid_json_in_order() {
        let mut buf = Vec::new();
        let mut o = JsonObject::begin(&mut buf);
        o.str("b", "x\"y\n\u{1}").u64("a", 5).open("inner").bool("t", true).f64("f", 1.5).close().i64("n", -3);
        o.finish();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.ends_with('\n'));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["b"], "x\"y\n\u{1}");
        assert_eq!(v["inner"]["f"], 1.5);
        assert_eq!(v["a"], 5);
        assert!(text.starts_with("{\"b\":"), "field order kept: {text}");
    }

    #[test]
    fn records_nest_lists_and_items() {
        let mut buf = Vec::new();
        let mut o = JsonObject::begin(&mut buf);
        {
            let w: &mut dyn RecordWriter = &mut o;
            w.open_list("answers");
            for (name, ttl) in [(&b"a"[..], 1), (&b"b\xff"[..], 2)] {
                w.open_item();
                w.bytes("rrname", name);
                w.u64("ttl", ttl);
                w.close();
            }
            w.close_list();
            w.open_list("alpns");
            w.item_bytes(b"h2\xff");
            w.item_str("http/1.1");
            w.close_list();
            w.open("soa");
            w.bool("ok", true);
            w.close();
        }
        o.finish();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "{\"answers\":[{\"rrname\":\"a\",\"ttl\":1},{\"rrname\":\"b\\\\xff\",\"ttl\":2}],\"alpns\":[\"h2\\\\xff\",\"http/1.1\"],\"soa\":{\"ok\":true}}\n"
        );
    }
}
