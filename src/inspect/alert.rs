//! Running the detection engine on a packet (or a flow-end pseudo packet) and writing what
//! it found: eve `alert` and `drop` events and fast.log lines, as Suricata writes them.

use super::app::{AppBuffers, AppTx, AppView};
use super::tls::write_tls;
use crate::applayer::tls::TlsState;
use super::{write_flow_event, Detection, FlowExt};
use crate::applayer::http::HttpTx;
use crate::decode::{Decoded, FiveTuple, IpLayer, L4};
use crate::detect::engine::{Alert, DetectFlow, DetectPacket, FlowInfo};
use crate::detect::rule::Action;
use crate::flow::FlowRecord;
use crate::output::eve::{format_timestamp, proto_name, EventHeader};
use crate::output::merge::{EventBuf, Sink};
use crate::packet::{LinkType, PacketMeta, Timestamp};
use crate::stream::{Direction, HeldStream, ReassemblyMemory, StreamChunk};

/// Which optional parts eve alerts carry (the `alert:` options of Suricata's eve-log).
#[derive(Clone, Debug)]
pub struct AlertLogOptions {
    /// Base64 of the matched payload (or stream data), plus `stream` and `payload_length`.
    pub payload: bool,
    pub payload_printable: bool,
    /// Base64 of the whole captured frame, with `packet_info`.
    pub packet: bool,
    /// `ether` object with MAC addresses.
    pub ethernet: bool,
    pub fast_log: bool,
    /// `payload-buffer-size`: most bytes of stream data an alert logs.
    pub payload_buffer_size: usize,
    /// `metadata.app-layer`: the transaction's object (`http`).
    pub app_layer: bool,
    /// `metadata.flow`: the `flow` object.
    pub flow: bool,
    /// `metadata.rule.metadata`: `alert.metadata` from the rule's `metadata:` keyword.
    pub rule_metadata: bool,
    /// `metadata.rule.raw`: `alert.rule`, the rule's text.
    pub rule_raw: bool,
    /// Flowbits set on the flow: `traffic` for `traffic/id/..` and `traffic/label/..`,
    /// the others under `metadata.flowbits` (part of Suricata's alert metadata).
    pub flow_vars: bool,
    /// `xff:` with `enabled: yes`: the client address from a proxy header.
    pub xff: Option<XffOptions>,
}

/// Suricata's X-Forwarded-For handling for alerts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XffOptions {
    /// `mode: overwrite` replaces the client-side address of the event; `extra-data`
    /// (the default) adds `alert.xff`.
    pub overwrite: bool,
    /// `deployment: reverse` (default) takes the last address of the list, `forward` the first.
    pub reverse: bool,
    /// `header:` (default X-Forwarded-For).
    pub header: String,
}

