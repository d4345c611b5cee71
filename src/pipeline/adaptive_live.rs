//! Adaptive fanout, live (`--fanout adaptive`): the controller that evens out the
//! workers' load by moving buckets of the eBPF fanout program's indirection table
//! (`crate::capture::afpacket::adaptive`), and the per-bucket cost accounting the workers
//! feed it.
//!
//! Every packet a worker inspects is charged to its bucket
//! ([`picket_core::flow::fanout_hash::fanout_bucket`], the same bucket the kernel's program
//! chose): packets and nanoseconds. Every `interval` the main thread's [`Rebalancer`]
//! takes the deltas of the bucket costs (a worker's load is the sum of its buckets'), and
//! when the
//! busiest worker is more than `threshold` above the mean it moves buckets (the costliest
//! that fit in half the gap first) from the busiest worker to the least busy one by
//! rewriting their table entries. After a move it waits one interval before judging
//! again: that interval still holds packets queued under the old table.
//!
//! TODO(flow hand-over): a moved bucket's flows start afresh on their new worker (their
//! state stays behind on the old one and times out there). The hand-over protocol (new
//! owner holds the bucket's packets, old owner drains its ring and exports the flows,
//! new owner imports them, then inspects what it held) waits for the core's
//! `Inspector::export_flows` / `import_flows`.

use crate::capture::afpacket::adaptive::FanoutTable;
use crate::counters::CounterSet;
use crate::flow::fanout_hash::FANOUT_BUCKETS;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default time between two looks at the workers' load.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);
/// Default imbalance (max / mean busy time, x100) above which buckets move.
pub const DEFAULT_THRESHOLD_PCT: u64 = 105;
/// An interval in which the workers were busy for less than this (in total) is not
/// judged: at idle, a few packets make any ratio.
const MIN_BUSY: Duration = Duration::from_micros(500);
/// At most this many buckets move per interval.
const MAX_MOVES: usize = 32;

/// Counter names (picket's own; the offline adaptive dispatch uses the same).
pub const BUCKETS_MOVED: &str = "dispatch.buckets_moved";
pub const FLOWS_HANDED_OVER: &str = "dispatch.flows_handed_over";
pub const IMBALANCE_BEFORE: &str = "dispatch.imbalance_before_pct";
pub const IMBALANCE_AFTER: &str = "dispatch.imbalance_after_pct";
pub const STASH_PACKETS: &str = "dispatch.stash_packets";
pub const STASH_OVERFLOW: &str = "dispatch.stash_overflow";
/// Intervals judged, and those that moved buckets.
pub const REBALANCES: &str = "dispatch.rebalances";
/// Table writes the kernel refused (the bucket stays where it was).
pub const MAP_ERRORS: &str = "dispatch.map_errors";

/// What one worker's packets cost per bucket, running totals the worker publishes once
/// per batch and the controller reads.
pub struct BucketLoad {
    packets: Vec<AtomicU64>,
    busy_ns: Vec<AtomicU64>,
}

