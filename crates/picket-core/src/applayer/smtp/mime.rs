//! MIME decoding of one mail (the lines sent after DATA), the way Suricata's SMTP MIME
//! parser does it: the top-level headers (kept for the `email` record), then per part its
//! headers and its body. A part with a file name (Content-Disposition `filename=`, else
//! Content-Type `name=`) is an attachment: its decoded body becomes a file, hashed as it
//! streams (nothing is buffered). Bodies are decoded from base64 and quoted-printable;
//! URLs are collected from text parts and attachments; a `message/*` part is parsed as an
//! encapsulated mail whose headers are a new part's.
//!
//! The parser is fed line by line (`line` without its end of line, `full` with it). It
//! mirrors Suricata's decisions byte for byte where they show in records (which bytes a
//! file gets, which URLs are logged, in which order) and reports Suricata's MIME anomalies
//! as bits of [`Warnings`].
//!
//! Bounded: headers per mail, bytes per header value (`header-value-depth`), nesting
//! depth of boundaries, attachments, URLs and the line kept for URL search; what a bound
//! refuses is counted in [`MimeCounters`].

use crate::applayer::http::file::{FileConfig, HttpFile};

/// Suricata's MIME anomaly bits (`MIME_ANOM_*`).
pub type Warnings = u32;
pub const ANOM_INVALID_BASE64: Warnings = 0x1;
pub const ANOM_INVALID_QP: Warnings = 0x2;
pub const ANOM_LONG_LINE: Warnings = 0x4;
pub const ANOM_LONG_ENC_LINE: Warnings = 0x8;
pub const ANOM_LONG_HEADER_NAME: Warnings = 0x10;
pub const ANOM_LONG_HEADER_VALUE: Warnings = 0x20;
pub const ANOM_LONG_BOUNDARY: Warnings = 0x80;
pub const ANOM_LONG_FILENAME: Warnings = 0x100;

/// The app-layer event name of each anomaly bit, in the order Suricata sets them.
pub const ANOMALY_EVENTS: [(Warnings, &str); 8] = [
    (ANOM_INVALID_BASE64, "MIME_INVALID_BASE64"),
    (ANOM_INVALID_QP, "MIME_INVALID_QP"),
    (ANOM_LONG_LINE, "MIME_LONG_LINE"),
    (ANOM_LONG_ENC_LINE, "MIME_LONG_ENC_LINE"),
    (ANOM_LONG_HEADER_NAME, "MIME_LONG_HEADER_NAME"),
    (ANOM_LONG_HEADER_VALUE, "MIME_LONG_HEADER_VALUE"),
    (ANOM_LONG_BOUNDARY, "MIME_LONG_BOUNDARY"),
    (ANOM_LONG_FILENAME, "MIME_LONG_FILENAME"),
];

/// Longest line RFC 2045 allows, end of line excluded.
pub const MAX_LINE_LEN: usize = 998;
/// Longest encoded line RFC 2045 allows.
pub const MAX_ENC_LINE_LEN: usize = 76;
const MAX_HEADER_NAME: usize = 75;
/// The header value length past which Suricata reports `MIME_LONG_HEADER_VALUE`.
const MAX_HEADER_VALUE: usize = 2000;
const MAX_BOUNDARY_LEN: usize = 254;
/// Longest file name taken from a header token (Suricata's `RS_MIME_MAX_TOKEN_LEN`).
pub const MAX_TOKEN_LEN: usize = 255;
/// Bytes of a text line kept while looking for its end (URL search).
const MAX_DECODED_LINE: usize = 8192;

/// Headers kept per mail (top level and parts together).
pub const MAX_HEADERS: usize = 256;
/// Nested multipart boundaries kept.
pub const MAX_BOUNDARIES: usize = 32;
/// Attachments (and so files) per mail.
pub const MAX_ATTACHMENTS: usize = 128;
/// URLs kept per mail.
pub const MAX_URLS: usize = 128;
/// Attachment bytes kept for `file.data` per mail, all attachments together.
pub const MAX_FILE_DATA: usize = 1 << 20;

/// URL schemes searched (`extract-urls-schemes`).
pub const MAX_SCHEMES: usize = 8;
/// Longest scheme (with its `://`) kept.
pub const MAX_SCHEME_LEN: usize = 32;

/// The URL schemes to extract, each with its `://`: a fixed-size list, so that the
/// app-layer settings stay `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UrlSchemes {
    items: [[u8; MAX_SCHEME_LEN]; MAX_SCHEMES],
    lens: [usize; MAX_SCHEMES],
    len: usize,
}

impl UrlSchemes {
    pub const fn empty() -> Self {
        UrlSchemes { items: [[0; MAX_SCHEME_LEN]; MAX_SCHEMES], lens: [0; MAX_SCHEMES], len: 0 }
    }

