//! IPv4 and IPv6 fragment reassembly, sans-IO. It runs in the dispatcher before a packet
//! is handed to a worker, so that a reassembled datagram is dispatched (and its flow
//! found) by its full 5-tuple.
//!
//! - **What is reassembled**: fragments whose IP header follows the link layer directly
//!   or after up to two VLAN tags (Ethernet, Linux SLL/SLL2, raw IP, Null/Loop, PPP,
//!   Cisco HDLC). Fragments inside tunnels are not (the decoder flags them as fragments).
//! - **Datagram identity** (a "tracker"): addresses, IP id, VLAN ids, and for IPv4 the
//!   protocol (RFC 791); IPv6 uses the Fragment header's 32-bit id.
//! - **Rebuilt packet**: the link-layer bytes of the first fragment (offset 0), so VLAN
//!   tags and the like survive, then its IP header: IPv4 with the fragment field cleared,
//!   the total length set and the checksum recomputed; IPv6 with the unfragmentable part
//!   kept, the Fragment header dropped (the header before it takes over its next-header
//!   value) and the payload length set. Then the reassembled payload.
//! - **Overlaps** are resolved per byte by the target-based policy of [`DefragPolicy`]
//!   and raise `ipv4.frag_overlap` / `ipv6.frag_overlap` (exact duplicates included).
//! - **Limits**: a datagram may not exceed 65535 bytes (`*.frag_pkt_too_large`; the
//!   fragment is dropped), an IPv6 fragment with M set must carry a multiple of 8 bytes
//!   (`ipv6.frag_invalid_length`), at most [`MAX_FRAGMENTS_PER_DATAGRAM`] fragments are
//!   kept per datagram (the datagram is dropped beyond), and `memcap`, `max_trackers`
//!   and `max_frags` bound memory; hitting them drops the fragment with
//!   `*.frag_ignored`, each with a counter.
//! - **Time** is packet time: a datagram not complete `timeout_secs` after its first
//!   fragment is discarded (by [`Defragmenter::expire`], which [`Defragmenter::offer`]
//!   also runs on its way).
//!
//! Suricata also inspects every fragment as a packet of its own (IP-only rules see
//! them); the dispatcher should forward `Held` fragments like any other packet.

use std::collections::{HashMap, VecDeque};

use crate::bytes;
use crate::decode::checksum;
use crate::decode::tunnel;
use crate::decode::{null_family, v4_mapped, DecodeEvent, EventSet, IpVersion};
use crate::packet::{LinkType, Timestamp};

#[cfg(test)]
mod tests;

/// Target-based overlap policies (Novak, "Target-Based Fragmentation Reassembly",
/// as used by Suricata's `defrag.default-policy` / host-os-policy). When a fragment
/// arrives that overlaps bytes an earlier one already holds, the new one wins:
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DefragPolicy {
    /// never: the first data received for a byte stays.
    First,
    /// always: the last data received wins.
    Last,
    /// when it starts before the earlier fragment (Suricata's default).
    Bsd,
    /// when it starts before the earlier fragment, or at the same offset and ends at or
    /// after it.
    Linux,
    /// only when it starts before and ends after the earlier fragment.
    Windows,
    /// when it starts before the earlier fragment and ends at or after it.
    Solaris,
}

