//! The application layer of a TCP flow: protocol detection on the first bytes of each
//! direction, then (for HTTP) the parser, fed from the reassembled stream; and the
//! inspection buffers of one HTTP transaction that the detection engine reads.
//!
//! Detection of a transaction happens on a packet of the direction whose progress changed:
//! request buffers on to-server packets, response buffers (plus the request's) on to-client
//! packets. In IDS mode the stream hands request bytes over only once the server acked them,
//! so a request is parsed while handling a to-client packet and inspected on the next
//! to-server packet (or at flow end), as in Suricata.

use crate::applayer::dns::buffers::{DnsAppCounters, DnsFlow, DnsTxBuffers};
use crate::applayer::dns::DnsTransaction;
use crate::applayer::http::{HttpConfig, HttpEvent, HttpParser, HttpTx, Progress};
use crate::applayer::probe::{AppProto, DetectStatus, DetectionPorts, ProtoDetector, Transport};
use crate::applayer::tls::{TlsConfig, TlsCounters, TlsState};
use std::sync::Arc;
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::Buffer;
use crate::stream::{AppData, Direction, ReassemblyMemory, TcpReassembly};

use crate::applayer::tls::buffers::{TlsBuffers, TlsProgress, TLS_TX_ID};

/// Bytes per direction looked at (and kept for replay into the parser) while probing.
const PROBE_LIMIT: usize = 4096;
/// (transaction, sid) pairs remembered per flow to alert once per transaction and rule.
const MAX_ALERTED: usize = 512;
/// Transactions waiting for inspection per direction.
const MAX_PENDING: usize = 64;

enum Parser {
    Probing {
        detector: ProtoDetector,
        /// Bytes seen so far per direction, replayed into the parser once detected.
        seen: [Vec<u8>; 2],
        /// A gap or the probe limit cut the direction: its later bytes are not kept.
        cut: [bool; 2],
    },
    Http(Box<HttpParser>),
    /// DNS over UDP (one message per datagram) or TCP (length-prefixed messages).
    Dns(Box<DnsFlow>),
    /// One TLS session: a single transaction (id 0) for its whole life.
    Tls(Box<TlsState>),
    /// Detected as something without a parser here, or detection failed.
    Idle,
}

/// Per-flow app-layer state (boxed in `FlowExt`, created with the flow's stream).
pub struct AppLayer {
    parser: Parser,
    pub proto: Option<AppProto>,
    /// Transactions whose progress changed since last inspected, per direction.
    pending: [Vec<u64>; 2],
    /// (tx, sid) that already alerted; oldest forgotten first past `MAX_ALERTED`.
    alerted: Vec<(u64, u32)>,
    /// Ports on which port-recognised protocols (DNS) are probed, shared by the worker.
    detection_ports: Arc<DetectionPorts>,
    /// libhtp settings for the HTTP parser this flow gets once detected (shared per run).
    http_config: Arc<HttpConfig>,
}

/// Worker-wide app-layer counters.
#[derive(Default, Clone)]
pub(crate) struct AppCounters {
    pub flows_http: u64,
    pub flows_tls: u64,
    pub flows_other: u64,
    pub http_tx: u64,
    pub tls_tx: u64,
    pub tls: TlsCounters,
    pub http_anomalies: u64,
    pub pending_dropped: u64,
    pub alerted_forgotten: u64,
    pub dns: DnsAppCounters,
}

impl Default for AppLayer {
    fn default() -> Self {
        AppLayer::new(Arc::new(HttpConfig::default()), Arc::new(DetectionPorts::default()))
    }
}

impl AppLayer {
    pub(crate) fn new(http_config: Arc<HttpConfig>, detection_ports: Arc<DetectionPorts>) -> Self {
        AppLayer {
            parser: Parser::Probing { detector: ProtoDetector::new(PROBE_LIMIT), seen: Default::default(), cut: [false; 2] },
            proto: None,
            pending: Default::default(),
            alerted: Vec::new(),
            detection_ports,
            http_config,
        }
    }

