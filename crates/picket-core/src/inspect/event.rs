//! What the inspector reports: typed events handed to an [`EventSink`] as they happen, and
//! a [`Verdict`] for every packet.
//!
//! Events borrow the inspector's state (the packet, the flow, the transaction); a sink
//! that keeps anything must copy or format it before returning. picket's
//! `output::sink::LogSink` formats them into eve.json and fast.log lines on the worker
//! thread.

use super::FlowExt;
use crate::applayer::tls::TlsState;
use crate::applayer::{AppProto, AppTx};
use crate::decode::{Decoded, FiveTuple, PROTO_TCP};
use crate::detect::engine::{Alert, DetectEngine, DetectFlow, FlowInfo};
use crate::detect::rule::Action;
use crate::flow::FlowRecord;
use crate::packet::{PacketMeta, Timestamp};
use crate::stream::HeldStream;

/// Orders events across workers: events raised by the packet numbered `pcap_cnt`.
pub fn packet_key(pcap_cnt: u64) -> u64 {
    pcap_cnt << 1
}

/// Events raised by the clock after packet `pcap_cnt` (flow timeouts): they sort after
/// that packet's own events and before the next packet's.
pub fn clock_key(pcap_cnt: u64) -> u64 {
    (pcap_cnt << 1) | 1
}

/// Events raised at shutdown (flows still open, final records).
pub const SHUTDOWN_KEY: u64 = u64::MAX;

/// Receives the inspector's events in the order they happen. `key` is the event's sort key
/// ([`packet_key`], [`clock_key`] or [`SHUTDOWN_KEY`]).
pub trait EventSink {
    fn event(&mut self, key: u64, event: &Event<'_>);

    /// An event under a clock or shutdown key with its order among the events sharing that
    /// key: `sub` is the first packet of the flow it belongs to (0 under a packet key), so
    /// that flows ending at the same moment come out in the same order whichever worker
    /// held them. Sinks that keep one stream in arrival order need not care.
    fn event_sub(&mut self, key: u64, sub: u64, event: &Event<'_>) {
        let _ = sub;
        self.event(key, event)
    }
}

/// One thing the inspector found.
pub enum Event<'a> {
    /// A rule matched.
    Alert(&'a AlertEvent<'a>),
    /// A packet was blocked (IPS mode).
    Drop(&'a DropEvent<'a>),
    /// A flow ended (timeout, eviction, shutdown).
    Flow(&'a FlowRecord<FlowExt>),
    /// An application-layer transaction is done (both sides complete, or its flow ended).
    Transaction(&'a TxEvent<'a>),
    /// A packet's decoder found anomalies (reported only when asked for:
    /// `InspectSettings::log_decode_anomalies`).
    Anomaly(&'a AnomalyEvent<'a>),
    /// An app-layer parser found a protocol anomaly (eve `anomaly` of type `applayer`).
    AppAnomaly(&'a AppAnomalyEvent),
}

/// A protocol anomaly an app-layer parser found in a transaction, reported after the
/// detection of the packet whose data showed it (or at flow end, `pcap_cnt` 0).
pub struct AppAnomalyEvent {
    pub ts: Timestamp,
    pub pcap_cnt: u64,
    pub flow: FlowFacts,
    /// The flow's client-to-server tuple; records use the packet's direction
    /// ([`crate::applayer::AppAnomaly::dir`]).
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    pub proto: Option<AppProto>,
    pub anomaly: crate::applayer::AppAnomaly,
}

/// A packet with decoder anomalies (`decoded.events`), what eve `anomaly` records of type
/// `decode` are written from: one record per event. Raised right after decoding, before
/// the flow lookup, so it carries no flow; a packet too broken for a five-tuple has none.
pub struct AnomalyEvent<'a> {
    pub meta: &'a PacketMeta,
    pub frame: &'a [u8],
    pub decoded: &'a Decoded<'a>,
    pub tuple: Option<FiveTuple>,
}

/// An application-layer transaction is done: what a protocol log record (eve `http`,
/// `dns`, `tls`) is written from. Reported once per transaction, after the detection of
/// the packet that completed it (or at flow end), while the transaction is still held.
pub struct TxEvent<'a> {
    pub ts: Timestamp,
    /// The packet that completed it; 0 at flow end.
    pub pcap_cnt: u64,
    pub flow: FlowFacts,
    /// The flow's addresses and ports from client to server (as app-layer records are
    /// written), with its IP protocol and family.
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    /// (client, server) MAC addresses of the completing packet (the flow's first pair at
    /// flow end); only when they are tracked (eve-log `ethernet: yes`).
    pub ether: Option<(crate::flow::macs::Mac, crate::flow::macs::Mac)>,
    pub proto: Option<AppProto>,
    pub tx: AppTx<'a>,
}