impl DefragPolicy {
    /// Suricata's policy names (`bsd`, `bsd-right` is not supported, `linux`, `first`,
    /// `last`, `windows`, `solaris`), plus the OS aliases of its host-os-policy section.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "first" => DefragPolicy::First,
            "last" => DefragPolicy::Last,
            "bsd" | "macos" | "hpux11" | "irix" => DefragPolicy::Bsd,
            "linux" => DefragPolicy::Linux,
            "windows" | "windows2k3" | "vista" | "winxp" | "win2k3" => DefragPolicy::Windows,
            "solaris" | "hpux10" => DefragPolicy::Solaris,
            _ => return None,
        })
    }

    /// Does a later fragment covering `[new_start, new_end)` take over bytes that an
    /// earlier fragment covering `[old_start, old_end)` holds?
    fn later_wins(self, new_start: u32, new_end: u32, old_start: u32, old_end: u32) -> bool {
        match self {
            DefragPolicy::First => false,
            DefragPolicy::Last => true,
            DefragPolicy::Bsd => new_start < old_start,
            DefragPolicy::Linux => new_start < old_start || (new_start == old_start && new_end >= old_end),
            DefragPolicy::Windows => new_start < old_start && new_end > old_end,
            DefragPolicy::Solaris => new_start < old_start && new_end >= old_end,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefragConfig {
    /// Bytes held for fragments and their trackers (Suricata `defrag.memcap`, 32 MiB).
    pub memcap: u64,
    /// Seconds of packet time a datagram may take to complete (Suricata 60).
    pub timeout_secs: u32,
    /// Fragments held at once, all datagrams together (Suricata `defrag.max-frags`).
    pub max_frags: usize,
    /// Datagrams being reassembled at once (Suricata `defrag.trackers`).
    pub max_trackers: usize,
    pub policy: DefragPolicy,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            memcap: 32 * 1024 * 1024,
            timeout_secs: 60,
            max_frags: 65_535,
            max_trackers: 65_535,
            policy: DefragPolicy::Bsd,
        }
    }
}

/// Why a fragment was not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The reassembled datagram would exceed 65535 bytes.
    TooLarge,
    /// IPv6 fragment with more to come whose length is not a multiple of 8.
    InvalidLength,
    /// The memcap would be exceeded.
    Memcap,
    /// No tracker free for a new datagram.
    MaxTrackers,
    /// Too many fragments held in total.
    MaxFrags,
    /// The datagram has more than [`MAX_FRAGMENTS_PER_DATAGRAM`] fragments: it is
    /// discarded whole (tiny-fragment floods).
    TooManyFragments,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragOutcome {
    /// Not an IP fragment (or not one the defragmenter can parse): dispatch as is.
    NotFragment,
    /// Kept; the datagram is not complete yet.
    Held,
    /// This fragment completed a datagram, which is now in `out`.
    Reassembled,
    Dropped(DropReason),
}

/// Fragments kept per datagram; a datagram needing more is treated as an attack.
pub const MAX_FRAGMENTS_PER_DATAGRAM: usize = 256;
const MAX_IP_PACKET: u32 = 65_535;
/// Accounting overhead of a tracker and of a fragment, beside their bytes.
const TRACKER_COST: usize = 256;
const FRAGMENT_COST: usize = 48;
const IPV4_MIN_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const NH_HOP_BY_HOP: u8 = 0;
const NH_ROUTING: u8 = 43;
const NH_FRAGMENT: u8 = 44;
const NH_DEST_OPTS: u8 = 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TrackerKey {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
    /// IPv4 protocol; 0 for IPv6, whose id alone names the datagram.
    proto: u8,
    is_v6: bool,
    vlan: crate::decode::VlanIds,
}

/// One fragment's payload; `start`/`end` are byte offsets in the datagram payload.
struct Fragment {
    start: u32,
    end: u32,
    data: Vec<u8>,
}

/// A run of datagram bytes and the fragment whose data fills it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    start: u32,
    end: u32,
    fragment: u16,
}

struct Tracker {
    generation: u64,
    deadline: Timestamp,
    /// Link-layer bytes and IP header (IPv6: unfragmentable part) of the offset-0
    /// fragment, patched when the datagram is rebuilt; empty until that fragment came.
    header: Vec<u8>,
    ip_start: usize,
    /// IPv6: position in `header` of the next-header byte that named the Fragment
    /// header, and the value to put there.
    next_header_at: usize,
    inner_next_header: u8,
    /// Payload length, known once the last fragment (MF/M clear) arrived.
    total_len: Option<u32>,
    fragments: Vec<Fragment>,
    /// Sorted, non-overlapping.
    segments: Vec<Segment>,
    /// Bytes the segments cover; once `total_len` is known only bytes below it (segments
    /// past it are cut then), so the datagram is complete when this reaches `total_len`.
    covered: u32,
    events: EventSet,
    mem: usize,
}