impl XffOptions {
    /// Reads an `xff:` mapping; `None` unless `enabled` is true.
    pub fn from_yaml(xff: &serde_yaml::Value) -> Option<XffOptions> {
        let text = |key: &str| match xff.get(key) {
            Some(serde_yaml::Value::String(s)) => Some(s.trim().to_ascii_lowercase()),
            Some(serde_yaml::Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        };
        let enabled = text("enabled").and_then(|v| crate::config::parse_bool(&v)).unwrap_or(false);
        if !enabled {
            return None;
        }
        let header = match xff.get("header") {
            Some(serde_yaml::Value::String(h)) if !h.trim().is_empty() => h.trim().to_string(),
            _ => "X-Forwarded-For".to_string(),
        };
        Some(XffOptions {
            overwrite: text("mode").as_deref() == Some("overwrite"),
            reverse: text("deployment").as_deref() != Some("forward"),
            header,
        })
    }

    /// The address the proxy header names for `tx`, if it holds a valid one.
    pub fn address(&self, tx: &HttpTx) -> Option<std::net::IpAddr> {
        let value = tx.request_header(&self.header)?;
        let value = std::str::from_utf8(value).ok()?;
        let mut parts = value.split(',').map(str::trim).filter(|p| !p.is_empty());
        let pick = if self.reverse { parts.next_back() } else { parts.next() }?;
        pick.parse().ok()
    }
}

impl Default for AlertLogOptions {
    fn default() -> Self {
        AlertLogOptions {
            payload: false,
            payload_printable: false,
            packet: false,
            ethernet: false,
            fast_log: true,
            payload_buffer_size: 4096,
            app_layer: true,
            flow: true,
            rule_metadata: true,
            rule_raw: false,
            flow_vars: true,
            xff: None,
        }
    }
}

impl AlertLogOptions {
    /// Applies an eve-log `alert:` `metadata:` setting: `no` turns every part off; a
    /// mapping (`app-layer`, `flow`, `rule: {metadata, raw}`) sets them one by one.
    pub fn set_metadata(&mut self, metadata: &serde_yaml::Value) {
        let flag = |v: Option<&serde_yaml::Value>, default: bool| match v {
            Some(serde_yaml::Value::Bool(b)) => *b,
            Some(serde_yaml::Value::String(s)) => crate::config::parse_bool(s).unwrap_or(default),
            _ => default,
        };
        match metadata {
            serde_yaml::Value::Mapping(_) => {
                self.app_layer = flag(metadata.get("app-layer"), true);
                self.flow = flag(metadata.get("flow"), true);
                let rule = metadata.get("rule");
                self.rule_metadata = flag(rule.and_then(|r| r.get("metadata")), true);
                self.rule_raw = flag(rule.and_then(|r| r.get("raw")), false);
                self.flow_vars = true;
            }
            other => {
                let on = flag(Some(other), true);
                self.app_layer = on;
                self.flow = on;
                self.rule_metadata = on;
                self.flow_vars = on;
                self.rule_raw = false;
            }
        }
    }
}

/// A packet as captured and decoded, for detection and logging.
pub(crate) struct WirePacket<'a> {
    pub meta: &'a PacketMeta,
    pub frame: &'a [u8],
    pub decoded: &'a Decoded<'a>,
    pub tuple: FiveTuple,
    /// The payload was added to the TCP stream (Suricata's PKT_STREAM_ADD): stream rules
    /// then wait for the reassembled data instead of matching the packet alone.
    pub payload_in_stream: bool,
}

/// What the flow's side of an alert needs: the facts and the orientation.
#[derive(Clone, Copy)]
struct FlowFacts {
    info: FlowInfo,
    client: ([u8; 16], u16),
    server: ([u8; 16], u16),
    start: Timestamp,
}

/// Where the inspected bytes came from.
enum Origin<'a> {
    Wire(&'a WirePacket<'a>),
    /// Stream data released at flow end, in the direction of `tuple`.
    FlowEnd { ts: Timestamp, tuple: FiveTuple, vlan: [u16; 2] },
}

/// The outcome of one detection run for the caller's flow state.
#[derive(Default)]
pub(super) struct RunVerdict {
    pub alerted: bool,
    pub drop_flow: bool,
}

impl Detection {
    /// Runs the rules on a packet, logs alerts, and (in IPS mode) blocks.
    pub(super) fn run(
        &mut self,
        wire: &WirePacket<'_>,
        flow: Option<(FlowInfo, &crate::flow::Flow)>,
        stream: Option<(StreamChunk<'_>, HeldStream<'_>)>,
        detect: Option<&mut DetectFlow>,
        app: Option<&mut AppView<'_>>,
        key: u64,
        out: &mut EventBuf,
    ) -> RunVerdict {
        let facts = flow.map(|(info, f)| FlowFacts { info, client: f.client(), server: f.server(), start: f.first_ts });
        let verdict = self.detect(Origin::Wire(wire), facts, stream, detect, app, key, out);
        if verdict.drop_flow || verdict_blocks_packet(&self.alerts, self.simulate_ips) {
            self.counters.blocked_packets += 1;
            write_drop_event(wire, facts.map(|f| f.info.flow_id).unwrap_or(0), "rules", key, out);
        }
        verdict
    }

