//! The few parts of RESP (the Redis protocol, version 2) the Redis output needs: commands
//! encoded as arrays of bulk strings, and replies read back with every length checked.
//!
//! A reply is read whole and reduced to "ok" or "error text"; the output never needs its
//! value (an LPUSH's list length, a PUBLISH's subscriber count, an XADD's entry id). A
//! server that sends something malformed or oversized gets a [`ReplyError::Protocol`]
//! and the connection is dropped; nothing here panics on what the server sends.

use std::fmt;
use std::io::{self, BufRead};

/// A bulk string in a reply is skipped, not kept; anything longer than this is not a
/// reply to the commands we send (their replies are a few bytes) and ends the connection.
const MAX_BULK_LEN: usize = 1 << 20;
/// Elements of an array reply, at most (the commands we send get none).
const MAX_ARRAY_LEN: usize = 1024;
/// Arrays inside arrays, at most.
const MAX_DEPTH: usize = 4;
/// A reply's header or simple-string line, at most (bytes, with its CRLF).
const MAX_LINE: usize = 64 * 1024;

/// Appends `args` as one RESP command (an array of bulk strings) to `out`.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(arg.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// What went wrong reading a reply.
#[derive(Debug)]
pub enum ReplyError {
    /// The connection failed or timed out; the reply may never come.
    Io(io::Error),
    /// The server sent something that is not a RESP reply (or is absurdly large).
    Protocol(String),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::Io(e) => write!(f, "{e}"),
            ReplyError::Protocol(what) => write!(f, "not a Redis reply: {what}"),
        }
    }
}

impl From<io::Error> for ReplyError {
    fn from(e: io::Error) -> Self {
        ReplyError::Io(e)
    }
}

/// Reads one reply. `Ok(Ok(()))`: the command succeeded; `Ok(Err(text))`: the server
/// answered with an error (`-WRONGTYPE ...`), the connection is still good.
pub fn read_reply(reader: &mut impl BufRead) -> Result<Result<(), String>, ReplyError> {
    read_value(reader, 0)
}

fn read_value(reader: &mut impl BufRead, depth: usize) -> Result<Result<(), String>, ReplyError> {
    let line = read_line(reader)?;
    let (&kind, rest) = line.split_first().ok_or_else(|| ReplyError::Protocol("an empty line".into()))?;
    match kind {
        b'+' | b':' => Ok(Ok(())),
        b'-' => Ok(Err(String::from_utf8_lossy(rest).into_owned())),
        b'$' => {
            let Some(len) = length(rest)? else {
                return Ok(Ok(())); // a null bulk string
            };
            if len > MAX_BULK_LEN {
                return Err(ReplyError::Protocol(format!("a bulk string of {len} bytes")));
            }
            skip_exact(reader, len + 2)?;
            Ok(Ok(()))
        }
        b'*' => {
            let Some(len) = length(rest)? else {
                return Ok(Ok(())); // a null array
            };
            if len > MAX_ARRAY_LEN || depth >= MAX_DEPTH {
                return Err(ReplyError::Protocol(format!("an array of {len} elements at depth {depth}")));
            }
            let mut first_error = Ok(());
            for _ in 0..len {
                if let Err(text) = read_value(reader, depth + 1)? {
                    if first_error.is_ok() {
                        first_error = Err(text);
                    }
                }
            }
            Ok(first_error)
        }
        other => Err(ReplyError::Protocol(format!("a reply starting with byte {other:#04x}"))),
    }
}

/// A length field: `-1` is null (`None`), other negatives and non-numbers are errors.
fn length(text: &[u8]) -> Result<Option<usize>, ReplyError> {
    let text = std::str::from_utf8(text).map_err(|_| ReplyError::Protocol("a length that is not text".into()))?;
    if text == "-1" {
        return Ok(None);
    }
    text.parse::<usize>().map(Some).map_err(|_| ReplyError::Protocol(format!("the length {text:?}")))
}

