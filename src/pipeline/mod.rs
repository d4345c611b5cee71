//! Run modes. `single`: one thread reads and inspects. `workers`: the calling thread reads
//! and dispatches; N pinned worker threads each own an [`Inspector`]; a merger thread writes
//! eve.json in capture order.
//!
//! Packets travel in [`PacketBatch`]es over one SPSC ring per worker; emptied batches go
//! back to the dispatcher over a second ring, so steady state allocates nothing. A full ring
//! makes the dispatcher wait (offline input must not lose packets) and is counted.

pub mod adaptive_live;
pub mod fault;
mod handover;
pub mod live;
mod worker;

pub use worker::{FLOWS_HANDED_OVER, FLOWS_TAKEN_OVER, HANDOVER_STASHED, HANDOVER_WAIT_US};

use crate::capture::bpf::{BpfError, BpfFilter};
use crate::capture::{prefetch, Ahead, CaptureError, PacketSource, RawPacket};
use crate::counters::CounterSet;
use crate::defrag::{is_fragment, DefragConfig, DefragOutcome, Defragmenter};
use crate::dispatch::adaptive::{AdaptiveSettings, BucketMove, RebalanceStats, Rebalancer};
use crate::dispatch::DispatchPolicy;
use crate::inspect::{InspectSettings, Inspector};
use crate::output::eve::AlertLogOptions;
use crate::output::merge::{merge_ordered, EventBuf, OutputChunk, SINKS};
use crate::output::sink::LogSink;
use crate::output::stats::{worker_name, WorkerReport};
use crate::packet::{ClockTick, LinkType, PacketBatch, PacketMeta, PacketRef, Timestamp};
use fault::WorkerFailure;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets per batch handed to a worker.
pub const BATCH_PACKETS: usize = 64;
/// Batches a worker's input ring holds.
pub const RING_BATCHES: usize = 64;
/// The dispatcher sends every worker a clock tick at least this often (in packets), so
/// that the ordered output merge never holds more than this much back.
const TICK_EVERY_PACKETS: u64 = 8192;

pub struct RunOptions {
    pub workers: usize,
    pub single: bool,
    pub pin_cores: bool,
    pub inspect: InspectSettings,
    /// What eve alerts carry (the eve-log `alert:` options).
    pub eve: Arc<AlertLogOptions>,
    /// IP defragmentation in the reading thread, before dispatch, so that a reassembled
    /// datagram goes to the worker of its flow. `None` turns it off.
    pub defrag: Option<DefragConfig>,
    /// The BPF capture filter: packets it rejects are dropped in the reading thread,
    /// before numbering, defragmentation and dispatch, as libpcap drops them for Suricata.
    pub bpf_filter: Option<BpfFilter>,
    /// Set by SIGINT/SIGTERM (offline runs): reading stops before the next packet, and the
    /// run drains its workers and ends as if the input had ended there.
    pub stop: Option<Arc<AtomicBool>>,
    /// The adaptive dispatch controller's settings (used with `--dispatch adaptive`).
    pub adaptive: AdaptiveSettings,
}

/// What a run did, for the stats outputs and the exit table.
pub struct RunSummary {
    pub workers: Vec<WorkerReport>,
    pub packets_read: u64,
    pub events_written: u64,
    pub first_ts: Option<Timestamp>,
    pub last_ts: Option<Timestamp>,
    pub wall: Duration,
    /// How often the dispatcher found a worker's ring full and had to wait.
    pub ring_full_waits: u64,
    /// Every file of the input that could not be read, or not to its end, in reading
    /// order (`-r DIR` goes on with the next file after one).
    pub capture_errors: Vec<CaptureError>,
    /// Counters of the reading thread (defragmentation), Suricata's "RX" thread.
    pub reader: WorkerReport,
    /// Packets the BPF filter rejected; they are not in `packets_read`.
    pub bpf_filtered: u64,
    /// Workers that panicked. The run stopped reading at the first one; the other
    /// workers finished what they had, and every report above holds what was counted.
    pub worker_failures: Vec<WorkerFailure>,
    /// What the adaptive controller did (`--dispatch adaptive` only).
    pub rebalance: Option<RebalanceStats>,
}

