//! The per-worker flow table.
//!
//! Storage: flows live in a slab (`Vec` of slots, reused through a free list); a
//! `hashbrown::HashTable<u32>` of slot indices, hashed with FxHash from a per-table random
//! seed (against hash flooding, see `hash::key_hash_seeded`), finds them by key (the key
//! is stored once, in the slot). Nothing is
//! allocated per packet; the slab and index grow on demand up to the memcap-derived flow
//! limit and never beyond it.
//!
//! Timeouts: a timing wheel of one bucket per second (1024 buckets, wrapping). Each flow sits
//! in exactly one bucket, the second in which it may time out. Packets only update
//! the flow's last-seen time; the wheel is checked lazily: when a bucket comes due, a flow
//! that saw traffic in the meantime is moved to the bucket of its new deadline instead of
//! being expired. A flow is only moved early when its state changes to a shorter timeout
//! (e.g. established → closed). `expire` therefore costs O(1) when called again within the
//! same second, and otherwise O(seconds elapsed + flows due), so callers may call it on
//! every packet or on every clock tick.
//!
//! Memcap: `FlowConfig::memcap_bytes / bytes_per_flow()` flows at most, and the memory in
//! use (live flows at `bytes_per_flow()` each plus the heap the later stages report for
//! them through [`FlowTable::set_ext_bytes`]: app-layer parsers and their transactions)
//! below the memcap. `flow.memuse` is what the table really holds: the slab and the hash
//! index at their allocated capacity (the slab grows in steps of at most an eighth of the
//! flow limit, so a doubling never overshoots) plus the reported heap. A new flow arriving
//! at the limit puts the table in emergency mode (shorter `emergency_timeouts`, plus a
//! bounded scan for flows idle past them on each `expire`) and evicts one flow, reason
//! "forced": a closed flow if one is found, else the least recently seen of a sample of
//! slots taken round-robin (approximate LRU without per-packet list maintenance).
//! Several flows may be evicted for one new flow when the reported heap is what fills the
//! memcap. Emergency mode ends when the memory in use drops to `100 -
//! emergency_recovery_percent` percent of the memcap (Suricata's `flow.emergency-recovery`).

use hashbrown::HashTable;
use std::mem;

use super::counters::FlowCounters;
use super::hash::{flow_id, key_hash_seeded, random_seed};
use super::tcp::{TcpConfig, TcpSession};
use super::{
    is_icmp, FiveTuple, FlowConfig, FlowEndReason, FlowHandle, FlowKey, FlowPacket, FlowRecord, FlowState,
    FlowTimeouts, PacketVerdict, TcpRecord, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP,
};
use crate::packet::Timestamp;

const WHEEL_BUCKETS: usize = 1024;
const WHEEL_MASK: u64 = WHEEL_BUCKETS as u64 - 1;
/// Slots looked at when choosing a flow to evict.
const EVICTION_SAMPLE: usize = 16;
/// Slots checked against the emergency timeouts per `expire` call that advances the clock.
const EMERGENCY_SCAN_SLOTS: usize = 4096;
/// Flows evicted at most to make room for one new flow: bounds the work per packet when
/// large per-flow heaps fill the memcap (the next new flows evict more).
const MAX_EVICTIONS_PER_FLOW: usize = 8;
const NANOS: u64 = Timestamp::NANOS_PER_SEC;

/// Tracking data of one flow. Read it through [`FlowTable::flow`]; the table owns updates.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// The flow's identity; `key.tuple.is_v4` is the IP version of its first packet.
    pub key: FlowKey,
    pub flow_id: u64,
    /// The initiator (client) is the key's lower endpoint (`key.tuple.src`).
    client_is_lo: bool,
    pub tcp: TcpSession,
    pub tcp_flags_ts: u8,
    pub tcp_flags_tc: u8,
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    pub first_ts: Timestamp,
    pub last_ts: Timestamp,
    pub first_pcap_cnt: u64,
    pub last_pcap_cnt: u64,
    /// VLAN ids of the flow's first packet (the key's, unless `vlan.use-for-tracking` is off).
    pub vlan: crate::decode::VlanIds,
    pub icmp_toserver: Option<(u8, u8)>,
    pub icmp_toclient: Option<(u8, u8)>,
    /// The engine is done with the flow ([`FlowTable::set_bypassed`]): it times out after
    /// the protocol's `bypassed` timeout.
    pub bypassed: bool,
    /// The flow is dropped (IPS): its packets no longer move the TCP session
    /// ([`FlowTable::freeze_tcp`]), as Suricata's stream engine skips dropped packets.
    pub tcp_frozen: bool,
    /// Dispatch bucket of the packet that created the flow ([`FlowTable::set_bucket`]):
    /// which flows move when the dispatcher hands a bucket to another worker.
    pub bucket: u16,
}

impl Flow {
    /// The flow's endpoints oriented initiator (`src`) to responder (`dst`); ICMP ports
    /// are 0 as in the key.
    pub fn tuple(&self) -> FiveTuple {
        if self.client_is_lo {
            self.key.tuple
        } else {
            self.key.tuple.reversed()
        }
    }

    pub fn is_v4(&self) -> bool {
        self.key.tuple.is_v4
    }

    /// Initiator address and port.
    pub fn client(&self) -> ([u8; 16], u16) {
        let t = &self.key.tuple;
        if self.client_is_lo {
            (t.src, t.src_port)
        } else {
            (t.dst, t.dst_port)
        }
    }

