//! Adaptive dispatch between threads: what workers publish about their load, and how they
//! pass flows to each other when the controller moves a bucket.
//!
//! Load: each worker adds its busy time and the time spent on each bucket's packets to its
//! row of the [`LoadBoard`] (relaxed atomics, written by that worker only); the controller
//! reads the rows every interval and diffs them.
//!
//! Hand-over: the dispatcher puts the round's moves ([`BucketMoves`]) on the next batch of
//! every worker involved. A worker giving buckets away exports their flows after that
//! batch and sends them to the receiving worker's inbox. A worker receiving buckets goes on
//! with its other packets and holds back (stashes) those of the new buckets until the
//! givers' flows are in; it waits for them only when it must: before anything that expires
//! flows (a new capture second, a clock tick), when its stash is full, before the next
//! round, and at the end. Its output is held meanwhile and put back in capture order, so
//! the merged eve.json is that of `flow` dispatch. Exports never wait, so a worker that
//! both gives and receives cannot deadlock.

use crate::dispatch::adaptive::{BucketMove, BUCKETS};
use crate::inspect::{FlowHandover, Inspector};
use crate::packet::{BucketMoves, PacketBatch, PacketRef};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use picket_core::inspect::EventSink;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One worker's published load, cumulative: time spent on and packets processed of each
/// bucket.
pub(super) struct WorkerLoad {
    bucket_ns: Vec<AtomicU64>,
    bucket_pkts: Vec<AtomicU64>,
}

/// Every worker's load, for the controller.
pub(super) struct LoadBoard {
    rows: Vec<WorkerLoad>,
}

impl LoadBoard {
    pub fn new(workers: usize) -> Arc<Self> {
        let row = || (0..BUCKETS).map(|_| AtomicU64::new(0)).collect();
        Arc::new(LoadBoard {
            rows: (0..workers).map(|_| WorkerLoad { bucket_ns: row(), bucket_pkts: row() }).collect(),
        })
    }

    /// Cumulative (time, packets) per bucket, summed over workers.
    fn read(&self) -> (Vec<u64>, Vec<u64>) {
        let (mut ns, mut pkts) = (vec![0u64; BUCKETS], vec![0u64; BUCKETS]);
        for row in &self.rows {
            for b in 0..BUCKETS {
                ns[b] += row.bucket_ns[b].load(Ordering::Relaxed);
                pkts[b] += row.bucket_pkts[b].load(Ordering::Relaxed);
            }
        }
        (ns, pkts)
    }
}

/// The controller's measure of load. Busy time alone misleads: a worker waiting for
/// flows handed to it, or behind on its ring, has done less in an interval than it was
/// given. So a bucket's load in an interval is the packets dispatched to it times what a
/// packet of it has been costing the workers (a moving average), smoothed over intervals.
pub(super) struct LoadMeter {
    board: Arc<LoadBoard>,
    last: (Vec<u64>, Vec<u64>),
    last_at: Instant,
    pub interval: Duration,
    /// Packets dispatched per bucket since the last interval.
    pub dispatched: Vec<u64>,
    /// Nanoseconds per packet, per bucket (0: none measured yet).
    per_packet: Vec<f64>,
    /// Smoothed load per bucket.
    load: Vec<f64>,
    /// Live capture: the kernel dispatches, so what the workers did is what was
    /// dispatched (the packets per bucket come from the board, not from [`count`](Self::count)).
    counts_done: bool,
}

impl LoadMeter {
    pub fn new(board: Arc<LoadBoard>, interval: Duration) -> Self {
        let last = board.read();
        LoadMeter {
            board,
            last,
            last_at: Instant::now(),
            interval,
            dispatched: vec![0; BUCKETS],
            per_packet: vec![0.0; BUCKETS],
            load: vec![0.0; BUCKETS],
            counts_done: false,
        }
    }

    /// A meter for live capture, where no dispatcher counts packets (see `counts_done`).
    pub fn live(board: Arc<LoadBoard>, interval: Duration) -> Self {
        LoadMeter { counts_done: true, ..LoadMeter::new(board, interval) }
    }

    /// One packet went to `bucket`.
    #[inline]
    pub fn count(&mut self, bucket: u16) {
        self.dispatched[bucket as usize % BUCKETS] += 1;
    }

