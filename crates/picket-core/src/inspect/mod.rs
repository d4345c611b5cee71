//! The sans-IO inspection core a worker owns: decode, flow tracking, TCP reassembly, the
//! application layer and the rules. It is fed packets and clock ticks; for each packet it
//! returns a [`Verdict`] and hands what it found ([`Event`]: alerts, drops, ended flows) to
//! the caller's [`EventSink`]. It knows nothing of threads, rings, sockets, files or
//! output formats, so the single-thread run mode, the worker threads, the live capture and
//! the tests all drive the same code.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`Inspector`]: per packet, decode → flow → stream → app layer → detection |
//! | `bypass.rs` | flow bypass: triggers, local/capture modes, `flow_bypassed.*` counters |
//! | `encrypted.rs` | TLS/SSH `encryption-handling: track-only`: no payload inspection once encrypted |
//! | `detection.rs` | running the engine on a packet or on flow-end stream data; alerts, drops |
//! | `event.rs` | the events, the sink trait, the verdict, the events' sort keys |
//! | `tests.rs` | the contract with the caller: verdicts and events |
//! | `bypass_tests.rs` | flow bypass: triggers, local and capture modes, timeouts; encrypted payload |
//! | `ips_tests.rs` | IPS semantics: what drop, reject and pass act on, in-line stream inspection |
//!
//! The application layer (protocol detection, one folder per protocol) is `crate::applayer`.
//!
//! ## IPS mode
//! `InspectSettings::simulate_ips` (`--simulate-ips`, and the inline capture modes) makes
//! `drop` and `reject*` rules block; otherwise every verdict is [`Verdict::Pass`] and those
//! rules only alert (`alert.action: allowed`). As Suricata 7+:
//! - **In-line stream inspection**: `stream.inline: auto` is in-line in IPS mode, so TCP data
//!   is inspected (raw stream and app layer) on the segment that carries it, and a match
//!   blocks that segment: the destination never receives it.
//! - **What a match blocks** (Suricata's action scope by rule type): a rule on packet fields
//!   or on a packet's payload alone (UDP content, `dsize`, `flags`, decoder events) blocks its
//!   packet; an IP-only rule, an app-layer rule (protocol, sticky buffers) or a match in
//!   stream data also blocks every later packet of the flow, both ways ("flow drop").
//!   `reject*` is a drop whose verdict asks the capture port to answer (see
//!   `crate::reject`); the flow's later packets are dropped without another answer.
//! - **`pass`**: rules apply in `action-order` (pass, drop, reject, alert by default). A pass
//!   match ends the packet's rules: no later alert or drop on it. With the scope above it
//!   passes the rest of the flow too (no more detection); on packet data alone, only its
//!   packet. Put `drop` before `pass` in `action-order` and a drop wins. Drops and passes
//!   past `packet-alert-max` still act, unlogged.
//! - **Events**: every blocked packet raises one [`Event::Drop`] (reason `rules`, `flow
//!   drop`, `stream midstream`), carrying the rule that blocked it and whether it is the
//!   first blocked packet of its direction since the flow was dropped (eve's `flows: start`).

use crate::applayer::http::HttpConfig;
use crate::applayer::probe::{DetectionPorts, Transport};
use crate::counters::CounterSet;
use crate::decode::{self, DecodeEvent, DecodeOptions, Decoded, IpLayer, L4};
use crate::detect::engine::{Alert, DetectCtx, DetectEngine, DetectFlow, FlowInfo};
use crate::detectors::{Detectors, FlowEvent as DetectorFlowEvent, PacketFacts, Tallies};
use crate::flow::macs;
use crate::flow::table::MovedFlow;
use crate::flow::{
    Flow, FlowConfig, FlowPacket, FlowRecord, FlowTable, FlowTimeouts, StateTimeouts, TcpSegment, Upcoming,
};
use crate::packet::{ClockTick, LinkType, PacketRef, Timestamp};
use crate::settings::{ChecksumMode, EncryptionHandling, EngineSettings, ExceptionPolicy, ProtoTimeouts, StreamInline};
use crate::stream::{
    Direction, HostOsPolicy, InsertResult, ReassemblyMemory, Segment, StreamConfig, TcpFlags, TcpReassembly,
};
use std::sync::Arc;

pub mod bypass;
#[cfg(test)]
mod bypass_tests;
mod detection;
pub mod encrypted;
pub mod event;
#[cfg(test)]
mod ips_tests;
mod midstream;
#[cfg(test)]
mod pass_alert_tests;
#[cfg(test)]
mod tests;
pub use crate::applayer::layer::AppLayer;
pub use crate::applayer::AppTx;
use crate::applayer::{AppCounters, MemCap};
pub use bypass::{BypassCounts, BypassMode, BypassReason, BypassRequest, BypassSettings, FlowBypass};
use detection::{FlowDropLog, Out, RunVerdict};
pub use event::AnomalyEvent;
pub use event::AppAnomalyEvent;
pub use event::{
    clock_key, packet_key, AlertEvent, AppFacts, DropEvent, Event, EventSink, FlowBits, FlowFacts, Reject, RejectReply,
    RejectTarget, TxEvent, Verdict, WirePacket, SHUTDOWN_KEY,
};

const AUTO_CHECKSUM_SAMPLE: u64 = 1000;

#[derive(Clone)]
pub struct InspectSettings {
    pub checksum: ChecksumMode,
    pub flow: FlowConfig,
    pub stream: StreamConfig,
    /// This worker's share of `stream.reassembly.memcap`.
    pub stream_memcap: u64,
    /// This worker's share of `app-layer.protocols.http.memcap` (0: unlimited): HTTP
    /// request and response bodies held for inspection.
    pub http_memcap: u64,
    /// This worker's share of `stream.memcap` (TCP session state).
    pub stream_session_memcap: u64,
    /// The compiled rules, shared by all workers; `None` runs without detection.
    pub detect: Option<Arc<DetectEngine>>,
    /// `--simulate-ips`: drop and reject rules block the packet and the rest of its flow.
    pub simulate_ips: bool,
    /// `stream.midstream-policy` resolved for this run mode.
    pub midstream_policy: ExceptionPolicy,
    /// `host-os-policy`: overlap policy per receiving host.
    pub host_os: Arc<HostOsPolicy>,
    /// App-layer `detection-ports` (DNS).
    pub detection_ports: Arc<DetectionPorts>,
    /// `app-layer.protocols.http.libhtp.default-config`.
    pub http: Arc<HttpConfig>,
    /// What bypasses a flow (`stream.bypass`, TLS `encryption-handling`), and whether the
    /// capture can take bypassed flows (see [`bypass`]).
    pub bypass: BypassSettings,
    /// TLS/SSH `encryption-handling` (see [`encrypted`]).
    pub encrypted: encrypted::EncryptedSettings,
    /// `ddos.detectors`: the plug-in detectors each worker feeds (`None`: none).
    pub detectors: Option<Arc<crate::detectors::DetectorSettings>>,
    /// Report each packet's decoder anomalies as [`Event::Anomaly`] (eve `anomaly` with
    /// `types: decode: yes`); off, a packet with anomalies costs nothing more.
    pub log_decode_anomalies: bool,
    /// Keep each flow's MAC addresses (eve-log `ethernet: yes`; see [`crate::flow::macs`]).
    pub track_macs: bool,
    /// `vlan.use-for-tracking`: VLAN ids are part of the flow key (off: a flow tagged on
    /// one side only, or re-tagged on the way back, is one flow).
    pub track_vlan: bool,
}

