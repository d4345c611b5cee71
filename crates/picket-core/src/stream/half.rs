//! One direction of a TCP session: sequence bookkeeping, the reassembled bytes and the
//! segment boundaries that overlap policies need.

use std::collections::VecDeque;

use super::memory::{ReassemblyMemory, SEGMENT_RECORD_COST};
use super::policy::OverlapPolicy;

/// A run of contiguous bytes. Only the first block ever has `head > 0`: freed bytes at the
/// front are skipped by moving `head`, and compacted once they dominate the allocation, so
/// that freeing is amortised O(1) instead of a memmove per packet.
#[derive(Debug)]
pub(crate) struct Block {
    /// Stream offset of `data[head]`.
    pub offset: u64,
    head: usize,
    data: Vec<u8>,
}

impl Block {
    pub fn bytes(&self) -> &[u8] {
        &self.data[self.head..]
    }
    pub fn len(&self) -> u64 {
        (self.data.len() - self.head) as u64
    }
    pub fn end(&self) -> u64 {
        self.offset + self.len()
    }
    fn drop_front(&mut self, n: usize) {
        self.head += n;
        self.offset += n as u64;
        if self.head >= 4096 && self.head * 2 >= self.data.len() {
            self.data.drain(..self.head);
            self.head = 0;
        }
    }
}

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
    /// Starts further ahead than the largest TCP window (2^30 bytes): ignored.
    OutOfWindow,
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
    blocks: Vec<Block>,
    records: VecDeque<SegRecord>,
    /// Longest record: bounds the backward scan for overlaps.
    max_record_len: u32,
    /// Bytes currently stored in `blocks`.
    stored: u64,
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
}

