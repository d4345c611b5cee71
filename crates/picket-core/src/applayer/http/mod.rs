//! HTTP/1.x parser, sans-IO, modelled on the libhtp behaviour Suricata relies on.
//!
//! One [`HttpParser`] per TCP flow. Feed it reassembled stream data per direction
//! ([`HttpParser::on_data`], from `TcpReassembly::app_data`; the parser copies what it needs,
//! so the caller can consume everything it hands over), holes with [`HttpParser::on_gap`] and
//! the end of the flow with [`HttpParser::on_close`]. It produces [`HttpTx`] transactions
//! (request + response, matched in order, so pipelining works) and reports progress as
//! [`HttpEvent`]s. Chunk boundaries never matter: feeding a stream one byte at a time gives
//! the same transactions as feeding it whole.
//!
//! # What is tolerated (and why)
//! Evasions work by making the IDS parse differently from the client, so the parser accepts
//! what browsers accept: bare LF and (in responses) bare CR line endings and the deformed
//! mixes of both, folded and indented headers, headers without a colon, junk around
//! Content-Length digits and chunk sizes, `chunked` anywhere in Transfer-Encoding, response
//! lines that are not HTTP (they become body, as HTTP/0.9), HTTP/0.9 requests, invalid chunk
//! sizes (the rest of the stream becomes body), wrong or stacked Content-Encodings (see
//! [`decompress`]). Details in [`headers`] and [`uri`].
//!
//! # Bounded memory
//! A line or header block longer than `field_limit` ends parsing of that direction
//! (`HttpAnomaly::FieldTooLong`); header count, merged repeats, stored bodies
//! (`request_body_limit`/`response_body_limit`), decompression output (bomb limit and ratio)
//! and the number of live transactions (`max_tx`, oldest dropped first) are all capped and
//! counted in [`HttpCounters`]. Callers prune finished transactions with
//! [`HttpParser::prune_completed`] once detection is done with them.
//!
//! # Not done
//! Multipart/form-data and file extraction, request body URL-decoding, LZMA and Brotli
//! content codings, the decompression time limit, libhtp server personalities other than
//! the default, resynchronising a direction after a gap inside headers.

pub(crate) mod buffers;
pub mod decompress;
pub mod file;
pub(crate) mod flow;
pub mod headers;
pub mod record;
#[cfg(test)]
mod tests;
pub mod upgrade;
pub mod uri;

use std::collections::VecDeque;

use decompress::{BodyDecoder, Codec, DecompressLimits};
pub use file::{FileConfig, FileState, HttpFile};
pub use headers::Header;
use headers::{
    find, find_eol, name_matches, next_line, parse_content_length, parse_content_length_exact, EolMemo, HeaderBlock,
    Line, LineOutcome, Side,
};
pub use uri::ParsedUri;

pub use crate::stream::Direction;

/// Settings from `app-layer.protocols.http.libhtp.default-config`.
#[derive(Clone, Copy, Debug)]
pub struct HttpConfig {
    /// `request-body-limit` (Suricata default 100 KiB); body bytes stored per request.
    pub request_body_limit: usize,
    /// `response-body-limit` (default 100 KiB); decoded body bytes stored per response.
    pub response_body_limit: usize,
    /// Undo gzip/deflate Content-Encoding on responses (libhtp always does).
    pub decompress_response: bool,
    /// Undo Content-Encoding on request bodies (Suricata turns libhtp's request
    /// decompression on for every server config; there is no YAML key for it).
    pub decompress_request: bool,
    /// `response-body-decompress-layer-limit` (default 2); 0 means unlimited.
    pub decompress_layer_limit: u32,
    /// `compression-bomb-limit` (default 1 MiB): decoded bytes before the ratio applies.
    pub compression_bomb_limit: u64,
    /// Decoded/encoded ratio that marks a bomb past the limit (libhtp: 2048).
    pub compression_bomb_ratio: u64,
    /// Longest line or header block buffered (libhtp `field_limit`, 18000).
    pub field_limit: usize,
    /// Distinct headers kept per message.
    pub max_headers: usize,
    /// Live transactions per flow before the oldest is dropped.
    pub max_tx: usize,
    /// Bodies tracked as files (eve `fileinfo`), and their digests (SMTP attachments too).
    pub files: FileConfig,
    /// The SMTP parser's settings, which travel with the per-run app-layer settings.
    pub smtp: crate::applayer::smtp::SmtpConfig,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            request_body_limit: 100 * 1024,
            response_body_limit: 100 * 1024,
            decompress_response: true,
            decompress_request: true,
            decompress_layer_limit: 2,
            compression_bomb_limit: 1024 * 1024,
            compression_bomb_ratio: 2048,
            field_limit: 18000,
            max_headers: 1024,
            max_tx: 512,
            files: FileConfig::default(),
            smtp: crate::applayer::smtp::SmtpConfig::default(),
        }
    }
}

/// How far one side of a transaction got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Progress {
    #[default]
    NotStarted,
    Line,
    Headers,
    Body,
    Trailers,
    Complete,
}

/// Protocol oddities worth counting or logging (libhtp's warnings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpAnomaly {
    /// A request line without a protocol: HTTP/0.9, no headers.
    Http09Request,
    /// A request line without a protocol followed by more data: parsed with headers, as
    /// libhtp does (Suricata's `REQUEST_LINE_MISSING_PROTOCOL`).
    RequestLineMissingProtocol,
    /// A response line that does not start with "HTTP": treated as body.
    ResponseLineNotHttp,
    InvalidStatusLine,
    FoldedHeader,
    /// A header line starting with whitespace that could not be a continuation.
    InvalidFolding,
    HeaderMissingColon,
    RepeatedHeader,
    AmbiguousContentLength,
    TooManyHeaders,
    /// A line or header block exceeded `field_limit`; the direction is no longer parsed.
    FieldTooLong,
    InvalidContentLength,
    /// Bad chunk size: the rest of the stream is treated as body.
    InvalidChunkLength,
    ChunkExtension,
    /// Both Transfer-Encoding: chunked and Content-Length (request smuggling pattern).
    ChunkedWithContentLength,
    /// A response arrived with no request to match it.
    ResponseWithoutRequest,
    /// 1xx/204/304 response with a body announced.
    UnexpectedResponseBody,
    RepeatedContinue,
    TooManyEncodingLayers,
    UnknownContentEncoding,
    DecompressionBomb,
    /// Data missing where the parser cannot skip it (line or headers): direction stops.
    GapInHeaders,
    /// The flow ended in the middle of a message.
    Truncated,
    /// The oldest transaction was dropped to stay under `max_tx`.
    TransactionDropped,
}

impl HttpAnomaly {
    /// Suricata's app-layer event for this anomaly and the direction of the data that
    /// shows it (eve `anomaly` records of type `applayer`); `None` where picket's
    /// anomaly has no exact Suricata counterpart.
    pub fn suricata_event(self) -> Option<(Direction, &'static str)> {
        match self {
            HttpAnomaly::RequestLineMissingProtocol => Some((Direction::ToServer, "REQUEST_LINE_MISSING_PROTOCOL")),
            HttpAnomaly::ResponseWithoutRequest => Some((Direction::ToClient, "UNABLE_TO_MATCH_RESPONSE_TO_REQUEST")),
            _ => None,
        }
    }
}

/// What happened while parsing; `tx` is an [`HttpTx::id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpEvent {
    RequestLine {
        tx: u64,
    },
    RequestHeaders {
        tx: u64,
    },
    /// New request body bytes were appended (after dechunking/decoding).
    RequestBodyData {
        tx: u64,
    },
    RequestComplete {
        tx: u64,
    },
    ResponseLine {
        tx: u64,
    },
    ResponseHeaders {
        tx: u64,
    },
    ResponseBodyData {
        tx: u64,
    },
    ResponseComplete {
        tx: u64,
    },
    Anomaly {
        tx: Option<u64>,
        anomaly: HttpAnomaly,
    },
}

/// Per-flow counters (the caller sums them into worker counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpCounters {
    pub transactions: u64,
    pub anomalies: u64,
    pub request_body_truncated: u64,
    pub response_body_truncated: u64,
    pub decompression_bombs: u64,
    pub transactions_dropped: u64,
    pub fields_too_long: u64,
    pub gap_bytes: u64,
}

