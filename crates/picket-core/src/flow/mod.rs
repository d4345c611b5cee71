//! Per-worker flow tracking: the flow table ([`table`]), the TCP session state machine
//! ([`tcp`]) and the counters they keep ([`counters`]).
//!
//! The module is sans-IO and knows nothing about packet bytes: the decoder fills a
//! [`FlowPacket`] and calls [`FlowTable::process`], which finds or creates the flow, runs the
//! TCP state machine and tells the caller what later stages need ([`PacketVerdict`]).
//! Flows end through [`FlowTable::expire`] (idle timeout, driven by packet time),
//! [`FlowTable::process`] (forced eviction when the memcap is reached, TCP port reuse) and
//! [`FlowTable::flush_all`] (shutdown); each end hands a [`FlowRecord`] to a caller-supplied
//! closure, carrying everything an eve `flow` event needs plus the extension slot `E`.
//!
//! Keying follows Suricata: the 5-tuple plus up to two VLAN ids, normalized so that both
//! directions find the same flow. ICMP and ICMPv6 flows are keyed on addresses and protocol
//! only (the ports are forced to 0): a [`FiveTuple`] carries ICMP type/code in the port fields,
//! and keying on them would split an echo request from its reply. The echo identifier is not
//! part of the key because the decoder does not hand it to us; concurrent pings between the
//! same two hosts therefore share one flow.

pub mod counters;
pub mod fanout_hash;
pub mod hash;
pub mod macs;
pub mod table;
pub mod tcp;

pub use counters::FlowCounters;
pub use table::{Flow, FlowTable, Upcoming};
pub use tcp::{StreamEvent, TcpState};

pub use crate::decode::{is_icmp, FiveTuple, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use crate::packet::Timestamp;

/// TCP header flag bits as they appear in the flags byte.
/// TCP flag bits, as the decoder defines them.
pub use crate::decode::tcp as tcp_flags;

/// The TCP header fields the state machine looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSegment {
    /// See [`tcp_flags`].
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub window: u16,
}

/// What the flow stage needs to know about one decoded packet.
#[derive(Clone, Copy, Debug)]
pub struct FlowPacket {
    /// The packet's endpoints as decoded. For ICMP the ports carry type (`src_port`) and
    /// code (`dst_port`); they are recorded in the flow but not used for keying.
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    pub ts: Timestamp,
    pub pcap_cnt: u64,
    /// Bytes counted in the flow's byte counters (Suricata counts the whole packet).
    pub wire_len: u32,
    /// TCP/UDP payload length; used for TCP sequence space accounting.
    pub payload_len: u32,
    /// Present for TCP packets whose header was decoded.
    pub tcp: Option<TcpSegment>,
}

/// Normalized flow identity: the packet's [`FiveTuple`] in canonical orientation (the
/// lower (address, port) endpoint is `src`, see [`FiveTuple::canonical`]; ICMP ports
/// forced to 0) plus the VLAN ids, so both directions of a conversation produce the same
/// key.
///
/// Equality and hashing cover addresses, ports, protocol and VLANs but not
/// `tuple.is_v4`: the 16-byte addresses are the identity (an IPv4 address is v4-mapped),
/// and `is_v4` only records how the flow's first packet spelled them.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowKey {
    /// Canonically oriented: `src`/`src_port` is the lower endpoint.
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
}

impl FlowKey {
    /// Builds the key for `tuple` and reports whether the tuple's source is the lower
    /// endpoint (the key's `src`).
    #[inline]
    pub fn new(tuple: &FiveTuple, vlan: crate::decode::VlanIds) -> (FlowKey, bool) {
        let mut t = *tuple;
        if is_icmp(t.proto) {
            t.src_port = 0;
            t.dst_port = 0;
        }
        let (tuple, src_is_lo) = t.canonical();
        (FlowKey { tuple, vlan }, src_is_lo)
    }

    /// [`FlowKey::new`] for a packet.
    #[inline]
    pub fn from_packet(pkt: &FlowPacket) -> (FlowKey, bool) {
        Self::new(&pkt.tuple, pkt.vlan)
    }
}

impl PartialEq for FlowKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.tuple, &other.tuple);
        a.src == b.src
            && a.dst == b.dst
            && a.src_port == b.src_port
            && a.dst_port == b.dst_port
            && a.proto == b.proto
            && self.vlan == other.vlan
    }
}

