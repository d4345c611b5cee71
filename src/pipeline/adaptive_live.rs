//! Adaptive fanout, live (`--fanout adaptive`): the controller that evens out the
//! workers' load by moving buckets of the eBPF fanout program's indirection table
//! (`crate::capture::afpacket::adaptive`), and the live side of the flow hand-over.
//!
//! Every packet a worker inspects carries its bucket (`PacketMeta.bucket`, the bucket the
//! kernel's program chose, recomputed by [`picket_core::flow::fanout_hash`]) and is
//! charged to it in the shared [`LoadBoard`]. Every `threading.adaptive.interval-ms` the
//! main thread's [`LiveController`] reads the board through a [`LoadMeter`] and asks the
//! shared planner ([`crate::dispatch::adaptive::Rebalancer`], the same as offline) for
//! moves. A round of moves (bucket b: worker A -> B) goes:
//!
//! 1. B is told to expect b from A ([`Control::Expect`]) and acknowledges between two
//!    blocks; from then on it holds back (stashes, bounded) packets of b and goes on with
//!    its other buckets.
//! 2. The controller rewrites b's entry in the kernel table.
//! 3. A is told to give b ([`Control::Give`]) not before a grace period: the ring's block
//!    retire timeout plus 2 ms, so that every packet of b the kernel put in A's ring
//!    before the write is visible to A. A then inspects every frame still in its ring,
//!    exports b's flows and sends them to B (never waiting).
//! 4. B, once the parcel is in (checked between blocks), or when it has waited too long,
//!    its stash is full (`dispatch.stash_overflow`), a flow expiry is due, or it stops,
//!    imports the flows and inspects the stash, then goes on. While B waits, it reads the
//!    controller's messages and makes the gives of its own that fall due
//!    (`dispatch.early_gives`): A may be waiting for them in the middle of a block, and
//!    neither would go on otherwise.
//!
//! So a flow's state follows it: alerts that depend on earlier packets (stream
//! reassembly, flowbits, `flow:established`) are those of one worker per flow. Workers
//! that take part in no round never wait; a worker that fails sets the shared flag so
//! that no other waits for its parcel.

use super::handover::{self, LoadBoard, LoadMeter, WorkerHandover};
use crate::capture::afpacket::adaptive::FanoutTable;
use crate::counters::CounterSet;
use crate::dispatch::adaptive::{AdaptiveSettings, IndirectionTable, Rebalancer};
use crate::flow::fanout_hash::FANOUT_BUCKETS;
use crate::packet::BucketMoves;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `threading.adaptive.interval-ms` default live: 100 ms (the offline default) holds too
/// few packets at live rates to judge, and a round's hand-over lasts a block timeout.
pub const LIVE_INTERVAL: Duration = Duration::from_millis(200);
/// How long a worker holds packets of a bucket handed to it, past the giver's grace,
/// before it waits for the flows.
const SETTLE_AFTER: Duration = Duration::from_millis(50);
/// How long the controller waits for a receiver to acknowledge a round before it writes
/// the table anyway (a worker answers between two blocks, within a poll wait).
const ACK_WAIT: Duration = Duration::from_millis(500);

/// Counter names (picket's own; the offline adaptive dispatch uses the same).
pub const BUCKETS_MOVED: &str = "dispatch.buckets_moved";
pub const FLOWS_HANDED_OVER: &str = "dispatch.flows_handed_over";
pub const IMBALANCE_BEFORE: &str = "dispatch.imbalance_before_pct";
pub const IMBALANCE_AFTER: &str = "dispatch.imbalance_after_pct";
pub const STASH_PACKETS: &str = "dispatch.stash_packets";
pub const STASH_OVERFLOW: &str = "dispatch.stash_overflow";
/// Gives made while the giver waited for flows handed to it (see [`LiveHandover::give_while_waiting`]).
pub const EARLY_GIVES: &str = "dispatch.early_gives";
/// Intervals judged, and those that moved buckets.
pub const REBALANCES: &str = "dispatch.rebalances";
/// Table writes the kernel refused (the bucket stays where it was).
pub const MAP_ERRORS: &str = "dispatch.map_errors";

