//! The application layer of a TCP flow: protocol detection on the first bytes of each
//! direction, then the protocol's parser, fed from the reassembled stream.
//!
//! Detection of a transaction happens on a packet of the direction whose progress changed:
//! request buffers on to-server packets, response buffers (plus the request's) on to-client
//! packets. In IDS mode the stream hands request bytes over only once the server acked them,
//! so a request is parsed while handling a to-client packet and inspected on the next
//! to-server packet (or at flow end), as in Suricata.

use crate::applayer::dns::buffers::{DnsAppCounters, DnsFlow, DnsTxBuffers};
use crate::applayer::dns::DnsTransaction;
use crate::applayer::http::buffers::TxBuffers;
use crate::applayer::http::{HttpConfig, HttpEvent, HttpParser, HttpTx};
use crate::applayer::probe::{AppProto, DetectStatus, DetectionPorts, ProtoDetector, Transport};
use crate::applayer::tls::{TlsConfig, TlsCounters, TlsState};
use std::sync::Arc;
use crate::detect::engine::BufferSource;
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

#[cfg(test)]
mod tests {
    use super::*;

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