/// One request/response exchange. Header lookups are case-insensitive.
#[derive(Clone, Debug, Default)]
pub struct HttpTx {
    pub id: u64,
    // ---- request
    /// `http.request_line`: the request line without its line ending.
    pub request_line: Vec<u8>,
    pub method: Vec<u8>,
    /// `http.uri.raw`.
    pub uri_raw: Vec<u8>,
    pub uri: ParsedUri,
    /// `http.uri`.
    pub uri_normalized: Vec<u8>,
    /// `http.protocol` of the request (empty for HTTP/0.9).
    pub request_protocol: Vec<u8>,
    pub is_http09: bool,
    /// Request headers after folding and merging, in first-seen order.
    pub request_headers: Vec<Header>,
    /// `http.header.raw` (request): header lines as received, up to and including the
    /// empty line.
    pub request_headers_raw: Vec<u8>,
    /// `http.host.raw`: from an absolute URI, else the Host header.
    pub host_raw: Option<Vec<u8>>,
    /// `http.host`: lowercase, port removed.
    pub host: Option<Vec<u8>>,
    pub request_content_length: Option<u64>,
    pub request_chunked: bool,
    /// `http.request_body` (`http.client_body`): dechunked, up to `request_body_limit`.
    pub request_body: Vec<u8>,
    /// Body bytes seen in total (also past the limit), dechunked but before content decoding.
    pub request_body_len: u64,
    pub request_body_truncated: bool,
    pub request_progress: Progress,
    /// Created for a response whose request was never seen.
    pub request_missing: bool,
    // ---- response
    /// `http.response_line`.
    pub response_line: Vec<u8>,
    pub response_protocol: Vec<u8>,
    /// `http.stat_code` as written.
    pub status: Vec<u8>,
    /// Parsed status code when it is 100..=999 without junk.
    pub status_code: Option<u16>,
    /// `http.stat_msg`.
    pub status_msg: Vec<u8>,
    pub response_headers: Vec<Header>,
    pub response_headers_raw: Vec<u8>,
    pub response_content_length: Option<u64>,
    pub response_chunked: bool,
    /// Content codings announced, in header order (outermost last).
    pub response_encodings: Vec<Codec>,
    /// `http.response_body` / `file_data`: dechunked and decoded, up to the limit.
    pub response_body: Vec<u8>,
    /// Body bytes seen in total, dechunked but before content decoding (eve `length`).
    pub response_body_len: u64,
    pub response_body_truncated: bool,
    pub response_progress: Progress,
    pub seen_100_continue: bool,
    /// Part of a body was lost in a gap (decoding stopped there).
    pub body_gap: bool,
    /// The request body as a file (POST and PUT bodies, when files are tracked).
    pub request_file: Option<Box<HttpFile>>,
    /// The response body as a file (when files are tracked).
    pub response_file: Option<Box<HttpFile>>,
    /// A body of this direction already had its chance to become a file (it is named
    /// once, on its first decoded byte).
    file_considered: [bool; 2],
}

fn header_value<'a>(headers: &'a [Header], name: &str) -> Option<&'a [u8]> {
    find(headers, name).map(|h| h.value.as_slice())
}

