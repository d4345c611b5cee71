//! Live run mode: N pinned worker threads, each owning its [`LivePort`]s (an AF_PACKET
//! TPACKET_V3 socket per capture interface, an NFQUEUE queue, the two directions of an
//! AF_PACKET bridge), inspecting what they read in place and, inline, carrying out the
//! verdict before the packet goes on.
//!
//! There is no dispatcher thread: the kernel spreads packets over the workers (AF_PACKET's
//! PACKET_FANOUT, by default by a symmetric flow hash; NFQUEUE's `--queue-balance` by a
//! flow hash), so a worker sees both directions of its flows. Ports are opened in worker
//! order on the calling thread, so worker `i` holds member `i` of every interface's group
//! and a flow crossing two interfaces lands on the same worker.
//!
//! Per worker, `pcap_cnt` is the arrival number of the packet on that worker (1, 2, ...):
//! it orders a worker's events but is not comparable across workers. eve.json is written
//! in arrival order (no capture-order merge: there is no global order to restore).
//!
//! Loss accounting: packets are only ever lost in the kernel, when a worker's ring or
//! queue is full (`capture.kernel_drops`); workers never drop packets themselves, except
//! inline on a drop or reject verdict (`ips.blocked`, `ips.rejected`; passed packets count
//! in `ips.accepted`). A worker publishes its running totals into [`WorkerGauges`] once per
//! batch (Relaxed atomics, no lock) and its full counter set once per second; the main
//! thread turns them into picket-stats.json (every second), eve `stats` events and
//! stats.log records (every `stats.interval`), and the final stats at exit.

pub use super::adaptive_live::LiveAdaptive;
use super::adaptive_live::LiveHandover;
use crate::capture::afpacket::{AfPacketConfig, AfPacketError, AfPacketSocket};
use crate::capture::{KernelCounts, LivePort, PortMode, RawPacket};
use crate::counters::CounterSet;
use crate::inspect::{InspectSettings, Inspector, Verdict};
use crate::output::eve::AlertLogOptions;
use crate::output::merge::{EventBuf, SINKS};
use crate::output::metrics::{LiveGauges, WorkerGauges};
use crate::output::sink::LogSink;
use crate::output::stats::{stats_event_with_engines, worker_name, write_stats_log, WorkerReport};
use crate::packet::{ClockTick, LinkType, PacketMeta, PacketRef, Timestamp};
use crate::tools::snapshot::{write_snapshot_with_global, IpsSnapshot, WorkerSnapshot};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Longest a worker sleeps in `poll` before looking at the stop flag and the clock.
const POLL_WAIT: Duration = Duration::from_millis(100);
/// Workers tick their inspector's clock (flow expiry) and publish counters this often.
const TICK: Duration = Duration::from_secs(1);
/// Longest a stopping worker keeps reading what its ports still hold.
const STOP_DRAIN: Duration = Duration::from_secs(1);
/// Adaptive fanout: how long a worker waiting for handed-over flows waits at a time
/// before checking whether it owes flows itself.
const SETTLE_POLL: Duration = Duration::from_millis(5);
/// Event chunks queued for the writer thread before a worker waits for it.
const EVENT_QUEUE: usize = 1024;
/// The writer flushes (and its files follow a rotation) after this long without events.
const WRITER_IDLE_FLUSH: Duration = Duration::from_millis(250);
pub struct LiveOptions {
    pub workers: usize,
    pub pin_cores: bool,
    pub inspect: InspectSettings,
    /// What eve alerts carry (the eve-log `alert:` options).
    pub eve: Arc<AlertLogOptions>,
    /// Periodic eve `stats` events and stats.log records; `None` writes them only at exit.
    pub stats_interval: Option<Duration>,
    /// Where picket-stats.json is rewritten every second (for `picket top --stats`).
    pub snapshot_path: Option<PathBuf>,
    /// stats.log, appended to.
    pub stats_log: Option<PathBuf>,
    /// The XDP layer's flow bypass tables (`--ddos`): each worker installs the flows its
    /// inspector bypasses (`crate::xdp::bypass`).
    pub flow_bypass: Option<crate::xdp::bypass::BypassMaps>,
    /// `--ddos`: where each worker sends its detectors' tallies once per tick (the DDoS
    /// controller, `crate::ddos::controller`). A full queue drops the tally.
    pub detector_tallies: Option<Sender<crate::detectors::Tallies>>,
    /// Event lines written beside the workers' (the DDoS controller's alerts).
    pub extra_events: Option<Receiver<EventBuf>>,
    /// Sources of process-wide counters (the XDP program's, the DDoS controller's), read
    /// by the main thread every second and at the end: eve `stats`, stats.log,
    /// picket-stats.json and Prometheus show them beside the workers' totals.
    pub global_counters: Vec<CounterSource>,
    /// Commands from signals and the control socket (`crate::service`), answered by the
    /// main thread between its chores; `None` takes none.
    pub control: Option<crate::service::ControlPlane>,
    /// The rule engine, swapped by a rule reload (`crate::service::reload`): each worker
    /// takes it at start and again, between two batches, when its generation moved. `None`:
    /// workers run with `inspect.detect` for the whole run.
    pub engine_slot: Option<Arc<crate::service::reload::EngineSlot>>,
    /// `--fanout adaptive`: workers charge each packet to its fanout bucket, and the main
    /// thread moves buckets between workers (`super::adaptive_live`).
    pub adaptive: Option<LiveAdaptive>,
}