impl InspectSettings {
    /// Per-worker settings from the resolved configuration. Memory caps are global in the
    /// configuration and split evenly between workers, each of which owns its share.
    pub fn from_engine(engine: &EngineSettings, workers: usize, simulate_ips: bool) -> Self {
        let workers = workers.max(1) as u64;
        let per_proto = |t: &ProtoTimeouts, emergency: bool| StateTimeouts {
            new: if emergency { t.emergency_new } else { t.new },
            established: if emergency { t.emergency_established } else { t.established },
            closed: if emergency { t.emergency_closed } else { t.closed },
            bypassed: if emergency { t.emergency_bypassed } else { t.bypassed },
        };
        let timeouts = |emergency: bool| FlowTimeouts {
            tcp: per_proto(&engine.flow_timeouts.tcp, emergency),
            udp: per_proto(&engine.flow_timeouts.udp, emergency),
            icmp: per_proto(&engine.flow_timeouts.icmp, emergency),
            default: per_proto(&engine.flow_timeouts.default, emergency),
        };
        let midstream_policy = engine.effective_midstream_policy(simulate_ips);
        // Suricata picks a session up midstream only when the policy lets the flow go on.
        let midstream =
            engine.midstream && matches!(midstream_policy, ExceptionPolicy::Ignore | ExceptionPolicy::PassFlow);
        let host_os = HostOsPolicy::from_entries(engine.host_os_policy.iter().map(|(n, a)| (n.as_str(), a.as_str()))).0;
        let flow = FlowConfig {
            memcap_bytes: engine.flow_memcap / workers,
            prealloc_flows: (engine.flow_prealloc as u64 / workers) as usize,
            timeouts: timeouts(false),
            emergency_timeouts: timeouts(true),
            midstream,
            async_oneside: engine.async_oneside,
            reassembly_depth: engine.stream_reassembly_depth,
            track_vlan: engine.vlan_use_for_tracking,
            emergency_recovery_percent: engine.flow_emergency_recovery,
        };
        let stream = StreamConfig {
            depth: engine.stream_reassembly_depth,
            max_regions: engine.stream_reassembly_max_regions,
            inline: match engine.stream_inline {
                StreamInline::Yes => true,
                StreamInline::No => false,
                // Suricata's `auto`: inline when acting as an IPS.
                StreamInline::Auto => simulate_ips,
            },
            async_oneside: engine.async_oneside,
            ..StreamConfig::default()
        };
        InspectSettings {
            checksum: engine.checksum_mode,
            flow,
            stream,
            stream_memcap: engine.stream_reassembly_memcap / workers,
            http_memcap: engine.http_memcap.div_ceil(workers),
            stream_session_memcap: engine.stream_memcap / workers,
            detect: None,
            simulate_ips,
            midstream_policy,
            host_os: Arc::new(host_os),
            detection_ports: Arc::new(detection_ports(engine)),
            http: Arc::new(HttpConfig::default()),
            bypass: BypassSettings {
                stream_depth: engine.stream_bypass,
                tls: engine.tls_encryption == EncryptionHandling::Bypass,
                ssh: engine.ssh_encryption == EncryptionHandling::Bypass,
                capture: false,
            },
            encrypted: encrypted::EncryptedSettings { tls: engine.tls_encryption, ssh: engine.ssh_encryption },
            detectors: None,
            log_decode_anomalies: false,
            track_macs: false,
            track_vlan: engine.vlan_use_for_tracking,
        }
    }
}

fn detection_ports(engine: &EngineSettings) -> DetectionPorts {
    let mut ports = DetectionPorts::default();
    let [tcp, udp] = &engine.dns_detection_ports;
    if let Some(p) = tcp {
        ports.dns_tcp = p.clone();
    }
    if let Some(p) = udp {
        ports.dns_udp = p.clone();
    }
    ports.others = engine.detect_only.clone();
    ports
}

/// Decoder-level counters (Suricata's `decoder.*`). Plain fields: this is the hot path.
#[derive(Clone, Debug)]
struct DecoderCounters {
    pkts: u64,
    bytes: u64,
    invalid: u64,
    ethernet: u64,
    vlan: u64,
    vlan_qinq: u64,
    ipv4: u64,
    ipv6: u64,
    tcp: u64,
    udp: u64,
    icmpv4: u64,
    icmpv6: u64,
    other_proto: u64,
    ipv4_frag: u64,
    ipv6_frag: u64,
    unsupported_link: u64,
    bad_checksum: u64,
    checksum_auto_disabled: u64,
    events: Vec<u64>,
}

impl Default for DecoderCounters {
    fn default() -> Self {
        DecoderCounters {
            pkts: 0,
            bytes: 0,
            invalid: 0,
            ethernet: 0,
            vlan: 0,
            vlan_qinq: 0,
            ipv4: 0,
            ipv6: 0,
            tcp: 0,
            udp: 0,
            icmpv4: 0,
            icmpv6: 0,
            other_proto: 0,
            ipv4_frag: 0,
            ipv6_frag: 0,
            unsupported_link: 0,
            bad_checksum: 0,
            checksum_auto_disabled: 0,
            events: vec![0; DecodeEvent::COUNT],
        }
    }
}

/// Per-flow state the inspection stages keep beside the flow table's own.
#[derive(Default)]
pub struct FlowExt {
    pub alerted: bool,
    /// IPS mode: a drop or reject rule with flow scope matched (or an exception policy
    /// dropped the flow); every later packet of the flow is dropped.
    pub dropped: bool,
    /// A drop event was reported in [to server, to client] while the flow was dropped.
    pub drop_logged: [bool; 2],
    /// An exception policy passed the flow (pass-flow, bypass): no more inspection.
    pub passed: bool,
    /// TCP reassembly, created with the flow's first TCP packet.
    pub stream: Option<Box<TcpReassembly>>,
    pub detect: DetectFlow,
    /// App-layer detection and parsing, created with the stream.
    pub app: Option<Box<AppLayer>>,
    /// The engine is done with the flow (see [`bypass`]).
    pub bypass: FlowBypass,
    /// The payload is encrypted and no longer inspected (see [`encrypted`]).
    pub no_payload: bool,
    /// The detectors were told this TCP flow completed its handshake.
    pub handshake_reported: bool,
    /// `stream.midstream-policy` was applied to the flow (a TCP packet found no session),
    /// as it stood: eve flow's `exception_policy` (target `stream_midstream`).
    pub midstream_policy_applied: Option<ExceptionPolicy>,
    /// The MAC addresses of the flow's two sides (only with
    /// [`InspectSettings::track_macs`]).
    pub macs: Option<Box<crate::flow::macs::MacSet>>,
    /// Set when the flow ends with flowbits set: the engine that names them, so that its
    /// record can list them ([`FlowExt::flowbits`]).
    pub names: Option<Arc<DetectEngine>>,
}