/// The controller's counters, shared with the stats outputs.
#[derive(Default)]
pub struct AdaptiveCounters {
    pub buckets_moved: AtomicU64,
    pub flows_handed_over: AtomicU64,
    pub imbalance_before_pct: AtomicU64,
    pub imbalance_after_pct: AtomicU64,
    pub stash_packets: AtomicU64,
    pub stash_overflow: AtomicU64,
    pub early_gives: AtomicU64,
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
        set.add(EARLY_GIVES, get(&self.early_gives));
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

/// A round of moves as a worker hears of it.
pub(super) enum Control {
    /// Hold back packets of the round's buckets coming to you; acknowledge.
    Expect(Arc<BucketMoves>),
    /// Give the flows of the round's buckets leaving you, not before the instant.
    Give(Arc<BucketMoves>, Instant),
}

/// A live worker's side of adaptive fanout: its hand-over, its control inbox, and what is
/// due.
pub(super) struct LiveHandover {
    pub h: WorkerHandover,
    control: Receiver<Control>,
    counters: Arc<AdaptiveCounters>,
    acked: Arc<AtomicU64>,
    /// Gives not due yet, in round order.
    gives: std::collections::VecDeque<(Instant, Arc<BucketMoves>)>,
    /// Expects taken from the inbox while waiting for flows, for the next
    /// [`take_control`](Self::take_control).
    expects: Vec<Arc<BucketMoves>>,
    /// When the flows expected must be adopted even if not all are in.
    settle_by: Option<Instant>,
    grace: Duration,
    /// Moving average of a packet's inspection time: a packet during which the thread was
    /// preempted is charged at most 8 times it.
    mean_ns: u64,
    reported: (u64, u64),
}

/// The workers' sides of adaptive fanout wired to each other, and what the controller
/// holds of them.
struct Wiring {
    workers: Vec<LiveHandover>,
    /// The controller's messages to each worker.
    controls: Vec<Sender<Control>>,
    /// The last round each worker acknowledged.
    acked: Vec<Arc<AtomicU64>>,
    board: Arc<LoadBoard>,
    failed: Arc<AtomicBool>,
}

impl Wiring {
    fn new(n: usize, counters: &Arc<AdaptiveCounters>, grace: Duration) -> Wiring {
        let board = LoadBoard::new(n);
        let failed = Arc::new(AtomicBool::new(false));
        let acked: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
        let (controls, inboxes): (Vec<_>, Vec<_>) = (0..n).map(|_| crossbeam_channel::unbounded()).unzip();
        let workers = handover::wire(n, &board, &failed)
            .into_iter()
            .zip(inboxes)
            .zip(&acked)
            .map(|((h, control), acked)| LiveHandover {
                h,
                control,
                counters: Arc::clone(counters),
                acked: Arc::clone(acked),
                gives: Default::default(),
                expects: Vec::new(),
                settle_by: None,
                grace,
                mean_ns: 0,
                reported: (0, 0),
            })
            .collect();
        Wiring { workers, controls, acked, board, failed }
    }
}

/// A packet is never capped below this.
const MIN_CAP_NS: u64 = 20_000;

impl LiveHandover {
    /// Charges one packet of `bucket` that took `ns` to inspect.
    pub fn charge(&mut self, bucket: u16, ns: u64) {
        let ns = ns.min((self.mean_ns * 8).max(MIN_CAP_NS));
        self.mean_ns = (self.mean_ns * 63 + ns) / 64;
        self.h.charge(bucket, ns);
    }

    /// Between blocks: takes the controller's messages. Expects are returned for the
    /// caller to apply after settling the previous round (see [`expect`](Self::expect)).
    pub fn take_control(&mut self) -> Vec<Arc<BucketMoves>> {
        self.read_control();
        std::mem::take(&mut self.expects)
    }

    /// Moves the controller's messages out of the inbox: gives to the queue of gives,
    /// expects aside for [`take_control`](Self::take_control).
    fn read_control(&mut self) {
        for msg in self.control.try_iter() {
            match msg {
                Control::Expect(moves) => self.expects.push(moves),
                Control::Give(moves, at) => self.gives.push_back((at, moves)),
            }
        }
    }