    /// Responder address and port.
    pub fn server(&self) -> ([u8; 16], u16) {
        let t = &self.key.tuple;
        if self.client_is_lo {
            (t.dst, t.dst_port)
        } else {
            (t.src, t.src_port)
        }
    }

    fn both_sides_seen(&self) -> bool {
        self.pkts_toserver > 0 && self.pkts_toclient > 0
    }

    pub fn state(&self) -> FlowState {
        if self.key.tuple.proto == PROTO_TCP {
            self.tcp.state.flow_state()
        } else if self.both_sides_seen() {
            FlowState::Established
        } else {
            FlowState::New
        }
    }

    /// Suricata's `flow:established` (see [`PacketVerdict::established`]).
    pub fn established(&self) -> bool {
        if self.key.tuple.proto == PROTO_TCP {
            self.tcp.reached_established
        } else {
            self.both_sides_seen()
        }
    }

    pub fn tcp_flags(&self) -> u8 {
        self.tcp_flags_ts | self.tcp_flags_tc
    }

    /// Client and server trade places, with every per-direction field.
    fn swap_roles(&mut self) {
        self.client_is_lo = !self.client_is_lo;
        mem::swap(&mut self.tcp_flags_ts, &mut self.tcp_flags_tc);
        mem::swap(&mut self.pkts_toserver, &mut self.pkts_toclient);
        mem::swap(&mut self.bytes_toserver, &mut self.bytes_toclient);
        mem::swap(&mut self.icmp_toserver, &mut self.icmp_toclient);
    }
}

/// A flow between two tables: taken out of one worker's table with its extension, to be
/// adopted by another's (see [`FlowTable::take_flows`]).
pub struct MovedFlow<E> {
    flow: Flow,
    ext: E,
    ext_bytes: u64,
}

impl<E> MovedFlow<E> {
    pub fn flow(&self) -> &Flow {
        &self.flow
    }
    pub fn ext_mut(&mut self) -> &mut E {
        &mut self.ext
    }
}

struct Slot<E> {
    flow: Flow,
    ext: E,
    in_use: bool,
    /// Bumped when the slot is freed so stale handles stop resolving.
    generation: u32,
    /// Flow state the slot's wheel position was computed for.
    scheduled_state: FlowState,
    /// Wheel bucket second; the bucket index is `due_sec & WHEEL_MASK`.
    due_sec: u64,
    /// Position inside the bucket's list, kept exact so removal is O(1).
    wheel_pos: u32,
    /// Heap held by `ext` as last reported ([`FlowTable::set_ext_bytes`]), charged to the memcap.
    ext_bytes: u64,
}

/// A flow about to end, as [`FlowTable::flush_all_ahead`] shows it: one stage of loading
/// its memory ahead, each stage reading only what the stage before had loaded.
pub enum Upcoming<'a, E> {
    /// Where the flow's slot lies (start, length).
    Slot(*const u8, usize),
    /// The flow's extension, whose slot is loaded: what it points to comes next.
    State(&'a E),
    /// The same extension a stage later: what that in turn points to.
    Inner(&'a E),
}

/// Where a slot lies (start, length), to load it ahead; takes what `FlowTable::hinted`
/// gives.
fn slot_extent<E>((_, slot): (usize, &Slot<E>)) -> (*const u8, usize) {
    ((slot as *const Slot<E>).cast(), mem::size_of::<Slot<E>>())
}

impl<E> Upcoming<'_, E> {
    /// How many flows ahead each stage is shown.
    pub const SLOT: usize = 6;
    pub const STATE: usize = 4;
    pub const INNER: usize = 2;
}

/// Flow table of one worker. `E` is the extension slot later stages hang their per-flow
/// state on (stream reassembly, flowbits, app-layer); it is `E::default()` for a new flow
/// and moved into the [`FlowRecord`] when the flow ends.
pub struct FlowTable<E: Default = ()> {
    config: FlowConfig,
    tcp_config: TcpConfig,
    index: HashTable<u32>,
    /// Direct-mapped lookup hints: at `hint_pos(hash)`, the slot index + 1 of the flow
    /// inserted last with such a hash (0: none). A lookup tries the hinted slot before the
    /// index, and a reader that knows the next packets can have both the hint and the
    /// hinted slot loaded ahead ([`FlowTable::hint_entry`], [`FlowTable::hinted_slot`]):
    /// the index's buckets and the slots are too large for the caches, and each lookup
    /// waited on two or three memory reads in a row. Stale hints are harmless: the slot's
    /// key is checked. A power of two at least the slab's capacity.
    hints: Vec<u32>,
    /// Seed of the index hash.
    hash_seed: u64,
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    wheel: Vec<Vec<u32>>,
    /// Last second the wheel has been processed up to.
    wheel_sec: u64,
    max_flows: usize,
    bytes_per_flow: u64,
    /// Sum of the live slots' `ext_bytes`.
    ext_bytes: u64,
    emergency: bool,
    eviction_cursor: usize,
    emergency_cursor: usize,
    counters: FlowCounters,
}