    /// Hands the parser every byte of `dir` the stream releases now, and consumes it so
    /// the stream can free memory. `ports` is (client port, server port).
    pub(crate) fn feed(
        &mut self,
        stream: &mut TcpReassembly,
        dir: Direction,
        ports: (u16, u16),
        mem: &mut ReassemblyMemory,
        counters: &mut AppCounters,
    ) {
        // Every step consumes at least one byte; the bound only guards against a stream bug.
        for _ in 0..1024 {
            let upto = match stream.app_data(dir) {
                None => break,
                Some(AppData::Data { offset, data }) => {
                    self.on_data(dir, data, ports, counters);
                    offset + data.len() as u64
                }
                Some(AppData::Gap { offset, len }) => {
                    self.on_gap(dir, len, counters);
                    offset + len
                }
            };
            stream.app_consume(dir, upto, mem);
        }
    }

    /// End of the flow: messages that run until close are complete now.
    pub(crate) fn close(&mut self, counters: &mut AppCounters) {
        if let Parser::Http(p) = &mut self.parser {
            let pending = &mut self.pending;
            p.on_close(&mut |ev| note_event(pending, ev, counters));
        }
    }

    fn on_data(&mut self, dir: Direction, data: &[u8], ports: (u16, u16), counters: &mut AppCounters) {
        match &mut self.parser {
            Parser::Http(p) => {
                let pending = &mut self.pending;
                p.on_data(dir, data, &mut |ev| note_event(pending, ev, counters));
            }
            Parser::Dns(p) => {
                let pending = &mut self.pending;
                p.on_stream(dir, data, &mut counters.dns, &mut |d, tx| queue_pending(pending, d, tx, &mut counters.pending_dropped));
            }
            Parser::Tls(st) => parse_tls(st, &mut self.pending, dir, data, counters),
            Parser::Idle => {}
            Parser::Probing { detector, seen, cut } => {
                let d = dir.index();
                if cut[d] {
                    return;
                }
                seen[d].extend_from_slice(data);
                let status = detector.on_data_with(Transport::Tcp, dir, &seen[d], ports, &self.detection_ports);
                if seen[d].len() >= PROBE_LIMIT && status == DetectStatus::Pending {
                    cut[d] = true;
                    seen[d] = Vec::new();
                }
                self.on_status(status, counters);
            }
        }
    }

    fn on_gap(&mut self, dir: Direction, len: u64, counters: &mut AppCounters) {
        match &mut self.parser {
            Parser::Http(p) => {
                let pending = &mut self.pending;
                p.on_gap(dir, len, &mut |ev| note_event(pending, ev, counters));
            }
            Parser::Dns(p) => p.on_gap(dir),
            Parser::Tls(st) => st.on_gap(dir, &mut counters.tls),
            Parser::Idle => {}
            Parser::Probing { detector, seen, cut } => {
                let d = dir.index();
                // The direction's start is known but its continuation is not: detection
                // can still succeed on the bytes already seen or on the other direction.
                cut[d] = true;
                seen[d] = Vec::new();
                let status = detector.direction_finished(dir);
                self.on_status(status, counters);
            }
        }
    }

