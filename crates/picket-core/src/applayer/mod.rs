//! Application-layer parsers, sans-IO: fed reassembled stream bytes (or datagrams) per
//! direction, they produce transactions whose fields fill Suricata's sticky buffers.
//!
//! - [`probe`] tells which protocol a flow speaks from its first bytes (and its ports).
//! - [`layer::AppLayer`] is the app layer of one flow: probing, then the detected
//!   protocol's [`AppParser`], the transactions waiting for inspection, and the alerts
//!   already raised per transaction.
//! - One folder per protocol ([`http`], [`dns`], [`tls`]): `mod.rs` the parser,
//!   `buffers.rs` the sticky buffers of one transaction, `record.rs` its eve object and
//!   `flow.rs` the [`AppParser`] the app layer drives.
//!
//! # Adding a protocol
//! 1. A folder `applayer/<proto>/` with the parser (`mod.rs`); the detection buffers of
//!    one transaction, a [`BufferSource`] (`buffers.rs`); its eve object, a
//!    `write_record(&self, &mut dyn RecordWriter)` (`record.rs`); and `flow.rs`: `impl
//!    AppParser` plus a `new_flow` that counts the flow and boxes a parser.
//! 2. Here: the transaction type in [`AppTx`], its buffers in `AppBuffers`, its counters
//!    in `AppCounters` (and in `AppCounters::add_to`, which fixes the stats order).
//! 3. Its detection in [`probe`] and one line in [`layer`]'s `new_parser` creating it.
//! 4. picket's eve alert writer (`src/output/eve/alert.rs`): its object for its [`AppTx`].
//!
//! Dependencies go one way, so no file uses one that uses it back: a protocol's parser,
//! buffers and record files use nothing of this file; this file names their transaction,
//! buffer and counter types; the protocol's `flow.rs` implements [`AppParser`] with them;
//! [`layer`] creates the parsers.

pub mod detect_only;
pub mod dns;
pub mod http;
pub mod http2;
pub mod layer;
pub mod probe;
pub mod smtp;
pub mod ssh;
pub mod tls;

use crate::counters::CounterSet;
use crate::detect::engine::BufferSource;
use crate::stream::Direction;
use dns::buffers::DnsTxBuffers;
use dns::{DnsCounters, DnsTransaction};
use http::buffers::TxBuffers;
use http::{BodyMemory, HttpTx};
use http2::Http2Tx;
use smtp::buffers::SmtpBuffers;
use smtp::record::SmtpView;

/// Frees a drained transaction queue's buffer. A `VecDeque` keeps its capacity (four
/// transactions once it held one) after its last element goes, and most flows sit idle
/// with nothing queued for the rest of their life: a DNS flow after its answer, an HTTP
/// connection between requests. With the 49k DNS flows of the reference capture that was
/// 27 MiB of empty queues. The next transaction allocates again.
pub(crate) fn free_if_drained<T>(queue: &mut std::collections::VecDeque<T>) {
    if queue.is_empty() && queue.capacity() != 0 {
        *queue = std::collections::VecDeque::new();
    }
}
use smtp::SmtpCounters;
use ssh::buffers::{SshBuffers, SSH_TX_ID};
use ssh::{SshCounters, SshState};
use tls::buffers::{TlsBuffers, TLS_TX_ID};
use tls::{TlsCounters, TlsState};

/// Transactions waiting for inspection per direction.
const MAX_PENDING: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppProto {
    Http,
    Tls,
    Dns,
    Ssh,
    Smtp,
    Ftp,
    // Detected, not parsed (see [`detect_only`]).
    Http2,
    Rfb,
    Smb,
    Dcerpc,
    Sip,
    BittorrentDht,
    Dnp3,
    Pgsql,
    Rdp,
    Modbus,
    Enip,
    Mqtt,
    Nfs,
    Krb5,
    Ldap,
    Ike,
    Snmp,
    Dhcp,
    Ntp,
    Tftp,
    Quic,
    Mdns,
    /// DNS over HTTP/2: an HTTP/2 flow whose streams carried DNS messages.
    Doh2,
}

