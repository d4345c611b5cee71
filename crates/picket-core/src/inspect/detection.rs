//! Running the detection engine on a packet (or on the stream data a flow still holds when
//! it ends) and reporting what it found as [`Event`]s: alerts, drops, and the flow record.

use super::event::{AlertEvent, AppFacts, DropEvent, Event, EventSink, FlowBits, FlowFacts, Verdict, WirePacket};
use super::{Detection, FlowExt};
use crate::applayer::layer::{AppLayer, AppView};
use crate::applayer::AppBuffers;
use crate::decode::FiveTuple;
use crate::detect::engine::{Alert, AppEvents, DetectFlow, DetectPacket, FlowInfo};
use crate::detect::rule::Action;
use crate::flow::{FlowRecord, PacketVerdict};
use crate::packet::Timestamp;
use crate::settings::ExceptionPolicy;
use crate::stream::{Direction, HeldStream, ReassemblyMemory, StreamChunk};

/// Where events go: the sink and the sort key of the packet (or tick) being handled.
pub(super) struct Out<'o> {
    pub key: u64,
    /// Order among events under the same clock or shutdown key (see
    /// [`EventSink::event_sub`]); 0 for a packet's own events.
    pub sub: u64,
    pub sink: &'o mut dyn EventSink,
}

impl<'o> Out<'o> {
    pub fn new(key: u64, sink: &'o mut dyn EventSink) -> Self {
        Out { key, sub: 0, sink }
    }

    pub fn emit(&mut self, event: Event<'_>) {
        self.sink.event_sub(self.key, self.sub, &event);
    }
}

/// Where the inspected bytes came from.
enum Origin<'a> {
    Wire(&'a WirePacket<'a>),
    /// Stream data released at flow end, in the direction of `tuple`.
    FlowEnd {
        ts: Timestamp,
        tuple: FiveTuple,
        vlan: crate::decode::VlanIds,
    },
}

/// The outcome of one detection run (or of all the runs on a packet, merged) for the
/// caller's flow state.
#[derive(Default)]
pub(super) struct RunVerdict {
    pub alerted: bool,
    /// A drop or reject rule with flow scope matched (IPS mode): the rest of the flow is
    /// dropped.
    pub drop_flow: bool,
    /// What to do with this packet.
    pub verdict: Verdict,
    /// The first drop or reject rule that matched (IPS mode), for the packet's `drop` event.
    pub blocking: Option<Alert>,
    /// A rule with the `bypass` keyword matched.
    pub bypass: bool,
}

impl RunVerdict {
    /// Folds in the outcome of a further run on the same packet.
    pub fn merge(&mut self, other: RunVerdict) {
        self.alerted |= other.alerted;
        self.drop_flow |= other.drop_flow;
        self.bypass |= other.bypass;
        self.verdict = self.verdict.and(other.verdict);
        if self.blocking.is_none() {
            self.blocking = other.blocking;
        }
    }
}

/// What a flow knows of its packets' drop events (Suricata's `drop: flows: start` logs the
/// first blocked packet of each direction of a dropped flow, and every packet a rule blocks).
pub(super) struct FlowDropLog<'f> {
    pub flow_id: u64,
    pub to_server: bool,
    /// The flow is dropped as a whole (after this packet's rules).
    pub flow_dropped: bool,
    /// A drop event was reported in [to server, to client] while the flow was dropped.
    pub logged: &'f mut [bool; 2],
}

/// The app-layer events raised on one transaction since the last packet (`app-layer-event`).
struct TxEvents<'a> {
    anomalies: &'a [crate::applayer::AppAnomaly],
    tx: u64,
}

impl AppEvents for TxEvents<'_> {
    fn raised(&self, event: &str) -> bool {
        self.anomalies.iter().any(|a| a.tx == self.tx && a.event.eq_ignore_ascii_case(event))
    }
}

/// A rule action that blocks the packet in IPS mode.
fn blocks(action: Action) -> bool {
    matches!(action, Action::Drop | Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth)
}