impl<E: Default> FlowTable<E> {
    pub fn new(config: FlowConfig) -> Self {
        let bytes_per_flow = Self::bytes_per_flow();
        let max_flows = (config.memcap_bytes / bytes_per_flow).min(u32::MAX as u64 - 1) as usize;
        let prealloc = config.prealloc_flows.min(max_flows);
        FlowTable {
            tcp_config: TcpConfig {
                midstream: config.midstream,
                async_oneside: config.async_oneside,
                reassembly_depth: config.reassembly_depth,
            },
            index: HashTable::with_capacity(prealloc),
            hints: vec![0; prealloc.max(1).next_power_of_two()],
            hash_seed: random_seed(),
            slots: Vec::with_capacity(prealloc),
            free: Vec::new(),
            wheel: (0..WHEEL_BUCKETS).map(|_| Vec::new()).collect(),
            wheel_sec: 0,
            max_flows,
            bytes_per_flow,
            ext_bytes: 0,
            emergency: false,
            eviction_cursor: 0,
            emergency_cursor: 0,
            counters: FlowCounters::default(),
            config,
        }
    }

    /// Memory charged per flow against the memcap: the slot (flow, extension, bookkeeping),
    /// a hash index entry at the worst load factor (the index may be twice as large as its
    /// contents right after growing), the wheel entry and a free-list entry. Heap memory
    /// owned by `E` is not seen here; stages that allocate keep their own memcaps.
    pub fn bytes_per_flow() -> u64 {
        let index_entry = mem::size_of::<u32>() + 1;
        // The hints are at most twice the slab's capacity.
        let hint = 2 * mem::size_of::<u32>();
        (mem::size_of::<Slot<E>>() + 2 * index_entry + hint + 2 * mem::size_of::<u32>()) as u64
    }

    /// Flow limit derived from the memcap.
    pub fn max_flows(&self) -> usize {
        self.max_flows
    }

    /// Memory the flows in use account for: `bytes_per_flow()` each plus the heap their
    /// extensions reported. This is what the memcap bounds and what eviction can free (the
    /// slab's capacity stays allocated for the next flows).
    pub fn memory_in_use(&self) -> u64 {
        self.index.len() as u64 * self.bytes_per_flow + self.ext_bytes
    }

    /// Bytes the table holds now (`flow.memuse`): slab, hash index, free list and wheel at
    /// their allocated size, plus the heap the extensions reported.
    fn held_bytes(&self) -> u64 {
        let slab = self.slots.capacity() * mem::size_of::<Slot<E>>();
        let lists = (self.free.capacity() + self.index.len() + self.hints.len()) * mem::size_of::<u32>();
        (slab + self.index.allocation_size() + lists) as u64 + self.ext_bytes
    }

    /// Records that the flow's extension now holds `bytes` of heap (its boxed per-flow
    /// state, measured by the stage that owns it). The bytes count against the memcap until
    /// the flow ends or the next report; a full memcap makes room by evicting flows when
    /// the next flow is created.
    pub fn set_ext_bytes(&mut self, handle: FlowHandle, bytes: u64) {
        let Some(slot) = self.live_slot_mut(handle) else { return };
        let old = mem::replace(&mut slot.ext_bytes, bytes);
        self.ext_bytes = self.ext_bytes - old + bytes;
        self.counters.memuse = self.held_bytes();
    }

