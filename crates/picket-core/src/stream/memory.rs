//! Worker-wide reassembly memory budget and counters.

/// Memory accounting shared by every flow of one worker, enforced per worker here because
/// workers share nothing: Suricata's `stream.reassembly.memcap` (held segment data, with
/// their bookkeeping) and `stream.memcap` (the per-session reassembly state itself).
///
/// Each [`super::TcpReassembly`] reports what it holds through this object; the flow that
/// owns a `TcpReassembly` must call [`super::TcpReassembly::release`] before dropping it,
/// otherwise the budget stays charged.
#[derive(Debug)]
pub struct ReassemblyMemory {
    memcap: u64,
    used: u64,
    peak: u64,
    /// `stream.memcap` (0 = unlimited) and what sessions hold of it.
    session_memcap: u64,
    session_used: u64,
    pub(crate) counters: ReassemblyCounters,
}

/// Counters, named after Suricata's stats where one exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyCounters {
    /// `tcp.ssn_memcap_drop`: sessions not reassembled because `stream.memcap` was reached.
    pub ssn_memcap_drop: u64,
    /// `tcp.segment_memcap_drop`: segments not buffered because the memcap was reached.
    pub segment_memcap_drop: u64,
    /// `tcp.stream_depth_reached`: stream directions that hit `reassembly.depth`.
    pub stream_depth_reached: u64,
    /// Bytes not reassembled because they lie beyond the depth.
    pub depth_bytes_dropped: u64,
    /// `tcp.reassembly_gap`: holes the receiver acknowledged past; they are skipped.
    pub reassembly_gap: u64,
    /// `tcp.overlap`: segments overlapping data already held (retransmissions included).
    pub overlap: u64,
    /// `tcp.overlap_diff_data`: overlapping segments whose bytes differ from those held.
    pub overlap_diff_data: u64,
    /// Segments not buffered because they would open another out-of-order region past
    /// `stream.reassembly.max-regions` (later a gap, like a memcap drop).
    pub region_limit_drop: u64,
    /// Segments entirely before the retained window (old retransmissions), ignored.
    pub old_segments: u64,
    /// Segments starting further ahead than any TCP window reaches, ignored.
    pub out_of_window: u64,
    /// Segments (and their bytes) accepted without being stored: the app layer skips them
    /// and raw inspection is off (`InsertResult::Skipped`).
    pub skipped_segments: u64,
    pub skipped_bytes: u64,
    /// `stream.reassembly_overlap_different_data` event count.
    pub ev_overlap_different_data: u64,
    /// `stream.reassembly_seq_gap` event count.
    pub ev_seq_gap: u64,
}

/// Heap bytes an allocation of `capacity` bytes occupies: glibc's malloc rounds a request
/// plus its 8-byte header up to 16 bytes, with a 32-byte minimum chunk.
pub(crate) const fn heap_cost(capacity: usize) -> u64 {
    let chunk = (capacity as u64 + 8 + 15) & !15;
    if capacity == 0 {
        0
    } else if chunk < 32 {
        32
    } else {
        chunk
    }
}

/// Share of a B-tree node one entry of `size` bytes occupies. Rust's B-tree nodes hold up
/// to 11 entries plus a parent link and are between half and fully used (about 6 entries
/// when filled in order, more when filled at random), with inner nodes on top: twice the
/// entry's size plus 16 bytes covers the node share of in-order, reverse and random fills.
pub(crate) const fn tree_entry_cost(size: usize) -> u64 {
    2 * size as u64 + 16
}

impl ReassemblyMemory {
    /// Suricata's default `stream.reassembly.memcap`.
    pub const DEFAULT_MEMCAP: u64 = 256 * 1024 * 1024;

    /// Suricata's default `stream.memcap`.
    pub const DEFAULT_SESSION_MEMCAP: u64 = 64 * 1024 * 1024;

    /// A budget of `memcap` for segment data; sessions are not limited.
    pub fn new(memcap: u64) -> Self {
        Self::with_session_memcap(memcap, 0)
    }

    /// A budget of `memcap` for segment data and `session_memcap` for session state.
    pub fn with_session_memcap(memcap: u64, session_memcap: u64) -> Self {
        ReassemblyMemory {
            memcap,
            used: 0,
            peak: 0,
            session_memcap,
            session_used: 0,
            counters: ReassemblyCounters::default(),
        }
    }
    /// Session state currently charged (`tcp.memuse`).
    pub fn session_used(&self) -> u64 {
        self.session_used
    }
    /// Charges one session's state; false (and counted) when `stream.memcap` is reached.
    pub(crate) fn charge_session(&mut self, cost: u64) -> bool {
        if self.session_memcap != 0 && self.session_used.saturating_add(cost) > self.session_memcap {
            self.counters.ssn_memcap_drop += 1;
            return false;
        }
        self.session_used += cost;
        true
    }
    /// Charges session state that exists already (a flow handed over from another worker).
    pub(crate) fn force_session(&mut self, cost: u64) {
        self.session_used += cost;
    }
    pub(crate) fn refund_session(&mut self, cost: u64) {
        self.session_used = self.session_used.saturating_sub(cost);
    }
    pub fn memcap(&self) -> u64 {
        self.memcap
    }
    pub fn used(&self) -> u64 {
        self.used
    }
    pub fn peak(&self) -> u64 {
        self.peak
    }
    pub fn stats(&self) -> &ReassemblyCounters {
        &self.counters
    }
    /// Whether `extra` more bytes fit under the memcap (0 = unlimited, as in Suricata).
    pub(crate) fn fits(&self, extra: u64) -> bool {
        self.memcap == 0 || self.used.saturating_add(extra) <= self.memcap
    }
    /// Applies a change in what one stream holds.
    pub(crate) fn adjust(&mut self, before: u64, after: u64) {
        if after >= before {
            self.used = self.used.saturating_add(after - before);
            self.peak = self.peak.max(self.used);
        } else {
            self.used = self.used.saturating_sub(before - after);
        }
    }

    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let c = &self.counters;
        [
            ("tcp.memuse", self.session_used),
            ("tcp.ssn_memcap_drop", c.ssn_memcap_drop),
            ("tcp.segment_memcap_drop", c.segment_memcap_drop),
            ("tcp.stream_depth_reached", c.stream_depth_reached),
            ("tcp.reassembly_depth_bytes_dropped", c.depth_bytes_dropped),
            ("tcp.reassembly_gap", c.reassembly_gap),
            ("tcp.overlap", c.overlap),
            ("tcp.overlap_diff_data", c.overlap_diff_data),
            ("tcp.reassembly_region_limit_drop", c.region_limit_drop),
            ("tcp.reassembly_old_segments", c.old_segments),
            ("tcp.reassembly_out_of_window", c.out_of_window),
            ("tcp.reassembly_skipped_segments", c.skipped_segments),
            ("tcp.reassembly_skipped_bytes", c.skipped_bytes),
            ("tcp.reassembly_memuse", self.used),
            ("stream.reassembly_overlap_different_data", c.ev_overlap_different_data),
            ("stream.reassembly_seq_gap", c.ev_seq_gap),
        ]
        .into_iter()
    }
}

impl Default for ReassemblyMemory {
    fn default() -> Self {
        ReassemblyMemory::with_session_memcap(Self::DEFAULT_MEMCAP, Self::DEFAULT_SESSION_MEMCAP)
    }
}
