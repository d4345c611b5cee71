//! HTTP/2 (RFC 9113), sans-IO: the frame layer of both directions of a connection, HPACK
//! header decoding ([`hpack`]) and one transaction per stream, as Suricata keeps them.
//!
//! - Each stream is one [`Http2Tx`]; every frame on stream 0 (SETTINGS, GOAWAY, PING,
//!   WINDOW_UPDATE) is a transaction of its own, complete at once (Suricata's "global"
//!   transactions: the SETTINGS a peer sends are logged on them). Empty SETTINGS (acks)
//!   make none.
//! - A stream's transaction keeps its decoded header fields per direction (eve's
//!   `request_headers`/`response_headers`, with size updates and decode errors), the
//!   SETTINGS, error code and priority seen per direction (eve's `http2` object), and an
//!   HTTP/1-shaped view ([`HttpTx`]) that the `http.*` keywords inspect: `:method`,
//!   `:path`, `:authority`, `:status`, every header field in order, and the DATA bodies.
//! - A stream is complete when both sides ended it (END_STREAM); the flow end completes
//!   the others.
//!
//! Bounded: frames are buffered up to [`MAX_FRAME_BUFFER`] (longer frames are skipped and
//! counted), header blocks up to [`MAX_HEADER_BLOCK`], fields per side of a stream at
//! [`MAX_FIELDS`], streams kept at [`MAX_STREAMS`], bodies at the HTTP body limits.

pub mod flow;
pub mod hpack;
pub mod record;

use crate::applayer::dns::{parse_message, DnsTransaction};
use crate::applayer::http::{FileConfig, Header, HttpConfig, HttpFile, HttpTx, Progress};
use crate::stream::Direction;
use hpack::{Decoder, Field};
use std::collections::VecDeque;

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER_LEN: usize = 9;
/// Longest frame buffered whole; longer ones are skipped (Suricata handles frames up to
/// 64 KiB whole too). RFC 9113's default maximum frame size is 16 KiB.
pub const MAX_FRAME_BUFFER: usize = 65536;
/// Longest header block (HEADERS plus CONTINUATIONs) reassembled (Suricata's
/// `HTTP2_MAX_REASS`).
pub const MAX_HEADER_BLOCK: usize = 102400;
/// Header fields kept per side of a stream.
pub const MAX_FIELDS: usize = 1024;
/// Transactions kept at once (Suricata's `HTTP2_MAX_STREAMS`).
pub const MAX_STREAMS: usize = 4096;
/// Settings kept per transaction and side.
const MAX_SETTINGS: usize = 64;
/// DNS records kept per section of a DoH message (as DNS's default).
const DOH_MAX_RECORDS: usize = 256;
/// Largest DNS message a DoH body may carry.
const MAX_DNS_MESSAGE: usize = 0xffff;

/// Frame types (RFC 9113 section 6).
pub mod frame_type {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const PRIORITY: u8 = 2;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const PUSH_PROMISE: u8 = 5;
    pub const PING: u8 = 6;
    pub const GOAWAY: u8 = 7;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const CONTINUATION: u8 = 9;
}
use frame_type as ft;

const FLAG_END_STREAM: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;

/// Suricata's HTTP/2 app-layer events (`rust/src/http2/http2.rs` HTTP2Event), by their
/// rule/eve names.
pub mod event {
    pub const INVALID_FRAME_HEADER: &str = "INVALID_FRAME_HEADER";
    pub const INVALID_CLIENT_MAGIC: &str = "INVALID_CLIENT_MAGIC";
    pub const INVALID_FRAME_DATA: &str = "INVALID_FRAME_DATA";
    pub const INVALID_HEADER: &str = "INVALID_HEADER";
    pub const INVALID_FRAME_LENGTH: &str = "INVALID_FRAME_LENGTH";
    pub const LONG_FRAME_DATA: &str = "LONG_FRAME_DATA";
    pub const STREAM_ID_REUSE: &str = "STREAM_ID_REUSE";
    pub const INVALID_HTTP1_SETTINGS: &str = "INVALID_HTTP1_SETTINGS";
    pub const HEADER_INTEGER_OVERFLOW: &str = "HEADER_INTEGER_OVERFLOW";
    pub const TOO_MANY_STREAMS: &str = "TOO_MANY_STREAMS";
    pub const AUTHORITY_HOST_MISMATCH: &str = "AUTHORITY_HOST_MISMATCH";
    pub const USERINFO_IN_URI: &str = "USERINFO_IN_URI";
    pub const REASSEMBLY_LIMIT_REACHED: &str = "REASSEMBLY_LIMIT_REACHED";
    pub const DNS_REQUEST_TOO_LONG: &str = "DNS_REQUEST_TOO_LONG";
    pub const DNS_RESPONSE_TOO_LONG: &str = "DNS_RESPONSE_TOO_LONG";
    pub const DATA_STREAM_ZERO: &str = "DATA_STREAM_ZERO";
    pub const TOO_MANY_FRAMES: &str = "TOO_MANY_FRAMES";
}

/// What the parser reports while it is fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http2Event {
    /// A transaction was created (counted as `app_layer.tx.http2`).
    NewTx { tx: u64 },
    /// Transaction `tx` moved on in `dir` (headers decoded, body data, end of stream).
    Progress { dir: Direction, tx: u64 },
    /// Transaction `tx` is complete (both sides ended, or a stream-0 frame).
    Complete { tx: u64 },
    /// Suricata's app-layer event `event`, on `tx` (the last transaction when none fits).
    Anomaly { dir: Direction, tx: Option<u64>, event: &'static str },
}