    fn detect(
        &mut self,
        origin: Origin<'_>,
        facts: Option<FlowFacts>,
        stream: Option<(StreamChunk<'_>, HeldStream<'_>)>,
        detect: Option<&mut DetectFlow>,
        mut app: Option<&mut AppView<'_>>,
        key: u64,
        out: &mut EventBuf,
    ) -> RunVerdict {
        let Some(engine) = self.engine.clone() else { return RunVerdict::default() };
        let (ts, pcap_cnt, decoded, tuple, vlan, payload, payload_in_stream) = match &origin {
            Origin::Wire(w) => {
                (w.meta.ts, w.meta.pcap_cnt, Some(w.decoded), w.tuple, w.decoded.vlan, w.decoded.payload, w.payload_in_stream)
            }
            Origin::FlowEnd { ts, tuple, vlan } => (*ts, 0, None, *tuple, *vlan, &[][..], false),
        };
        let tx_buffers = app.as_ref().and_then(|a| a.tx).map(|(tx, dir)| AppBuffers::new(tx, dir));
        // Transactional rules complete on the to-client side; they also read request buffers.
        let other_buffers = app
            .as_ref()
            .and_then(|a| a.tx)
            .filter(|(_, dir)| *dir == Direction::ToClient && engine.has_transactional_rules())
            .map(|(tx, dir)| AppBuffers::new(tx, dir.opposite()));
        let app_log = AppLog {
            proto: app.as_ref().and_then(|a| a.proto).map(|p| p.name()),
            tx: app.as_ref().and_then(|a| a.tx).map(|(tx, _)| tx),
            tls: app.as_ref().and_then(|a| a.tls),
            log_ja3: self.log_ja3,
        };
        let pkt = DetectPacket {
            ts,
            pcap_cnt,
            decoded,
            tuple,
            vlan,
            payload,
            flow: facts.map(|f| f.info),
            stream: stream.map(|(chunk, _)| chunk),
            app_proto: app.as_ref().and_then(|a| a.proto).map(|p| p.name()),
            payload_in_stream,
            buffers: tx_buffers.as_ref().map(|b| b.source()),
            buffers_other: other_buffers.as_ref().map(|b| b.source()),
        };
        self.alerts.clear();
        let mut detect = detect;
        engine.inspect(&mut self.ctx, &pkt, detect.as_deref_mut(), &mut self.alerts);
        let mut verdict = RunVerdict::default();
        // Flowbits as they stand after this packet's rules, for the alerts' metadata.
        let flowbits: Vec<&str> = match (&detect, self.log.flow_vars && !self.alerts.is_empty()) {
            (Some(d), true) => engine.flowbits_set(d).collect(),
            _ => Vec::new(),
        };
        for alert in &self.alerts {
            if let Some(a) = app.as_deref_mut() {
                if a.app_only && !alert.app_tx {
                    continue;
                }
                // Suricata alerts once per transaction and rule.
                if alert.app_tx && !a.first_alert(alert.sid, &mut self.app_counters) {
                    continue;
                }
            }
            let blocks = self.simulate_ips && blocks(alert.action);
            verdict.drop_flow |= blocks;
            if alert.silent || alert.action == Action::Pass {
                continue;
            }
            verdict.alerted = true;
            self.counters.alerts += 1;
            let stream_log;
            let payload_logged: &[u8] = match (&stream, alert.in_stream) {
                (Some((_, held)), true) if self.log.payload || self.log.payload_printable => {
                    stream_log = stream_payload(held, self.log.payload_buffer_size);
                    &stream_log
                }
                (Some((chunk, _)), true) => chunk.data,
                _ => payload,
            };
            out.push(key, |buf| write_alert(buf, &origin, &pkt, facts, alert, blocks, payload_logged, &self.log, &app_log, &flowbits));
            if self.log.fast_log {
                out.push_to(Sink::FastLog, key, |buf| write_fast_line(buf, ts, &tuple, alert, blocks));
            }
        }
        verdict
    }