/// What one packet says about its fragment.
struct FragmentInfo<'a> {
    key: TrackerKey,
    /// Offset of the IP header in the packet.
    ip_start: usize,
    /// Bytes of the packet up to the fragmentable payload, minus the IPv6 Fragment
    /// header: kept from the offset-0 fragment.
    header_end: usize,
    next_header_at: usize,
    inner_next_header: u8,
    offset: u32,
    more: bool,
    payload: &'a [u8],
}

#[derive(Default, Clone, Copy)]
struct Counters {
    ipv4_fragments: u64,
    ipv4_reassembled: u64,
    ipv4_timeouts: u64,
    ipv6_fragments: u64,
    ipv6_reassembled: u64,
    ipv6_timeouts: u64,
    max_trackers_reached: u64,
    max_frags_reached: u64,
    memcap_reached: u64,
    too_many_fragments: u64,
    ipv4_overlap: u64,
    ipv6_overlap: u64,
    ipv4_too_large: u64,
    ipv6_too_large: u64,
    ipv6_invalid_length: u64,
    ipv4_ignored: u64,
    ipv6_ignored: u64,
}

pub struct Defragmenter {
    cfg: DefragConfig,
    trackers: HashMap<TrackerKey, Tracker>,
    /// Trackers in creation order with their deadline, for expiry without a scan.
    /// Entries of trackers already gone are skipped (their generation differs).
    expiry: VecDeque<(Timestamp, TrackerKey, u64)>,
    next_generation: u64,
    memuse: usize,
    frags_held: usize,
    last_events: EventSet,
    counters: Counters,
}

impl Defragmenter {
    pub fn new(cfg: DefragConfig) -> Self {
        Defragmenter {
            cfg,
            trackers: HashMap::new(),
            expiry: VecDeque::new(),
            next_generation: 0,
            memuse: 0,
            frags_held: 0,
            last_events: EventSet::new(),
            counters: Counters::default(),
        }
    }

    /// Offers a packet. If it is not a fragment: `NotFragment`. If it is one and completes
    /// a datagram, the rebuilt packet is written to `out` (cleared first) and
    /// `Reassembled` returned; the events of the whole datagram are then in
    /// [`last_events`](Self::last_events).
    pub fn offer(&mut self, link: LinkType, data: &[u8], ts: Timestamp, out: &mut Vec<u8>) -> DefragOutcome {
        self.last_events = EventSet::new();
        let Some(info) = parse_fragment(link, data) else {
            return DefragOutcome::NotFragment;
        };
        self.expire(ts);
        let is_v6 = info.key.is_v6;
        if is_v6 {
            self.counters.ipv6_fragments += 1;
        } else {
            self.counters.ipv4_fragments += 1;
        }
        let outcome = self.insert(&info, data, ts, out);
        if let DefragOutcome::Dropped(reason) = outcome {
            let event = match (reason, is_v6) {
                (DropReason::TooLarge, false) => DecodeEvent::Ipv4FragPktTooLarge,
                (DropReason::TooLarge, true) => DecodeEvent::Ipv6FragPktTooLarge,
                (DropReason::InvalidLength, _) => DecodeEvent::Ipv6FragInvalidLength,
                (_, false) => DecodeEvent::Ipv4FragIgnored,
                (_, true) => DecodeEvent::Ipv6FragIgnored,
            };
            self.note_event(event);
        }
        outcome
    }

    /// Events raised by the last [`offer`](Self::offer): overlap, too large, invalid
    /// length, ignored. They are already counted in [`counters`](Self::counters).
    pub fn last_events(&self) -> EventSet {
        self.last_events
    }