/// Reader counters of adaptive dispatch (picket's own; Suricata has no such dispatch).
pub const BUCKETS_MOVED: &str = "dispatch.buckets_moved";
pub const REBALANCE_ROUNDS: &str = "dispatch.rebalance_rounds";
/// Max/mean busy time x100 of the interval that triggered the first move.
pub const IMBALANCE_BEFORE_PCT: &str = "dispatch.imbalance_before_pct";
/// Max/mean busy time x100 of the last interval measured.
pub const IMBALANCE_AFTER_PCT: &str = "dispatch.imbalance_after_pct";

/// How far an offline run is, for a progress display on another thread: the reader stores
/// the input position every [`PROGRESS_EVERY_PACKETS`] packets, workers add their alerts
/// once per batch (relaxed atomics: the data path takes no lock).
#[derive(Debug, Default)]
pub struct RunProgress {
    pub bytes_read: AtomicU64,
    pub total_bytes: AtomicU64,
    pub packets: AtomicU64,
    pub alerts: AtomicU64,
}

/// Offline input files read to their end (a truncated one included), picket's own counter
/// of the reading thread.
pub const FILES_READ: &str = "capture.files_read";
/// Files that end inside a record: read up to the break, reported with its byte offset.
pub const FILES_DAMAGED: &str = "capture.files_damaged";
/// Files skipped in whole (unreadable, not a capture) or from a damaged record on.
pub const FILES_FAILED: &str = "capture.files_failed";

/// How often (in packets) the reader updates [`RunProgress`].
pub const PROGRESS_EVERY_PACKETS: u64 = 1024;

/// The log files workers' events are merged into.
pub struct LogWriters<'a> {
    pub eve: &'a mut (dyn Write + Send),
    pub fast: &'a mut (dyn Write + Send),
}

pub fn run(
    source: &mut dyn PacketSource,
    policy: Box<dyn DispatchPolicy>,
    opts: &RunOptions,
    logs: LogWriters<'_>,
) -> std::io::Result<RunSummary> {
    run_with_progress(source, policy, opts, logs, None)
}

/// [`run`], reporting how far it is into `progress` as it goes.
pub fn run_with_progress(
    source: &mut dyn PacketSource,
    policy: Box<dyn DispatchPolicy>,
    opts: &RunOptions,
    logs: LogWriters<'_>,
    progress: Option<Arc<RunProgress>>,
) -> std::io::Result<RunSummary> {
    if opts.single {
        run_single(source, opts, logs, progress)
    } else {
        run_workers(source, policy, opts, logs, progress)
    }
}

/// The reading thread's own stage: pulls packets from the source, applies the BPF
/// filter and reassembles IP fragments. `on_packet(pcap_cnt, raw, ahead)` sees every
/// captured packet the filter passes (with the packet [`crate::capture::AHEAD`] after it
/// when the source holds it, a hint for loading its flow ahead), then, after the fragment that completed it,
/// each reassembled datagram (with that fragment's `pcap_cnt`). Filtered packets get no `pcap_cnt`: with
/// a filter, Suricata's libpcap never hands them over, so its numbering skips them.
/// A capture error after some packets is returned, not raised, so what was read counts.
/// `on_packet` returns false to stop reading (a worker died).
struct Reader {
    defrag: Option<Defragmenter>,
    rebuilt: Vec<u8>,
    last_expiry_sec: u64,
    bpf: Option<BpfFilter>,
    bpf_filtered: u64,
    /// The filter has no meaning for a link type met in the input: reading stopped.
    bpf_error: Option<BpfError>,
    progress: Option<Arc<RunProgress>>,
    /// Files of the input, once read (offline sources only).
    files: Option<crate::capture::FileCounts>,
    /// Files read up to damage in them, and files skipped in whole or in part.
    files_damaged: u64,
    files_failed: u64,
    stop: Option<Arc<AtomicBool>>,
}

impl Reader {
    fn new(opts: &RunOptions, progress: Option<Arc<RunProgress>>) -> Self {
        Reader {
            defrag: opts.defrag.map(Defragmenter::new),
            rebuilt: Vec::new(),
            last_expiry_sec: 0,
            bpf: opts.bpf_filter.clone(),
            bpf_filtered: 0,
            bpf_error: None,
            progress,
            files: None,
            files_damaged: 0,
            files_failed: 0,
            stop: opts.stop.clone(),
        }
    }