impl AppProto {
    /// Every protocol picket detects (for `--list-app-layer-protos`).
    pub const ALL: [AppProto; 29] = [
        AppProto::Http,
        AppProto::Tls,
        AppProto::Dns,
        AppProto::Ssh,
        AppProto::Smtp,
        AppProto::Ftp,
        AppProto::Http2,
        AppProto::Rfb,
        AppProto::Smb,
        AppProto::Dcerpc,
        AppProto::Sip,
        AppProto::BittorrentDht,
        AppProto::Dnp3,
        AppProto::Pgsql,
        AppProto::Rdp,
        AppProto::Modbus,
        AppProto::Enip,
        AppProto::Mqtt,
        AppProto::Nfs,
        AppProto::Krb5,
        AppProto::Ldap,
        AppProto::Ike,
        AppProto::Snmp,
        AppProto::Dhcp,
        AppProto::Ntp,
        AppProto::Tftp,
        AppProto::Quic,
        AppProto::Mdns,
        AppProto::Doh2,
    ];

    /// Name as in rules (`alert tls ...`) and eve's `app_proto`.
    pub fn name(self) -> &'static str {
        match self {
            AppProto::Http => "http",
            AppProto::Tls => "tls",
            AppProto::Dns => "dns",
            AppProto::Ssh => "ssh",
            AppProto::Smtp => "smtp",
            AppProto::Ftp => "ftp",
            AppProto::Http2 => "http2",
            AppProto::Rfb => "rfb",
            AppProto::Smb => "smb",
            AppProto::Dcerpc => "dcerpc",
            AppProto::Sip => "sip",
            AppProto::BittorrentDht => "bittorrent-dht",
            AppProto::Dnp3 => "dnp3",
            AppProto::Pgsql => "pgsql",
            AppProto::Rdp => "rdp",
            AppProto::Modbus => "modbus",
            AppProto::Enip => "enip",
            AppProto::Mqtt => "mqtt",
            AppProto::Nfs => "nfs",
            AppProto::Krb5 => "krb5",
            AppProto::Ldap => "ldap",
            AppProto::Ike => "ike",
            AppProto::Snmp => "snmp",
            AppProto::Dhcp => "dhcp",
            AppProto::Ntp => "ntp",
            AppProto::Tftp => "tftp",
            AppProto::Quic => "quic",
            AppProto::Mdns => "mdns",
            AppProto::Doh2 => "doh2",
        }
    }

    /// Ports Suricata's default configuration associates with the protocol. Only DNS and the
    /// SMTP/FTP banner need them here; the others are recognised on any port by their bytes.
    pub fn default_ports(self) -> &'static [u16] {
        match self {
            AppProto::Http => &[80],
            AppProto::Tls => &[443, 444, 465, 853, 993, 995],
            AppProto::Dns => &[53],
            AppProto::Ssh => &[22],
            AppProto::Smtp => &[25, 465, 587, 2525],
            AppProto::Ftp => &[21],
            other => detect_only::default_ports(other),
        }
    }
}