/// Where a flow's reassembly and app layer lie on the heap (start, length).
fn state_extents(ext: &FlowExt) -> [Option<(*const u8, usize)>; 2] {
    fn extent<T>(value: &T) -> (*const u8, usize) {
        ((value as *const T).cast(), std::mem::size_of::<T>())
    }
    [ext.stream.as_deref().map(extent), ext.app.as_deref().map(extent)]
}

/// Where a flow's protocol parser lies on the heap, once it has one.
fn parser_extent(ext: &FlowExt) -> Option<(*const u8, usize)> {
    ext.app.as_deref().and_then(AppLayer::parser_extent)
}

impl FlowExt {
    /// The flowbits set on the flow, for its flow record (after the flow ended).
    pub fn flowbits(&self) -> Option<FlowBits<'_>> {
        self.names.as_deref().map(|engine| FlowBits::new(engine, &self.detect))
    }
}

/// Flows on their way from one worker to another: the dispatcher moved their bucket.
pub struct FlowHandover {
    flows: Vec<MovedFlow<FlowExt>>,
}

impl FlowHandover {
    /// Flows handed over.
    pub fn len(&self) -> usize {
        self.flows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

pub struct Inspector {
    flows: FlowTable<FlowExt>,
    decode_opts: DecodeOptions,
    checksum: ChecksumMode,
    checksum_sampled: u64,
    checksum_bad_in_sample: u64,
    decoder: DecoderCounters,
    /// See [`InspectSettings::log_decode_anomalies`].
    log_decode_anomalies: bool,
    /// See [`InspectSettings::track_macs`].
    track_macs: bool,
    stages: Stages,
    midstream_policy: ExceptionPolicy,
    stream_mem: ReassemblyMemory,
    detection: Detection,
    /// Flows that ended while a packet was processed (evicted, port reused).
    ended: Vec<FlowRecord<FlowExt>>,
    /// Latest capture time seen; flows expire against it.
    now: Timestamp,
    bypass: BypassSettings,
    encrypted: encrypted::EncryptedSettings,
    encrypted_counters: encrypted::EncryptedCounters,
    /// Flows to install in the capture's bypass table, taken by the caller.
    bypass_requests: Vec<BypassRequest>,
    last_expiry_sec: u64,
}

/// What one detection run needs besides the flow: kept apart from the flow table so both
/// can be borrowed at once.
struct Detection {
    engine: Option<Arc<DetectEngine>>,
    ctx: DetectCtx,
    alerts: Vec<Alert>,
    /// Indices in `alerts` of those a run reports (scratch, reused).
    live: Vec<usize>,
    simulate_ips: bool,
    counters: AlertCounters,
    /// `flow_bypassed.*`.
    bypass: bypass::BypassCounters,
    /// Flow ids of capture-bypassed flows that ended: the caller removes them from the
    /// capture's table.
    bypass_ended: Vec<u64>,
    app_counters: AppCounters,
    /// JA3/JA3S go into eve's `tls` object: Suricata computes them when rules use them.
    log_ja3: bool,
    /// The plug-in detectors (`crate::detectors`), fed per packet and flow event.
    detectors: Detectors,
    /// The next run inspects a further stream chunk of the packet just inspected (set by
    /// the chunk callback, taken by the run): see `DetectPacket::repeat`.
    repeat_chunk: bool,
}

#[derive(Default)]
struct AlertCounters {
    alerts: u64,
    blocked_packets: u64,
    stream_pseudo_packets: u64,
}

impl Inspector {
    pub fn new(settings: &InspectSettings) -> Self {
        let engine = settings.detect.clone();
        let ctx = engine.as_ref().map(|e| e.new_ctx()).unwrap_or_default();
        Inspector {
            flows: FlowTable::new(settings.flow.clone()),
            decode_opts: DecodeOptions {
                validate_checksums: settings.checksum != ChecksumMode::Never,
                track_vlan: settings.track_vlan,
                ..DecodeOptions::default()
            },
            checksum: settings.checksum,
            checksum_sampled: 0,
            checksum_bad_in_sample: 0,
            decoder: DecoderCounters::default(),
            log_decode_anomalies: settings.log_decode_anomalies,
            track_macs: settings.track_macs,
            stages: Stages {
                // App-layer parsers run with detection; they consume what the stream retains.
                stream_cfg: StreamConfig { app_layer: settings.detect.is_some(), ..settings.stream },
                host_os: settings.host_os.clone(),
                detection_ports: settings.detection_ports.clone(),
                http_config: settings.http.clone(),
            },
            midstream_policy: settings.midstream_policy,
            stream_mem: ReassemblyMemory::with_session_memcap(
                settings.stream_memcap.max(1),
                settings.stream_session_memcap.max(1),
            ),
            detection: Detection {
                engine,
                ctx,
                alerts: Vec::new(),
                live: Vec::new(),
                simulate_ips: settings.simulate_ips,
                counters: AlertCounters::default(),
                bypass: Default::default(),
                bypass_ended: Vec::new(),
                app_counters: AppCounters { http_mem: MemCap::new(settings.http_memcap), ..AppCounters::default() },
                log_ja3: settings.detect.as_ref().is_some_and(|e| {
                    ["ja3.hash", "ja3.string", "ja3s.hash", "ja3s.string"].iter().any(|b| e.uses_buffer(b))
                }),
                detectors: settings.detectors.as_ref().map(|d| d.worker_set()).unwrap_or_default(),
                repeat_chunk: false,
            },
            ended: Vec::new(),
            now: Timestamp(0),
            bypass: settings.bypass,
            encrypted: settings.encrypted,
            encrypted_counters: Default::default(),
            bypass_requests: Vec::new(),
            last_expiry_sec: 0,
        }
    }

    /// Switches to another detection engine (a rule reload) between two packets: flows,
    /// streams and app-layer state stay; flowbits, flowints, xbits and threshold trackers
    /// carry over (`detect::engine::carry`). Returns the engine it ran with, for the caller
    /// to release where dropping it costs nothing on the data path.
    pub fn swap_engine(&mut self, engine: Arc<DetectEngine>) -> Option<Arc<DetectEngine>> {
        let det = &mut self.detection;
        match det.engine.as_deref() {
            Some(old) => {
                let carry = engine.carry_from(old);
                for ext in self.flows.exts_mut() {
                    carry.flow(&mut ext.detect);
                }
                det.ctx = carry.ctx(std::mem::take(&mut det.ctx), &engine);
            }
            None => det.ctx = engine.new_ctx(),
        }
        det.log_ja3 = ["ja3.hash", "ja3.string", "ja3s.hash", "ja3s.string"].iter().any(|b| engine.uses_buffer(b));
        det.engine.replace(engine)
    }

    /// Counts a tunnelled packet in the flow of its outermost packet (the IP-in-IP, GRE or
    /// ERSPAN flow between the tunnel endpoints, the outer UDP flow of VXLAN, Geneve or
    /// Teredo), as Suricata does: that flow gets a flow record of its own, with the whole
    /// packet's length in its byte counters. It is only tracked: no stream, app layer or
    /// detection (the inner packet is what rules see).
    fn outer_flow(&mut self, t: &decode::TunnelInfo, meta: &crate::packet::PacketMeta, out: &mut Out<'_>) {
        let pkt = FlowPacket {
            tuple: t.outer,
            vlan: t.outer_vlan,
            ts: meta.ts,
            pcap_cnt: meta.pcap_cnt,
            wire_len: meta.wire_len,
            payload_len: 0,
            tcp: None,
        };
        let ended = &mut self.ended;
        let verdict = self.flows.process(&pkt, &mut |rec| ended.push(rec));
        for rec in self.ended.drain(..) {
            self.detection.end_flow(rec, &mut self.stream_mem, out);
        }
        if let Some(v) = verdict {
            if v.created && meta.bucket != 0 {
                self.flows.set_bucket(v.handle, meta.bucket);
            }
        }
    }

    /// Inspects one packet. Events it raises go to `sink` keyed by its `pcap_cnt`; the
    /// returned verdict says whether the packet may go on (inline modes act on it).
    /// The hash a frame's flow is looked up with, for loading the flow's state ahead of the
    /// frame ([`Inspector::flow_hint`], [`Inspector::flow_slot`]); `None` for frames without
    /// a flow. Decodes the frame.
    pub fn flow_hash(&self, link: LinkType, data: &[u8]) -> Option<u64> {
        let d = decode::decode(link, data, &self.decode_opts);
        if d.fragment {
            return None;
        }
        Some(self.flows.hash_of(&d.tuple()?, d.vlan))
    }

    /// Where the lookup of a flow hash reads first (see [`FlowTable::hint_entry`]).
    pub fn flow_hint(&self, hash: u64) -> *const u8 {
        (self.flows.hint_entry(hash) as *const u32).cast()
    }

    /// Where the lookup of a flow hash reads next, once its hint is loaded: the hinted
    /// flow's slot (start, length).
    pub fn flow_slot(&self, hash: u64) -> Option<(*const u8, usize)> {
        self.flows.hinted_slot(hash)
    }

    /// Where the hinted flow's state on the heap lies (start, length), once its slot is
    /// loaded: its reassembly and its app layer, which a packet of the flow reads next.
    pub fn flow_state(&self, hash: u64) -> [Option<(*const u8, usize)>; 2] {
        self.flows.hinted_ext(hash).map_or([None, None], state_extents)
    }

    /// Where the hinted flow's protocol parser lies, once its app layer is loaded.
    pub fn flow_parser(&self, hash: u64) -> Option<(*const u8, usize)> {
        self.flows.hinted_ext(hash).and_then(parser_extent)
    }

    pub fn packet(&mut self, pkt: PacketRef<'_>, sink: &mut dyn EventSink) -> Verdict {
        let meta = pkt.meta;
        // Flows this packet's time expires end just before it, under the key the
        // dispatcher's clock tick for this packet gives them on every other worker.
        self.advance_clock(meta.ts, &mut Out::new(clock_key(meta.pcap_cnt.saturating_sub(1)), sink));
        let out = &mut Out::new(packet_key(meta.pcap_cnt), sink);
        self.decoder.pkts += 1;
        self.decoder.bytes += meta.wire_len as u64;
        match meta.link {
            LinkType::Ethernet => self.decoder.ethernet += 1,
            LinkType::Unsupported(_) => self.decoder.unsupported_link += 1,
            _ => {}
        }
        let d = decode::decode(meta.link, pkt.data, &self.decode_opts);
        self.count_decoded(&d);
        if self.log_decode_anomalies && !d.events.is_empty() {
            out.emit(Event::Anomaly(&AnomalyEvent { meta, frame: pkt.data, decoded: &d, tuple: d.tuple() }));
        }
        // As in Suricata, a packet with a bad checksum still counts in its flow and is
        // inspected (checksum keywords need it), but it does not touch TCP state or the stream.
        let skip_stream = d.bad_checksum && self.reject_bad_checksum();
        let Some(tuple) = d.tuple() else { return Verdict::Pass };
        if !self.detection.detectors.is_empty() {
            self.detection.detectors.packet(&detector_facts(&tuple, &d, meta));
        }
        if let Some(t) = d.tunnel {
            self.outer_flow(&t, meta, out);
        }
        let mut wire =
            WirePacket { meta, frame: pkt.data, decoded: &d, tuple, payload_in_stream: false, no_payload: false };
        if d.fragment {
            // Fragments are not reassembled yet: they are inspected on their own, without a flow.
            let run = self.detection.run(&wire, None, None, None, None, out);
            return self.detection.conclude(&wire, &run, None, out);
        }
        let ended = &mut self.ended;
        let verdict = self.flows.process(&flow_packet(&wire, skip_stream), &mut |rec| ended.push(rec));
        for rec in self.ended.drain(..) {
            self.detection.end_flow(rec, &mut self.stream_mem, out);
        }
        let Some(mut verdict) = verdict else {
            let run = self.detection.run(&wire, None, None, None, None, out);
            return self.detection.conclude(&wire, &run, None, out);
        };
        if verdict.created && meta.bucket != 0 {
            self.flows.set_bucket(verdict.handle, meta.bucket);
        }
        if verdict.created
            && self.detection.engine.is_some()
            && self.flows.flow(verdict.handle).is_some_and(|f| dns_answer_first(&d, f, &self.stages.detection_ports))
        {
            // Suricata turns the flow round when detection finds its first datagram is an
            // answer: the capture began after the question.
            self.flows.swap_roles(verdict.handle);
            verdict.to_server = !verdict.to_server;
        }
        if verdict.to_server
            && self.detection.engine.is_some()
            && !skip_stream
            && self.flows.flow_and_ext_mut(verdict.handle).is_some_and(|(f, e)| {
                midstream::server_spoke_first(
                    &d,
                    f,
                    e.stream.is_none() && e.app.is_none(),
                    &self.stages.detection_ports,
                )
            })
        {
            // The TCP equivalent: a session picked up midstream whose first data is the
            // server's is turned round, TCP session sides included.
            self.flows.reverse_session(verdict.handle);
            verdict.to_server = false;
        }
        let Some((flow, ext)) = self.flows.flow_and_ext_mut(verdict.handle) else { return Verdict::Pass };
        if verdict.established
            && !ext.handshake_reported
            && !self.detection.detectors.is_empty()
            && matches!(d.l4, L4::Tcp(_))
        {
            ext.handshake_reported = true;
            let (client, server) = (flow.client(), flow.server());
            let v4 = tuple.is_v4;
            self.detection.detectors.flow_event(&DetectorFlowEvent::HandshakeDone {
                client: (decode::ip_addr(&client.0, v4), client.1),
                server: (decode::ip_addr(&server.0, v4), server.1),
            });
        }
        if self.track_macs && meta.link == LinkType::Ethernet {
            ext.macs.get_or_insert_with(Default::default).add_frame(pkt.data, verdict.to_server);
        }
        if ext.bypass.mode.skips_inspection() {
            // Bypassed: tracked in the flow table, nothing else.
            let c = &mut self.detection.bypass;
            let (pkts, bytes) = match ext.bypass.mode {
                BypassMode::Capture => (&mut c.local_capture_pkts, &mut c.local_capture_bytes),
                _ => (&mut c.local_pkts, &mut c.local_bytes),
            };
            *pkts += 1;
            *bytes += meta.wire_len as u64;
            return Verdict::Pass;
        }
        if let Some(gated) = self.detection.flow_gate(&wire, flow.flow_id, &verdict, ext, self.midstream_policy, out) {
            let (dropped, bypassed) = (ext.dropped, ext.bypass.mode != BypassMode::None);
            if dropped {
                self.flows.freeze_tcp(verdict.handle);
            }
            if bypassed {
                self.flows.set_bypassed(verdict.handle, true);
            }
            return gated;
        }
        let dir = if verdict.to_server { Direction::ToServer } else { Direction::ToClient };
        if ext.no_payload {
            wire.no_payload = true;
            self.encrypted_counters.packets += 1;
        }
        let mut facts = FlowFacts {
            info: flow_info(flow, &verdict),
            client: flow.client(),
            server: flow.server(),
            start: flow.first_ts,
        };
        let FlowExt { stream, detect, alerted, dropped, app, no_payload, .. } = ext;
        let mut run = RunVerdict::default();
        let mut inspected = false;
        let mut app_layer = None;
        let mut first_tx = None;
        let has_engine = self.detection.engine.is_some();
        // Reassembly and app-layer state are created with the flow's first payload byte
        // (either direction), not with its first packet: a SYN flood or a port scan then
        // costs only the flow table's slot, which `flow.memcap` covers. Until then the
        // stream facts come from the session alone (see `stream_facts_without_data`).
        let tcp_data = matches!(d.l4, L4::Tcp(_)) && (stream.is_some() || !d.payload.is_empty());
        if let (L4::Tcp(_), true, false) = (&d.l4, has_engine && !skip_stream, tcp_data) {
            facts.info.stream_size = stream_facts_without_data(flow.tcp.stream());
        }
        if let (L4::Tcp(t), true) = (&d.l4, has_engine && !skip_stream && tcp_data) {
            let stages = &self.stages;
            let reassembly = stream.get_or_insert_with(|| stages.new_reassembly(flow));
            let seg = Segment {
                seq: t.seq(),
                ack: t.ack(),
                flags: TcpFlags(t.flags()),
                window: t.window(),
                payload: d.payload,
            };
            let outcome = reassembly.on_segment(dir, &seg, flow.tcp.stream(), &mut self.stream_mem);
            wire.payload_in_stream = matches!(outcome.data, Some(InsertResult::Inserted | InsertResult::Skipped));
            facts.info.stream_bytes =
                [reassembly.inspected(Direction::ToServer), reassembly.inspected(Direction::ToClient)];
            facts.info.stream_size =
                [reassembly.seq_space_seen(Direction::ToServer), reassembly.seq_space_seen(Direction::ToClient)];
            // This packet releases data to the app layer by acking it (the opposite
            // direction) and, in inline mode, in its own direction.
            let al = app.get_or_insert_with(|| stages.new_app_layer());
            let ports = (flow.client().1, flow.server().1);
            for side in app_feed_sides(reassembly, dir, seg.flags).into_iter().flatten() {
                al.feed(reassembly, side, ports, &mut self.stream_mem, &mut self.detection.app_counters);
            }
            first_tx = al.take_pending(dir);
            let det = &mut self.detection;
            reassembly.inspect_raw_held(dir, &mut self.stream_mem, |chunk, held| {
                det.repeat_chunk = inspected;
                inspected = true;
                let mut view = al.view(first_tx, dir);
                run.merge(det.run(&wire, Some(facts), Some((chunk, held)), Some(detect), Some(&mut view), out));
            });
            app_layer = Some(al);
        } else if let (L4::Udp(_), true) = (&d.l4, has_engine) {
            // UDP: each datagram is parsed as it arrives and its transaction inspected on
            // this packet. App state exists only for flows that may carry a UDP protocol.
            // A bad UDP checksum does not keep the datagram from the parser (Suricata
            // checks UDP checksums only for the checksum keywords).
            let ports = (flow.client().1, flow.server().1);
            if app.is_some() || self.stages.detection_ports.udp_candidate(dir, ports, d.payload) {
                let al = app.get_or_insert_with(|| self.stages.new_app_layer());
                al.on_datagram(dir, d.payload, ports, &mut self.detection.app_counters);
                first_tx = al.take_pending(dir);
                app_layer = Some(al);
            }
        }
        if !inspected {
            let mut view = app_layer.as_deref_mut().map(|al| al.view(first_tx, dir));
            run.merge(self.detection.run(&wire, Some(facts), None, Some(detect), view.as_mut(), out));
        }
        if let Some(al) = app_layer {
            run.merge(self.detection.run_pending(&wire, facts, al, dir, detect, out));
            let flow_tuple = if verdict.to_server { wire.tuple } else { wire.tuple.reversed() };
            let ether = self.track_macs.then(|| macs::frame_sides(pkt.data, verdict.to_server)).flatten();
            report_done(al, (meta.ts, meta.pcap_cnt), (flow_tuple, d.vlan, ether), facts, out);
            al.prune(&mut self.detection.app_counters);
        }
        // The parser saw the payload turn to ciphertext on this packet (which was inspected
        // in full): later packets are not (see `encrypted`).
        if !*no_payload {
            if let Some(why) = app.as_deref().and_then(|a| self.encrypted.payload_encrypted(a)) {
                *no_payload = true;
                self.encrypted_counters.count(why);
                if let Some(s) = stream.as_deref_mut() {
                    s.disable_raw();
                }
            }
        }
        *alerted |= run.alerted;
        *dropped |= run.drop_flow;
        let bypass_now = if ext.bypass.mode != BypassMode::None || *dropped {
            None
        } else if run.bypass {
            Some(BypassReason::Rule)
        } else if self.bypass.stream_depth
            && stream
                .as_ref()
                .is_some_and(|s| s.depth_reached(Direction::ToServer) || s.depth_reached(Direction::ToClient))
        {
            Some(BypassReason::StreamDepth)
        } else if self.bypass.tls && app.as_ref().is_some_and(|a| a.tls_handshake_done()) {
            Some(BypassReason::TlsEncrypted)
        } else if self.bypass.ssh && app.as_ref().is_some_and(|a| a.ssh_keys_exchanged()) {
            Some(BypassReason::SshEncrypted)
        } else {
            None
        };
        if let Some(reason) = bypass_now {
            self.detection.bypass.count_reason(reason);
            if self.bypass.capture {
                ext.bypass.mode = BypassMode::Capture;
                self.bypass_requests.push(BypassRequest {
                    handle: verdict.handle,
                    flow_id: flow.flow_id,
                    is_v4: flow.is_v4(),
                    proto: flow.key.tuple.proto,
                    client: flow.client(),
                    server: flow.server(),
                });
            } else {
                ext.bypass.mode = BypassMode::Local;
            }
        }
        // What the app layer's state grows to and the flowbits/flowints count against
        // `flow.memcap` (HTTP bodies against the HTTP memcap; the fixed-size app-layer
        // structures are bounded by the flow count: `AppLayer::charged_bytes`); TCP
        // reassembly (its box and segments) is charged to the stream memcaps by the stream
        // itself, so nothing is charged twice.
        let app_heap = app.as_deref_mut().map_or(0, AppLayer::charged_bytes_cached)
            + detect.vars.heap_bytes()
            + ext.macs.as_ref().map_or(0, |m| m.heap_bytes() as u64);
        let FlowExt { drop_logged, .. } = ext;
        let log = FlowDropLog {
            flow_id: flow.flow_id,
            to_server: verdict.to_server,
            flow_dropped: *dropped,
            logged: drop_logged,
        };
        let verdict_out = self.detection.conclude(&wire, &run, Some(log), out);
        if bypass_now.is_some() {
            self.flows.set_bypassed(verdict.handle, true);
        }
        if run.drop_flow {
            self.flows.freeze_tcp(verdict.handle);
        }
        self.flows.set_ext_bytes(verdict.handle, app_heap);
        verdict_out
    }

    /// Flows the engine bypassed since the last call, for the capture's bypass table
    /// (only with [`BypassSettings::capture`]). Cheap when there are none.
    pub fn take_bypass_requests(&mut self) -> std::vec::Drain<'_, BypassRequest> {
        self.bypass_requests.drain(..)
    }

    /// Whether [`Inspector::take_bypass_requests`] has anything.
    pub fn has_bypass_requests(&self) -> bool {
        !self.bypass_requests.is_empty()
    }

    /// Flow ids of capture-bypassed flows that ended since the last call: remove them from
    /// the capture's table (their counts are already in their eve records).
    pub fn take_bypass_ended(&mut self) -> std::vec::Drain<'_, u64> {
        self.detection.bypass_ended.drain(..)
    }