    /// Discards datagrams whose time is up at packet time `now`.
    pub fn expire(&mut self, now: Timestamp) {
        while let Some(&(deadline, key, generation)) = self.expiry.front() {
            if deadline > now {
                break;
            }
            self.expiry.pop_front();
            if self.trackers.get(&key).is_some_and(|t| t.generation == generation) {
                self.remove_tracker(&key);
                if key.is_v6 {
                    self.counters.ipv6_timeouts += 1;
                } else {
                    self.counters.ipv4_timeouts += 1;
                }
            }
        }
    }

    /// Datagrams in progress.
    pub fn trackers(&self) -> usize {
        self.trackers.len()
    }

    /// Bytes accounted against the memcap.
    pub fn memuse(&self) -> u64 {
        self.memuse as u64
    }

    /// Counters with Suricata's stats names where it has them (`defrag.*`), and the
    /// decoder events this stage raised (`decoder.event.*`). `defrag.memcap_reached` and
    /// `defrag.too_many_fragments` are picket's; `defrag.memuse` and `defrag.trackers`
    /// are gauges.
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> {
        let c = self.counters;
        [
            ("defrag.ipv4.fragments", c.ipv4_fragments),
            ("defrag.ipv4.reassembled", c.ipv4_reassembled),
            ("defrag.ipv4.timeouts", c.ipv4_timeouts),
            ("defrag.ipv6.fragments", c.ipv6_fragments),
            ("defrag.ipv6.reassembled", c.ipv6_reassembled),
            ("defrag.ipv6.timeouts", c.ipv6_timeouts),
            ("defrag.max_trackers_reached", c.max_trackers_reached),
            ("defrag.max_frags_reached", c.max_frags_reached),
            ("defrag.memcap_reached", c.memcap_reached),
            ("defrag.too_many_fragments", c.too_many_fragments),
            ("defrag.memuse", self.memuse as u64),
            ("defrag.trackers", self.trackers.len() as u64),
            ("decoder.event.ipv4.frag_overlap", c.ipv4_overlap),
            ("decoder.event.ipv6.frag_overlap", c.ipv6_overlap),
            ("decoder.event.ipv4.frag_pkt_too_large", c.ipv4_too_large),
            ("decoder.event.ipv6.frag_pkt_too_large", c.ipv6_too_large),
            ("decoder.event.ipv6.frag_invalid_length", c.ipv6_invalid_length),
            ("decoder.event.ipv4.frag_ignored", c.ipv4_ignored),
            ("decoder.event.ipv6.frag_ignored", c.ipv6_ignored),
        ]
        .into_iter()
    }

    fn note_event(&mut self, event: DecodeEvent) {
        self.last_events.insert(event);
        let c = &mut self.counters;
        match event {
            DecodeEvent::Ipv4FragOverlap => c.ipv4_overlap += 1,
            DecodeEvent::Ipv6FragOverlap => c.ipv6_overlap += 1,
            DecodeEvent::Ipv4FragPktTooLarge => c.ipv4_too_large += 1,
            DecodeEvent::Ipv6FragPktTooLarge => c.ipv6_too_large += 1,
            DecodeEvent::Ipv6FragInvalidLength => c.ipv6_invalid_length += 1,
            DecodeEvent::Ipv4FragIgnored => c.ipv4_ignored += 1,
            DecodeEvent::Ipv6FragIgnored => c.ipv6_ignored += 1,
            _ => {}
        }
    }

