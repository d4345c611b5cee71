//! A tiny JSON object writer that keeps fields in the order Suricata writes them (serde_json's
//! maps would sort them) and writes straight into the worker's output buffer.

use std::io::Write as _;

pub struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    /// One entry per open object: whether it already has a field (to place commas).
    has_field: Vec<bool>,
}

impl<'a> JsonObject<'a> {
    pub fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, has_field: vec![false] }
    }

    fn key(&mut self, key: &str) {
        let top = self.has_field.last_mut().expect("object open");
        if *top {
            self.out.push(b',');
        }
        *top = true;
        write_str(self.out, key);
        self.out.push(b':');
    }

    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        write_str(self.out, value);
        self
    }

    pub fn u64(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        let _ = write!(self.out, "{value}");
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
        self.out.push(b'{');
        self.has_field.push(false);
        self
    }

    pub fn close(&mut self) -> &mut Self {
        self.has_field.pop();
        self.out.push(b'}');
        self
    }

    /// Closes every open object and ends the line.
    pub fn finish(mut self) {
        while !self.has_field.is_empty() {
            self.close();
        }
        self.out.push(b'\n');
    }
}

/// Writes a JSON string literal with the escapes JSON requires. Runs of plain bytes are
/// copied whole; only quote, backslash and control characters are escaped.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(text.starts_with("{\"b\":"), "field order kept: {text}");
    }
}