/// Suricata's `drop.reason` of a packet a rule blocked: "threshold detection_filter" when a
/// rate_filter turned the match into a drop, "rules" otherwise.
fn drop_reason(blocking: Option<&Alert>) -> &'static str {
    if blocking.is_some_and(|a| a.rate_filtered) {
        "threshold detection_filter"
    } else {
        "rules"
    }
}

/// The flow fields of a drop event, and whether it is the first of its direction since the
/// flow was dropped (which it then records).
fn log_drop(flow: Option<FlowDropLog<'_>>) -> (u64, Option<bool>, bool) {
    let Some(f) = flow else { return (0, None, true) };
    let side = &mut f.logged[usize::from(!f.to_server)];
    let first = f.flow_dropped && !*side;
    if f.flow_dropped {
        *side = true;
    }
    (f.flow_id, Some(f.to_server), first)
}

impl Detection {
    /// Runs the rules on a packet and reports its alerts; the verdict (IPS mode) is acted on
    /// by [`Detection::conclude`] once every run on the packet is done.
    pub(super) fn run(
        &mut self,
        wire: &WirePacket<'_>,
        facts: Option<FlowFacts>,
        stream: Option<(StreamChunk<'_>, HeldStream<'_>)>,
        detect: Option<&mut DetectFlow>,
        app: Option<&mut AppView<'_>>,
        out: &mut Out<'_>,
    ) -> RunVerdict {
        self.detect(Origin::Wire(wire), facts, stream, detect, app, out)
    }

    /// Ends a packet: a blocked packet is counted and reported once, with the rule that
    /// blocked it. Returns the packet's verdict.
    pub(super) fn conclude(
        &mut self,
        wire: &WirePacket<'_>,
        run: &RunVerdict,
        flow: Option<FlowDropLog<'_>>,
        out: &mut Out<'_>,
    ) -> Verdict {
        if run.verdict.blocks() {
            self.counters.blocked_packets += 1;
            let (flow_id, to_server, first_in_direction) = log_drop(flow);
            out.emit(Event::Drop(&DropEvent {
                wire,
                flow_id,
                to_server,
                reason: drop_reason(run.blocking.as_ref()),
                verdict: run.verdict,
                alert: run.blocking.as_ref(),
                first_in_direction,
            }));
        }
        run.verdict
    }

    /// Further transactions of `dir` that progressed on this packet (pipelining): a run
    /// each, in which only their transaction rules may alert.
    pub(super) fn run_pending(
        &mut self,
        wire: &WirePacket<'_>,
        facts: FlowFacts,
        app: &mut AppLayer,
        dir: Direction,
        detect: &mut DetectFlow,
        out: &mut Out<'_>,
    ) -> RunVerdict {
        let mut run = RunVerdict::default();
        while let Some(tx) = app.take_pending(dir) {
            let mut view = app.view(Some(tx), dir);
            view.app_only = true;
            run.merge(self.run(wire, Some(facts), None, Some(detect), Some(&mut view), out));
        }
        run
    }

