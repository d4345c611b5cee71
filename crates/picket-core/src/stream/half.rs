//! One direction of a TCP session: sequence bookkeeping, the reassembled bytes and the
//! segment boundaries that overlap policies need.
//!
//! # Cost on hostile input
//!
//! Every structure is ordered by stream offset, so one segment costs O(log n) in the number
//! of held regions and segment records, plus the bytes it writes and the records it really
//! overlaps:
//! - held bytes are contiguous regions ([`Block`]) in a `BTreeMap` keyed by offset; a
//!   region grows at either end in amortised O(1) per byte (room is kept in front, doubled
//!   when it runs out), and bridging two regions copies the smaller one into the larger;
//! - segment records are kept per length class (lengths within a factor of two share a
//!   class), so finding the records that overlap a segment scans, per class, only a window
//!   of twice that class's length instead of the longest record's length;
//! - everything is charged at its real heap size (buffers by allocation, map entries by
//!   their node share), see [`super::memory`].

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Included, Unbounded};

use super::memory::{heap_cost, tree_entry_cost, ReassemblyMemory};
use super::policy::OverlapPolicy;

/// A run of contiguous bytes: `data[head..]` are the bytes from `offset` on; `data[..head]`
/// is room for growing leftwards (or freed bytes, which are compacted once they dominate
/// the allocation, so that freeing is amortised O(1) instead of a memmove per packet).
#[derive(Debug)]
pub(crate) struct Block {
    /// Stream offset of `data[head]`.
    pub offset: u64,
    head: usize,
    data: Vec<u8>,
}

impl Block {
    fn new(offset: u64, bytes: &[u8]) -> Block {
        Block { offset, head: 0, data: bytes.to_vec() }
    }
    pub fn bytes(&self) -> &[u8] {
        &self.data[self.head..]
    }
    pub fn len(&self) -> u64 {
        (self.data.len() - self.head) as u64
    }
    pub fn end(&self) -> u64 {
        self.offset + self.len()
    }
    /// Heap bytes the buffer occupies.
    fn heap(&self) -> u64 {
        heap_cost(self.data.capacity())
    }
    fn drop_front(&mut self, n: usize) {
        self.head += n;
        self.offset += n as u64;
        if self.head >= 4096 && self.head * 2 >= self.data.len() {
            self.data.drain(..self.head);
            self.head = 0;
        }
    }

    /// Capacity the buffer needs for `extra` more bytes at the end: grows geometrically, so
    /// appending is amortised O(1), and predictably, so the memcap check can be exact.
    fn capacity_for_append(&self, extra: usize) -> usize {
        let need = self.data.len() + extra;
        let cap = self.data.capacity();
        if need <= cap {
            cap
        } else {
            need.max(cap * 2)
        }
    }

    /// Capacity after putting `n` bytes in front.
    fn capacity_for_prepend(&self, n: usize) -> usize {
        if n <= self.head {
            self.data.capacity()
        } else {
            Self::front_room(n, self.len() as usize) + self.len() as usize
        }
    }

    fn front_room(n: usize, len: usize) -> usize {
        n.max(len).max(16)
    }

    /// Writes `bytes` at stream offset `s` (`offset <= s <= end`), overwriting held bytes
    /// and extending the block past its end.
    fn write_from(&mut self, s: u64, bytes: &[u8]) {
        let rel = self.head + (s - self.offset) as usize;
        let overwrite = bytes.len().min(self.data.len() - rel);
        self.data[rel..rel + overwrite].copy_from_slice(&bytes[..overwrite]);
        self.append(&bytes[overwrite..]);
    }

    fn append(&mut self, bytes: &[u8]) {
        let cap = self.capacity_for_append(bytes.len());
        if cap > self.data.capacity() {
            self.data.reserve_exact(cap - self.data.len());
        }
        self.data.extend_from_slice(bytes);
    }

    /// Puts `bytes` in front of the block.
    fn prepend(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        if n > self.head {
            let len = self.len() as usize;
            let room = Self::front_room(n, len);
            let mut data = Vec::with_capacity(room + len);
            data.resize(room, 0);
            data.extend_from_slice(self.bytes());
            self.data = data;
            self.head = room;
        }
        self.head -= n;
        self.data[self.head..self.head + n].copy_from_slice(bytes);
        self.offset -= n as u64;
    }
}

