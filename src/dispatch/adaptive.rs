//! Adaptive dispatch: the symmetric flow hash picks one of [`BUCKETS`] buckets, and an
//! indirection table gives each bucket its worker. A controller measures how long each
//! worker was busy over short intervals and what each bucket cost, and when the busiest
//! worker is loaded past [`Rebalancer::threshold`] times the mean it moves buckets from the
//! busiest worker to the least busy one, the bucket whose cost best halves their gap first.
//!
//! Moving a bucket moves its flows with it: the worker that had the bucket exports the
//! bucket's flows after its last packet of the bucket, and the worker that gets the bucket
//! adopts them before its first packet of the bucket (see `pipeline::handover`), so the
//! alerts and records are those of `flow` dispatch.

use super::DispatchPolicy;
use crate::packet::LinkType;

/// Buckets of the indirection table: the flow hash's top 8 bits.
pub const BUCKETS: usize = 256;

/// The bucket of a 32-bit flow hash.
pub fn bucket_of(hash: u32) -> u16 {
    (hash >> 24) as u16
}

/// Which worker each bucket goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndirectionTable {
    owner: Vec<u16>,
}

impl IndirectionTable {
    /// Contiguous runs of buckets per worker: the same split as `flow` dispatch (for a
    /// worker count that divides [`BUCKETS`]), so adaptive starts where flow dispatch is.
    pub fn new(workers: usize) -> Self {
        let n = workers.clamp(1, BUCKETS);
        IndirectionTable { owner: (0..BUCKETS).map(|b| (b * n / BUCKETS) as u16).collect() }
    }

    pub fn worker(&self, bucket: u16) -> usize {
        self.owner[bucket as usize % BUCKETS] as usize
    }

    pub fn set(&mut self, bucket: u16, worker: usize) {
        self.owner[bucket as usize % BUCKETS] = worker as u16;
    }

    /// Buckets per worker.
    pub fn counts(&self, workers: usize) -> Vec<usize> {
        let mut counts = vec![0; workers];
        for &w in &self.owner {
            if let Some(c) = counts.get_mut(w as usize) {
                *c += 1;
            }
        }
        counts
    }
}

/// How the controller works (YAML `threading.adaptive.*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveSettings {
    /// `interval-ms`: how often load is measured and buckets may move.
    pub interval: std::time::Duration,
    /// `threshold`: buckets move when the busiest worker's load exceeds the mean by this
    /// factor.
    pub threshold: f64,
    /// `max-moves`: buckets moved at most per interval.
    pub max_moves: usize,
}

impl Default for AdaptiveSettings {
    fn default() -> Self {
        AdaptiveSettings { interval: std::time::Duration::from_millis(100), threshold: 1.05, max_moves: 8 }
    }
}

/// One bucket changing worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketMove {
    pub bucket: u16,
    pub from: usize,
    pub to: usize,
}

/// Max over mean of the workers' busy time; 1.0 is perfectly even.
pub fn imbalance(busy: &[u64]) -> f64 {
    let total: u64 = busy.iter().sum();
    if busy.is_empty() || total == 0 {
        return 1.0;
    }
    let mean = total as f64 / busy.len() as f64;
    *busy.iter().max().unwrap_or(&0) as f64 / mean
}

/// What the controller did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RebalanceStats {
    /// Intervals measured (with enough work in them to judge).
    pub intervals: u64,
    /// Intervals in which buckets moved.
    pub rounds: u64,
    pub buckets_moved: u64,
    /// Imbalance of the interval that triggered the first move (or of the first interval
    /// when nothing ever moved).
    pub imbalance_before: Option<f64>,
    /// Imbalance of the latest interval measured.
    pub imbalance_after: Option<f64>,
}