    fn insert(&mut self, info: &FragmentInfo<'_>, data: &[u8], ts: Timestamp, out: &mut Vec<u8>) -> DefragOutcome {
        let key = info.key;
        let is_v6 = key.is_v6;
        if is_v6 && info.more && !info.payload.len().is_multiple_of(8) {
            return DefragOutcome::Dropped(DropReason::InvalidLength);
        }
        let start = info.offset;
        let end = start + info.payload.len() as u32;
        // The whole packet, header included, must fit the 16-bit length fields.
        let header_len = (info.header_end - info.ip_start) as u32 - if is_v6 { IPV6_HEADER as u32 } else { 0 };
        if header_len + end > MAX_IP_PACKET {
            return DefragOutcome::Dropped(DropReason::TooLarge);
        }

        // A tracker past its deadline (expiry not yet run) starts over.
        if self.trackers.get(&key).is_some_and(|t| t.deadline < ts) {
            self.remove_tracker(&key);
            if is_v6 {
                self.counters.ipv6_timeouts += 1;
            } else {
                self.counters.ipv4_timeouts += 1;
            }
        }
        let creating = !self.trackers.contains_key(&key);
        if creating && self.trackers.len() >= self.cfg.max_trackers {
            self.counters.max_trackers_reached += 1;
            return DefragOutcome::Dropped(DropReason::MaxTrackers);
        }
        if self.frags_held >= self.cfg.max_frags {
            self.counters.max_frags_reached += 1;
            return DefragOutcome::Dropped(DropReason::MaxFrags);
        }
        let header_cost = if start == 0 { info.header_end } else { 0 };
        let cost = info.payload.len() + FRAGMENT_COST + header_cost + if creating { TRACKER_COST } else { 0 };
        if (self.memuse + cost) as u64 > self.cfg.memcap {
            self.counters.memcap_reached += 1;
            return DefragOutcome::Dropped(DropReason::Memcap);
        }
        if creating {
            let generation = self.next_generation;
            self.next_generation += 1;
            let deadline = Timestamp(ts.0.saturating_add(self.cfg.timeout_secs as u64 * Timestamp::NANOS_PER_SEC));
            self.trackers.insert(
                key,
                Tracker {
                    generation,
                    deadline,
                    header: Vec::new(),
                    ip_start: 0,
                    next_header_at: 0,
                    inner_next_header: 0,
                    total_len: None,
                    fragments: Vec::new(),
                    segments: Vec::new(),
                    covered: 0,
                    events: EventSet::new(),
                    mem: TRACKER_COST,
                },
            );
            self.memuse += TRACKER_COST;
            self.expiry.push_back((deadline, key, generation));
            self.compact_expiry();
        }
        let policy = self.cfg.policy;
        let Some(tracker) = self.trackers.get_mut(&key) else {
            return DefragOutcome::Held; // cannot happen: inserted above
        };
        if tracker.fragments.len() >= MAX_FRAGMENTS_PER_DATAGRAM {
            self.counters.too_many_fragments += 1;
            self.remove_tracker(&key);
            return DefragOutcome::Dropped(DropReason::TooManyFragments);
        }

        if !info.more && tracker.total_len.is_none() {
            tracker.total_len = Some(end);
            cut_at(tracker, end);
        }
        // Bytes past a known end belong to no datagram.
        let end = tracker.total_len.map_or(end, |total| end.min(total));
        let kept = (end.saturating_sub(start)) as usize;
        if start == 0 && tracker.header.is_empty() {
            tracker.header.extend_from_slice(&data[..info.header_end]);
            tracker.ip_start = info.ip_start;
            tracker.next_header_at = info.next_header_at;
            tracker.inner_next_header = info.inner_next_header;
        }
        let index = tracker.fragments.len() as u16;
        tracker.fragments.push(Fragment { start, end: start + kept as u32, data: info.payload[..kept].to_vec() });
        let (overlapped, newly_covered) = place(&mut tracker.segments, &tracker.fragments, index, policy);
        tracker.covered += newly_covered;
        let added = kept + FRAGMENT_COST + if start == 0 { header_cost } else { 0 };
        tracker.mem += added;
        self.memuse += added;
        self.frags_held += 1;
        if overlapped {
            let event = if is_v6 { DecodeEvent::Ipv6FragOverlap } else { DecodeEvent::Ipv4FragOverlap };
            tracker.events.insert(event);
            self.note_event(event);
        }

        let Some(tracker) = self.trackers.get(&key) else {
            return DefragOutcome::Held;
        };
        if !is_complete(tracker) {
            return DefragOutcome::Held;
        }
        rebuild(tracker, is_v6, out);
        let datagram_events = tracker.events;
        self.remove_tracker(&key);
        self.last_events.union(datagram_events);
        if is_v6 {
            self.counters.ipv6_reassembled += 1;
        } else {
            self.counters.ipv4_reassembled += 1;
        }
        DefragOutcome::Reassembled
    }

