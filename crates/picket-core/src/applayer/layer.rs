//! The application layer of a flow: protocol detection on the first bytes of each
//! direction, then the protocol's [`AppParser`], fed from the reassembled stream (or with
//! each UDP datagram).
//!
//! Detection of a transaction happens on a packet of the direction whose progress changed:
//! request buffers on to-server packets, response buffers (plus the request's) on to-client
//! packets. In IDS mode the stream hands request bytes over only once the server acked them,
//! so a request is parsed while handling a to-client packet and inspected on the next
//! to-server packet (or at flow end), as in Suricata.

use crate::applayer::http::BodyMemory;
use crate::applayer::http::HttpConfig;
use crate::applayer::probe::{self, DetectStatus, DetectionPorts, ProbeResult, ProtoDetector, Transport};
use crate::applayer::tls::TlsState;
use crate::applayer::{dns, http, smtp, ssh, tls, AppCounters, AppCtx, AppParser, AppProto, AppTx, Pending};
use crate::stream::{AppData, Direction, ReassemblyMemory, TcpReassembly};
use std::sync::Arc;

/// Bytes per direction looked at (and kept for replay into the parser) while probing.
const PROBE_LIMIT: usize = 4096;
/// (transaction, sid) pairs remembered per flow to alert once per transaction and rule.
const MAX_ALERTED: usize = 512;

enum State {
    Probing {
        detector: ProtoDetector,
        /// Bytes seen so far per direction, replayed into the parser once detected.
        seen: [Vec<u8>; 2],
        /// A gap or the probe limit cut the direction: its later bytes are not kept.
        cut: [bool; 2],
    },
    /// The detected protocol's parser. A trait object: it is called a few times per stream
    /// chunk or datagram, where a virtual call costs nothing measurable.
    Parsing(Box<dyn AppParser>),
    /// Detected as something without a parser here, or detection failed.
    Idle,
}

/// Per-flow app-layer state (boxed in `FlowExt`, created with the flow's stream).
pub struct AppLayer {
    state: State,
    pub proto: Option<AppProto>,
    /// Transactions whose progress changed since last inspected, per direction.
    pending: Pending,
    /// (tx, sid) that already alerted; oldest forgotten first past `MAX_ALERTED`.
    alerted: Vec<(u64, u32)>,
    /// Ports on which port-recognised protocols (DNS) are probed, shared by the worker.
    detection_ports: Arc<DetectionPorts>,
    /// libhtp settings for the HTTP parser this flow gets once detected (shared per run).
    http_config: Arc<HttpConfig>,
    /// What the parser's capped memory (HTTP bodies) was when last charged to the worker's
    /// [`AppCounters::http_mem`]; given back when the flow ends ([`AppLayer::release`]).
    charged: BodyMemory,
    /// What each direction's own first bytes were recognised as, over TCP (Suricata's
    /// `alproto_ts` and `alproto_tc`, which eve's flow record shows where they differ from
    /// the flow's protocol).
    dir_protos: [DirProto; 2],
    /// The protocol detected first when the parser changed it (eve's `app_proto_orig`).
    proto_orig: Option<AppProto>,
    /// [`AppLayer::charged_bytes`] as last computed by [`AppLayer::charged_bytes_cached`];
    /// `None` once something it counts may have changed. The figure is read on every packet
    /// of the flow, most of which change nothing here (acknowledgements, data not released
    /// yet); computing it walks every transaction's headers (1.3% of the reference run).
    charged_cache: Option<u64>,
    /// The first transaction kept after the last prune, to tell whether a prune freed any.
    first_live: Option<u64>,
}

/// The protocol one direction of a TCP flow was recognised as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirProto {
    /// Not decided (no data, or too little).
    #[default]
    Unknown,
    Detected(AppProto),
    /// The direction's bytes matched no protocol (eve's `"failed"`).
    Failed,
}

impl Default for AppLayer {
    fn default() -> Self {
        AppLayer::new(Arc::new(HttpConfig::default()), Arc::new(DetectionPorts::default()))
    }
}