    /// Adds `scheme` (with its `://`); false when the list is full or the scheme too long.
    pub fn push(&mut self, scheme: &[u8]) -> bool {
        if self.len == MAX_SCHEMES || scheme.len() > MAX_SCHEME_LEN || scheme.is_empty() {
            return false;
        }
        self.items[self.len][..scheme.len()].copy_from_slice(scheme);
        self.lens[self.len] = scheme.len();
        self.len += 1;
        true
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.items[..self.len].iter().zip(&self.lens).map(|(s, &n)| &s[..n])
    }
}

/// The `app-layer.protocols.smtp.mime` settings, Suricata's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MimeConfig {
    /// `decode-mime`: parse the mail at all (no files, no `email` data without it).
    pub decode_mime: bool,
    pub decode_base64: bool,
    pub decode_quoted_printable: bool,
    /// `header-value-depth`: bytes kept per header value (0: Suricata's 2000).
    pub header_value_depth: usize,
    pub extract_urls: bool,
    /// `extract-urls-schemes`, each with its `://` (default `http://`).
    pub url_schemes: UrlSchemes,
    /// `log-url-scheme`: keep the scheme in logged URLs.
    pub log_url_scheme: bool,
    /// `body-md5`: MD5 of the body (from the first body line to the end of the mail).
    pub body_md5: bool,
    /// `inspected-tracker.content-limit`: bytes of each attachment kept for `file.data`
    /// (Suricata's default 100000).
    pub content_limit: usize,
}

impl Default for MimeConfig {
    fn default() -> Self {
        MimeConfig {
            decode_mime: true,
            decode_base64: true,
            decode_quoted_printable: true,
            header_value_depth: MAX_HEADER_VALUE,
            extract_urls: true,
            url_schemes: {
                let mut s = UrlSchemes::empty();
                s.push(b"http://");
                s
            },
            log_url_scheme: false,
            body_md5: false,
            content_limit: 100_000,
        }
    }
}

/// What the MIME bounds refused (worker-wide).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MimeCounters {
    pub headers_dropped: u64,
    pub header_bytes_cut: u64,
    pub boundaries_dropped: u64,
    pub attachments_dropped: u64,
    pub urls_dropped: u64,
    /// Attachment bytes not kept for `file.data` (past `content-limit`, or past
    /// [`MAX_FILE_DATA`] for the whole mail).
    pub file_data_cut: u64,
}

/// One header: its name as sent and its value (folded lines joined).
#[derive(Clone, Debug, Default)]
pub struct MimeHeader {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Start,
    Header,
    Body,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Encoding {
    #[default]
    Plain,
    Base64,
    QuotedPrintable,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ContentType {
    /// No Content-Type yet: a message.
    #[default]
    Message,
    PlainText,
    Html,
    Unknown,
}

/// RFC 2045 base64, as Suricata decodes it: characters outside the alphabet are skipped,
/// quads may span lines, `=` pads.
#[derive(Clone, Copy, Debug, Default)]
struct Base64 {
    quad: [u8; 4],
    n: usize,
}

fn b64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

impl Base64 {
    /// Decodes `input` onto `out`; `Err` (and nothing of this call kept) on a misplaced `=`.
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), ()> {
        let start = out.len();
        for &c in input {
            if c != b'=' && b64_value(c).is_none() {
                continue;
            }
            self.quad[self.n] = c;
            self.n += 1;
            if self.n == 4 {
                self.n = 0;
                if self.flush_quad(out).is_err() {
                    out.truncate(start);
                    return Err(());
                }
            }
        }
        Ok(())
    }

    fn flush_quad(&self, out: &mut Vec<u8>) -> Result<(), ()> {
        let q = self.quad;
        let a = b64_value(q[0]).ok_or(())?;
        let b = b64_value(q[1]).ok_or(())?;
        out.push((a << 2) | (b >> 4));
        if q[2] == b'=' {
            return Ok(());
        }
        let c = b64_value(q[2]).ok_or(())?;
        out.push((b << 4) | (c >> 2));
        if q[3] == b'=' {
            return Ok(());
        }
        let d = b64_value(q[3]).ok_or(())?;
        out.push((c << 6) | d);
        Ok(())
    }

    /// The quad left open at a part's end, padded (Suricata's flush at a boundary).
    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.n > 0 {
            let pad = [b'='; 4];
            let n = 4 - self.n;
            let _ = self.decode(&pad[..n], out);
        }
    }
}