pub use crate::counters::CounterSource;

/// The process-wide counters now; also published in `gauges.global` (Prometheus).
fn global_counters(opts: &LiveOptions, gauges: &LiveGauges) -> CounterSet {
    let mut set = CounterSet::new();
    for source in &opts.global_counters {
        source(&mut set);
    }
    if let Ok(mut published) = gauges.global.lock() {
        *published = set.clone();
    }
    set
}

/// The log files the writer thread owns for the run.
pub struct LiveLogs {
    pub eve: Box<dyn Write + Send>,
    pub fast: Box<dyn Write + Send>,
}

/// What one worker did, with its kernel counts summed over its ports.
#[derive(Clone, Debug, Default)]
pub struct LiveWorkerReport {
    pub report: WorkerReport,
    pub kernel: KernelCounts,
    pub poll_errors: u64,
    /// Times the worker found the event queue to the writer full and waited.
    pub output_waits: u64,
    /// The worker panicked: the run stopped, and this report holds what it had counted.
    pub failure: Option<super::fault::WorkerFailure>,
}

pub struct LiveSummary {
    pub workers: Vec<LiveWorkerReport>,
    pub wall: Duration,
    pub events_written: u64,
}

/// Opens every worker's sockets, worker by worker, so that socket `i` of each interface
/// is member `i` of its fanout group. Returns `[worker][interface]`. Errors name the
/// interface and, where there is one, the fix.
pub fn open_sockets(captures: &[AfPacketConfig], workers: usize) -> Result<Vec<Vec<Box<dyn LivePort>>>, AfPacketError> {
    let mut all = Vec::with_capacity(workers);
    for _ in 0..workers.max(1) {
        let mut mine: Vec<Box<dyn LivePort>> = Vec::with_capacity(captures.len());
        for capture in captures {
            mine.push(Box::new(AfPacketSocket::open(capture)?));
        }
        all.push(mine);
    }
    Ok(all)
}

/// Everything a worker shares with the main thread.
struct WorkerShared {
    /// Full counter set, replaced once per second by the worker.
    counters: Mutex<CounterSet>,
}