    /// Stores the input position and packet count for the progress display.
    fn report_progress(&self, source: &dyn PacketSource, packets: u64) {
        if let (Some(progress), Some(read)) = (&self.progress, source.progress()) {
            progress.bytes_read.store(read.bytes_read, Ordering::Relaxed);
            progress.total_bytes.store(read.total_bytes, Ordering::Relaxed);
            progress.packets.store(packets, Ordering::Relaxed);
        }
    }

    /// The run's result once the workers are done: a filter that could not be compiled
    /// for the input's link type fails the run (as Suricata fails to open the file).
    fn finish(&mut self) -> std::io::Result<()> {
        match self.bpf_error.take() {
            Some(e) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
            None => Ok(()),
        }
    }

    fn read_all(
        &mut self,
        source: &mut dyn PacketSource,
        mut on_packet: impl FnMut(u64, &RawPacket<'_>, Ahead<'_>) -> bool,
    ) -> (u64, Vec<CaptureError>) {
        let mut pcap_cnt = 0u64;
        let mut reported = 0u64;
        let mut errors: Vec<CaptureError> = Vec::new();
        let mut after_error = false;
        loop {
            if self.stop.as_ref().is_some_and(|stop| stop.load(Ordering::Relaxed)) {
                return (pcap_cnt, errors);
            }
            if pcap_cnt >= reported + PROGRESS_EVERY_PACKETS {
                reported = pcap_cnt;
                self.report_progress(source, pcap_cnt);
            }
            match source.next_packet_ahead() {
                Ok(Some((raw, ahead))) => {
                    if let Some(filter) = &mut self.bpf {
                        match filter.matches(raw.link, raw.data, raw.wire_len) {
                            Ok(true) => {}
                            Ok(false) => {
                                self.bpf_filtered += 1;
                                continue;
                            }
                            Err(e) => {
                                self.bpf_error = Some(e);
                                return (pcap_cnt, errors);
                            }
                        }
                    }
                    after_error = false;
                    pcap_cnt += 1;
                    if !on_packet(pcap_cnt, &raw, ahead) {
                        return (pcap_cnt, errors);
                    }
                    let Some(defrag) = &mut self.defrag else { continue };
                    if raw.ts.secs() > self.last_expiry_sec {
                        self.last_expiry_sec = raw.ts.secs();
                        defrag.expire(raw.ts);
                    }
                    if is_fragment(raw.link, raw.data)
                        && defrag.offer(raw.link, raw.data, raw.ts, &mut self.rebuilt) == DefragOutcome::Reassembled
                    {
                        let whole = RawPacket {
                            ts: raw.ts,
                            link: raw.link,
                            wire_len: self.rebuilt.len() as u32,
                            data: &self.rebuilt,
                        };
                        if !on_packet(pcap_cnt, &whole, None) {
                            return (pcap_cnt, errors);
                        }
                    }
                }
                Ok(None) => {
                    self.report_progress(source, pcap_cnt);
                    self.files = source.file_counts();
                    return (pcap_cnt, errors);
                }
                Err(e) => {
                    // An error ends the current file only (the `PacketSource` contract):
                    // a directory goes on with its next file. The same error twice in a
                    // row would mean a source breaking that contract: stop, not spin.
                    let repeated = after_error && errors.last().is_some_and(|last| last.to_string() == e.to_string());
                    if e.is_damage() {
                        self.files_damaged += 1;
                    } else {
                        self.files_failed += 1;
                    }
                    errors.push(e);
                    if repeated {
                        return (pcap_cnt, errors);
                    }
                    after_error = true;
                }
            }
        }
    }

    fn report(&self) -> WorkerReport {
        let mut counters = CounterSet::new();
        if let Some(d) = &self.defrag {
            for (name, v) in d.counters() {
                counters.add(name, v);
            }
        }
        if self.bpf.is_some() {
            counters.add("capture.bpf_filtered", self.bpf_filtered);
        }
        if let Some(files) = self.files {
            // Read to the end: clean files, and damaged ones (read up to the break).
            counters.add(FILES_READ, files.clean + self.files_damaged);
            counters.add(FILES_DAMAGED, self.files_damaged);
            counters.add(FILES_FAILED, self.files_failed);
        }
        WorkerReport { name: "RX#01".into(), counters, ..Default::default() }
    }
}