    /// The memcap leaves no room for one more flow.
    fn at_memcap(&self) -> bool {
        self.index.len() >= self.max_flows
            || self.memory_in_use().saturating_add(self.bytes_per_flow) > self.config.memcap_bytes
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// The per-flow state of every open flow (a rule reload renames what it holds).
    pub fn exts_mut(&mut self) -> impl Iterator<Item = &mut E> + '_ {
        self.slots.iter_mut().filter(|s| s.in_use).map(|s| &mut s.ext)
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn in_emergency(&self) -> bool {
        self.emergency
    }

    pub fn counters(&self) -> &FlowCounters {
        &self.counters
    }

    pub fn config(&self) -> &FlowConfig {
        &self.config
    }

    pub fn flow(&self, handle: FlowHandle) -> Option<&Flow> {
        self.live_slot(handle).map(|s| &s.flow)
    }

    pub fn ext_mut(&mut self, handle: FlowHandle) -> Option<&mut E> {
        self.live_slot_mut(handle).map(|s| &mut s.ext)
    }

    /// The flow's tracking data and its extension slot at once.
    pub fn flow_and_ext_mut(&mut self, handle: FlowHandle) -> Option<(&Flow, &mut E)> {
        self.live_slot_mut(handle).map(|s| (&s.flow, &mut s.ext))
    }

    /// The flow was dropped: its TCP state (eve `tcp.state`, flags, timeouts) stays what it
    /// was at the drop, as Suricata does not track the session of a dropped flow further.
    pub fn freeze_tcp(&mut self, handle: FlowHandle) {
        if let Some(slot) = self.live_slot_mut(handle) {
            slot.flow.tcp_frozen = true;
        }
    }

    /// Marks the flow bypassed: from now on it times out after its protocol's `bypassed`
    /// timeout (usually shorter than `established`, so it is rescheduled at once).
    /// `on: false` undoes it (the bypass did not happen).
    pub fn set_bypassed(&mut self, handle: FlowHandle, on: bool) {
        let Some(slot) = self.live_slot_mut(handle) else { return };
        if slot.flow.bypassed == on {
            return;
        }
        slot.flow.bypassed = on;
        let index = handle.index;
        let due = self.due_sec(index);
        if due < self.slots[index as usize].due_sec {
            self.unschedule(index);
            self.schedule(index, due);
        }
    }

    /// Records activity of a flow seen elsewhere (a bypassed flow's packets counted in the
    /// kernel): its last-seen time moves to `ts` (never back), which keeps it alive.
    pub fn touch(&mut self, handle: FlowHandle, ts: Timestamp) {
        if let Some(slot) = self.live_slot_mut(handle) {
            slot.flow.last_ts = slot.flow.last_ts.max(ts);
        }
    }

    /// Finds the flow a packet with this key would belong to, without touching it.
    pub fn find(&self, key: &FlowKey) -> Option<FlowHandle> {
        let index = self.lookup(key_hash_seeded(key, self.hash_seed), key)?;
        let slot = self.slots.get(index as usize)?;
        Some(FlowHandle { index, generation: slot.generation })
    }

    /// The hash a packet of `tuple` is looked up with.
    pub fn hash_of(&self, tuple: &FiveTuple, vlan: crate::decode::VlanIds) -> u64 {
        let (key, _) = FlowKey::new(tuple, if self.config.track_vlan { vlan } else { [0; 3] });
        key_hash_seeded(&key, self.hash_seed)
    }

    fn hint_pos(&self, hash: u64) -> usize {
        // The index places entries by the hash's low bits; the hints use the high ones.
        (hash >> 32) as usize & (self.hints.len() - 1)
    }

    /// The hint a lookup of `hash` reads first (to load it ahead of the packet).
    pub fn hint_entry(&self, hash: u64) -> &u32 {
        &self.hints[self.hint_pos(hash)]
    }

    /// Where the slot a lookup of `hash` tries first lies (start, length), if there is a
    /// hint: to load it ahead. Reads the hint, not the slot.
    pub fn hinted_slot(&self, hash: u64) -> Option<(*const u8, usize)> {
        self.hinted(hash).map(slot_extent)
    }

    /// The state the flow the hint for `hash` names carries, if the hint names a live flow:
    /// to load what it points to ahead. Reads the hint and the slot.
    pub fn hinted_ext(&self, hash: u64) -> Option<&E> {
        self.hinted(hash).filter(|(_, slot)| slot.in_use).map(|(_, slot)| &slot.ext)
    }

    /// The slot the hint for `hash` names (index, slot), live or not; reads the hint only.
    fn hinted(&self, hash: u64) -> Option<(usize, &Slot<E>)> {
        let i = (*self.hint_entry(hash) as usize).checked_sub(1)?;
        self.slots.get(i).map(|slot| (i, slot))
    }

    /// Sizes the hints to the slab's capacity and hints every live flow again.
    fn resize_hints(&mut self) {
        let len = self.slots.capacity().max(1).next_power_of_two();
        if len == self.hints.len() {
            return;
        }
        self.hints = vec![0; len];
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.in_use {
                let pos = self.hint_pos(key_hash_seeded(&slot.flow.key, self.hash_seed));
                self.hints[pos] = i as u32 + 1;
            }
        }
    }

    #[inline]
    fn lookup(&self, hash: u64, key: &FlowKey) -> Option<u32> {
        if let Some((i, _)) = self.hinted(hash).filter(|(_, s)| s.in_use && s.flow.key == *key) {
            return Some(i as u32);
        }
        let slots = &self.slots;
        self.index.find(hash, |&i| slots.get(i as usize).is_some_and(|s| s.flow.key == *key)).copied()
    }

    fn live_slot(&self, handle: FlowHandle) -> Option<&Slot<E>> {
        self.slots.get(handle.index as usize).filter(|s| s.in_use && s.generation == handle.generation)
    }

    fn live_slot_mut(&mut self, handle: FlowHandle) -> Option<&mut Slot<E>> {
        self.slots.get_mut(handle.index as usize).filter(|s| s.in_use && s.generation == handle.generation)
    }

    fn timeouts(&self) -> &FlowTimeouts {
        if self.emergency {
            &self.config.emergency_timeouts
        } else {
            &self.config.timeouts
        }
    }

