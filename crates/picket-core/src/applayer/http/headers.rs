//! Line splitting and header-block parsing, tolerant the way libhtp is.
//!
//! Requests end lines at LF (a CR before it is dropped). Responses also accept a lone CR,
//! `LF CR`, and the deformed endings browsers accept (`CR LF CR` followed by more CR/SP/HT,
//! `LF CR CR LF` before an empty line), because servers can use them to hide headers from
//! a stricter parser. Folded lines (starting with SP, HT or NUL) continue the previous
//! value; in a response a continuation that looks like `token:` starts a new header
//! instead. A line without a colon becomes a header with an empty name. Names and values
//! are trimmed of whitespace (SP HT CR LF VT FF); repeated headers are merged with ", "
//! (Content-Length keeps its first value).

use super::HttpAnomaly;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Request,
    Response,
}

/// One header after folding and merging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
    /// How many times the name occurred (values of repeats are merged into `value`).
    pub count: u32,
}

/// libhtp's whitespace set.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

pub(crate) fn trim_space(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|&b| !is_space(b)).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Case-insensitive name comparison that ignores NUL bytes in the received name, so
/// `Transfer\0-Encoding` still counts (browsers skip the NUL).
///
/// `wanted` is a header name (no NUL). Names without a NUL, almost all of them, are compared
/// as a whole; only a longer name with a NUL takes the byte walk. Detection looks header
/// values up by name on every inspection (`http.user_agent`, `http.content_type`, ...), and
/// walking each header name byte by byte cost ~40 instructions per header.
pub(crate) fn name_matches(received: &[u8], wanted: &str) -> bool {
    // Dropping NULs only shortens the name, so a name no longer than `wanted` matches only
    // when its bytes match; one longer than `wanted` matches only with NULs dropped.
    if received.len() <= wanted.len() {
        return received.eq_ignore_ascii_case(wanted.as_bytes());
    }
    if !received.contains(&0) {
        return false;
    }
    let mut wanted = wanted.as_bytes().iter();
    for &b in received.iter().filter(|&&b| b != 0) {
        match wanted.next() {
            Some(w) if w.eq_ignore_ascii_case(&b) => {}
            _ => return false,
        }
    }
    wanted.next().is_none()
}

fn is_token(b: u8) -> bool {
    (33..=126).contains(&b) && !b"()<>@,;:\\\"/[]?={}".contains(&b)
}

/// A complete line: `content` excludes the line ending; `next` is the offset after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub start: usize,
    pub end: usize,
    pub next: usize,
}

/// Where an unsuccessful search for a line ending stopped, so that a line arriving one
/// byte per `on_data` call has each byte examined once, not once per call (which made
/// long lines quadratic). Valid for one direction's buffer; [`EolMemo::shift`] keeps it in
/// step when the buffer's front is dropped.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EolMemo {
    /// The search that got this far started here (searches only move forward).
    searched_from: usize,
    /// `buf[searched_from..clean_to]` holds no LF (and no CR if `cr_too`).
    clean_to: usize,
    cr_too: bool,
    /// Bytes examined in total, so tests can assert the work is linear.
    #[cfg(test)]
    pub scanned: u64,
}

impl EolMemo {
    /// The first `n` bytes of the buffer were dropped.
    pub fn shift(&mut self, n: usize) {
        self.searched_from = self.searched_from.saturating_sub(n);
        self.clean_to = self.clean_to.saturating_sub(n);
    }

    /// The buffer was emptied.
    pub fn reset(&mut self) {
        self.searched_from = 0;
        self.clean_to = 0;
        self.cr_too = false;
    }
}

/// Offset of the first LF (or CR too, with `cr_too`) at or after `from`.
pub(crate) fn find_eol(buf: &[u8], from: usize, cr_too: bool, memo: &mut EolMemo) -> Option<usize> {
    // A memo for CR-or-LF also proves there is no LF; one for LF alone says nothing about CR.
    let memo_applies = memo.searched_from <= from && (memo.cr_too || !cr_too);
    let start = if memo_applies { from.max(memo.clean_to) } else { from };
    let data = buf.get(start..)?;
    let found = if cr_too {
        data.iter().position(|&b| b == b'\n' || b == b'\r')
    } else {
        data.iter().position(|&b| b == b'\n')
    };
    #[cfg(test)]
    {
        memo.scanned += found.map_or(data.len(), |i| i + 1) as u64;
    }
    let clean_to = found.map_or(buf.len(), |i| start + i);
    memo.searched_from = from;
    memo.clean_to = clean_to;
    memo.cr_too = cr_too;
    found.map(|i| start + i)
}

