//! HTTP bodies as files, the way Suricata tracks them for its `fileinfo` records: a
//! response body (and the body of a POST or PUT request) becomes one file when its first
//! decoded byte arrives, named from the response's Content-Disposition `filename=` or else
//! the request's normalised URI path. The file sees the decoded body up to the direction's
//! body limit (`request-body-limit` / `response-body-limit`), is hashed as it streams when
//! `force-hash` asks for it (nothing is buffered for hashing), and ends `CLOSED` when its
//! message completes, `TRUNCATED` when the limit cut it, a gap hit it or the flow ended in
//! the middle of it.
//!
//! Not done: multipart/form-data uploads (Suricata extracts each part as a file; picket
//! makes no file of such a request), file storing, magic, and the merging of ranged
//! responses (a Content-Range response is one file with `start`/`end`).

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::record::RecordWriter;

/// Longest file name kept (Suricata's `SC_FILENAME_MAX`); longer names are cut.
pub const FILENAME_MAX: usize = 512;

/// Whether bodies are tracked as files and which digests they get: the eve `files` type
/// and `force-hash` (from the eve-log `files:` entry or the `file-store` output).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileConfig {
    /// Track files at all (only when something logs them: the tracking costs a name copy
    /// per body).
    pub enabled: bool,
    pub md5: bool,
    pub sha1: bool,
    pub sha256: bool,
}

/// Suricata's file states, as its records name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileState {
    Open,
    Closed,
    Truncated,
}

impl FileState {
    pub fn as_str(self) -> &'static str {
        match self {
            // A file still open when it is logged: Suricata's "UNKNOWN".
            FileState::Open => "UNKNOWN",
            FileState::Closed => "CLOSED",
            FileState::Truncated => "TRUNCATED",
        }
    }
}

/// The running digests of one file (boxed: most files are not hashed).
#[derive(Clone, Default)]
struct Hashers {
    md5: Option<Md5>,
    sha1: Option<Sha1>,
    sha256: Option<Sha256>,
}

/// One body tracked as a file.
#[derive(Clone)]
pub struct HttpFile {
    /// Content-Disposition filename or URI path, at most [`FILENAME_MAX`] bytes.
    pub name: Vec<u8>,
    /// Bytes of the file: decoded body bytes within the limit, plus the length of gaps.
    pub size: u64,
    pub state: FileState,
    /// Part of the body was lost (the file ends `TRUNCATED`, without md5/sha1).
    pub gaps: bool,
    /// `start`/`end` of a valid Content-Range (bytes `start`..=`end` of a larger file).
    pub range: Option<(u64, u64)>,
    /// Bytes the file takes at most (the body limit; `u64::MAX` for none).
    limit: u64,
    /// Body bytes of the file that came after `limit` was reached: it ends truncated.
    cut: bool,
    hashers: Option<Box<Hashers>>,
}

impl std::fmt::Debug for HttpFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFile")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("size", &self.size)
            .field("state", &self.state)
            .field("gaps", &self.gaps)
            .field("range", &self.range)
            .field("hashed", &self.hashers.is_some())
            .finish()
    }
}

impl HttpFile {
    /// A file named `name` (cut to [`FILENAME_MAX`]) taking at most `limit` bytes.
    pub fn open(name: &[u8], limit: usize, cfg: &FileConfig) -> HttpFile {
        let hashers = (cfg.md5 || cfg.sha1 || cfg.sha256).then(|| {
            Box::new(Hashers {
                md5: cfg.md5.then(Md5::new),
                sha1: cfg.sha1.then(Sha1::new),
                sha256: cfg.sha256.then(Sha256::new),
            })
        });
        HttpFile {
            name: name[..name.len().min(FILENAME_MAX)].to_vec(),
            size: 0,
            state: FileState::Open,
            gaps: false,
            range: None,
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            cut: false,
            hashers,
        }
    }

    /// Whether the file still takes bytes (open and under its limit).
    pub fn wants_data(&self) -> bool {
        self.state == FileState::Open && !self.cut
    }

    /// Appends decoded body bytes: hashed and counted up to the limit; bytes past it mark
    /// the file cut. Returns whether the file takes more.
    pub fn append(&mut self, data: &[u8]) -> bool {
        if !self.wants_data() || data.is_empty() {
            return self.wants_data();
        }
        let room = self.limit.saturating_sub(self.size);
        let take = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if take < data.len() {
            self.cut = true;
        }
        let data = &data[..take];
        self.size += take as u64;
        // After a gap the digests go on over the bytes that are there, as Suricata's do:
        // the same file with the same holes gives the same hashes in both.
        if let Some(h) = self.hashers.as_deref_mut() {
            if let Some(d) = h.md5.as_mut() {
                d.update(data);
            }
            if let Some(d) = h.sha1.as_mut() {
                d.update(data);
            }
            if let Some(d) = h.sha256.as_mut() {
                d.update(data);
            }
        }
        self.wants_data()
    }