    fn remove_tracker(&mut self, key: &TrackerKey) {
        if let Some(t) = self.trackers.remove(key) {
            self.memuse -= t.mem;
            self.frags_held -= t.fragments.len();
        }
    }

    /// Keeps the expiry queue proportional to the live trackers: completed datagrams
    /// leave stale entries behind until their deadline.
    fn compact_expiry(&mut self) {
        if self.expiry.len() > 2 * self.trackers.len() + 1024 {
            let trackers = &self.trackers;
            self.expiry.retain(|(_, key, generation)| trackers.get(key).is_some_and(|t| t.generation == *generation));
        }
    }
}

/// Gives fragment `index` the bytes it wins under `policy`. Returns whether it overlapped
/// any byte already held, and how many bytes it newly covers.
///
/// Only the segments the fragment touches (found by binary search) and their two
/// neighbours are rewritten, so a fragment costs O(log n + segments it overlaps), not
/// O(all segments): fragments sent in reverse or shuffled order stay linear overall.
fn place(segments: &mut Vec<Segment>, fragments: &[Fragment], index: u16, policy: DefragPolicy) -> (bool, u32) {
    let new = &fragments[index as usize];
    let (start, end) = (new.start, new.end);
    if start >= end {
        return (false, 0);
    }
    // Segments are sorted and disjoint: [first, last) are those overlapping [start, end).
    let first = segments.partition_point(|s| s.end <= start);
    let last = first + segments[first..].partition_point(|s| s.start < end);
    let (lo, hi) = (first.saturating_sub(1), (last + 1).min(segments.len()));
    let mut placed = Vec::with_capacity(hi - lo + 2);
    placed.extend_from_slice(&segments[lo..first]);
    let mut cursor = start;
    let mut overlapped_bytes = 0u32;
    for seg in segments[first..last].iter().copied() {
        if seg.start < start {
            placed.push(Segment { start: seg.start, end: start, fragment: seg.fragment });
        } else if seg.start > cursor {
            placed.push(Segment { start: cursor, end: seg.start, fragment: index });
        }
        let (from, to) = (seg.start.max(start), seg.end.min(end));
        overlapped_bytes += to - from;
        let old = &fragments[seg.fragment as usize];
        let owner = if policy.later_wins(start, end, old.start, old.end) { index } else { seg.fragment };
        placed.push(Segment { start: from, end: to, fragment: owner });
        if seg.end > end {
            placed.push(Segment { start: end, end: seg.end, fragment: seg.fragment });
        }
        cursor = cursor.max(to);
    }
    if cursor < end {
        placed.push(Segment { start: cursor, end, fragment: index });
    }
    placed.extend_from_slice(&segments[last..hi]);
    // Neighbouring runs of one fragment become one, keeping the list short.
    placed.dedup_by(|next, prev| {
        if prev.fragment == next.fragment && prev.end == next.start {
            prev.end = next.end;
            true
        } else {
            false
        }
    });
    segments.splice(lo..hi, placed);
    (last > first, (end - start) - overlapped_bytes)
}

/// The datagram ends at `total`: segments past it hold no datagram bytes.
fn cut_at(t: &mut Tracker, total: u32) {
    let mut cut = 0u32;
    t.segments.retain_mut(|seg| {
        if seg.start >= total {
            cut += seg.end - seg.start;
            return false;
        }
        if seg.end > total {
            cut += seg.end - total;
            seg.end = total;
        }
        true
    });
    t.covered -= cut;
}

fn is_complete(t: &Tracker) -> bool {
    t.total_len.is_some_and(|total| t.covered >= total) && !t.header.is_empty()
}