    /// The load per bucket (nanoseconds of work per interval) when an interval ended.
    pub fn poll(&mut self) -> Option<Vec<u64>> {
        if self.last_at.elapsed() < self.interval {
            return None;
        }
        self.last_at = Instant::now();
        let now = self.board.read();
        let (mut spent, mut done) = (0u64, 0u64);
        for b in 0..BUCKETS {
            let ns = now.0[b].saturating_sub(self.last.0[b]);
            let pkts = now.1[b].saturating_sub(self.last.1[b]);
            spent += ns;
            done += pkts;
            if self.counts_done {
                self.dispatched[b] = pkts;
            }
            if pkts > 0 {
                let sample = ns as f64 / pkts as f64;
                let avg = &mut self.per_packet[b];
                *avg = if *avg == 0.0 { sample } else { 0.7 * *avg + 0.3 * sample };
            }
        }
        self.last = now;
        // A bucket not measured yet costs what the average packet did.
        let fallback = if done > 0 { spent as f64 / done as f64 } else { 1000.0 };
        for b in 0..BUCKETS {
            let per_packet = if self.per_packet[b] > 0.0 { self.per_packet[b] } else { fallback };
            let fresh = std::mem::take(&mut self.dispatched[b]) as f64 * per_packet;
            self.load[b] = 0.5 * self.load[b] + 0.5 * fresh;
        }
        Some(self.load.iter().map(|&l| l as u64).collect())
    }
}

/// The round's moves as the marker the batches carry.
pub(super) fn marker(round: u64, after: u64, moves: &[BucketMove]) -> BucketMoves {
    BucketMoves { round, after, moves: moves.iter().map(|m| (m.bucket, m.from as u16, m.to as u16)).collect() }
}

/// Flows in transit: (round, giving worker, flows).
type Parcel = (u64, usize, FlowHandover);

/// Packets a worker holds back at most while flows handed to it are on their way; past
/// this it waits for them.
const STASH_PACKETS: usize = 4096;

/// Buckets a worker was given, waiting for their flows.
struct Incoming {
    round: u64,
    after: u64,
    givers: Vec<usize>,
    held: [bool; BUCKETS],
}

/// A worker's side of adaptive dispatch.
pub(super) struct WorkerHandover {
    index: usize,
    board: Arc<LoadBoard>,
    /// Cost per bucket not yet published.
    pending_ns: Vec<u64>,
    pending_pkts: Vec<u64>,
    touched: Vec<u16>,
    peers: Vec<Sender<Parcel>>,
    inbox: Receiver<Parcel>,
    /// Parcels of a later round that came before this worker reached it.
    early: Vec<Parcel>,
    /// A worker failed: do not wait for parcels that may never come.
    failed: Arc<AtomicBool>,
    /// Buckets given to this worker whose flows have not been adopted yet.
    incoming: Option<Incoming>,
    /// Packets of those buckets, held back until their flows are here.
    stash: PacketBatch,
    /// Packets held back over the run.
    pub stashed: u64,
    pub flows_given: u64,
    pub flows_taken: u64,
    pub waited: Duration,
}

/// One [`WorkerHandover`] per worker, wired to each other.
pub(super) fn wire(workers: usize, board: &Arc<LoadBoard>, failed: &Arc<AtomicBool>) -> Vec<WorkerHandover> {
    let (senders, inboxes): (Vec<_>, Vec<_>) = (0..workers).map(|_| crossbeam_channel::unbounded()).unzip();
    inboxes
        .into_iter()
        .enumerate()
        .map(|(index, inbox)| WorkerHandover {
            index,
            board: board.clone(),
            pending_ns: vec![0; BUCKETS],
            pending_pkts: vec![0; BUCKETS],
            touched: Vec::new(),
            peers: senders.clone(),
            inbox,
            early: Vec::new(),
            failed: failed.clone(),
            incoming: None,
            stash: PacketBatch::default(),
            stashed: 0,
            flows_given: 0,
            flows_taken: 0,
            waited: Duration::ZERO,
        })
        .collect()
}

impl WorkerHandover {
    /// Time spent on one packet of `bucket`.
    #[inline]
    pub fn charge(&mut self, bucket: u16, nanos: u64) {
        let slot = &mut self.pending_ns[bucket as usize % BUCKETS];
        if *slot == 0 {
            self.touched.push(bucket);
        }
        *slot += nanos.max(1);
        self.pending_pkts[bucket as usize % BUCKETS] += 1;
    }

    /// Publishes the costs gathered since the last call.
    pub fn publish(&mut self) {
        let row = &self.board.rows[self.index];
        for b in self.touched.drain(..) {
            let b = b as usize % BUCKETS;
            row.bucket_ns[b].fetch_add(std::mem::take(&mut self.pending_ns[b]), Ordering::Relaxed);
            row.bucket_pkts[b].fetch_add(std::mem::take(&mut self.pending_pkts[b]), Ordering::Relaxed);
        }
    }

