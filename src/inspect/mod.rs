//! The sans-IO inspection core a worker owns: decode, flow tracking, and (from the
//! detection work on) rules. It is fed packets and clock ticks and writes eve lines into an
//! [`EventBuf`]; it knows nothing of threads, rings, sockets or files, so the single-thread
//! run mode, the worker threads and the tests all drive the same code.

use crate::counters::CounterSet;
use crate::decode::{self, DecodeEvent, DecodeOptions, Decoded, IpLayer, L4};
use crate::config::{EngineSettings, ExceptionPolicy};
use crate::flow::{FlowConfig, FlowPacket, FlowRecord, FlowTable, FlowTimeouts, StateTimeouts, TcpSegment};
use crate::output::eve::{format_timestamp, tcp_flags_hex, EventHeader};
use crate::output::merge::{clock_key, packet_key, EventBuf, SHUTDOWN_KEY};
use crate::config::StreamInline;
use crate::detect::engine::{Alert, DetectCtx, DetectEngine, DetectFlow, FlowInfo};
use crate::packet::{ClockTick, LinkType, PacketRef, Timestamp};
use crate::stream::{Direction, HostOsPolicy, InsertResult, ReassemblyMemory, Segment, StreamConfig, TcpFlags, TcpReassembly};
use crate::applayer::probe::{DetectionPorts, Transport};
use std::sync::Arc;

mod alert;
mod app;
mod dns;
mod tls;
pub use alert::{AlertLogOptions, XffOptions};
pub use app::AppLayer;
use app::AppCounters;
use alert::{write_drop_event, WirePacket};

pub use crate::config::ChecksumMode;

const AUTO_CHECKSUM_SAMPLE: u64 = 1000;

#[derive(Clone)]
pub struct InspectSettings {
    pub checksum: ChecksumMode,
    pub flow: FlowConfig,
    pub stream: StreamConfig,
    /// This worker's share of `stream.reassembly.memcap`.
    pub stream_memcap: u64,
    /// The compiled rules, shared by all workers; `None` runs without detection.
    pub detect: Option<Arc<DetectEngine>>,
    /// `--simulate-ips`: drop and reject rules block the packet and the rest of its flow.
    pub simulate_ips: bool,
    pub alert_log: AlertLogOptions,
    /// `stream.midstream-policy` resolved for this run mode.
    pub midstream_policy: ExceptionPolicy,
    /// `host-os-policy`: overlap policy per receiving host.
    pub host_os: Arc<HostOsPolicy>,
    /// App-layer `detection-ports` (DNS).
    pub detection_ports: Arc<DetectionPorts>,
    /// `app-layer.protocols.http.libhtp.default-config`.
    pub http: Arc<crate::applayer::http::HttpConfig>,
}