/// A packet as captured and decoded.
pub struct WirePacket<'a> {
    pub meta: &'a PacketMeta,
    pub frame: &'a [u8],
    pub decoded: &'a Decoded<'a>,
    pub tuple: FiveTuple,
    /// The payload was added to the TCP stream (Suricata's PKT_STREAM_ADD): stream rules
    /// then wait for the reassembled data instead of matching the packet alone.
    pub payload_in_stream: bool,
    /// The flow's payload is no longer inspected (Suricata's PKT_NOPAYLOAD_INSPECTION: its
    /// payload is encrypted, see [`super::encrypted`]).
    pub no_payload: bool,
}

/// The flow side of an alert: its counters so far and its orientation.
#[derive(Clone, Copy)]
pub struct FlowFacts {
    pub info: FlowInfo,
    /// Address (v4-mapped for IPv4) and port of the side that opened the flow.
    pub client: ([u8; 16], u16),
    pub server: ([u8; 16], u16),
    pub start: Timestamp,
}

/// What an alert knows of the flow's application layer.
#[derive(Clone, Copy, Default)]
pub struct AppFacts<'a> {
    pub proto: Option<AppProto>,
    /// The transaction inspected when the rule matched.
    pub tx: Option<AppTx<'a>>,
    /// The flow's TLS session, logged with every alert of the flow as Suricata does.
    pub tls: Option<&'a TlsState>,
    /// Rules use JA3/JA3S, so Suricata computes (and logs) the fingerprints.
    pub log_ja3: bool,
}

/// The flowbits set on a flow after a packet's rules ran.
#[derive(Clone, Copy)]
pub struct FlowBits<'a> {
    engine: &'a DetectEngine,
    flow: &'a DetectFlow,
}

impl<'a> FlowBits<'a> {
    pub(super) fn new(engine: &'a DetectEngine, flow: &'a DetectFlow) -> Self {
        FlowBits { engine, flow }
    }

    /// Names of the flowbits set, in the engine's order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.engine.flowbits_set(self.flow)
    }

    /// The last `entropy` value per buffer (Suricata's `metadata.entropy`), by the buffer's
    /// dotted name (`file.data`; `content` for the payload / stream).
    pub fn entropy(&self) -> impl Iterator<Item = (&'static str, f64)> + 'a {
        self.engine.entropy_values(self.flow)
    }
}

/// A rule matched.
pub struct AlertEvent<'a> {
    pub alert: &'a Alert,
    pub ts: Timestamp,
    /// The packet's number; 0 for stream data released at flow end.
    pub pcap_cnt: u64,
    /// Endpoints in the direction of the inspected data.
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    /// The captured packet; `None` for stream data released at flow end (Suricata's
    /// "stream (flow timeout)" pseudo packet).
    pub wire: Option<&'a WirePacket<'a>>,
    pub flow: Option<FlowFacts>,
    /// The packet was blocked (IPS mode and a drop or reject rule).
    pub blocked: bool,
    /// What is done with the packet as far as the rules that ran with this alert's tell
    /// (eve's `verdict`); always `Pass` in IDS mode, where nothing is blocked.
    pub verdict: Verdict,
    /// A pass rule matched the packet too (the packet's last action is pass: eve's
    /// `verdict.action` is then "pass" unless the packet is blocked).
    pub passed: bool,
    /// The bytes the rule was inspecting: the reassembled stream chunk for stream matches,
    /// the packet's payload otherwise.
    pub payload: &'a [u8],
    /// For stream matches: everything the stream still holds in that direction.
    pub held: Option<&'a HeldStream<'a>>,
    pub app: AppFacts<'a>,
    /// Flowbits after this packet's rules; `None` without a flow.
    pub flowbits: Option<FlowBits<'a>>,
}