/// Uppercase hex digit only, as Suricata's quoted-printable decoder accepts.
fn qp_hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The MIME state of one mail.
#[derive(Clone, Default)]
pub struct MimeParser {
    phase: Phase,
    pub headers: Vec<MimeHeader>,
    /// Headers of the mail itself (the first block); the rest belong to the current part.
    pub main_headers: usize,
    filename: Vec<u8>,
    pub attachments: Vec<Vec<u8>>,
    pub urls: Vec<Vec<u8>>,
    boundaries: Vec<Vec<u8>>,
    encoding: Encoding,
    base64: Base64,
    content_type: ContentType,
    /// Start of a text line whose end is still to come (URL search).
    url_line: Vec<u8>,
    /// End of line held back from a plain attachment (it belongs to the file only if
    /// another body line follows), or a quoted-printable escape cut by a fragment.
    held: [u8; 2],
    held_len: usize,
    /// The attachments as files, in order; the last is the one open.
    pub files: Vec<HttpFile>,
    /// The start of each file's content, for `file.data` (at most `content-limit` bytes
    /// each, [`MAX_FILE_DATA`] together).
    pub file_data: Vec<Vec<u8>>,
    /// Attachments closed so far (a closed one is due for inspection).
    pub closed_files: usize,
    file_open: bool,
    md5: Option<md5::Md5>,
    md5_started: bool,
    /// `body_md5` as lowercase hex, once the mail ended.
    pub body_md5: Option<String>,
    /// Decoded bytes of the line being handled (reused).
    scratch: Vec<u8>,
}

impl std::fmt::Debug for MimeParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MimeParser")
            .field("phase", &self.phase)
            .field("headers", &self.headers.len())
            .field("attachments", &self.attachments.len())
            .field("files", &self.files)
            .finish()
    }
}

impl MimeParser {
    /// A parser for a mail about to start; `body_md5` from the config.
    pub fn new(cfg: &MimeConfig) -> Self {
        MimeParser { md5: cfg.body_md5.then(<md5::Md5 as md5::Digest>::new), ..MimeParser::default() }
    }

    /// Whether the parser is in a body (lines are then taken whatever their length).
    pub fn in_body(&self) -> bool {
        self.phase == Phase::Body
    }

    /// The mail's own headers.
    pub fn main_headers(&self) -> &[MimeHeader] {
        &self.headers[..self.main_headers.min(self.headers.len())]
    }