/// The parser of one flow's application protocol, as [`layer::AppLayer`] drives it once
/// the protocol is detected (the bytes seen while probing are replayed first).
///
/// Whenever a transaction progresses in a way detection cares about, the parser tells
/// [`AppCtx::progressed`]: the transaction is then inspected on the next packet of that
/// direction. The parser counts what it sees in the worker's [`AppCtx`] counters.
pub trait AppParser: Send {
    /// Stream bytes of `dir`, in order, following what was fed before (or a gap). The parser
    /// copies what it keeps: the caller frees the bytes afterwards.
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>);

    /// `len` bytes of `dir` are missing from the stream and will not come.
    fn on_gap(&mut self, dir: Direction, len: u64, cx: &mut AppCtx<'_>);

    /// How many of the next bytes of `dir` the parser would discard without looking at them
    /// (the body of an encrypted record). The stream may then not keep them
    /// ([`crate::stream::TcpReassembly::app_skip`]) and calls [`AppParser::skip`].
    fn skippable(&self, _dir: Direction) -> u64 {
        0
    }

    /// The next `len` bytes of `dir` (at most [`AppParser::skippable`]) are consumed
    /// without being handed over.
    fn skip(&mut self, _dir: Direction, _len: u64) {}

    /// One UDP datagram of `dir`. Only protocols spoken over UDP implement it.
    fn on_datagram(&mut self, _dir: Direction, _datagram: &[u8], _cx: &mut AppCtx<'_>) {}

    /// End of the flow: what runs until the connection closes is complete now.
    fn on_close(&mut self, _cx: &mut AppCtx<'_>) {}

    /// The protocol the flow turned into (HTTP/2 carrying DNS is `doh2`), once it did;
    /// the app layer keeps the protocol detected first as `app_proto_orig`.
    fn proto_change(&self) -> Option<AppProto> {
        None
    }

    /// The connection switched from HTTP/1.1 to HTTP/2 (`Upgrade: h2c`): what the HTTP/2
    /// parser taking over needs (once). Only the HTTP parser implements it.
    fn h2c_upgrade(&mut self) -> Option<http::upgrade::H2cUpgrade> {
        None
    }

    /// Transaction `id`, while the parser keeps it.
    fn tx(&self, id: u64) -> Option<AppTx<'_>>;

    /// Transactions the flow had so far, freed ones included (eve flow's `tx_cnt`, as
    /// Suricata counts them: the next transaction id).
    fn tx_count(&self) -> u64 {
        0
    }

    /// What is logged with every alert of the flow, whatever transaction the alert is on
    /// (as Suricata does for a TLS session).
    fn flow_tx(&self) -> Option<AppTx<'_>> {
        None
    }

    /// Frees the transactions detection is done with; `pending` still wait for inspection.
    /// Returns the lowest transaction id that may still be looked up if transactions went
    /// (the flow forgets which rules alerted on those below), `None` if nothing changed.
    fn prune(&mut self, _pending: &Pending) -> Option<u64> {
        None
    }

    /// Heap the parser holds outside its protocol's own memcap (its state, transactions,
    /// buffers), charged to `flow.memcap` with the flow. An estimate at allocated sizes;
    /// the default counts the parser's own struct only.
    fn heap_bytes(&self) -> u64 {
        std::mem::size_of_val(self) as u64
    }

    /// Memory held under the protocol's own memcap (HTTP bodies under
    /// `app-layer.protocols.http.memcap`), if it has one.
    fn capped_memory(&self) -> Option<BodyMemory> {
        None
    }

    /// How much more the parser may allocate under its protocol's memcap.
    fn set_capped_room(&mut self, _room: u64) {}
}

/// What a parser reports to while it is fed: its flow's transactions waiting for
/// inspection, and the worker's counters.
pub struct AppCtx<'a> {
    pending: &'a mut Pending,
    pub(crate) counters: &'a mut AppCounters,
}

impl<'a> AppCtx<'a> {
    pub(crate) fn new(pending: &'a mut Pending, counters: &'a mut AppCounters) -> Self {
        AppCtx { pending, counters }
    }

    /// Transaction `tx` moved on in `dir`: it is due for inspection on the next packet of
    /// `dir` (once, however often it moved on before).
    pub fn progressed(&mut self, dir: Direction, tx: u64) {
        self.pending.push(dir, tx, &mut self.counters.pending_dropped);
    }

    /// Transaction `tx` is done: both sides complete, or the flow ended with it open. It is
    /// reported (`Event::Transaction`) once, after this packet's detection; call it once
    /// per transaction.
    pub fn done(&mut self, tx: u64) {
        self.pending.done.push(tx);
    }