    fn on_status(&mut self, status: DetectStatus, counters: &mut AppCounters) {
        match status {
            DetectStatus::Pending => {}
            DetectStatus::Failed => self.parser = Parser::Idle,
            DetectStatus::Detected(AppProto::Http) => {
                counters.flows_http += 1;
                self.proto = Some(AppProto::Http);
                let old = std::mem::replace(&mut self.parser, Parser::Idle);
                let mut parser = Box::new(HttpParser::new(*self.http_config));
                if let Parser::Probing { seen, .. } = old {
                    let pending = &mut self.pending;
                    for dir in [Direction::ToServer, Direction::ToClient] {
                        parser.on_data(dir, &seen[dir.index()], &mut |ev| note_event(pending, ev, counters));
                    }
                }
                self.parser = Parser::Http(parser);
            }
            DetectStatus::Detected(AppProto::Dns) => {
                self.proto = Some(AppProto::Dns);
                let old = std::mem::replace(&mut self.parser, Parser::Idle);
                let mut parser = Box::new(DnsFlow::new(true, &mut counters.dns));
                if let Parser::Probing { seen, .. } = old {
                    let pending = &mut self.pending;
                    for dir in [Direction::ToServer, Direction::ToClient] {
                        parser.on_stream(dir, &seen[dir.index()], &mut counters.dns, &mut |d, tx| {
                            queue_pending(pending, d, tx, &mut counters.pending_dropped)
                        });
                    }
                }
                self.parser = Parser::Dns(parser);
            }
            DetectStatus::Detected(AppProto::Tls) => {
                counters.flows_tls += 1;
                counters.tls_tx += 1;
                self.proto = Some(AppProto::Tls);
                let old = std::mem::replace(&mut self.parser, Parser::Idle);
                let mut state = Box::new(TlsState::new(TlsConfig::default()));
                if let Parser::Probing { seen, .. } = old {
                    for dir in [Direction::ToServer, Direction::ToClient] {
                        parse_tls(&mut state, &mut self.pending, dir, &seen[dir.index()], counters);
                    }
                }
                self.parser = Parser::Tls(state);
            }
            DetectStatus::Detected(p) => {
                counters.flows_other += 1;
                self.proto = Some(p);
                self.parser = Parser::Idle;
            }
        }
    }

    /// One UDP datagram of the flow: protocol detection on it (DNS only over UDP), then
    /// the parser; the message's transaction waits for inspection on this same packet.
    pub(crate) fn on_datagram(&mut self, dir: Direction, datagram: &[u8], ports: (u16, u16), counters: &mut AppCounters) {
        if let Parser::Probing { detector, .. } = &mut self.parser {
            // Datagrams stand alone: nothing is kept for replay.
            match detector.on_data_with(Transport::Udp, dir, datagram, ports, &self.detection_ports) {
                DetectStatus::Pending => return,
                DetectStatus::Failed => {
                    self.parser = Parser::Idle;
                    return;
                }
                DetectStatus::Detected(AppProto::Dns) => {
                    self.proto = Some(AppProto::Dns);
                    self.parser = Parser::Dns(Box::new(DnsFlow::new(false, &mut counters.dns)));
                }
                DetectStatus::Detected(p) => {
                    counters.flows_other += 1;
                    self.proto = Some(p);
                    self.parser = Parser::Idle;
                    return;
                }
            }
        }
        if let Parser::Dns(p) = &mut self.parser {
            let pending = &mut self.pending;
            p.on_datagram(dir, datagram, &mut counters.dns, &mut |d, tx| queue_pending(pending, d, tx, &mut counters.pending_dropped));
        }
    }

    /// The next transaction of `dir` waiting for inspection.
    pub(crate) fn take_pending(&mut self, dir: Direction) -> Option<u64> {
        let q = &mut self.pending[dir.index()];
        (!q.is_empty()).then(|| q.remove(0))
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.pending.iter().any(|q| !q.is_empty())
    }

    #[cfg(test)]
    pub(crate) fn tx(&self, id: u64) -> Option<&HttpTx> {
        match &self.parser {
            Parser::Http(p) => p.tx(id),
            _ => None,
        }
    }