impl InspectSettings {
    /// Per-worker settings from the resolved configuration. Memory caps are global in the
    /// configuration and split evenly between workers, each of which owns its share.
    pub fn from_engine(engine: &EngineSettings, workers: usize, simulate_ips: bool) -> Self {
        let workers = workers.max(1) as u64;
        let per_proto = |t: &crate::config::ProtoTimeouts, emergency: bool| StateTimeouts {
            new: if emergency { t.emergency_new } else { t.new },
            established: if emergency { t.emergency_established } else { t.established },
            closed: if emergency { t.emergency_closed } else { t.closed },
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
            ..FlowConfig::default()
        };
        let stream = StreamConfig {
            depth: engine.stream_reassembly_depth,
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
            detect: None,
            simulate_ips,
            alert_log: AlertLogOptions::default(),
            midstream_policy,
            host_os: Arc::new(host_os),
            detection_ports: Arc::new(detection_ports(engine)),
            http: Arc::new(crate::applayer::http::HttpConfig::default()),
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
    /// `--simulate-ips`: a drop rule matched; every later packet of the flow is dropped.
    pub dropped: bool,
    /// An exception policy passed the flow (pass-flow, bypass): no more inspection.
    pub passed: bool,
    /// TCP reassembly, created with the flow's first TCP packet.
    pub stream: Option<Box<TcpReassembly>>,
    pub detect: DetectFlow,
    /// App-layer detection and parsing, created with the stream.
    pub app: Option<Box<AppLayer>>,
}

pub struct Inspector {
    flows: FlowTable<FlowExt>,
    decode_opts: DecodeOptions,
    checksum: ChecksumMode,
    checksum_sampled: u64,
    checksum_bad_in_sample: u64,
    decoder: DecoderCounters,
    stream_cfg: StreamConfig,
    midstream_policy: ExceptionPolicy,
    host_os: Arc<HostOsPolicy>,
    detection_ports: Arc<DetectionPorts>,
    http_config: Arc<crate::applayer::http::HttpConfig>,
    stream_mem: ReassemblyMemory,
    detection: Detection,
    /// Flows that ended while a packet was processed (evicted, port reused).
    ended: Vec<FlowRecord<FlowExt>>,
    /// Latest capture time seen; flows expire against it.
    now: Timestamp,
    last_expiry_sec: u64,
}

/// What one detection run needs besides the flow: kept apart from the flow table so both
/// can be borrowed at once.
struct Detection {
    engine: Option<Arc<DetectEngine>>,
    ctx: DetectCtx,
    alerts: Vec<Alert>,
    simulate_ips: bool,
    log: AlertLogOptions,
    counters: AlertCounters,
    app_counters: AppCounters,
    /// JA3/JA3S go into eve's `tls` object: Suricata computes them when rules use them.
    log_ja3: bool,
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
            decode_opts: DecodeOptions { validate_checksums: settings.checksum != ChecksumMode::Never, ..DecodeOptions::default() },
            checksum: settings.checksum,
            checksum_sampled: 0,
            checksum_bad_in_sample: 0,
            decoder: DecoderCounters::default(),
            // App-layer parsers run with detection; they consume what the stream retains.
            stream_cfg: StreamConfig { app_layer: settings.detect.is_some(), ..settings.stream },
            midstream_policy: settings.midstream_policy,
            host_os: settings.host_os.clone(),
            detection_ports: settings.detection_ports.clone(),
            http_config: settings.http.clone(),
            stream_mem: ReassemblyMemory::new(settings.stream_memcap.max(1)),
            detection: Detection {
                engine,
                ctx,
                alerts: Vec::new(),
                simulate_ips: settings.simulate_ips,
                log: settings.alert_log.clone(),
                counters: AlertCounters::default(),
                app_counters: AppCounters::default(),
                log_ja3: settings.detect.as_ref().is_some_and(|e| {
                    ["ja3.hash", "ja3.string", "ja3s.hash", "ja3s.string"].iter().any(|b| e.uses_buffer(b))
                }),
            },
            ended: Vec::new(),
            now: Timestamp(0),
            last_expiry_sec: 0,
        }
    }