impl HttpTx {
    /// Heap the transaction holds besides its bodies (lines, URIs, headers), at allocated
    /// capacity: charged to `flow.memcap` with the flow's app-layer state.
    pub fn heap_bytes_without_bodies(&self) -> u64 {
        let headers = |hs: &Vec<Header>| {
            hs.capacity() * std::mem::size_of::<Header>()
                + hs.iter().map(|h| h.name.capacity() + h.value.capacity()).sum::<usize>()
        };
        let opt = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, Vec::capacity);
        (self.request_line.capacity()
            + self.method.capacity()
            + self.uri_raw.capacity()
            + self.uri_normalized.capacity()
            + self.request_protocol.capacity()
            + headers(&self.request_headers)
            + self.request_headers_raw.capacity()
            + opt(&self.host_raw)
            + opt(&self.host)
            + self.response_line.capacity()
            + self.response_protocol.capacity()
            + self.status.capacity()
            + self.status_msg.capacity()
            + headers(&self.response_headers)
            + self.response_headers_raw.capacity()
            + self.response_encodings.capacity() * std::mem::size_of::<Codec>()
            + self.files().map(|(_, f)| std::mem::size_of::<HttpFile>() + f.name.capacity()).sum::<usize>())
            as u64
    }

    /// The bodies tracked as files, request first, with their direction.
    pub fn files(&self) -> impl Iterator<Item = (Direction, &HttpFile)> {
        [(Direction::ToServer, &self.request_file), (Direction::ToClient, &self.response_file)]
            .into_iter()
            .filter_map(|(dir, f)| f.as_deref().map(|f| (dir, f)))
    }

    fn file_mut(&mut self, dir: Direction) -> &mut Option<Box<HttpFile>> {
        match dir {
            Direction::ToServer => &mut self.request_file,
            Direction::ToClient => &mut self.response_file,
        }
    }

    /// What a body of `dir` is named as a file, or `None` when it is no file: responses
    /// take Content-Disposition's `filename=`, else the normalised URI path; requests are
    /// files when they are a POST or PUT (not multipart) and take the path.
    fn file_name(&self, dir: Direction) -> Option<Vec<u8>> {
        if dir == Direction::ToServer {
            let post = self.method == b"POST";
            if !(post || self.method == b"PUT") {
                return None;
            }
            let multipart = self
                .content_type(Direction::ToServer)
                .is_some_and(|ct| ct.len() >= 19 && ct[..19].eq_ignore_ascii_case(b"multipart/form-data"));
            if post && multipart {
                return None;
            }
        } else if let Some(name) = self
            .response_header("content-disposition")
            .filter(|v| !v.is_empty())
            .and_then(file::content_disposition_filename)
        {
            return Some(name.to_vec());
        }
        let path = uri::normalized_path(&self.uri);
        (!path.is_empty()).then_some(path)
    }

    /// Opens the file of `dir`'s body on its first decoded byte, if it is one.
    fn open_file(&mut self, dir: Direction, cfg: &HttpConfig) {
        let considered = &mut self.file_considered[dir.index()];
        if !cfg.files.enabled || *considered {
            return;
        }
        *considered = true;
        let Some(name) = self.file_name(dir) else { return };
        let limit = match dir {
            Direction::ToServer => cfg.request_body_limit,
            Direction::ToClient => cfg.response_body_limit,
        };
        let mut f = HttpFile::open(&name, limit, &cfg.files);
        if dir == Direction::ToClient {
            f.range = self.response_header("content-range").and_then(file::content_range);
        }
        *self.file_mut(dir) = Some(Box::new(f));
    }

    /// Ends the file of `dir`'s body (see [`HttpFile::close`]).
    fn close_file(&mut self, dir: Direction, complete: bool) {
        if let Some(f) = self.file_mut(dir).as_deref_mut() {
            f.close(complete);
        }
    }

    pub fn request_header(&self, name: &str) -> Option<&[u8]> {
        header_value(&self.request_headers, name)
    }
    pub fn response_header(&self, name: &str) -> Option<&[u8]> {
        header_value(&self.response_headers, name)
    }
    /// `http.user_agent`.
    pub fn user_agent(&self) -> Option<&[u8]> {
        self.request_header("user-agent")
    }
    /// `http.cookie` (request Cookie; Set-Cookie is `response_header("set-cookie")`).
    pub fn cookie(&self) -> Option<&[u8]> {
        self.request_header("cookie")
    }
    pub fn referer(&self) -> Option<&[u8]> {
        self.request_header("referer")
    }
    pub fn accept(&self) -> Option<&[u8]> {
        self.request_header("accept")
    }
    pub fn accept_encoding(&self) -> Option<&[u8]> {
        self.request_header("accept-encoding")
    }
    pub fn accept_language(&self) -> Option<&[u8]> {
        self.request_header("accept-language")
    }
    /// `http.content_type` / `http.content_len` exist per direction.
    pub fn content_type(&self, dir: Direction) -> Option<&[u8]> {
        self.headers(dir).iter().find(|h| name_matches(&h.name, "content-type")).map(|h| h.value.as_slice())
    }
    pub fn content_len(&self, dir: Direction) -> Option<&[u8]> {
        header_value(self.headers(dir), "content-length")
    }
    pub fn connection(&self, dir: Direction) -> Option<&[u8]> {
        header_value(self.headers(dir), "connection")
    }
    pub fn location(&self) -> Option<&[u8]> {
        self.response_header("location")
    }
    pub fn server(&self) -> Option<&[u8]> {
        self.response_header("server")
    }

    pub fn headers(&self, dir: Direction) -> &[Header] {
        match dir {
            Direction::ToServer => &self.request_headers,
            Direction::ToClient => &self.response_headers,
        }
    }

    /// Length of every header of `dir` as `Name: value\r\n`: the buffers below are sized
    /// once instead of growing (and copying) several times per inspected transaction.
    fn header_lines_len(&self, dir: Direction) -> usize {
        self.headers(dir).iter().map(|h| h.name.len() + h.value.len() + 4).sum()
    }

    /// `http.header`: `Name: value\r\n` per header, without Cookie (requests) or
    /// Set-Cookie (responses), which have their own buffers.
    pub fn header_buffer(&self, dir: Direction, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.header_lines_len(dir));
        let skip = match dir {
            Direction::ToServer => "cookie",
            Direction::ToClient => "set-cookie",
        };
        for h in self.headers(dir).iter().filter(|h| !name_matches(&h.name, skip)) {
            out.extend_from_slice(&h.name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(&h.value);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// `http.header_names`: `\r\n` + each name followed by `\r\n`, then a final `\r\n`.
    pub fn header_names_buffer(&self, dir: Direction, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(4 + self.headers(dir).iter().map(|h| h.name.len() + 2).sum::<usize>());
        out.extend_from_slice(b"\r\n");
        for h in self.headers(dir) {
            out.extend_from_slice(&h.name);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// `http.start`: the request/response line, `\r\n`, every header as `Name: value\r\n`,
    /// and the closing `\r\n`.
    pub fn start_buffer(&self, dir: Direction, out: &mut Vec<u8>) {
        out.clear();
        let line = match dir {
            Direction::ToServer => &self.request_line,
            Direction::ToClient => &self.response_line,
        };
        out.reserve(line.len() + 4 + self.header_lines_len(dir));
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
        for h in self.headers(dir) {
            out.extend_from_slice(&h.name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(&h.value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Both the request and the response are complete.
    pub fn is_complete(&self) -> bool {
        self.request_progress == Progress::Complete && self.response_progress == Progress::Complete
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyState {
    Length { left: u64 },
    ChunkLen,
    ChunkData { left: u64 },
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Line,
    Headers,
    Body(BodyState),
    /// Request side after CONNECT, until the response says whether a tunnel follows.
    ConnectWait,
    /// Not HTTP any more (CONNECT or Upgrade): ignore.
    Tunnel,
    /// Parsing gave up on this direction (gap in headers, field too long).
    Lost,
}

/// Parsing state of one direction.
struct Half {
    side: Side,
    buf: Vec<u8>,
    pos: usize,
    state: State,
    block: Option<HeaderBlock>,
    tx: Option<u64>,
    closed: bool,
    decoder: Option<BodyDecoder>,
    /// Response side: the last completed response; non-HTTP lines that follow it are
    /// appended to its body (libhtp's finalize step), not made into a new transaction.
    last_complete: Option<u64>,
    /// Response side: a response completed and its next line was not read yet. libhtp's
    /// finalize step reads that line; a bare line ending there is body of the completed
    /// response (counted in its length and file), not an ignorable line. libhtp looks
    /// only at the bytes of the delivery that ended the body; picket at the next line
    /// wherever it arrives, so that stream cuts never change the outcome.
    finalize_pending: bool,
    /// How far the search for the next line ending got in `buf`.
    eol: EolMemo,
    /// Bytes dropped from the front of `buf` so far (`consumed + pos` is a stream offset).
    consumed: u64,
    /// Chunk-size line starting at this stream offset: how many leading blank bytes it is
    /// known to have.
    chunk_blank_run: (u64, usize),
    /// Request side: a request line without protocol waits for what follows it (HTTP/0.9
    /// or headers, see `request_line`).
    awaiting_09: bool,
    /// Request side: the response has started, so a waiting line without protocol is
    /// HTTP/0.9 now.
    settle_09: bool,
    /// The bytes buffered when the direction became a tunnel (at most one buffer's worth),
    /// for a protocol that takes over (HTTP/2 after `Upgrade: h2c`).
    tunnel_rest: Vec<u8>,
}

impl Half {
    fn new(side: Side) -> Half {
        Half {
            side,
            buf: Vec::new(),
            pos: 0,
            state: State::Line,
            block: None,
            tx: None,
            closed: false,
            decoder: None,
            last_complete: None,
            finalize_pending: false,
            eol: EolMemo::default(),
            consumed: 0,
            chunk_blank_run: (0, 0),
            awaiting_09: false,
            settle_09: false,
            tunnel_rest: Vec::new(),
        }
    }

    /// Drops everything buffered (the direction is no longer parsed).
    fn discard(&mut self) {
        self.consumed += self.buf.len() as u64;
        self.buf = Vec::new();
        self.pos = 0;
        self.eol.reset();
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.eol.shift(self.pos);
            self.consumed += self.pos as u64;
            self.pos = 0;
        }
        // Nothing pending: give the buffer back. A flow mostly waits between messages, and
        // an idle HTTP flow holding a header block's worth of capacity per direction was most
        // of its memory (charged to flow.memcap). Small buffers stay for the next line.
        if self.buf.is_empty() && self.buf.capacity() > IDLE_BUFFER_KEEP {
            self.buf = Vec::new();
        }
    }
}

/// Capacity a direction's line buffer keeps when it runs empty; larger ones are freed.
const IDLE_BUFFER_KEEP: usize = 256;

/// Whitespace allowed after a request line without protocol for it to still be HTTP/0.9
/// (libhtp's `HTTP09_MAX_JUNK_LEN`).
const HTTP09_MAX_JUNK_LEN: usize = 16;

/// HTTP/1.x parser for one flow.
pub struct HttpParser {
    cfg: HttpConfig,
    txs: VecDeque<HttpTx>,
    next_tx_id: u64,
    /// Id the next request line will use.
    next_request_id: u64,
    /// Id whose response comes next.
    next_response_id: u64,
    halves: [Half; 2],
    events: Vec<HttpEvent>,
    line_anomalies: Vec<HttpAnomaly>,
    counters: HttpCounters,
    body_mem: BodyMemory,
}

/// The body bytes a parser holds, for the worker's `app-layer.protocols.http.memcap`: the
/// caller grants `room` before feeding the parser and charges the change of `held`
/// afterwards. A body that would outgrow the room stores what fits; the rest is not
/// buffered (counted in `refused_bytes`), and inspection goes on with what is held.
#[derive(Clone, Copy, Debug)]
pub struct BodyMemory {
    /// Bytes of body storage the parser may still allocate (`u64::MAX`: no cap).
    pub room: u64,
    /// Allocated capacity of the bodies of the live transactions.
    pub held: u64,
    /// Appends cut short by `room` (Suricata's `http.memcap`).
    pub refusals: u64,
    /// Bytes of the appends `room` cut short (the body's later bytes are not stored
    /// either: a cut body stays a prefix).
    pub refused_bytes: u64,
}

impl Default for BodyMemory {
    fn default() -> Self {
        BodyMemory { room: u64::MAX, held: 0, refusals: 0, refused_bytes: 0 }
    }
}

impl BodyMemory {
    fn release(&mut self, tx: &HttpTx) {
        self.held -= (tx.request_body.capacity() + tx.response_body.capacity()) as u64;
    }
}

fn tx_mut(txs: &mut VecDeque<HttpTx>, id: Option<u64>) -> Option<&mut HttpTx> {
    let id = id?;
    let first = txs.front()?.id;
    txs.get_mut(id.checked_sub(first)? as usize)
}

/// Most body storage reserved on a Content-Length before the bytes arrive.
const FIRST_RESERVE_MAX: usize = 1 << 20;

/// Appends `data` to a stored body, respecting its limit and the memory room. The body's
/// allocation grows by doubling, but never past the limit nor the room: what it allocates
/// is charged to `mem` at its real capacity. `expected` is how long the whole body will be
/// when its framing says so (Content-Length, no content coding): the first allocation takes
/// that much (up to the limit) at once instead of doubling its way there, which copied
/// every stored byte about once more (1.7% of the reference run). Returns whether the body
/// takes more bytes (`false` once it is cut), so that a decoder can stop producing bytes
/// nobody stores.
fn store_body(
    body: &mut Vec<u8>,
    truncated: &mut bool,
    limit: usize,
    data: &[u8],
    mem: &mut BodyMemory,
    expected: Option<usize>,
) -> bool {
    // A body cut once (limit or memcap) stays a prefix: appending after a hole would let
    // patterns match across it.
    if *truncated {
        return false;
    }
    let within_limit = data.len().min(limit.saturating_sub(body.len()));
    let mut take = within_limit;
    let (len, cap) = (body.len(), body.capacity());
    if len + take > cap {
        // A claimed length is the sender's word: with an unlimited body limit it reserves at
        // most FIRST_RESERVE_MAX ahead of the bytes (the memcap room bounds it as well).
        let first = if cap == 0 { expected.unwrap_or(0).min(limit).min(FIRST_RESERVE_MAX) } else { 0 };
        let wanted = (cap * 2).max(64).max(first).min(limit).max(len + take);
        let room = usize::try_from(mem.room).unwrap_or(usize::MAX);
        let new_cap = if wanted - cap <= room { wanted } else { (len + take).min(cap + room) };
        take = take.min(new_cap - len);
        body.reserve_exact(new_cap - len);
        let grown = (body.capacity() - cap) as u64;
        mem.held += grown;
        mem.room = mem.room.saturating_sub(grown);
    }
    if take < within_limit {
        mem.refusals += 1;
        mem.refused_bytes += (within_limit - take) as u64;
    }
    if data.len() > take {
        *truncated = true;
    }
    body.extend_from_slice(&data[..take]);
    !*truncated
}

/// Content codings from a Content-Encoding value, in header order, as libhtp reads them:
/// exact gzip/x-gzip/deflate/x-deflate (NULs ignored) first, otherwise a list split on
/// commas and spaces where an entry containing "gzip" or "deflate" counts as that coding.
fn content_codings(value: &[u8], layer_limit: u32, anomalies: &mut Vec<HttpAnomaly>) -> Vec<Codec> {
    let compact: Vec<u8> = value.iter().copied().filter(|&b| b != 0).collect();
    let exact = |name: &str| compact.eq_ignore_ascii_case(name.as_bytes());
    if exact("gzip") || exact("x-gzip") {
        return vec![Codec::Gzip];
    }
    if exact("deflate") || exact("x-deflate") {
        return vec![Codec::Deflate];
    }
    let mut codecs = Vec::new();
    let mut layers = 0u32;
    for entry in value.split(|&b| b == b',' || b == b' ').filter(|e| !e.is_empty()) {
        layers += 1;
        if layer_limit != 0 && layers > layer_limit {
            anomalies.push(HttpAnomaly::TooManyEncodingLayers);
            break;
        }
        let lower = entry.to_ascii_lowercase();
        let contains = |needle: &[u8]| lower.windows(needle.len()).any(|w| w == needle);
        if contains(b"gzip") {
            codecs.push(Codec::Gzip);
        } else if contains(b"deflate") {
            codecs.push(Codec::Deflate);
        } else if !(lower == b"identity" || lower == b"none" || lower == b"inflate") {
            anomalies.push(HttpAnomaly::UnknownContentEncoding);
        }
    }
    codecs
}

/// Chunk size line as libhtp reads it. `Ok(None)`: nothing usable, skip the line.
fn parse_chunk_len(line: &[u8]) -> Result<(Option<u64>, bool), ()> {
    let is_ctl = |b: u8| matches!(b, b'\r' | b'\n' | b' ' | b'\t' | 0x0b | 0x0c);
    let start = line.iter().position(|&b| !is_ctl(b)).unwrap_or(line.len());
    let rest = &line[start..];
    let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let trailing = &rest[digits..];
    if digits == 0 {
        return if trailing.is_empty() { Ok((None, false)) } else { Err(()) };
    }
    let mut len: u64 = 0;
    for &d in &rest[..digits] {
        let v = (d as char).to_digit(16).unwrap_or(0) as u64;
        len = match len.checked_mul(16).and_then(|l| l.checked_add(v)) {
            Some(l) => l,
            None => return Err(()),
        };
    }
    if len > i32::MAX as u64 {
        return Ok((None, false));
    }
    Ok((Some(len), trailing.contains(&b';')))
}

/// Length of an unterminated line for the `field_limit` check: a CR at its end may start
/// the line ending, which a complete line does not count either.
fn unterminated_len(pending: &[u8]) -> usize {
    pending.len() - usize::from(pending.last() == Some(&b'\r'))
}

/// Whether a response line starts like HTTP (browsers: optional whitespace, then "http").
fn looks_like_http(line: &[u8]) -> bool {
    let start = line.iter().position(|&b| !(headers::is_space(b) || b == 0)).unwrap_or(line.len());
    line[start..].len() >= 4 && line[start..start + 4].eq_ignore_ascii_case(b"http")
}

impl HttpParser {
    pub fn new(cfg: HttpConfig) -> Self {
        HttpParser {
            cfg,
            txs: VecDeque::new(),
            next_tx_id: 0,
            next_request_id: 0,
            next_response_id: 0,
            halves: [Half::new(Side::Request), Half::new(Side::Response)],
            events: Vec::new(),
            line_anomalies: Vec::new(),
            counters: HttpCounters::default(),
            body_mem: BodyMemory::default(),
        }
    }

    /// Body memory: what is held and refused, and the room left.
    pub fn body_memory(&self) -> &BodyMemory {
        &self.body_mem
    }

    /// Heap of the parser besides the bodies (its own struct, the transaction queue and
    /// the transactions' lines and headers, the line buffers), at allocated capacity.
    pub fn heap_bytes_without_bodies(&self) -> u64 {
        let own = std::mem::size_of::<HttpParser>() + self.txs.capacity() * std::mem::size_of::<HttpTx>();
        let halves: usize = self.halves.iter().map(|h| h.buf.capacity()).sum();
        let events = self.events.capacity() * std::mem::size_of::<HttpEvent>();
        (own + halves + events) as u64 + self.txs.iter().map(HttpTx::heap_bytes_without_bodies).sum::<u64>()
    }

    /// Sets how many more bytes of body storage the parser may allocate.
    pub fn set_body_room(&mut self, room: u64) {
        self.body_mem.room = room;
    }

    pub fn counters(&self) -> &HttpCounters {
        &self.counters
    }

    pub fn tx(&self, id: u64) -> Option<&HttpTx> {
        let first = self.txs.front()?.id;
        self.txs.get(id.checked_sub(first)? as usize)
    }

    /// Transactions started so far, kept or not (the next transaction's id).
    pub fn tx_count(&self) -> u64 {
        self.next_tx_id
    }

    pub fn txs(&self) -> impl Iterator<Item = &HttpTx> {
        self.txs.iter()
    }

    /// Drops finished transactions from the front (the oldest first, stopping at the
    /// first unfinished one, so ids stay contiguous). Returns how many were dropped.
    pub fn prune_completed(&mut self) -> usize {
        let mut n = 0;
        while self.txs.front().is_some_and(HttpTx::is_complete) {
            if let Some(tx) = self.txs.pop_front() {
                self.body_mem.release(&tx);
            }
            n += 1;
        }
        crate::applayer::free_if_drained(&mut self.txs);
        n
    }

    /// Feeds stream bytes of `dir` (to-server = requests).
    pub fn on_data(&mut self, dir: Direction, data: &[u8], out: &mut impl FnMut(HttpEvent)) {
        if data.is_empty() {
            return;
        }
        if dir == Direction::ToClient && self.halves[0].awaiting_09 {
            // The server answers: the request line without protocol was all of the request.
            self.halves[0].settle_09 = true;
            self.run(Direction::ToServer);
        }
        let half = &mut self.halves[dir.index()];
        match half.state {
            State::Tunnel | State::Lost => {}
            _ => {
                let rest = self.body_without_buffering(dir, data);
                self.halves[dir.index()].buf.extend_from_slice(rest);
                self.run(dir);
            }
        }
        self.flush_events(out);
    }

    /// `len` bytes of `dir` were lost. Skipped inside bodies of known extent or bodies
    /// running until close; anywhere else the direction stops being parsed.
    pub fn on_gap(&mut self, dir: Direction, len: u64, out: &mut impl FnMut(HttpEvent)) {
        self.counters.gap_bytes += len;
        let idx = dir.index();
        let state = self.halves[idx].state;
        let tx_id = self.halves[idx].tx;
        // `left`: what the body still announced (0 for a body running until close, whose
        // file takes the whole gap). A gap is body data to libhtp: it opens the body's
        // file when it comes first.
        let cfg = self.cfg;
        let mut skip_body = |left: u64| -> u64 {
            if let Some(tx) = tx_mut(&mut self.txs, tx_id) {
                tx.body_gap = true;
                tx.open_file(dir, &cfg);
                if let Some(f) = tx.file_mut(dir).as_deref_mut() {
                    f.gap(if left == 0 { len } else { len.min(left) });
                }
            }
            left.saturating_sub(len)
        };
        let half_empty = self.halves[idx].pending().is_empty();
        let next = match state {
            State::Body(BodyState::Length { left }) if half_empty => {
                Some(State::Body(BodyState::Length { left: skip_body(left) }))
            }
            State::Body(BodyState::ChunkData { left }) if half_empty => {
                Some(State::Body(BodyState::ChunkData { left: skip_body(left) }))
            }
            State::Body(BodyState::UntilClose) => {
                skip_body(0);
                Some(state)
            }
            State::Tunnel | State::Lost => Some(state),
            _ => None,
        };
        let half = &mut self.halves[idx];
        match next {
            Some(next) => {
                // Decoding cannot continue across missing bytes.
                half.decoder = None;
                half.state = next;
                if half.state != state {
                    self.run(dir);
                }
            }
            None => {
                half.state = State::Lost;
                half.discard();
                self.anomaly(tx_id, HttpAnomaly::GapInHeaders);
            }
        }
        self.flush_events(out);
    }

    /// The flow ended: finish whatever can be finished (bodies until close, incomplete
    /// lines and headers), so detection gets a last look.
    pub fn on_close(&mut self, out: &mut impl FnMut(HttpEvent)) {
        for dir in [Direction::ToServer, Direction::ToClient] {
            self.halves[dir.index()].closed = true;
            if !matches!(self.halves[dir.index()].state, State::Tunnel | State::Lost) {
                self.run(dir);
            }
        }
        // Whatever is still open ends here.
        let ids: Vec<u64> = self.txs.iter().map(|t| t.id).collect();
        for id in ids {
            let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
                continue;
            };
            let (req, resp) = (tx.request_progress, tx.response_progress);
            if req != Progress::NotStarted && req != Progress::Complete {
                tx.request_progress = Progress::Complete;
                tx.close_file(Direction::ToServer, false);
                self.events.push(HttpEvent::RequestComplete { tx: id });
                self.anomaly(Some(id), HttpAnomaly::Truncated);
            }
            let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
                continue;
            };
            if resp != Progress::NotStarted && resp != Progress::Complete {
                tx.response_progress = Progress::Complete;
                self.events.push(HttpEvent::ResponseComplete { tx: id });
                // A body running until close ends complete here.
                let until_close =
                    resp == Progress::Body && matches!(self.halves[1].state, State::Body(BodyState::UntilClose));
                tx.close_file(Direction::ToClient, until_close);
                if !until_close {
                    self.anomaly(Some(id), HttpAnomaly::Truncated);
                }
            }
        }
        self.flush_events(out);
    }

    fn flush_events(&mut self, out: &mut impl FnMut(HttpEvent)) {
        for e in self.events.drain(..) {
            out(e);
        }
    }

    fn anomaly(&mut self, tx: Option<u64>, anomaly: HttpAnomaly) {
        self.counters.anomalies += 1;
        self.events.push(HttpEvent::Anomaly { tx, anomaly });
    }

    fn take_line_anomalies(&mut self, tx: Option<u64>) {
        let list = std::mem::take(&mut self.line_anomalies);
        for &a in &list {
            self.anomaly(tx, a);
        }
        self.line_anomalies = list;
        self.line_anomalies.clear();
    }

    fn new_tx(&mut self) -> u64 {
        if self.txs.len() >= self.cfg.max_tx.max(1) {
            if let Some(tx) = self.txs.pop_front() {
                self.body_mem.release(&tx);
            }
            self.counters.transactions_dropped += 1;
            self.anomaly(None, HttpAnomaly::TransactionDropped);
        }
        let id = self.next_tx_id;
        self.next_tx_id += 1;
        self.counters.transactions += 1;
        // One transaction at a time is the common case: grow the queue one slot at a time
        // instead of VecDeque's first allocation of four (a transaction is ~650 bytes).
        if self.txs.len() == self.txs.capacity() {
            self.txs.reserve_exact(1);
        }
        self.txs.push_back(HttpTx { id, ..HttpTx::default() });
        id
    }

    /// Runs the direction's state machine over its buffered bytes.
    fn run(&mut self, dir: Direction) {
        let idx = dir.index();
        loop {
            let progressed = match self.halves[idx].state {
                State::Line if idx == 0 => self.request_line(),
                State::Line => self.response_line(),
                State::Headers => self.header_lines(dir),
                State::Body(body) => self.body(dir, body),
                State::ConnectWait | State::Tunnel | State::Lost => false,
            };
            if !progressed {
                break;
            }
        }
        let half = &mut self.halves[idx];
        if matches!(half.state, State::Tunnel | State::Lost) {
            if half.state == State::Tunnel && half.tunnel_rest.is_empty() {
                half.tunnel_rest = half.pending().to_vec();
            }
            half.discard();
        } else {
            half.compact();
        }
    }

    /// A line or header block outgrew `field_limit`: stop parsing this direction.
    fn field_too_long(&mut self, dir: Direction) {
        let half = &mut self.halves[dir.index()];
        half.state = State::Lost;
        let tx = half.tx;
        self.counters.fields_too_long += 1;
        self.anomaly(tx, HttpAnomaly::FieldTooLong);
    }

    // ------------------------------------------------------------------ requests

    fn request_line(&mut self) -> bool {
        let half = &mut self.halves[0];
        let Some(line) = next_line(&half.buf, half.pos, Side::Request, half.closed, &mut half.eol).or_else(|| {
            // At close, an unterminated last line still counts.
            (half.closed && half.pos < half.buf.len()).then_some(Line {
                start: half.pos,
                end: half.buf.len(),
                next: half.buf.len(),
            })
        }) else {
            if unterminated_len(half.pending()) > self.cfg.field_limit {
                self.field_too_long(Direction::ToServer);
            }
            return false;
        };
        // A line without protocol is HTTP/0.9 (no headers) when at most a little whitespace
        // follows it; with more data it is a request with headers and a missing protocol
        // (libhtp). libhtp looks only at the rest of the delivery holding the line; picket
        // waits for the next request bytes, the response or the close, so that where the
        // stream is cut never changes the outcome.
        let raw = &half.buf[line.start..line.end];
        let mut http09 = false;
        if !raw.iter().all(|&b| headers::is_space(b)) && split_request_line(raw).2.is_empty() {
            let rest = &half.buf[line.next..];
            let spaces = rest.iter().take_while(|&&b| headers::is_space(b)).count();
            let more_follows = spaces < rest.len() || spaces > HTTP09_MAX_JUNK_LEN;
            if !more_follows && !half.closed && !half.settle_09 {
                half.awaiting_09 = true;
                return false;
            }
            http09 = !more_follows;
        }
        half.awaiting_09 = false;
        half.settle_09 = false;
        half.pos = line.next;
        let content = half.buf[line.start..line.end].to_vec();
        if content.iter().all(|&b| headers::is_space(b)) {
            return true; // empty lines between requests are ignored
        }
        if line.end - line.start > self.cfg.field_limit {
            self.field_too_long(Direction::ToServer);
            return false;
        }
        let id = if self.tx(self.next_request_id).is_some_and(|t| t.request_progress == Progress::NotStarted) {
            self.next_request_id
        } else {
            let id = self.new_tx();
            self.next_request_id = id;
            id
        };
        self.halves[0].tx = Some(id);
        let (method, target, protocol) = {
            let (m, t, p) = split_request_line(&content);
            (m.to_vec(), t.to_vec(), p.to_vec())
        };
        let is_connect = method.eq_ignore_ascii_case(b"CONNECT");
        let parsed = uri::parse_request_target(&target, is_connect);
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
            return false;
        };
        tx.method = method;
        tx.uri_raw = target;
        tx.uri_normalized = uri::normalize_uri(&parsed);
        if let Some(host) = &parsed.host {
            tx.host_raw = Some(host.clone());
            tx.host = Some(uri::normalize_host(host));
        }
        tx.uri = parsed;
        let no_protocol = protocol.is_empty();
        tx.request_protocol = protocol;
        tx.request_line = content;
        tx.request_progress = Progress::Line;
        self.events.push(HttpEvent::RequestLine { tx: id });
        if http09 {
            // HTTP/0.9: no headers, no body.
            tx.is_http09 = true;
            tx.request_progress = Progress::Complete;
            self.events.push(HttpEvent::RequestHeaders { tx: id });
            self.events.push(HttpEvent::RequestComplete { tx: id });
            self.anomaly(Some(id), HttpAnomaly::Http09Request);
            self.next_request_id = id + 1;
            return true;
        }
        tx.request_progress = Progress::Headers;
        self.halves[0].state = State::Headers;
        self.halves[0].block = Some(HeaderBlock::new(Side::Request, self.cfg.max_headers));
        if no_protocol {
            self.anomaly(Some(id), HttpAnomaly::RequestLineMissingProtocol);
        }
        true
    }

    fn request_headers_done(&mut self, id: u64) {
        let cfg = self.cfg;
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
            return;
        };
        if tx.host_raw.is_none() {
            if let Some(host) = header_value(&tx.request_headers, "host") {
                tx.host_raw = Some(host.to_vec());
                tx.host = Some(uri::normalize_host(host));
            }
        }
        let te = header_value(&tx.request_headers, "transfer-encoding").map(<[u8]>::to_vec);
        let cl = header_value(&tx.request_headers, "content-length").map(<[u8]>::to_vec);
        let ce = header_value(&tx.request_headers, "content-encoding").map(<[u8]>::to_vec);
        let is_connect = tx.method.eq_ignore_ascii_case(b"CONNECT");
        self.events.push(HttpEvent::RequestHeaders { tx: id });
        let mut anomalies = Vec::new();
        let state = if te.as_deref().is_some_and(contains_chunked) {
            tx.request_chunked = true;
            if cl.is_some() {
                anomalies.push(HttpAnomaly::ChunkedWithContentLength);
            }
            Some(BodyState::ChunkLen)
        } else if let Some(cl) = cl {
            match parse_content_length(&cl) {
                Some(len) => {
                    tx.request_content_length = Some(len);
                    (len > 0).then_some(BodyState::Length { left: len })
                }
                None => {
                    anomalies.push(HttpAnomaly::InvalidContentLength);
                    None
                }
            }
        } else {
            None
        };
        let half = &mut self.halves[0];
        half.decoder = None;
        if let (Some(_), Some(ce), true) = (state, &ce, cfg.decompress_request) {
            let codecs = content_codings(ce, cfg.decompress_layer_limit, &mut anomalies);
            if !codecs.is_empty() {
                half.decoder = Some(BodyDecoder::new(&codecs, decompress_limits(&cfg)));
            }
        }
        for a in anomalies {
            self.anomaly(Some(id), a);
        }
        match state {
            Some(body) => {
                if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
                    tx.request_progress = Progress::Body;
                }
                self.halves[0].state = State::Body(body);
            }
            None => self.request_complete(id, is_connect),
        }
    }

    fn request_complete(&mut self, id: u64, is_connect: bool) {
        if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
            tx.request_progress = Progress::Complete;
            tx.close_file(Direction::ToServer, true);
        }
        self.events.push(HttpEvent::RequestComplete { tx: id });
        self.next_request_id = id + 1;
        let half = &mut self.halves[0];
        half.decoder = None;
        half.state = if is_connect { State::ConnectWait } else { State::Line };
    }

    // ------------------------------------------------------------------ responses

    /// The transaction the next response belongs to, created if its request is missing.
    fn response_tx(&mut self) -> u64 {
        if let Some(id) = self.halves[1].tx {
            return id;
        }
        let id = match self.tx(self.next_response_id) {
            Some(tx) if tx.request_progress != Progress::NotStarted => self.next_response_id,
            _ => {
                let id = self.new_tx();
                if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
                    tx.request_missing = true;
                    tx.request_progress = Progress::Complete;
                }
                self.anomaly(Some(id), HttpAnomaly::ResponseWithoutRequest);
                self.next_request_id = self.next_request_id.max(id + 1);
                self.next_response_id = id;
                id
            }
        };
        self.halves[1].tx = Some(id);
        id
    }

    fn response_line(&mut self) -> bool {
        let half = &mut self.halves[1];
        let eof = half.closed;
        let eol = find_eol(&half.buf, half.pos, true, &mut half.eol).map(|at| at - half.pos);
        let data = half.pending();
        // libhtp's take_till_eol: CRLF, CR or LF; a trailing CR waits for the next byte.
        let line_len = match eol {
            Some(i) if data[i] == b'\r' => match data.get(i + 1) {
                Some(b'\n') => Some((i, i + 2)),
                Some(_) => Some((i, i + 1)),
                None if eof => Some((i, i + 1)),
                None => None,
            },
            Some(i) => Some((i, i + 1)),
            None if eof && !data.is_empty() => Some((data.len(), data.len())),
            None => None,
        };
        let Some((content_len, full_len)) = line_len else {
            if unterminated_len(data) > self.cfg.field_limit {
                self.field_too_long(Direction::ToClient);
            }
            return false;
        };
        // A complete line over the limit ends parsing as an incomplete one does, so the
        // outcome does not depend on where the stream was cut.
        if content_len > self.cfg.field_limit {
            self.field_too_long(Direction::ToClient);
            return false;
        }
        let line_with_eol = data[..full_len].to_vec();
        let after_len = data.len() - full_len;
        let after_first = data.get(full_len).copied();
        let finalize = std::mem::take(&mut self.halves[1].finalize_pending);
        if content_len == 0 {
            self.halves[1].pos += full_len;
            if let Some(id) = self.halves[1].last_complete.filter(|_| finalize) {
                self.append_after_body(id, &line_with_eol);
            }
            return true; // otherwise an ignorable empty line
        }
        let junk_after_previous = self.halves[1].tx.is_none() && !looks_like_http(&line_with_eol[..content_len]);
        let previous = self.halves[1].last_complete.filter(|_| junk_after_previous);
        // Before the response line: is this the response to an HTTP/0.9 request?
        let id = match previous {
            Some(id) => id,
            None => self.response_tx(),
        };
        let tx09 = previous.is_none()
            && self.tx(id).is_some_and(|t| t.is_http09 && t.response_progress == Progress::NotStarted);
        if tx09 {
            self.start_response_body(id, BodyState::UntilClose, Vec::new());
            return true;
        }
        let content = &line_with_eol[..content_len];
        if !looks_like_http(content) {
            // libhtp skips such a line when the next one starts with 'H' (likely the real
            // status line) or when it is at most two bytes; it needs two bytes of look-ahead.
            if after_len < 2 && !eof {
                return false;
            }
            self.halves[1].pos += full_len;
            if after_len > 1 && (after_first == Some(b'H') || trim_eol(&line_with_eol).len() <= 2) {
                return true;
            }
            self.anomaly(Some(id), HttpAnomaly::ResponseLineNotHttp);
            self.append_after_body(id, &line_with_eol);
            return true;
        }
        let line = content.to_vec();
        self.halves[1].pos += full_len;
        self.halves[1].last_complete = None;
        if line.len() > self.cfg.field_limit {
            self.field_too_long(Direction::ToClient);
            return false;
        }
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
            return false;
        };
        parse_status_line(tx, &line);
        let valid = tx.status_code.is_some();
        tx.response_progress = Progress::Headers;
        self.events.push(HttpEvent::ResponseLine { tx: id });
        if !valid {
            self.anomaly(Some(id), HttpAnomaly::InvalidStatusLine);
        }
        let half = &mut self.halves[1];
        half.state = State::Headers;
        half.block = Some(HeaderBlock::new(Side::Response, self.cfg.max_headers));
        true
    }

    /// A line that is not a response line becomes body of the response `id` (libhtp's
    /// finalize step, or a server answering without a status line): counted in its
    /// length, stored, and appended to its file.
    fn append_after_body(&mut self, id: u64, line: &[u8]) {
        let cfg = self.cfg;
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else { return };
        if tx.response_progress == Progress::NotStarted {
            self.events.push(HttpEvent::ResponseLine { tx: id });
        }
        if tx.response_progress != Progress::Complete {
            tx.response_progress = Progress::Body;
        }
        tx.response_body_len += line.len() as u64;
        tx.open_file(Direction::ToClient, &cfg);
        if let Some(f) = tx.response_file.as_deref_mut() {
            f.append_after_close(line);
        }
        store_body(
            &mut tx.response_body,
            &mut tx.response_body_truncated,
            cfg.response_body_limit,
            line,
            &mut self.body_mem,
            None,
        );
        self.events.push(HttpEvent::ResponseBodyData { tx: id });
    }

    fn response_headers_done(&mut self, id: u64) {
        let request_state = self.halves[0].state;
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
            return;
        };
        let te = header_value(&tx.response_headers, "transfer-encoding").map(<[u8]>::to_vec);
        let cl = header_value(&tx.response_headers, "content-length").map(<[u8]>::to_vec);
        let status = tx.status_code.unwrap_or(0);
        let is_connect = tx.method.eq_ignore_ascii_case(b"CONNECT");
        self.events.push(HttpEvent::ResponseHeaders { tx: id });

        if is_connect && request_state == State::ConnectWait && (200..300).contains(&status) {
            // Tunnel established: neither side is HTTP any more.
            self.halves[0].state = State::Tunnel;
            self.response_complete(id);
            self.halves[1].state = State::Tunnel;
            return;
        }
        if status == 101 && te.is_none() && cl.is_none() {
            if request_state != State::Lost {
                self.halves[0].state = State::Tunnel;
            }
            self.response_complete(id);
            self.halves[1].state = State::Tunnel;
            return;
        }
        let Some(tx) = tx_mut(&mut self.txs, Some(id)) else {
            return;
        };
        let mut anomalies = Vec::new();
        if status == 100 && te.is_none() && cl.as_deref().and_then(parse_content_length).unwrap_or(0) == 0 {
            // Interim response: the real one follows, for the same transaction.
            if tx.seen_100_continue {
                anomalies.push(HttpAnomaly::RepeatedContinue);
            }
            tx.seen_100_continue = true;
            tx.response_headers.clear();
            tx.response_headers_raw.clear();
            tx.response_progress = Progress::Line;
            self.halves[1].state = State::Line;
            for a in anomalies {
                self.anomaly(Some(id), a);
            }
            return;
        }
        let no_body_status = (100..200).contains(&status) || status == 204 || status == 304;
        let head = tx.method.eq_ignore_ascii_case(b"HEAD");
        let body = if head || (no_body_status && te.is_none() && cl.is_none()) {
            None
        } else {
            if no_body_status {
                anomalies.push(HttpAnomaly::UnexpectedResponseBody);
            }
            if te.as_deref().is_some_and(contains_chunked) {
                tx.response_chunked = true;
                if cl.is_some() {
                    anomalies.push(HttpAnomaly::ChunkedWithContentLength);
                }
                Some(BodyState::ChunkLen)
            } else if let Some(cl) = &cl {
                match parse_content_length_exact(cl) {
                    Some(0) => {
                        tx.response_content_length = Some(0);
                        None
                    }
                    Some(len) => {
                        tx.response_content_length = Some(len);
                        Some(BodyState::Length { left: len })
                    }
                    None => {
                        // Junk around the digits or an unusable value: read until close,
                        // as Suricata does, so no candidate length hides bytes.
                        anomalies.push(HttpAnomaly::InvalidContentLength);
                        Some(BodyState::UntilClose)
                    }
                }
            } else {
                Some(BodyState::UntilClose)
            }
        };
        let codecs = match (&body, header_value(&tx.response_headers, "content-encoding")) {
            (Some(_), Some(ce)) if self.cfg.decompress_response => {
                content_codings(ce, self.cfg.decompress_layer_limit, &mut anomalies)
            }
            _ => Vec::new(),
        };
        for a in anomalies {
            self.anomaly(Some(id), a);
        }
        match body {
            Some(body) => self.start_response_body(id, body, codecs),
            None => self.response_complete(id),
        }
    }

    fn start_response_body(&mut self, id: u64, body: BodyState, codecs: Vec<Codec>) {
        let limits = decompress_limits(&self.cfg);
        let half = &mut self.halves[1];
        half.decoder = (!codecs.is_empty()).then(|| BodyDecoder::new(&codecs, limits));
        half.state = State::Body(body);
        if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
            if tx.response_progress == Progress::NotStarted {
                self.events.push(HttpEvent::ResponseLine { tx: id });
            }
            tx.response_progress = Progress::Body;
            tx.response_encodings = codecs;
        }
    }

    fn response_complete(&mut self, id: u64) {
        if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
            tx.response_progress = Progress::Complete;
            tx.close_file(Direction::ToClient, true);
        }
        self.events.push(HttpEvent::ResponseComplete { tx: id });
        self.next_response_id = id + 1;
        let half = &mut self.halves[1];
        half.tx = None;
        half.decoder = None;
        half.state = State::Line;
        half.last_complete = Some(id);
        half.finalize_pending = true;
        // A request waiting on a CONNECT answer can go on if no tunnel was set up.
        if self.halves[0].state == State::ConnectWait && self.halves[0].tx.is_some_and(|t| t <= id) {
            self.halves[0].state = State::Line;
            self.run(Direction::ToServer);
        }
    }

    // ------------------------------------------------------------------ shared

    /// Header or trailer lines; `Headers` state and the `Trailers` body state.
    fn header_lines(&mut self, dir: Direction) -> bool {
        let idx = dir.index();
        let trailers = self.halves[idx].state == State::Body(BodyState::Trailers);
        let field_limit = self.cfg.field_limit;
        loop {
            let half = &mut self.halves[idx];
            let Some(line) = next_line(&half.buf, half.pos, half.side, half.closed, &mut half.eol) else {
                // Held to the same limit as a complete line (below), so the outcome does
                // not depend on where the stream was cut.
                // Only the line's content counts: a response line ending may need a
                // (bounded) look-ahead that a complete line would not keep.
                let block_len = half.block.as_ref().map_or(0, |b| b.raw_len);
                let cr_ends_lines = half.side == Side::Response;
                let line_len = match find_eol(&half.buf, half.pos, cr_ends_lines, &mut half.eol) {
                    Some(eol) => eol - half.pos,
                    None => unterminated_len(half.pending()),
                };
                let over = block_len + line_len > field_limit;
                let closed = half.closed;
                if over {
                    self.field_too_long(dir);
                    return false;
                }
                if closed {
                    // Stream ended inside the headers: keep what was parsed.
                    half.pos = half.buf.len();
                    return self.headers_end(dir, trailers, true);
                }
                return false;
            };
            let Some(block) = half.block.as_mut() else {
                half.block = Some(HeaderBlock::new(half.side, self.cfg.max_headers));
                continue;
            };
            let outcome = block.on_line(line, &half.buf, half.closed, &mut self.line_anomalies);
            let (raw_end, done) = match outcome {
                LineOutcome::NeedMore => return false,
                LineOutcome::Continue => (line.next, false),
                LineOutcome::End { body_start } => (body_start, true),
            };
            let raw = &half.buf[half.pos..raw_end.max(half.pos)];
            let tx_id = half.tx;
            // Trailers too: a block only ever grows up to the limit, whatever the cut.
            if block.raw_len + raw.len() > field_limit {
                self.take_line_anomalies(tx_id);
                self.field_too_long(dir);
                return false;
            }
            block.raw_len += raw.len();
            if !trailers {
                if let Some(tx) = tx_mut(&mut self.txs, tx_id) {
                    let raw_store = if idx == 0 { &mut tx.request_headers_raw } else { &mut tx.response_headers_raw };
                    raw_store.extend_from_slice(raw);
                }
            }
            let half = &mut self.halves[idx];
            half.pos = raw_end.max(half.pos);
            self.take_line_anomalies(tx_id);
            if done {
                return self.headers_end(dir, trailers, false);
            }
        }
    }

    fn headers_end(&mut self, dir: Direction, trailers: bool, truncated: bool) -> bool {
        let idx = dir.index();
        let half = &mut self.halves[idx];
        let tx_id = half.tx;
        let Some(mut block) = half.block.take() else {
            return false;
        };
        block.finish(&mut self.line_anomalies);
        self.take_line_anomalies(tx_id);
        let Some(id) = tx_id else { return false };
        if trailers {
            // Trailer fields are parsed for their extent only.
            if idx == 0 {
                let is_connect = self.tx(id).is_some_and(|t| t.method.eq_ignore_ascii_case(b"CONNECT"));
                self.request_complete(id, is_connect);
            } else {
                self.response_complete(id);
            }
            return true;
        }
        if let Some(tx) = tx_mut(&mut self.txs, Some(id)) {
            if idx == 0 {
                tx.request_headers = block.headers;
            } else {
                tx.response_headers = block.headers;
            }
        }
        if truncated {
            self.halves[idx].state = State::Line;
        }
        if idx == 0 {
            self.request_headers_done(id);
        } else {
            self.response_headers_done(id);
        }
        true
    }

    fn deliver_body(&mut self, dir: Direction, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let idx = dir.index();
        let cfg = self.cfg;
        let half = &mut self.halves[idx];
        let mem = &mut self.body_mem;
        let id = half.tx;
        let Some(tx) = tx_mut(&mut self.txs, id) else {
            return;
        };
        // The body's file opens on its first decoded byte. It is opened here; when a
        // decoder produces nothing of these bytes it is taken back below, to be opened
        // again with the next ones.
        let opening = cfg.files.enabled && !tx.file_considered[idx];
        // Not yet counted down for `data` (the caller moves the state on afterwards).
        let expected = match half.state {
            State::Body(BodyState::Length { left }) => usize::try_from(left).ok(),
            _ => None,
        };
        tx.open_file(dir, &cfg);
        let (body, total, truncated, limit, event, file) = if idx == 0 {
            let ev = HttpEvent::RequestBodyData { tx: tx.id };
            (
                &mut tx.request_body,
                &mut tx.request_body_len,
                &mut tx.request_body_truncated,
                cfg.request_body_limit,
                ev,
                &mut tx.request_file,
            )
        } else {
            let ev = HttpEvent::ResponseBodyData { tx: tx.id };
            (
                &mut tx.response_body,
                &mut tx.response_body_len,
                &mut tx.response_body_truncated,
                cfg.response_body_limit,
                ev,
                &mut tx.response_file,
            )
        };
        let file_wants = file.as_deref().is_some_and(HttpFile::wants_data);
        // Counted before content decoding, as libhtp's message length (Suricata's eve
        // `length`): decoding stops at the body limit (at the decoded byte that crosses it,
        // whatever the cut of the stream), so the decoded size says little.
        *total += data.len() as u64;
        let was_truncated = *truncated;
        let mut bomb = false;
        match half.decoder.as_mut() {
            // Past the body limit nothing reads the decoded bytes: inflating them would be
            // wasted work (the message's end is found from the encoded framing). The decoder
            // also stops inside a piece, as soon as `store_body` is full.
            Some(_) if was_truncated && !file_wants => {}
            Some(decoder) => {
                let was_bomb = decoder.bomb_detected();
                decoder.write(data, &mut |piece| {
                    let file_more = file.as_deref_mut().is_some_and(|f| f.append(piece));
                    store_body(body, truncated, limit, piece, mem, None) || file_more
                });
                bomb = !was_bomb && decoder.bomb_detected();
                if opening && file.as_deref().is_some_and(|f| f.size == 0) {
                    *file = None;
                    tx.file_considered[idx] = false;
                }
            }
            None => {
                if let Some(f) = file.as_deref_mut() {
                    f.append(data);
                }
                store_body(body, truncated, limit, data, mem, expected);
            }
        }
        if *truncated && !was_truncated {
            if idx == 0 {
                self.counters.request_body_truncated += 1;
            } else {
                self.counters.response_body_truncated += 1;
            }
        }
        self.events.push(event);
        if bomb {
            self.counters.decompression_bombs += 1;
            self.anomaly(id, HttpAnomaly::DecompressionBomb);
        }
    }

    fn body_done(&mut self, dir: Direction) {
        let idx = dir.index();
        let Some(id) = self.halves[idx].tx else {
            return;
        };
        if idx == 0 {
            let is_connect = self.tx(id).is_some_and(|t| t.method.eq_ignore_ascii_case(b"CONNECT"));
            self.request_complete(id, is_connect);
        } else {
            self.response_complete(id);
        }
    }

    fn set_body_state(&mut self, dir: Direction, body: BodyState) {
        self.halves[dir.index()].state = State::Body(body);
    }

    /// Body bytes that arrive while nothing is buffered go to the body straight from `data`
    /// (the common case for a body spanning many segments), sparing a copy into the line
    /// buffer and its allocation per segment. Returns what is left for the buffered path,
    /// which then proceeds exactly as if every byte had been buffered.
    fn body_without_buffering<'d>(&mut self, dir: Direction, data: &'d [u8]) -> &'d [u8] {
        let half = &mut self.halves[dir.index()];
        if !half.buf.is_empty() {
            return data;
        }
        let State::Body(body) = half.state else { return data };
        let (n, next) = match body {
            BodyState::Length { left } | BodyState::ChunkData { left } if left > 0 => {
                let n = (data.len() as u64).min(left) as usize;
                let left = left - n as u64;
                let next = match body {
                    BodyState::Length { .. } => BodyState::Length { left },
                    _ => BodyState::ChunkData { left },
                };
                (n, next)
            }
            BodyState::UntilClose => (data.len(), BodyState::UntilClose),
            _ => return data,
        };
        // The bytes count as consumed from the buffer's front, as if buffered and parsed.
        half.consumed += n as u64;
        self.deliver_body(dir, &data[..n]);
        self.set_body_state(dir, next);
        &data[n..]
    }

    fn body(&mut self, dir: Direction, body: BodyState) -> bool {
        let idx = dir.index();
        match body {
            BodyState::Length { left } | BodyState::ChunkData { left } => {
                if left == 0 {
                    if matches!(body, BodyState::Length { .. }) {
                        self.body_done(dir);
                    } else {
                        self.set_body_state(dir, BodyState::ChunkDataEnd);
                    }
                    return true;
                }
                let half = &mut self.halves[idx];
                let n = (half.pending().len() as u64).min(left) as usize;
                if n == 0 {
                    return false;
                }
                let start = half.pos;
                half.pos += n;
                // The buffer is lent out (deliver_body never touches it), avoiding a copy.
                let buf = std::mem::take(&mut half.buf);
                self.deliver_body(dir, &buf[start..start + n]);
                self.halves[idx].buf = buf;
                let left = left - n as u64;
                let next = match body {
                    BodyState::Length { .. } => BodyState::Length { left },
                    _ => BodyState::ChunkData { left },
                };
                self.set_body_state(dir, next);
                true
            }
            BodyState::UntilClose => {
                let half = &mut self.halves[idx];
                if half.pos < half.buf.len() {
                    let start = half.pos;
                    half.pos = half.buf.len();
                    let buf = std::mem::take(&mut half.buf);
                    self.deliver_body(dir, &buf[start..]);
                    self.halves[idx].buf = buf;
                }
                if self.halves[idx].closed {
                    self.body_done(dir);
                    return false;
                }
                false
            }
            BodyState::ChunkDataEnd => {
                // Anything up to the next LF is ignored (libhtp does not check for CRLF).
                let half = &mut self.halves[idx];
                match half.pending().iter().position(|&b| b == b'\n') {
                    Some(lf) => {
                        half.pos += lf + 1;
                        self.set_body_state(dir, BodyState::ChunkLen);
                        true
                    }
                    None => {
                        half.pos = half.buf.len();
                        if half.closed {
                            self.body_done(dir);
                        }
                        false
                    }
                }
            }
            BodyState::ChunkLen => self.chunk_len(dir),
            BodyState::Trailers => self.header_lines(dir),
        }
    }

    fn chunk_len(&mut self, dir: Direction) -> bool {
        let idx = dir.index();
        let is_ctl = |b: u8| matches!(b, b'\r' | b'\n' | b' ' | b'\t' | 0x0b | 0x0c);
        let half = &mut self.halves[idx];
        let tx = half.tx;
        let lf = find_eol(&half.buf, half.pos, false, &mut half.eol).map(|at| at - half.pos);
        let pending = half.pending();
        let Some(lf) = lf else {
            // Without a full line yet, leading junk already decides: not chunked after all.
            // The blank run before it is remembered, so a long one arriving byte by byte is
            // not rescanned on every call.
            let line_start = half.consumed + half.pos as u64;
            let (run_start, run_len) = half.chunk_blank_run;
            let known = if run_start == line_start { run_len.min(pending.len()) } else { 0 };
            let first_non_ctl = pending[known..].iter().position(|&b| !is_ctl(b)).map(|i| known + i);
            let junk = first_non_ctl.is_some_and(|i| !pending[i].is_ascii_hexdigit());
            let over = unterminated_len(pending) > self.cfg.field_limit;
            half.chunk_blank_run = (line_start, first_non_ctl.unwrap_or(pending.len()));
            if junk || over {
                self.chunked_fallback(dir);
                return true;
            }
            if half.closed {
                half.pos = half.buf.len();
                self.body_done(dir);
            }
            return false;
        };
        // A complete line is held to the limit an incomplete one is (above), so the outcome
        // does not depend on where the stream was cut.
        if unterminated_len(&pending[..lf]) > self.cfg.field_limit {
            self.chunked_fallback(dir);
            return true;
        }
        let line = &pending[..=lf];
        match parse_chunk_len(line) {
            Ok((len, ext)) => {
                half.pos += lf + 1;
                let side = half.side;
                if ext {
                    self.anomaly(tx, HttpAnomaly::ChunkExtension);
                }
                match len {
                    Some(0) => {
                        let half = &mut self.halves[idx];
                        half.block = Some(HeaderBlock::new(side, self.cfg.max_headers));
                        if let Some(t) = tx_mut(&mut self.txs, tx) {
                            if idx == 0 {
                                t.request_progress = Progress::Trailers;
                            } else {
                                t.response_progress = Progress::Trailers;
                            }
                        }
                        self.set_body_state(dir, BodyState::Trailers);
                    }
                    Some(len) => self.set_body_state(dir, BodyState::ChunkData { left: len }),
                    None => {} // blank or unusable line: try the next one
                }
                true
            }
            Err(()) => {
                self.chunked_fallback(dir);
                true
            }
        }
    }

    /// Invalid chunk size: like libhtp, the rest of the stream (from this line) is body.
    fn chunked_fallback(&mut self, dir: Direction) {
        let tx = self.halves[dir.index()].tx;
        self.anomaly(tx, HttpAnomaly::InvalidChunkLength);
        self.set_body_state(dir, BodyState::UntilClose);
    }
}