    /// The first top-level header named `name` (lowercase).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.main_headers().iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value.as_slice())
    }

    /// Back to a part's headers (after a boundary or for an encapsulated message).
    fn restart(&mut self) {
        self.phase = Phase::Start;
        self.headers.truncate(self.main_headers);
        self.encoding = Encoding::Plain;
        self.base64 = Base64::default();
        self.filename.clear();
        self.held_len = 0;
        self.content_type = ContentType::Message;
        self.url_line.clear();
    }

    /// One line of the mail: `line` without its end of line, `full` with it (equal for a
    /// fragment of a longer line).
    pub fn parse_line(
        &mut self,
        line: &[u8],
        full: &[u8],
        cfg: &MimeConfig,
        files: &FileConfig,
        counters: &mut MimeCounters,
    ) -> Warnings {
        let mut w = if line.len() > MAX_LINE_LEN { ANOM_LONG_LINE } else { 0 };
        if self.md5_started {
            if let Some(m) = self.md5.as_mut() {
                md5::Digest::update(m, full);
            }
        }
        match self.phase {
            Phase::Start | Phase::Header => {
                if line.is_empty() {
                    w |= self.end_of_headers(cfg, files, counters);
                } else if self.phase == Phase::Header && (line[0] == b' ' || line[0] == b'\t') {
                    if let Some(h) = self.headers.last_mut() {
                        append_bounded(&mut h.value, &line[1..], header_depth(cfg), counters);
                    }
                } else if let Some((name, value)) = header_line(line) {
                    self.phase = Phase::Header;
                    if name.len() > MAX_HEADER_NAME {
                        w |= ANOM_LONG_HEADER_NAME;
                    }
                    if value.len() > MAX_HEADER_VALUE {
                        w |= ANOM_LONG_HEADER_VALUE;
                    }
                    if self.headers.len() >= MAX_HEADERS {
                        counters.headers_dropped += 1;
                    } else {
                        let mut h =
                            MimeHeader { name: name[..name.len().min(MAX_TOKEN_LEN)].to_vec(), value: Vec::new() };
                        append_bounded(&mut h.value, value, header_depth(cfg), counters);
                        self.headers.push(h);
                    }
                }
            }
            Phase::Body => {
                if self.md5.is_some() && !self.md5_started {
                    self.md5_started = true;
                    if let Some(m) = self.md5.as_mut() {
                        md5::Digest::update(m, full);
                    }
                }
                w |= self.body_line(line, full, cfg, counters);
            }
        }
        w
    }

    /// The blank line after a header block: the part's headers decide its file name,
    /// encoding, boundary and type; a `message/*` part starts over with its own headers.
    fn end_of_headers(&mut self, cfg: &MimeConfig, files: &FileConfig, counters: &mut MimeCounters) -> Warnings {
        let (w, encapsulated) = self.process_headers(counters);
        if self.main_headers == 0 {
            self.main_headers = self.headers.len();
        }
        if encapsulated {
            self.restart();
            return w;
        }
        self.phase = Phase::Body;
        if !self.filename.is_empty() && cfg.decode_mime {
            if self.files.len() < MAX_ATTACHMENTS {
                self.files.push(HttpFile::open(&self.filename, usize::MAX, files));
                self.file_data.push(Vec::new());
                self.file_open = true;
            } else {
                counters.attachments_dropped += 1;
            }
        }
        w
    }

    fn process_headers(&mut self, counters: &mut MimeCounters) -> (Warnings, bool) {
        let mut w = 0;
        let mut encapsulated = false;
        let start = self.main_headers.min(self.headers.len());
        for i in start..self.headers.len() {
            let h = &self.headers[i];
            let name = h.name.as_slice();
            if name.eq_ignore_ascii_case(b"content-disposition") {
                if self.filename.is_empty() {
                    if let Some(v) = header_token(&h.value, b"filename") {
                        w |= self.take_filename(&v, counters);
                    }
                }
            } else if name.eq_ignore_ascii_case(b"content-transfer-encoding") {
                if h.value.eq_ignore_ascii_case(b"base64") {
                    self.encoding = Encoding::Base64;
                    self.base64 = Base64::default();
                } else if h.value.eq_ignore_ascii_case(b"quoted-printable") {
                    self.encoding = Encoding::QuotedPrintable;
                }
            } else if name.eq_ignore_ascii_case(b"content-type") {
                let value = h.value.clone();
                if self.filename.is_empty() {
                    if let Some(v) = header_token(&value, b"name") {
                        w |= self.take_filename(&v, counters);
                    }
                }
                if let Some(b) = header_token(&value, b"boundary") {
                    if b.len() > MAX_BOUNDARY_LEN {
                        w |= ANOM_LONG_BOUNDARY;
                    }
                    if self.boundaries.len() < MAX_BOUNDARIES {
                        let mut boundary = b"--".to_vec();
                        boundary.extend_from_slice(&b);
                        self.boundaries.push(boundary);
                    } else {
                        counters.boundaries_dropped += 1;
                    }
                }
                let ct = value.split(|&c| c == b';').next().unwrap_or_default();
                self.content_type = match ct {
                    b"text/plain" => ContentType::PlainText,
                    b"text/html" => ContentType::Html,
                    _ => {
                        encapsulated |= ct.starts_with(b"message/");
                        ContentType::Unknown
                    }
                };
            }
        }
        (w, encapsulated)
    }

    fn take_filename(&mut self, value: &[u8], counters: &mut MimeCounters) -> Warnings {
        let (value, w) =
            if value.len() > MAX_TOKEN_LEN { (&value[..MAX_TOKEN_LEN], ANOM_LONG_FILENAME) } else { (value, 0) };
        self.filename = value.to_vec();
        if self.attachments.len() < MAX_ATTACHMENTS {
            self.attachments.push(value.to_vec());
        } else {
            counters.attachments_dropped += 1;
        }
        w
    }

    fn body_line(&mut self, line: &[u8], full: &[u8], cfg: &MimeConfig, counters: &mut MimeCounters) -> Warnings {
        let mut w = 0;
        if let Some(b) = self.boundaries.last() {
            if line.starts_with(b) {
                let closing = line[b.len()..].starts_with(b"--");
                if self.encoding == Encoding::Base64 && cfg.decode_base64 {
                    let mut out = std::mem::take(&mut self.scratch);
                    out.clear();
                    self.base64.finish(&mut out);
                    self.append(&out, cfg, counters);
                    self.scratch = out;
                }
                if closing {
                    self.boundaries.pop();
                }
                self.close_file();
                self.restart();
                return 0;
            }
        }
        let attachment = !self.filename.is_empty();
        let text = matches!(self.content_type, ContentType::PlainText | ContentType::Html | ContentType::Message);
        if !attachment && !text {
            return 0;
        }
        match self.encoding {
            Encoding::Plain => {
                self.find_urls(full, cfg, counters);
                if attachment {
                    if self.held_len > 0 {
                        let held = self.held;
                        self.append(&held[..self.held_len], cfg, counters);
                    }
                    self.append(line, cfg, counters);
                    self.hold(&full[line.len()..]);
                }
            }
            Encoding::QuotedPrintable if !attachment => self.find_urls(full, cfg, counters),
            Encoding::Base64 => {
                if !cfg.decode_base64 {
                    return 0;
                }
                if line.len() > MAX_ENC_LINE_LEN {
                    w |= ANOM_LONG_ENC_LINE;
                }
                let mut out = std::mem::take(&mut self.scratch);
                out.clear();
                if self.base64.decode(line, &mut out).is_ok() {
                    self.find_urls(&out, cfg, counters);
                    if attachment {
                        self.append(&out, cfg, counters);
                    }
                } else {
                    self.base64 = Base64::default();
                    w |= ANOM_INVALID_BASE64;
                }
                self.scratch = out;
            }
            Encoding::QuotedPrintable => {
                if !cfg.decode_quoted_printable {
                    return 0;
                }
                if line.len() > MAX_ENC_LINE_LEN {
                    w |= ANOM_LONG_ENC_LINE;
                }
                let mut out = std::mem::take(&mut self.scratch);
                out.clear();
                w |= self.quoted_printable(line, full, &mut out);
                self.find_urls(&out, cfg, counters);
                self.append(&out, cfg, counters);
                self.scratch = out;
            }
        }
        w
    }

    /// Keeps the end of line `eol` (at most 2 bytes) for the next line to decide on.
    fn hold(&mut self, eol: &[u8]) {
        self.held_len = eol.len().min(2);
        self.held[..self.held_len].copy_from_slice(&eol[..self.held_len]);
    }

    /// Decodes one quoted-printable line of an attachment onto `out`: `=XX` escapes
    /// (uppercase hex), a trailing `=` joins the next line, other ends of line are kept;
    /// an escape cut by the end of a fragment is finished with the next one.
    fn quoted_printable(&mut self, line: &[u8], full: &[u8], out: &mut Vec<u8>) -> Warnings {
        let mut w = 0;
        let mut c = 0usize;
        let mut soft_break = false;
        if self.held_len > 0 && self.held[0] == b'=' {
            if line.len() >= 2 {
                let (h1, h2) = if self.held_len == 1 { (line[0], line[1]) } else { (self.held[1], line[0]) };
                if let (Some(a), Some(b)) = (qp_hex(h1), qp_hex(h2)) {
                    out.push((a << 4) | b);
                }
            }
            if out.is_empty() {
                w |= ANOM_INVALID_QP;
            }
            c = 3 - self.held_len;
            self.held_len = 0;
        } else if self.held_len > 0 {
            out.extend_from_slice(&self.held[..self.held_len]);
            self.held_len = 0;
        }
        while c < line.len() {
            if line[c] != b'=' {
                out.push(line[c]);
                c += 1;
                continue;
            }
            if c == line.len() - 1 && full.len() > line.len() {
                soft_break = true;
                break;
            }
            if c + 2 >= line.len() {
                if full.len() > line.len() {
                    w |= ANOM_INVALID_QP;
                } else {
                    // A fragment ends inside the escape: keep it for the next one.
                    self.held_len = line.len() - c;
                    self.held[0] = b'=';
                    if self.held_len == 2 {
                        self.held[1] = line[c + 1];
                    }
                }
                break;
            }
            match (qp_hex(line[c + 1]), qp_hex(line[c + 2])) {
                (Some(a), Some(b)) => out.push((a << 4) | b),
                _ => w |= ANOM_INVALID_QP,
            }
            c += 3;
        }
        if line.is_empty() {
            // A blank line's end of line goes to the file only if more follows.
            self.hold(&full[line.len()..]);
        } else if !soft_break {
            out.extend_from_slice(&full[line.len()..]);
        }
        w
    }

    /// Appends decoded bytes to the open attachment.
    fn append(&mut self, data: &[u8], cfg: &MimeConfig, counters: &mut MimeCounters) {
        if !self.file_open || data.is_empty() {
            return;
        }
        if let Some(f) = self.files.last_mut() {
            f.append(data);
        }
        let held: usize = self.file_data.iter().map(Vec::len).sum();
        if let Some(d) = self.file_data.last_mut() {
            let room = cfg.content_limit.saturating_sub(d.len()).min(MAX_FILE_DATA.saturating_sub(held));
            let n = room.min(data.len());
            d.extend_from_slice(&data[..n]);
            counters.file_data_cut += (data.len() - n) as u64;
        }
    }

    fn close_file(&mut self) {
        if self.file_open {
            if let Some(f) = self.files.last_mut() {
                f.close(true);
            }
            self.file_open = false;
            self.closed_files += 1;
        }
    }

    /// The mail ended (the `.` line): the open attachment closes, the body MD5 is final
    /// and a text line left without its end is searched for URLs.
    pub fn complete(&mut self, cfg: &MimeConfig, counters: &mut MimeCounters) {
        if self.md5_started {
            if let Some(m) = self.md5.take() {
                let digest = md5::Digest::finalize(m);
                self.body_md5 = Some(digest.iter().map(|b| format!("{b:02x}")).collect());
            }
        }
        self.find_urls(b"\n", cfg, counters);
        self.close_file();
    }

    /// The mail was cut (gap, flow end): an open attachment ends truncated.
    pub fn truncate(&mut self) {
        if self.file_open {
            if let Some(f) = self.files.last_mut() {
                f.close(false);
            }
            self.file_open = false;
        }
    }

    /// `len` bytes of the mail were lost: the open attachment has a hole.
    pub fn gap(&mut self, len: u64) {
        if self.file_open {
            if let Some(f) = self.files.last_mut() {
                f.gap(len);
            }
        }
    }

    /// URLs in decoded text, searched line by line (a line's start is kept until its end
    /// comes, up to [`MAX_DECODED_LINE`] bytes).
    fn find_urls(&mut self, new: &[u8], cfg: &MimeConfig, counters: &mut MimeCounters) {
        if !cfg.extract_urls {
            return;
        }
        let mut line = std::mem::take(&mut self.url_line);
        let buffered = !line.is_empty();
        if buffered {
            line.extend_from_slice(new);
        }
        let input: &[u8] = if buffered { &line } else { new };
        if input.is_empty() {
            self.url_line = line;
            return;
        }
        if input.last() == Some(&b'\n') || input.len() > MAX_DECODED_LINE {
            extract_urls(&mut self.urls, input, cfg, counters);
            line.clear();
        } else if let Some(back) = input.iter().rev().take(new.len()).position(|&b| b == b'\n') {
            let x = input.len() - 1 - back;
            extract_urls(&mut self.urls, &input[..x], cfg, counters);
            if buffered {
                line.drain(..x);
            } else {
                line.extend_from_slice(&new[x..]);
            }
        } else if !buffered {
            line.extend_from_slice(new);
        }
        self.url_line = line;
    }

    /// Heap held (headers, names, URLs, boundaries, line buffers, files).
    pub fn heap_bytes(&self) -> usize {
        let vecs = |v: &[Vec<u8>]| v.iter().map(|x| x.capacity() + std::mem::size_of::<Vec<u8>>()).sum::<usize>();
        self.headers.iter().map(|h| h.name.capacity() + h.value.capacity()).sum::<usize>()
            + self.headers.capacity() * std::mem::size_of::<MimeHeader>()
            + vecs(&self.attachments)
            + vecs(&self.urls)
            + vecs(&self.boundaries)
            + self.filename.capacity()
            + self.url_line.capacity()
            + self.scratch.capacity()
            + self.files.iter().map(|f| f.name.capacity() + std::mem::size_of::<HttpFile>()).sum::<usize>()
            + vecs(&self.file_data)
    }
}