impl AppLayer {
    /// Where the protocol parser's state lies (start, length), once detected: to load it
    /// ahead of the flow's next packet.
    pub fn parser_extent(&self) -> Option<(*const u8, usize)> {
        match &self.state {
            State::Parsing(parser) => {
                let parser: &dyn AppParser = &**parser;
                Some(((parser as *const dyn AppParser).cast(), std::mem::size_of_val(parser)))
            }
            _ => None,
        }
    }

    pub(crate) fn new(http_config: Arc<HttpConfig>, detection_ports: Arc<DetectionPorts>) -> Self {
        AppLayer {
            state: State::Probing {
                detector: ProtoDetector::new(PROBE_LIMIT),
                seen: Default::default(),
                cut: [false; 2],
            },
            proto: None,
            pending: Pending::default(),
            alerted: Vec::new(),
            detection_ports,
            http_config,
            charged: BodyMemory { room: 0, ..BodyMemory::default() },
            dir_protos: Default::default(),
            proto_orig: None,
            charged_cache: None,
            first_live: None,
        }
    }

    /// Grants the parser the room left under the worker's HTTP memcap before it is fed.
    fn grant_room(&mut self, counters: &AppCounters) {
        if let State::Parsing(p) = &mut self.state {
            p.set_capped_room(counters.http_mem.room());
        }
    }

    /// Charges what the parser's capped memory changed by since the last call.
    fn charge(&mut self, counters: &mut AppCounters) {
        let State::Parsing(p) = &self.state else { return };
        let Some(now) = p.capped_memory() else { return };
        let m = &mut counters.http_mem;
        m.memuse = m.memuse - self.charged.held + now.held;
        m.refusals += now.refusals - self.charged.refusals;
        m.refused_bytes += now.refused_bytes - self.charged.refused_bytes;
        self.charged = now;
    }

    /// The flow moves to another worker: its capped memory leaves this worker's count
    /// ([`AppLayer::charge_to`] adds it to the next one's).
    pub(crate) fn uncharge_from(&self, counters: &mut AppCounters) {
        counters.http_mem.memuse -= self.charged.held;
    }

    /// The flow arrives from another worker: its capped memory counts here.
    pub(crate) fn charge_to(&self, counters: &mut AppCounters) {
        counters.http_mem.memuse += self.charged.held;
    }

    /// The flow ends: its capped memory goes back to the worker.
    pub(crate) fn release(&mut self, counters: &mut AppCounters) {
        counters.http_mem.memuse -= self.charged.held;
        self.charged.held = 0;
    }

    /// Heap of the flow's app-layer state outside the protocols' own memcaps: this struct,
    /// what probing keeps, the queues, the parser's state. Charged to `flow.memcap`.
    pub fn heap_bytes(&self) -> u64 {
        let own = std::mem::size_of::<AppLayer>()
            + self.alerted.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.pending.heap_bytes();
        let state = match &self.state {
            State::Probing { seen, .. } => seen.iter().map(Vec::capacity).sum::<usize>() as u64,
            State::Parsing(p) => p.heap_bytes(),
            State::Idle => 0,
        };
        own as u64 + state
    }

    /// [`AppLayer::charged_bytes`], computed again only after a change that may move it
    /// (data or a gap parsed, a datagram, the flow's close, a prune that freed
    /// transactions, an alert remembered).
    pub(crate) fn charged_bytes_cached(&mut self) -> u64 {
        match self.charged_cache {
            Some(bytes) => bytes,
            None => {
                let bytes = self.charged_bytes();
                self.charged_cache = Some(bytes);
                bytes
            }
        }
    }