    /// Finds or creates the packet's flow and updates it. Flows that end as a side effect
    /// (evicted under the memcap, replaced by TCP port reuse) are handed to `ended`.
    /// Returns `None` only when no flow could be created (memcap below one flow).
    pub fn process(&mut self, pkt: &FlowPacket, ended: &mut impl FnMut(FlowRecord<E>)) -> Option<PacketVerdict> {
        let (key, src_is_lo) = FlowKey::new(&pkt.tuple, if self.config.track_vlan { pkt.vlan } else { [0; 3] });
        let hash = key_hash_seeded(&key, self.hash_seed);
        let (index, created) = match self.lookup(hash, &key) {
            Some(index) if self.is_tcp_reuse(index, pkt) => {
                self.counters.tcp_reuse += 1;
                let record = self.remove(index, FlowEndReason::TcpReuse);
                ended(record);
                (self.create(key, hash, src_is_lo, pkt, ended)?, true)
            }
            Some(index) => (index, false),
            None => (self.create(key, hash, src_is_lo, pkt, ended)?, true),
        };

        let tcp_config = self.tcp_config;
        let counters = &mut self.counters;
        let slot = &mut self.slots[index as usize];
        let flow = &mut slot.flow;
        let mut to_server = src_is_lo == flow.client_is_lo;
        let mut stream_event = None;
        let mut midstream_exception = false;
        // Suricata marks a TCP packet established from the flow's state before the packet
        // (its flow update runs before stream handling): the ACK that completes the
        // handshake is not yet `flow:established`.
        let tcp_established_before = flow.tcp.reached_established;

        if let (PROTO_TCP, Some(seg), false) = (pkt.tuple.proto, pkt.tcp, flow.tcp_frozen) {
            let syn_ack = seg.flags & (super::tcp_flags::SYN | super::tcp_flags::ACK);
            counters.tcp_syn += (syn_ack == super::tcp_flags::SYN) as u64;
            counters.tcp_synack += (syn_ack == super::tcp_flags::SYN | super::tcp_flags::ACK) as u64;
            counters.tcp_rst += (seg.flags & super::tcp_flags::RST != 0) as u64;

            let outcome = flow.tcp.on_segment(&seg, pkt.payload_len, to_server, tcp_config);
            if outcome.swap_roles {
                flow.swap_roles();
                to_server = !to_server;
            }
            counters.tcp_sessions += outcome.session_started as u64;
            counters.tcp_midstream_pickups += outcome.midstream_pickup as u64;
            counters.tcp_invalid_flags += outcome.invalid_flags as u64;
            counters.tcp_pkt_after_close += outcome.after_close as u64;
            counters.tcp_no_session += outcome.no_session as u64;
            if let Some(event) = outcome.event {
                counters.add_stream_event(event);
            }
            stream_event = outcome.event;
            // Suricata applies `stream.midstream-policy` to every packet that finds no
            // session and is not a SYN or RST: picked up or not.
            midstream_exception =
                outcome.midstream_pickup || (outcome.no_session && seg.flags & super::tcp_flags::RST == 0);

            if to_server {
                flow.tcp_flags_ts |= seg.flags;
            } else {
                flow.tcp_flags_tc |= seg.flags;
            }
        }

        let icmp_type_code = (pkt.tuple.src_port as u8, pkt.tuple.dst_port as u8);
        let wire_len = pkt.wire_len as u64;
        if to_server {
            flow.pkts_toserver += 1;
            flow.bytes_toserver += wire_len;
            if is_icmp(pkt.tuple.proto) && flow.icmp_toserver.is_none() {
                flow.icmp_toserver = Some(icmp_type_code);
            }
        } else {
            flow.pkts_toclient += 1;
            flow.bytes_toclient += wire_len;
            if is_icmp(pkt.tuple.proto) && flow.icmp_toclient.is_none() {
                flow.icmp_toclient = Some(icmp_type_code);
            }
        }
        // Out-of-order capture timestamps must not move the flow back in time.
        flow.last_ts = flow.last_ts.max(pkt.ts);
        flow.last_pcap_cnt = flow.last_pcap_cnt.max(pkt.pcap_cnt);

        let state = flow.state();
        let verdict = PacketVerdict {
            handle: FlowHandle { index, generation: slot.generation },
            flow_id: flow.flow_id,
            to_server,
            created,
            established: if pkt.tuple.proto == PROTO_TCP { tcp_established_before } else { flow.established() },
            state,
            tcp_state: flow.tcp.state,
            stream_event,
            midstream_exception,
        };
        if state != slot.scheduled_state {
            slot.scheduled_state = state;
            // Only a shorter timeout needs the flow moved now; a longer one is found lazily.
            let due = self.due_sec(index);
            if due < self.slots[index as usize].due_sec {
                self.unschedule(index);
                self.schedule(index, due);
            }
        }
        Some(verdict)
    }

    /// A SYN on a TCP session that is closing or closed starts a new session on the same
    /// tuple: the old flow ends and a fresh one (new flow id) takes its place.
    fn is_tcp_reuse(&self, index: u32, pkt: &FlowPacket) -> bool {
        use super::tcp_flags::{ACK, FIN, RST, SYN};
        let Some(seg) = pkt.tcp else { return false };
        pkt.tuple.proto == PROTO_TCP
            && seg.flags & (SYN | ACK | FIN | RST) == SYN
            && self.slots.get(index as usize).is_some_and(|s| s.flow.tcp.state.flow_state() == FlowState::Closed)
    }

    fn create(
        &mut self,
        key: FlowKey,
        hash: u64,
        src_is_lo: bool,
        pkt: &FlowPacket,
        ended: &mut impl FnMut(FlowRecord<E>),
    ) -> Option<u32> {
        if !self.make_room(ended) {
            return None;
        }
        let flow = Flow {
            key,
            flow_id: flow_id(&key, pkt.pcap_cnt),
            client_is_lo: src_is_lo,
            first_ts: pkt.ts,
            last_ts: pkt.ts,
            first_pcap_cnt: pkt.pcap_cnt,
            last_pcap_cnt: pkt.pcap_cnt,
            vlan: pkt.vlan,
            ..Flow::default()
        };
        let proto = key.tuple.proto;
        let index = self.insert(flow, E::default(), hash);
        let c = &mut self.counters;
        c.total += 1;
        *match proto {
            PROTO_TCP => &mut c.tcp,
            PROTO_UDP => &mut c.udp,
            PROTO_ICMP => &mut c.icmpv4,
            PROTO_ICMPV6 => &mut c.icmpv6,
            _ => &mut c.other,
        } += 1;
        Some(index)
    }

    /// Below the memcap, or brought below it by evicting flows (emergency mode): false when
    /// nothing could be evicted.
    fn make_room(&mut self, ended: &mut impl FnMut(FlowRecord<E>)) -> bool {
        if self.at_memcap() {
            self.counters.memcap += 1;
            if !self.emergency {
                self.emergency = true;
                self.counters.emerg_mode_entered += 1;
            }
            let mut evicted = 0;
            while evicted < MAX_EVICTIONS_PER_FLOW && self.at_memcap() {
                let Some(victim) = self.pick_eviction_victim() else { break };
                self.counters.get_used += 1;
                let record = self.remove(victim, FlowEndReason::Forced);
                ended(record);
                evicted += 1;
            }
            if evicted == 0 {
                self.counters.memcap_drop += 1;
                return false;
            }
        }
        true
    }