impl Eq for FlowKey {}

impl std::hash::Hash for FlowKey {
    // Hand-written so the hasher sees five machine words instead of byte slices with
    // length prefixes: this runs once per packet.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let t = &self.tuple;
        for addr in [&t.src, &t.dst] {
            let (a, b) = addr.split_at(8);
            state.write_u64(u64::from_ne_bytes(a.try_into().unwrap_or([0; 8])));
            state.write_u64(u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])));
        }
        state.write_u64(
            (t.src_port as u64)
                | (t.dst_port as u64) << 16
                | (self.vlan[0] as u64 & 0xfff) << 32
                | (self.vlan[1] as u64 & 0xfff) << 44
                | (t.proto as u64) << 56,
        );
        // VLAN ids are 12 bits, but nothing stops a caller from passing more: hash the rest
        // too, with the third id.
        state.write_u64((self.vlan[0] >> 12) as u64 | ((self.vlan[1] >> 12) as u64) << 8 | (self.vlan[2] as u64) << 16);
    }
}

/// Idle timeouts (seconds) for the three flow states, and for flows the engine bypassed
/// (Suricata's `flow-timeouts.*.bypassed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateTimeouts {
    pub new: u32,
    pub established: u32,
    pub closed: u32,
    pub bypassed: u32,
}

impl StateTimeouts {
    pub fn for_state(&self, state: FlowState) -> u32 {
        match state {
            FlowState::New => self.new,
            FlowState::Established => self.established,
            FlowState::Closed => self.closed,
        }
    }
}

/// Timeouts per protocol family, like Suricata's `flow-timeouts` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowTimeouts {
    pub tcp: StateTimeouts,
    pub udp: StateTimeouts,
    /// ICMP and ICMPv6.
    pub icmp: StateTimeouts,
    /// Every other IP protocol.
    pub default: StateTimeouts,
}

impl FlowTimeouts {
    pub fn for_proto(&self, proto: u8) -> &StateTimeouts {
        match proto {
            PROTO_TCP => &self.tcp,
            PROTO_UDP => &self.udp,
            PROTO_ICMP | PROTO_ICMPV6 => &self.icmp,
            _ => &self.default,
        }
    }

    /// Suricata's defaults for normal operation.
    pub fn suricata_default() -> Self {
        FlowTimeouts {
            tcp: StateTimeouts { new: 60, established: 600, closed: 60, bypassed: 100 },
            udp: StateTimeouts { new: 30, established: 300, closed: 0, bypassed: 100 },
            icmp: StateTimeouts { new: 30, established: 300, closed: 0, bypassed: 100 },
            default: StateTimeouts { new: 30, established: 300, closed: 0, bypassed: 100 },
        }
    }

    /// Suricata's defaults for emergency mode (the `emergency-*` keys).
    pub fn suricata_emergency_default() -> Self {
        FlowTimeouts {
            tcp: StateTimeouts { new: 5, established: 100, closed: 10, bypassed: 50 },
            udp: StateTimeouts { new: 10, established: 100, closed: 0, bypassed: 50 },
            icmp: StateTimeouts { new: 10, established: 100, closed: 0, bypassed: 50 },
            default: StateTimeouts { new: 10, established: 100, closed: 0, bypassed: 50 },
        }
    }
}

/// Flow table configuration. `Default` gives Suricata's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Memory budget of this table (one worker). The flow count limit is
    /// `memcap_bytes / FlowTable::bytes_per_flow()`, and the heap the flows' app-layer state
    /// reports ([`FlowTable::set_ext_bytes`]) counts against it too; split a global
    /// `flow.memcap` across workers before passing it here.
    pub memcap_bytes: u64,
    /// Flows the hash index and slab are sized for up front (Suricata's `flow.prealloc`);
    /// both grow on demand up to the memcap-derived limit.
    pub prealloc_flows: usize,
    /// `flow.emergency-recovery`: emergency mode ends once the memory in use is at or below
    /// `100 - this` percent of the memcap.
    pub emergency_recovery_percent: u8,
    pub timeouts: FlowTimeouts,
    pub emergency_timeouts: FlowTimeouts,
    /// Pick up TCP sessions whose handshake was not seen (`stream.midstream`).
    pub midstream: bool,
    /// Accept a handshake where only the client side is visible (`stream.async-oneside`).
    pub async_oneside: bool,
    /// `stream.reassembly.depth` (0: unlimited): the TCP session's view for stream
    /// reassembly ([`tcp::StreamView`]) keeps reassembly's sequence bookkeeping, which stops
    /// at the depth. Give it the value reassembly uses.
    pub reassembly_depth: u64,
    /// `vlan.use-for-tracking`: VLAN ids are part of the flow key. Off, packets of one
    /// tuple on any VLANs are one flow, which keeps the VLANs of its first packet for eve.
    pub track_vlan: bool,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            memcap_bytes: 128 * 1024 * 1024,
            prealloc_flows: 10_000,
            emergency_recovery_percent: 30,
            timeouts: FlowTimeouts::suricata_default(),
            emergency_timeouts: FlowTimeouts::suricata_emergency_default(),
            midstream: false,
            async_oneside: false,
            reassembly_depth: 1024 * 1024,
            track_vlan: true,
        }
    }
}

