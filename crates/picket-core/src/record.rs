//! The shape of a log record, without its encoding.
//!
//! A protocol knows which fields its eve object has and in which order (Suricata's); how
//! they become bytes (JSON quoting, escapes, commas) is the output's business. Each
//! protocol writes its record through [`RecordWriter`], and `picket`'s `output::eve` is the
//! one implementation that produces eve JSON, so the encoding lives in one place.
//!
//! Calls nest like the record: `open`/`close` for an object field, `open_list`/`close_list`
//! for a list field, and inside a list `item_*` for scalar items or `open_item`/`close` for
//! object items. Field order is kept as written.

/// A sink for one record's fields, in order.
pub trait RecordWriter {
    fn str(&mut self, key: &str, value: &str);
    /// Bytes that need not be UTF-8, logged as Suricata logs them: valid UTF-8 as is,
    /// otherwise ASCII as is and every byte >= 0x80 as the four characters `\xNN`.
    fn bytes(&mut self, key: &str, value: &[u8]);
    fn u64(&mut self, key: &str, value: u64);
    fn bool(&mut self, key: &str, value: bool);
    /// Starts an object-valued field; ended by [`RecordWriter::close`].
    fn open(&mut self, key: &str);
    /// Ends the innermost open object (a field's or a list item's).
    fn close(&mut self);
    /// Starts a list-valued field; ended by [`RecordWriter::close_list`].
    fn open_list(&mut self, key: &str);
    fn close_list(&mut self);
    /// Starts an object item of the innermost open list; ended by [`RecordWriter::close`].
    fn open_item(&mut self);
    fn item_str(&mut self, value: &str);
    /// A list item in the form of [`RecordWriter::bytes`].
    fn item_bytes(&mut self, value: &[u8]);
}

/// Suricata's lossy text form of bytes for logs (see [`RecordWriter::bytes`]).
pub fn lossy_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.into(),
        Err(_) => {
            let mut s = String::with_capacity(bytes.len() + 8);
            for &b in bytes {
                if b < 0x80 {
                    s.push(b as char);
                } else {
                    s.push_str(&format!("\\x{b:02x}"));
                }
            }
            s.into()
        }
    }
}

/// A [`RecordWriter`] that builds a `serde_json::Value`, for tests of record contents.
#[cfg(test)]
pub(crate) mod value {
    use super::{lossy_text, RecordWriter};
    use serde_json::{Map, Value};

    enum Frame {
        Object(Option<String>, Map<String, Value>),
        List(String, Vec<Value>),
    }

    pub(crate) struct ValueWriter {
        stack: Vec<Frame>,
    }

    impl ValueWriter {
        pub(crate) fn new() -> Self {
            ValueWriter { stack: vec![Frame::Object(None, Map::new())] }
        }

        /// The record written, wrapped in an object; panics if something is left open.
        pub(crate) fn finish(mut self) -> Value {
            assert_eq!(self.stack.len(), 1, "record left open");
            match self.stack.pop() {
                Some(Frame::Object(_, m)) => Value::Object(m),
                _ => unreachable!("root is an object"),
            }
        }

        fn put(&mut self, key: &str, v: Value) {
            match self.stack.last_mut() {
                Some(Frame::Object(_, m)) => {
                    m.insert(key.to_string(), v);
                }
                _ => panic!("field {key} outside an object"),
            }
        }

        fn push(&mut self, v: Value) {
            match self.stack.last_mut() {
                Some(Frame::List(_, l)) => l.push(v),
                _ => panic!("item outside a list"),
            }
        }
    }

    impl RecordWriter for ValueWriter {
        fn str(&mut self, key: &str, value: &str) {
            self.put(key, value.into());
        }
        fn bytes(&mut self, key: &str, value: &[u8]) {
            self.put(key, lossy_text(value).into_owned().into());
        }
        fn u64(&mut self, key: &str, value: u64) {
            self.put(key, value.into());
        }
        fn bool(&mut self, key: &str, value: bool) {
            self.put(key, value.into());
        }
        fn open(&mut self, key: &str) {
            self.stack.push(Frame::Object(Some(key.to_string()), Map::new()));
        }
        fn close(&mut self) {
            match self.stack.pop() {
                Some(Frame::Object(Some(key), m)) => self.put(&key, Value::Object(m)),
                Some(Frame::Object(None, m)) => self.push(Value::Object(m)),
                _ => panic!("close without open"),
            }
        }
        fn open_list(&mut self, key: &str) {
            self.stack.push(Frame::List(key.to_string(), Vec::new()));
        }
        fn close_list(&mut self) {
            match self.stack.pop() {
                Some(Frame::List(key, l)) => self.put(&key, Value::Array(l)),
                _ => panic!("close_list without open_list"),
            }
        }
        fn open_item(&mut self) {
            self.stack.push(Frame::Object(None, Map::new()));
        }
        fn item_str(&mut self, value: &str) {
            self.push(value.into());
        }
        fn item_bytes(&mut self, value: &[u8]) {
            self.push(lossy_text(value).into_owned().into());
        }
    }

    /// The record `write` produces, as a JSON value.
    pub(crate) fn record(write: impl FnOnce(&mut dyn RecordWriter)) -> Value {
        let mut w = ValueWriter::new();
        write(&mut w);
        w.finish()
    }
}