/// One CRLF-terminated line, without its CRLF, at most [`MAX_LINE`] bytes.
fn read_line(reader: &mut impl BufRead) -> Result<Vec<u8>, ReplyError> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Err(ReplyError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..=end], true),
            None => (available, false),
        };
        if line.len() + chunk.len() > MAX_LINE {
            return Err(ReplyError::Protocol(format!("a line longer than {MAX_LINE} bytes")));
        }
        line.extend_from_slice(chunk);
        let used = chunk.len();
        reader.consume(used);
        if done {
            break;
        }
    }
    if !line.ends_with(b"\r\n") {
        return Err(ReplyError::Protocol("a line not ending in CRLF".into()));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn skip_exact(reader: &mut impl BufRead, mut count: usize) -> Result<(), ReplyError> {
    while count > 0 {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Err(ReplyError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )));
        }
        let used = available.len().min(count);
        reader.consume(used);
        count -= used;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(bytes: &[u8]) -> Result<Result<(), String>, ReplyError> {
        read_reply(&mut io::BufReader::new(bytes))
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode_command(&mut out, &[b"LPUSH", b"k", b"{\"a\":1}"]);
        assert_eq!(out, b"*3\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$7\r\n{\"a\":1}\r\n");
    }

    #[test]
    fn replies_of_every_kind() {
        assert!(matches!(reply(b":12\r\n"), Ok(Ok(()))));
        assert!(matches!(reply(b"+OK\r\n"), Ok(Ok(()))));
        assert!(matches!(reply(b"$15\r\n1700000000000-0\r\n"), Ok(Ok(()))));
        assert!(matches!(reply(b"$-1\r\n"), Ok(Ok(()))));
        assert!(matches!(reply(b"*2\r\n:1\r\n$1\r\nx\r\n"), Ok(Ok(()))));
        match reply(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n") {
            Ok(Err(text)) => assert!(text.starts_with("WRONGTYPE"), "{text}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hostile_replies_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"\r\n",
            b"?x\r\n",
            b":1\n",
            b"$99999999999\r\n",
            b"$-5\r\n",
            b"$5\r\nab",
            b"*99999\r\n",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
            b"$abc\r\n",
        ] {
            assert!(reply(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = vec![b'+'; MAX_LINE + 10];
        assert!(matches!(reply(&long), Err(ReplyError::Protocol(_))));
    }

    proptest::proptest! {
        /// Whatever a server sends (RESP-looking pieces in any order, or any bytes),
        /// reading replies ends in a reply or an error.
        #[test]
        fn any_bytes_from_the_server_read_without_panic(
            pieces in "([+:$*-]|-?[0-9]{1,20}|\r\n|\n|[a-z ]{0,5}){0,60}",
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..128),
        ) {
            for input in [pieces.as_bytes(), &bytes[..]] {
                let mut reader = io::BufReader::new(input);
                for _ in 0..input.len() + 1 {
                    if read_reply(&mut reader).is_err() {
                        break;
                    }
                }
            }
        }

        /// Replies built from the grammar read back as what they are.
        #[test]
        fn well_formed_replies_read_back(ints in proptest::collection::vec(proptest::prelude::any::<i64>(), 1..20), text in "[a-zA-Z0-9 ]{0,40}") {
            let mut wire = Vec::new();
            for i in &ints {
                wire.extend_from_slice(format!(":{i}\r\n${}\r\n{text}\r\n-ERR {text}\r\n", text.len()).as_bytes());
            }
            let mut reader = io::BufReader::new(&wire[..]);
            for _ in &ints {
                proptest::prop_assert!(matches!(read_reply(&mut reader), Ok(Ok(()))));
                proptest::prop_assert!(matches!(read_reply(&mut reader), Ok(Ok(()))));
                let error = read_reply(&mut reader);
                proptest::prop_assert!(matches!(&error, Ok(Err(t)) if *t == format!("ERR {text}")), "{:?}", error);
            }
        }
    }
}