    /// The capture's counts for a capture-bypassed flow. `active_at`: they moved since the
    /// last report, which was at that time (the caller's clock, as given to
    /// [`Inspector::clock`]), so the flow is alive and its idle time restarts there. Call it
    /// before the clock tick that may expire the flow.
    pub fn bypass_update(
        &mut self,
        handle: crate::flow::FlowHandle,
        counts: BypassCounts,
        active_at: Option<Timestamp>,
    ) {
        let Some(ext) = self.flows.ext_mut(handle) else { return };
        if ext.bypass.mode != BypassMode::Capture {
            return;
        }
        ext.bypass.kernel = counts;
        if let Some(ts) = active_at {
            self.flows.touch(handle, ts);
        }
    }

    /// The capture could not take a requested flow (its table is full): the flow stays
    /// inspected and is not offered again.
    pub fn bypass_refused(&mut self, handle: crate::flow::FlowHandle) {
        let Some(ext) = self.flows.ext_mut(handle) else { return };
        if ext.bypass.mode == BypassMode::Capture {
            ext.bypass.mode = BypassMode::Refused;
            self.detection.bypass.refused += 1;
            self.flows.set_bypassed(handle, false);
        }
    }

    /// Takes the flows of the dispatch buckets `moving` selects out of this worker, with all
    /// their state (TCP reassembly, app layer, flowbits), for the worker the dispatcher now
    /// sends those buckets to ([`Inspector::import_flows`]). What they hold leaves this
    /// worker's stream and HTTP memory counts.
    pub fn export_flows(&mut self, moving: impl Fn(u16) -> bool) -> FlowHandover {
        let mut flows = self.flows.take_flows(|f| moving(f.bucket));
        for moved in &mut flows {
            let ext = moved.ext_mut();
            if let Some(stream) = &ext.stream {
                stream.uncharge_from(&mut self.stream_mem);
            }
            if let Some(app) = &ext.app {
                app.uncharge_from(&mut self.detection.app_counters);
            }
        }
        FlowHandover { flows }
    }