    /// A message of `dir` is complete (an HTTP request or response, a TLS record): the raw
    /// stream of `dir` is inspected on the next packet instead of waiting for a chunk's
    /// worth of acknowledged data, so stream and transaction rules see it together (as
    /// Suricata's parsers trigger raw stream inspection).
    pub fn trigger_raw(&mut self, dir: Direction) {
        self.pending.raw_due[dir.index()] = true;
    }

    /// The parser found a protocol anomaly (Suricata's app-layer event `event`, e.g.
    /// `REQUEST_LINE_MISSING_PROTOCOL`) in transaction `tx` while parsing data of `dir`.
    /// It is reported (`Event::AppAnomaly`, eve `anomaly` of type `applayer`) after this
    /// packet's detection. At most [`MAX_APP_ANOMALIES`] per packet; the rest are counted
    /// in `app_layer.anomalies_dropped`.
    pub fn anomaly(&mut self, dir: Direction, tx: u64, event: &'static str) {
        if self.pending.anomalies.len() >= MAX_APP_ANOMALIES {
            self.counters.anomalies_dropped += 1;
            return;
        }
        self.pending.anomalies.push(AppAnomaly { dir, tx, event });
    }
}

/// App-layer anomalies one packet may report (more are counted, not reported).
pub const MAX_APP_ANOMALIES: usize = 16;

/// A protocol anomaly found by a parser, waiting to be reported after the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppAnomaly {
    /// Direction of the data it was found in (the record's addresses follow it).
    pub dir: Direction,
    pub tx: u64,
    /// Suricata's event name.
    pub event: &'static str,
}

/// The transactions of a flow whose progress changed since they were last inspected, per
/// direction, oldest first.
#[derive(Default)]
pub struct Pending {
    queues: [Vec<u64>; 2],
    /// Transactions done since the last packet, to be reported in order. Drained after
    /// every packet; each transaction is done once, so this holds at most what one packet
    /// completes.
    done: Vec<u64>,
    /// Anomalies found since the last packet (at most [`MAX_APP_ANOMALIES`]).
    anomalies: Vec<AppAnomaly>,
    /// Per direction: the parser finished a message, so the raw stream of that direction
    /// is due for inspection now ([`AppCtx::trigger_raw`]).
    raw_due: [bool; 2],
}

impl Pending {
    /// Queues `tx` for inspection on the next packet of `dir` (once; the oldest goes past
    /// `MAX_PENDING`, counted in `dropped`).
    fn push(&mut self, dir: Direction, tx: u64, dropped: &mut u64) {
        let q = &mut self.queues[dir.index()];
        if q.contains(&tx) {
            return;
        }
        if q.len() >= MAX_PENDING {
            q.remove(0);
            *dropped += 1;
        }
        q.push(tx);
    }

    /// The next transaction of `dir` waiting for inspection.
    pub(crate) fn take(&mut self, dir: Direction) -> Option<u64> {
        let q = &mut self.queues[dir.index()];
        (!q.is_empty()).then(|| q.remove(0))
    }

    pub fn is_empty(&self) -> bool {
        self.queues.iter().all(|q| q.is_empty())
    }

    /// Whether a parser asked for the raw stream of `dir` to be inspected now; clears it.
    pub(crate) fn take_raw_due(&mut self, dir: Direction) -> bool {
        std::mem::take(&mut self.raw_due[dir.index()])
    }

    /// The oldest transaction done and not reported yet.
    pub(crate) fn take_done(&mut self) -> Option<u64> {
        (!self.done.is_empty()).then(|| self.done.remove(0))
    }

    /// The oldest anomaly not reported yet.
    /// The anomalies raised since the last packet, oldest first.
    pub(crate) fn anomalies(&self) -> &[AppAnomaly] {
        &self.anomalies
    }

    pub(crate) fn take_anomaly(&mut self) -> Option<AppAnomaly> {
        (!self.anomalies.is_empty()).then(|| self.anomalies.remove(0))
    }