fn run_single(
    source: &mut dyn PacketSource,
    opts: &RunOptions,
    logs: LogWriters<'_>,
    progress: Option<Arc<RunProgress>>,
) -> std::io::Result<RunSummary> {
    let mut sinks: [&mut dyn Write; SINKS] = [logs.eve, logs.fast];
    let start = Instant::now();
    let mut inspector = Inspector::new(&opts.inspect);
    let mut events = LogSink::new(opts.eve.clone());
    let mut busy = Duration::ZERO;
    let mut bytes = 0u64;
    let mut written = 0u64;
    let mut io_error = None;
    let (mut first_ts, mut last_ts) = (None, None);
    // Busy time is sampled per group of packets: a clock read per packet would cost more
    // than some packets take to inspect.
    let mut group_started = Instant::now();
    let mut reader = Reader::new(opts, progress.clone());
    let mut alerts_reported = 0u64;
    let mut failure = None;
    let mut flows_ahead = FlowsAhead::default();
    let (packets, capture_errors) = reader.read_all(source, |pcap_cnt, raw, ahead| {
        flows_ahead.step(&inspector, ahead);
        first_ts.get_or_insert(raw.ts);
        last_ts = Some(raw.ts);
        bytes += raw.wire_len as u64;
        let meta = PacketMeta::standalone(pcap_cnt, raw.ts, raw.link, raw.wire_len, raw.data.len());
        let inspected = catch_unwind(AssertUnwindSafe(|| {
            fault::check(pcap_cnt);
            inspector.packet(PacketRef { meta: &meta, data: raw.data }, &mut events);
        }));
        if let Err(payload) = inspected {
            failure = Some(WorkerFailure { worker: worker_name(0), message: fault::panic_message(&*payload) });
            return false;
        }
        if pcap_cnt % BATCH_PACKETS as u64 == 0 {
            let now = Instant::now();
            busy += now - group_started;
            if events.events.len() >= 256 && io_error.is_none() {
                written += events.events.len() as u64;
                io_error = write_events(&mut events.events, &mut sinks).err();
            }
            if let Some(p) = &progress {
                p.alerts.fetch_add(events.alerts - alerts_reported, Ordering::Relaxed);
                alerts_reported = events.alerts;
            }
            group_started = Instant::now();
        }
        true
    });
    busy += group_started.elapsed();
    if failure.is_none() {
        // The flows still open are written out in chunks as they end (see `ShutdownSink`).
        let flush = |mut chunk: EventBuf, _| {
            if io_error.is_none() {
                written += chunk.len() as u64;
                io_error = write_events(&mut chunk, &mut sinks).err();
            }
        };
        let finished = catch_unwind(AssertUnwindSafe(|| {
            inspector.finish_loading(&mut worker::ShutdownSink { events: &mut events, flush }, &mut prefetch::lines)
        }));
        if let Err(payload) = finished {
            failure = Some(WorkerFailure { worker: worker_name(0), message: fault::panic_message(&*payload) });
        }
    }
    written += events.events.len() as u64;
    if let Some(e) = io_error {
        return Err(e);
    }
    write_events(&mut events.events, &mut sinks)?;
    reader.finish()?;
    let counters = catch_unwind(AssertUnwindSafe(|| inspector.counters())).unwrap_or_default();
    let report = WorkerReport { name: worker_name(0), packets, bytes, busy, counters };
    Ok(RunSummary {
        workers: vec![report],
        packets_read: packets,
        events_written: written,
        first_ts,
        last_ts,
        wall: start.elapsed(),
        ring_full_waits: 0,
        capture_errors,
        reader: reader.report(),
        bpf_filtered: reader.bpf_filtered,
        worker_failures: failure.into_iter().collect(),
        rebalance: None,
    })
}

fn write_events(events: &mut EventBuf, out: &mut [&mut dyn Write; SINKS]) -> std::io::Result<()> {
    for (_, sink, line) in events.lines() {
        out[sink as usize].write_all(line)?;
    }
    *events = EventBuf::default();
    Ok(())
}