/// A stream's progress in one direction (Suricata's HTTP2TxProgress).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum StreamProgress {
    #[default]
    Idle,
    Headers,
    Data,
    /// END_STREAM seen.
    Closed,
}

/// The frame-level facts of one side of a transaction that eve's `http2` object logs.
#[derive(Clone, Debug, Default)]
pub struct SideFrames {
    /// SETTINGS parameters, in order (id, value).
    pub settings: Vec<(u16, u32)>,
    /// Error codes of RST_STREAM and GOAWAY frames, in order (the first is logged).
    pub error_codes: Vec<u32>,
    /// Weights of PRIORITY frames and HEADERS priority fields, in order.
    pub priorities: Vec<u8>,
    /// WINDOW_UPDATE increments, in order (the last few).
    pub windows: Vec<u32>,
    /// Frame types seen (bit per type 0..=15; unknown types above set bit 15).
    pub frame_types: u16,
}

/// One item of a side's header list (eve `request_headers` / `response_headers`).
pub type HeaderField = Field;

/// A DNS message carried over the stream (DNS over HTTPS, RFC 8484), per direction.
#[derive(Clone, Debug, Default)]
pub struct DohData {
    /// Whether the side's body is a DNS message (`content-type: application/dns-message`).
    pub is_dns: [bool; 2],
    /// Body bytes of each side while they are a DNS message.
    pub body: [Vec<u8>; 2],
    /// The DNS request of a GET (`dns=` query parameter, base64url).
    pub get_request: Option<Vec<u8>>,
    /// The DNS messages parsed from them, when they are DNS: request, then response.
    pub dns: [Option<DnsTransaction>; 2],
}

impl DohData {
    /// The DNS transaction Suricata logs and alerts with: the response if there is one.
    pub fn dns_tx(&self) -> Option<&DnsTransaction> {
        self.dns[1].as_ref().or(self.dns[0].as_ref())
    }

    /// Parses the DNS message of side `dir` (once its body is complete, or a GET's `dns=`).
    fn parse(&mut self, dir: Direction) -> bool {
        let side = dir.index();
        let msg = match dir {
            Direction::ToServer if self.body[0].is_empty() => self.get_request.as_deref(),
            _ => self.is_dns[side].then_some(self.body[side].as_slice()),
        };
        let Some(msg) = msg.filter(|m| !m.is_empty()) else { return false };
        let Ok((message, _)) = parse_message(msg, DOH_MAX_RECORDS) else { return false };
        // A request must be a query and a response an answer, as DNS over UDP/TCP.
        if message.header.qr() != (dir == Direction::ToClient) {
            return false;
        }
        self.dns[side] = Some(DnsTransaction { tx_id: 1, direction: dir, message, request_tx: None });
        self.body[side] = Vec::new();
        true
    }
}

/// One HTTP/2 stream (or one stream-0 frame) as a transaction.
#[derive(Clone, Debug, Default)]
pub struct Http2Tx {
    pub id: u64,
    pub stream_id: u32,
    /// Decoded header fields per side, `ToServer` first.
    pub fields: [Vec<HeaderField>; 2],
    pub frames: [SideFrames; 2],
    pub progress: [StreamProgress; 2],
    /// The request and response as an HTTP/1 transaction, for the `http.*` buffers.
    pub http: HttpTx,
    /// DNS over HTTP/2, when a side announced it.
    pub doh: Option<Box<DohData>>,
    /// Fields not kept past [`MAX_FIELDS`].
    pub fields_dropped: u64,
    /// A stream-0 frame: complete at once.
    pub global: bool,
    reported_complete: bool,
}

impl Http2Tx {
    pub fn is_complete(&self) -> bool {
        self.global || (self.progress[0] == StreamProgress::Closed && self.progress[1] == StreamProgress::Closed)
    }