    /// Inspects one packet; events it raises go to `out` keyed by its `pcap_cnt`.
    pub fn packet(&mut self, pkt: PacketRef<'_>, out: &mut EventBuf) {
        let meta = pkt.meta;
        self.advance_clock(meta.ts, packet_key(meta.pcap_cnt), out);
        self.decoder.pkts += 1;
        self.decoder.bytes += meta.wire_len as u64;
        match meta.link {
            LinkType::Ethernet => self.decoder.ethernet += 1,
            LinkType::Unsupported(_) => self.decoder.unsupported_link += 1,
            _ => {}
        }
        let d = decode::decode(meta.link, pkt.data, &self.decode_opts);
        self.count_decoded(&d);
        // As in Suricata, a packet with a bad checksum still counts in its flow and is
        // inspected (checksum keywords need it), but it does not touch TCP state or the stream.
        let skip_stream = d.bad_checksum && self.reject_bad_checksum();
        let Some(tuple) = d.tuple() else { return };
        let key = packet_key(meta.pcap_cnt);
        let mut wire = WirePacket { meta, frame: pkt.data, decoded: &d, tuple, payload_in_stream: false };
        if d.fragment {
            // Fragments are not reassembled yet: they are inspected on their own, without a flow.
            self.detection.run(&wire, None, None, None, None, key, out);
            return;
        }
        let tcp = match &d.l4 {
            L4::Tcp(t) if !skip_stream => Some(TcpSegment { flags: t.flags(), seq: t.seq(), ack: t.ack(), window: t.window() }),
            _ => None,
        };
        let fp = FlowPacket {
            tuple,
            vlan: d.vlan,
            ts: meta.ts,
            pcap_cnt: meta.pcap_cnt,
            wire_len: meta.wire_len,
            payload_len: d.payload.len() as u32,
            tcp,
        };
        let ended = &mut self.ended;
        let verdict = self.flows.process(&fp, &mut |rec| ended.push(rec));
        for rec in self.ended.drain(..) {
            self.detection.end_flow(rec, &mut self.stream_mem, key, out);
        }
        let Some(verdict) = verdict else {
            self.detection.run(&wire, None, None, None, None, key, out);
            return;
        };
        let Some((flow, ext)) = self.flows.flow_and_ext_mut(verdict.handle) else { return };
        if verdict.midstream_exception {
            match self.midstream_policy {
                ExceptionPolicy::PassFlow | ExceptionPolicy::Bypass => ext.passed = true,
                ExceptionPolicy::DropFlow | ExceptionPolicy::DropPacket => ext.dropped = true,
                // Reject blocks only as an IPS; in IDS mode it leaves the packet alone.
                ExceptionPolicy::Reject if self.detection.simulate_ips => ext.dropped = true,
                _ => {}
            }
            if ext.dropped && !ext.passed {
                self.detection.counters.blocked_packets += 1;
                write_drop_event(&wire, flow.flow_id, "stream midstream", key, out);
                return;
            }
        }
        if ext.passed {
            return;
        }
        if ext.dropped {
            self.detection.counters.blocked_packets += 1;
            write_drop_event(&wire, flow.flow_id, "flow drop", key, out);
            return;
        }
        let dir = if verdict.to_server { Direction::ToServer } else { Direction::ToClient };
        let mut info = FlowInfo {
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
        };
        let FlowExt { stream, detect, alerted, dropped, app, .. } = ext;
        let mut inspected = false;
        let mut app_layer = None;
        let mut first_tx = None;
        if let (L4::Tcp(t), true) = (&d.l4, self.detection.engine.is_some() && !skip_stream) {
            let host_os = &self.host_os;
            let reassembly = stream.get_or_insert_with(|| {
                let mut r = Box::new(TcpReassembly::new(self.stream_cfg));
                if !host_os.is_empty() {
                    // Each direction's overlaps are resolved as its receiving host would.
                    if let Some(p) = host_os.lookup(&flow.server().0) {
                        r.set_policy(Direction::ToServer, p);
                    }
                    if let Some(p) = host_os.lookup(&flow.client().0) {
                        r.set_policy(Direction::ToClient, p);
                    }
                }
                r
            });
            let seg = Segment { seq: t.seq(), ack: t.ack(), flags: TcpFlags(t.flags()), window: t.window(), payload: d.payload };
            let outcome = reassembly.on_segment(dir, &seg, flow.tcp.stream(), &mut self.stream_mem);
            wire.payload_in_stream = outcome.data == Some(InsertResult::Inserted);
            info.stream_bytes = [reassembly.inspected(Direction::ToServer), reassembly.inspected(Direction::ToClient)];
            info.stream_size = [reassembly.seq_space_seen(Direction::ToServer), reassembly.seq_space_seen(Direction::ToClient)];
            // This packet may release data in its own direction (inline mode, or the
            // other side's ACKs arrived earlier) and, by acking, in the opposite one.
            let (http_config, detection_ports) = (&self.http_config, &self.detection_ports);
            let al = app.get_or_insert_with(|| Box::new(AppLayer::new(http_config.clone(), detection_ports.clone())));
            let ports = (flow.client().1, flow.server().1);
            for side in [dir, dir.opposite()] {
                al.feed(reassembly, side, ports, &mut self.stream_mem, &mut self.detection.app_counters);
            }
            first_tx = al.take_pending(dir);
            let det = &mut self.detection;
            reassembly.inspect_raw_held(dir, &mut self.stream_mem, |chunk, held| {
                inspected = true;
                let mut view = al.view(first_tx, dir);
                let verdict = det.run(&wire, Some((info, flow)), Some((chunk, held)), Some(detect), Some(&mut view), key, out);
                *alerted |= verdict.alerted;
                *dropped |= verdict.drop_flow;
            });
            app_layer = Some(al);
        } else if let (L4::Udp(_), true) = (&d.l4, self.detection.engine.is_some()) {
            // UDP: each datagram is parsed as it arrives and its transaction inspected on
            // this packet. App state exists only for flows that may carry a UDP protocol.
            // A bad UDP checksum does not keep the datagram from the parser (Suricata
            // checks UDP checksums only for the checksum keywords).
            let ports = (flow.client().1, flow.server().1);
            if app.is_some() || self.detection_ports.dns(Transport::Udp, ports) {
                let (http_config, detection_ports) = (&self.http_config, &self.detection_ports);
                let al = app.get_or_insert_with(|| Box::new(AppLayer::new(http_config.clone(), detection_ports.clone())));
                al.on_datagram(dir, d.payload, ports, &mut self.detection.app_counters);
                first_tx = al.take_pending(dir);
                app_layer = Some(al);
            }
        }
        if !inspected {
            let mut view = app_layer.as_deref_mut().map(|al| al.view(first_tx, dir));
            let verdict = self.detection.run(&wire, Some((info, flow)), None, Some(detect), view.as_mut(), key, out);
            *alerted |= verdict.alerted;
            *dropped |= verdict.drop_flow;
        }
        if let Some(al) = app_layer {
            // Further transactions that progressed (pipelining): their rules only.
            while let Some(tx) = al.take_pending(dir) {
                let mut view = al.view(Some(tx), dir);
                view.app_only = true;
                let verdict = self.detection.run(&wire, Some((info, flow)), None, Some(detect), Some(&mut view), key, out);
                *alerted |= verdict.alerted;
                *dropped |= verdict.drop_flow;
            }
            al.prune();
        }
    }