/// Charge for one held block (contiguous region) besides its buffer: its map entry.
pub(crate) const BLOCK_COST: u64 = tree_entry_cost(std::mem::size_of::<(u64, Block)>());

/// Charge for one segment record (boundaries kept for overlap decisions), so that floods
/// of tiny segments hit the memcap at their real cost.
pub(crate) const SEGMENT_RECORD_COST: u64 = tree_entry_cost(std::mem::size_of::<RecordKey>());

/// Boundaries of a buffered segment, in stream offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SegRecord {
    offset: u64,
    len: u32,
}

impl SegRecord {
    fn end(&self) -> u64 {
        self.offset + self.len as u64
    }
    /// Length class: records of one class differ in length by less than a factor of two.
    fn class(len: u32) -> u8 {
        len.max(1).ilog2() as u8
    }
    fn key(&self) -> RecordKey {
        (Self::class(self.len), self.offset, self.len)
    }
}

/// (length class, offset, length): records ordered by offset within each class.
type RecordKey = (u8, u64, u32);

/// How [`StreamHalf::write`] places bytes among the held blocks: which blocks the bytes
/// touch and which of them keeps its buffer.
#[derive(Clone, Copy, Debug)]
struct WritePlan {
    /// Keys of the first and last touched block, if any.
    touched: Option<(u64, u64)>,
    /// Blocks touched.
    count: u64,
    /// Heap of the touched blocks now.
    heap_before: u64,
    /// Heap of the resulting block.
    heap_after: u64,
    keeper: Keeper,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keeper {
    /// No block sticks out of the written range: a fresh block holds the bytes.
    Fresh,
    /// The block starting at or before the bytes keeps its buffer and grows rightwards.
    Left,
    /// The block reaching past the bytes keeps its buffer and grows leftwards.
    Right,
}

/// What happened to a segment's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertResult {
    /// New bytes were added to the stream.
    Inserted,
    /// Every byte was already held (retransmission or overlap); policy applied.
    NothingNew,
    /// The payload lies entirely before the retained window (already inspected and freed).
    Old,
    /// The payload lies beyond `reassembly.depth`.
    BeyondDepth,
    /// Not buffered: the worker's reassembly memcap is reached.
    MemcapDrop,
    /// Not buffered: it would open another out-of-order region and the direction already
    /// holds `stream.reassembly.max-regions` of them.
    RegionLimit,
    /// Starts further ahead than the largest TCP window (2^30 bytes): ignored.
    OutOfWindow,
    /// Accepted but not buffered: it lies in the range the app layer said it skips while
    /// raw inspection is off (the body of an encrypted TLS record, see
    /// [`super::TcpReassembly::app_skip`]).
    Skipped,
}

/// Largest distance ahead of the highest seen offset that a segment or ACK may reach:
/// the maximum scaled TCP window. Keeps forged sequence numbers from moving the
/// unwrapping reference.
pub(crate) const MAX_AHEAD: i64 = 1 << 30;

/// Outcome details of an insert, for the per-packet report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InsertDetail {
    pub overlap: bool,
    pub different_data: bool,
    /// Inline mode: the packet disagrees with bytes already accepted, which win.
    pub payload_differs_from_stream: bool,
}

/// Limits an insert works under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InsertLimits {
    /// `stream.reassembly.depth`; 0 = unlimited.
    pub depth: u64,
    /// `stream.reassembly.max-regions`; 0 = unlimited.
    pub max_regions: u32,
    pub inline: bool,
}