    /// Decoded header fields of `dir` (size updates and errors excluded), as (name, value).
    pub fn headers(&self, dir: Direction) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields[dir.index()].iter().filter_map(|f| match f {
            Field::Header { name, value } => Some((name.as_slice(), value.as_slice())),
            _ => None,
        })
    }

    /// First value of header `name` (lowercase) of `dir`.
    pub fn header(&self, dir: Direction, name: &str) -> Option<&[u8]> {
        self.headers(dir).find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }

    /// Whether `dir` saw a frame of type `t` (`http2.frametype`).
    pub fn has_frame_type(&self, dir: Direction, t: u8) -> bool {
        self.frames[dir.index()].frame_types & (1 << t.min(15)) != 0
    }

    pub fn heap_bytes(&self) -> u64 {
        let fields: usize = self
            .fields
            .iter()
            .map(|fs| {
                fs.capacity() * std::mem::size_of::<Field>()
                    + fs.iter()
                        .map(|f| match f {
                            Field::Header { name, value } => name.capacity() + value.capacity(),
                            _ => 0,
                        })
                        .sum::<usize>()
            })
            .sum();
        let doh = self.doh.as_ref().map_or(0, |d| d.body.iter().map(Vec::capacity).sum::<usize>());
        (fields + doh) as u64 + self.http.heap_bytes_without_bodies()
    }

    /// Rebuilds the HTTP/1 view of side `dir` from its header fields (Suricata's HTTP/2
    /// getters of the `http.*` buffers: first `:method`, `:path`, `:status`, the
    /// `:authority` host, every field as a header line).
    fn update_http_view(&mut self, dir: Direction) {
        let headers: Vec<Header> =
            self.headers(dir).map(|(n, v)| Header { name: n.to_vec(), value: v.to_vec(), count: 1 }).collect();
        let h = &mut self.http;
        match dir {
            Direction::ToServer => {
                h.request_headers = headers;
                let get =
                    |name: &str| h.request_headers.iter().find(|x| x.name == name.as_bytes()).map(|x| x.value.clone());
                h.method = get(":method").unwrap_or_default();
                h.uri_raw = get(":path").unwrap_or_default();
                h.uri = crate::applayer::http::uri::parse_request_target(&h.uri_raw, h.method == b"CONNECT");
                h.uri_normalized = h.uri_raw.clone();
                h.request_protocol = b"HTTP/2".to_vec();
                let mut line = h.method.clone();
                line.push(b' ');
                line.extend_from_slice(&h.uri_raw);
                line.extend_from_slice(b" HTTP/2");
                h.request_line = line;
                h.host_raw = get(":authority");
                h.host = h.host_raw.as_deref().map(normalize_authority);
                if h.request_progress < Progress::Headers {
                    h.request_progress = Progress::Headers;
                }
            }
            Direction::ToClient => {
                h.response_headers = headers;
                let status = h
                    .response_headers
                    .iter()
                    .find(|x| x.name == b":status")
                    .map(|x| x.value.clone())
                    .unwrap_or_default();
                h.status_code = std::str::from_utf8(&status).ok().and_then(|s| s.parse().ok());
                h.response_line = [&b"HTTP/2 "[..], &status].concat();
                h.status = status;
                h.response_protocol = b"HTTP/2".to_vec();
                if h.response_progress < Progress::Headers {
                    h.response_progress = Progress::Headers;
                }
            }
        }
    }
}

/// `http.host` of an HTTP/2 request: the `:authority` without userinfo and port, lowercase
/// (Suricata's `http2_normalize_host`).
pub fn normalize_authority(a: &[u8]) -> Vec<u8> {
    let host = match a.iter().position(|&b| b == b'@') {
        Some(i) => &a[i + 1..],
        None => a,
    };
    let host = match host.iter().position(|&b| b == b':') {
        Some(i) => &host[..i],
        None => host,
    };
    host.to_ascii_lowercase()
}

/// Counters of the parser (beyond the transactions the app layer counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Http2Counters {
    /// Frames longer than [`MAX_FRAME_BUFFER`], skipped.
    pub frames_too_long: u64,
    /// Header blocks longer than [`MAX_HEADER_BLOCK`], not decoded.
    pub header_blocks_too_long: u64,
    /// Header fields not kept past [`MAX_FIELDS`].
    pub fields_dropped: u64,
    /// HPACK table size updates above the cap (honoured up to it).
    pub table_size_capped: u64,
    /// Streams refused past [`MAX_STREAMS`].
    pub streams_refused: u64,
    /// Body bytes past the body limits, not kept.
    pub body_bytes_cut: u64,
}