/// Runs until `stop` is set (SIGINT/SIGTERM), then lets every worker drain its ring,
/// log its open flows and report; writes the final stats and flushes the logs.
pub fn run_live(
    sockets: Vec<Vec<Box<dyn LivePort>>>,
    opts: &LiveOptions,
    gauges: Arc<LiveGauges>,
    stop: Arc<AtomicBool>,
    logs: LiveLogs,
) -> io::Result<LiveSummary> {
    let start = Instant::now();
    let n = sockets.len();
    let cores = if opts.pin_cores { core_affinity::get_core_ids().unwrap_or_default() } else { Vec::new() };
    let shared: Vec<WorkerShared> = (0..n).map(|_| WorkerShared { counters: Mutex::new(CounterSet::new()) }).collect();
    let (events_tx, events_rx) = crossbeam_channel::bounded::<EventBuf>(EVENT_QUEUE);
    if let Some(slot) = &opts.engine_slot {
        slot.workers_running(n);
    }

    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_events(events_rx, logs));
        let mut handles = Vec::with_capacity(n);
        for (i, socks) in sockets.into_iter().enumerate() {
            let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
            let mut settings = opts.inspect.clone();
            let engine_slot = opts.engine_slot.as_deref().map(|slot| {
                let (generation, engine) = slot.current();
                settings.detect = Some(engine);
                (slot, generation)
            });
            let eve = LogSink::new(opts.eve.clone());
            let (gauges, shared, stop, events_tx) = (&gauges.workers[i].1, &shared[i], &*stop, events_tx.clone());
            let flow_bypass = opts.flow_bypass;
            let adaptive = opts.adaptive.as_ref().and_then(|a| a.take_worker(i));
            let spawned = std::thread::Builder::new().name(worker_name(i)).spawn_scoped(scope, move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                let mut worker = LiveWorker::new(i, socks, Inspector::new(&settings), eve, gauges, shared, events_tx);
                worker.core.bypass = flow_bypass.and_then(|maps| {
                    maps.open().map_err(|e| eprintln!("picket: worker {i}: no flow bypass: {e}")).ok()
                });
                worker.tallies_tx = opts.detector_tallies.clone();
                worker.core.adaptive = adaptive;
                worker.engine_slot = engine_slot;
                // A panic stops the whole run (the other workers see `stop`), and the
                // report keeps what this worker counted before it.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run(stop)));
                if let Some((slot, _)) = worker.engine_slot {
                    slot.worker_ended(i);
                }
                match ran {
                    Ok(()) => worker.finish(),
                    Err(payload) => {
                        stop.store(true, Ordering::Relaxed);
                        let message = super::fault::panic_message(&*payload);
                        worker.after_panic(super::fault::WorkerFailure { worker: worker_name(i), message })
                    }
                }
            });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    // The workers already running must end, or the scope never returns.
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }

        // The main thread: snapshot every second, stats every interval, until stopped.
        let mut last_stats = Instant::now();
        let mut stats_log_error = None;
        while !stop.load(Ordering::Relaxed) && !handles.iter().any(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(100).min(TICK));
            rebalance(opts);
            let second = Instant::now();
            forward_extra_events(opts, &events_tx);
            let global = global_counters(opts, &gauges);
            if let Some(control) = &opts.control {
                answer_commands(control, &gauges, &shared, &global, &stop, start);
            }
            if let Some(path) = &opts.snapshot_path {
                let _ = write_snapshot_with_global(path, &snapshot_of(&gauges), &global);
            }
            if opts.stats_interval.is_some_and(|every| last_stats.elapsed() >= every) {
                last_stats = Instant::now();
                let reports = periodic_reports(&gauges, &shared);
                if opts.eve.types.stats {
                    let _ = events_tx.send(stats_chunk(
                        start.elapsed(),
                        &reports,
                        &global,
                        detect_engines(opts),
                        opts.eve.stats_threads,
                    ));
                }
                if let Some(path) = &opts.stats_log {
                    if let Err(e) = append_stats_log(path, start.elapsed(), &reports, &global) {
                        stats_log_error.get_or_insert(e);
                    }
                }
            }
            // Sleep the rest of the second, waking early for the stop flag; control commands
            // are answered within the 50 ms slice, not at the next second.
            while second.elapsed() < TICK - Duration::from_millis(100) && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                rebalance(opts);
                if let Some(control) = opts.control.as_ref().filter(|c| !c.commands.is_empty()) {
                    answer_commands(control, &gauges, &shared, &global_counters(opts, &gauges), &stop, start);
                }
            }
        }
        // A worker that ends on its own (it should not) stops the others too.
        stop.store(true, Ordering::Relaxed);

        let mut workers = Vec::with_capacity(n);
        for (i, h) in handles.into_iter().enumerate() {
            // A panic outside the worker's guard (in its final report) still ends in a
            // report and the final stats.
            workers.push(h.join().unwrap_or_else(|payload| LiveWorkerReport {
                report: WorkerReport { name: worker_name(i), ..Default::default() },
                failure: Some(super::fault::WorkerFailure {
                    worker: worker_name(i),
                    message: super::fault::panic_message(&*payload),
                }),
                ..Default::default()
            }));
        }
        let wall = start.elapsed();
        let reports: Vec<WorkerReport> = workers.iter().map(|w| w.report.clone()).collect();
        forward_extra_events(opts, &events_tx);
        let global = global_counters(opts, &gauges);
        if opts.eve.types.stats {
            let _ = events_tx.send(stats_chunk(wall, &reports, &global, detect_engines(opts), opts.eve.stats_threads));
        }
        drop(events_tx);
        let events_written = writer.join().map_err(|_| io::Error::other("output thread panicked"))??;
        if let Some(path) = &opts.snapshot_path {
            let _ = write_snapshot_with_global(path, &snapshot_of(&gauges), &global);
        }
        if let Some(path) = &opts.stats_log {
            append_stats_log(path, wall, &reports, &global)?;
        }
        if let Some(e) = stats_log_error {
            return Err(e);
        }
        Ok(LiveSummary { workers, wall, events_written })
    })
}

/// `--fanout adaptive`: lets the controller look at the workers' load (it acts once per
/// its interval).
fn rebalance(opts: &LiveOptions) {
    let Some(adaptive) = &opts.adaptive else { return };
    if let Ok(mut controller) = adaptive.controller.lock() {
        controller.poll();
    }
}

/// Answers what the control channel holds (see `crate::service`). A rule reload runs here,
/// on the main thread: the workers keep inspecting with the old engine meanwhile.
fn answer_commands(
    control: &crate::service::ControlPlane,
    gauges: &LiveGauges,
    shared: &[WorkerShared],
    global: &CounterSet,
    stop: &AtomicBool,
    start: Instant,
) {
    use crate::service::Request;
    for command in control.commands.try_iter() {
        let reply = match &command.request {
            Request::ReloadRules => match &control.reloader {
                Some(reloader) => {
                    crate::service::daemon::notify_reloading();
                    let reply = reloader.reload();
                    crate::service::daemon::notify_reloaded();
                    reply
                }
                None => Err("this run has no rule files to reload".to_string()),
            },
            Request::ReopenLogs => {
                control.reopen.bump();
                Ok(serde_json::Value::String("done".into()))
            }
            Request::Stats => {
                let line = stats_event_with_engines(
                    now_timestamp(),
                    start.elapsed().as_secs(),
                    &periodic_reports(gauges, shared),
                    global,
                    control.reloader.as_ref().map(|r| serde_json::Value::Array(vec![r.ruleset_stats()])),
                    // `picket ctl stats` answers with every worker's counters too.
                    true,
                );
                serde_json::from_slice::<serde_json::Value>(&line)
                    .map(|mut event| event["stats"].take())
                    .map_err(|e| e.to_string())
            }
            Request::Shutdown => {
                stop.store(true, Ordering::Relaxed);
                Ok(serde_json::Value::String("Closing Suricata-compatible picket".into()))
            }
            other => crate::service::ctl::answer_info(
                other,
                &control.info,
                control.reloader.as_deref(),
                &snapshot_of(gauges),
            ),
        };
        if let Some(tx) = command.reply {
            let _ = tx.send(reply);
        }
    }
}