    /// Flow-wide decisions taken before any inspection: an exception policy for a session
    /// picked up midstream, and flows already passed or dropped. `Some` ends the packet.
    pub(super) fn flow_gate(
        &mut self,
        wire: &WirePacket<'_>,
        flow_id: u64,
        packet: &PacketVerdict,
        ext: &mut FlowExt,
        policy: ExceptionPolicy,
        out: &mut Out<'_>,
    ) -> Option<Verdict> {
        let mut reason = "flow drop";
        if packet.midstream_exception && ext.midstream_policy_applied.is_none() {
            ext.midstream_policy_applied = Some(policy);
        }
        if packet.midstream_exception && !ext.dropped && !ext.passed {
            match policy {
                ExceptionPolicy::PassFlow => ext.passed = true,
                // Suricata passes and bypasses the flow: nothing of it is inspected any
                // more and its record says `action: "pass"`, `state: "bypassed"`.
                ExceptionPolicy::Bypass => {
                    ext.passed = true;
                    ext.bypass.mode = super::BypassMode::Local;
                }
                ExceptionPolicy::DropFlow | ExceptionPolicy::DropPacket => ext.dropped = true,
                // Reject blocks only as an IPS; in IDS mode it leaves the packet alone.
                ExceptionPolicy::Reject if self.simulate_ips => ext.dropped = true,
                _ => {}
            }
            reason = "stream midstream";
        }
        if ext.passed {
            return Some(Verdict::Pass);
        }
        if !ext.dropped {
            return None;
        }
        self.counters.blocked_packets += 1;
        let to_server = packet.to_server;
        let log = FlowDropLog { flow_id, to_server, flow_dropped: true, logged: &mut ext.drop_logged };
        let (flow_id, to_server, first_in_direction) = log_drop(Some(log));
        out.emit(Event::Drop(&DropEvent {
            wire,
            flow_id,
            to_server,
            reason,
            verdict: Verdict::Drop,
            alert: None,
            first_in_direction,
        }));
        Some(Verdict::Drop)
    }

    fn detect(
        &mut self,
        origin: Origin<'_>,
        facts: Option<FlowFacts>,
        stream: Option<(StreamChunk<'_>, HeldStream<'_>)>,
        mut detect: Option<&mut DetectFlow>,
        mut app: Option<&mut AppView<'_>>,
        out: &mut Out<'_>,
    ) -> RunVerdict {
        let repeat = std::mem::take(&mut self.repeat_chunk) && stream.is_some();
        let Some(engine) = self.engine.clone() else { return RunVerdict::default() };
        let (ts, pcap_cnt, decoded, tuple, vlan, payload, payload_in_stream, no_payload) = match &origin {
            Origin::Wire(w) => (
                w.meta.ts,
                w.meta.pcap_cnt,
                Some(w.decoded),
                w.tuple,
                w.decoded.vlan,
                w.decoded.payload,
                w.payload_in_stream,
                w.no_payload,
            ),
            Origin::FlowEnd { ts, tuple, vlan } => (*ts, 0, None, *tuple, *vlan, &[][..], false, false),
        };
        let tx = app.as_ref().and_then(|a| a.tx);
        let tx_buffers = tx.map(|(tx, dir)| AppBuffers::new(tx, dir));
        // Transactional rules complete on the to-client side; they also read request buffers.
        let other_buffers = tx
            .filter(|(_, dir)| *dir == Direction::ToClient && engine.has_transactional_rules())
            .map(|(tx, dir)| AppBuffers::new(tx, dir.opposite()));
        let app_facts = AppFacts {
            proto: app.as_ref().and_then(|a| a.proto),
            tx: tx.map(|(tx, _)| tx),
            tls: app.as_ref().and_then(|a| a.tls),
            log_ja3: self.log_ja3,
        };
        let tx_events = app.as_ref().and_then(|a| {
            let (tx, _) = a.tx?;
            Some(TxEvents { anomalies: a.anomalies, tx: tx.id() })
        });
        let pkt = DetectPacket {
            ts,
            pcap_cnt,
            decoded,
            tuple,
            vlan,
            payload,
            flow: facts.map(|f| f.info),
            stream: stream.as_ref().map(|(chunk, _)| *chunk),
            app_proto: app_facts.proto.map(|p| p.name()),
            payload_in_stream,
            no_payload,
            repeat,
            buffers: tx_buffers.as_ref().map(|b| b.source()),
            buffers_other: other_buffers.as_ref().map(|b| b.source()),
            app_events: tx_events.as_ref().map(|e| e as &dyn AppEvents),
        };
        self.alerts.clear();
        engine.inspect(&mut self.ctx, &pkt, detect.as_deref_mut(), &mut self.alerts);
        let mut verdict = RunVerdict::default();
        let flowbits = detect.as_deref().map(|d| FlowBits::new(&engine, d));
        let wire = match origin {
            Origin::Wire(w) => Some(w),
            Origin::FlowEnd { .. } => None,
        };
        // First the alerts this run reports (once per transaction and rule) and the verdict
        // they ask for, so that every alert can carry the packet's verdict.
        self.live.clear();
        for (i, alert) in self.alerts.iter().enumerate() {
            if let Some(a) = app.as_deref_mut() {
                if a.app_only && !alert.app_tx {
                    continue;
                }
                // Suricata alerts once per transaction and rule.
                if alert.app_tx && !a.first_alert(alert.sid, &mut self.app_counters) {
                    continue;
                }
            }
            self.live.push(i);
            verdict.bypass |= alert.bypass;
            if self.simulate_ips && blocks(alert.action) {
                verdict.verdict = verdict.verdict.and(Verdict::for_action(alert.action, tuple.proto));
                verdict.drop_flow |= alert.flow_scope;
                if verdict.blocking.is_none() {
                    verdict.blocking = Some(alert.clone());
                }
            }
        }
        let passed = self.live.iter().any(|&i| self.alerts.get(i).is_some_and(|a| a.action == Action::Pass));
        for &i in &self.live {
            let Some(alert) = self.alerts.get(i) else { continue };
            if alert.silent || (alert.action == Action::Pass && !alert.logs_pass) {
                continue;
            }
            verdict.alerted = true;
            self.counters.alerts += 1;
            let (payload, held) = match (&stream, alert.in_stream) {
                (Some((chunk, held)), true) => (chunk.data, Some(held)),
                _ => (payload, None),
            };
            let event = AlertEvent {
                alert,
                ts,
                pcap_cnt,
                tuple,
                vlan,
                wire,
                flow: facts,
                blocked: self.simulate_ips && blocks(alert.action),
                verdict: verdict.verdict,
                passed,
                payload,
                held,
                app: app_facts,
                flowbits,
            };
            out.emit(Event::Alert(&event));
        }
        verdict
    }