    /// Split borrow for a detection run: the transaction (if any) and the alerted set.
    pub(crate) fn view(&mut self, id: Option<u64>, dir: Direction) -> AppView<'_> {
        let tx = match (&self.parser, id) {
            (Parser::Http(p), Some(id)) => p.tx(id).map(AppTx::Http),
            (Parser::Dns(p), Some(id)) => p.tx(id).map(AppTx::Dns),
            (Parser::Tls(st), Some(TLS_TX_ID)) => Some(AppTx::Tls(st)),
            _ => None,
        };
        let tls = match &self.parser {
            Parser::Tls(st) => Some(&**st),
            _ => None,
        };
        AppView { proto: self.proto, tx: tx.map(|t| (t, dir)), tls, alerted: &mut self.alerted, app_only: false }
    }

    /// Once nothing waits for inspection, finished transactions and their alert marks go.
    pub(crate) fn prune(&mut self) {
        if let Parser::Dns(p) = &mut self.parser {
            // DNS transactions are complete when parsed: all but those still waiting go.
            let keep_from = self.pending.iter().flatten().copied().min().unwrap_or_else(|| p.next_tx_id());
            p.free_below(keep_from);
            self.alerted.retain(|&(tx, _)| tx >= keep_from);
            return;
        }
        if self.has_pending() {
            return;
        }
        if let Parser::Http(p) = &mut self.parser {
            p.prune_completed();
            if let Some(first) = p.txs().next().map(|t| t.id) {
                self.alerted.retain(|&(tx, _)| tx >= first);
            } else {
                self.alerted.clear();
            }
        }
    }
}

/// Feeds TLS bytes of `dir`; the session is due for inspection in `dir` when its handshake
/// in that direction moved on (a hello or certificates parsed).
fn parse_tls(st: &mut TlsState, pending: &mut [Vec<u64>; 2], dir: Direction, data: &[u8], counters: &mut AppCounters) {
    if data.is_empty() {
        return;
    }
    let before = TlsProgress::of(st, dir);
    st.parse(dir, data, &mut counters.tls);
    if TlsProgress::of(st, dir) != before {
        queue_pending(pending, dir, TLS_TX_ID, &mut counters.pending_dropped);
    }
}

fn note_event(pending: &mut [Vec<u64>; 2], ev: HttpEvent, counters: &mut AppCounters) {
    let (dir, tx) = match ev {
        HttpEvent::RequestLine { tx } => {
            counters.http_tx += 1;
            (Direction::ToServer, tx)
        }
        HttpEvent::RequestHeaders { tx } | HttpEvent::RequestComplete { tx } => (Direction::ToServer, tx),
        HttpEvent::ResponseLine { tx } | HttpEvent::ResponseHeaders { tx } | HttpEvent::ResponseComplete { tx } => {
            (Direction::ToClient, tx)
        }
        // Body data does not queue the transaction: re-inspecting a growing body on every
        // packet is quadratic. Bodies are inspected whole when the message completes (or
        // the flow ends); Suricata inspects them in windows as they arrive.
        HttpEvent::RequestBodyData { .. } | HttpEvent::ResponseBodyData { .. } => return,
        HttpEvent::Anomaly { .. } => {
            counters.http_anomalies += 1;
            return;
        }
    };
    queue_pending(pending, dir, tx, &mut counters.pending_dropped);
}

/// Queues `tx` for inspection on the next packet of `dir` (once; the oldest goes past
/// `MAX_PENDING`, counted in `dropped`).
fn queue_pending(pending: &mut [Vec<u64>; 2], dir: Direction, tx: u64, dropped: &mut u64) {
    let q = &mut pending[dir.index()];
    if q.contains(&tx) {
        return;
    }
    if q.len() >= MAX_PENDING {
        q.remove(0);
        *dropped += 1;
    }
    q.push(tx);
}

/// A transaction of whichever protocol the flow speaks.

/// What a detection run knows of the flow's app layer.
pub(crate) struct AppView<'a> {
    pub proto: Option<AppProto>,
    /// The transaction inspected by this run and the packet's direction.
    pub tx: Option<(AppTx<'a>, Direction)>,
    /// The flow's TLS session, logged with every alert of the flow as Suricata does.
    pub tls: Option<&'a TlsState>,
    alerted: &'a mut Vec<(u64, u32)>,
    /// An extra run for a further transaction: only transaction rules may alert.
    pub app_only: bool,
}