    /// Bytes libhtp adds to a response after its framing ended (the line after the body,
    /// see `HttpParser`'s finalize step): Suricata appends them to the file, which counts
    /// them whether or not it was closed already.
    pub fn append_after_close(&mut self, data: &[u8]) {
        let state = self.state;
        if state == FileState::Closed {
            self.state = FileState::Open;
        }
        self.append(data);
        self.state = state;
    }

    /// `len` body bytes were lost: counted in the size, and the file can only end truncated.
    pub fn gap(&mut self, len: u64) {
        if self.state == FileState::Open {
            self.gaps = true;
            self.size = self.size.saturating_add(len);
        }
    }

    /// The body ended; `complete` says whether it ended as its framing announced (the
    /// file is then `CLOSED` unless a limit or a gap cut it).
    pub fn close(&mut self, complete: bool) {
        if self.state == FileState::Open {
            self.state = if complete && !self.cut && !self.gaps { FileState::Closed } else { FileState::Truncated };
        }
    }

    /// The fields of Suricata's `fileinfo` object (`tx_id` is the transaction's).
    pub fn write_record(&self, w: &mut dyn RecordWriter, tx_id: u64) {
        w.bytes("filename", &self.name);
        w.bool("gaps", self.gaps);
        w.str("state", self.state.as_str());
        let mut hex = [0u8; 64];
        if let Some(h) = self.hashers.as_deref() {
            // md5 and sha1 only of complete files; sha256 also of truncated ones, as
            // Suricata does (of the bytes before the cut).
            if self.state == FileState::Closed {
                if let Some(d) = &h.md5 {
                    w.str("md5", to_hex(&d.clone().finalize(), &mut hex));
                }
                if let Some(d) = &h.sha1 {
                    w.str("sha1", to_hex(&d.clone().finalize(), &mut hex));
                }
            }
            if let Some(d) = h.sha256.as_ref().filter(|_| self.state != FileState::Open) {
                w.str("sha256", to_hex(&d.clone().finalize(), &mut hex));
            }
        }
        w.bool("stored", false);
        w.u64("size", self.size);
        if let Some((start, end)) = self.range {
            w.u64("start", start);
            w.u64("end", end);
        }
        w.u64("tx_id", tx_id);
    }
}

/// Lowercase hex of `bytes` in `out` (which holds at least twice as many bytes).
fn to_hex<'a>(bytes: &[u8], out: &'a mut [u8; 64]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = bytes.len().min(32);
    for (i, b) in bytes[..n].iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 15)];
    }
    std::str::from_utf8(&out[..2 * n]).unwrap_or("")
}

/// The `filename=` parameter of a Content-Disposition value, as Suricata reads it:
/// `;`-separated tokens (a `;` inside quotes or after a backslash does not split), the
/// name compared case-insensitively, one pair of surrounding quotes removed.
pub fn content_disposition_filename(value: &[u8]) -> Option<&[u8]> {
    const NAME: &[u8] = b"filename=";
    let start = value.iter().position(|b| !b.is_ascii_whitespace())?;
    let line = &value[start..];
    let mut quotes = 0usize;
    let mut offset = 0usize;
    let mut x = 1usize;
    while x < line.len() {
        let escaped = line[x - 1] == b'\\';
        if !escaped && line[x] == b'"' {
            quotes += 1;
        }
        let last = x + 1 == line.len();
        if ((!escaped && line[x] == b';') || last) && quotes.is_multiple_of(2) {
            let end = if last { x + 1 } else { x };
            let token = &line[offset.min(end)..end];
            offset = x + 1;
            while offset < line.len() && line[offset].is_ascii_whitespace() {
                x += 1;
                offset += 1;
            }
            if token.len() > NAME.len() && token[..NAME.len()].eq_ignore_ascii_case(NAME) {
                let mut v = &token[NAME.len()..];
                if let Some(rest) = v.strip_prefix(b"\"") {
                    v = rest;
                }
                if let Some(rest) = v.strip_suffix(b"\"") {
                    v = rest;
                }
                return Some(v);
            }
        }
        x += 1;
    }
    None
}

/// A Content-Range value (`bytes 0-99/1000`) when it names a valid part of a larger
/// file, as Suricata requires before it tracks the range: `(start, end)`.
pub fn content_range(value: &[u8]) -> Option<(u64, u64)> {
    let (start, end, size) = parse_content_range(value)?;
    let (start, end, size) = (start?, end?, size?);
    if end == 0 || size == 0 || (start == 0 && end + 1 == size) || start > end || end >= size {
        return None;
    }
    Some((start, end))
}