    /// Puts `flow` into a free slot, the hash index and the wheel, and counts it active.
    fn insert(&mut self, flow: Flow, ext: E, hash: u64) -> u32 {
        let state = flow.state();
        let proto = flow.key.tuple.proto;
        let index = match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index as usize];
                slot.flow = flow;
                slot.ext = ext;
                slot.in_use = true;
                slot.scheduled_state = state;
                index
            }
            None => {
                if self.slots.len() == self.slots.capacity() {
                    // Grow geometrically, but in steps of at most an eighth of the flow
                    // limit and never past it: the slab's capacity is charged in
                    // `flow.memuse`, and one doubling must not overshoot the memcap.
                    let len = self.slots.len();
                    let step = (self.max_flows / 8).max(64);
                    let extra = len.max(64).min(step).min(self.max_flows.saturating_sub(len)).max(1);
                    self.slots.reserve_exact(extra);
                    self.resize_hints();
                }
                self.slots.push(Slot {
                    flow,
                    ext,
                    in_use: true,
                    generation: 0,
                    scheduled_state: state,
                    due_sec: 0,
                    wheel_pos: 0,
                    ext_bytes: 0,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let (slots, seed) = (&self.slots, self.hash_seed);
        self.index
            .insert_unique(hash, index, |&i| slots.get(i as usize).map_or(0, |s| key_hash_seeded(&s.flow.key, seed)));
        let pos = self.hint_pos(hash);
        self.hints[pos] = index + 1;
        let due = self.due_sec(index);
        self.schedule(index, due);

        let held = self.held_bytes();
        let c = &mut self.counters;
        c.active += 1;
        c.memuse = held;
        *active_of(c, proto) += 1;
        index
    }

    /// Takes every flow `moving` selects out of the table, with its extension, for another
    /// table to [`adopt`](Self::adopt_flows): the flows do not end (no record, no end
    /// counters), they leave `flow.active` here and join it there.
    pub fn take_flows(&mut self, mut moving: impl FnMut(&Flow) -> bool) -> Vec<MovedFlow<E>> {
        let chosen: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&i| self.slots[i as usize].in_use && moving(&self.slots[i as usize].flow))
            .collect();
        let mut out = Vec::with_capacity(chosen.len());
        for index in chosen {
            let ext_bytes = self.release_slot(index);
            let slot = &mut self.slots[index as usize];
            out.push(MovedFlow { flow: mem::take(&mut slot.flow), ext: mem::take(&mut slot.ext), ext_bytes });
        }
        self.counters.memuse = self.held_bytes();
        out
    }

    /// Takes in flows another table gave up ([`take_flows`](Self::take_flows)), state and
    /// deadlines intact. Room is made under the memcap as for a new flow; a flow that still
    /// finds none ends at once (reason "forced") and goes to `ended`. A flow whose key is
    /// already here (it cannot be, when every packet of a flow carries the same bucket)
    /// replaces nothing: it ends, forced, too.
    pub fn adopt_flows(&mut self, flows: Vec<MovedFlow<E>>, ended: &mut impl FnMut(FlowRecord<E>)) {
        for moved in flows {
            let hash = key_hash_seeded(&moved.flow.key, self.hash_seed);
            let fits = self.lookup(hash, &moved.flow.key).is_none() && self.make_room(ended);
            let index = self.insert(moved.flow, moved.ext, hash);
            self.slots[index as usize].ext_bytes = moved.ext_bytes;
            self.ext_bytes += moved.ext_bytes;
            if !fits {
                let record = self.remove(index, FlowEndReason::Forced);
                ended(record);
            }
        }
        self.counters.memuse = self.held_bytes();
    }

    /// Records the dispatch bucket of the flow (see [`Flow::bucket`]).
    /// Client and server trade places: the app layer found that the flow's first packet
    /// came from the server (a UDP flow whose first datagram is an answer).
    pub fn swap_roles(&mut self, handle: FlowHandle) {
        if let Some(slot) = self.live_slot_mut(handle) {
            slot.flow.swap_roles();
        }
    }

    /// Client and server trade places, TCP session sides included: protocol detection
    /// found that a TCP session picked up midstream was first seen from its server.
    pub fn reverse_session(&mut self, handle: FlowHandle) {
        if let Some(slot) = self.live_slot_mut(handle) {
            slot.flow.swap_roles();
            slot.flow.tcp.swap_sides();
        }
    }

    pub fn set_bucket(&mut self, handle: FlowHandle, bucket: u16) {
        if let Some(slot) = self.live_slot_mut(handle) {
            slot.flow.bucket = bucket;
        }
    }

    /// A closed flow if the sample holds one, else the sampled flow seen least recently.
    fn pick_eviction_victim(&mut self) -> Option<u32> {
        let n = self.slots.len();
        if self.index.is_empty() || n == 0 {
            return None;
        }
        let mut best: Option<(u32, Timestamp)> = None;
        let mut sampled = 0;
        // At the limit nearly every slot is live; the probe bound only matters if not.
        for _ in 0..n.min(EVICTION_SAMPLE * 64) {
            let i = self.eviction_cursor % n;
            self.eviction_cursor = (i + 1) % n;
            let slot = &self.slots[i];
            if !slot.in_use {
                continue;
            }
            if slot.flow.state() == FlowState::Closed {
                return Some(i as u32);
            }
            if best.is_none_or(|(_, ts)| slot.flow.last_ts < ts) {
                best = Some((i as u32, slot.flow.last_ts));
            }
            sampled += 1;
            if sampled == EVICTION_SAMPLE {
                break;
            }
        }
        best.map(|(i, _)| i)
    }

    /// Second of the wheel bucket for the flow's current deadline: the deadline's own
    /// second. The check in that second ends the flow if the clock is past the deadline,
    /// else moves it to the next second. So when a flow ends depends only on its deadline
    /// and the clock, not on which bucket it waited in before (a flow handed over from
    /// another worker is scheduled afresh and must end when it would have there).
    fn due_sec(&self, index: u32) -> u64 {
        let flow = &self.slots[index as usize].flow;
        let timeout = self.timeout_of(flow);
        let deadline = flow.last_ts.0.saturating_add(timeout.saturating_mul(NANOS));
        deadline / NANOS
    }

    /// Seconds the flow may stay idle: its state's timeout, or `bypassed` once bypassed.
    fn timeout_of(&self, flow: &Flow) -> u64 {
        let t = self.timeouts().for_proto(flow.key.tuple.proto);
        if flow.bypassed {
            t.bypassed as u64
        } else {
            t.for_state(flow.state()) as u64
        }
    }

    fn is_timed_out(&self, index: u32, now: Timestamp) -> bool {
        let flow = &self.slots[index as usize].flow;
        let timeout = self.timeout_of(flow);
        now.0 > flow.last_ts.0.saturating_add(timeout.saturating_mul(NANOS))
    }

    fn schedule(&mut self, index: u32, due_sec: u64) {
        // Never into a bucket already passed: it would only be seen after the wheel wraps.
        let due_sec = due_sec.max(self.wheel_sec + 1);
        let bucket = &mut self.wheel[(due_sec & WHEEL_MASK) as usize];
        let slot = &mut self.slots[index as usize];
        slot.due_sec = due_sec;
        slot.wheel_pos = bucket.len() as u32;
        bucket.push(index);
    }

    fn unschedule(&mut self, index: u32) {
        let slot = &self.slots[index as usize];
        let bucket = &mut self.wheel[(slot.due_sec & WHEEL_MASK) as usize];
        let pos = slot.wheel_pos as usize;
        if bucket.get(pos) != Some(&index) {
            debug_assert!(false, "wheel position out of sync for slot {index}");
            return;
        }
        bucket.swap_remove(pos);
        if let Some(&moved) = bucket.get(pos) {
            self.slots[moved as usize].wheel_pos = pos as u32;
        }
    }

    /// Ends flows idle past their state's timeout at capture time `now`, handing each to
    /// `out`. Cheap to call often: a call within the same second as the previous one
    /// returns immediately.
    pub fn expire(&mut self, now: Timestamp, out: &mut impl FnMut(FlowRecord<E>)) {
        let now_sec = now.secs();
        if now_sec <= self.wheel_sec {
            return;
        }
        let first = self.wheel_sec + 1;
        let seconds = (now_sec - self.wheel_sec).min(WHEEL_BUCKETS as u64);
        // Set first so that flows rescheduled below land after `now`.
        self.wheel_sec = now_sec;
        for sec in first..first + seconds {
            self.expire_bucket((sec & WHEEL_MASK) as usize, now, out);
        }
        if self.emergency {
            self.emergency_scan(now, out);
        }
    }

    fn expire_bucket(&mut self, bucket: usize, now: Timestamp, out: &mut impl FnMut(FlowRecord<E>)) {
        let now_sec = now.secs();
        let mut pos = 0;
        while let Some(&index) = self.wheel[bucket].get(pos) {
            if self.slots[index as usize].due_sec > now_sec {
                // A later lap of the wheel.
                pos += 1;
            } else if self.is_timed_out(index, now) {
                // `remove` swaps the bucket's last entry into `pos`.
                let record = self.remove(index, FlowEndReason::Timeout);
                out(record);
            } else {
                let due = self.due_sec(index);
                self.unschedule(index);
                self.schedule(index, due);
            }
        }
        // A burst can leave a bucket with a large, now mostly empty allocation; without
        // this every bucket could end up holding room for the whole table.
        let list = &mut self.wheel[bucket];
        if list.capacity() > 256 && list.len() < list.capacity() / 4 {
            list.shrink_to(list.len() * 2);
        }
    }

    /// In emergency mode, timeouts are shorter than what the wheel was scheduled with:
    /// sweep a bounded run of slots per call so pressure falls without a full scan.
    fn emergency_scan(&mut self, now: Timestamp, out: &mut impl FnMut(FlowRecord<E>)) {
        let n = self.slots.len();
        for _ in 0..n.min(EMERGENCY_SCAN_SLOTS) {
            if !self.emergency {
                break;
            }
            let i = self.emergency_cursor % n;
            self.emergency_cursor = (i + 1) % n;
            if self.slots[i].in_use && self.is_timed_out(i as u32, now) {
                let record = self.remove(i as u32, FlowEndReason::Timeout);
                out(record);
            }
        }
    }

    /// Ends every flow (reason "shutdown"), ordered by first packet, so the output does
    /// not depend on hash or slot order. The table is empty and reusable afterwards.
    pub fn flush_all(&mut self, out: &mut impl FnMut(FlowRecord<E>)) {
        self.flush_all_ahead(out, &mut |_| {});
    }

    /// [`FlowTable::flush_all`], showing `ahead` the flows about to end while earlier ones
    /// end, so that a caller can have their memory loaded (the flows end in first-packet
    /// order, which is no order in memory): each flow's slot [`Upcoming::SLOT`] flows
    /// ahead, then its extension (read from the slot, loaded by then)
    /// [`Upcoming::STATE`] and [`Upcoming::INNER`] flows ahead.
    pub fn flush_all_ahead(&mut self, out: &mut impl FnMut(FlowRecord<E>), ahead: &mut impl FnMut(Upcoming<'_, E>)) {
        let mut live: Vec<u32> = (0..self.slots.len() as u32).filter(|&i| self.slots[i as usize].in_use).collect();
        live.sort_unstable_by_key(|&i| {
            let flow = &self.slots[i as usize].flow;
            (flow.first_pcap_cnt, flow.flow_id)
        });
        for (k, &index) in live.iter().enumerate() {
            if let Some(slot) = live.get(k + Upcoming::<E>::SLOT).and_then(|&i| self.slots.get(i as usize)) {
                let (start, len) = slot_extent((0, slot));
                ahead(Upcoming::Slot(start, len));
            }
            if let Some(&i) = live.get(k + Upcoming::<E>::STATE) {
                ahead(Upcoming::State(&self.slots[i as usize].ext));
            }
            if let Some(&i) = live.get(k + Upcoming::<E>::INNER) {
                ahead(Upcoming::Inner(&self.slots[i as usize].ext));
            }
            let record = self.remove(index, FlowEndReason::Shutdown);
            out(record);
        }
    }

    /// Takes a live slot out of the wheel and the index and frees it (the flow and its
    /// extension stay in it for the caller to take); counts the flow no longer active.
    /// Returns the heap its extension was charged.
    fn release_slot(&mut self, index: u32) -> u64 {
        self.unschedule(index);
        let hash = key_hash_seeded(&self.slots[index as usize].flow.key, self.hash_seed);
        if let Ok(entry) = self.index.find_entry(hash, |&i| i == index) {
            entry.remove();
        }
        let pos = self.hint_pos(hash);
        if self.hints[pos] == index + 1 {
            self.hints[pos] = 0;
        }
        let slot = &mut self.slots[index as usize];
        slot.in_use = false;
        slot.generation = slot.generation.wrapping_add(1);
        let ext_bytes = mem::take(&mut slot.ext_bytes);
        let proto = slot.flow.key.tuple.proto;
        self.ext_bytes -= ext_bytes;
        self.free.push(index);
        let c = &mut self.counters;
        c.active -= 1;
        *active_of(c, proto) -= 1;
        ext_bytes
    }

    fn remove(&mut self, index: u32, reason: FlowEndReason) -> FlowRecord<E> {
        self.release_slot(index);
        let slot = &mut self.slots[index as usize];

        let flow = &slot.flow;
        let state = flow.state();
        let record = FlowRecord {
            flow_id: flow.flow_id,
            tuple: flow.tuple(),
            vlan: flow.vlan,
            pkts_toserver: flow.pkts_toserver,
            pkts_toclient: flow.pkts_toclient,
            bytes_toserver: flow.bytes_toserver,
            bytes_toclient: flow.bytes_toclient,
            start: flow.first_ts,
            end: flow.last_ts,
            first_pcap_cnt: flow.first_pcap_cnt,
            last_pcap_cnt: flow.last_pcap_cnt,
            state,
            reason,
            tcp: (flow.key.tuple.proto == PROTO_TCP).then_some(TcpRecord {
                tcp_flags: flow.tcp_flags(),
                tcp_flags_ts: flow.tcp_flags_ts,
                tcp_flags_tc: flow.tcp_flags_tc,
                state: flow.tcp.state,
            }),
            icmp_toserver: flow.icmp_toserver,
            icmp_toclient: flow.icmp_toclient,
            ext: mem::take(&mut slot.ext),
        };

        let held = self.held_bytes();
        let in_use = self.memory_in_use();
        let c = &mut self.counters;
        c.memuse = held;
        match reason {
            FlowEndReason::Timeout => c.end_timeout += 1,
            FlowEndReason::Forced => c.end_forced += 1,
            FlowEndReason::Shutdown => c.end_shutdown += 1,
            FlowEndReason::TcpReuse => c.end_tcp_reuse += 1,
        }
        match state {
            FlowState::New => c.end_state_new += 1,
            FlowState::Established => c.end_state_established += 1,
            FlowState::Closed => c.end_state_closed += 1,
        }
        // Suricata's `flow.emergency-recovery`: back to normal once that percentage of the
        // memcap is free again.
        let recovery_percent = 100 - self.config.emergency_recovery_percent.min(100) as u128;
        if self.emergency && in_use as u128 * 100 <= self.config.memcap_bytes as u128 * recovery_percent {
            self.emergency = false;
            c.emerg_mode_over += 1;
        }
        record
    }
}

/// The `flow.active.*` counter of a protocol.
fn active_of(c: &mut FlowCounters, proto: u8) -> &mut u64 {
    match proto {
        PROTO_TCP => &mut c.active_tcp,
        PROTO_UDP => &mut c.active_udp,
        PROTO_ICMP => &mut c.active_icmpv4,
        PROTO_ICMPV6 => &mut c.active_icmpv6,
        _ => &mut c.active_other,
    }
}
