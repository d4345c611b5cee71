//! The inspection buffers of one HTTP transaction that the detection engine reads
//! (`http.uri`, `http.header`, `file.data`, ...), seen from one direction.

use super::{Header, HttpTx, Progress};
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::Buffer;
use crate::stream::Direction;
use std::cell::OnceCell;

/// The inspection buffers of one transaction seen from one direction.
pub(crate) struct TxBuffers<'a> {
    tx: &'a HttpTx,
    dir: Direction,
    /// `http.header`, `http.header_names` and `http.start` of this direction, assembled on
    /// first use: a run often asks for none of them (the request's buffers seen from a
    /// to-client run, read only by the transactional rules among its candidates).
    header: OnceCell<Vec<u8>>,
    header_names: OnceCell<Vec<u8>>,
    start: OnceCell<Vec<u8>>,
    /// `http.request_header` / `http.response_header` instances ("Name: value" per header),
    /// built on first use: most rule sets never ask for them.
    header_lines: [OnceCell<HeaderLines>; 2],
}

/// One message's headers as "Name: value" lines, concatenated, with each line's end.
#[derive(Default)]
struct HeaderLines {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl HeaderLines {
    fn build(headers: &[Header]) -> HeaderLines {
        let mut lines = HeaderLines::default();
        for h in headers {
            lines.bytes.extend_from_slice(&h.name);
            lines.bytes.extend_from_slice(b": ");
            lines.bytes.extend_from_slice(&h.value);
            lines.ends.push(lines.bytes.len());
        }
        lines
    }

    fn nth(&self, index: usize) -> Option<&[u8]> {
        let end = *self.ends.get(index)?;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        self.bytes.get(start..end)
    }
}

impl<'a> TxBuffers<'a> {
    pub(crate) fn new(tx: &'a HttpTx, dir: Direction) -> Self {
        TxBuffers {
            tx,
            dir,
            header: OnceCell::new(),
            header_names: OnceCell::new(),
            start: OnceCell::new(),
            header_lines: Default::default(),
        }
    }

    /// A buffer assembled from the headers by `build`, once per `TxBuffers`.
    fn assembled<'s>(&'s self, cell: &'s OnceCell<Vec<u8>>, build: fn(&HttpTx, Direction, &mut Vec<u8>)) -> &'s [u8] {
        cell.get_or_init(|| {
            let mut out = Vec::new();
            build(self.tx, self.dir, &mut out);
            out
        })
    }

    fn progress(&self) -> Progress {
        match self.dir {
            Direction::ToServer => self.tx.request_progress,
            Direction::ToClient => self.tx.response_progress,
        }
    }

    fn headers_done(&self) -> bool {
        self.progress() >= Progress::Headers
    }