fn now_timestamp() -> Timestamp {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp::from_parts(now.as_secs(), now.subsec_nanos())
}

fn snapshot_of(gauges: &LiveGauges) -> Vec<WorkerSnapshot> {
    gauges
        .workers
        .iter()
        .map(|(name, g)| {
            let v = g.load();
            WorkerSnapshot {
                name: name.clone(),
                packets: v.packets,
                bytes: v.bytes,
                drops: v.kernel_drops,
                busy_ns: v.busy_ns,
                ips: v.inline.then_some(IpsSnapshot {
                    accepted: v.ips_accepted,
                    blocked: v.ips_blocked,
                    rejected: v.ips_rejected,
                    fail_open: v.fail_open,
                    tx_errors: v.tx_errors,
                }),
            }
        })
        .collect()
}

fn periodic_reports(gauges: &LiveGauges, shared: &[WorkerShared]) -> Vec<WorkerReport> {
    gauges
        .workers
        .iter()
        .zip(shared)
        .map(|((name, g), s)| {
            let v = g.load();
            let counters = s.counters.lock().map(|c| c.clone()).unwrap_or_default();
            WorkerReport {
                name: name.clone(),
                packets: v.packets,
                bytes: v.bytes,
                busy: Duration::from_nanos(v.busy_ns),
                counters,
            }
        })
        .collect()
}

/// Passes on what [`LiveOptions::extra_events`] holds to the writer (eve alerts: dropped
/// when eve-log's `types:` leaves alerts out).
fn forward_extra_events(opts: &LiveOptions, events_tx: &Sender<EventBuf>) {
    if let Some(rx) = &opts.extra_events {
        for chunk in rx.try_iter() {
            if opts.eve.types.alert {
                let _ = events_tx.send(chunk);
            }
        }
    }
}

/// eve `stats.detect.engines` of a run that can reload its rules.
fn detect_engines(opts: &LiveOptions) -> Option<serde_json::Value> {
    let reloader = opts.control.as_ref()?.reloader.as_ref()?;
    Some(serde_json::Value::Array(vec![reloader.ruleset_stats()]))
}

fn stats_chunk(
    uptime: Duration,
    reports: &[WorkerReport],
    global: &CounterSet,
    engines: Option<serde_json::Value>,
    threads: bool,
) -> EventBuf {
    let mut buf = EventBuf::default();
    let line = stats_event_with_engines(now_timestamp(), uptime.as_secs(), reports, global, engines, threads);
    buf.push(u64::MAX, |out| out.extend_from_slice(&line));
    buf
}

fn append_stats_log(
    path: &std::path::Path,
    uptime: Duration,
    reports: &[WorkerReport],
    global: &CounterSet,
) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let mut text = Vec::new();
    write_stats_log(&mut text, uptime, &utc_date(), reports)?;
    for (name, value) in global.iter() {
        writeln!(text, "{name:<45} | {:<25} | {value}", "Global")?;
    }
    file.write_all(&text)
}

/// "MM/DD/YYYY -- HH:MM:SS" in UTC, the Date line of Suricata's stats.log.
fn utc_date() -> String {
    let iso = crate::output::eve::format_timestamp(now_timestamp());
    match (iso.get(0..4), iso.get(5..7), iso.get(8..10), iso.get(11..19)) {
        (Some(y), Some(m), Some(d), Some(t)) => format!("{m}/{d}/{y} -- {t}"),
        _ => iso,
    }
}