#[derive(Debug)]
pub(crate) struct StreamHalf {
    pub policy: OverlapPolicy,
    /// The flow's session gives this direction a start ([`crate::flow::tcp::TcpSession::base_seq`],
    /// which is where sequence numbers are converted from); updated on every segment.
    pub initialized: bool,
    /// Highest right edge of data seen (or of the FIN); reference for unwrapping sequences.
    pub next_off: u64,
    /// Offset acknowledged by the peer (may pass `next_off` by one for the FIN).
    pub last_ack_off: u64,
    pub ack_seen: bool,
    /// Bytes before this offset are freed; segments there are ignored.
    pub left: u64,
    /// Held bytes by start offset; blocks neither overlap nor touch.
    blocks: BTreeMap<u64, Block>,
    /// Segment boundaries, for overlap policies.
    records: BTreeSet<RecordKey>,
    /// Bit k set: class k may hold records (cleared only when `records` empties).
    record_classes: u32,
    /// Heap of the blocks' buffers.
    heap: u64,
    /// What this half has charged to the worker's memory.
    accounted: u64,
    /// Detection ("raw") progress: everything before was inspected.
    pub raw_progress: u64,
    /// App-layer progress: everything before was handed to the parser.
    pub app_progress: u64,
    /// Holes before this offset were already examined for gap accounting.
    gap_checked: u64,
    pub depth_reached: bool,
    /// Suricata's TRIGGER_RAW: inspect on the next opportunity regardless of chunk size.
    pub trigger_raw: bool,
    /// Last packet carrying data in this direction: (offset, len, stored).
    pub last_packet: Option<(u64, u32, bool)>,
    pub packets: u64,
    /// Most memory regions Suricata's streaming buffer would have held at once for this
    /// direction (eve flow `tcp.ts_max_regions` / `tc_max_regions`): 1, plus one for
    /// each run of held data more than [`REGION_GAP`] past the previous one.
    pub max_regions: u16,
    /// The range the app layer skips unseen ([`super::TcpReassembly::app_skip`]): segments
    /// inside it are accepted without being stored.
    pub skip: std::ops::Range<u64>,
}

/// Suricata's `STREAMING_BUFFER_REGION_GAP_DEFAULT`: out-of-order data further than this
/// past the held data starts a new memory region of the streaming buffer.
pub const REGION_GAP: u64 = 256 * 1024;

impl StreamHalf {
    pub fn new(policy: OverlapPolicy) -> Self {
        StreamHalf {
            policy,
            initialized: false,
            next_off: 0,
            last_ack_off: 0,
            ack_seen: false,
            left: 0,
            blocks: BTreeMap::new(),
            records: BTreeSet::new(),
            record_classes: 0,
            heap: 0,
            accounted: 0,
            raw_progress: 0,
            app_progress: 0,
            gap_checked: 0,
            skip: 0..0,
            depth_reached: false,
            trigger_raw: false,
            last_packet: None,
            packets: 0,
            max_regions: 1,
        }
    }

    /// Counts the regions the held blocks would form in Suricata's streaming buffer and
    /// raises [`StreamHalf::max_regions`]. Called only when a segment opened a new block
    /// (out-of-order data), so the in-order path never pays for it.
    fn note_regions(&mut self) {
        let mut regions: u16 = 1;
        let mut prev_end: Option<u64> = None;
        for b in self.blocks.values() {
            if prev_end.is_some_and(|end| b.offset.saturating_sub(end) > REGION_GAP) {
                regions = regions.saturating_add(1);
            }
            prev_end = Some(b.end());
        }
        self.max_regions = self.max_regions.max(regions);
    }

    /// Converts a 32-bit sequence number into a signed stream offset, given the sequence
    /// number of offset 0, choosing the unwrapping closest to the highest offset seen so
    /// far. Streams longer than 4 GiB and sequence wrap-around are both handled because
    /// only the distance (< 2^31) matters.
    #[inline]
    pub fn offset_of(&self, seq: u32, base_seq: u32) -> i64 {
        let reference = self.next_off;
        let reference_seq = base_seq.wrapping_add(reference as u32);
        let delta = seq.wrapping_sub(reference_seq) as i32 as i64;
        reference as i64 + delta
    }

    /// The held blocks, by offset.
    pub fn blocks(&self) -> &BTreeMap<u64, Block> {
        &self.blocks
    }