fn decompress_limits(cfg: &HttpConfig) -> DecompressLimits {
    DecompressLimits { bomb_limit: cfg.compression_bomb_limit, bomb_ratio: cfg.compression_bomb_ratio }
}

fn contains_chunked(value: &[u8]) -> bool {
    let compact: Vec<u8> = value.iter().filter(|&&b| b != 0).map(u8::to_ascii_lowercase).collect();
    compact.windows(7).any(|w| w == b"chunked")
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    &line[..end]
}

/// Splits a request line into method, target and protocol. Leading whitespace is skipped;
/// the target may contain spaces when the line ends in something that starts with "HTTP"
/// (Suricata's `http.uri` keeps them); without a protocol the request is HTTP/0.9.
fn split_request_line(line: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let is_ws = |b: &u8| headers::is_space(*b);
    let line = headers::trim_space(line);
    let method_end = line.iter().position(is_ws).unwrap_or(line.len());
    let method = &line[..method_end];
    let rest = &line[method_end..];
    let rest = &rest[rest.iter().position(|b| !is_ws(b)).unwrap_or(rest.len())..];
    if rest.is_empty() {
        return (method, rest, &[]);
    }
    // The protocol is the last word if it looks like one; otherwise the second word.
    if let Some(last_ws) = rest.iter().rposition(is_ws) {
        let last = &rest[last_ws + 1..];
        if last.len() >= 4 && last[..4].eq_ignore_ascii_case(b"HTTP") {
            let target = headers::trim_space(&rest[..last_ws]);
            return (method, target, last);
        }
        let first_ws = rest.iter().position(is_ws).unwrap_or(rest.len());
        let protocol = headers::trim_space(&rest[first_ws..]);
        return (method, &rest[..first_ws], protocol);
    }
    (method, rest, &[])
}