impl StreamHalf {
    pub fn new(policy: OverlapPolicy) -> Self {
        StreamHalf {
            policy,
            initialized: false,
            next_off: 0,
            last_ack_off: 0,
            ack_seen: false,
            left: 0,
            blocks: Vec::new(),
            records: VecDeque::new(),
            max_record_len: 0,
            stored: 0,
            accounted: 0,
            raw_progress: 0,
            app_progress: 0,
            gap_checked: 0,
            depth_reached: false,
            trigger_raw: false,
            last_packet: None,
            packets: 0,
        }
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

    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Right edge of the data contiguous from `from` (or `from` itself if no data there).
    pub fn contiguous_end(&self, from: u64) -> u64 {
        let i = self.blocks.partition_point(|b| b.end() <= from);
        match self.blocks.get(i) {
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

    /// Finds an index range of records possibly overlapping `[s, e)`.
    fn overlapping_records(&self, s: u64, e: u64) -> (usize, usize) {
        let hi = self.records.partition_point(|r| r.offset < e);
        let scan_from = s.saturating_sub(self.max_record_len as u64);
        let lo = self.records.partition_point(|r| r.offset < scan_from);
        (lo, hi)
    }

    /// Counts bytes of `[s, e)` already present.
    fn present_bytes(&self, s: u64, e: u64) -> u64 {
        let mut n = 0;
        let i = self.blocks.partition_point(|b| b.end() <= s);
        for b in &self.blocks[i..] {
            if b.offset >= e {
                break;
            }
            n += b.end().min(e) - b.offset.max(s);
        }
        n
    }

    /// The held bytes `[s, e)`, which must be present in one block.
    fn held(&self, s: u64, e: u64) -> Option<&[u8]> {
        let i = self.blocks.partition_point(|b| b.end() <= s);
        let b = self.blocks.get(i)?;
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
        depth: u64,
        inline: bool,
        mem: &mut ReassemblyMemory,
    ) -> (InsertResult, InsertDetail) {
        let mut detail = InsertDetail::default();
        if off > self.next_off as i64 + MAX_AHEAD {
            // Further ahead than any TCP window can reach: not data the receiver accepts.
            mem.counters.out_of_window += 1;
            return (InsertResult::OutOfWindow, detail);
        }
        let end = off + payload.len() as i64;
        if end <= self.left as i64 {
            mem.counters.old_segments += 1;
            return (InsertResult::Old, detail);
        }
        // Trim what lies before the retained window (it was already inspected and freed).
        let skip = (self.left as i64 - off).max(0) as u64;
        let s = (off + skip as i64) as u64;
        let mut e = end as u64;
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
        let new_bytes = (e - s) - self.present_bytes(s, e);

        let (lo, hi) = self.overlapping_records(s, e);
        let mut duplicate = false;
        let mut overlapping = false;
        for r in self.records.range(lo..hi) {
            if r.end() > s && r.offset < e && r.end() > self.left {
                overlapping = true;
                duplicate |= r.offset == s && r.end() == e;
            }
        }
        let record_cost = if duplicate { 0 } else { SEGMENT_RECORD_COST };
        if !mem.fits(new_bytes + record_cost) {
            // The bytes existed even though we cannot keep them: once acknowledged they
            // are a gap, which the app-layer must learn about.
            self.next_off = self.next_off.max(e);
            mem.counters.segment_memcap_drop += 1;
            return (InsertResult::MemcapDrop, detail);
        }

        if !overlapping {
            self.write(s, data);
        } else {
            detail.overlap = true;
            mem.counters.overlap += 1;
            // Start from the new bytes and put back held bytes wherever the policy keeps
            // them, then write the result over the stream in one go.
            let mut merged = data.to_vec();
            for r in self.records.range(lo..hi) {
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
                let keep_new = !inline && self.policy.new_data_wins(off.max(0) as u64, end as u64, r.offset, r.end());
                if !keep_new {
                    merged[(a - s) as usize..(b - s) as usize].copy_from_slice(old);
                }
            }
            if detail.different_data {
                mem.counters.overlap_diff_data += 1;
                mem.counters.ev_overlap_different_data += 1;
                detail.payload_differs_from_stream = inline;
            }
            self.write(s, &merged);
        }
        if !duplicate {
            self.add_record(SegRecord { offset: s, len: (e - s) as u32 });
        }
        self.next_off = self.next_off.max(e);
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

    fn add_record(&mut self, rec: SegRecord) {
        self.max_record_len = self.max_record_len.max(rec.len);
        // In-order data is the common case: append without searching.
        match self.records.back() {
            None => self.records.push_back(rec),
            Some(last) if (last.offset, last.len) <= (rec.offset, rec.len) => self.records.push_back(rec),
            _ => {
                let at = self.records.partition_point(|r| (r.offset, r.len) < (rec.offset, rec.len));
                self.records.insert(at, rec);
            }
        }
    }

    /// Writes `bytes` at `s`, overwriting held bytes and merging touching blocks.
    fn write(&mut self, s: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let e = s + bytes.len() as u64;
        let i = self.blocks.partition_point(|b| b.end() < s);
        let j = self.blocks.partition_point(|b| b.offset <= e);
        if i >= j {
            self.blocks.insert(i, Block { offset: s, head: 0, data: bytes.to_vec() });
            self.stored += bytes.len() as u64;
            return;
        }
        if j == i + 1 && self.blocks[i].offset <= s {
            // Common case: append to (or overwrite inside) one block.
            let b = &mut self.blocks[i];
            let before = b.len();
            let rel = b.head + (s - b.offset) as usize;
            let overwrite = bytes.len().min(b.data.len() - rel);
            b.data[rel..rel + overwrite].copy_from_slice(&bytes[..overwrite]);
            b.data.extend_from_slice(&bytes[overwrite..]);
            self.stored += b.len() - before;
            return;
        }
        // Rare case: the new bytes bridge blocks or extend one to the left.
        let start = s.min(self.blocks[i].offset);
        let stop = e.max(self.blocks[j - 1].end());
        let mut data = vec![0u8; (stop - start) as usize];
        let mut old_len = 0;
        for b in &self.blocks[i..j] {
            let at = (b.offset - start) as usize;
            data[at..at + b.len() as usize].copy_from_slice(b.bytes());
            old_len += b.len();
        }
        let at = (s - start) as usize;
        data[at..at + bytes.len()].copy_from_slice(bytes);
        self.stored = self.stored - old_len + (stop - start);
        self.blocks.splice(i..j, std::iter::once(Block { offset: start, head: 0, data }));
    }

    /// Counts holes that the peer has acknowledged past (Suricata declares a gap then and
    /// moves on). Each hole is counted once.
    pub fn check_gaps(&mut self, mem: &mut ReassemblyMemory, acked: u64) -> bool {
        let mut found = false;
        let mut cursor = self.gap_checked.max(self.left);
        let i = self.blocks.partition_point(|b| b.end() <= cursor);
        for b in &self.blocks[i..] {
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
        let drop_blocks = self.blocks.partition_point(|b| b.end() <= target);
        for b in self.blocks.drain(..drop_blocks) {
            self.stored -= b.len();
        }
        if let Some(b) = self.blocks.first_mut() {
            if b.offset < target {
                let n = (target - b.offset) as usize;
                b.drop_front(n);
                self.stored -= n as u64;
            }
        }
        while self.records.front().is_some_and(|r| r.end() <= target) {
            self.records.pop_front();
        }
        if self.records.is_empty() {
            self.max_record_len = 0;
        }
        self.sync_memory(mem);
    }

    /// Frees everything (flow end).
    pub fn release(&mut self, mem: &mut ReassemblyMemory) {
        self.blocks = Vec::new();
        self.records = VecDeque::new();
        self.stored = 0;
        self.left = self.left.max(self.next_off);
        self.sync_memory(mem);
    }

    fn sync_memory(&mut self, mem: &mut ReassemblyMemory) {
        let now = self.stored + self.records.len() as u64 * SEGMENT_RECORD_COST;
        mem.adjust(self.accounted, now);
        self.accounted = now;
    }

    #[cfg(test)]
    pub fn accounted(&self) -> u64 {
        self.accounted
    }
}
