//! Worker-wide reassembly memory budget and counters.

/// Memory accounting shared by every flow of one worker (Suricata's
/// `stream.reassembly.memcap`, enforced per worker here because workers share nothing).
///
/// Each [`super::TcpReassembly`] reports what it holds through this object; the flow that
/// owns a `TcpReassembly` must call [`super::TcpReassembly::release`] before dropping it,
/// otherwise the budget stays charged.
#[derive(Debug)]
pub struct ReassemblyMemory {
    memcap: u64,
    used: u64,
    peak: u64,
    pub(crate) counters: ReassemblyCounters,
}

/// Counters, named after Suricata's stats where one exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyCounters {
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
    /// Segments entirely before the retained window (old retransmissions), ignored.
    pub old_segments: u64,
    /// Segments starting further ahead than any TCP window reaches, ignored.
    pub out_of_window: u64,
    /// `stream.reassembly_overlap_different_data` event count.
    pub ev_overlap_different_data: u64,
    /// `stream.reassembly_seq_gap` event count.
    pub ev_seq_gap: u64,
}

/// Charge for one segment record (boundaries kept for overlap decisions), on top of its
/// payload bytes, so that floods of tiny segments hit the memcap too.
pub(crate) const SEGMENT_RECORD_COST: u64 = 32;

impl ReassemblyMemory {
    /// Suricata's default `stream.reassembly.memcap`.
    pub const DEFAULT_MEMCAP: u64 = 256 * 1024 * 1024;

    pub fn new(memcap: u64) -> Self {
        ReassemblyMemory { memcap, used: 0, peak: 0, counters: ReassemblyCounters::default() }
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
            ("tcp.segment_memcap_drop", c.segment_memcap_drop),
            ("tcp.stream_depth_reached", c.stream_depth_reached),
            ("tcp.reassembly_depth_bytes_dropped", c.depth_bytes_dropped),
            ("tcp.reassembly_gap", c.reassembly_gap),
            ("tcp.overlap", c.overlap),
            ("tcp.overlap_diff_data", c.overlap_diff_data),
            ("tcp.reassembly_old_segments", c.old_segments),
            ("tcp.reassembly_out_of_window", c.out_of_window),
            ("tcp.reassembly_memuse", self.used),
            ("stream.reassembly_overlap_different_data", c.ev_overlap_different_data),
            ("stream.reassembly_seq_gap", c.ev_seq_gap),
        ]
        .into_iter()
    }
}

impl Default for ReassemblyMemory {
    fn default() -> Self {
        ReassemblyMemory::new(Self::DEFAULT_MEMCAP)
    }
}