/// Status line as libhtp splits it: protocol, status, message (leading whitespace and NULs
/// skipped).
fn parse_status_line(tx: &mut HttpTx, line: &[u8]) {
    tx.response_line = line.to_vec();
    let skip = |s: &[u8], f: &dyn Fn(u8) -> bool| s.iter().position(|&b| !f(b)).unwrap_or(s.len());
    let mut rest = &line[skip(line, &|b| headers::is_space(b) || b == 0)..];
    let proto_len = skip(rest, &|b| !headers::is_space(b));
    tx.response_protocol = rest[..proto_len].to_vec();
    rest = &rest[proto_len..];
    let ws = skip(rest, &headers::is_space);
    rest = &rest[ws..];
    let code_len = skip(rest, &|b| !headers::is_space(b));
    tx.status = rest[..code_len].to_vec();
    tx.status_code = (code_len > 0 && tx.status.iter().all(u8::is_ascii_digit))
        .then(|| std::str::from_utf8(&tx.status).ok()?.parse::<u16>().ok())
        .flatten()
        .filter(|c| (100..=999).contains(c));
    rest = &rest[code_len..];
    let ws = skip(rest, &|b| b.is_ascii_whitespace());
    tx.status_msg = trim_eol(&rest[ws..]).to_vec();
}