/// `unit start-end/size` or `unit */size` (size may be `*`): the numbers, `None` where
/// not given; `None` overall when the value does not parse.
pub fn parse_content_range(value: &[u8]) -> Option<(Option<u64>, Option<u64>, Option<u64>)> {
    let skip_spaces = |s: &[u8]| -> usize { s.iter().take_while(|&&b| b == b' ').count() };
    let mut rest = &value[skip_spaces(value)..];
    let unit = rest.iter().take_while(|&&b| b != b' ').count();
    rest = &rest[unit..];
    rest = &rest[skip_spaces(rest)..];
    let number = |s: &[u8]| -> Option<(u64, usize)> {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let v = std::str::from_utf8(&s[..n]).ok()?.parse::<u64>().ok()?;
        (v <= i64::MAX as u64).then_some((v, n))
    };
    if let Some(after) = rest.strip_prefix(b"*/") {
        let (size, _) = number(after)?;
        return Some((None, None, Some(size)));
    }
    let (start, n) = number(rest)?;
    let rest = rest[n..].strip_prefix(b"-")?;
    let (end, n) = number(rest)?;
    let rest = rest[n..].strip_prefix(b"/")?;
    if rest.first() == Some(&b'*') {
        return Some((Some(start), Some(end), None));
    }
    let (size, _) = number(rest)?;
    Some((Some(start), Some(end), Some(size)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::value::record;

    #[test]
    fn disposition_filename_forms() {
        assert_eq!(content_disposition_filename(b"attachment; filename=\"eicar.txt\""), Some(&b"eicar.txt"[..]));
        assert_eq!(content_disposition_filename(b"  attachment;filename=a.exe"), Some(&b"a.exe"[..]));
        assert_eq!(content_disposition_filename(b"attachment; FileName=\"x;y.bin\"; size=3"), Some(&b"x;y.bin"[..]));
        assert_eq!(content_disposition_filename(b"inline"), None);
        assert_eq!(content_disposition_filename(b"attachment; name=x"), None);
        assert_eq!(content_disposition_filename(b""), None);
        assert_eq!(content_disposition_filename(b"attachment; filename="), None);
    }

    #[test]
    fn content_range_forms() {
        assert_eq!(parse_content_range(b"bytes 10-19/100"), Some((Some(10), Some(19), Some(100))));
        assert_eq!(parse_content_range(b"bytes */100"), Some((None, None, Some(100))));
        assert_eq!(parse_content_range(b"bytes 1-2/*"), Some((Some(1), Some(2), None)));
        assert_eq!(parse_content_range(b"bytes x-2/3"), None);
        assert_eq!(content_range(b"bytes 10-19/100"), Some((10, 19)));
        assert_eq!(content_range(b"bytes 0-99/100"), None, "the whole file is no range");
        assert_eq!(content_range(b"bytes 10-200/100"), None, "past the end");
        assert_eq!(content_range(b"bytes 20-10/100"), None);
    }

    #[test]
    fn hashes_of_closed_and_truncated_files() {
        let cfg = FileConfig { enabled: true, md5: true, sha1: true, sha256: true };
        let mut f = HttpFile::open(b"a.txt", 1000, &cfg);
        f.append(b"ab");
        f.append(b"c");
        f.close(true);
        let v = record(|w| f.write_record(w, 3));
        assert_eq!(v["filename"], "a.txt");
        assert_eq!(v["state"], "CLOSED");
        assert_eq!(v["size"], 3);
        assert_eq!(v["tx_id"], 3);
        assert_eq!(v["gaps"], false);
        assert_eq!(v["stored"], false);
        assert_eq!(v["md5"], "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(v["sha1"], "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(v["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

        // Cut by the limit: only the first two bytes count, no md5, sha256 of the prefix.
        let mut f = HttpFile::open(b"a.txt", 2, &cfg);
        assert!(!f.append(b"abc"));
        f.close(true);
        let v = record(|w| f.write_record(w, 0));
        assert_eq!(v["state"], "TRUNCATED");
        assert_eq!(v["size"], 2);
        assert!(v.get("md5").is_none());
        assert_eq!(v["sha256"], "fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603");
    }

    #[test]
    fn gaps_count_in_size_and_truncate() {
        let mut f = HttpFile::open(b"/x", 100, &FileConfig { enabled: true, ..FileConfig::default() });
        f.append(b"1234");
        f.gap(10);
        f.append(b"56");
        f.close(true);
        assert_eq!((f.size, f.state, f.gaps), (16, FileState::Truncated, true));
        let v = record(|w| f.write_record(w, 1));
        assert!(v.get("sha256").is_none(), "not asked for");
    }

    /// As Suricata's: the digests go on over the bytes after a gap (tcp-rst-unacked-stream).
    #[test]
    fn digests_go_on_over_the_bytes_after_a_gap() {
        let cfg = FileConfig { enabled: true, sha256: true, ..FileConfig::default() };
        let mut f = HttpFile::open(b"/x", 100, &cfg);
        f.append(b"ab");
        f.gap(10);
        f.append(b"c");
        f.close(true);
        let v = record(|w| f.write_record(w, 1));
        assert_eq!((v["size"].as_u64(), v["gaps"].as_bool()), (Some(13), Some(true)));
        assert_eq!(v["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(\"abc\")");
    }

    #[test]
    fn long_names_are_cut() {
        let f = HttpFile::open(&[b'a'; 600], 10, &FileConfig::default());
        assert_eq!(f.name.len(), FILENAME_MAX);
    }
}