    /// A flow has ended: inspect what its streams still hold, then log the flow.
    pub(super) fn end_flow(&mut self, mut rec: FlowRecord<FlowExt>, mem: &mut ReassemblyMemory, key: u64, out: &mut EventBuf) {
        if let Some(mut stream) = rec.ext.stream.take() {
            if self.engine.is_some() && !rec.ext.dropped && !rec.ext.passed {
                stream.close();
                let client = (rec.src_ip, rec.src_port);
                let server = (rec.dst_ip, rec.dst_port);
                // The close releases what the app layer had not seen yet (unacked data).
                if let Some(app) = rec.ext.app.as_deref_mut() {
                    for dir in [Direction::ToServer, Direction::ToClient] {
                        app.feed(&mut stream, dir, (client.1, server.1), mem, &mut self.app_counters);
                    }
                    app.close(&mut self.app_counters);
                }
                let info = FlowInfo {
                    flow_id: rec.flow_id,
                    to_server: true,
                    // Suricata's flow-end pseudo packets count as established, except for a
                    // session torn down by a RST.
                    established: rec.tcp.is_none_or(|t| t.tcp_flags & crate::decode::tcp::RST == 0),
                    // ...but the transactions such a RST leaves behind are inspected as established
                    // (Suricata flushes them to detection with the RST).
                    tx_established: true,
                    pkts_toserver: rec.pkts_toserver,
                    pkts_toclient: rec.pkts_toclient,
                    bytes_toserver: rec.bytes_toserver,
                    bytes_toclient: rec.bytes_toclient,
                    stream_bytes: [stream.inspected(Direction::ToServer), stream.inspected(Direction::ToClient)],
                    stream_size: [stream.seq_space_seen(Direction::ToServer), stream.seq_space_seen(Direction::ToClient)],
                };
                for dir in [Direction::ToServer, Direction::ToClient] {
                    let to_server = dir == Direction::ToServer;
                    let ((src, sp), (dst, dp)) = if to_server { (client, server) } else { (server, client) };
                    let tuple =
                        FiveTuple { src, dst, src_port: sp, dst_port: dp, proto: rec.proto, is_v4: rec.is_v4 };
                    let facts = FlowFacts { info: FlowInfo { to_server, ..info }, client, server, start: rec.start };
                    let origin_ts = rec.end;
                    let vlan = rec.vlan;
                    let FlowExt { detect, app, .. } = &mut rec.ext;
                    let mut app = app.as_deref_mut();
                    let first_tx = app.as_deref_mut().and_then(|a| a.take_pending(dir));
                    let mut alerted = false;
                    let mut ran = false;
                    stream.inspect_raw_held(dir, mem, |chunk, held| {
                        ran = true;
                        self.counters.stream_pseudo_packets += 1;
                        let origin = Origin::FlowEnd { ts: origin_ts, tuple, vlan };
                        let mut view = app.as_deref_mut().map(|a| a.view(first_tx, dir));
                        alerted |= self.detect(origin, Some(facts), Some((chunk, held)), Some(detect), view.as_mut(), key, out).alerted;
                    });
                    // Transactions still waiting: a pseudo packet with their buffers only.
                    if let Some(app) = app {
                        let mut next = if ran { app.take_pending(dir) } else { first_tx };
                        while let Some(tx) = next {
                            let origin = Origin::FlowEnd { ts: origin_ts, tuple, vlan };
                            let mut view = app.view(Some(tx), dir);
                            view.app_only = true;
                            alerted |= self.detect(origin, Some(facts), None, Some(detect), Some(&mut view), key, out).alerted;
                            next = app.take_pending(dir);
                        }
                    }
                    rec.ext.alerted |= alerted;
                }
            }
            stream.release(mem);
        }
        write_flow_event(&rec, key, out);
    }
}

/// The stream data of an alert's direction as Suricata logs it: every byte still held,
/// holes written as `[N bytes missing]`, cut at `limit` bytes.
fn stream_payload(held: &HeldStream<'_>, limit: usize) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = Vec::new();
    let mut at = held.start();
    for (offset, bytes) in held.runs() {
        if out.len() >= limit {
            break;
        }
        if offset > at {
            let _ = write!(out, "[{} bytes missing]", offset - at);
        }
        out.extend_from_slice(bytes);
        at = offset + bytes.len() as u64;
    }
    out.truncate(limit);
    out
}

fn blocks(action: Action) -> bool {
    matches!(action, Action::Drop | Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth)
}

fn verdict_blocks_packet(alerts: &[Alert], simulate_ips: bool) -> bool {
    simulate_ips && alerts.iter().any(|a| blocks(a.action))
}

fn ip_version(tuple: &FiveTuple) -> u64 {
    if tuple.is_v4 {
        4
    } else {
        6
    }
}