impl Http2Counters {
    /// (name, value) under `app_layer.http2.`.
    pub fn counters(&self) -> [(&'static str, u64); 6] {
        [
            ("http2.frames_too_long", self.frames_too_long),
            ("http2.header_blocks_too_long", self.header_blocks_too_long),
            ("http2.fields_dropped", self.fields_dropped),
            ("http2.table_size_capped", self.table_size_capped),
            ("http2.streams_refused", self.streams_refused),
            ("http2.body_bytes_cut", self.body_bytes_cut),
        ]
    }
}

/// One direction's frame reassembly.
#[derive(Clone, Debug, Default)]
struct Side {
    /// Bytes of an incomplete frame (or preface).
    buf: Vec<u8>,
    /// Bytes of an over-long frame still to skip.
    skip: u64,
    /// A header block waiting for its CONTINUATIONs: (stream, frame type, END_STREAM, block).
    block: Option<(u32, u8, bool, Vec<u8>)>,
    /// The side's data stopped making sense (a gap inside a frame): nothing more is parsed.
    lost: bool,
}

/// The HTTP/2 parser of one connection.
pub struct Http2Parser {
    cfg: HttpConfig,
    sides: [Side; 2],
    hpack: [Decoder; 2],
    txs: VecDeque<Http2Tx>,
    next_id: u64,
    /// The client preface is still expected (false once seen or when the connection was
    /// upgraded from HTTP/1.1, where it comes too but is optional to us).
    preface_pending: bool,
    /// A stream carried DNS (DNS over HTTPS): the flow's protocol is `doh2` now.
    pub doh: bool,
    /// The HTTP/1 transactions of a connection upgraded to HTTP/2, until inspected.
    http1: Vec<HttpTx>,
    pub counters: Http2Counters,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Http2Parser {
    pub fn new(cfg: HttpConfig) -> Self {
        Http2Parser {
            cfg,
            sides: Default::default(),
            hpack: Default::default(),
            txs: VecDeque::new(),
            next_id: 0,
            preface_pending: true,
            doh: false,
            http1: Vec::new(),
            counters: Http2Counters::default(),
        }
    }

    pub fn tx(&self, id: u64) -> Option<&Http2Tx> {
        let first = self.txs.front()?.id;
        self.txs.get(usize::try_from(id.checked_sub(first)?).ok()?).filter(|t| t.id == id)
    }

    pub fn txs(&self) -> impl Iterator<Item = &Http2Tx> {
        self.txs.iter()
    }

    /// Transactions created so far (the next id).
    pub fn tx_count(&self) -> u64 {
        self.next_id
    }

    /// Takes over from an HTTP/1 parser: its transactions stay until pruned, ids go on.
    pub fn continue_from(&mut self, next_id: u64, http1: Vec<HttpTx>) {
        self.next_id = next_id;
        self.http1 = http1;
    }

    /// An HTTP/1 transaction of before the upgrade.
    pub fn http1_tx(&self, id: u64) -> Option<&HttpTx> {
        self.http1.iter().find(|t| t.id == id)
    }

    /// The lowest id of the HTTP/1 transactions still held.
    pub fn http1_first_id(&self) -> Option<u64> {
        self.http1.iter().map(|t| t.id).min()
    }

    /// Frees complete transactions from the front.
    pub fn prune_completed(&mut self) {
        self.http1.retain(|t| !t.is_complete());
        while self.txs.front().is_some_and(|t| t.is_complete()) {
            self.txs.pop_front();
        }
        crate::applayer::free_if_drained(&mut self.txs);
    }

    pub fn heap_bytes(&self) -> u64 {
        let sides: usize =
            self.sides.iter().map(|s| s.buf.capacity() + s.block.as_ref().map_or(0, |b| b.3.capacity())).sum();
        let hpack: usize = self.hpack.iter().map(Decoder::heap_bytes).sum();
        let txs: u64 = self
            .txs
            .iter()
            .map(|t| t.heap_bytes() + t.http.request_body.capacity() as u64 + t.http.response_body.capacity() as u64)
            .sum();
        (sides + hpack + self.txs.capacity() * std::mem::size_of::<Http2Tx>()) as u64 + txs
    }

    /// Stream bytes of `dir`, in order.
    pub fn on_data(&mut self, dir: Direction, mut data: &[u8], out: &mut impl FnMut(Http2Event)) {
        let side = dir.index();
        if self.sides[side].lost {
            return;
        }
        if dir == Direction::ToServer && self.preface_pending {
            let buf = &mut self.sides[side].buf;
            let need = PREFACE.len() - buf.len();
            let take = need.min(data.len());
            buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if buf.len() < PREFACE.len() {
                return;
            }
            if buf.as_slice() != PREFACE {
                out(Http2Event::Anomaly { dir, tx: None, event: event::INVALID_CLIENT_MAGIC });
            }
            buf.clear();
            self.preface_pending = false;
        }
        let skip = &mut self.sides[side].skip;
        if *skip > 0 {
            let n = usize::try_from(*skip).unwrap_or(usize::MAX).min(data.len());
            *skip -= n as u64;
            data = &data[n..];
        }
        // Whole frames straight from `data` when nothing is buffered; the tail is kept.
        let mut pending = std::mem::take(&mut self.sides[side].buf);
        if !pending.is_empty() {
            // Complete the buffered frame first.
            loop {
                let need = frame_need(&pending);
                if pending.len() >= need || data.is_empty() || need - FRAME_HEADER_LEN > MAX_FRAME_BUFFER {
                    break;
                }
                let take = (need - pending.len()).min(data.len());
                pending.extend_from_slice(&data[..take]);
                data = &data[take..];
            }
            let used = self.frames(dir, &pending, out);
            if used < pending.len() {
                // Still incomplete (data exhausted) or an over-long frame to skip.
                pending.drain(..used);
                self.keep_tail(dir, pending, data, out);
                return;
            }
            pending.clear();
        }
        let used = self.frames(dir, data, out);
        self.keep_tail(dir, pending, &data[used..], out);
    }

    /// Keeps the incomplete frame `tail` (following `pending`) for the next data, or skips an
    /// over-long frame.
    fn keep_tail(&mut self, dir: Direction, mut pending: Vec<u8>, tail: &[u8], out: &mut impl FnMut(Http2Event)) {
        pending.extend_from_slice(tail);
        if pending.len() >= FRAME_HEADER_LEN {
            let need = frame_need(&pending);
            if need - FRAME_HEADER_LEN > MAX_FRAME_BUFFER {
                self.long_frame(dir, out);
                let have = pending.len().min(need);
                self.sides[dir.index()].skip = (need - have) as u64;
                pending.clear();
            }
        }
        self.sides[dir.index()].buf = pending;
    }

    /// Handles the whole frames at the start of `data`; returns the bytes used.
    fn frames(&mut self, dir: Direction, data: &[u8], out: &mut impl FnMut(Http2Event)) -> usize {
        let mut pos = 0;
        while data.len() - pos >= FRAME_HEADER_LEN {
            let need = frame_need(&data[pos..]);
            if data.len() - pos < need {
                break;
            }
            if need - FRAME_HEADER_LEN > MAX_FRAME_BUFFER {
                self.long_frame(dir, out);
                pos += need;
                continue;
            }
            let h = &data[pos..pos + FRAME_HEADER_LEN];
            let (ty, flags, stream) = (h[3], h[4], be32(&h[5..9]) & 0x7fff_ffff);
            self.frame(dir, ty, flags, stream, &data[pos + FRAME_HEADER_LEN..pos + need], out);
            pos += need;
        }
        pos
    }

    /// A frame longer than [`MAX_FRAME_BUFFER`] is skipped.
    fn long_frame(&mut self, dir: Direction, out: &mut impl FnMut(Http2Event)) {
        self.counters.frames_too_long += 1;
        let last = self.txs.back().map(|t| t.id);
        out(Http2Event::Anomaly { dir, tx: last, event: event::LONG_FRAME_DATA });
    }

    /// A gap of `len` bytes in `dir`: a frame boundary cannot be found again, so the side
    /// stops being parsed (as Suricata does for HTTP/2).
    pub fn on_gap(&mut self, dir: Direction, _len: u64) {
        let s = &mut self.sides[dir.index()];
        s.lost = true;
        s.buf = Vec::new();
        s.block = None;
    }

    /// End of the flow: open streams complete now (their files end truncated).
    pub fn on_close(&mut self, out: &mut impl FnMut(Http2Event)) {
        for tx in self.txs.iter_mut().filter(|t| !t.reported_complete) {
            for (dir, f) in
                [(Direction::ToServer, &mut tx.http.request_file), (Direction::ToClient, &mut tx.http.response_file)]
            {
                let closed = tx.progress[dir.index()] == StreamProgress::Closed;
                if let Some(f) = f.as_deref_mut() {
                    f.close(closed);
                }
            }
            tx.reported_complete = true;
            out(Http2Event::Complete { tx: tx.id });
        }
    }

    fn new_tx(
        &mut self,
        stream_id: u32,
        global: bool,
        dir: Direction,
        out: &mut impl FnMut(Http2Event),
    ) -> Option<usize> {
        if self.txs.len() >= MAX_STREAMS {
            self.counters.streams_refused += 1;
            let last = self.txs.back().map(|t| t.id);
            out(Http2Event::Anomaly { dir, tx: last, event: event::TOO_MANY_STREAMS });
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut tx = Http2Tx { id, stream_id, global, ..Http2Tx::default() };
        tx.http.id = id;
        self.txs.push_back(tx);
        out(Http2Event::NewTx { tx: id });
        Some(self.txs.len() - 1)
    }

    /// The transaction of `stream` (the newest with that id), created when absent.
    fn stream_tx(&mut self, stream: u32, ty: u8, dir: Direction, out: &mut impl FnMut(Http2Event)) -> Option<usize> {
        if let Some(i) = self.txs.iter().rposition(|t| t.stream_id == stream && !t.global) {
            let t = &self.txs[i];
            if t.is_complete() && !matches!(ty, ft::RST_STREAM | ft::WINDOW_UPDATE | ft::PRIORITY) {
                out(Http2Event::Anomaly { dir, tx: Some(t.id), event: event::STREAM_ID_REUSE });
            }
            return Some(i);
        }
        self.new_tx(stream, false, dir, out)
    }

    /// One complete frame of `dir`.
    fn frame(
        &mut self,
        dir: Direction,
        ty: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
        out: &mut impl FnMut(Http2Event),
    ) {
        let side = dir.index();
        // A header block in progress takes CONTINUATIONs of its stream only.
        if let Some((bstream, _, _, _)) = &self.sides[side].block {
            if ty != ft::CONTINUATION || stream != *bstream {
                self.sides[side].block = None;
                let last = self.txs.back().map(|t| t.id);
                out(Http2Event::Anomaly { dir, tx: last, event: event::INVALID_FRAME_DATA });
            }
        }
        if stream == 0 {
            self.global_frame(dir, ty, flags, payload, out);
            return;
        }
        if ty == ft::CONTINUATION && self.sides[side].block.is_none() {
            let last = self.txs.back().map(|t| t.id);
            out(Http2Event::Anomaly { dir, tx: last, event: event::INVALID_FRAME_DATA });
            return;
        }
        // PUSH_PROMISE belongs to the promised stream.
        let target = if ty == ft::PUSH_PROMISE {
            match strip_padding(flags, payload) {
                Some(p) if p.len() >= 4 => be32(p) & 0x7fff_ffff,
                _ => {
                    out(Http2Event::Anomaly { dir, tx: None, event: event::INVALID_FRAME_LENGTH });
                    return;
                }
            }
        } else if ty == ft::CONTINUATION {
            self.sides[side].block.as_ref().map_or(stream, |b| b.0)
        } else {
            stream
        };
        let Some(i) = self.stream_tx(target, ty, dir, out) else { return };
        let tx_id = self.txs[i].id;
        self.txs[i].frames[side].frame_types |= 1 << ty.min(15);
        let end_stream = flags & FLAG_END_STREAM != 0;
        match ty {
            ft::DATA => {
                let Some(body) = strip_padding(flags, payload) else {
                    out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_LENGTH });
                    return;
                };
                self.data(i, dir, body, end_stream, out);
            }
            ft::HEADERS => {
                let Some(mut frag) = strip_padding(flags, payload) else {
                    out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_LENGTH });
                    return;
                };
                if flags & FLAG_PRIORITY != 0 {
                    if frag.len() < 5 {
                        out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_LENGTH });
                        return;
                    }
                    push_bounded(&mut self.txs[i].frames[side].priorities, frag[4]);
                    frag = &frag[5..];
                }
                self.start_block(dir, target, ty, end_stream, flags, frag, out);
            }
            ft::PUSH_PROMISE => {
                let frag = strip_padding(flags, payload).map_or(&[][..], |p| &p[4..]);
                self.start_block(dir, target, ty, false, flags, frag, out);
            }
            ft::CONTINUATION => {
                let Some((_, _, _, block)) = &mut self.sides[side].block else { return };
                if block.len() + payload.len() > MAX_HEADER_BLOCK {
                    self.counters.header_blocks_too_long += 1;
                    self.sides[side].block = None;
                    out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::REASSEMBLY_LIMIT_REACHED });
                    return;
                }
                block.extend_from_slice(payload);
                if flags & FLAG_END_HEADERS != 0 {
                    if let Some((_, bty, end, block)) = self.sides[side].block.take() {
                        self.headers(i, dir, bty, end, &block, out);
                    }
                }
            }
            ft::PRIORITY => {
                if payload.len() != 5 {
                    out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_LENGTH });
                    return;
                }
                push_bounded(&mut self.txs[i].frames[side].priorities, payload[4]);
            }
            ft::RST_STREAM => {
                if payload.len() != 4 {
                    out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_LENGTH });
                    return;
                }
                push_bounded(&mut self.txs[i].frames[side].error_codes, be32(payload));
            }
            ft::WINDOW_UPDATE => self.window_update(i, dir, payload, out),
            ft::SETTINGS | ft::PING | ft::GOAWAY => {
                out(Http2Event::Anomaly { dir, tx: Some(tx_id), event: event::INVALID_FRAME_HEADER });
            }
            _ => {}
        }
        out(Http2Event::Progress { dir, tx: tx_id });
    }

    fn window_update(&mut self, i: usize, dir: Direction, payload: &[u8], out: &mut impl FnMut(Http2Event)) {
        if payload.len() != 4 {
            out(Http2Event::Anomaly { dir, tx: Some(self.txs[i].id), event: event::INVALID_FRAME_LENGTH });
            return;
        }
        push_bounded(&mut self.txs[i].frames[dir.index()].windows, be32(payload) & 0x7fff_ffff);
    }

    /// A frame on stream 0: a transaction of its own (none for an empty SETTINGS).
    fn global_frame(&mut self, dir: Direction, ty: u8, flags: u8, payload: &[u8], out: &mut impl FnMut(Http2Event)) {
        if ty == ft::SETTINGS && payload.is_empty() {
            return;
        }
        let Some(i) = self.new_tx(0, true, dir, out) else { return };
        let side = dir.index();
        let id = self.txs[i].id;
        self.txs[i].frames[side].frame_types |= 1 << ty.min(15);
        match ty {
            ft::SETTINGS => {
                if flags & 1 != 0 || !payload.len().is_multiple_of(6) {
                    out(Http2Event::Anomaly { dir, tx: Some(id), event: event::INVALID_FRAME_LENGTH });
                }
                self.txs[i].frames[side].settings = parse_settings(payload);
            }
            ft::GOAWAY => {
                if payload.len() < 8 {
                    out(Http2Event::Anomaly { dir, tx: Some(id), event: event::INVALID_FRAME_LENGTH });
                } else {
                    self.txs[i].frames[side].error_codes.push(be32(&payload[4..8]));
                }
            }
            ft::WINDOW_UPDATE => self.window_update(i, dir, payload, out),
            ft::PING => {
                if payload.len() != 8 {
                    out(Http2Event::Anomaly { dir, tx: Some(id), event: event::INVALID_FRAME_LENGTH });
                }
            }
            ft::DATA => out(Http2Event::Anomaly { dir, tx: Some(id), event: event::DATA_STREAM_ZERO }),
            _ => out(Http2Event::Anomaly { dir, tx: Some(id), event: event::INVALID_FRAME_HEADER }),
        }
        self.txs[i].reported_complete = true;
        out(Http2Event::Progress { dir, tx: id });
        out(Http2Event::Complete { tx: id });
    }

    /// The first fragment of a header block: decoded now, or kept for CONTINUATIONs.
    #[allow(clippy::too_many_arguments)]
    fn start_block(
        &mut self,
        dir: Direction,
        stream: u32,
        ty: u8,
        end_stream: bool,
        flags: u8,
        frag: &[u8],
        out: &mut impl FnMut(Http2Event),
    ) {
        if flags & FLAG_END_HEADERS != 0 {
            if let Some(i) = self.txs.iter().rposition(|t| t.stream_id == stream && !t.global) {
                self.headers(i, dir, ty, end_stream, frag, out);
            }
        } else {
            self.sides[dir.index()].block = Some((stream, ty, end_stream, frag.to_vec()));
        }
    }

    /// A complete header block of transaction `i` from `dir` (a PUSH_PROMISE's goes to the
    /// promised stream's request side).
    fn headers(
        &mut self,
        i: usize,
        dir: Direction,
        ty: u8,
        end_stream: bool,
        block: &[u8],
        out: &mut impl FnMut(Http2Event),
    ) {
        let hdir = if ty == ft::PUSH_PROMISE { Direction::ToServer } else { dir };
        let tx = &mut self.txs[i];
        let side = hdir.index();
        let before = tx.fields[side].len();
        let capped_before = self.hpack[dir.index()].table_capped;
        let dropped = self.hpack[dir.index()].decode(block, &mut tx.fields[side], MAX_FIELDS);
        self.counters.table_size_capped += self.hpack[dir.index()].table_capped - capped_before;
        tx.fields_dropped += dropped;
        self.counters.fields_dropped += dropped;
        let id = tx.id;
        for f in &tx.fields[side][before..] {
            if let Field::Error(e) = f {
                out(Http2Event::Anomaly { dir, tx: Some(id), event: event::INVALID_HEADER });
                if *e == hpack::DecodeError::IntegerOverflow {
                    out(Http2Event::Anomaly { dir, tx: Some(id), event: event::HEADER_INTEGER_OVERFLOW });
                }
            }
        }
        // Suricata's checks of one block: userinfo in :authority, :authority against Host,
        // and DNS over HTTPS announced by content-type or `accept` + `dns=`.
        let (mut authority, mut host, mut accept_dns, mut path, mut dns_body) = (None, None, false, None, false);
        for f in &tx.fields[side][before..] {
            let Field::Header { name, value } = f else { continue };
            match name.as_slice() {
                b":authority" => authority = Some(value),
                b"host" => host = Some(value),
                b":path" => path = Some(value),
                b"accept" if value == b"application/dns-message" => accept_dns = true,
                b"content-type" if value == b"application/dns-message" => dns_body = true,
                _ => {}
            }
        }
        let mut anomalies = Vec::new();
        if authority.is_some_and(|a| a.contains(&b'@')) {
            anomalies.push(event::USERINFO_IN_URI);
        }
        if let (Some(a), Some(h)) = (authority, host) {
            if !a.eq_ignore_ascii_case(h) {
                anomalies.push(event::AUTHORITY_HOST_MISMATCH);
            }
        }
        let get_request = if accept_dns { path.and_then(|p| doh_get_request(p)) } else { None };
        if dns_body || get_request.is_some() {
            let doh = tx.doh.get_or_insert_with(Default::default);
            if dns_body {
                doh.is_dns[side] = true;
            }
            if get_request.is_some() {
                doh.get_request = get_request;
            }
        }
        for e in anomalies {
            out(Http2Event::Anomaly { dir, tx: Some(id), event: e });
        }
        tx.update_http_view(hdir);
        if ty != ft::PUSH_PROMISE {
            let p = &mut tx.progress[side];
            if *p < StreamProgress::Headers {
                *p = StreamProgress::Headers;
            }
            if end_stream {
                self.end_stream(i, dir, out);
            }
        }
        out(Http2Event::Progress { dir: hdir, tx: id });
    }

    /// A DATA frame's body bytes for transaction `i`.
    fn data(&mut self, i: usize, dir: Direction, body: &[u8], end_stream: bool, out: &mut impl FnMut(Http2Event)) {
        let side = dir.index();
        let (limit, files) = match dir {
            Direction::ToServer => (self.cfg.request_body_limit, self.cfg.files),
            Direction::ToClient => (self.cfg.response_body_limit, self.cfg.files),
        };
        let tx = &mut self.txs[i];
        if tx.progress[side] < StreamProgress::Data {
            tx.progress[side] = StreamProgress::Data;
        }
        // Files are not cut at the body limit: Suricata tracks HTTP/2 files whole (up to
        // the stream depth); only the inspected body is.
        open_file(tx, dir, usize::MAX, &files);
        let h = &mut tx.http;
        let (stored, len, progress, file) = match dir {
            Direction::ToServer => {
                (&mut h.request_body, &mut h.request_body_len, &mut h.request_progress, &mut h.request_file)
            }
            Direction::ToClient => {
                (&mut h.response_body, &mut h.response_body_len, &mut h.response_progress, &mut h.response_file)
            }
        };
        *len += body.len() as u64;
        let room = if limit == 0 { body.len() } else { limit.saturating_sub(stored.len()).min(body.len()) };
        stored.extend_from_slice(&body[..room]);
        self.counters.body_bytes_cut += (body.len() - room) as u64;
        if *progress < Progress::Body {
            *progress = Progress::Body;
        }
        if let Some(f) = file.as_deref_mut() {
            f.append(body);
        }
        if let Some(doh) = tx.doh.as_deref_mut().filter(|d| d.is_dns[side]) {
            if doh.body[side].len() + body.len() <= MAX_DNS_MESSAGE {
                doh.body[side].extend_from_slice(body);
            } else {
                doh.is_dns[side] = false;
                doh.body[side] = Vec::new();
                let e = match dir {
                    Direction::ToServer => event::DNS_REQUEST_TOO_LONG,
                    Direction::ToClient => event::DNS_RESPONSE_TOO_LONG,
                };
                out(Http2Event::Anomaly { dir, tx: Some(tx.id), event: e });
            }
        }
        if end_stream {
            self.end_stream(i, dir, out);
        }
    }

    /// END_STREAM from `dir` on transaction `i`.
    fn end_stream(&mut self, i: usize, dir: Direction, out: &mut impl FnMut(Http2Event)) {
        let tx = &mut self.txs[i];
        tx.progress[dir.index()] = StreamProgress::Closed;
        if tx.doh.as_deref_mut().is_some_and(|d| d.parse(dir)) {
            self.doh = true;
        }
        let h = &mut tx.http;
        let (progress, file) = match dir {
            Direction::ToServer => (&mut h.request_progress, &mut h.request_file),
            Direction::ToClient => (&mut h.response_progress, &mut h.response_file),
        };
        *progress = Progress::Complete;
        if let Some(f) = file.as_deref_mut() {
            f.close(true);
        }
        if tx.is_complete() && !tx.reported_complete {
            tx.reported_complete = true;
            out(Http2Event::Complete { tx: tx.id });
        }
    }

    /// The connection was upgraded from HTTP/1.1 (`Upgrade: h2c`): the request's
    /// `HTTP2-Settings` (base64url SETTINGS payload) become a stream-0 transaction, and the
    /// request itself is stream 1, whose response comes over HTTP/2.
    pub fn upgraded(&mut self, request: &HttpTx, settings: Option<&[u8]>, out: &mut impl FnMut(Http2Event)) {
        if let Some(s) = settings {
            match base64url_decode(s) {
                Some(payload) if payload.len().is_multiple_of(6) => {
                    if let Some(i) = self.new_tx(0, true, Direction::ToServer, out) {
                        self.txs[i].frames[0].settings = parse_settings(&payload);
                        self.txs[i].reported_complete = true;
                        let id = self.txs[i].id;
                        out(Http2Event::Complete { tx: id });
                    }
                }
                _ => out(Http2Event::Anomaly {
                    dir: Direction::ToServer,
                    tx: None,
                    event: event::INVALID_HTTP1_SETTINGS,
                }),
            }
        }
        let Some(i) = self.new_tx(1, false, Direction::ToServer, out) else { return };
        let tx = &mut self.txs[i];
        let mut push = |name: &[u8], value: &[u8]| {
            tx.fields[0].push(Field::Header { name: name.to_vec(), value: value.to_vec() });
        };
        push(b":method", &request.method);
        push(b":path", &request.uri_raw);
        for h in &request.request_headers {
            if h.name.eq_ignore_ascii_case(b"host") {
                push(b":authority", &h.value);
            } else if !h.name.eq_ignore_ascii_case(b"http2-settings") {
                push(&h.name, &h.value);
            }
        }
        tx.progress[0] = StreamProgress::Closed;
        tx.update_http_view(Direction::ToServer);
        tx.http.request_progress = Progress::Complete;
        // The request was inspected as the HTTP/1 transaction already: its buffers are not
        // offered again on stream 1 (Suricata alerts once on the upgrade request).
        tx.http.request_missing = true;
        let id = tx.id;
        out(Http2Event::Progress { dir: Direction::ToServer, tx: id });
    }
}