fn header_depth(cfg: &MimeConfig) -> usize {
    if cfg.header_value_depth == 0 {
        MAX_HEADER_VALUE
    } else {
        cfg.header_value_depth
    }
}

/// Appends `data` to a header value up to `depth` bytes; the rest is counted.
fn append_bounded(value: &mut Vec<u8>, data: &[u8], depth: usize, counters: &mut MimeCounters) {
    let room = depth.saturating_sub(value.len());
    if data.len() > room {
        counters.header_bytes_cut += (data.len() - room) as u64;
    }
    value.extend_from_slice(&data[..data.len().min(room)]);
}

fn is_mime_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// `Name: value`: the name up to the first colon, the value after the spaces that follow.
fn header_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&c| c == b':')?;
    let value = &line[colon + 1..];
    let skip = value.iter().take_while(|&&c| is_mime_space(c)).count();
    Some((&line[..colon], &value[skip..]))
}

/// The parameters of a header value after its first `;`: `name=value` or
/// `name="quoted value"`, in order (Suricata's token parser: parsing stops at the first
/// parameter without `=`).
fn header_params(value: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut params = Vec::new();
    let Some(semi) = value.iter().position(|&c| c == b';') else { return params };
    let mut rest = &value[semi + 1..];
    while !rest.is_empty() {
        let skip = rest.iter().take_while(|&&c| is_mime_space(c)).count();
        let r = &rest[skip..];
        let Some(eq) = r.iter().position(|&c| c == b'=') else { break };
        let name = &r[..eq];
        let mut r = &r[eq + 1..];
        let v: &[u8];
        match quoted_value(r) {
            Some((val, after)) => {
                v = val;
                r = after;
            }
            None => {
                let end = r.iter().position(|&c| c == b';').unwrap_or(r.len());
                let mut val = &r[..end];
                while let Some((&last, head)) = val.split_last() {
                    if !is_mime_space(last) {
                        break;
                    }
                    val = head;
                }
                v = val;
                r = &r[end..];
            }
        }
        let skip = r.iter().take_while(|&&c| is_mime_space(c)).count();
        r = &r[skip..];
        if let Some(after) = r.strip_prefix(b";") {
            r = after;
        }
        params.push((name, v));
        if r.len() == rest.len() {
            break;
        }
        rest = r;
    }
    params
}