/// Finds the line starting at `from`. `None` means more data is needed to decide. `memo`
/// carries the search state of `buf` between calls (see [`EolMemo`]).
pub(crate) fn next_line(buf: &[u8], from: usize, side: Side, eof: bool, memo: &mut EolMemo) -> Option<Line> {
    match side {
        Side::Request => {
            let lf = find_eol(buf, from, false, memo)?;
            let mut end = lf;
            if end > from && buf[end - 1] == b'\r' {
                end -= 1;
            }
            Some(Line { start: from, end, next: lf + 1 })
        }
        Side::Response => {
            let eol = find_eol(buf, from, true, memo)?;
            let eol_len = response_eol_len(&buf[eol..], eol == from, eof)?;
            Some(Line { start: from, end: eol, next: eol + eol_len })
        }
    }
}

/// Longest run of CR/SP/HT after `CR LF CR` still read as part of one deformed line ending.
const MAX_DEFORMED_RUN: usize = 64;

/// Length of the response line ending at the start of `eol` (which begins with CR or LF).
fn response_eol_len(eol: &[u8], empty_line: bool, eof: bool) -> Option<usize> {
    let at = |k: usize| eol.get(k).copied();
    // An unknown next byte: wait, unless the stream ended.
    macro_rules! need {
        ($k:expr) => {
            if at($k).is_none() && !eof {
                return None;
            }
        };
    }
    if empty_line {
        // End of headers waits for nothing but the LF of a CR LF: a bare LF is a whole
        // empty line (so an LF-only response without body completes at once).
        return match (at(0), at(1)) {
            (Some(b'\r'), Some(b'\n')) => Some(2),
            (Some(b'\r'), None) if !eof => None,
            _ => Some(1),
        };
    }
    if at(0) == Some(b'\n') {
        need!(1);
        if at(1) != Some(b'\r') {
            return Some(1);
        }
        // LF CR CR LF directly before an empty line is one (deformed) ending.
        need!(2);
        if at(2) == Some(b'\r') {
            need!(3);
            if at(3) == Some(b'\n') {
                need!(4);
                match at(4) {
                    Some(b'\n') => return Some(4),
                    Some(b'\r') => {
                        need!(5);
                        if at(5) == Some(b'\n') {
                            return Some(4);
                        }
                    }
                    _ => {}
                }
            }
        }
        return Some(2);
    }
    // CR
    need!(1);
    if at(1) != Some(b'\n') {
        return Some(1);
    }
    // CR LF CR [CR SP HT]+ LF? not followed by an empty line: one deformed ending.
    need!(2);
    if at(2) != Some(b'\r') {
        return Some(2);
    }
    let mut k = 3;
    while matches!(at(k), Some(b'\r' | b' ' | b'\t')) {
        k += 1;
        if k - 3 > MAX_DEFORMED_RUN {
            // Too long to be a line ending: decided without waiting for the run's end,
            // so the look-ahead (and what is buffered for it) stays bounded.
            return Some(2);
        }
    }
    need!(k);
    if k == 3 {
        return Some(2);
    }
    let mut end = k;
    if at(end) == Some(b'\n') {
        end += 1;
    }
    need!(end);
    let followed_by_empty_line = match at(end) {
        Some(b'\n') => true,
        Some(b'\r') => {
            need!(end + 1);
            at(end + 1) == Some(b'\n')
        }
        _ => false,
    };
    Some(if followed_by_empty_line { 2 } else { end })
}

/// What one line did to the header block.
pub(crate) enum LineOutcome {
    Continue,
    /// The line cannot be judged without the next byte: feed it again later.
    NeedMore,
    /// End of the block; the body starts at this offset into the line buffer.
    End {
        body_start: usize,
    },
}

/// Header lines collected so far for one message (or trailer).
#[derive(Debug)]
pub(crate) struct HeaderBlock {
    side: Side,
    pending: Option<(Vec<u8>, Vec<u8>)>,
    /// The pending line had no colon (its text is in the value).
    pending_missing_colon: bool,
    pub headers: Vec<Header>,
    pub max_headers: usize,
    /// Bytes of the block consumed so far, line endings included (held to `field_limit`).
    pub raw_len: usize,
}

impl HeaderBlock {
    pub fn new(side: Side, max_headers: usize) -> HeaderBlock {
        HeaderBlock { side, pending: None, pending_missing_colon: false, headers: Vec::new(), max_headers, raw_len: 0 }
    }