    /// The dispatcher's clock: expire flows even when this worker gets no packets.
    pub fn clock(&mut self, tick: ClockTick, out: &mut EventBuf) {
        self.advance_clock(tick.ts, clock_key(tick.pcap_cnt), out);
    }

    /// End of input: every flow still open is logged with reason "shutdown".
    pub fn finish(&mut self, out: &mut EventBuf) {
        let (det, mem) = (&mut self.detection, &mut self.stream_mem);
        self.flows.flush_all(&mut |rec| det.end_flow(rec, mem, SHUTDOWN_KEY, out));
    }

    fn advance_clock(&mut self, ts: Timestamp, key: u64, out: &mut EventBuf) {
        if ts <= self.now {
            return;
        }
        self.now = ts;
        // Expiry scans are amortised to once per second of capture time.
        if ts.secs() > self.last_expiry_sec {
            self.last_expiry_sec = ts.secs();
            let (det, mem) = (&mut self.detection, &mut self.stream_mem);
            self.flows.expire(ts, &mut |rec| det.end_flow(rec, mem, key, out));
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
        let a = &det.app_counters;
        s.add("app_layer.flow.http", a.flows_http);
        s.add("app_layer.flow.tls", a.flows_tls);
        s.add("app_layer.flow.other", a.flows_other);
        s.add("app_layer.tx.http", a.http_tx);
        s.add("app_layer.tx.tls", a.tls_tx);
        for (name, v) in a.tls.counters() {
            s.add(&format!("app_layer.{name}"), v);
        }
        s.add("app_layer.http.anomalies", a.http_anomalies);
        s.add("app_layer.pending_dropped", a.pending_dropped);
        s.add("app_layer.alerted_forgotten", a.alerted_forgotten);
        for (name, v) in a.dns.counters() {
            s.add(&name, v);
        }
        if let Some(engine) = &det.engine {
            for (name, v) in engine.counters(&det.ctx) {
                s.add(name, v);
            }
        }
        s
    }
}

/// Writes Suricata's eve `flow` event for a finished flow.
pub fn write_flow_event(rec: &FlowRecord<FlowExt>, key: u64, out: &mut EventBuf) {
    out.push(key, |buf| {
        let header = EventHeader {
            ts: rec.end,
            flow_id: Some(rec.flow_id),
            pcap_cnt: None,
            event_type: "flow",
            src_ip: ip_addr(&rec.src_ip, rec.is_v4),
            src_port: rec.src_port,
            dest_ip: ip_addr(&rec.dst_ip, rec.is_v4),
            dest_port: rec.dst_port,
            proto: rec.proto,
            icmp: rec.icmp_toserver.or(matches!(rec.proto, 1 | 58).then_some((0, 0))),
        };
        let mut o = header.write(buf);
        if let Some(p) = rec.ext.app.as_ref().and_then(|a| a.proto) {
            o.str("app_proto", p.name());
        }
        if let Some((t, c)) = rec.icmp_toclient {
            o.u64("response_icmp_type", t.into()).u64("response_icmp_code", c.into());
        }
        let vlans: Vec<String> = rec.vlan.iter().filter(|&&v| v != 0).map(|v| v.to_string()).collect();
        if !vlans.is_empty() {
            o.raw("vlan", &format!("[{}]", vlans.join(",")));
        }
        o.open("flow")
            .u64("pkts_toserver", rec.pkts_toserver)
            .u64("pkts_toclient", rec.pkts_toclient)
            .u64("bytes_toserver", rec.bytes_toserver)
            .u64("bytes_toclient", rec.bytes_toclient)
            .str("start", &format_timestamp(rec.start))
            .str("end", &format_timestamp(rec.end))
            .u64("age", rec.end.secs().saturating_sub(rec.start.secs()))
            .str("state", rec.state.as_str())
            .str("reason", rec.reason.as_str())
            .bool("alerted", rec.ext.alerted)
            .close();
        if let Some(tcp) = &rec.tcp {
            o.open("tcp")
                .str("tcp_flags", &tcp_flags_hex(tcp.tcp_flags))
                .str("tcp_flags_ts", &tcp_flags_hex(tcp.tcp_flags_ts))
                .str("tcp_flags_tc", &tcp_flags_hex(tcp.tcp_flags_tc));
            for (bit, name) in
                [(0x02, "syn"), (0x01, "fin"), (0x04, "rst"), (0x08, "psh"), (0x10, "ack"), (0x20, "urg"), (0x40, "ecn"), (0x80, "cwr")]
            {
                if tcp.tcp_flags & bit != 0 {
                    o.bool(name, true);
                }
            }
            o.str("state", tcp.state.as_str()).close();
        }
        o.finish();
    });
}

pub use crate::decode::ip_addr;