/// `"value"` (a backslash keeps the next quote): the value and what follows it.
fn quoted_value(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let r = r.strip_prefix(b"\"")?;
    let mut escaping = false;
    for (i, &c) in r.iter().enumerate() {
        if c == b'\\' {
            escaping = true;
        } else {
            if c == b'"' && !escaping {
                return Some((&r[..i], &r[i + 1..]));
            }
            escaping = false;
        }
    }
    None
}

/// The value of parameter `token` of a header value (the last one of that name), or the
/// concatenation of its RFC 2231 sections `token*0`, `token*1`, ...
pub fn header_token(value: &[u8], token: &[u8]) -> Option<Vec<u8>> {
    let params = header_params(value);
    let find = |name: &[u8]| params.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v);
    if let Some(v) = find(token) {
        return Some(v.to_vec());
    }
    let mut out = Vec::new();
    let mut section = 0usize;
    loop {
        let mut name = token.to_vec();
        name.extend_from_slice(format!("*{section}").as_bytes());
        match find(&name) {
            Some(v) => out.extend_from_slice(v),
            None if section == 0 => return None,
            None => return Some(out),
        }
        section += 1;
    }
}

/// Appends the URLs of the configured schemes found in `input` (case-insensitively), each
/// up to the first space, quote, `<`, `>`, `]` or tab, without its scheme unless
/// `log-url-scheme`.
fn extract_urls(urls: &mut Vec<Vec<u8>>, input: &[u8], cfg: &MimeConfig, counters: &mut MimeCounters) {
    for scheme in cfg.url_schemes.iter() {
        let mut rest = input;
        while let Some(start) = find_nocase(rest, scheme) {
            let tail = &rest[start..];
            let end = tail
                .iter()
                .position(|&c| matches!(c, b' ' | b'"' | b'\'' | b'<' | b'>' | b']' | b'\t'))
                .unwrap_or(tail.len());
            let url = &tail[..end];
            let logged = if cfg.log_url_scheme { url } else { &url[scheme.len().min(url.len())..] };
            if urls.len() < MAX_URLS {
                urls.push(logged.to_vec());
            } else {
                counters.urls_dropped += 1;
            }
            rest = &rest[start + end.max(1)..];
        }
    }
}