    /// Feeds one complete line. `eof`: no more data will follow `buf`.
    pub fn on_line(&mut self, line: Line, buf: &[u8], eof: bool, anomalies: &mut Vec<HttpAnomaly>) -> LineOutcome {
        let content = &buf[line.start..line.end];
        let eol_len = line.next - line.end;
        if content.is_empty() {
            // libhtp only sees an end of headers after a header (or a CRLF at the very
            // start); a lone CR opening a response header block is swallowed instead.
            let first_line = self.pending.is_none() && self.headers.is_empty();
            if first_line && self.side == Side::Response && eol_len == 1 && buf[line.end] == b'\r' {
                anomalies.push(HttpAnomaly::InvalidFolding);
                return LineOutcome::Continue;
            }
            self.flush(anomalies);
            return LineOutcome::End { body_start: line.next };
        }
        let first = content[0];
        if matches!(first, b' ' | b'\t' | 0) {
            if content.iter().all(|&b| is_space(b) || b == 0) {
                // A whitespace-only line is an empty fold when it ends with CRLF; after a
                // one-byte ending libhtp ends the headers there (swallowing one more LF).
                if eol_len >= 2 {
                    return LineOutcome::Continue;
                }
                let body_start = match buf.get(line.next) {
                    Some(b'\n') => line.next + 1,
                    Some(_) => line.next,
                    None if eof => line.next,
                    None => return LineOutcome::NeedMore,
                };
                self.flush(anomalies);
                return LineOutcome::End { body_start };
            }
            let indent = content.iter().position(|&b| !matches!(b, b' ' | b'\t' | 0)).unwrap_or(0);
            let rest = &content[indent..];
            let looks_like_header = self.side == Side::Response && {
                let token_len = rest.iter().take_while(|&&b| is_token(b)).count();
                let after = &rest[token_len..];
                let after = &after[after.iter().position(|&b| !matches!(b, b' ' | b'\t')).unwrap_or(after.len())..];
                token_len > 0 && after.first() == Some(&b':')
            };
            if !looks_like_header {
                if let Some((name, value)) = &mut self.pending {
                    // "Name<EOL> : value": libhtp keeps reading the name across a line
                    // ending followed by whitespace.
                    if self.pending_missing_colon {
                        if let Some(colon) = content.iter().position(|&b| b == b':') {
                            let mut joined = std::mem::take(value);
                            joined.push(b' ');
                            joined.extend_from_slice(&content[..colon]);
                            *name = joined;
                            *value = content[colon + 1..].to_vec();
                            self.pending_missing_colon = false;
                            anomalies.push(HttpAnomaly::InvalidFolding);
                            return LineOutcome::Continue;
                        }
                    }
                    anomalies.push(HttpAnomaly::FoldedHeader);
                    if !trim_space(value).is_empty() {
                        value.push(first);
                    }
                    value.extend_from_slice(&content[1..]);
                    return LineOutcome::Continue;
                }
            }
            anomalies.push(HttpAnomaly::InvalidFolding);
        }
        self.flush(anomalies);
        match content.iter().position(|&b| b == b':') {
            Some(colon) => {
                // Trimmed here (the value only in front: folding appends to it) so that
                // `flush` can usually keep both buffers instead of copying them again.
                self.pending =
                    Some((trim_space(&content[..colon]).to_vec(), trim_start(&content[colon + 1..]).to_vec()));
                self.pending_missing_colon = false;
            }
            None => {
                anomalies.push(HttpAnomaly::HeaderMissingColon);
                self.pending = Some((Vec::new(), content.to_vec()));
                self.pending_missing_colon = true;
            }
        }
        LineOutcome::Continue
    }

    /// Ends the block early (stream closed or size limit).
    pub fn finish(&mut self, anomalies: &mut Vec<HttpAnomaly>) {
        self.flush(anomalies);
    }

    fn flush(&mut self, anomalies: &mut Vec<HttpAnomaly>) {
        let Some((name, value)) = self.pending.take() else {
            return;
        };
        let (name, value) = (trimmed(name), trimmed(value));
        if let Some(existing) =
            self.headers.iter_mut().find(|h| h.name.len() == name.len() && h.name.eq_ignore_ascii_case(&name))
        {
            anomalies.push(HttpAnomaly::RepeatedHeader);
            if existing.count >= 64 {
                return;
            }
            existing.count += 1;
            if name_matches(&name, "content-length") {
                if existing.value != value {
                    anomalies.push(HttpAnomaly::AmbiguousContentLength);
                }
            } else {
                existing.value.extend_from_slice(b", ");
                existing.value.extend_from_slice(&value);
            }
            return;
        }
        if self.headers.len() >= self.max_headers {
            anomalies.push(HttpAnomaly::TooManyHeaders);
            return;
        }
        self.headers.push(Header { name, value, count: 1 });
    }
}