    /// Starts holding packets of the buckets coming here (the previous round settled).
    pub fn expect(&mut self, moves: &BucketMoves) {
        self.h.expect(moves);
        self.settle_by = Some(Instant::now() + self.grace + SETTLE_AFTER);
        self.acked.store(moves.round, Ordering::Release);
    }

    /// The next give that is due (all when `stopping`).
    pub fn due_give(&mut self, stopping: bool) -> Option<Arc<BucketMoves>> {
        let now = Instant::now();
        if self.gives.front().is_some_and(|(at, _)| stopping || now >= *at) {
            return self.gives.pop_front().map(|(_, m)| m);
        }
        None
    }

    /// Whether the flows expected should be adopted now: all are in, or it is time.
    pub fn should_settle(&mut self, stopping: bool) -> bool {
        if !self.h.pending() {
            return false;
        }
        stopping || self.settle_by.is_some_and(|t| Instant::now() >= t) || self.h.ready()
    }

    pub fn settled(&mut self) {
        self.settle_by = None;
    }

    /// A give this worker made while waiting for flows itself, from the middle of a
    /// block: frames of the bucket still in its ring meet no state here, but the peer
    /// that may be waiting for this give goes on.
    pub fn give_while_waiting(&mut self, inspector: &mut picket_core::inspect::Inspector) -> bool {
        // A give the controller sent after this worker began to wait is still in the inbox:
        // two workers each waiting for the other's give would otherwise never see theirs
        // (a live run that never ended, seen once in CI: both workers waiting for a parcel).
        self.read_control();
        let Some(round) = self.due_give(false) else { return false };
        self.h.give(&round, inspector);
        self.counters.early_gives.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Waits until every parcel expected here is in (or can never come), polling every
    /// `poll`. The peer this worker waits for may itself be waiting, in the middle of a
    /// block, for flows this worker owes it: gives falling due meanwhile go out, or the two
    /// would wait on each other for good.
    pub fn wait_for_flows(&mut self, inspector: &mut picket_core::inspect::Inspector, poll: Duration) {
        while self.h.pending() && !self.h.ready() {
            if !self.give_while_waiting(inspector) && !self.h.wait_parcel(poll) {
                break;
            }
        }
    }

    /// A full stash: the worker waits for the flows instead of holding more.
    pub fn overflowed(&self) {
        self.counters.stash_overflow.fetch_add(1, Ordering::Relaxed);
    }

    /// Per batch: costs to the board, hand-over totals to the counters.
    pub fn publish(&mut self) {
        self.h.publish();
        let (given, stashed) = (self.h.flows_given, self.h.stashed);
        let c = &self.counters;
        c.flows_handed_over.fetch_add(given - self.reported.0, Ordering::Relaxed);
        c.stash_packets.fetch_add(stashed - self.reported.1, Ordering::Relaxed);
        self.reported = (given, stashed);
    }
}

/// Adaptive fanout for a live run: the controller and the workers' sides, handed out at
/// start.
pub struct LiveAdaptive {
    pub counters: Arc<AdaptiveCounters>,
    pub(super) controller: Mutex<LiveController>,
    workers: Mutex<Vec<Option<LiveHandover>>>,
}

impl LiveAdaptive {
    /// `grace`: how long after a table write a packet may still show up in the old
    /// owner's ring (the capture's block retire timeout, plus a little).
    pub fn new(table: FanoutTable, settings: &AdaptiveSettings, grace: Duration) -> LiveAdaptive {
        let n = table.workers();
        let counters = Arc::new(AdaptiveCounters::default());
        let Wiring { workers, controls, acked, board, failed } = Wiring::new(n, &counters, grace);
        let workers = workers.into_iter().map(Some).collect();
        let mut mirror = IndirectionTable::new(n);
        for (b, &w) in table.owners().iter().enumerate() {
            mirror.set(b as u16, w as usize);
        }
        let controller = LiveController {
            meter: LoadMeter::live(board, settings.interval),
            planner: Rebalancer::new(settings),
            mirror,
            table,
            counters: Arc::clone(&counters),
            controls,
            acked,
            failed,
            grace,
            round: 0,
            settling: false,
            typical: 0,
        };
        LiveAdaptive { counters, controller: Mutex::new(controller), workers: Mutex::new(workers) }
    }