impl Default for BucketLoad {
    fn default() -> Self {
        BucketLoad {
            packets: (0..FANOUT_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            busy_ns: (0..FANOUT_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// The worker's side: totals kept locally per packet, published per batch.
pub struct WorkerBuckets {
    packets: Vec<u64>,
    busy_ns: Vec<u64>,
    /// Buckets touched since the last publish, one bit each (publishing all of them per
    /// batch would be waste).
    dirty: [u64; FANOUT_BUCKETS / 64],
    /// Moving average of a packet's inspection time (1/64 per packet).
    mean_ns: u64,
}

/// A packet is charged at most 8 times the mean, and never capped below this.
const MIN_CAP_NS: u64 = 20_000;

impl Default for WorkerBuckets {
    fn default() -> Self {
        WorkerBuckets {
            packets: vec![0; FANOUT_BUCKETS],
            busy_ns: vec![0; FANOUT_BUCKETS],
            dirty: [0; FANOUT_BUCKETS / 64],
            mean_ns: 0,
        }
    }
}

impl WorkerBuckets {
    /// Charges one packet of `bucket` that took `ns` to inspect.
    pub fn record(&mut self, bucket: u16, ns: u64) {
        // A packet during which the thread was preempted would charge its bucket a whole
        // time slice: cap a packet at a multiple of the recent mean (or MIN_CAP_NS).
        let ns = ns.min((self.mean_ns * 8).max(MIN_CAP_NS));
        self.mean_ns = (self.mean_ns * 63 + ns) / 64;
        let b = bucket as usize % FANOUT_BUCKETS;
        self.dirty[b / 64] |= 1 << (b % 64);
        self.packets[b] += 1;
        self.busy_ns[b] += ns;
    }

    pub fn publish(&mut self, to: &BucketLoad) {
        for (word, bits) in self.dirty.iter_mut().enumerate() {
            while *bits != 0 {
                let b = word * 64 + bits.trailing_zeros() as usize;
                *bits &= *bits - 1;
                to.packets[b].store(self.packets[b], Ordering::Relaxed);
                to.busy_ns[b].store(self.busy_ns[b], Ordering::Relaxed);
            }
        }
    }
}

/// The controller's counters, shared with the stats outputs.
#[derive(Default)]
pub struct AdaptiveCounters {
    pub buckets_moved: AtomicU64,
    pub flows_handed_over: AtomicU64,
    pub imbalance_before_pct: AtomicU64,
    pub imbalance_after_pct: AtomicU64,
    pub stash_packets: AtomicU64,
    pub stash_overflow: AtomicU64,
    pub rebalances: AtomicU64,
    pub map_errors: AtomicU64,
}

impl AdaptiveCounters {
    pub fn add_to(&self, set: &mut CounterSet) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        set.add(BUCKETS_MOVED, get(&self.buckets_moved));
        set.add(FLOWS_HANDED_OVER, get(&self.flows_handed_over));
        set.add(IMBALANCE_BEFORE, get(&self.imbalance_before_pct));
        set.add(IMBALANCE_AFTER, get(&self.imbalance_after_pct));
        set.add(STASH_PACKETS, get(&self.stash_packets));
        set.add(STASH_OVERFLOW, get(&self.stash_overflow));
        set.add(REBALANCES, get(&self.rebalances));
        set.add(MAP_ERRORS, get(&self.map_errors));
    }

    /// One line for the exit summary: buckets moved and imbalance before/after.
    pub fn summary(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let ratio = |pct: u64| if pct == 0 { "-".to_string() } else { format!("{:.2}", pct as f64 / 100.0) };
        format!(
            "dispatch: cluster_adaptive, {} buckets moved in {} rebalances, {} flows handed over, \
             imbalance (max/mean busy) before {} after {}",
            get(&self.buckets_moved),
            get(&self.rebalances),
            get(&self.flows_handed_over),
            ratio(get(&self.imbalance_before_pct)),
            ratio(get(&self.imbalance_after_pct)),
        )
    }
}

/// What the workers and the controller share for one run.
pub struct AdaptiveShared {
    pub loads: Vec<BucketLoad>,
    pub counters: Arc<AdaptiveCounters>,
}

impl AdaptiveShared {
    pub fn new(workers: usize) -> Arc<AdaptiveShared> {
        Arc::new(AdaptiveShared {
            loads: (0..workers).map(|_| BucketLoad::default()).collect(),
            counters: Arc::new(AdaptiveCounters::default()),
        })
    }
}

/// Adaptive fanout for a live run: what the workers feed and the controller that reads it.
pub struct LiveAdaptive {
    pub shared: Arc<AdaptiveShared>,
    pub rebalancer: std::sync::Mutex<Rebalancer>,
}

impl LiveAdaptive {
    pub fn new(table: FanoutTable, interval: Duration, threshold_pct: u64) -> LiveAdaptive {
        let shared = AdaptiveShared::new(table.workers());
        let rebalancer = Rebalancer::new(table, Arc::clone(&shared), interval, threshold_pct);
        LiveAdaptive { shared, rebalancer: std::sync::Mutex::new(rebalancer) }
    }

    /// A source of the controller's counters for the stats outputs.
    pub fn counter_source(&self) -> crate::counters::CounterSource {
        let counters = Arc::clone(&self.shared.counters);
        Box::new(move |set: &mut CounterSet| counters.add_to(set))
    }
}

/// One bucket move: `bucket` goes from worker `from` to worker `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub bucket: u16,
    pub from: u16,
    pub to: u16,
}

/// Max over mean of `busy`, x100 (100 = even); 0 when nothing was busy.
pub fn imbalance_pct(busy: &[u64]) -> u64 {
    let total: u64 = busy.iter().sum();
    if total == 0 || busy.is_empty() {
        return 0;
    }
    let max = busy.iter().copied().max().unwrap_or(0);
    ((max as u128 * 100 * busy.len() as u128 + total as u128 / 2) / total as u128) as u64
}

/// Plans the moves of one interval: from the busiest worker to the least busy one, the
/// costliest buckets that fit in half the gap between them (a bucket bigger than that
/// would only move the imbalance to the other side). `busy[w]` is worker w's busy time,
/// `cost[b]` bucket b's, `owners[b]` its worker.
///
/// Local stand-in for the shared planner (`crate::dispatch::adaptive`) while that is
/// written; same inputs and output.
pub fn plan_moves(busy: &[u64], cost: &[u64], owners: &[u16], threshold_pct: u64) -> Vec<Move> {
    if busy.len() < 2 || imbalance_pct(busy) <= threshold_pct {
        return Vec::new();
    }
    let (hot, _) = busy.iter().enumerate().max_by_key(|(_, b)| **b).unwrap_or((0, &0));
    let (cold, _) = busy.iter().enumerate().min_by_key(|(_, b)| **b).unwrap_or((0, &0));
    let mut room = (busy[hot] - busy[cold]) / 2;
    let mut candidates: Vec<usize> =
        (0..owners.len().min(cost.len())).filter(|&b| owners[b] as usize == hot && cost[b] > 0).collect();
    candidates.sort_by_key(|&b| std::cmp::Reverse(cost[b]));
    let mut moves = Vec::new();
    for b in candidates {
        if moves.len() == MAX_MOVES {
            break;
        }
        if cost[b] <= room {
            room -= cost[b];
            moves.push(Move { bucket: b as u16, from: hot as u16, to: cold as u16 });
        }
    }
    moves
}

/// The controller, run from the live main thread's loop ([`Rebalancer::poll`]).
pub struct Rebalancer {
    table: FanoutTable,
    shared: Arc<AdaptiveShared>,
    interval: Duration,
    threshold_pct: u64,
    last: Instant,
    last_cost: Vec<Vec<u64>>,
    /// The previous interval moved buckets: the next one is not judged.
    settling: bool,
    /// Per bucket, the moving average of its cost per interval.
    smooth_cost: Vec<u64>,
    /// Per worker, inspection time until the first move, and since the last one.
    before: Vec<u64>,
    since_move: Vec<u64>,
    /// Moving average of an interval's total inspection time.
    typical: u64,
}

impl Rebalancer {
    pub fn new(table: FanoutTable, shared: Arc<AdaptiveShared>, interval: Duration, threshold_pct: u64) -> Self {
        let workers = shared.loads.len();
        Rebalancer {
            table,
            shared,
            interval,
            threshold_pct,
            last: Instant::now(),
            last_cost: vec![vec![0; FANOUT_BUCKETS]; workers],
            settling: false,
            smooth_cost: vec![0; FANOUT_BUCKETS],
            before: vec![0; workers],
            since_move: vec![0; workers],
            typical: 0,
        }
    }

    /// When the interval is over: measures, and moves buckets if the load is uneven.
    ///
    /// A worker's load is the time it spent inspecting packets (the sum of its bucket
    /// costs): the rest of its busy time (reading the ring, publishing counters) comes per
    /// batch, not per packet, and does not move with a bucket.
    pub fn poll(&mut self) {
        if self.last.elapsed() < self.interval {
            return;
        }
        self.last = Instant::now();
        let workers = self.shared.loads.len();
        let mut busy = vec![0u64; workers];
        let mut cost = vec![0u64; FANOUT_BUCKETS];
        for (w, (load, last_cost)) in self.shared.loads.iter().zip(&mut self.last_cost).enumerate() {
            for (b, last) in last_cost.iter_mut().enumerate() {
                let now = load.busy_ns[b].load(Ordering::Relaxed);
                let delta = now.saturating_sub(*last);
                *last = now;
                busy[w] += delta;
                // Only the owner's share is the bucket's cost: packets queued before a
                // move still show up at the old owner for a moment.
                if self.table.owner(b) as usize == w {
                    cost[b] += delta;
                }
            }
        }
        // An interval much quieter than usual (traffic ending, a lull) is not judged: its
        // few packets make any ratio.
        let total: u64 = busy.iter().sum();
        let typical = self.typical;
        self.typical = (self.typical * 3 + total) / 4;
        if total < MIN_BUSY.as_nanos() as u64 || total < typical / 4 {
            return;
        }
        let counters = &self.shared.counters;
        // Before: the load as the hash alone spread it, until the first move. After: the
        // load since the last move (steady state once the table settled).
        let moved_yet = counters.buckets_moved.load(Ordering::Relaxed) > 0;
        if !moved_yet {
            self.before.iter_mut().zip(&busy).for_each(|(sum, b)| *sum += b);
        }
        self.since_move.iter_mut().zip(&busy).for_each(|(sum, b)| *sum += b);
        if moved_yet {
            counters.imbalance_after_pct.store(imbalance_pct(&self.since_move), Ordering::Relaxed);
        }
        // Decisions go by a moving average of the bucket costs (half the weight on this
        // interval): one interval of a few thousand packets on a shared machine is noisy.
        // A worker's load is what its buckets cost, so it moves with them.
        for (smooth, now) in self.smooth_cost.iter_mut().zip(&cost) {
            *smooth = (*smooth + now) / 2;
        }
        if std::mem::take(&mut self.settling) {
            return;
        }
        counters.rebalances.fetch_add(1, Ordering::Relaxed);
        let mut load = vec![0u64; workers];
        for (b, c) in self.smooth_cost.iter().enumerate() {
            load[self.table.owner(b) as usize % workers] += c;
        }
        let moves = plan_moves(&load, &self.smooth_cost, self.table.owners(), self.threshold_pct);
        if moves.is_empty() {
            return;
        }
        if !moved_yet {
            counters.imbalance_before_pct.store(imbalance_pct(&self.before), Ordering::Relaxed);
        }
        self.since_move.iter_mut().for_each(|sum| *sum = 0);
        for m in &moves {
            match self.table.assign(m.bucket as usize, m.to) {
                Ok(()) => counters.buckets_moved.fetch_add(1, Ordering::Relaxed),
                Err(_) => counters.map_errors.fetch_add(1, Ordering::Relaxed),
            };
        }
        self.settling = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imbalance_is_max_over_mean() {
        assert_eq!(imbalance_pct(&[100, 100]), 100);
        assert_eq!(imbalance_pct(&[150, 50]), 150);
        assert_eq!(imbalance_pct(&[0, 0]), 0);
        assert_eq!(imbalance_pct(&[300, 100, 100, 100]), 200);
    }

    #[test]
    fn planner_moves_what_fits_from_busiest_to_idlest() {
        // Worker 0 holds buckets 0..4 (costs 50, 30, 10, 10); worker 1 bucket 4 (cost 20).
        let owners = [0u16, 0, 0, 0, 1];
        let cost = [50u64, 30, 10, 10, 20];
        let busy = [100u64, 20];
        let moves = plan_moves(&busy, &cost, &owners, 110);
        // Half the gap is 40: bucket 0 (50) does not fit, 30 and one 10 do.
        assert_eq!(moves, vec![Move { bucket: 1, from: 0, to: 1 }, Move { bucket: 2, from: 0, to: 1 }], "{moves:?}");
        // Even enough: nothing moves.
        assert!(plan_moves(&[105, 100], &cost, &owners, 110).is_empty());
        // One worker: nothing to move to.
        assert!(plan_moves(&[100], &cost, &owners, 110).is_empty());
    }

    /// The controller on a real table (the kernel's map): worker 0 carries a heavy bucket
    /// and ten medium ones, worker 1 eleven light ones; light-enough buckets move to worker
    /// 1, the heavy one stays. Needs root and a build with the program; SKIPPED otherwise.
    #[test]
    fn rebalancer_moves_buckets_in_the_kernel_table() {
        use crate::capture::afpacket::adaptive::FanoutProgram;
        let (_program, table) = match FanoutProgram::load(2) {
            Ok(loaded) => loaded,
            Err(e) => {
                eprintln!("SKIPPED: {e}");
                return;
            }
        };
        let shared = AdaptiveShared::new(2);
        let mut rebalancer = Rebalancer::new(table, Arc::clone(&shared), Duration::ZERO, 105);
        let set = |w: usize, b: usize, ns: u64| shared.loads[w].busy_ns[b].store(ns, Ordering::Relaxed);
        // The table starts as bucket % 2: even buckets on worker 0, odd on worker 1.
        set(0, 0, 1_000_000);
        for b in (2..=20).step_by(2) {
            set(0, b, 100_000);
        }
        for b in (1..=21).step_by(2) {
            set(1, b, 50_000);
        }
        rebalancer.poll();
        let counters = &shared.counters;
        // 2 ms against 0.55 ms: max/mean 1.57. Half the (smoothed) gap fits 7 medium buckets.
        assert_eq!(counters.imbalance_before_pct.load(Ordering::Relaxed), 157);
        assert_eq!(counters.buckets_moved.load(Ordering::Relaxed), 7);
        let owners = rebalancer.table.owners();
        assert_eq!(owners[0], 0, "the heavy bucket is more than half the gap");
        assert_eq!((2..=20).step_by(2).filter(|&b| owners[b] == 1).count(), 7);
        // An interval without new work is not judged: nothing more moves.
        rebalancer.poll();
        assert_eq!(counters.buckets_moved.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn worker_buckets_publish_running_totals() {
        let load = BucketLoad::default();
        let mut mine = WorkerBuckets::default();
        mine.record(7, 100);
        mine.record(7, 50);
        mine.record(300, 1); // out of range wraps into the table
        mine.publish(&load);
        assert_eq!(load.packets[7].load(Ordering::Relaxed), 2);
        assert_eq!(load.busy_ns[7].load(Ordering::Relaxed), 150);
        assert_eq!(load.packets[300 % FANOUT_BUCKETS].load(Ordering::Relaxed), 1);
        mine.record(7, 10);
        mine.publish(&load);
        assert_eq!(load.busy_ns[7].load(Ordering::Relaxed), 160);
    }
}