    /// The part of [`AppLayer::heap_bytes`] charged to `flow.memcap`: what grows with the
    /// traffic (buffers, transactions and their headers, queues, what probing keeps), not
    /// the fixed-size structures every flow with an app layer has (this struct and the
    /// parser's own). Those are bounded by the number of flows, which `flow.memcap` bounds
    /// through the flow slot, as Suricata's flow memcap covers its flows and not their
    /// app-layer state; charging them as well made an ordinary capture with 40k concurrent
    /// flows evict flows that Suricata keeps.
    pub fn charged_bytes(&self) -> u64 {
        let parser = match &self.state {
            State::Parsing(p) => std::mem::size_of_val(&**p),
            State::Probing { .. } | State::Idle => 0,
        };
        self.heap_bytes().saturating_sub((std::mem::size_of::<AppLayer>() + parser) as u64)
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
            if self.pending.take_raw_due(dir) {
                stream.trigger_raw(dir);
            }
        }
        // Once detection no longer reads the stream, bytes the parser would discard unseen
        // need not be kept (see `TcpReassembly::app_skip`).
        if let (true, State::Parsing(p)) = (stream.raw_disabled(), &mut self.state) {
            let len = p.skippable(dir);
            if len > 0 && stream.app_skip(dir, len, mem) {
                self.charged_cache = None;
                p.skip(dir, len);
            }
        }
    }

    /// End of the flow: messages that run until close are complete now.
    pub(crate) fn close(&mut self, counters: &mut AppCounters) {
        self.charged_cache = None;
        self.grant_room(counters);
        if let State::Parsing(p) = &mut self.state {
            p.on_close(&mut AppCtx::new(&mut self.pending, counters));
        }
        self.charge(counters);
    }

    fn on_data(&mut self, dir: Direction, data: &[u8], ports: (u16, u16), counters: &mut AppCounters) {
        self.charged_cache = None;
        self.grant_room(counters);
        self.parse_data(dir, data, ports, counters);
        self.charge(counters);
    }

    fn parse_data(&mut self, dir: Direction, data: &[u8], ports: (u16, u16), counters: &mut AppCounters) {
        if self.proto.is_some() && self.dir_protos[dir.index()] == DirProto::Unknown {
            self.probe_other_direction(dir, data, ports);
        }
        match &mut self.state {
            State::Parsing(p) => {
                p.on_data(dir, data, &mut AppCtx::new(&mut self.pending, counters));
                if let Some(new) = p.proto_change().filter(|&new| Some(new) != self.proto) {
                    self.proto_orig = self.proto_orig.or(self.proto);
                    self.proto = Some(new);
                }
                // Only when HTTP/2 is enabled (`app-layer.protocols.http2.enabled`);
                // otherwise the HTTP/1 parser just stops at the 101.
                if self.detection_ports.others.tcp_enabled(AppProto::Http2) {
                    if let Some(up) = p.h2c_upgrade() {
                        self.switch_to_http2(up, counters);
                    }
                }
            }
            State::Idle => {}
            State::Probing { detector, seen, cut } => {
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
                if let DetectStatus::Detected(_) = status {
                    self.dir_protos =
                        [Direction::ToServer, Direction::ToClient].map(|dir| match detector.verdict(dir) {
                            None => DirProto::Unknown,
                            Some(Ok(p)) => DirProto::Detected(p),
                            Some(Err(())) => DirProto::Failed,
                        });
                }
                self.on_status(status, counters);
            }
        }
    }

    /// The flow's protocol is known, and `dir` starts with `data` now: what its own bytes
    /// are is probed once more per chunk until decided (only the first chunk or two of a
    /// direction), for eve's `app_proto_ts`/`app_proto_tc`.
    fn probe_other_direction(&mut self, dir: Direction, data: &[u8], ports: (u16, u16)) {
        let window = &data[..data.len().min(PROBE_LIMIT)];
        self.dir_protos[dir.index()] =
            match probe::probe_with(Transport::Tcp, dir, window, ports, &self.detection_ports) {
                ProbeResult::Detected(p) => DirProto::Detected(p),
                ProbeResult::Unknown => DirProto::Failed,
                ProbeResult::NeedMore if window.len() >= PROBE_LIMIT => DirProto::Failed,
                ProbeResult::NeedMore => DirProto::Unknown,
            };
    }

    /// HTTP/1.1 upgraded to HTTP/2 (`Upgrade: h2c`): the HTTP/2 parser takes over the
    /// flow, with the HTTP/1 transactions still waiting; the flow is `http2` from now on
    /// (`app_proto_orig` `http`), as in Suricata.
    fn switch_to_http2(&mut self, up: crate::applayer::http::upgrade::H2cUpgrade, counters: &mut AppCounters) {
        // The HTTP/1 parser's bodies left the memcap with it.
        counters.http_mem.memuse -= self.charged.held;
        self.charged = BodyMemory { room: 0, ..BodyMemory::default() };
        let cx = &mut AppCtx::new(&mut self.pending, counters);
        let parser = crate::applayer::http2::flow::upgraded_flow(up, *self.http_config, cx);
        self.proto_orig = self.proto_orig.or(self.proto);
        self.proto = Some(AppProto::Http2);
        self.state = State::Parsing(parser);
    }

    /// The protocol first detected, when the parser changed the flow's (eve's
    /// `app_proto_orig`).
    pub fn proto_orig(&self) -> Option<AppProto> {
        self.proto_orig
    }

    /// What `dir`'s own bytes were recognised as, over TCP.
    pub fn dir_proto(&self, dir: Direction) -> DirProto {
        self.dir_protos[dir.index()]
    }

    fn on_gap(&mut self, dir: Direction, len: u64, counters: &mut AppCounters) {
        self.charged_cache = None;
        self.grant_room(counters);
        self.parse_gap(dir, len, counters);
        self.charge(counters);
    }

    fn parse_gap(&mut self, dir: Direction, len: u64, counters: &mut AppCounters) {
        match &mut self.state {
            State::Parsing(p) => p.on_gap(dir, len, &mut AppCtx::new(&mut self.pending, counters)),
            State::Idle => {}
            State::Probing { detector, seen, cut } => {
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

    /// Detection over TCP moved on: once it decided, the parser (if any) gets the bytes
    /// seen while probing.
    fn on_status(&mut self, status: DetectStatus, counters: &mut AppCounters) {
        match status {
            DetectStatus::Pending => {}
            DetectStatus::Failed => self.state = State::Idle,
            DetectStatus::Detected(proto) => {
                self.proto = Some(proto);
                let old = std::mem::replace(&mut self.state, State::Idle);
                let cx = &mut AppCtx::new(&mut self.pending, counters);
                if let Some(mut parser) = new_parser(proto, Transport::Tcp, &self.http_config, cx) {
                    parser.set_capped_room(cx.counters.http_mem.room());
                    if let State::Probing { seen, .. } = old {
                        for dir in [Direction::ToServer, Direction::ToClient] {
                            parser.on_data(dir, &seen[dir.index()], cx);
                        }
                    }
                    self.state = State::Parsing(parser);
                }
            }
        }
    }

    /// One UDP datagram of the flow: protocol detection on it (DNS only over UDP), then
    /// the parser; the message's transaction waits for inspection on this same packet.
    pub(crate) fn on_datagram(
        &mut self,
        dir: Direction,
        datagram: &[u8],
        ports: (u16, u16),
        counters: &mut AppCounters,
    ) {
        self.charged_cache = None;
        let cx = &mut AppCtx::new(&mut self.pending, counters);
        if let State::Probing { detector, .. } = &mut self.state {
            // Datagrams stand alone: nothing is kept for replay.
            match detector.on_data_with(Transport::Udp, dir, datagram, ports, &self.detection_ports) {
                DetectStatus::Pending => return,
                DetectStatus::Failed => {
                    self.state = State::Idle;
                    return;
                }
                DetectStatus::Detected(proto) => {
                    self.proto = Some(proto);
                    let Some(parser) = new_parser(proto, Transport::Udp, &self.http_config, cx) else {
                        self.state = State::Idle;
                        return;
                    };
                    self.state = State::Parsing(parser);
                }
            }
        }
        if let State::Parsing(p) = &mut self.state {
            p.set_capped_room(cx.counters.http_mem.room());
            p.on_datagram(dir, datagram, cx);
        }
        self.charge(counters);
    }

    /// The next transaction of `dir` waiting for inspection.
    pub(crate) fn take_pending(&mut self, dir: Direction) -> Option<u64> {
        self.pending.take(dir)
    }

    #[cfg(test)]
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The next transaction done and not reported yet.
    pub(crate) fn take_done(&mut self) -> Option<u64> {
        self.pending.take_done()
    }

    /// The next parser anomaly not reported yet.
    pub(crate) fn take_anomaly(&mut self) -> Option<super::AppAnomaly> {
        self.pending.take_anomaly()
    }

    /// Transactions the flow's parser had so far (eve flow's `tx_cnt`); 0 without one.
    pub fn tx_count(&self) -> u64 {
        match &self.state {
            State::Parsing(p) => p.tx_count(),
            _ => 0,
        }
    }

    /// Protocol detection gave up on the flow (Suricata's `app_proto: "failed"`): neither
    /// direction looked like a protocol picket knows.
    pub fn detection_failed(&self) -> bool {
        matches!(self.state, State::Idle) && self.proto.is_none()
    }

    pub(crate) fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        match &self.state {
            State::Parsing(p) => p.tx(id),
            _ => None,
        }
    }

    /// The flow's TLS session, if the flow is TLS (checked first: the bypass and
    /// encryption checks ask on every packet of every flow).
    fn tls_session(&self) -> Option<&TlsState> {
        match (&self.state, self.proto) {
            (State::Parsing(p), Some(AppProto::Tls)) => match p.flow_tx() {
                Some(AppTx::Tls(st)) => Some(st),
                _ => None,
            },
            _ => None,
        }
    }

    /// The flow is TLS and both directions switched to encrypted records (what Suricata's
    /// `encryption-handling: bypass` acts on).
    pub fn tls_handshake_done(&self) -> bool {
        self.tls_session().is_some_and(|st| st.handshake_done())
    }

    /// The flow is TLS and application data flowed (what Suricata's TLS `encryption-handling:
    /// track-only` acts on).
    pub fn tls_application_data(&self) -> bool {
        self.tls_session().is_some_and(|st| st.application_data_seen())
    }

    /// The flow is SSH and both sides sent NEWKEYS: what follows is encrypted (what
    /// Suricata's SSH `encryption-handling` acts on).
    pub fn ssh_keys_exchanged(&self) -> bool {
        match (&self.state, self.proto) {
            (State::Parsing(p), Some(AppProto::Ssh)) => {
                matches!(p.tx(crate::applayer::SSH_TX_ID), Some(AppTx::Ssh(st)) if st.complete())
            }
            _ => false,
        }
    }

    /// Split borrow for a detection run: the transaction (if any) and the alerted set.
    pub(crate) fn view(&mut self, id: Option<u64>, dir: Direction) -> AppView<'_> {
        let (tx, tls) = match &self.state {
            State::Parsing(p) => {
                let tls = match p.flow_tx() {
                    Some(AppTx::Tls(st)) => Some(st),
                    _ => None,
                };
                (id.and_then(|id| p.tx(id)), tls)
            }
            _ => (None, None),
        };
        AppView {
            proto: self.proto,
            tx: tx.map(|t| (t, dir)),
            tls,
            alerted: &mut self.alerted,
            charged_cache: &mut self.charged_cache,
            app_only: false,
            anomalies: self.pending.anomalies(),
        }
    }

    /// Finished transactions and their alert marks go (each protocol knows which are); the
    /// memory they held goes back to the worker's caps.
    pub(crate) fn prune(&mut self, counters: &mut AppCounters) {
        if let State::Parsing(p) = &mut self.state {
            if let Some(first_live) = p.prune(&self.pending) {
                self.alerted.retain(|&(tx, _)| tx >= first_live);
                // Parsers prune from the front: the first kept transaction moves when any
                // went.
                if self.first_live.replace(first_live) != Some(first_live) {
                    self.charged_cache = None;
                }
            }
        }
        self.charge(counters);
    }
}