fn run_workers(
    source: &mut dyn PacketSource,
    mut policy: Box<dyn DispatchPolicy>,
    opts: &RunOptions,
    logs: LogWriters<'_>,
    progress: Option<Arc<RunProgress>>,
) -> std::io::Result<RunSummary> {
    let start = Instant::now();
    let n = opts.workers.max(1);
    let cores = if opts.pin_cores { core_affinity::get_core_ids().unwrap_or_default() } else { Vec::new() };
    // Adaptive dispatch: the workers publish their load, the reader thread rebalances.
    let adaptive = policy.table().is_some() && n > 1;
    let board = handover::LoadBoard::new(if adaptive { n } else { 0 });
    let failed = Arc::new(AtomicBool::new(false));
    let mut handovers =
        if adaptive { handover::wire(n, &board, &failed).into_iter().map(Some).collect() } else { Vec::new() };
    let mut controller = adaptive.then(|| Controller {
        meter: handover::LoadMeter::new(board.clone(), opts.adaptive.interval),
        rebalancer: Rebalancer::new(&opts.adaptive),
        round: 0,
        checked_at: 0,
        workers: n,
    });
    std::thread::scope(|scope| {
        let mut lanes = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        let mut outputs = Vec::with_capacity(n);
        for i in 0..n {
            let (to_worker, from_dispatcher) = rtrb::RingBuffer::<PacketBatch>::new(RING_BATCHES);
            let (to_pool, from_worker) = rtrb::RingBuffer::<PacketBatch>::new(RING_BATCHES + 2);
            let (out_tx, out_rx) = crossbeam_channel::bounded::<OutputChunk>(RING_BATCHES);
            outputs.push(out_rx);
            let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
            let settings = opts.inspect.clone();
            let eve = LogSink::new(opts.eve.clone());
            let progress = progress.clone();
            let handover = handovers.get_mut(i).and_then(Option::take);
            // Named as in stats.log, so a panic message names the worker.
            let spawned = std::thread::Builder::new().name(worker_name(i)).spawn_scoped(scope, move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                worker::run(i, Inspector::new(&settings), eve, from_dispatcher, to_pool, out_tx, progress, handover)
            })?;
            handles.push(spawned);
            lanes.push(Lane {
                ring: to_worker,
                pool: from_worker,
                pending: PacketBatch::with_capacity(BATCH_PACKETS, BATCH_PACKETS * 1600),
            });
        }
        let merger = scope.spawn(move || {
            let mut eve = std::io::BufWriter::with_capacity(1 << 20, logs.eve);
            let mut fast = std::io::BufWriter::with_capacity(1 << 16, logs.fast);
            let n = merge_ordered(outputs, &mut [&mut eve, &mut fast])?;
            eve.flush()?;
            fast.flush()?;
            Ok::<u64, std::io::Error>(n)
        });

        let mut d =
            Dispatcher { lanes, ring_full_waits: 0, clock: ClockTick { ts: Timestamp(0), pcap_cnt: 0 }, dead: false };
        let (mut first_ts, mut last_ts) = (None, None);
        let mut last_tick_sec = 0u64;
        let mut since_tick = 0u64;
        let mut reader = Reader::new(opts, progress);
        let (packets, capture_errors) = reader.read_all(source, |pcap_cnt, raw, _| {
            first_ts.get_or_insert(raw.ts);
            last_ts = Some(raw.ts);
            let (w, bucket) = policy.pick_bucket(raw.link, raw.data, n);
            let pending = &mut d.lanes[w].pending;
            pending.push(pcap_cnt, raw.ts, raw.link, raw.wire_len, raw.data);
            pending.set_last_bucket(bucket);
            d.clock.pcap_cnt = pcap_cnt;
            d.clock.ts = d.clock.ts.max(raw.ts);
            since_tick += 1;
            if raw.ts.secs() > last_tick_sec || since_tick >= TICK_EVERY_PACKETS {
                last_tick_sec = last_tick_sec.max(raw.ts.secs());
                since_tick = 0;
                for lane in 0..n {
                    d.send(lane);
                }
            } else if d.lanes[w].pending.len() >= BATCH_PACKETS {
                d.send(w);
            }
            if let (Some(c), Some(table)) = (&mut controller, policy.table()) {
                c.meter.count(bucket);
                if let Some(moves) = c.check(pcap_cnt, table) {
                    d.move_buckets(&handover::marker(c.round, pcap_cnt, &moves));
                }
            }
            // A worker died: stop reading, the run ends with its error.
            !d.dead
        });
        for lane in 0..n {
            d.send(lane);
        }
        let ring_full_waits = d.ring_full_waits;
        drop(d); // closes the rings: workers drain, finish and hang up
        let mut workers = Vec::with_capacity(n);
        let mut worker_failures = Vec::new();
        for (i, h) in handles.into_iter().enumerate() {
            // A panic outside the worker's own guard still ends in a report, not a hang.
            let (report, failure) = h.join().unwrap_or_else(|payload| {
                let report = WorkerReport { name: worker_name(i), ..Default::default() };
                let message = fault::panic_message(&*payload);
                (report.clone(), Some(WorkerFailure { worker: report.name, message }))
            });
            workers.push(report);
            worker_failures.extend(failure);
        }
        let events_written = merger
            .join()
            .map_err(|p| std::io::Error::other(format!("output thread panicked: {}", fault::panic_message(&*p))))??;
        reader.finish()?;
        Ok(RunSummary {
            workers,
            packets_read: packets,
            events_written,
            first_ts,
            last_ts,
            wall: start.elapsed(),
            ring_full_waits,
            capture_errors,
            reader: {
                let mut report = reader.report();
                // Backpressure: how often a worker's ring was full and the reader waited.
                report.counters.add("capture.dispatch_ring_full_waits", ring_full_waits);
                if let Some(c) = &controller {
                    let st = &c.rebalancer.stats;
                    let pct = |x: Option<f64>| (x.unwrap_or(1.0) * 100.0).round() as u64;
                    report.counters.add(BUCKETS_MOVED, st.buckets_moved);
                    report.counters.add(REBALANCE_ROUNDS, st.rounds);
                    report.counters.add(IMBALANCE_BEFORE_PCT, pct(st.imbalance_before));
                    report.counters.add(IMBALANCE_AFTER_PCT, pct(st.imbalance_after));
                }
                report
            },
            bpf_filtered: reader.bpf_filtered,
            worker_failures,
            rebalance: controller.map(|c| c.rebalancer.stats),
        })
    })
}