/// Opens the file of `dir`'s body on its first DATA frame: the `:path` names it (as in
/// Suricata); a response's Content-Range gives its range.
fn open_file(tx: &mut Http2Tx, dir: Direction, limit: usize, cfg: &FileConfig) {
    if !cfg.enabled {
        return;
    }
    let h = &tx.http;
    let slot = match dir {
        Direction::ToServer => &h.request_file,
        Direction::ToClient => &h.response_file,
    };
    if slot.is_some() {
        return;
    }
    let path = crate::applayer::http::uri::normalized_path(&h.uri);
    let mut f = HttpFile::open(&path, limit, cfg);
    if dir == Direction::ToClient {
        f.range = tx.header(Direction::ToClient, "content-range").and_then(crate::applayer::http::file::content_range);
    }
    let h = &mut tx.http;
    match dir {
        Direction::ToServer => h.request_file = Some(Box::new(f)),
        Direction::ToClient => h.response_file = Some(Box::new(f)),
    }
}

/// Bytes a frame starting at `b` (at least its header) takes in all.
fn frame_need(b: &[u8]) -> usize {
    if b.len() < FRAME_HEADER_LEN {
        return FRAME_HEADER_LEN;
    }
    FRAME_HEADER_LEN + ((usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]))
}

/// The payload without its padding (PADDED flag); `None` when the padding does not fit.
fn strip_padding(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & FLAG_PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(usize::from(pad)).map(|end| &rest[..end])
}