    /// A round's moves, first part: exports the flows of the buckets this worker gives
    /// away (never waits). The buckets it receives are then [`expect`](Self::expect)ed.
    pub fn give(&mut self, moves: &BucketMoves, inspector: &mut Inspector) {
        let me = self.index as u16;
        let mut receivers: Vec<u16> = moves.moves.iter().filter(|m| m.1 == me).map(|m| m.2).collect();
        receivers.sort_unstable();
        receivers.dedup();
        for to in receivers {
            let mut moving = [false; BUCKETS];
            for &(b, _, _) in moves.moves.iter().filter(|m| m.1 == me && m.2 == to) {
                moving[b as usize % BUCKETS] = true;
            }
            let flows = inspector.export_flows(|b| moving[b as usize % BUCKETS]);
            self.flows_given += flows.len() as u64;
            // A receiver that is gone has failed; the run ends with its error.
            let _ = self.peers[to as usize].send((moves.round, self.index, flows));
        }
    }

    /// A round's moves, second part: the buckets coming to this worker. Their packets are
    /// held back (stashed) until the givers' flows are here ([`settle`](Self::settle)), so
    /// the worker goes on with its other buckets instead of waiting.
    pub fn expect(&mut self, moves: &BucketMoves) {
        let me = self.index as u16;
        let mut givers: Vec<usize> = moves.moves.iter().filter(|m| m.2 == me).map(|m| m.1 as usize).collect();
        if givers.is_empty() {
            return;
        }
        givers.sort_unstable();
        givers.dedup();
        let mut held = [false; BUCKETS];
        for &(b, _, _) in moves.moves.iter().filter(|m| m.2 == me) {
            held[b as usize % BUCKETS] = true;
        }
        self.incoming = Some(Incoming { round: moves.round, after: moves.after, givers, held });
    }

    /// Whether every parcel still expected is in (never waits): then
    /// [`settle`](Self::settle) will not wait either.
    pub fn ready(&mut self) -> bool {
        let Some(incoming) = &self.incoming else { return true };
        self.early.extend(self.inbox.try_iter());
        let failed = self.failed.load(Ordering::Relaxed);
        failed || incoming.givers.iter().all(|&g| self.early.iter().any(|p| p.0 == incoming.round && p.1 == g))
    }

    /// Flows are on their way here: packets of their buckets must wait.
    pub fn pending(&self) -> bool {
        self.incoming.is_some()
    }

    /// Whether a packet of `bucket` must be held back now, and can be (the stash is
    /// bounded: past it the worker waits for the flows instead).
    pub fn holds(&self, bucket: u16) -> bool {
        self.incoming.as_ref().is_some_and(|i| i.held[bucket as usize % BUCKETS])
    }

    pub fn stash_full(&self) -> bool {
        self.stash.len() >= STASH_PACKETS
    }

    pub fn stash(&mut self, pkt: PacketRef<'_>) {
        let m = pkt.meta;
        self.stash.push(m.pcap_cnt, m.ts, m.link, m.wire_len, pkt.data);
        self.stash.set_last_bucket(m.bucket);
        self.stashed += 1;
    }

    /// Waits for the flows still expected, adopts them, and returns the packets held back
    /// meanwhile, to inspect now in their order (then hand the batch back with
    /// [`return_stash`](Self::return_stash)).
    pub fn settle(&mut self, inspector: &mut Inspector, sink: &mut dyn EventSink) -> Option<PacketBatch> {
        let incoming = self.incoming.take()?;
        for from in incoming.givers {
            let Some(flows) = self.receive(incoming.round, from) else { break };
            self.flows_taken += flows.len() as u64;
            inspector.import_flows(flows, incoming.after, sink);
        }
        Some(std::mem::take(&mut self.stash))
    }

    pub fn return_stash(&mut self, mut stash: PacketBatch) {
        stash.clear();
        self.stash = stash;
    }

    /// Waits at most `limit` for one parcel (kept for [`settle`](Self::settle)). False
    /// when no parcel can come any more: every peer is gone.
    pub fn wait_parcel(&mut self, limit: Duration) -> bool {
        let started = Instant::now();
        let alive = match self.inbox.recv_timeout(limit) {
            Ok(p) => {
                self.early.push(p);
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => false,
        };
        self.waited += started.elapsed();
        alive
    }

    /// This worker failed: the others stop waiting for its parcels.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    fn receive(&mut self, round: u64, from: usize) -> Option<FlowHandover> {
        if let Some(i) = self.early.iter().position(|p| p.0 == round && p.1 == from) {
            return Some(self.early.swap_remove(i).2);
        }
        let started = Instant::now();
        let got = loop {
            match self.inbox.recv_timeout(Duration::from_millis(20)) {
                Ok(p) if p.0 == round && p.1 == from => break Some(p.2),
                Ok(p) => self.early.push(p),
                Err(RecvTimeoutError::Timeout) if !self.failed.load(Ordering::Relaxed) => {}
                Err(_) => break None,
            }
        };
        self.waited += started.elapsed();
        got
    }
}