/// The adaptive controller, run by the reader thread between packets.
struct Controller {
    meter: handover::LoadMeter,
    rebalancer: Rebalancer,
    /// Rounds of moves made so far.
    round: u64,
    /// Packet at which the clock was last looked at.
    checked_at: u64,
    workers: usize,
}

impl Controller {
    /// Every so many packets, whether an interval ended, and if so the moves it calls
    /// for (already written into `table`).
    fn check(
        &mut self,
        pcap_cnt: u64,
        table: &mut crate::dispatch::adaptive::IndirectionTable,
    ) -> Option<Vec<BucketMove>> {
        if pcap_cnt < self.checked_at + 256 {
            return None;
        }
        self.checked_at = pcap_cnt;
        let cost = self.meter.poll()?;
        let workers = self.workers;
        let moves = self.rebalancer.plan(table, workers, &cost);
        if moves.is_empty() {
            return None;
        }
        self.round += 1;
        Some(moves)
    }
}

struct Lane {
    ring: rtrb::Producer<PacketBatch>,
    pool: rtrb::Consumer<PacketBatch>,
    pending: PacketBatch,
}

struct Dispatcher {
    lanes: Vec<Lane>,
    ring_full_waits: u64,
    clock: ClockTick,
    /// A worker dropped its ring (it panicked): nothing more is sent, reading stops.
    dead: bool,
}

impl Dispatcher {
    /// A rebalancing round: every worker giving or getting a bucket receives its pending
    /// packets now with the moves on them, so the giver exports after its last packet of
    /// the bucket and the receiver imports before its first.
    fn move_buckets(&mut self, marker: &crate::packet::BucketMoves) {
        let mut involved: Vec<usize> = marker.moves.iter().flat_map(|m| [m.1 as usize, m.2 as usize]).collect();
        involved.sort_unstable();
        involved.dedup();
        for w in involved {
            if let Some(lane) = self.lanes.get_mut(w) {
                lane.pending.moves = Some(marker.clone());
                self.send(w);
            }
        }
    }