/// SETTINGS parameters (6 bytes each); stops at the first unknown identifier, as Suricata
/// does; at most [`MAX_SETTINGS`].
pub fn parse_settings(payload: &[u8]) -> Vec<(u16, u32)> {
    payload
        .chunks_exact(6)
        .map(|c| (u16::from_be_bytes([c[0], c[1]]), be32(&c[2..6])))
        .take_while(|(id, _)| settings_name(*id).is_some())
        .take(MAX_SETTINGS)
        .collect()
}

/// Suricata's name of a SETTINGS identifier in eve (`SETTINGS` + its name, uppercase).
pub fn settings_name(id: u16) -> Option<&'static str> {
    Some(match id {
        1 => "SETTINGSHEADERTABLESIZE",
        2 => "SETTINGSENABLEPUSH",
        3 => "SETTINGSMAXCONCURRENTSTREAMS",
        4 => "SETTINGSINITIALWINDOWSIZE",
        5 => "SETTINGSMAXFRAMESIZE",
        6 => "SETTINGSMAXHEADERLISTSIZE",
        8 => "SETTINGSENABLECONNECTPROTOCOL",
        9 => "SETTINGSNORFC7540PRIORITIES",
        _ => return None,
    })
}

/// Suricata's name of an HTTP/2 error code (eve `error_code`); `None` for unknown codes.
pub fn error_code_name(code: u32) -> Option<&'static str> {
    const NAMES: [&str; 14] = [
        "NOERROR",
        "PROTOCOLERROR",
        "INTERNALERROR",
        "FLOWCONTROLERROR",
        "SETTINGSTIMEOUT",
        "STREAMCLOSED",
        "FRAMESIZEERROR",
        "REFUSEDSTREAM",
        "CANCEL",
        "COMPRESSIONERROR",
        "CONNECTERROR",
        "ENHANCEYOURCALM",
        "INADEQUATESECURITY",
        "HTTP11REQUIRED",
    ];
    NAMES.get(usize::try_from(code).ok()?).copied()
}

fn push_bounded<T>(v: &mut Vec<T>, x: T) {
    if v.len() < MAX_SETTINGS {
        v.push(x);
    }
}

/// The DNS request of a DoH GET: the `dns=` query parameter of `path`, base64url.
fn doh_get_request(path: &[u8]) -> Option<Vec<u8>> {
    let q = path.iter().position(|&b| b == b'?')?;
    path[q + 1..].split(|&b| b == b'&').find_map(|p| p.strip_prefix(b"dns=")).and_then(base64url_decode)
}

/// Base64 (url-safe or standard alphabet, padding optional).
pub fn base64url_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in s.iter().take_while(|&&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