/// Suricata's coarse flow state, used for timeouts and the eve `flow.state` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlowState {
    New,
    Established,
    Closed,
}

impl FlowState {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowState::New => "new",
            FlowState::Established => "established",
            FlowState::Closed => "closed",
        }
    }
}

/// Why a flow ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowEndReason {
    /// Idle past its state's timeout.
    Timeout,
    /// Evicted to make room under the memcap.
    Forced,
    /// Flushed at the end of the run.
    Shutdown,
    /// A new SYN arrived on a closed TCP session with the same tuple; the old flow ends
    /// and a new one starts. Suricata keeps the old flow until it times out, so its eve
    /// reason is "timeout"; we count it separately as `flow.tcp_reuse`.
    TcpReuse,
}

impl FlowEndReason {
    /// The eve `flow.reason` string.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowEndReason::Timeout | FlowEndReason::TcpReuse => "timeout",
            FlowEndReason::Forced => "forced",
            FlowEndReason::Shutdown => "shutdown",
        }
    }
}

/// Identifies a live flow in its table. Handles of ended flows stop resolving (the slot's
/// generation changes), so holding one across packets is safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowHandle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl FlowHandle {
    /// Slot number, below [`FlowTable::max_flows`]: lets a stage keep per-flow data in its
    /// own array. A new flow may reuse the slot of an ended one.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

/// What [`FlowTable::process`] tells the caller about a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketVerdict {
    pub handle: FlowHandle,
    pub flow_id: u64,
    /// Packet travels from the flow's initiator (client) to the responder (server).
    pub to_server: bool,
    /// This packet created the flow.
    pub created: bool,
    /// Suricata's `flow:established`: TCP once the session reached established (3WHS or
    /// midstream pickup), other protocols once both sides have sent a packet.
    pub established: bool,
    pub state: FlowState,
    /// `TcpState::None` for non-TCP flows.
    pub tcp_state: TcpState,
    /// Stream anomaly raised by this packet, for `stream-event` rules.
    pub stream_event: Option<StreamEvent>,
    /// TCP packet (ACK, SYN/ACK or FIN) that arrived while no session was tracked: the
    /// case Suricata's `stream.midstream-policy` governs, whether it was picked up or not.
    pub midstream_exception: bool,
}

/// TCP part of a [`FlowRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpRecord {
    /// Union of flags seen in both directions.
    pub tcp_flags: u8,
    pub tcp_flags_ts: u8,
    pub tcp_flags_tc: u8,
    pub state: TcpState,
}

/// A finished flow: the fields of Suricata's eve `flow` event plus the extension slot.
/// Addresses and ports are oriented initiator (`src`) to responder (`dst`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord<E> {
    pub flow_id: u64,
    /// From the client (the side that opened the flow) to the server; ports are 0 for ICMP
    /// (see `icmp_*`).
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    /// Timestamp of the first packet.
    pub start: Timestamp,
    /// Timestamp of the latest packet.
    pub end: Timestamp,
    pub first_pcap_cnt: u64,
    pub last_pcap_cnt: u64,
    pub state: FlowState,
    pub reason: FlowEndReason,
    /// TCP only.
    pub tcp: Option<TcpRecord>,
    /// ICMP (type, code) of the first packet each way, for eve's `icmp_type`/`response_icmp_type`.
    pub icmp_toserver: Option<(u8, u8)>,
    pub icmp_toclient: Option<(u8, u8)>,
    pub ext: E,
}

#[cfg(test)]
mod tests;