    /// Adopts flows another worker exported. A flow the flow memcap has no room for ends
    /// here at once (reason "forced", under the clock key of packet `after`).
    pub fn import_flows(&mut self, mut handover: FlowHandover, after: u64, sink: &mut dyn EventSink) {
        for moved in &mut handover.flows {
            let ext = moved.ext_mut();
            if let Some(stream) = &ext.stream {
                stream.charge_to(&mut self.stream_mem);
            }
            if let Some(app) = &ext.app {
                app.charge_to(&mut self.detection.app_counters);
            }
        }
        let ended = &mut self.ended;
        self.flows.adopt_flows(handover.flows, &mut |rec| ended.push(rec));
        let out = &mut Out::new(clock_key(after), sink);
        for rec in self.ended.drain(..) {
            self.detection.end_flow(rec, &mut self.stream_mem, out);
        }
    }

    /// Whether a packet or clock tick stamped `ts` would run flow expiry (the first of a
    /// new capture second): a worker still waiting for flows handed to it must have them
    /// before that, or they would miss their timeout.
    pub fn expires_at(&self, ts: Timestamp) -> bool {
        ts > self.now && ts.secs() > self.last_expiry_sec
    }

    /// The dispatcher's clock: expire flows even when this worker gets no packets.
    pub fn clock(&mut self, tick: ClockTick, sink: &mut dyn EventSink) {
        // The tick follows packet `tick.pcap_cnt`, whose worker expired flows just before
        // inspecting it (see `packet`): the same key here, so the output does not depend
        // on which worker a flow was on.
        self.advance_clock(tick.ts, &mut Out::new(clock_key(tick.pcap_cnt.saturating_sub(1)), sink));
    }