    /// Header line `index` of the request or response, once its headers are complete.
    fn header_line(&self, side: Direction, index: usize) -> Option<&[u8]> {
        let tx = self.tx;
        let ready = match side {
            Direction::ToServer => tx.request_progress >= Progress::Headers && !tx.request_missing,
            Direction::ToClient => self.dir == Direction::ToClient && tx.response_progress >= Progress::Headers,
        };
        if !ready {
            return None;
        }
        self.header_lines[side.index()].get_or_init(|| HeaderLines::build(tx.headers(side))).nth(index)
    }
}

fn non_empty(b: &[u8]) -> Option<&[u8]> {
    (!b.is_empty()).then_some(b)
}

impl BufferSource for TxBuffers<'_> {
    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        match buffer.name {
            // One instance per header line, as Suricata's multi-buffers.
            "http.request_header" => self.header_line(Direction::ToServer, index),
            "http.response_header" => self.header_line(Direction::ToClient, index),
            _ if index == 0 => self.get(buffer),
            _ => None,
        }
    }

    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        let tx = self.tx;
        let req_line = tx.request_progress >= Progress::Line && !tx.request_missing;
        let req_headers = tx.request_progress >= Progress::Headers && !tx.request_missing;
        let to_client = self.dir == Direction::ToClient;
        let headers = self.headers_done();
        match buffer.name {
            // Request-line buffers: available in both directions once parsed.
            "http.uri" if req_line => non_empty(&tx.uri_normalized),
            "http.uri.raw" if req_line => non_empty(&tx.uri_raw),
            "http.method" if req_line => non_empty(&tx.method),
            "http.request_line" if req_line => non_empty(&tx.request_line),
            "http.protocol" if to_client && tx.response_progress >= Progress::Line => non_empty(&tx.response_protocol),
            "http.protocol" if req_line => non_empty(&tx.request_protocol),
            "http.host" if req_headers => tx.host.as_deref().and_then(non_empty),
            "http.host.raw" if req_headers => tx.host_raw.as_deref().and_then(non_empty),
            "http.user_agent" if req_headers => tx.user_agent(),
            "http.cookie" if req_headers && !to_client => tx.cookie(),
            "http.cookie" if headers => tx.response_header("set-cookie"),
            "http.accept" if req_headers => tx.accept(),
            "http.accept_enc" if req_headers => tx.accept_encoding(),
            "http.accept_lang" if req_headers => tx.accept_language(),
            "http.referer" if req_headers => tx.referer(),
            "http.request_body" if tx.request_progress >= Progress::Body => non_empty(&tx.request_body),
            // Per-direction header buffers.
            "http.header" if headers => non_empty(self.assembled(&self.header, HttpTx::header_buffer)),
            "http.header_names" if headers => {
                non_empty(self.assembled(&self.header_names, HttpTx::header_names_buffer))
            }
            "http.start" if headers => non_empty(self.assembled(&self.start, HttpTx::start_buffer)),
            "http.header.raw" if headers => non_empty(match self.dir {
                Direction::ToServer => &tx.request_headers_raw,
                Direction::ToClient => &tx.response_headers_raw,
            }),
            "http.content_type" if headers => tx.content_type(self.dir),
            "http.content_len" if headers => tx.content_len(self.dir),
            "http.connection" if headers => tx.connection(self.dir),
            // Response buffers.
            "http.stat_code" if to_client && tx.response_progress >= Progress::Line => non_empty(&tx.status),
            "http.stat_msg" if to_client && tx.response_progress >= Progress::Line => non_empty(&tx.status_msg),
            "http.response_line" if to_client && tx.response_progress >= Progress::Line => non_empty(&tx.response_line),
            "http.location" if to_client && headers => tx.location(),
            "http.server" if to_client && headers => tx.server(),
            "http.response_body" if to_client && tx.response_progress >= Progress::Body => non_empty(&tx.response_body),
            "file.data" if to_client && tx.response_progress >= Progress::Body => non_empty(&tx.response_body),
            "file.data" if !to_client && tx.request_progress >= Progress::Body => non_empty(&tx.request_body),
            "http.request_header" => self.header_line(Direction::ToServer, 0),
            "http.response_header" => self.header_line(Direction::ToClient, 0),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applayer::http::{HttpConfig, HttpParser};
    use crate::detect::rule::buffers::buffer_by_name;

    fn parse(req: &[u8], resp: &[u8]) -> HttpParser {
        let mut p = HttpParser::new(HttpConfig::default());
        p.on_data(Direction::ToServer, req, &mut |_| {});
        p.on_data(Direction::ToClient, resp, &mut |_| {});
        p
    }

    fn get<'a>(b: &'a TxBuffers<'_>, name: &str) -> Option<&'a [u8]> {
        b.get(buffer_by_name(name).expect("known buffer"))
    }

    #[test]
    fn request_buffers_follow_progress() {
        let p =
            parse(b"GET /a%2fb?x=1 HTTP/1.1\r\nHost: Example.COM:8080\r\nUser-Agent: ua\r\nCookie: c=1\r\n\r\n", b"");
        let tx = p.tx(0).expect("tx");
        let b = TxBuffers::new(tx, Direction::ToServer);
        assert_eq!(get(&b, "http.method"), Some(&b"GET"[..]));
        assert_eq!(get(&b, "http.uri.raw"), Some(&b"/a%2fb?x=1"[..]));
        assert_eq!(get(&b, "http.host"), Some(&b"example.com"[..]));
        assert_eq!(get(&b, "http.user_agent"), Some(&b"ua"[..]));
        assert_eq!(get(&b, "http.cookie"), Some(&b"c=1"[..]));
        assert_eq!(get(&b, "http.protocol"), Some(&b"HTTP/1.1"[..]));
        let header = get(&b, "http.header").expect("header");
        assert!(header.windows(4).any(|w| w == b"Host"));
        assert!(!header.windows(6).any(|w| w == b"Cookie"), "cookie has its own buffer");
        assert_eq!(get(&b, "http.stat_code"), None, "no response yet");
        assert_eq!(get(&b, "http.request_body"), None);
    }

    #[test]
    fn partial_headers_are_not_inspected() {
        let p = parse(b"GET / HTTP/1.1\r\nHost: a\r\n", b"");
        let tx = p.tx(0).expect("tx");
        let b = TxBuffers::new(tx, Direction::ToServer);
        assert_eq!(get(&b, "http.uri"), Some(&b"/"[..]));
        assert_eq!(get(&b, "http.host"), None);
        assert_eq!(get(&b, "http.header"), None);
    }

    #[test]
    fn response_buffers_only_to_client() {
        let p = parse(
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 3\r\n\r\nabc",
        );
        let tx = p.tx(0).expect("tx");
        let c = TxBuffers::new(tx, Direction::ToClient);
        assert_eq!(get(&c, "http.stat_code"), Some(&b"404"[..]));
        assert_eq!(get(&c, "http.stat_msg"), Some(&b"Not Found"[..]));
        assert_eq!(get(&c, "http.content_type"), Some(&b"text/html"[..]));
        assert_eq!(get(&c, "file.data"), Some(&b"abc"[..]));
        assert_eq!(get(&c, "http.uri"), Some(&b"/"[..]), "request buffers stay visible");
        let s = TxBuffers::new(tx, Direction::ToServer);
        assert_eq!(get(&s, "http.stat_code"), None);
        assert_eq!(get(&s, "http.response_body"), None);
    }

    fn nth<'a>(b: &'a TxBuffers<'_>, name: &str, index: usize) -> Option<&'a [u8]> {
        b.get_nth(buffer_by_name(name).expect("known buffer"), index)
    }

    #[test]
    fn header_line_buffers_have_one_instance_per_header() {
        let p = parse(
            b"GET / HTTP/1.1\r\nHost: a\r\nCookie: c=1\r\nUser-Agent: ua\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nDate: today\r\nContent-Length: 0\r\n\r\n",
        );
        let tx = p.tx(0).expect("tx");
        let s = TxBuffers::new(tx, Direction::ToServer);
        assert_eq!(nth(&s, "http.request_header", 0), Some(&b"Host: a"[..]));
        assert_eq!(nth(&s, "http.request_header", 1), Some(&b"Cookie: c=1"[..]), "cookie included");
        assert_eq!(nth(&s, "http.request_header", 2), Some(&b"User-Agent: ua"[..]));
        assert_eq!(nth(&s, "http.request_header", 3), None);
        assert_eq!(get(&s, "http.request_header"), Some(&b"Host: a"[..]));
        assert_eq!(nth(&s, "http.response_header", 0), None, "response headers only to client");
        let c = TxBuffers::new(tx, Direction::ToClient);
        assert_eq!(nth(&c, "http.response_header", 0), Some(&b"Date: today"[..]));
        assert_eq!(nth(&c, "http.response_header", 1), Some(&b"Content-Length: 0"[..]));
        assert_eq!(nth(&c, "http.response_header", 2), None);
        assert_eq!(nth(&c, "http.uri", 1), None, "single buffers have one instance");
        assert_eq!(nth(&c, "http.uri", 0), Some(&b"/"[..]));
    }

    #[test]
    fn header_lines_wait_for_complete_headers() {
        let p = parse(b"GET / HTTP/1.1\r\nHost: a\r\n", b"");
        let b = TxBuffers::new(p.tx(0).expect("tx"), Direction::ToServer);
        assert_eq!(nth(&b, "http.request_header", 0), None);
    }
}