    /// Heap of the queues, at allocated capacity.
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.queues.iter().map(Vec::capacity).sum::<usize>() + self.done.capacity()) * std::mem::size_of::<u64>()
            + self.anomalies.capacity() * std::mem::size_of::<AppAnomaly>()
    }

    /// The lowest transaction id waiting, in either direction.
    pub fn min(&self) -> Option<u64> {
        self.queues.iter().flatten().copied().min()
    }
}

/// One transaction of whichever protocol the flow speaks.
#[derive(Clone, Copy)]
pub enum AppTx<'a> {
    Http(&'a HttpTx),
    Dns(&'a DnsTransaction),
    /// A TLS session is its own (only) transaction.
    Tls(&'a TlsState),
    /// So is an SSH session.
    Ssh(&'a SshState),
    /// One mail, with its session's HELO.
    Smtp(SmtpView<'a>),
    /// One HTTP/2 stream (or stream-0 frame).
    Http2(&'a Http2Tx),
}

impl AppTx<'_> {
    /// The transaction's number in its flow (eve's `tx_id`).
    pub fn id(&self) -> u64 {
        match self {
            AppTx::Http(t) => t.id,
            AppTx::Dns(t) => t.tx_id,
            AppTx::Tls(_) => TLS_TX_ID,
            AppTx::Ssh(_) => SSH_TX_ID,
            AppTx::Smtp(v) => v.tx.id,
            AppTx::Http2(t) => t.id,
        }
    }
}

/// The inspection buffers of one transaction of any protocol.
///
/// An enum rather than a boxed [`BufferSource`]: it is built on every detection run that
/// has a transaction, and must not allocate.
pub(crate) enum AppBuffers<'a> {
    Http(TxBuffers<'a>),
    Dns(DnsTxBuffers<'a>),
    Tls(TlsBuffers<'a>),
    Ssh(SshBuffers<'a>),
    Smtp(SmtpBuffers<'a>),
}

impl<'a> AppBuffers<'a> {
    pub(crate) fn new(tx: AppTx<'a>, dir: Direction) -> Self {
        match tx {
            AppTx::Http(t) => AppBuffers::Http(TxBuffers::new(t, dir)),
            AppTx::Dns(t) => AppBuffers::Dns(DnsTxBuffers::new(t, dir)),
            AppTx::Tls(t) => AppBuffers::Tls(TlsBuffers::new(t, dir)),
            AppTx::Ssh(t) => AppBuffers::Ssh(SshBuffers::new(t, dir)),
            AppTx::Smtp(v) => AppBuffers::Smtp(SmtpBuffers::new(v, dir)),
            // The `http.*` keywords see an HTTP/2 stream through its HTTP/1-shaped view.
            AppTx::Http2(t) => AppBuffers::Http(TxBuffers::new(&t.http, dir)),
        }
    }

    pub(crate) fn source(&self) -> &dyn BufferSource {
        match self {
            AppBuffers::Http(b) => b,
            AppBuffers::Dns(b) => b,
            AppBuffers::Tls(b) => b,
            AppBuffers::Ssh(b) => b,
            AppBuffers::Smtp(b) => b,
        }
    }
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
    /// App-layer anomalies past [`MAX_APP_ANOMALIES`] in one packet, not reported.
    pub anomalies_dropped: u64,
    pub alerted_forgotten: u64,
    pub dns: DnsAppCounters,
    pub ssh: SshAppCounters,
    pub smtp: SmtpAppCounters,
    pub http2: http2::flow::Http2AppCounters,
    /// HTTP body storage against `app-layer.protocols.http.memcap`.
    pub http_mem: MemCap,
}

/// One worker's share of an app-layer memcap and what it holds.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemCap {
    /// Bytes allowed; 0: unlimited (as in Suricata).
    pub memcap: u64,
    /// Gauge: bytes held now.
    pub memuse: u64,
    /// Allocations refused or cut short because the memcap was reached.
    pub refusals: u64,
    /// Bytes not stored because the memcap was reached.
    pub refused_bytes: u64,
}

impl MemCap {
    pub fn new(memcap: u64) -> Self {
        MemCap { memcap, ..MemCap::default() }
    }

    /// Bytes that may still be allocated.
    pub fn room(&self) -> u64 {
        if self.memcap == 0 {
            u64::MAX
        } else {
            self.memcap.saturating_sub(self.memuse)
        }
    }
}

impl AppCounters {
    /// Adds the counters to `s` under their stats.log names, in stats.log order.
    pub(crate) fn add_to(&self, s: &mut CounterSet) {
        s.add("app_layer.flow.http", self.flows_http);
        s.add("app_layer.flow.tls", self.flows_tls);
        s.add("app_layer.flow.other", self.flows_other);
        s.add("app_layer.tx.http", self.http_tx);
        s.add("app_layer.tx.tls", self.tls_tx);
        for (name, v) in self.tls.counters() {
            s.add(&format!("app_layer.{name}"), v);
        }
        s.add("app_layer.http.anomalies", self.http_anomalies);
        s.add("app_layer.pending_dropped", self.pending_dropped);
        s.add("app_layer.anomalies_dropped", self.anomalies_dropped);
        s.add("app_layer.alerted_forgotten", self.alerted_forgotten);
        s.add("http.memuse", self.http_mem.memuse);
        s.add("http.memcap", self.http_mem.refusals);
        s.add("http.memcap_bytes_refused", self.http_mem.refused_bytes);
        for (name, v) in self.dns.counters() {
            s.add(&name, v);
        }
        s.add("app_layer.flow.ssh", self.ssh.flows);
        s.add("app_layer.tx.ssh", self.ssh.tx);
        for (name, v) in self.ssh.parser.counters() {
            s.add(&format!("app_layer.{name}"), v);
        }
        s.add("app_layer.flow.smtp", self.smtp.flows);
        s.add("app_layer.tx.smtp", self.smtp.tx);
        for (name, v) in self.smtp.parser.counters() {
            s.add(name, v);
        }
        s.add("app_layer.flow.http2", self.http2.flows);
        s.add("app_layer.tx.http2", self.http2.tx);
        for (name, v) in self.http2.parser.counters() {
            s.add(&format!("app_layer.{name}"), v);
        }
    }
}

/// Worker-wide SMTP counters (Suricata's `app_layer.flow.smtp`, `app_layer.tx.smtp`) plus
/// the parser's own.
#[derive(Default, Clone, Copy)]
pub(crate) struct SmtpAppCounters {
    pub flows: u64,
    pub tx: u64,
    pub parser: SmtpCounters,
}

/// Worker-wide SSH counters (Suricata's `app_layer.flow.ssh`, `app_layer.tx.ssh`) plus the
/// parser's own anomaly counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct SshAppCounters {
    pub flows: u64,
    pub tx: u64,
    pub parser: SshCounters,
}

/// Worker-wide DNS counters of the inspection path (Suricata's `app_layer.flow.dns_*`,
/// `app_layer.tx.dns_*`) plus the parser's own anomaly counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct DnsAppCounters {
    pub flows_udp: u64,
    pub flows_tcp: u64,
    pub tx_udp: u64,
    pub tx_tcp: u64,
    pub parser: DnsCounters,
}

impl DnsAppCounters {
    /// (name, value) in stats.log naming.
    pub(crate) fn counters(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        [
            ("app_layer.flow.dns_udp".to_string(), self.flows_udp),
            ("app_layer.flow.dns_tcp".to_string(), self.flows_tcp),
            ("app_layer.tx.dns_udp".to_string(), self.tx_udp),
            ("app_layer.tx.dns_tcp".to_string(), self.tx_tcp),
        ]
        .into_iter()
        .chain(self.parser.counters().map(|(name, v)| (format!("app_layer.{name}"), v)))
    }
}