#[allow(clippy::too_many_arguments)]
fn write_alert(
    buf: &mut Vec<u8>,
    origin: &Origin<'_>,
    pkt: &DetectPacket<'_>,
    facts: Option<FlowFacts>,
    alert: &Alert,
    blocked: bool,
    payload: &[u8],
    opts: &AlertLogOptions,
    app: &AppLog<'_>,
    flowbits: &[&str],
) {
    let tuple = &pkt.tuple;
    let is_icmp = matches!(tuple.proto, 1 | 58);
    let xff = match (&opts.xff, app.tx) {
        (Some(x), Some(AppTx::Http(tx))) => x.address(tx).map(|ip| (x.overwrite, ip)),
        _ => None,
    };
    let (mut src_ip, mut dest_ip) = (tuple.src_ip(), tuple.dst_ip());
    if let Some((true, ip)) = xff {
        // The proxy's client is the event's client side: the source of a request packet,
        // the destination of a response packet.
        if facts.is_none_or(|f| f.info.to_server) {
            src_ip = ip;
        } else {
            dest_ip = ip;
        }
    }
    let header = EventHeader {
        ts: pkt.ts,
        flow_id: facts.map(|f| f.info.flow_id),
        pcap_cnt: (pkt.pcap_cnt > 0).then_some(pkt.pcap_cnt),
        event_type: "alert",
        src_ip,
        src_port: tuple.src_port,
        dest_ip,
        dest_port: tuple.dst_port,
        proto: tuple.proto,
        icmp: is_icmp.then_some((tuple.src_port as u8, tuple.dst_port as u8)),
    };
    let mut o = header.write(buf);
    o.u64("ip_v", ip_version(tuple));
    let pkt_src = match origin {
        Origin::Wire(_) => "wire/pcap",
        Origin::FlowEnd { .. } => "stream (flow timeout)",
    };
    o.str("pkt_src", pkt_src);
    let vlans: Vec<String> = pkt.vlan.iter().filter(|&&v| v != 0).map(|v| v.to_string()).collect();
    if !vlans.is_empty() {
        o.raw("vlan", &format!("[{}]", vlans.join(",")));
    }
    if let Origin::Wire(WirePacket { decoded: Decoded { tunnel: Some(t), .. }, meta, .. }) = origin {
        let outer = &t.outer;
        o.open("tunnel")
            .str("src_ip", &outer.src_ip().to_string())
            .u64("src_port", outer.src_port.into())
            .str("dest_ip", &outer.dst_ip().to_string())
            .u64("dest_port", outer.dst_port.into())
            .str("proto", &proto_name(outer.proto))
            .u64("depth", t.depth.into())
            .u64("pcap_cnt", meta.pcap_cnt)
            .str("pkt_src", "wire/pcap")
            .close();
    }
    if let (true, Origin::Wire(w)) = (opts.ethernet, origin) {
        if w.meta.link == LinkType::Ethernet && w.frame.len() >= 14 {
            o.open("ether").str("src_mac", &mac(&w.frame[6..12])).str("dest_mac", &mac(&w.frame[0..6])).close();
        }
    }
    if let (Some(tx), true) = (app.tx, alert.app_tx) {
        o.u64("tx_id", tx.id());
    }
    o.open("alert")
        .str("action", if blocked { "blocked" } else { "allowed" })
        .u64("gid", alert.gid.into())
        .u64("signature_id", alert.sid.into())
        .u64("rev", alert.rev.into())
        .str("signature", &alert.msg)
        .str("category", &alert.category)
        .u64("severity", alert.severity.into());
    if opts.rule_metadata && !alert.rule_log.metadata.is_empty() {
        write_rule_metadata(&mut o, &alert.rule_log.metadata);
    }
    if opts.rule_raw {
        o.str("rule", &alert.rule_log.text);
    }
    if let Some((false, ip)) = xff {
        o.str("xff", &ip.to_string());
    }
    o.close();
    if let Some(f) = facts {
        o.str("direction", if f.info.to_server { "to_server" } else { "to_client" });
    }
    if let (Some(f), true) = (facts, opts.flow) {
        let (v4, ip) = (tuple.is_v4, crate::inspect::ip_addr);
        o.open("flow")
            .u64("pkts_toserver", f.info.pkts_toserver)
            .u64("pkts_toclient", f.info.pkts_toclient)
            .u64("bytes_toserver", f.info.bytes_toserver)
            .u64("bytes_toclient", f.info.bytes_toclient)
            .str("start", &format_timestamp(f.start))
            .str("src_ip", &ip(&f.client.0, v4).to_string())
            .str("dest_ip", &ip(&f.server.0, v4).to_string());
        if !is_icmp {
            o.u64("src_port", f.client.1.into()).u64("dest_port", f.server.1.into());
        }
        o.close();
    }
    if let Some(p) = app.proto {
        o.str("app_proto", p);
    }
    if opts.app_layer {
        match app.tx {
            Some(AppTx::Http(tx)) => write_http(&mut o, tx),
            Some(AppTx::Dns(tx)) => super::dns::write_dns(&mut o, tx),
            Some(AppTx::Tls(_)) | None => {}
        }
        if let Some(st) = app.tls {
            write_tls(&mut o, st, app.log_ja3);
        }
    }
    if !flowbits.is_empty() {
        write_flowbits(&mut o, flowbits);
    }
    if opts.payload {
        o.str("payload", &base64(payload));
    }
    if opts.payload_printable {
        o.str("payload_printable", &printable(payload));
    }
    if opts.payload || opts.payload_printable {
        o.u64("payload_length", payload.len() as u64);
        o.u64("stream", alert.in_stream as u64);
    }
    if let (true, Origin::Wire(w)) = (opts.packet, origin) {
        // A tunnelled packet is logged from its inner IP header on, as raw IP.
        let (frame, link) = match &w.decoded.tunnel {
            Some(t) => (w.frame.get(t.inner_offset as usize..).unwrap_or(&[]), LinkType::RawIp),
            None => (w.frame, w.meta.link),
        };
        o.str("packet", &base64(frame));
        o.open("packet_info").u64("linktype", link.suricata_number().into()).str("linktype_name", link.suricata_name()).close();
    }
    o.finish();
}