fn find_nocase(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut MimeParser, mail: &[u8], cfg: &MimeConfig, files: &FileConfig) -> Warnings {
        let mut c = MimeCounters::default();
        let mut w = 0;
        for full in mail.split_inclusive(|&b| b == b'\n') {
            let line = full.strip_suffix(b"\n").unwrap_or(full);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            w |= p.parse_line(line, full, cfg, files, &mut c);
        }
        p.complete(cfg, &mut c);
        w
    }

    const HASH: FileConfig = FileConfig { enabled: true, md5: false, sha1: false, sha256: true };

    fn sha256(f: &HttpFile) -> String {
        crate::record::value::record(|w| f.write_record(w, 0))["sha256"].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn base64_attachment_of_a_multipart_mail() {
        let mail = b"From: \"A\" <a@x>\r\nTo: b@y, \"c, d\" <c@y>\r\nSubject: hi\r\n\
Content-Type: multipart/mixed;\r\n boundary=\"XX\"\r\n\r\npreamble\r\n--XX\r\n\
Content-Type: text/plain\r\n\r\nsee http://example.com/a and HTTP://b.org\r\n--XX\r\n\
Content-Type: application/octet-stream; name=\"x.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n\
YWJj\r\nZA\r\n--XX--\r\n";
        let cfg = MimeConfig::default();
        let mut p = MimeParser::new(&cfg);
        assert_eq!(feed(&mut p, mail, &cfg, &HASH), 0);
        assert_eq!(p.header(b"subject"), Some(&b"hi"[..]));
        assert_eq!(p.header(b"content-type"), Some(&b"multipart/mixed;boundary=\"XX\""[..]));
        assert_eq!(p.attachments, vec![b"x.bin".to_vec()]);
        assert_eq!(p.urls, vec![b"example.com/a".to_vec(), b"b.org\r\n".to_vec()]);
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!((f.size, f.state), (4, crate::applayer::http::file::FileState::Closed));
        assert_eq!(sha256(f), "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589", "sha256(abcd)");
    }

    #[test]
    fn plain_attachment_loses_its_last_end_of_line() {
        let mail = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
Content-Disposition: attachment; filename=\"t.txt\"\r\n\r\nab\r\ncd\r\n--b--\r\n";
        let cfg = MimeConfig::default();
        let mut p = MimeParser::new(&cfg);
        feed(&mut p, mail, &cfg, &HASH);
        assert_eq!(p.files[0].size, 6, "ab\\r\\ncd");
        assert_eq!(p.file_data, vec![b"ab\r\ncd".to_vec()]);
        assert_eq!(p.closed_files, 1);
        let cut = MimeConfig { content_limit: 3, ..cfg };
        let mut p = MimeParser::new(&cut);
        let mut c = MimeCounters::default();
        for full in mail.split_inclusive(|&b| b == b'\n') {
            let line = full.strip_suffix(b"\r\n").unwrap_or(full);
            p.parse_line(line, full, &cut, &HASH, &mut c);
        }
        assert_eq!((p.file_data[0].as_slice(), c.file_data_cut), (&b"ab\r"[..], 3));
        assert_eq!(p.files[0].size, 6, "the file itself is not cut");
    }

    #[test]
    fn quoted_printable_soft_breaks_and_escapes() {
        let mail = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
Content-Type: text/x-patch; name=p.patch\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
a=3Db=\r\nc\r\n=zz\r\n--b--\r\n";
        let cfg = MimeConfig::default();
        let mut p = MimeParser::new(&cfg);
        let w = feed(&mut p, mail, &cfg, &HASH);
        assert_eq!(w, ANOM_INVALID_QP, "lowercase or bad hex");
        // "a=b" + "c\r\n" + "\r\n" (the bad escape is dropped, its line end kept)
        assert_eq!(p.files[0].size, 8);
    }

    #[test]
    fn encapsulated_message_parts_and_long_lines() {
        let long = vec![b'Q'; 1200];
        let mut mail = b"Content-Type: message/rfc822\r\n\r\nContent-Type: multipart/mixed; boundary=\"in\"\r\n\r\n\
--in\r\nContent-Disposition: attachment; filename=malware.exe\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            .to_vec();
        mail.extend_from_slice(&long);
        mail.extend_from_slice(b"\r\n--in--\r\n");
        let cfg = MimeConfig::default();
        let mut p = MimeParser::new(&cfg);
        let w = feed(&mut p, &mail, &cfg, &HASH);
        assert_eq!(w, ANOM_LONG_LINE | ANOM_LONG_ENC_LINE);
        assert_eq!(p.attachments, vec![b"malware.exe".to_vec()]);
        assert_eq!(p.files[0].size, 900);
    }

    #[test]
    fn header_tokens_as_suricata_reads_them() {
        assert_eq!(header_token(b"attachment; filename=\"a b.txt\"", b"filename"), Some(b"a b.txt".to_vec()));
        assert_eq!(header_token(b"text/plain; name=x.txt ; charset=utf-8", b"name"), Some(b"x.txt".to_vec()));
        assert_eq!(header_token(b"a; name*0=\"ab\"; name*1=cd", b"name"), Some(b"abcd".to_vec()));
        assert_eq!(header_token(b"attachment", b"filename"), None);
        assert_eq!(header_token(b"a; FILENAME=x", b"filename"), None, "names are case-sensitive");
    }

    #[test]
    fn bounds_are_counted() {
        let cfg = MimeConfig { header_value_depth: 10, ..MimeConfig::default() };
        let mut p = MimeParser::new(&cfg);
        let mut c = MimeCounters::default();
        for _ in 0..MAX_HEADERS + 3 {
            p.parse_line(b"X-A: 0123456789abc", b"X-A: 0123456789abc\r\n", &cfg, &HASH, &mut c);
        }
        assert_eq!(c.headers_dropped, 3);
        assert_eq!(c.header_bytes_cut, 3 * MAX_HEADERS as u64);
        assert_eq!(p.headers[0].value, b"0123456789");
    }

    #[test]
    fn body_md5_from_the_first_body_line() {
        let cfg = MimeConfig { body_md5: true, ..MimeConfig::default() };
        let mut p = MimeParser::new(&cfg);
        feed(&mut p, b"Subject: x\r\n\r\nabc", &cfg, &HASH);
        assert_eq!(p.body_md5.as_deref(), Some("900150983cd24fb0d6963f7d28e17f72"));
    }
}