/// The parser of a flow detected as `proto` over `transport`, counted as a flow of the
/// protocol; `None` (counted as other) for protocols without a parser here.
fn new_parser(
    proto: AppProto,
    transport: Transport,
    http_config: &HttpConfig,
    cx: &mut AppCtx<'_>,
) -> Option<Box<dyn AppParser>> {
    let parser = match (proto, transport) {
        (AppProto::Http, Transport::Tcp) => http::flow::new_flow(*http_config, cx),
        (AppProto::Tls, Transport::Tcp) => tls::flow::new_flow(cx),
        (AppProto::Dns, _) => dns::flow::new_flow(transport, cx),
        (AppProto::Ssh, Transport::Tcp) => ssh::flow::new_flow(cx),
        (AppProto::Smtp, Transport::Tcp) => smtp::flow::new_flow(http_config.smtp, http_config.files, cx),
        (AppProto::Http2, Transport::Tcp) => crate::applayer::http2::flow::new_flow(*http_config, cx),
        _ => {
            cx.counters.flows_other += 1;
            return None;
        }
    };
    Some(parser)
}

/// What a detection run knows of the flow's app layer.
pub(crate) struct AppView<'a> {
    pub proto: Option<AppProto>,
    /// The transaction inspected by this run and the packet's direction.
    pub tx: Option<(AppTx<'a>, Direction)>,
    /// The flow's TLS session, logged with every alert of the flow as Suricata does.
    pub tls: Option<&'a TlsState>,
    alerted: &'a mut Vec<(u64, u32)>,
    /// The app layer's [`AppLayer::charged_bytes_cached`], which `alerted` counts in.
    charged_cache: &'a mut Option<u64>,
    /// An extra run for a further transaction: only transaction rules may alert.
    pub app_only: bool,
    /// The app-layer anomalies raised since the last packet (all transactions).
    pub anomalies: &'a [super::AppAnomaly],
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
        *self.charged_cache = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applayer::http::HttpTx;
    use crate::applayer::tls::buffers::TLS_TX_ID;

    fn http_tx(app: &AppLayer, id: u64) -> Option<&HttpTx> {
        match app.tx(id) {
            Some(AppTx::Http(tx)) => Some(tx),
            _ => None,
        }
    }

    /// eve flow's `tx_cnt` and `app_proto: "failed"` come from here.
    #[test]
    fn transaction_count_and_failed_detection() {
        let mut app = AppLayer::default();
        let mut c = AppCounters::default();
        assert_eq!((app.tx_count(), app.detection_failed()), (0, false));
        for _ in 0..3 {
            app.on_data(Direction::ToServer, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", (40000, 80), &mut c);
        }
        assert_eq!((app.tx_count(), app.detection_failed()), (3, false));
        let mut other = AppLayer::default();
        other.on_data(Direction::ToServer, &[0u8; 64], (40000, 9999), &mut c);
        other.on_data(Direction::ToClient, &[0xffu8; 64], (40000, 9999), &mut c);
        other.parse_gap(Direction::ToServer, 10, &mut c);
        other.parse_gap(Direction::ToClient, 10, &mut c);
        assert!(other.detection_failed() && other.tx_count() == 0);
    }

    #[test]
    fn http_config_reaches_the_parser() {
        // A body limit of 4 bytes: the parser created on detection must use it.
        let cfg = HttpConfig { response_body_limit: 4, ..HttpConfig::default() };
        let mut app = AppLayer::new(Arc::new(cfg), Arc::new(DetectionPorts::default()));
        let mut c = AppCounters::default();
        app.on_data(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n", (40000, 80), &mut c);
        app.on_data(
            Direction::ToClient,
            b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
            (40000, 80),
            &mut c,
        );
        assert_eq!(http_tx(&app, 0).map(|t| t.response_body.as_slice()), Some(&b"0123"[..]));
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
        assert_eq!(http_tx(&app, 0).map(|t| t.uri_raw.as_slice()), Some(&b"/x"[..]));
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
        assert!(
            matches!(view.tx, Some((AppTx::Tls(st), Direction::ToServer)) if st.sni() == Some(&b"example.com"[..]))
        );
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

    /// A POST of `body_len` bytes whose response never comes.
    fn unanswered_post(app: &mut AppLayer, body_len: usize, c: &mut AppCounters) {
        let head = format!("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {body_len}\r\n\r\n");
        app.on_data(Direction::ToServer, head.as_bytes(), (40000, 80), c);
        for chunk in vec![b'A'; body_len].chunks(1460) {
            app.on_data(Direction::ToServer, chunk, (40000, 80), c);
        }
    }

    /// An HTTP flow idle after an exchange with large headers charges `flow.memcap` for what
    /// it still holds (one transaction's lines and headers), not for line buffers sized for
    /// the headers it parsed nor for empty transaction slots: 40k such flows fit the
    /// default 32 MiB with their flow slots.
    #[test]
    fn idle_http_flow_charges_what_it_still_holds() {
        let mut c = AppCounters::default();
        let mut app = AppLayer::default();
        let cookie = "k".repeat(3000);
        let request = format!("GET /a HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n");
        app.on_data(Direction::ToServer, request.as_bytes(), (40000, 80), &mut c);
        let response = format!("HTTP/1.1 200 OK\r\nSet-Cookie: {cookie}\r\nContent-Length: 2\r\n\r\nok");
        app.on_data(Direction::ToClient, response.as_bytes(), (40000, 80), &mut c);
        let tx = http_tx(&app, 0).expect("transaction kept until inspected");
        let tx_heap = tx.heap_bytes_without_bodies();
        assert!(tx_heap >= 6000, "the headers are held: {tx_heap}");
        // The transaction itself, its headers, and a little bookkeeping: no 3 KB line buffer
        // per direction, no three empty 650-byte transaction slots.
        let charged = app.charged_bytes();
        assert!(charged >= tx_heap + std::mem::size_of::<HttpTx>() as u64, "{charged}");
        assert!(charged <= tx_heap + std::mem::size_of::<HttpTx>() as u64 + 1024, "{charged} vs {tx_heap}");
    }

    /// The cached flow.memcap figure follows every change that moves it: parsed data, a
    /// remembered alert, a prune that freed a transaction; and stays put when nothing
    /// changed.
    #[test]
    fn cached_charge_follows_the_changes_that_move_it() {
        let mut c = AppCounters::default();
        let mut app = AppLayer::default();
        let check = |app: &mut AppLayer, what: &str| {
            let cached = app.charged_bytes_cached();
            assert_eq!(cached, app.charged_bytes(), "after {what}");
            cached
        };
        let empty = check(&mut app, "nothing");
        app.on_data(Direction::ToServer, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", (40000, 80), &mut c);
        let with_request = check(&mut app, "a request");
        assert!(with_request > empty);
        assert_eq!(app.take_pending(Direction::ToServer), Some(0));
        app.prune(&mut c);
        assert_eq!(check(&mut app, "a prune that kept the transaction"), with_request);
        // Alerts remembered per transaction count too (the list grows from empty).
        let mut view = app.view(Some(0), Direction::ToServer);
        assert!(view.first_alert(7, &mut c));
        assert!(check(&mut app, "an alert") > with_request);
        let response = format!("HTTP/1.1 200 OK\r\nServer: {}\r\nContent-Length: 2\r\n\r\nok", "s".repeat(500));
        app.on_data(Direction::ToClient, response.as_bytes(), (40000, 80), &mut c);
        let with_response = check(&mut app, "a response");
        assert!(with_response > with_request + 500);
        assert_eq!(app.take_pending(Direction::ToClient), Some(0));
        // The exchange is complete and inspected: the prune frees it.
        app.prune(&mut c);
        let pruned = check(&mut app, "the prune that freed the transaction");
        assert!(pruned < with_response, "{pruned} < {with_response}");
        assert!(http_tx(&app, 0).is_none());
    }

    /// A body with a Content-Length gets its storage in one allocation of that size (up to
    /// the body limit), charged in full from its first bytes.
    #[test]
    fn a_content_length_body_is_stored_without_regrowing() {
        let mut c = AppCounters::default();
        let mut app = AppLayer::default();
        unanswered_post(&mut app, 10_000, &mut c);
        let tx = http_tx(&app, 0).expect("transaction");
        assert_eq!((tx.request_body.len(), tx.request_body.capacity()), (10_000, 10_000));
        assert_eq!(c.http_mem.memuse, 10_000);
        // A claimed length past the body limit reserves the limit, no more.
        let mut big = AppLayer::default();
        let head = "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n";
        big.on_data(Direction::ToServer, head.as_bytes(), (40001, 80), &mut c);
        big.on_data(Direction::ToServer, &[b'B'; 1000], (40001, 80), &mut c);
        let limit = HttpConfig::default().request_body_limit;
        let tx = http_tx(&big, 0).expect("transaction");
        assert_eq!((tx.request_body.len(), tx.request_body.capacity()), (1000, limit));
        assert_eq!(c.http_mem.memuse, (10_000 + limit) as u64);
    }

    #[test]
    fn http_bodies_are_charged_at_their_size_and_given_back_when_flows_end() {
        let mut c = AppCounters::default();
        let mut apps: Vec<AppLayer> = (0..20).map(|_| AppLayer::default()).collect();
        for app in &mut apps {
            unanswered_post(app, 10_000, &mut c);
            assert_eq!(http_tx(app, 0).map(|t| t.request_body.len()), Some(10_000));
            // The parser's state and its transaction are charged with the flow.
            assert!(app.heap_bytes() >= (std::mem::size_of::<AppLayer>() + std::mem::size_of::<HttpTx>()) as u64);
            // Of which the transaction (and its lines and headers) counts against flow.memcap.
            assert!(app.charged_bytes() >= std::mem::size_of::<HttpTx>() as u64);
            assert!(app.charged_bytes() < app.heap_bytes());
        }
        let held: u64 = apps.iter().map(|a| http_tx(a, 0).unwrap().request_body.capacity() as u64).sum();
        assert_eq!(c.http_mem.memuse, held);
        assert!(held >= 20 * 10_000);
        assert_eq!(c.http_mem.refusals, 0);
        for app in &mut apps {
            app.prune(&mut c); // nothing completes: the bodies stay
            app.release(&mut c);
        }
        assert_eq!(c.http_mem.memuse, 0);
    }

    #[test]
    fn unanswered_post_bodies_stop_at_the_http_memcap() {
        let mut c = AppCounters { http_mem: crate::applayer::MemCap::new(50_000), ..AppCounters::default() };
        let mut apps: Vec<AppLayer> = (0..20).map(|_| AppLayer::default()).collect();
        for app in &mut apps {
            unanswered_post(app, 10_000, &mut c);
            assert!(c.http_mem.memuse <= 50_000, "{}", c.http_mem.memuse);
        }
        assert!(c.http_mem.refusals > 0);
        // What did not fit was not buffered, and is counted; a cut body stays a prefix.
        let stored: u64 = apps.iter().map(|a| http_tx(a, 0).unwrap().request_body.len() as u64).sum();
        assert!((30_000..=50_000).contains(&stored), "{stored}");
        assert!(c.http_mem.refused_bytes > 0);
        assert!(apps.iter().all(|a| http_tx(a, 0).unwrap().request_body.iter().all(|&b| b == b'A')));
        // Parsing goes on: every request is there, with its full length counted, and the
        // first flows hold their whole body for inspection.
        for app in &apps {
            let tx = http_tx(app, 0).unwrap();
            assert_eq!((tx.request_body_len, tx.uri_raw.as_slice()), (10_000, &b"/upload"[..]));
        }
        assert_eq!(http_tx(&apps[0], 0).unwrap().request_body.len(), 10_000);
        assert!(http_tx(&apps[19], 0).unwrap().request_body_truncated);
        // A flow that ends makes room for the next body.
        apps[0].release(&mut c);
        let mut next = AppLayer::default();
        unanswered_post(&mut next, 10_000, &mut c);
        assert_eq!(http_tx(&next, 0).unwrap().request_body.len(), 10_000);
        for app in apps.iter_mut().chain([&mut next]) {
            app.release(&mut c);
        }
        assert_eq!(c.http_mem.memuse, 0);
    }

    #[test]
    fn a_protocol_without_parser_goes_idle() {
        // FTP is recognised by its banner but not parsed: what follows makes no transaction.
        let mut app = AppLayer::default();
        let mut c = AppCounters::default();
        app.on_data(Direction::ToClient, b"220 ftp.example FTP server ready\r\n", (40000, 21), &mut c);
        assert_eq!(app.proto, Some(AppProto::Ftp));
        app.on_data(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n", (40000, 21), &mut c);
        assert!(!app.has_pending());
    }
}