    /// Worker `i`'s side (once).
    pub(super) fn take_worker(&self, i: usize) -> Option<LiveHandover> {
        self.workers.lock().ok()?.get_mut(i)?.take()
    }

    /// A source of the controller's counters for the stats outputs.
    pub fn counter_source(&self) -> crate::counters::CounterSource {
        let counters = Arc::clone(&self.counters);
        Box::new(move |set: &mut CounterSet| counters.add_to(set))
    }
}

fn pct(ratio: Option<f64>) -> u64 {
    ratio.map_or(0, |r| (r * 100.0).round() as u64)
}

/// The controller, run from the live main thread's loop ([`LiveController::poll`]).
pub(super) struct LiveController {
    meter: LoadMeter,
    planner: Rebalancer,
    /// The planner's copy of the kernel table.
    mirror: IndirectionTable,
    table: FanoutTable,
    counters: Arc<AdaptiveCounters>,
    controls: Vec<Sender<Control>>,
    acked: Vec<Arc<AtomicU64>>,
    failed: Arc<AtomicBool>,
    grace: Duration,
    round: u64,
    /// The previous interval moved buckets: the next one is not judged (it still holds
    /// packets queued under the old table).
    settling: bool,
    /// Moving average of an interval's total load.
    typical: u64,
}

impl LiveController {
    /// When the interval is over: measures, and moves buckets (with their flows) if the
    /// load is uneven.
    pub fn poll(&mut self) {
        let Some(cost) = self.meter.poll() else { return };
        let workers = self.table.workers();
        // An interval much quieter than usual (traffic ending, a lull) is not judged: its
        // few packets make any ratio.
        let total: u64 = cost.iter().sum();
        let typical = self.typical;
        self.typical = (self.typical * 3 + total) / 4;
        if total < typical / 4 || std::mem::take(&mut self.settling) {
            return;
        }
        let moves = self.planner.plan(&mut self.mirror, workers, &cost[..FANOUT_BUCKETS.min(cost.len())]);
        let stats = self.planner.stats;
        let c = &self.counters;
        c.rebalances.store(stats.intervals, Ordering::Relaxed);
        c.imbalance_before_pct.store(pct(stats.imbalance_before), Ordering::Relaxed);
        c.imbalance_after_pct.store(pct(stats.imbalance_after), Ordering::Relaxed);
        if moves.is_empty() {
            return;
        }
        self.round += 1;
        let round = Arc::new(handover::marker(self.round, 0, &moves));
        let mut receivers: Vec<usize> = moves.iter().map(|m| m.to).collect();
        let mut givers: Vec<usize> = moves.iter().map(|m| m.from).collect();
        receivers.sort_unstable();
        receivers.dedup();
        givers.sort_unstable();
        givers.dedup();
        // 1. Receivers hold the buckets' packets before any can reach them.
        for &r in &receivers {
            let _ = self.controls[r].send(Control::Expect(Arc::clone(&round)));
        }
        let deadline = Instant::now() + ACK_WAIT;
        while receivers.iter().any(|&r| self.acked[r].load(Ordering::Acquire) < self.round)
            && Instant::now() < deadline
            && !self.failed.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        // 2. The kernel table.
        for m in &moves {
            match self.table.assign(m.bucket as usize, m.to as u16) {
                Ok(()) => c.buckets_moved.fetch_add(1, Ordering::Relaxed),
                Err(_) => c.map_errors.fetch_add(1, Ordering::Relaxed),
            };
        }
        // 3. Givers export once what the kernel queued under the old table is in view.
        let at = Instant::now() + self.grace;
        for &g in &givers {
            let _ = self.controls[g].send(Control::Give(Arc::clone(&round), at));
        }
        self.settling = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round on the kernel's real table: worker 0 carries ten busy buckets, worker 1 one
    /// light one. The receiver is told to expect before the table changes (the controller
    /// waits for its acknowledgement), then holds the moved buckets; the giver is told to
    /// give the same round. Needs root and a build with the program; SKIPPED otherwise.
    #[test]
    fn a_round_expects_then_moves_in_the_kernel_table_then_gives() {
        use crate::capture::afpacket::adaptive::FanoutProgram;
        let (_program, table) = match FanoutProgram::load(2) {
            Ok(loaded) => loaded,
            Err(e) => {
                eprintln!("SKIPPED: {e}");
                return;
            }
        };
        let settings = AdaptiveSettings { interval: Duration::ZERO, threshold: 1.05, max_moves: 8 };
        let adaptive = LiveAdaptive::new(table, &settings, Duration::from_millis(1));
        let (mut w0, mut w1) = (adaptive.take_worker(0).unwrap(), adaptive.take_worker(1).unwrap());
        assert!(adaptive.take_worker(0).is_none(), "a worker's side is handed out once");
        // The table starts as bucket % 2: even buckets on worker 0, odd on worker 1.
        for b in (2..=20).step_by(2) {
            (0..100).for_each(|_| w0.charge(b, 10_000));
        }
        (0..50).for_each(|_| w1.charge(1, 10_000));
        w0.publish();
        w1.publish();
        let receiver = std::thread::spawn(move || loop {
            if let Some(round) = w1.take_control().pop() {
                w1.expect(&round);
                return (w1, round);
            }
            std::thread::sleep(Duration::from_millis(1));
        });
        adaptive.controller.lock().unwrap().poll();
        let (w1, round) = receiver.join().unwrap();
        let moved = adaptive.counters.buckets_moved.load(Ordering::Relaxed);
        assert!(moved > 0 && moved as usize == round.moves.len(), "{moved} {:?}", round.moves);
        let controller = adaptive.controller.lock().unwrap();
        for &(b, from, to) in &round.moves {
            assert_eq!((from, to), (0, 1));
            assert_eq!(controller.table.owner(b as usize), 1, "bucket {b} moved in the kernel");
            assert!(w1.h.holds(b), "the receiver holds bucket {b}");
        }
        assert!(!w1.h.holds(1), "its own buckets are not held");
        assert!(adaptive.counters.imbalance_before_pct.load(Ordering::Relaxed) > 130);
        w0.take_control();
        let give = w0.due_give(true).expect("the giver is told");
        assert_eq!(give.moves, round.moves);
    }

    /// Two workers that each wait for the flows the other owes them, each one's give
    /// reaching its inbox only after it began to wait, both go on: they read their inbox
    /// while waiting (a live run once never ended, both workers waiting for a parcel).
    #[test]
    fn workers_waiting_for_each_other_make_the_gives_sent_meanwhile() {
        use crate::dispatch::adaptive::BucketMove;
        use picket_core::inspect::{InspectSettings, Inspector};
        let counters = Arc::new(AdaptiveCounters::default());
        let wiring = Wiring::new(2, &counters, Duration::ZERO);
        let moves = [BucketMove { bucket: 1, from: 1, to: 0 }, BucketMove { bucket: 2, from: 0, to: 1 }];
        let round = Arc::new(handover::marker(1, 0, &moves));
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let all_waiting = Arc::new(std::sync::Barrier::new(3));
        for mut worker in wiring.workers {
            worker.expect(&round);
            let (done_tx, all_waiting) = (done_tx.clone(), Arc::clone(&all_waiting));
            std::thread::spawn(move || {
                let settings = InspectSettings::from_engine(&Default::default(), 2, false);
                let mut inspector = Inspector::new(&settings);
                all_waiting.wait();
                worker.wait_for_flows(&mut inspector, Duration::from_millis(2));
                let _ = done_tx.send(worker.h.ready());
                // Then on with its loop, where gives still due go out between blocks (the
                // peer may still wait for this one's).
                for _ in 0..300 {
                    worker.take_control();
                    while let Some(round) = worker.due_give(true) {
                        worker.h.give(&round, &mut inspector);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        all_waiting.wait();
        std::thread::sleep(Duration::from_millis(20));
        for control in &wiring.controls {
            control.send(Control::Give(Arc::clone(&round), Instant::now())).unwrap();
        }
        for _ in 0..2 {
            let ready = done_rx.recv_timeout(Duration::from_secs(10)).expect("a worker still waits for its peer");
            assert!(ready, "its flows are in");
        }
        assert!(counters.early_gives.load(Ordering::Relaxed) >= 1, "a give made while waiting");
    }
}