/// `alert.metadata`: each key of the rule's `metadata:` with its values in rule order.
fn write_rule_metadata(o: &mut crate::output::json::JsonObject<'_>, pairs: &[(String, String)]) {
    o.open("metadata");
    let mut done: Vec<&str> = Vec::new();
    for (key, _) in pairs {
        if done.contains(&key.as_str()) {
            continue;
        }
        done.push(key);
        let values: Vec<&str> = pairs.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect();
        o.raw(key, &json_str_array(&values));
    }
    o.close();
}

/// Suricata's `traffic` object (flowbits named `traffic/id/X` or `traffic/label/X`) and
/// `metadata.flowbits` (every other flowbit set on the flow).
fn write_flowbits(o: &mut crate::output::json::JsonObject<'_>, names: &[&str]) {
    let ids: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("traffic/id/")).collect();
    let labels: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("traffic/label/")).collect();
    let others: Vec<&str> = names.iter().copied().filter(|n| !n.starts_with("traffic/")).collect();
    if !others.is_empty() {
        o.open("metadata").raw("flowbits", &json_str_array(&others)).close();
    }
    if !ids.is_empty() || !labels.is_empty() {
        o.open("traffic");
        if !ids.is_empty() {
            o.raw("id", &json_str_array(&ids));
        }
        if !labels.is_empty() {
            o.raw("label", &json_str_array(&labels));
        }
        o.close();
    }
}

fn json_str_array(values: &[&str]) -> String {
    let mut out = Vec::new();
    out.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::output::json::write_str(&mut out, v);
    }
    out.push(b']');
    String::from_utf8(out).unwrap_or_default()
}

/// App-layer facts an alert logs.
struct AppLog<'a> {
    proto: Option<&'static str>,
    tx: Option<AppTx<'a>>,
    tls: Option<&'a TlsState>,
    log_ja3: bool,
}