    /// Held blocks in order, starting with the one holding `pos` (or the first after it).
    pub fn blocks_from(&self, pos: u64) -> impl Iterator<Item = &Block> + '_ {
        // One block (in-order data): it is the answer iff it reaches past `pos`, and a
        // full range needs no key search (this runs several times per segment).
        let start = if self.blocks.len() == 1 {
            match self.blocks.first_key_value() {
                Some((_, b)) if b.end() > pos => Unbounded,
                _ => Excluded(pos),
            }
        } else {
            match self.blocks.range(..=pos).next_back() {
                Some((&k, b)) if b.end() > pos => Included(k),
                _ => Excluded(pos),
            }
        };
        self.blocks.range((start, Unbounded)).map(|(_, b)| b)
    }

    /// Right edge of the data contiguous from `from` (or `from` itself if no data there).
    pub fn contiguous_end(&self, from: u64) -> u64 {
        match self.blocks_from(from).next() {
            Some(b) if b.offset <= from => b.end(),
            _ => from,
        }
    }

    /// Records the peer's acknowledgement of this direction (whose offset 0 is `base_seq`).
    pub fn on_ack(&mut self, ack: u32, base_seq: u32) {
        let off = self.offset_of(ack, base_seq);
        if off < 0 {
            return;
        }
        if off > self.next_off as i64 + MAX_AHEAD {
            return;
        }
        let off = off as u64;
        if !self.ack_seen || off > self.last_ack_off {
            self.last_ack_off = off;
            self.ack_seen = true;
        }
    }

    /// Held segment records overlapping `[s, e)` that are not yet freed. Per length class
    /// only records starting less than twice the class's length before `s` can reach it.
    fn overlapping_records(&self, s: u64, e: u64) -> impl Iterator<Item = SegRecord> + '_ {
        let left = self.left;
        (0..32u8)
            .filter(move |k| self.record_classes & (1 << k) != 0)
            .flat_map(move |k| {
                let reach = (2u64 << k) - 1;
                let lo = s.saturating_sub(reach);
                self.records.range((k, lo, 0)..(k, e, 0)).map(|&(_, offset, len)| SegRecord { offset, len })
            })
            .filter(move |r| r.end() > s && r.offset < e && r.end() > left)
    }

    /// Counts bytes of `[s, e)` already present.
    fn present_bytes(&self, s: u64, e: u64) -> u64 {
        let mut n = 0;
        for b in self.blocks_from(s) {
            if b.offset >= e {
                break;
            }
            n += b.end().min(e) - b.offset.max(s);
        }
        n
    }

    /// The held bytes `[s, e)`, which must be present in one block.
    fn held(&self, s: u64, e: u64) -> Option<&[u8]> {
        let b = self.blocks_from(s).next()?;
        if b.offset > s || b.end() < e {
            return None;
        }
        let from = (s - b.offset) as usize;
        b.bytes().get(from..from + (e - s) as usize)
    }

    /// Inserts one segment's payload at signed stream offset `off`.
    pub fn insert(
        &mut self,
        off: i64,
        payload: &[u8],
        limits: InsertLimits,
        mem: &mut ReassemblyMemory,
    ) -> (InsertResult, InsertDetail) {
        let mut detail = InsertDetail::default();
        if off > self.next_off as i64 + MAX_AHEAD {
            // Further ahead than any TCP window can reach: not data the receiver accepts.
            mem.counters.out_of_window += 1;
            return (InsertResult::OutOfWindow, detail);
        }
        let end = off + payload.len() as i64;
        // Inside the range the app layer skips (raw inspection being off): nothing reads
        // these bytes, so they are not copied; only the sequence space moves on. Within the
        // depth only, so that the depth's accounting is unchanged.
        if off >= self.skip.start as i64
            && end <= self.skip.end as i64
            && (limits.depth == 0 || end as u64 <= limits.depth)
        {
            self.next_off = self.next_off.max(end as u64);
            mem.counters.skipped_segments += 1;
            mem.counters.skipped_bytes += payload.len() as u64;
            return (InsertResult::Skipped, detail);
        }
        if end <= self.left as i64 {
            mem.counters.old_segments += 1;
            return (InsertResult::Old, detail);
        }
        // Trim what lies before the retained window (it was already inspected and freed).
        let skip = (self.left as i64 - off).max(0) as u64;
        let s = (off + skip as i64) as u64;
        let mut e = end as u64;
        let depth = limits.depth;
        if depth > 0 {
            if s >= depth {
                self.note_depth(mem, e - s);
                return (InsertResult::BeyondDepth, detail);
            }
            if e > depth {
                self.note_depth(mem, e - depth);
                e = depth;
            }
        }
        let data = &payload[skip as usize..(skip + (e - s)) as usize];
        let record = SegRecord { offset: s, len: (e - s) as u32 };
        // In-order data (the common case) starts at or past the highest offset seen: every
        // held byte and every record ends at or before `next_off`, so nothing can be present,
        // duplicated or overlapped, and the three ordered-map searches are skipped.
        let past_everything = s >= self.next_off;
        let new_bytes = if past_everything { e - s } else { (e - s) - self.present_bytes(s, e) };
        let duplicate = !past_everything && self.records.contains(&record.key());
        let overlapping = !past_everything && self.overlapping_records(s, e).next().is_some();
        let plan = self.plan_write(s, e);
        let new_block = plan.keeper == Keeper::Fresh && plan.count == 0;
        if plan.keeper == Keeper::Fresh
            && plan.count == 0
            && limits.max_regions > 0
            && self.blocks.len() >= limits.max_regions as usize
        {
            // Another out-of-order region would exceed the per-stream limit. Like a memcap
            // drop, the bytes existed: once acknowledged they are a gap.
            self.next_off = self.next_off.max(e);
            mem.counters.region_limit_drop += 1;
            return (InsertResult::RegionLimit, detail);
        }
        let record_cost = if duplicate { 0 } else { SEGMENT_RECORD_COST };
        let grows = (plan.heap_after + BLOCK_COST).saturating_sub(plan.heap_before + plan.count * BLOCK_COST);
        if !mem.fits(grows + record_cost) {
            // The bytes existed even though we cannot keep them: once acknowledged they
            // are a gap, which the app-layer must learn about.
            self.next_off = self.next_off.max(e);
            mem.counters.segment_memcap_drop += 1;
            return (InsertResult::MemcapDrop, detail);
        }

        if !overlapping {
            self.write(s, data, plan);
        } else {
            detail.overlap = true;
            mem.counters.overlap += 1;
            // Start from the new bytes and put back held bytes wherever the policy keeps
            // them, then write the result over the stream in one go.
            let mut merged = data.to_vec();
            for r in self.overlapping_records(s, e) {
                let a = s.max(r.offset).max(self.left);
                let b = e.min(r.end());
                if a >= b {
                    continue;
                }
                let Some(old) = self.held(a, b) else { continue };
                let new = &data[(a - s) as usize..(b - s) as usize];
                if old == new {
                    continue;
                }
                detail.different_data = true;
                let keep_new =
                    !limits.inline && self.policy.new_data_wins(off.max(0) as u64, end as u64, r.offset, r.end());
                if !keep_new {
                    merged[(a - s) as usize..(b - s) as usize].copy_from_slice(old);
                }
            }
            if detail.different_data {
                mem.counters.overlap_diff_data += 1;
                mem.counters.ev_overlap_different_data += 1;
                detail.payload_differs_from_stream = limits.inline;
            }
            self.write(s, &merged, plan);
        }
        if !duplicate {
            self.records.insert(record.key());
            self.record_classes |= 1 << SegRecord::class(record.len);
        }
        self.next_off = self.next_off.max(e);
        if new_block && self.blocks.len() > 1 {
            self.note_regions();
        }
        self.sync_memory(mem);
        let result = if new_bytes > 0 { InsertResult::Inserted } else { InsertResult::NothingNew };
        (result, detail)
    }

    fn note_depth(&mut self, mem: &mut ReassemblyMemory, dropped: u64) {
        if !self.depth_reached {
            self.depth_reached = true;
            mem.counters.stream_depth_reached += 1;
        }
        mem.counters.depth_bytes_dropped += dropped;
    }

    /// Decides how writing `[s, e)` changes the blocks, and what that costs, without
    /// changing anything: blocks touching the range (overlapping or adjacent) are merged
    /// into one, keeping the buffer of whichever block sticking out of the range is larger.
    fn plan_write(&self, s: u64, e: u64) -> WritePlan {
        let mut plan = WritePlan { touched: None, count: 0, heap_before: 0, heap_after: 0, keeper: Keeper::Fresh };
        let mut first: Option<&Block> = None;
        let mut last: Option<&Block> = None;
        // One block (in-order data): it is touched iff the range search below would yield
        // it (it reaches `s`, or starts after `s`, and starts at or before `e`); no search.
        let (lone, range) = if self.blocks.len() == 1 {
            let lone = self.blocks.first_key_value().map(|(_, b)| b);
            (lone.filter(|b| b.offset <= e && (b.end() >= s || b.offset > s)), None)
        } else {
            let start = match self.blocks.range(..=s).next_back() {
                Some((&k, b)) if b.end() >= s => Included(k),
                _ => Excluded(s),
            };
            (None, Some(self.blocks.range((start, Included(e)))))
        };
        for b in lone.into_iter().chain(range.into_iter().flatten().map(|(_, b)| b)) {
            first.get_or_insert(b);
            last = Some(b);
            plan.count += 1;
            plan.heap_before += b.heap();
        }
        let (Some(first), Some(last)) = (first, last) else {
            plan.heap_after = heap_cost((e - s) as usize);
            return plan;
        };
        plan.touched = Some((first.offset, last.offset));
        let left = (first.offset <= s).then_some(first);
        let right = (last.end() > e).then_some(last);
        let left_len = left.map_or(0, |b| b.len());
        let right_len = right.map_or(0, |b| b.len());
        match (left, right) {
            (Some(l), _) if left_len >= right_len => {
                plan.keeper = Keeper::Left;
                let extra = (e.max(last.end()).max(l.end()) - l.end()) as usize;
                plan.heap_after = heap_cost(l.capacity_for_append(extra));
            }
            (_, Some(r)) => {
                plan.keeper = Keeper::Right;
                let front = (r.offset - s) + left.map_or(0, |l| s - l.offset);
                plan.heap_after = heap_cost(r.capacity_for_prepend(front as usize));
            }
            _ => plan.heap_after = heap_cost((e - s) as usize),
        }
        plan
    }

    /// Writes `bytes` at `s` following `plan` (from [`Self::plan_write`] for the same
    /// range), overwriting held bytes and merging touching blocks.
    fn write(&mut self, s: u64, bytes: &[u8], plan: WritePlan) {
        let e = s + bytes.len() as u64;
        let Some((first, last)) = plan.touched else {
            self.heap += heap_cost(bytes.len());
            self.blocks.insert(s, Block::new(s, bytes));
            debug_assert_eq!(self.blocks[&s].heap(), plan.heap_after);
            return;
        };
        self.heap -= plan.heap_before;
        if plan.keeper == Keeper::Left && first == last {
            // Common case (in-order data, retransmissions): one block takes the bytes in
            // place, its key unchanged.
            let keep = self.blocks.get_mut(&first).expect("planned block");
            keep.write_from(s, bytes);
            debug_assert_eq!(keep.heap(), plan.heap_after, "plan and write agree on the allocation");
            self.heap += keep.heap();
            return;
        }
        let block = match plan.keeper {
            Keeper::Left => {
                let mut keep = self.blocks.remove(&first).expect("planned block");
                let right = if last != first { self.blocks.remove(&last) } else { None };
                self.drop_blocks_between(first, last);
                // Everything the bytes do not reach past `e` comes from the last block.
                let tail_from = e.max(keep.end());
                let tail = match &right {
                    Some(r) if r.end() > tail_from => &r.bytes()[(tail_from - r.offset) as usize..],
                    _ => &[][..],
                };
                let grow = (e.max(keep.end()) - keep.end()) as usize + tail.len();
                if keep.capacity_for_append(grow) > keep.data.capacity() {
                    let cap = keep.capacity_for_append(grow);
                    keep.data.reserve_exact(cap - keep.data.len());
                }
                keep.write_from(s, bytes);
                keep.append(tail);
                keep
            }
            Keeper::Right => {
                let mut keep = self.blocks.remove(&last).expect("planned block");
                let left = if last != first { self.blocks.remove(&first) } else { None };
                self.drop_blocks_between(first, last);
                // Overwrite the part of the bytes inside the kept block, then put the rest
                // and whatever the first block holds before `s` in front.
                let inside = (keep.offset - s) as usize;
                keep.write_from(keep.offset, &bytes[inside..]);
                let head = match &left {
                    Some(l) if l.offset < s => &l.bytes()[..(s - l.offset) as usize],
                    _ => &[][..],
                };
                let mut front = Vec::with_capacity(head.len() + inside);
                front.extend_from_slice(head);
                front.extend_from_slice(&bytes[..inside]);
                keep.prepend(&front);
                keep
            }
            Keeper::Fresh => {
                for k in [first, last] {
                    self.blocks.remove(&k);
                }
                self.drop_blocks_between(first, last);
                Block::new(s, bytes)
            }
        };
        debug_assert_eq!(block.heap(), plan.heap_after, "plan and write agree on the allocation");
        self.heap += block.heap();
        self.blocks.insert(block.offset, block);
    }

    /// Removes the blocks strictly between two keys (they lie inside a written range).
    fn drop_blocks_between(&mut self, first: u64, last: u64) {
        if last <= first {
            return;
        }
        while let Some((&k, _)) = self.blocks.range((Excluded(first), Excluded(last))).next() {
            self.blocks.remove(&k);
        }
    }

    /// Counts holes that the peer has acknowledged past (Suricata declares a gap then and
    /// moves on). Each hole is counted once.
    ///
    /// Called for both directions on every segment, so the common cases skip the ordered
    /// map: nothing acknowledged past what was already examined (a hole needs a block
    /// starting past the cursor and at or before `acked`), or a single block that starts
    /// at or before the cursor (in-order data: no hole can be in front of it). Both
    /// shortcuts leave `gap_checked` where the walk below would leave it, or earlier inside
    /// held data, which the next walk passes over without counting anything.
    pub fn check_gaps(&mut self, mem: &mut ReassemblyMemory, acked: u64) -> bool {
        let mut cursor = self.gap_checked.max(self.left);
        if cursor >= acked {
            return false;
        }
        if self.blocks.len() == 1 {
            if let Some((_, b)) = self.blocks.first_key_value() {
                if b.offset <= cursor {
                    self.gap_checked = cursor.max(b.end());
                    return false;
                }
            }
        }
        let mut found = false;
        for b in self.blocks_from(cursor) {
            if b.offset > acked {
                break;
            }
            if b.offset > cursor {
                found = true;
                mem.counters.reassembly_gap += 1;
                mem.counters.ev_seq_gap += 1;
            }
            cursor = cursor.max(b.end());
        }
        self.gap_checked = cursor;
        found
    }

    /// Frees data and records before `target` (never moves backwards).
    pub fn free_before(&mut self, target: u64, mem: &mut ReassemblyMemory) {
        if target <= self.left {
            return;
        }
        self.left = target;
        while let Some(entry) = self.blocks.first_entry() {
            if entry.get().end() <= target {
                self.heap -= entry.remove().heap();
            } else if entry.get().offset < target {
                let mut b = entry.remove();
                self.heap -= b.heap();
                b.drop_front((target - b.offset) as usize);
                self.heap += b.heap();
                self.blocks.insert(b.offset, b);
                break;
            } else {
                break;
            }
        }
        // Per class, records are ordered by offset and differ in length by less than 2x,
        // so popping while the first one ends before `target` frees nearly all of them.
        for k in 0..32u8 {
            if self.record_classes & (1 << k) == 0 {
                continue;
            }
            while let Some(&(class, offset, len)) = self.records.range((k, 0, 0)..(k + 1, 0, 0)).next() {
                if offset + len as u64 > target {
                    break;
                }
                self.records.remove(&(class, offset, len));
            }
        }
        // An emptied ordered map keeps its root node (544 bytes for the blocks, 192 for the
        // records): a direction whose data is all inspected and acknowledged, most of them
        // between messages, holds nothing.
        if self.blocks.is_empty() {
            self.blocks = BTreeMap::new();
        }
        if self.records.is_empty() {
            self.records = BTreeSet::new();
            self.record_classes = 0;
        }
        self.sync_memory(mem);
    }

    /// Frees everything (flow end).
    pub fn release(&mut self, mem: &mut ReassemblyMemory) {
        self.blocks = BTreeMap::new();
        self.records = BTreeSet::new();
        self.record_classes = 0;
        self.heap = 0;
        self.left = self.left.max(self.next_off);
        self.sync_memory(mem);
    }

    /// What this direction costs now: buffers, one map entry per block and per record.
    fn charge(&self) -> u64 {
        self.heap + self.blocks.len() as u64 * BLOCK_COST + self.records.len() as u64 * SEGMENT_RECORD_COST
    }

    fn sync_memory(&mut self, mem: &mut ReassemblyMemory) {
        let now = self.charge();
        mem.adjust(self.accounted, now);
        self.accounted = now;
    }

    /// What this direction is charged to its worker's reassembly memcap now.
    pub fn accounted(&self) -> u64 {
        self.accounted
    }

    /// The charge recomputed from scratch, to check the running total.
    #[cfg(test)]
    pub fn recomputed_charge(&self) -> u64 {
        let heap: u64 = self.blocks.values().map(Block::heap).sum();
        heap + self.blocks.len() as u64 * BLOCK_COST + self.records.len() as u64 * SEGMENT_RECORD_COST
    }
}