    /// A flow has ended: inspect what its streams still hold, then report the flow.
    pub(super) fn end_flow(&mut self, mut rec: FlowRecord<FlowExt>, mem: &mut ReassemblyMemory, out: &mut Out<'_>) {
        // Under a clock or shutdown key (odd), flows ending together sort by first packet.
        let outer_sub = out.sub;
        if out.key & 1 == 1 {
            out.sub = rec.first_pcap_cnt;
        }
        let bypass = rec.ext.bypass;
        if bypass.mode == super::BypassMode::Capture {
            let k = bypass.kernel;
            self.bypass.closed += 1;
            self.bypass.pkts += k.pkts_toserver + k.pkts_toclient;
            self.bypass.bytes += k.bytes_toserver + k.bytes_toclient;
            self.bypass_ended.push(rec.flow_id);
        }
        if !self.detectors.is_empty() {
            let t = &rec.tuple;
            self.detectors.flow_event(&crate::detectors::FlowEvent::Ended {
                client: (t.src_ip(), t.src_port),
                server: (t.dst_ip(), t.dst_port),
                proto: t.proto,
                packets: rec.pkts_toserver + rec.pkts_toclient,
                bytes: rec.bytes_toserver + rec.bytes_toclient,
            });
        }
        if let Some(mut stream) = rec.ext.stream.take() {
            // A bypassed flow's streams still hold what came before the bypass (in IDS mode
            // data is inspected once acked, which the bypass may have cut short): it is
            // inspected here like any flow's, so no alert on pre-bypass data is lost.
            if self.engine.is_some() && !rec.ext.dropped && !rec.ext.passed {
                self.inspect_flow_end(&mut rec, &mut stream, mem, out);
            }
            stream.release(mem);
        }
        if let Some(app) = rec.ext.app.as_deref_mut() {
            app.release(&mut self.app_counters);
        }
        // The flow record lists the flowbits still set and the last entropy values (eve's
        // `metadata`/`traffic`).
        if !rec.ext.detect.vars.bits.is_empty() || !rec.ext.detect.vars.entropy.is_empty() {
            rec.ext.names = self.engine.clone();
        }
        out.emit(Event::Flow(&rec));
        out.sub = outer_sub;
    }