/// Writes link header, fixed IP header and payload of a complete datagram to `out`.
fn rebuild(t: &Tracker, is_v6: bool, out: &mut Vec<u8>) {
    let total = t.total_len.unwrap_or(0);
    out.clear();
    out.extend_from_slice(&t.header);
    let payload_at = out.len();
    out.resize(payload_at + total as usize, 0);
    for seg in &t.segments {
        let fragment = &t.fragments[seg.fragment as usize];
        let end = seg.end.min(total);
        if seg.start >= end {
            continue;
        }
        let from = (seg.start - fragment.start) as usize;
        let len = (end - seg.start) as usize;
        out[payload_at + seg.start as usize..][..len].copy_from_slice(&fragment.data[from..from + len]);
    }
    let ip = t.ip_start;
    if is_v6 {
        let payload_len = (payload_at - ip - IPV6_HEADER) as u32 + total;
        out[ip + 4..ip + 6].copy_from_slice(&(payload_len as u16).to_be_bytes());
        out[t.next_header_at] = t.inner_next_header;
    } else {
        let header_len = ((out[ip] & 0x0f) as usize) * 4;
        let total_len = header_len as u32 + total;
        out[ip + 2..ip + 4].copy_from_slice(&(total_len as u16).to_be_bytes());
        out[ip + 6] = 0;
        out[ip + 7] = 0;
        out[ip + 10] = 0;
        out[ip + 11] = 0;
        let sum = checksum::compute(checksum::accumulate(0, &out[ip..ip + header_len]));
        out[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    }
}

// ---------------------------------------------------------------------------------------
// Finding the IP header and the fragment fields.

enum IpAt {
    V4(usize),
    V6(usize),
}

/// Where the IP header starts, and the VLAN ids on the way.
fn locate_ip(link: LinkType, data: &[u8]) -> Option<(IpAt, crate::decode::VlanIds)> {
    let (ethertype, at) = match link {
        LinkType::Ethernet => (bytes::be_u16(data, 12)?, 14),
        LinkType::LinuxSll => (bytes::be_u16(data, 14)?, 16),
        LinkType::LinuxSll2 => (bytes::be_u16(data, 0)?, 20),
        LinkType::CiscoHdlc => (bytes::be_u16(data, 2)?, 4),
        LinkType::RawIp => {
            return match data.first()? >> 4 {
                4 => Some((IpAt::V4(0), [0; 3])),
                6 => Some((IpAt::V6(0), [0; 3])),
                _ => None,
            }
        }
        LinkType::RawIpv4 => return Some((IpAt::V4(0), [0; 3])),
        LinkType::RawIpv6 => return Some((IpAt::V6(0), [0; 3])),
        LinkType::Null | LinkType::Loop => {
            return match null_family(link, data)? {
                IpVersion::V4 => Some((IpAt::V4(4), [0; 3])),
                IpVersion::V6 => Some((IpAt::V6(4), [0; 3])),
            };
        }
        LinkType::Ppp => {
            let (protocol, len) = tunnel::parse_ppp_header(data)?;
            return match protocol {
                tunnel::PPP_IPV4 => Some((IpAt::V4(len), [0; 3])),
                tunnel::PPP_IPV6 => Some((IpAt::V6(len), [0; 3])),
                _ => None,
            };
        }
        LinkType::Unsupported(_) => return None,
    };
    let mut ethertype = ethertype;
    let mut at = at;
    let mut vlan: crate::decode::VlanIds = [0; 3];
    let mut depth = 0;
    while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
        if depth == vlan.len() {
            return None;
        }
        vlan[depth] = bytes::be_u16(data, at)? & 0x0fff;
        ethertype = bytes::be_u16(data, at + 2)?;
        at += 4;
        depth += 1;
    }
    match ethertype {
        0x0800 => Some((IpAt::V4(at), vlan)),
        0x86dd => Some((IpAt::V6(at), vlan)),
        _ => None,
    }
}

/// Cheap pre-check for the dispatcher: is this an IPv4 or IPv6 fragment the
/// defragmenter would take? Most packets are answered after a few byte reads.
pub fn is_fragment(link: LinkType, data: &[u8]) -> bool {
    match locate_ip(link, data) {
        Some((IpAt::V4(at), _)) => {
            data.get(at + 6..at + 8).is_some_and(|f| f[0] & 0x3f != 0 || f[1] != 0)
                && parse_fragment(link, data).is_some()
        }
        Some((IpAt::V6(_), _)) => parse_fragment(link, data).is_some(),
        None => false,
    }
}