/// Decides bucket moves from measured load; owns no threads and no clock (the caller
/// measures and applies), so it is the same offline and live.
#[derive(Clone, Debug)]
pub struct Rebalancer {
    /// Moves happen when the busiest worker's busy time exceeds the mean by this factor.
    pub threshold: f64,
    /// Most buckets moved in one interval.
    pub max_moves: usize,
    /// Intervals a moved bucket stays where it went (against moving it back and forth).
    pub cooldown: u32,
    /// Intervals with less busy time than this (nanoseconds, all workers) are not judged.
    pub min_busy_ns: u64,
    resting: Vec<u32>,
    pub stats: RebalanceStats,
}

impl Default for Rebalancer {
    fn default() -> Self {
        Rebalancer::new(&AdaptiveSettings::default())
    }
}

impl Rebalancer {
    pub fn new(settings: &AdaptiveSettings) -> Self {
        Rebalancer {
            threshold: settings.threshold,
            max_moves: settings.max_moves,
            cooldown: 4,
            min_busy_ns: 2_000_000,
            resting: vec![0; BUCKETS],
            stats: RebalanceStats::default(),
        }
    }

    /// One interval: `cost[b]` is the work bucket b brought in it (nanoseconds); a worker's
    /// load is the sum over its buckets. Returns the moves to make, already applied to
    /// `table`.
    pub fn plan(&mut self, table: &mut IndirectionTable, workers: usize, cost: &[u64]) -> Vec<BucketMove> {
        for r in &mut self.resting {
            *r = r.saturating_sub(1);
        }
        let mut busy = vec![0u64; workers];
        for (b, &c) in cost.iter().enumerate().take(BUCKETS) {
            if let Some(l) = busy.get_mut(table.worker(b as u16)) {
                *l += c;
            }
        }
        if workers < 2 || busy.iter().sum::<u64>() < self.min_busy_ns {
            return Vec::new();
        }
        let measured = imbalance(&busy);
        self.stats.intervals += 1;
        self.stats.imbalance_after = Some(measured);
        if measured <= self.threshold {
            self.stats.imbalance_before.get_or_insert(measured);
            return Vec::new();
        }
        let mut load = busy;
        let mut moves = Vec::new();
        while moves.len() < self.max_moves {
            let hi = (0..workers).max_by_key(|&w| (load[w], std::cmp::Reverse(w))).unwrap_or(0);
            let lo = (0..workers).min_by_key(|&w| (load[w], w)).unwrap_or(0);
            let gap = load[hi].saturating_sub(load[lo]);
            let mean = load.iter().sum::<u64>() as f64 / workers as f64;
            if hi == lo || (load[hi] as f64) <= mean * self.threshold {
                break;
            }
            // The bucket whose cost is nearest half the gap (any cost below the gap lowers
            // the pair's maximum).
            let best = (0..BUCKETS)
                .filter(|&b| table.worker(b as u16) == hi && self.resting[b] == 0)
                .filter(|&b| cost[b] > 0 && cost[b] < gap)
                .min_by_key(|&b| (cost[b] as i128 - (gap / 2) as i128).unsigned_abs());
            let Some(b) = best else { break };
            table.set(b as u16, lo);
            self.resting[b] = self.cooldown;
            load[hi] -= cost[b];
            load[lo] += cost[b];
            moves.push(BucketMove { bucket: b as u16, from: hi, to: lo });
        }
        if !moves.is_empty() {
            self.stats.imbalance_before.get_or_insert(measured);
            self.stats.rounds += 1;
            self.stats.buckets_moved += moves.len() as u64;
        }
        moves
    }
}

/// `--dispatch adaptive`: the flow hash through the indirection table.
pub struct Adaptive {
    pub table: IndirectionTable,
    hash: super::FlowHash,
}

impl Adaptive {
    pub fn new(workers: usize, hash: super::FlowHash) -> Self {
        Adaptive { table: IndirectionTable::new(workers), hash }
    }
}

impl DispatchPolicy for Adaptive {
    fn pick(&mut self, link: LinkType, data: &[u8], workers: usize) -> usize {
        self.pick_bucket(link, data, workers).0
    }