    /// Hands lane `w` its pending batch, stamped with the current clock, and takes a
    /// recycled batch (or a new one) for the next packets. A full ring is waited on, but
    /// not forever: a worker that died has dropped its end of the ring.
    fn send(&mut self, w: usize) {
        if self.dead {
            return;
        }
        let lane = &mut self.lanes[w];
        let fresh = lane.pool.pop().unwrap_or_else(|_| PacketBatch::with_capacity(BATCH_PACKETS, BATCH_PACKETS * 1600));
        let mut batch = std::mem::replace(&mut lane.pending, fresh);
        batch.clock = Some(self.clock);
        let mut spins = 0u32;
        loop {
            match lane.ring.push(batch) {
                Ok(()) => return,
                Err(rtrb::PushError::Full(_)) if lane.ring.is_abandoned() => {
                    self.dead = true;
                    return;
                }
                Err(rtrb::PushError::Full(back)) => {
                    batch = back;
                    if spins == 0 {
                        self.ring_full_waits += 1;
                    }
                    spins += 1;
                    ring_full_backoff(spins);
                }
            }
        }
    }
}

/// The reader's wait for a full ring. A full ring holds [`RING_BATCHES`] batches, tens of
/// milliseconds of a worker's work, so the reader can sleep through a fraction of that
/// instead of yielding in a loop: on two cores with two workers the yields took a core's
/// time slices from the workers (and were most of the reader's CPU, counted as sys time).
fn ring_full_backoff(spins: u32) {
    if spins < 16 {
        std::hint::spin_loop();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(RING_FULL_SLEEP_MICROS));
    }
}

/// Lines of a flow's protocol parser loaded ahead: its start (an HTTP parser is 1,288
/// bytes, and a packet does not read all of it).
const PARSER_LINES: usize = 6;

/// Loads the state of the next packets' flows while one packet is inspected, so that a
/// packet's flow lookup and its first reads of the flow's state do not wait on memory. It
/// is a pipeline over the next [`crate::capture::AHEAD`] packets, one memory read a stage,
/// each stage reading only what the stage before loaded a packet earlier: the flow
/// table's hint for the fourth packet ahead, the slot that hint names for the third, the
/// reassembly and app layer that slot points to for the second, and the protocol parser
/// that app layer points to for the next. Without it each lookup waited on two or three
/// memory reads in a row (7% of the single-thread packet phase), and the first reads of
/// the reassembly and the parser on one more each.
#[derive(Default)]
pub(crate) struct FlowsAhead {
    /// Flow hashes of the next three packets.
    hashes: [Option<u64>; 3],
}

impl FlowsAhead {
    /// Before inspecting a packet: `ahead` is the packet [`crate::capture::AHEAD`] after it,
    /// if known.
    pub(crate) fn step(&mut self, inspector: &Inspector, ahead: Option<(LinkType, &[u8])>) {
        let [next, second, third] = self.hashes;
        if let Some((start, len)) = next.and_then(|hash| inspector.flow_parser(hash)) {
            prefetch::lines(start, len.min(PARSER_LINES * 64));
        }
        if let Some(hash) = second {
            for (start, len) in inspector.flow_state(hash).into_iter().flatten() {
                prefetch::lines(start, len);
            }
        }
        if let Some((start, len)) = third.and_then(|hash| inspector.flow_slot(hash)) {
            prefetch::lines(start, len);
        }
        let fourth = ahead.and_then(|(link, data)| inspector.flow_hash(link, data));
        if let Some(hash) = fourth {
            prefetch::lines(inspector.flow_hint(hash), std::mem::size_of::<u32>());
        }
        self.hashes = [second, third, fourth];
    }
}