/// A packet was blocked (IPS mode). Reported once per packet, after all its rules ran.
pub struct DropEvent<'a> {
    pub wire: &'a WirePacket<'a>,
    /// 0 when the packet belongs to no flow.
    pub flow_id: u64,
    /// The packet's direction in its flow; `None` without a flow.
    pub to_server: Option<bool>,
    /// Suricata's `drop.reason`: "rules", "threshold detection_filter", "flow drop",
    /// "stream midstream".
    pub reason: &'static str,
    /// What is done with the packet: drop, or drop and answer.
    pub verdict: Verdict,
    /// The first drop or reject rule that matched this packet (even a `noalert` one);
    /// `None` when the packet is dropped because its flow is.
    pub alert: Option<&'a Alert>,
    /// No drop of this flow and direction was reported before while the flow was dropped
    /// (always true without a flow): what Suricata's `drop: flows: start` logs, besides
    /// every packet a rule blocks.
    pub first_in_direction: bool,
}

/// What to do with a packet. Offline and in IDS mode everything passes; the inline
/// capture paths act on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    #[default]
    Pass,
    Drop,
    /// Drop, and answer so the endpoints give up quickly.
    Reject(Reject),
}

/// What a rejected packet is answered with, and to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub reply: RejectReply,
    pub to: RejectTarget,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReply {
    /// TCP: a RST.
    TcpReset,
    /// Anything else: ICMP (or ICMPv6) destination unreachable (port unreachable for UDP,
    /// host unreachable for other protocols; see `crate::reject`).
    IcmpUnreachable,
}

/// Who gets the reply, as the rule action says (`reject`/`rejectsrc`, `rejectdst`,
/// `rejectboth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectTarget {
    Source,
    Destination,
    Both,
}

impl RejectTarget {
    fn union(self, other: RejectTarget) -> RejectTarget {
        if self == other {
            self
        } else {
            RejectTarget::Both
        }
    }
}

impl Verdict {
    /// The verdict a matching rule with `action` asks for on a packet of IP protocol `proto`.
    pub fn for_action(action: Action, proto: u8) -> Verdict {
        let to = match action {
            Action::Drop => return Verdict::Drop,
            Action::Reject | Action::RejectSrc => RejectTarget::Source,
            Action::RejectDst => RejectTarget::Destination,
            Action::RejectBoth => RejectTarget::Both,
            Action::Alert | Action::Pass => return Verdict::Pass,
        };
        let reply = if proto == PROTO_TCP { RejectReply::TcpReset } else { RejectReply::IcmpUnreachable };
        Verdict::Reject(Reject { reply, to })
    }

    /// The stronger of two verdicts: reject over drop over pass; two rejects answer
    /// everyone either asked for.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Reject(a), Verdict::Reject(b)) => {
                Verdict::Reject(Reject { reply: a.reply, to: a.to.union(b.to) })
            }
            (r @ Verdict::Reject(_), _) | (_, r @ Verdict::Reject(_)) => r,
            (Verdict::Drop, _) | (_, Verdict::Drop) => Verdict::Drop,
            (Verdict::Pass, Verdict::Pass) => Verdict::Pass,
        }
    }

    /// The packet does not go on.
    pub fn blocks(self) -> bool {
        self != Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_combine_to_the_strongest() {
        let drop = Verdict::for_action(Action::Drop, 6);
        let rst_src = Verdict::for_action(Action::Reject, 6);
        let rst_dst = Verdict::for_action(Action::RejectDst, 6);
        assert_eq!(Verdict::for_action(Action::Alert, 6), Verdict::Pass);
        assert_eq!(Verdict::Pass.and(drop), Verdict::Drop);
        assert_eq!(drop.and(rst_src), rst_src);
        assert_eq!(
            rst_src.and(rst_dst),
            Verdict::Reject(Reject { reply: RejectReply::TcpReset, to: RejectTarget::Both })
        );
        assert_eq!(
            Verdict::for_action(Action::RejectBoth, 17),
            Verdict::Reject(Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Both })
        );
        assert!(drop.blocks() && !Verdict::Pass.blocks());
    }
}