    fn pick_bucket(&mut self, link: LinkType, data: &[u8], workers: usize) -> (usize, u16) {
        let bucket = bucket_of(self.hash.hash(link, data));
        (self.table.worker(bucket).min(workers.saturating_sub(1)), bucket)
    }

    fn table(&mut self) -> Option<&mut IndirectionTable> {
        Some(&mut self.table)
    }

    fn name(&self) -> &'static str {
        "adaptive"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_starts_as_flow_dispatch_splits() {
        let t = IndirectionTable::new(4);
        assert_eq!(t.counts(4), vec![64; 4]);
        for hash in [0u32, 0x3fff_ffff, 0x4000_0000, 0x9abc_def0, u32::MAX] {
            let flow = ((hash as u64 * 4) >> 32) as usize;
            assert_eq!(t.worker(bucket_of(hash)), flow, "hash {hash:#x}");
        }
    }

    #[test]
    fn even_load_moves_nothing() {
        let mut r = Rebalancer::default();
        let mut t = IndirectionTable::new(2);
        let cost = vec![100_000; BUCKETS];
        assert!(r.plan(&mut t, 2, &cost).is_empty());
        assert_eq!(t, IndirectionTable::new(2));
        assert_eq!(r.stats.buckets_moved, 0);
    }

    #[test]
    fn a_hot_bucket_moves_to_the_idle_worker_and_evens_the_load() {
        let mut r = Rebalancer::default();
        let mut t = IndirectionTable::new(2);
        // Worker 0 owns buckets 0..128: one costs 6 ms, three 2 ms; worker 1 has 2 ms total.
        let mut cost = vec![0u64; BUCKETS];
        cost[3] = 6_000_000;
        cost[10] = 2_000_000;
        cost[11] = 2_000_000;
        cost[12] = 2_000_000;
        cost[200] = 2_000_000;
        let busy = [12_000_000, 2_000_000];
        let moves = r.plan(&mut t, 2, &cost);
        assert!(!moves.is_empty());
        let mut load = busy;
        for m in &moves {
            assert_eq!((m.from, m.to), (0, 1));
            assert_eq!(t.worker(m.bucket), 1);
            load[0] -= cost[m.bucket as usize];
            load[1] += cost[m.bucket as usize];
        }
        // 14 ms over two workers in steps of 2 ms: 8/6 is the best split (1.14).
        assert!(imbalance(&load) <= 1.15, "{load:?} after {moves:?}");
        assert_eq!(r.stats.buckets_moved, moves.len() as u64);
        assert!(r.stats.imbalance_before.unwrap() > 1.7);
    }

    #[test]
    fn a_moved_bucket_rests_before_moving_again() {
        let mut r = Rebalancer { max_moves: 1, ..Rebalancer::default() };
        let mut t = IndirectionTable::new(2);
        let mut cost = vec![0u64; BUCKETS];
        cost[5] = 4_000_000;
        cost[6] = 4_000_000;
        cost[130] = 1_000_000;
        let first = r.plan(&mut t, 2, &cost);
        assert_eq!(first, vec![BucketMove { bucket: 5, from: 0, to: 1 }]);
        // Bucket 5 got heavier and worker 1 is now the busy one: 5 must stay put a while.
        cost[5] = 8_000_000;
        let second = r.plan(&mut t, 2, &cost);
        assert!(second.iter().all(|m| m.bucket != 5), "{second:?}");
        assert_eq!(t.worker(5), 1);
    }

    #[test]
    fn a_bucket_costing_more_than_the_gap_is_not_moved() {
        let mut r = Rebalancer::default();
        let mut t = IndirectionTable::new(2);
        let mut cost = vec![0u64; BUCKETS];
        cost[1] = 9_000_000; // a single heavy flow: moving it would only swap the imbalance
        cost[2] = 1_000_000;
        cost[200] = 4_000_000;
        let moves = r.plan(&mut t, 2, &cost);
        assert_eq!(moves, vec![BucketMove { bucket: 2, from: 0, to: 1 }]);
    }
}