    /// End of input: every flow still open is reported with reason "shutdown".
    pub fn finish(&mut self, sink: &mut dyn EventSink) {
        self.finish_loading(sink, &mut |_, _| {});
    }

    /// [`Inspector::finish`], handing `load` the memory (start, length) of the flows about
    /// to end a few flows ahead, to load it into the caches (see
    /// [`FlowTable::flush_all_ahead`]; the core only names addresses).
    pub fn finish_loading(&mut self, sink: &mut dyn EventSink, load: &mut dyn FnMut(*const u8, usize)) {
        let (det, mem) = (&mut self.detection, &mut self.stream_mem);
        let out = &mut Out::new(SHUTDOWN_KEY, sink);
        self.flows.flush_all_ahead(&mut |rec| det.end_flow(rec, mem, out), &mut |upcoming| match upcoming {
            Upcoming::Slot(start, len) => load(start, len),
            Upcoming::State(ext) => state_extents(ext).into_iter().flatten().for_each(|(start, len)| load(start, len)),
            Upcoming::Inner(ext) => parser_extent(ext).into_iter().for_each(|(start, len)| load(start, len)),
        });
    }

    fn advance_clock(&mut self, ts: Timestamp, out: &mut Out<'_>) {
        if ts <= self.now {
            return;
        }
        self.now = ts;
        // Expiry scans are amortised to once per second of capture time.
        if ts.secs() > self.last_expiry_sec {
            self.last_expiry_sec = ts.secs();
            let (det, mem) = (&mut self.detection, &mut self.stream_mem);
            self.flows.expire(ts, &mut |rec| det.end_flow(rec, mem, out));
        }
    }