fn parse_fragment(link: LinkType, data: &[u8]) -> Option<FragmentInfo<'_>> {
    let (ip, vlan) = locate_ip(link, data)?;
    match ip {
        IpAt::V4(at) => parse_ipv4_fragment(data, at, vlan),
        IpAt::V6(at) => parse_ipv6_fragment(data, at, vlan),
    }
}

fn parse_ipv4_fragment(data: &[u8], at: usize, vlan: crate::decode::VlanIds) -> Option<FragmentInfo<'_>> {
    let ip = data.get(at..)?;
    if ip.len() < IPV4_MIN_HEADER || ip[0] >> 4 != 4 {
        return None;
    }
    let header_len = ((ip[0] & 0x0f) as usize) * 4;
    let total_len = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let flags_offset = u16::from_be_bytes([ip[6], ip[7]]);
    let more = flags_offset & 0x2000 != 0;
    let offset = (flags_offset & 0x1fff) as u32 * 8;
    // Not a fragment, or one the decoder will flag as broken (bad lengths, truncated).
    if (!more && offset == 0) || header_len < IPV4_MIN_HEADER || total_len < header_len || total_len > ip.len() {
        return None;
    }
    let key = TrackerKey {
        src: v4_mapped([ip[12], ip[13], ip[14], ip[15]]),
        dst: v4_mapped([ip[16], ip[17], ip[18], ip[19]]),
        id: u16::from_be_bytes([ip[4], ip[5]]) as u32,
        proto: ip[9],
        is_v6: false,
        vlan,
    };
    Some(FragmentInfo {
        key,
        ip_start: at,
        header_end: at + header_len,
        next_header_at: 0,
        inner_next_header: 0,
        offset,
        more,
        payload: &ip[header_len..total_len],
    })
}

fn parse_ipv6_fragment(data: &[u8], at: usize, vlan: crate::decode::VlanIds) -> Option<FragmentInfo<'_>> {
    let ip = data.get(at..)?;
    if ip.len() < IPV6_HEADER || ip[0] >> 4 != 6 {
        return None;
    }
    let end = IPV6_HEADER + u16::from_be_bytes([ip[4], ip[5]]) as usize;
    if end > ip.len() {
        return None; // truncated capture
    }
    let mut next = ip[6];
    let mut next_at = 6usize; // where the current `next` value is stored
    let mut pos = IPV6_HEADER;
    // The unfragmentable part: hop-by-hop, routing and destination options before the
    // Fragment header.
    while matches!(next, NH_HOP_BY_HOP | NH_ROUTING | NH_DEST_OPTS) {
        let hdr = ip.get(pos..pos + 2)?;
        let len = (hdr[1] as usize + 1) * 8;
        if pos + len > end {
            return None;
        }
        next = hdr[0];
        next_at = pos;
        pos += len;
    }
    if next != NH_FRAGMENT {
        return None;
    }
    let frag = ip.get(pos..pos + 8).filter(|_| pos + 8 <= end)?;
    let offset_field = u16::from_be_bytes([frag[2], frag[3]]);
    let offset = (offset_field >> 3) as u32 * 8;
    let more = offset_field & 1 != 0;
    if offset == 0 && !more {
        return None; // atomic fragment: a whole datagram
    }
    let key = TrackerKey {
        src: ip[8..24].try_into().ok()?,
        dst: ip[24..40].try_into().ok()?,
        id: u32::from_be_bytes([frag[4], frag[5], frag[6], frag[7]]),
        proto: 0,
        is_v6: true,
        vlan,
    };
    Some(FragmentInfo {
        key,
        ip_start: at,
        header_end: at + pos,
        next_header_at: at + next_at,
        inner_next_header: frag[0],
        offset,
        more,
        payload: &ip[pos + 8..end],
    })
}