/// The writer thread: event chunks in arrival order to eve.json / fast.log, flushed at
/// least every second so `tail -f` follows. Returns the number of lines written.
fn write_events(rx: Receiver<EventBuf>, logs: LiveLogs) -> io::Result<u64> {
    let mut eve = io::BufWriter::with_capacity(1 << 20, logs.eve);
    let mut fast = io::BufWriter::with_capacity(1 << 16, logs.fast);
    let mut written = 0u64;
    let mut last_flush = Instant::now();
    loop {
        let idle = match rx.recv_timeout(WRITER_IDLE_FLUSH) {
            Ok(chunk) => {
                let sinks: [&mut dyn Write; SINKS] = [&mut eve, &mut fast];
                for (_, sink, line) in chunk.lines() {
                    sinks[sink as usize].write_all(line)?;
                    written += 1;
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        // Flushing is also when the log targets look for a reopen request (SIGHUP): an
        // idle writer flushes every WRITER_IDLE_FLUSH, a busy one every TICK.
        if idle || last_flush.elapsed() >= TICK {
            eve.flush()?;
            fast.flush()?;
            last_flush = Instant::now();
        }
    }
    eve.flush()?;
    fast.flush()?;
    Ok(written)
}

struct LiveWorker<'a> {
    index: usize,
    sockets: Vec<Box<dyn LivePort>>,
    gauges: &'a WorkerGauges,
    shared: &'a WorkerShared,
    events_tx: Sender<EventBuf>,
    core: WorkerCore,
    poll_errors: u64,
    output_waits: u64,
    /// The DDoS controller's tally queue (`--ddos`).
    tallies_tx: Option<Sender<crate::detectors::Tallies>>,
    /// Where a reloaded engine comes from, and the generation this worker runs.
    engine_slot: Option<(&'a crate::service::reload::EngineSlot, u64)>,
}

/// The part of a worker the per-packet callback borrows (apart from the sockets).
struct WorkerCore {
    inspector: Inspector,
    events: LogSink,
    /// Arrival number of the last packet on this worker.
    pcap_cnt: u64,
    bytes: u64,
    busy: Duration,
    /// When the first packet of the current `poll` call was seen.
    batch_started: Option<Instant>,
    /// Some port acts on verdicts: count them (`ips.*`).
    inline: bool,
    /// Inline verdicts: packets let through, and packets answered with a reject.
    accepted: u64,
    rejected: u64,
    /// The XDP flow bypass tables (`--ddos`).
    bypass: Option<crate::xdp::bypass::FlowBypassTable>,
    /// `--fanout adaptive`: per-bucket costs (published per batch) and the flow
    /// hand-over (`super::adaptive_live`).
    adaptive: Option<LiveHandover>,
}

impl WorkerCore {
    fn packet(&mut self, raw: RawPacket<'_>) -> Verdict {
        // One clock read per batch, not per packet.
        if self.batch_started.is_none() {
            self.batch_started = Some(Instant::now());
        }
        self.pcap_cnt += 1;
        super::fault::check(self.pcap_cnt);
        self.bytes += raw.wire_len as u64;
        let mut meta = PacketMeta::standalone(self.pcap_cnt, raw.ts, raw.link, raw.wire_len, raw.data.len());
        let Some(adaptive) = &mut self.adaptive else {
            let verdict = self.inspector.packet(PacketRef { meta: &meta, data: raw.data }, &mut self.events);
            return self.after_inspect(verdict);
        };
        // Adaptive fanout: the flow remembers its bucket (it may move with it), and the
        // packet's time is charged to the bucket (one more clock read).
        meta.bucket = fanout_bucket_of(raw.link, raw.data);
        if adaptive.h.pending() {
            let held = adaptive.h.holds(meta.bucket);
            // A bucket handed to this worker: its flows are not here yet. Inline, a verdict
            // is due now, so the worker waits for them; otherwise the packet waits.
            if held && !self.inline && !adaptive.h.stash_full() {
                adaptive.h.stash(PacketRef { meta: &meta, data: raw.data });
                return Verdict::Pass;
            }
            if held && !self.inline {
                adaptive.overflowed();
            }
            // Flows handed over must be here before expiry could end them elsewhere.
            if held || self.inspector.expires_at(raw.ts) {
                self.settle();
            }
        }
        let started = Instant::now();
        let verdict = self.inspector.packet(PacketRef { meta: &meta, data: raw.data }, &mut self.events);
        if let Some(adaptive) = &mut self.adaptive {
            adaptive.charge(meta.bucket, started.elapsed().as_nanos() as u64);
        }
        self.after_inspect(verdict)
    }

    /// Adopts the flows handed to this worker (waiting for those not in yet) and inspects
    /// the packets held back for them.
    fn settle(&mut self) {
        let Some(adaptive) = &mut self.adaptive else { return };
        adaptive.wait_for_flows(&mut self.inspector, SETTLE_POLL);
        let Some(stash) = adaptive.h.settle(&mut self.inspector, &mut self.events) else { return };
        adaptive.settled();
        for pkt in stash.iter() {
            let started = Instant::now();
            self.inspector.packet(pkt, &mut self.events);
            adaptive.charge(pkt.meta.bucket, started.elapsed().as_nanos() as u64);
            if let Some(bypass) = &mut self.bypass {
                bypass.after_packet(&mut self.inspector);
            }
        }
        adaptive.h.return_stash(stash);
    }

    fn after_inspect(&mut self, verdict: Verdict) -> Verdict {
        if let Some(bypass) = &mut self.bypass {
            bypass.after_packet(&mut self.inspector);
        }
        if self.inline {
            // Blocked packets are counted by the inspector (`ips.blocked`).
            match verdict {
                Verdict::Pass => self.accepted += 1,
                Verdict::Reject(_) => self.rejected += 1,
                Verdict::Drop => {}
            }
        }
        verdict
    }

    fn end_batch(&mut self) {
        if let Some(started) = self.batch_started.take() {
            self.busy += started.elapsed();
        }
    }
}

impl<'a> LiveWorker<'a> {
    fn new(
        index: usize,
        sockets: Vec<Box<dyn LivePort>>,
        inspector: Inspector,
        events: LogSink,
        gauges: &'a WorkerGauges,
        shared: &'a WorkerShared,
        events_tx: Sender<EventBuf>,
    ) -> Self {
        let inline = sockets.iter().any(|s| s.mode() == PortMode::Inline);
        gauges.inline.store(inline, Ordering::Relaxed);
        LiveWorker {
            index,
            sockets,
            gauges,
            shared,
            events_tx,
            core: WorkerCore {
                inspector,
                events,
                pcap_cnt: 0,
                bytes: 0,
                busy: Duration::ZERO,
                batch_started: None,
                inline,
                accepted: 0,
                rejected: 0,
                bypass: None,
                adaptive: None,
            },
            poll_errors: 0,
            output_waits: 0,
            tallies_tx: None,
            engine_slot: None,
        }
    }

    fn run(&mut self, stop: &AtomicBool) {
        let mut last_tick = Instant::now();
        let mut waiting_on = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let visited = if self.sockets.len() == 1 {
                self.poll(0, POLL_WAIT)
            } else {
                // Several interfaces: take what is ready on each, and only when all are
                // empty wait on one of them in turn, briefly.
                let ready: usize = (0..self.sockets.len()).map(|s| self.poll(s, Duration::ZERO)).sum();
                if ready == 0 {
                    waiting_on = (waiting_on + 1) % self.sockets.len();
                    self.poll(waiting_on, POLL_WAIT / self.sockets.len() as u32)
                } else {
                    ready
                }
            };
            self.hand_over(false);
            if visited > 0 {
                self.publish_batch();
            }
            self.check_engine();
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.tick();
            }
        }
        // Whatever the rings and queues still hold, every held verdict out, then the
        // flows still open.
        // Bounded: under a flood that never lets up, the rings would never be empty.
        let deadline = Instant::now() + STOP_DRAIN;
        for s in 0..self.sockets.len() {
            while self.poll(s, Duration::ZERO) > 0 && Instant::now() < deadline {}
            if self.sockets[s].flush().is_err() {
                self.poll_errors += 1;
            }
        }
        // Gives still due go out (a peer may wait for them), then the flows handed here.
        self.hand_over(true);
        self.tick();
    }

    /// Between blocks, adaptive fanout's hand-over (`super::adaptive_live`): rounds to
    /// expect, gives that are due (after inspecting what the ring still holds), flows
    /// handed here that are in (or waited for long enough). `stopping`: everything now.
    fn hand_over(&mut self, stopping: bool) {
        let Some(adaptive) = &mut self.core.adaptive else { return };
        let expects = adaptive.take_control();
        for round in expects {
            // One round at a time: the previous one's flows first.
            self.core.settle();
            if let Some(adaptive) = &mut self.core.adaptive {
                adaptive.expect(&round);
            }
        }
        while let Some(round) = self.core.adaptive.as_mut().and_then(|a| a.due_give(stopping)) {
            // Every packet of the bucket the kernel queued here before the table changed
            // is in view by now (the grace): inspect them before the flows leave.
            let deadline = Instant::now() + STOP_DRAIN;
            for s in 0..self.sockets.len() {
                while self.poll(s, Duration::ZERO) > 0 && Instant::now() < deadline {}
            }
            if let Some(adaptive) = &mut self.core.adaptive {
                adaptive.h.give(&round, &mut self.core.inspector);
            }
        }
        if self.core.adaptive.as_mut().is_some_and(|a| a.should_settle(stopping)) {
            self.core.settle();
        }
    }

    /// Between two batches: a reloaded engine is taken when the slot's generation moved
    /// (one relaxed load otherwise). The flows' detection state carries over; the old
    /// engine goes back to the slot, for the main thread to release.
    fn check_engine(&mut self) {
        let Some((slot, running)) = self.engine_slot else { return };
        if slot.generation() == running {
            return;
        }
        // Events of the old engine go out first: a chunk holds one engine's alerts.
        self.send_events();
        let (generation, engine) = slot.current();
        let old = self.core.inspector.swap_engine(engine);
        slot.switched(self.index, generation, old);
        self.engine_slot = Some((slot, generation));
    }

    /// Reads what one port has ready (waiting at most `wait` if nothing is).
    fn poll(&mut self, s: usize, wait: Duration) -> usize {
        let core = &mut self.core;
        let result = self.sockets[s].poll(wait, &mut |raw| core.packet(raw));
        core.end_batch();
        match result {
            Ok(n) => n,
            Err(_) => {
                // The interface went down: the socket stays bound and resumes when it
                // comes back; meanwhile do not spin on the error.
                self.poll_errors += 1;
                self.gauges.poll_errors.store(self.poll_errors, Ordering::Relaxed);
                std::thread::sleep(POLL_WAIT.min(wait.max(Duration::from_millis(10))));
                0
            }
        }
    }

    /// After a batch: running totals out, events to the writer. The kernel's counts go
    /// out first and the packet count last (Release): whoever reads the packet count
    /// first ([`WorkerGauges::load`]) never sees more packets inspected than the kernel
    /// delivered (Prometheus once showed `kernel_packets` < `packets`, as the kernel
    /// counts were published only once a second).
    fn publish_batch(&mut self) {
        let g = self.gauges;
        let mut kernel = KernelCounts::default();
        for port in &mut self.sockets {
            let k = port.kernel_counts();
            kernel.packets += k.packets;
            kernel.drops += k.drops;
        }
        g.kernel_packets.store(kernel.packets, Ordering::Relaxed);
        g.kernel_drops.store(kernel.drops, Ordering::Relaxed);
        g.packets.store(self.core.pcap_cnt, Ordering::Release);
        g.bytes.store(self.core.bytes, Ordering::Relaxed);
        g.busy_ns.store(self.core.busy.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
        if let Some(adaptive) = &mut self.core.adaptive {
            adaptive.publish();
        }
        self.send_events();
    }

    fn send_events(&mut self) {
        if self.core.events.events.is_empty() {
            return;
        }
        let chunk = self.core.events.take();
        match self.events_tx.try_send(chunk) {
            Ok(()) => {}
            Err(TrySendError::Full(chunk)) => {
                // The writer is behind: wait for it (the kernel ring absorbs the delay,
                // and counts drops if it cannot) rather than lose events.
                self.output_waits += 1;
                let _ = self.events_tx.send(chunk);
            }
            // The writer failed; its error is reported when the run ends.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Once per second: the wall clock to the inspector (flows expire on idle links),
    /// kernel ring statistics, and the full counter set for the stats outputs.
    fn tick(&mut self) {
        let tick = ClockTick { ts: now_timestamp(), pcap_cnt: self.core.pcap_cnt };
        // Flows handed here must be in before the clock can expire them.
        if self.core.adaptive.as_ref().is_some_and(|a| a.h.pending()) && self.core.inspector.expires_at(tick.ts) {
            self.core.settle();
        }
        if let Some(bypass) = &mut self.core.bypass {
            bypass.refresh(&mut self.core.inspector, tick.ts);
        }
        self.core.inspector.clock(tick, &mut self.core.events);
        if let Some(tx) = &self.tallies_tx {
            let tallies = self.core.inspector.take_detector_tallies();
            if !tallies.is_empty() {
                // Never wait on the controller: a lost tally only shortens a window.
                let _ = tx.try_send(tallies);
            }
        }
        self.publish_counters();
        self.publish_batch();
    }

    fn publish_counters(&mut self) -> (CounterSet, KernelCounts) {
        let mut kernel = KernelCounts::default();
        let mut counters = CounterSet::new();
        for port in &mut self.sockets {
            let k = port.kernel_counts();
            kernel.packets += k.packets;
            kernel.drops += k.drops;
        }
        // Suricata's names first, then the ports' own.
        counters.add("capture.kernel_packets", kernel.packets);
        counters.add("capture.kernel_drops", kernel.drops);
        for port in &self.sockets {
            port.add_counters(&mut counters);
        }
        counters.add(POLL_ERRORS, self.poll_errors);
        counters.add(OUTPUT_WAITS, self.output_waits);
        if self.core.inline {
            counters.add("ips.accepted", self.core.accepted);
            counters.add("ips.rejected", self.core.rejected);
        }
        for (name, v) in self.core.inspector.counters().iter() {
            counters.add(name, v);
        }
        if let Some(bypass) = &self.core.bypass {
            bypass.add_counters(&mut counters);
        }
        let g = self.gauges;
        let get = |name: &str| counters.get(name).unwrap_or(0);
        g.kernel_packets.store(kernel.packets, Ordering::Relaxed);
        g.kernel_drops.store(kernel.drops, Ordering::Relaxed);
        g.queue_freezes.store(get("capture.afpacket.queue_freezes"), Ordering::Relaxed);
        g.ips_accepted.store(get("ips.accepted"), Ordering::Relaxed);
        g.ips_blocked.store(get("ips.blocked"), Ordering::Relaxed);
        g.ips_rejected.store(get("ips.rejected"), Ordering::Relaxed);
        g.fail_open.store(get(crate::capture::port::FAIL_OPEN), Ordering::Relaxed);
        g.tx_errors.store(get(crate::capture::port::TX_ERRORS), Ordering::Relaxed);
        g.alerts.store(counters.get("detect.alert").unwrap_or(0), Ordering::Relaxed);
        g.flows_active.store(counters.get("flow.active").unwrap_or(0), Ordering::Relaxed);
        g.flows_total.store(counters.get("flow.total").unwrap_or(0), Ordering::Relaxed);
        if let Ok(mut shared) = self.shared.counters.lock() {
            *shared = counters.clone();
        }
        (counters, kernel)
    }

    fn finish(mut self) -> LiveWorkerReport {
        let started = Instant::now();
        if let Some(bypass) = &mut self.core.bypass {
            bypass.refresh(&mut self.core.inspector, now_timestamp());
        }
        // This worker sends no more flows: a round begun as it stopped is not waited for.
        if let Some(adaptive) = &self.core.adaptive {
            adaptive.h.fail();
        }
        self.core.inspector.finish(&mut self.core.events);
        if let Some(bypass) = &mut self.core.bypass {
            bypass.after_packet(&mut self.core.inspector);
        }
        self.core.busy += started.elapsed();
        let (counters, kernel) = self.publish_counters();
        self.publish_batch();
        self.report(counters, kernel, None)
    }

    fn report(
        &self,
        counters: CounterSet,
        kernel: KernelCounts,
        failure: Option<super::fault::WorkerFailure>,
    ) -> LiveWorkerReport {
        LiveWorkerReport {
            report: WorkerReport {
                name: worker_name(self.index),
                packets: self.core.pcap_cnt,
                bytes: self.core.bytes,
                busy: self.core.busy,
                counters,
            },
            kernel,
            poll_errors: self.poll_errors,
            output_waits: self.output_waits,
            failure,
        }
    }

    /// The report of a worker whose inspector panicked: its open flows are not logged
    /// (their state may be half-updated), its counters are, as far as they can be read.
    fn after_panic(mut self, failure: super::fault::WorkerFailure) -> LiveWorkerReport {
        // No other worker waits for flows from this one.
        if let Some(adaptive) = &self.core.adaptive {
            adaptive.h.fail();
        }
        self.core.events.take();
        let published = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.publish_counters()));
        let (counters, kernel) = published.unwrap_or_else(|_| {
            let last = self.shared.counters.lock().map(|c| c.clone()).unwrap_or_default();
            (last, KernelCounts::default())
        });
        self.report(counters, kernel, Some(failure))
    }
}

/// The fanout bucket of a captured frame, as the kernel's program chose it
/// (`crate::flow::fanout_hash`). Raw IP links have no EtherType: the version nibble says.
fn fanout_bucket_of(link: LinkType, data: &[u8]) -> u16 {
    use crate::flow::fanout_hash::{bucket_at_network, fanout_bucket};
    match link {
        LinkType::Ethernet => fanout_bucket(data),
        _ => match data.first().map(|b| b >> 4) {
            Some(4) => bucket_at_network(0x0800, data),
            Some(6) => bucket_at_network(0x86dd, data),
            _ => 0,
        },
    }
}

/// Faults a port reported while polling (interface down, netlink errors).
const POLL_ERRORS: &str = "capture.afpacket.poll_errors";
/// Times the worker waited for the output thread.
const OUTPUT_WAITS: &str = "capture.afpacket.output_waits";

/// The exit table: per worker, packets, kernel drops and load.
pub fn write_live_load_table(out: &mut dyn Write, workers: &[LiveWorkerReport], wall: Duration) -> io::Result<()> {
    let total_pkts: u64 = workers.iter().map(|w| w.report.packets).sum();
    let total_drops: u64 = workers.iter().map(|w| w.kernel.drops).sum();
    let total_bytes: u64 = workers.iter().map(|w| w.report.bytes).sum();
    let wall_s = wall.as_secs_f64().max(1e-9);
    writeln!(
        out,
        "{:<6} {:>12} {:>14} {:>12} {:>8} {:>10} {:>7} {:>8}",
        "worker", "packets", "bytes", "kernel drops", "drop %", "busy ms", "busy %", "share %"
    )?;
    let pct = |part: u64, whole: u64| if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 };
    for w in workers {
        let busy_s = w.report.busy.as_secs_f64();
        writeln!(
            out,
            "{:<6} {:>12} {:>14} {:>12} {:>8.2} {:>10.1} {:>7.1} {:>8.1}",
            w.report.name,
            w.report.packets,
            w.report.bytes,
            w.kernel.drops,
            pct(w.kernel.drops, w.report.packets + w.kernel.drops),
            busy_s * 1e3,
            100.0 * busy_s / wall_s,
            pct(w.report.packets, total_pkts),
        )?;
    }
    writeln!(
        out,
        "{:<6} {:>12} {:>14} {:>12} {:>8.2} {:>10.1}",
        "total",
        total_pkts,
        total_bytes,
        total_drops,
        pct(total_drops, total_pkts + total_drops),
        wall_s * 1e3
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_table_shows_kernel_drops() {
        let worker = |i: usize, pkts: u64, drops: u64| LiveWorkerReport {
            report: WorkerReport {
                name: worker_name(i),
                packets: pkts,
                bytes: pkts * 60,
                busy: Duration::from_millis(5),
                counters: CounterSet::new(),
            },
            kernel: KernelCounts { drops, ..Default::default() },
            ..Default::default()
        };
        let mut out = Vec::new();
        write_live_load_table(&mut out, &[worker(0, 900, 100), worker(1, 1000, 0)], Duration::from_secs(1)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let w1 = text.lines().find(|l| l.starts_with("W#01")).unwrap();
        assert!(w1.contains(" 100 ") && w1.contains("10.00"), "{text}");
        let total = text.lines().find(|l| l.starts_with("total")).unwrap();
        assert!(total.contains(" 100 ") && total.contains("5.00"), "{text}");
    }

    #[test]
    fn writer_keeps_arrival_order_and_sinks() {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let eve = Arc::new(Mutex::new(Vec::new()));
        let fast = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let logs = LiveLogs { eve: Box::new(Shared(Arc::clone(&eve))), fast: Box::new(Shared(Arc::clone(&fast))) };
        let writer = std::thread::spawn(move || write_events(rx, logs));
        for key in [9u64, 3, 7] {
            let mut buf = EventBuf::default();
            buf.push(key, |o| o.extend_from_slice(format!("{key}\n").as_bytes()));
            buf.push_to(crate::output::merge::Sink::FastLog, key, |o| o.extend_from_slice(b"f\n"));
            tx.send(buf).unwrap();
        }
        drop(tx);
        assert_eq!(writer.join().unwrap().unwrap(), 6);
        assert_eq!(&*eve.lock().unwrap(), b"9\n3\n7\n");
        assert_eq!(&*fast.lock().unwrap(), b"f\nf\nf\n");
    }
}