/// Suricata's `http` object of an alert: what is known of the transaction so far.
fn write_http(o: &mut crate::output::json::JsonObject<'_>, tx: &HttpTx) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    o.open("http");
    if let Some(h) = &tx.host {
        o.str("hostname", &text(h));
    }
    if !tx.uri_raw.is_empty() {
        o.str("url", &text(&tx.uri_raw));
    }
    if let Some(ua) = tx.user_agent() {
        o.str("http_user_agent", &text(ua));
    }
    if let Some(ct) = tx.content_type(Direction::ToClient) {
        // Logged without parameters, as Suricata does.
        let bare = ct.split(|&b| b == b';').next().unwrap_or(ct);
        o.str("http_content_type", &text(bare.trim_ascii()));
    }
    if !tx.method.is_empty() {
        o.str("http_method", &text(&tx.method));
    }
    if !tx.request_protocol.is_empty() {
        o.str("protocol", &text(&tx.request_protocol));
    }
    if let Some(code) = tx.status_code {
        o.u64("status", code.into());
    }
    // Always present, as in Suricata: 0 until a response body arrives.
    o.u64("length", tx.response_body_len);
    o.close();
}

/// Suricata's eve `drop` event for a packet blocked in IPS mode.
pub(crate) fn write_drop_event(wire: &WirePacket<'_>, flow_id: u64, reason: &str, key: u64, out: &mut EventBuf) {
    out.push(key, |buf| {
        let t = &wire.tuple;
        let header = EventHeader {
            ts: wire.meta.ts,
            flow_id: (flow_id != 0).then_some(flow_id),
            pcap_cnt: Some(wire.meta.pcap_cnt),
            event_type: "drop",
            src_ip: t.src_ip(),
            src_port: t.src_port,
            dest_ip: t.dst_ip(),
            dest_port: t.dst_port,
            proto: t.proto,
            icmp: matches!(t.proto, 1 | 58).then_some((t.src_port as u8, t.dst_port as u8)),
        };
        let mut o = header.write(buf);
        o.open("drop").u64("len", wire.meta.wire_len.into());
        match &wire.decoded.ip {
            Some(IpLayer::V4(ip)) => {
                o.u64("tos", ip.tos().into()).u64("ttl", ip.ttl().into()).u64("ipid", ip.id().into());
            }
            Some(IpLayer::V6(v6)) => {
                o.u64("tc", v6.header.traffic_class().into()).u64("hoplimit", v6.header.hop_limit().into()).u64("flowlbl", v6.header.flow_label().into());
            }
            None => {}
        }
        if let L4::Tcp(tcp) = &wire.decoded.l4 {
            let f = tcp.flags();
            o.u64("tcpseq", tcp.seq().into()).u64("tcpack", tcp.ack().into()).u64("tcpwin", tcp.window().into());
            for (bit, name) in [(0x02, "syn"), (0x10, "ack"), (0x08, "psh"), (0x04, "rst"), (0x20, "urg"), (0x01, "fin")] {
                o.bool(name, f & bit != 0);
            }
            o.u64("tcpres", 0).u64("tcpurgp", tcp.urgent_ptr().into());
        }
        o.str("reason", reason).close();
        o.finish();
    });
}

/// `11/24/2009-21:27:09.534255  [**] [1:2100498:7] msg [**] [Classification: ...] [Priority: 2] {TCP} a:1 -> b:2`
fn write_fast_line(buf: &mut Vec<u8>, ts: Timestamp, tuple: &FiveTuple, alert: &Alert, blocked: bool) {
    use std::io::Write as _;
    let iso = format_timestamp(ts);
    let when = format!("{}/{}/{}-{}", &iso[5..7], &iso[8..10], &iso[0..4], &iso[11..26]);
    let class = if alert.category.is_empty() { String::new() } else { format!("[Classification: {}] ", alert.category) };
    let endpoint = |ip: std::net::IpAddr, port: u16| {
        if matches!(tuple.proto, 6 | 17 | 132) {
            format!("{ip}:{port}")
        } else {
            ip.to_string()
        }
    };
    let _ = writeln!(
        buf,
        "{when}  {}[**] [{}:{}:{}] {} [**] {class}[Priority: {}] {{{}}} {} -> {}",
        if blocked { "[Drop] " } else { "" },
        alert.gid,
        alert.sid,
        alert.rev,
        alert.msg,
        alert.severity,
        proto_name(tuple.proto),
        endpoint(tuple.src_ip(), tuple.src_port),
        endpoint(tuple.dst_ip(), tuple.dst_port),
    );
}