/// How long the reader sleeps when a worker's ring is full: about a tenth of the time a
/// worker takes for the ring's packets at ~7 µs per packet with ET Open.
const RING_FULL_SLEEP_MICROS: u64 = 500;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineSettings;
    use crate::dispatch::{make_policy, PolicyKind};
    use crate::packet::LinkType;

    /// Packets from a list, all stamped one second apart.
    struct ListSource {
        packets: Vec<(LinkType, Vec<u8>)>,
        next: usize,
    }

    impl PacketSource for ListSource {
        fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
            let Some((link, data)) = self.packets.get(self.next) else { return Ok(None) };
            self.next += 1;
            Ok(Some(RawPacket {
                ts: Timestamp::from_parts(self.next as u64, 0),
                link: *link,
                wire_len: data.len() as u32,
                data,
            }))
        }
        fn describe(&self) -> String {
            "list".into()
        }
    }

    fn udp(dst_port: u16) -> Vec<u8> {
        let mut out = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(5000, dst_port)
            .write(&mut out, b"x")
            .unwrap();
        out
    }

    fn run_with(filter: &str, packets: Vec<(LinkType, Vec<u8>)>, single: bool) -> std::io::Result<RunSummary> {
        let opts = RunOptions {
            workers: 2,
            single,
            pin_cores: false,
            inspect: InspectSettings::from_engine(&EngineSettings::default(), 2, false),
            eve: Default::default(),
            defrag: None,
            bpf_filter: Some(BpfFilter::new(filter).unwrap()),
            stop: None,
            adaptive: Default::default(),
        };
        let (mut eve, mut fast) = (Vec::new(), Vec::new());
        let mut source = ListSource { packets, next: 0 };
        run(&mut source, make_policy(PolicyKind::Flow, 2, true), &opts, LogWriters { eve: &mut eve, fast: &mut fast })
    }

    /// The flows still open when the input ends are written in chunks as they end, not
    /// held until the last one: each chunk ends before the flow that starts the next, and
    /// together they hold every flow once, in first-packet order.
    #[test]
    fn flows_open_at_the_end_go_out_in_ordered_chunks() {
        let settings = InspectSettings::from_engine(&crate::config::EngineSettings::default(), 1, false);
        let mut inspector = Inspector::new(&settings);
        let mut events = LogSink::new(Arc::new(AlertLogOptions::default()));
        let flows = 3 * worker::CHUNK_LINES as u16 + 7;
        for i in 0..flows {
            let mut frame = Vec::new();
            etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
                .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
                .udp(10_000 + i, 9)
                .write(&mut frame, b"x")
                .unwrap();
            let meta = PacketMeta::standalone(
                i as u64 + 1,
                Timestamp::from_parts(1, 0),
                LinkType::Ethernet,
                frame.len() as u32,
                frame.len(),
            );
            inspector.packet(PacketRef { meta: &meta, data: &frame }, &mut events);
        }
        assert!(events.events.is_empty(), "no flow ended while packets came");
        let mut chunks = Vec::new();
        let flush = |chunk: EventBuf, watermark: crate::output::merge::Order| chunks.push((chunk, watermark));
        inspector.finish_loading(&mut worker::ShutdownSink { events: &mut events, flush }, &mut prefetch::lines);
        assert!(chunks.len() >= 3, "{} chunks", chunks.len());
        let mut ports = Vec::new();
        for (chunk, watermark) in &chunks {
            assert!(chunk.last_order().is_some_and(|last| last < *watermark));
            assert!(chunk.len() >= worker::CHUNK_LINES);
        }
        let rest = events.take();
        for (_, _, line) in chunks.iter().flat_map(|(c, _)| c.lines()).chain(rest.lines()) {
            let text = String::from_utf8_lossy(line);
            assert!(text.contains("\"event_type\":\"flow\""), "{text}");
            let port = text.split("\"src_port\":").nth(1).and_then(|s| s.split(',').next()?.parse::<u16>().ok());
            ports.push(port.expect("src_port"));
        }
        assert_eq!(ports, (0..flows).map(|i| 10_000 + i).collect::<Vec<_>>());
    }

    #[test]
    fn filtered_packets_are_counted_and_not_numbered() {
        for single in [true, false] {
            let packets = [53, 80, 53, 443, 53].iter().map(|&p| (LinkType::Ethernet, udp(p))).collect();
            let summary = run_with("udp port 53", packets, single).unwrap();
            assert_eq!((summary.packets_read, summary.bpf_filtered), (3, 2));
            assert_eq!(summary.reader.counters.get("capture.bpf_filtered"), Some(2));
            let inspected: u64 = summary.workers.iter().map(|w| w.packets).sum();
            assert_eq!(inspected, 3);
        }
    }

    #[test]
    fn filter_without_meaning_for_a_link_type_fails_the_run() {
        let raw_ip = udp(53)[14..].to_vec();
        let packets = vec![(LinkType::Ethernet, udp(53)), (LinkType::RawIp, raw_ip)];
        for single in [true, false] {
            let Err(err) = run_with("ether src 02:00:00:00:00:01", packets.clone(), single) else {
                panic!("the raw IP packet must fail the run")
            };
            let text = err.to_string();
            assert!(text.contains("'ether src 02:00:00:00:00:01'") && text.contains("RAW"), "{text}");
        }
    }
}