impl AppView<'_> {
    /// Whether an alert of `sid` on this run's transaction is new; remembers it.
    pub(crate) fn first_alert(&mut self, sid: u32, counters: &mut AppCounters) -> bool {
        let Some((tx, _)) = self.tx else { return true };
        let id = tx.id();
        if self.alerted.contains(&(id, sid)) {
            return false;
        }
        if self.alerted.len() >= MAX_ALERTED {
            self.alerted.remove(0);
            counters.alerted_forgotten += 1;
        }
        self.alerted.push((id, sid));
        true
    }
}

/// One transaction of whichever protocol the flow speaks.
#[derive(Clone, Copy)]
pub enum AppTx<'a> {
    Http(&'a HttpTx),
    Dns(&'a DnsTransaction),
    /// A TLS session is its own (only) transaction.
    Tls(&'a TlsState),
}

impl AppTx<'_> {
    /// The transaction's number in its flow (eve's `tx_id`).
    pub fn id(&self) -> u64 {
        match self {
            AppTx::Http(t) => t.id,
            AppTx::Dns(t) => t.tx_id,
            AppTx::Tls(_) => TLS_TX_ID,
        }
    }
}

/// The inspection buffers of one transaction of any protocol.
pub(crate) enum AppBuffers<'a> {
    Http(TxBuffers<'a>),
    Dns(DnsTxBuffers<'a>),
    Tls(TlsBuffers<'a>),
}

impl<'a> AppBuffers<'a> {
    pub(crate) fn new(tx: AppTx<'a>, dir: Direction) -> Self {
        match tx {
            AppTx::Http(t) => AppBuffers::Http(TxBuffers::new(t, dir)),
            AppTx::Dns(t) => AppBuffers::Dns(DnsTxBuffers::new(t, dir)),
            AppTx::Tls(t) => AppBuffers::Tls(TlsBuffers::new(t, dir)),
        }
    }

    pub(crate) fn source(&self) -> &dyn BufferSource {
        match self {
            AppBuffers::Http(b) => b,
            AppBuffers::Dns(b) => b,
            AppBuffers::Tls(b) => b,
        }
    }
}

/// The inspection buffers of one transaction seen from one direction.
pub(crate) struct TxBuffers<'a> {
    tx: &'a HttpTx,
    dir: Direction,
    header: Vec<u8>,
    header_names: Vec<u8>,
    start: Vec<u8>,
    /// `http.request_header` / `http.response_header` instances ("Name: value" per header),
    /// built on first use: most rule sets never ask for them.
    header_lines: [std::cell::OnceCell<HeaderLines>; 2],
}

/// One message's headers as "Name: value" lines, concatenated, with each line's end.
#[derive(Default)]
struct HeaderLines {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl HeaderLines {
    fn build(headers: &[crate::applayer::http::Header]) -> HeaderLines {
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
        let mut b = TxBuffers {
            tx,
            dir,
            header: Vec::new(),
            header_names: Vec::new(),
            start: Vec::new(),
            header_lines: Default::default(),
        };
        if b.headers_done() {
            tx.header_buffer(dir, &mut b.header);
            tx.header_names_buffer(dir, &mut b.header_names);
            tx.start_buffer(dir, &mut b.start);
        }
        b
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
            "http.header" if headers => non_empty(&self.header),
            "http.header_names" if headers => non_empty(&self.header_names),
            "http.start" if headers => non_empty(&self.start),
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
        let p = parse(b"GET /a%2fb?x=1 HTTP/1.1\r\nHost: Example.COM:8080\r\nUser-Agent: ua\r\nCookie: c=1\r\n\r\n", b"");
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

    #[test]
    fn http_config_reaches_the_parser() {
        // A body limit of 4 bytes: the parser created on detection must use it.
        let cfg = HttpConfig { response_body_limit: 4, ..HttpConfig::default() };
        let mut app = AppLayer::new(Arc::new(cfg), Arc::new(DetectionPorts::default()));
        let mut c = AppCounters::default();
        app.on_data(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n", (40000, 80), &mut c);
        app.on_data(Direction::ToClient, b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", (40000, 80), &mut c);
        assert_eq!(app.tx(0).map(|t| t.response_body.as_slice()), Some(&b"0123"[..]));
    }

    #[test]
    fn probing_then_parsing_queues_transactions() {
        let mut app = AppLayer::default();
        let mut c = AppCounters::default();
        app.on_data(Direction::ToServer, b"GE", (40000, 80), &mut c);
        assert_eq!(app.proto, None);
        app.on_data(Direction::ToServer, b"T /x HTTP/1.0\r\n\r\n", (40000, 80), &mut c);
        assert_eq!(app.proto, Some(AppProto::Http));
        assert_eq!(app.take_pending(Direction::ToServer), Some(0));
        assert_eq!(app.take_pending(Direction::ToServer), None);
        assert_eq!(app.tx(0).map(|t| t.uri_raw.as_slice()), Some(&b"/x"[..]));
        let mut view = app.view(Some(0), Direction::ToServer);
        assert!(view.first_alert(7, &mut c));
        assert!(!view.first_alert(7, &mut c), "one alert per tx and sid");
        assert!(view.first_alert(8, &mut c));
    }

    #[test]
    fn tls_session_is_one_transaction_queued_per_direction() {
        use crate::applayer::tls::tests::{client_stream, server_stream};
        let mut app = AppLayer::default();
        let mut c = AppCounters::default();
        let client = client_stream();
        // Split inside the ClientHello: probing keeps the bytes and replays them.
        app.on_data(Direction::ToServer, &client[..3], (40000, 443), &mut c);
        app.on_data(Direction::ToServer, &client[3..], (40000, 443), &mut c);
        assert_eq!(app.proto, Some(AppProto::Tls));
        assert_eq!((c.flows_tls, c.tls_tx), (1, 1));
        assert_eq!(app.take_pending(Direction::ToServer), Some(TLS_TX_ID));
        assert_eq!(app.take_pending(Direction::ToClient), None, "nothing from the server yet");
        let view = app.view(Some(TLS_TX_ID), Direction::ToServer);
        assert!(matches!(view.tx, Some((AppTx::Tls(st), Direction::ToServer)) if st.sni() == Some(&b"example.com"[..])));
        app.on_data(Direction::ToClient, &server_stream(), (40000, 443), &mut c);
        assert_eq!(app.take_pending(Direction::ToClient), Some(TLS_TX_ID));
        assert!(!app.has_pending());
        let mut view = app.view(Some(TLS_TX_ID), Direction::ToClient);
        assert!(view.tls.is_some_and(|st| st.certificates(Direction::ToClient).len() == 2));
        assert!(view.first_alert(5, &mut c));
        let mut view = app.view(Some(TLS_TX_ID), Direction::ToServer);
        assert!(!view.first_alert(5, &mut c), "one alert per session and sid, whatever the direction");
        // Encrypted records afterwards change nothing inspection sees.
        app.on_data(Direction::ToClient, &[23, 3, 3, 0, 2, 0xaa, 0xbb], (40000, 443), &mut c);
        assert!(!app.has_pending());
        assert!(app.view(None, Direction::ToClient).tx.is_none());
    }

    #[test]
    fn non_http_goes_idle() {
        let mut app = AppLayer::default();
        let mut c = AppCounters::default();
        app.on_data(Direction::ToClient, b"SSH-2.0-x\r\n", (40000, 22), &mut c);
        assert_eq!(app.proto, Some(AppProto::Ssh));
        app.on_data(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n", (40000, 22), &mut c);
        assert!(!app.has_pending());
    }
}