    /// Suricata's flow-end pseudo packets: the data each direction still holds (including
    /// what the peer never acked) and the transactions still waiting, inspected once more.
    fn inspect_flow_end(
        &mut self,
        rec: &mut FlowRecord<FlowExt>,
        stream: &mut crate::stream::TcpReassembly,
        mem: &mut ReassemblyMemory,
        out: &mut Out<'_>,
    ) {
        stream.close();
        let flow_tuple = rec.tuple;
        let client = (flow_tuple.src, flow_tuple.src_port);
        let server = (flow_tuple.dst, flow_tuple.dst_port);
        // The close releases what the app layer had not seen yet (unacked data).
        if let Some(app) = rec.ext.app.as_deref_mut() {
            for dir in [Direction::ToServer, Direction::ToClient] {
                app.feed(stream, dir, (client.1, server.1), mem, &mut self.app_counters);
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
            age_secs: super::age_secs(rec.start, rec.end),
        };
        for dir in [Direction::ToServer, Direction::ToClient] {
            let to_server = dir == Direction::ToServer;
            let tuple = if to_server { flow_tuple } else { flow_tuple.reversed() };
            let facts = FlowFacts { info: FlowInfo { to_server, ..info }, client, server, start: rec.start };
            let origin = || Origin::FlowEnd { ts: rec.end, tuple, vlan: rec.vlan };
            let FlowExt { detect, app, .. } = &mut rec.ext;
            let mut app = app.as_deref_mut();
            let first_tx = app.as_deref_mut().and_then(|a| a.take_pending(dir));
            let mut alerted = false;
            let mut ran = false;
            // The transactions after the first, taken with the first chunk.
            let mut further: Vec<u64> = Vec::new();
            stream.inspect_raw_held(dir, mem, |chunk, held| {
                self.repeat_chunk = ran;
                if !ran {
                    if let Some(a) = app.as_deref_mut() {
                        further.extend(std::iter::from_fn(|| a.take_pending(dir)));
                    }
                }
                ran = true;
                self.counters.stream_pseudo_packets += 1;
                let mut view = app.as_deref_mut().map(|a| a.view(first_tx, dir));
                alerted |=
                    self.detect(origin(), Some(facts), Some((chunk, held)), Some(detect), view.as_mut(), out).alerted;
                // A rule with both payload and transaction keywords reads the stream with
                // every transaction, as Suricata's per-transaction stream engine does: a
                // repeat run of the chunk per further transaction, in which only such rules
                // not matched on this chunk yet are evaluated.
                if let Some(a) = app.as_deref_mut() {
                    for &tx in &further {
                        self.repeat_chunk = true;
                        let mut view = a.view(Some(tx), dir);
                        view.app_only = true;
                        alerted |= self
                            .detect(origin(), Some(facts), Some((chunk, held)), Some(detect), Some(&mut view), out)
                            .alerted;
                    }
                }
            });
            // Transactions still waiting: a pseudo packet with their buffers only.
            if let Some(app) = app {
                let mut next = if ran { further.first().copied() } else { first_tx };
                let mut rest = further.iter().skip(1).copied();
                while let Some(tx) = next {
                    let mut view = app.view(Some(tx), dir);
                    view.app_only = true;
                    alerted |= self.detect(origin(), Some(facts), None, Some(detect), Some(&mut view), out).alerted;
                    next = if ran { rest.next() } else { app.take_pending(dir) };
                }
            }
            rec.ext.alerted |= alerted;
        }
        // No packet: records take the flow's first MAC addresses, as Suricata's do.
        let ether = rec.ext.macs.as_ref().and_then(|m| m.first());
        if let Some(app) = rec.ext.app.as_deref_mut() {
            let info = FlowInfo { to_server: true, ..info };
            let facts = FlowFacts { info, client, server, start: rec.start };
            super::report_done(app, (rec.end, 0), (flow_tuple, rec.vlan, ether), facts, out);
        }
    }
}