/// `s` without leading whitespace (as [`trim_space`] counts it).
fn trim_start(s: &[u8]) -> &[u8] {
    &s[s.iter().position(|&b| !is_space(b)).unwrap_or(s.len())..]
}

/// `v` trimmed like [`trim_space`], in an exactly sized buffer (header memory is charged
/// by capacity): `v` itself when it already is one, which is the common case, otherwise a
/// copy.
fn trimmed(v: Vec<u8>) -> Vec<u8> {
    let t = trim_space(&v);
    if t.len() == v.len() && v.capacity() == v.len() {
        v
    } else {
        t.to_vec()
    }
}

/// The first header whose name matches (case-insensitive, NULs ignored).
pub(crate) fn find<'a>(headers: &'a [Header], name: &str) -> Option<&'a Header> {
    headers.iter().find(|h| name_matches(&h.name, name))
}

/// Content-Length as libhtp reads it: leading junk and trailing junk around the first run
/// of digits are tolerated.
pub(crate) fn parse_content_length(value: &[u8]) -> Option<u64> {
    let start = value.iter().position(|b| b.is_ascii_digit())?;
    let digits = value[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut n: u64 = 0;
    for &d in &value[start..start + digits] {
        n = n.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(n)
}

/// A response Content-Length that sizes the body: digits with nothing but whitespace
/// around them. Anything else ("34 68", "34( 68)", a folded second value) is ambiguous;
/// Suricata then reads the body until the connection closes, so the IDS sees every byte
/// whichever value the client picked.
pub(crate) fn parse_content_length_exact(value: &[u8]) -> Option<u64> {
    let trimmed = value.trim_ascii();
    if trimmed.is_empty() || !trimmed.iter().all(u8::is_ascii_digit) {
        return None;
    }
    parse_content_length(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_content_length_rejects_junk() {
        assert_eq!(parse_content_length_exact(b" 68 "), Some(68));
        assert_eq!(parse_content_length_exact(b"\t007"), Some(7));
        for junk in [&b"34 68"[..], b"34( 68)", b"(68) 34", b"68;", b"68.0", b"", b" ", b"99999999999999999999999"] {
            assert_eq!(parse_content_length_exact(junk), None, "{:?}", String::from_utf8_lossy(junk));
        }
        assert_eq!(parse_content_length(b"34 68"), Some(34), "the lenient form keeps the first number");
    }

    fn parse(block: &[u8], side: Side) -> (Vec<Header>, Option<usize>) {
        let mut hb = HeaderBlock::new(side, 100);
        let mut anomalies = Vec::new();
        let mut pos = 0;
        let mut memo = EolMemo::default();
        while let Some(line) = next_line(block, pos, side, true, &mut memo) {
            match hb.on_line(line, block, true, &mut anomalies) {
                LineOutcome::End { body_start } => return (hb.headers, Some(body_start)),
                LineOutcome::NeedMore => unreachable!("eof given"),
                LineOutcome::Continue => {}
            }
            pos = line.next;
        }
        hb.finish(&mut anomalies);
        (hb.headers, None)
    }

    fn pairs(h: &[Header]) -> Vec<(String, String)> {
        h.iter().map(|h| (String::from_utf8_lossy(&h.name).into(), String::from_utf8_lossy(&h.value).into())).collect()
    }

    fn p(a: &str, b: &str) -> (String, String) {
        (a.into(), b.into())
    }

    /// Names and values are trimmed when the line is read (values only in front, since a
    /// fold may follow); whatever the path, the stored buffers are sized exactly, as the
    /// parser's memory is charged by capacity.
    #[test]
    fn trimmed_headers_are_exactly_sized() {
        let block = b" Host :  a.b  \r\nX:\t\r\n  folded \r\nY: v \r\n\tw\r\nZ:\r\nlone\r\n : late\r\n\r\n";
        let (h, _) = parse(block, Side::Request);
        assert_eq!(pairs(&h), vec![p("Host", "a.b"), p("X", "folded"), p("Y", "v \tw"), p("Z", ""), p("lone", "late")]);
        for hd in &h {
            assert_eq!(hd.name.capacity(), hd.name.len(), "{:?}", pairs(std::slice::from_ref(hd)));
            assert_eq!(hd.value.capacity(), hd.value.len(), "{:?}", pairs(std::slice::from_ref(hd)));
        }
    }

    #[test]
    fn folding_merging_and_missing_colon() {
        let block = b"A: 1\r\nB: x\r\n  y\r\n\tz\r\na: 2\r\nno colon here\r\nContent-Length: 5\r\ncontent-length: 7\r\n\r\nBODY";
        let (h, body) = parse(block, Side::Request);
        assert_eq!(
            pairs(&h),
            vec![p("A", "1, 2"), p("B", "x  y\tz"), p("", "no colon here"), p("Content-Length", "5")]
        );
        assert_eq!(&block[body.unwrap()..], b"BODY");
    }

    #[test]
    fn response_accepts_cr_and_lfcr_line_endings() {
        let block = b"A: 1\rB: 2\n\rC: 3\nD: 4\r\n\r\nX";
        let (h, body) = parse(block, Side::Response);
        assert_eq!(pairs(&h), vec![p("A", "1"), p("B", "2"), p("C", "3"), p("D", "4")]);
        assert_eq!(&block[body.unwrap()..], b"X");
        // The request side only splits at LF.
        let (h, _) = parse(block, Side::Request);
        assert_eq!(h[0].value, b"1\rB: 2");
    }

    #[test]
    fn response_deformed_crlfcr_hides_no_header() {
        let block = b"Connection: close\r\n\r\rTransfer-Encoding: chunked\r\n\r\nX";
        let (h, body) = parse(block, Side::Response);
        assert_eq!(pairs(&h), vec![p("Connection", "close"), p("Transfer-Encoding", "chunked")]);
        assert_eq!(&block[body.unwrap()..], b"X");
    }

    #[test]
    fn response_indented_header_is_a_header() {
        let (h, _) = parse(b"A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", Side::Response);
        assert_eq!(pairs(&h), vec![p("A", "1"), p("Transfer-Encoding", "chunked")]);
        let (h, _) = parse(b"A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", Side::Request);
        assert_eq!(pairs(&h), vec![p("A", "1 Transfer-Encoding: chunked")]);
    }

    #[test]
    fn whitespace_line_ends_headers_unless_crlf() {
        let (h, body) = parse(b"A: 1\n \nX", Side::Response);
        assert_eq!(pairs(&h), vec![p("A", "1")]);
        assert_eq!(body, Some(7));
        let (_, body) = parse(b"A: 1\n \n\nX", Side::Response);
        assert_eq!(body, Some(8));
        let (h, body) = parse(b"A: 1\r\n \r\nB: 2\r\n\r\n", Side::Response);
        assert_eq!(pairs(&h), vec![p("A", "1"), p("B", "2")]);
        assert!(body.is_some());
    }

    #[test]
    fn incomplete_lines_wait_for_more_data() {
        assert_eq!(next_line(b"A: 1\r", 0, Side::Response, false, &mut EolMemo::default()), None);
        assert_eq!(next_line(b"A: 1\n", 0, Side::Response, false, &mut EolMemo::default()), None);
        assert!(next_line(b"A: 1\n", 0, Side::Response, true, &mut EolMemo::default()).is_some());
        assert!(next_line(b"A: 1\n", 0, Side::Request, false, &mut EolMemo::default()).is_some());
        // An empty line only waits to see whether a CR is followed by LF.
        assert_eq!(next_line(b"\r", 0, Side::Response, false, &mut EolMemo::default()), None);
        assert_eq!(next_line(b"\rX", 0, Side::Response, false, &mut EolMemo::default()).map(|l| l.next), Some(1));
        assert_eq!(next_line(b"\n", 0, Side::Response, false, &mut EolMemo::default()).map(|l| l.next), Some(1));
    }

    #[test]
    fn names_ignore_nul_and_case() {
        assert!(name_matches(b"Transfer\0-ENCODING", "transfer-encoding"));
        assert!(!name_matches(b"Transfer-Encodingx", "transfer-encoding"));
        assert!(name_matches(b"user-AGENT", "user-agent"));
        assert!(name_matches(b"user-agenT\0", "user-agent"), "trailing NUL");
        assert!(!name_matches(b"user-agen", "user-agent"), "shorter");
        assert!(!name_matches(b"user\0agent", "user-agent"), "a NUL is dropped, not a '-'");
        assert!(name_matches(b"\0user-agent\0", "user-agent"), "longer with NULs");
        assert!(!name_matches(b"\0user-agents", "user-agent"));
        assert!(!name_matches(b"", "user-agent"));
        assert!(name_matches(b"", ""));
        assert_eq!(parse_content_length(b" (68) junk"), Some(68));
        assert_eq!(parse_content_length(b"x"), None);
        assert_eq!(parse_content_length(b"99999999999999999999999"), None);
    }
}