    /// Whether a packet with a bad checksum is kept out of TCP state and stream reassembly.
    fn reject_bad_checksum(&mut self) -> bool {
        self.decoder.bad_checksum += 1;
        match self.checksum {
            ChecksumMode::Never => false,
            ChecksumMode::Always => true,
            ChecksumMode::Auto => true,
        }
    }

    fn count_decoded(&mut self, d: &Decoded<'_>) {
        let c = &mut self.decoder;
        if self.checksum == ChecksumMode::Auto {
            self.checksum_sampled += 1;
            self.checksum_bad_in_sample += d.bad_checksum as u64;
            if self.checksum_sampled == AUTO_CHECKSUM_SAMPLE {
                if self.checksum_bad_in_sample * 10 > AUTO_CHECKSUM_SAMPLE {
                    self.checksum = ChecksumMode::Never;
                    self.decode_opts.validate_checksums = false;
                    c.checksum_auto_disabled = 1;
                } else {
                    self.checksum = ChecksumMode::Always;
                }
            }
        }
        if d.vlan_depth > 0 {
            c.vlan += 1;
        }
        if d.vlan_depth > 1 {
            c.vlan_qinq += 1;
        }
        match &d.ip {
            Some(IpLayer::V4(_)) => {
                c.ipv4 += 1;
                c.ipv4_frag += d.fragment as u64;
            }
            Some(IpLayer::V6(_)) => {
                c.ipv6 += 1;
                c.ipv6_frag += d.fragment as u64;
            }
            None => {}
        }
        match &d.l4 {
            L4::Tcp(_) => c.tcp += 1,
            L4::Udp(_) => c.udp += 1,
            L4::Icmpv4(_) => c.icmpv4 += 1,
            L4::Icmpv6(_) => c.icmpv6 += 1,
            L4::Other(_) => c.other_proto += 1,
            L4::None => {}
        }
        if !d.events.is_empty() {
            c.invalid += 1;
            for ev in d.events.iter() {
                c.events[ev.index()] += 1;
            }
        }
    }

    /// The detectors' counts since the last call (the live worker sends them to the
    /// DDoS controller once per second). Empty when no detector runs.
    pub fn take_detector_tallies(&mut self) -> Tallies {
        self.detection.detectors.take_tallies()
    }

    pub fn counters(&self) -> CounterSet {
        let c = &self.decoder;
        let mut s = CounterSet::new();
        for (name, v) in [
            ("decoder.pkts", c.pkts),
            ("decoder.bytes", c.bytes),
            ("decoder.invalid", c.invalid),
            ("decoder.ethernet", c.ethernet),
            ("decoder.vlan", c.vlan),
            ("decoder.vlan_qinq", c.vlan_qinq),
            ("decoder.ipv4", c.ipv4),
            ("decoder.ipv6", c.ipv6),
            ("decoder.tcp", c.tcp),
            ("decoder.udp", c.udp),
            ("decoder.icmpv4", c.icmpv4),
            ("decoder.icmpv6", c.icmpv6),
            ("decoder.other_ip_proto", c.other_proto),
            ("decoder.ipv4_frag_not_reassembled", c.ipv4_frag),
            ("decoder.ipv6_frag_not_reassembled", c.ipv6_frag),
            ("decoder.unsupported_link_type", c.unsupported_link),
            ("decoder.bad_checksum", c.bad_checksum),
            ("decoder.checksum_auto_disabled", c.checksum_auto_disabled),
        ] {
            s.add(name, v);
        }
        for ev in DecodeEvent::ALL {
            s.add(&format!("decoder.event.{}", ev.name()), c.events[ev.index()]);
        }
        for (name, v) in self.flows.counters().iter() {
            s.add(name, v);
        }
        for (name, v) in self.stream_mem.counters() {
            s.add(name, v);
        }
        let det = &self.detection;
        s.add("detect.alert", det.counters.alerts);
        s.add("detect.stream_pseudo_packets", det.counters.stream_pseudo_packets);
        s.add("ips.blocked", det.counters.blocked_packets);
        det.bypass.add_to(&mut s);
        self.encrypted_counters.add_to(&mut s);
        det.app_counters.add_to(&mut s);
        if let Some(engine) = &det.engine {
            for (name, v) in engine.counters(&det.ctx) {
                s.add(name, v);
            }
            for (name, v) in engine.prefilter_profile(&det.ctx) {
                s.add(&name, v);
            }
        }
        s
    }
}