fn mac(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

/// Suricata's lossy printable form: printable ASCII kept, everything else as '.'.
fn printable(data: &[u8]) -> String {
    data.iter().map(|&b| if (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\r' || b == b'\t' { b as char } else { '.' }).collect()
}

pub(crate) fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(f: impl FnOnce(&mut crate::output::json::JsonObject<'_>)) -> String {
        let mut buf = Vec::new();
        let mut o = crate::output::json::JsonObject::begin(&mut buf);
        f(&mut o);
        o.finish();
        String::from_utf8(buf).expect("utf-8").trim_end().to_string()
    }

    #[test]
    fn rule_metadata_groups_values_by_key() {
        let pairs = [("tag", "a"), ("created_at", "2018-01-30"), ("tag", "b\"q")].map(|(k, v)| (k.to_string(), v.to_string()));
        let got = json(|o| write_rule_metadata(o, &pairs));
        assert_eq!(got, r#"{"metadata":{"tag":["a","b\"q"],"created_at":["2018-01-30"]}}"#);
    }

    #[test]
    fn flowbits_split_into_traffic_and_metadata() {
        let got = json(|o| write_flowbits(o, &["traffic/label/cli-http", "traffic/id/curl", "junkbit"]));
        assert_eq!(got, r#"{"metadata":{"flowbits":["junkbit"]},"traffic":{"id":["curl"],"label":["cli-http"]}}"#);
        assert_eq!(json(|o| write_flowbits(o, &["traffic/id/x"])), r#"{"traffic":{"id":["x"]}}"#);
    }

    #[test]
    fn xff_options_and_address_choice() {
        let yaml = |t: &str| serde_yaml::from_str::<serde_yaml::Value>(t).expect("yaml");
        assert_eq!(XffOptions::from_yaml(&yaml("enabled: no\nmode: overwrite\n")), None);
        let reverse = XffOptions::from_yaml(&yaml("enabled: yes\n")).expect("enabled");
        assert!(reverse.reverse && !reverse.overwrite && reverse.header == "X-Forwarded-For");
        let forward = XffOptions::from_yaml(&yaml("enabled: yes\nmode: overwrite\ndeployment: forward\nheader: X-Real-IP\n")).expect("enabled");
        assert!(!forward.reverse && forward.overwrite && forward.header == "X-Real-IP");

        let mut p = crate::applayer::http::HttpParser::new(Default::default());
        p.on_data(Direction::ToServer, b"GET / HTTP/1.1\r\nx-forwarded-for: 10.2.2.2, 10.3.3.3\r\nX-Real-IP: junk\r\n\r\n", &mut |_| {});
        let tx = p.tx(0).expect("tx");
        assert_eq!(reverse.address(tx), Some("10.3.3.3".parse().unwrap()));
        let first = XffOptions { reverse: false, ..reverse.clone() };
        assert_eq!(first.address(tx), Some("10.2.2.2".parse().unwrap()));
        assert_eq!(forward.address(tx), None, "not an address");
    }

    #[test]
    fn metadata_option_forms() {
        let yaml = |t: &str| serde_yaml::from_str::<serde_yaml::Value>(t).expect("yaml");
        let mut o = AlertLogOptions::default();
        assert!(o.app_layer && o.flow && o.rule_metadata && !o.rule_raw);
        o.set_metadata(&yaml("false"));
        assert!(!o.app_layer && !o.flow && !o.rule_metadata && !o.rule_raw && !o.flow_vars);
        o.set_metadata(&yaml("rule:\n  raw: true\n"));
        assert!(o.app_layer && o.flow && o.rule_metadata && o.rule_raw);
        o.set_metadata(&yaml("app-layer: no\nrule:\n  metadata: no\n"));
        assert!(!o.app_layer && o.flow && !o.rule_metadata && !o.rule_raw);
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("GOOD", "R09PRA==")] {
            assert_eq!(base64(input.as_bytes()), want);
        }
    }

    #[test]
    fn printable_masks_binary() {
        assert_eq!(printable(b"GET /\x00\xff"), "GET /..");
    }
}