/// What the detectors see of a decoded packet (no allocation).
fn detector_facts(tuple: &crate::decode::FiveTuple, d: &Decoded<'_>, meta: &crate::packet::PacketMeta) -> PacketFacts {
    PacketFacts {
        src: tuple.src_ip(),
        dst: tuple.dst_ip(),
        sport: tuple.src_port,
        dport: tuple.dst_port,
        proto: tuple.proto,
        tcp_flags: if let L4::Tcp(t) = &d.l4 { t.flags() } else { 0 },
        len: meta.wire_len,
        to_server: None,
        ts: meta.ts,
    }
}

/// The directions whose released stream data a TCP packet hands the app layer, in order.
/// A SYN/ACK hands none: Suricata's SYN_SENT state accepts it without running reassembly,
/// so TCP Fast Open data the SYN/ACK acknowledges is parsed on a later packet (and an
/// `alert http` rule without payload sees the protocol from then on). Otherwise the data
/// the packet acknowledges (the opposite direction), and its own direction's only where
/// a packet's own data is parsed on arrival (inline mode, one-sided pickup).
fn app_feed_sides(stream: &TcpReassembly, dir: Direction, flags: TcpFlags) -> [Option<Direction>; 2] {
    if flags.has(TcpFlags::SYN) && flags.has(TcpFlags::ACK) {
        return [None, None];
    }
    [stream.app_feeds_own_direction().then_some(dir), Some(dir.opposite())]
}

/// Reports the transactions the app layer finished, oldest first.
/// `at` is the completing packet's (timestamp, pcap_cnt); `addr` the flow's client-to-server
/// tuple, vlan and (client, server) MAC addresses.
fn report_done(
    app: &mut AppLayer,
    at: (Timestamp, u64),
    addr: (crate::decode::FiveTuple, crate::decode::VlanIds, Option<(macs::Mac, macs::Mac)>),
    flow: FlowFacts,
    out: &mut Out<'_>,
) {
    let ((ts, pcap_cnt), (tuple, vlan, ether)) = (at, addr);
    while let Some(id) = app.take_done() {
        if let Some(tx) = app.tx(id) {
            out.emit(Event::Transaction(&TxEvent { ts, pcap_cnt, flow, tuple, vlan, ether, proto: app.proto, tx }));
        }
    }
    while let Some(anomaly) = app.take_anomaly() {
        out.emit(Event::AppAnomaly(&AppAnomalyEvent { ts, pcap_cnt, flow, tuple, vlan, proto: app.proto, anomaly }));
    }
}

/// A new UDP flow's first datagram, on a DNS port, is a DNS response (Suricata's DNS
/// probe tells the direction, and its app layer reverses the flow to match).
fn dns_answer_first(d: &Decoded<'_>, flow: &Flow, ports: &DetectionPorts) -> bool {
    matches!(d.l4, L4::Udp(_))
        && ports.dns(Transport::Udp, (flow.client().1, flow.server().1))
        && crate::applayer::dns::probe_message(d.payload, d.payload.len()) == Some(false)
}

/// The flow-table view of a decoded packet.
fn flow_packet(wire: &WirePacket<'_>, skip_stream: bool) -> FlowPacket {
    let d = wire.decoded;
    let tcp = match &d.l4 {
        L4::Tcp(t) if !skip_stream => {
            Some(TcpSegment { flags: t.flags(), seq: t.seq(), ack: t.ack(), window: t.window() })
        }
        _ => None,
    };
    FlowPacket {
        tuple: wire.tuple,
        vlan: d.vlan,
        ts: wire.meta.ts,
        pcap_cnt: wire.meta.pcap_cnt,
        // An inner packet counts with its own length in its flow, as Suricata's tunnel
        // pseudo-packet does (the outer flow has the whole packet's, see `outer_flow`).
        wire_len: match d.tunnel {
            Some(t) => wire.meta.wire_len.saturating_sub(t.inner_offset),
            None => wire.meta.wire_len,
        },
        payload_len: d.payload.len() as u32,
        tcp,
    }
}

/// What the rules may ask of the flow on this packet (stream figures come later).
fn flow_info(flow: &Flow, verdict: &crate::flow::PacketVerdict) -> FlowInfo {
    FlowInfo {
        flow_id: flow.flow_id,
        to_server: verdict.to_server,
        established: verdict.established,
        tx_established: false,
        pkts_toserver: flow.pkts_toserver,
        pkts_toclient: flow.pkts_toclient,
        bytes_toserver: flow.bytes_toserver,
        bytes_toclient: flow.bytes_toclient,
        stream_bytes: [0, 0],
        stream_size: [0, 0],
        age_secs: age_secs(flow.first_ts, flow.last_ts),
    }
}

/// `flow.age` of a flow seen from `first` to `last`, saturated at `u32::MAX`.
pub(crate) fn age_secs(first: crate::packet::Timestamp, last: crate::packet::Timestamp) -> u32 {
    last.secs().saturating_sub(first.secs()).min(u64::from(u32::MAX)) as u32
}

/// `stream_size` facts [client, server] of a TCP flow whose reassembly does not exist yet
/// (no payload so far): one for the SYN of each side the session gave a start, as
/// [`TcpReassembly::seq_space_seen`] reports before any data.
fn stream_facts_without_data(session: &crate::flow::tcp::StreamView) -> [u64; 2] {
    if !session.is_tracked() {
        return [0, 0];
    }
    [u64::from(session.base_seq(true).is_some()), u64::from(session.base_seq(false).is_some())]
}

/// Per-run settings the per-flow stages are created with (shared by the worker's flows).
struct Stages {
    stream_cfg: StreamConfig,
    host_os: Arc<HostOsPolicy>,
    detection_ports: Arc<DetectionPorts>,
    http_config: Arc<HttpConfig>,
}

impl Stages {
    /// TCP reassembly for a new flow, each direction's overlaps resolved as its receiving
    /// host would (`host-os-policy`).
    fn new_reassembly(&self, flow: &Flow) -> Box<TcpReassembly> {
        let mut r = Box::new(TcpReassembly::new(self.stream_cfg));
        // Created with the first payload: the packets before it (handshake, bare ACKs)
        // still count as seen for the one-sided-capture check. The current packet is
        // counted by the flow table already and by `on_segment` again, hence `- 1` below.
        let (to_server, to_client) = (flow.pkts_toserver, flow.pkts_toclient);
        r.note_packets_before_data(to_server.saturating_sub(1), to_client.saturating_sub(1));
        if !self.host_os.is_empty() {
            if let Some(p) = self.host_os.lookup(&flow.server().0) {
                r.set_policy(Direction::ToServer, p);
            }
            if let Some(p) = self.host_os.lookup(&flow.client().0) {
                r.set_policy(Direction::ToClient, p);
            }
        }
        r
    }

    fn new_app_layer(&self) -> Box<AppLayer> {
        Box::new(AppLayer::new(self.http_config.clone(), self.detection_ports.clone()))
    }
}
