//! `picket top`: per-core load (from /proc/stat and /proc/softirqs), per-interface packet
//! rates (from /sys/class/net/*/statistics) and, when picket is running, per-worker rates
//! from its stats snapshot ([`crate::tools::snapshot`]). A live terminal view refreshed every
//! interval, or with `--once` (or when stdout is not a terminal) plain tables from two
//! samples one interval apart: the per-core table to compare before and after tuning.

pub mod sample;
pub mod table;
pub mod tui;

use crate::tools::snapshot::{IpsSnapshot, StatsSnapshot, WorkerSnapshot};
use sample::{Sample, Sources};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(clap::Args, Debug, Clone)]
pub struct TopArgs {
    /// Print the tables once (two samples --interval apart) instead of the live view.
    /// Implied when stdout is not a terminal.
    #[arg(long)]
    pub once: bool,
    /// Seconds between samples (refresh period of the live view).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// picket's live stats snapshot (LOGDIR/picket-stats.json); per-worker rates when present.
    #[arg(long = "stats", value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Only these interfaces (repeatable). Default: every interface but lo.
    #[arg(short = 'i', long = "iface", value_name = "IFACE")]
    pub ifaces: Vec<String>,
    /// Read /proc files from this directory instead of /proc.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// Read /sys files from this directory instead of /sys.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sys_root: PathBuf,
}

impl TopArgs {
    pub fn sources(&self) -> Sources {
        Sources {
            proc_root: self.proc_root.clone(),
            sys_root: self.sys_root.clone(),
            stats_file: self.stats.clone(),
            ifaces: self.ifaces.clone(),
        }
    }

    fn interval(&self) -> Result<Duration, String> {
        if !(self.interval.is_finite() && (0.05..=3600.0).contains(&self.interval)) {
            return Err(format!("--interval {} out of range (0.05 to 3600 seconds)", self.interval));
        }
        Ok(Duration::from_secs_f64(self.interval))
    }
}

pub fn run_top(args: &TopArgs) -> Result<(), String> {
    let interval = args.interval()?;
    let sources = args.sources();
    if args.once || !std::io::stdout().is_terminal() {
        let view = sample_once(&sources, interval)?;
        let mut out = std::io::stdout().lock();
        table::write_view(&mut out, &view).and_then(|_| out.flush()).map_err(|e| format!("stdout: {e}"))
    } else {
        tui::run(&sources, interval)
    }
}

/// Two samples `interval` apart, as `--once` prints them.
pub fn sample_once(sources: &Sources, interval: Duration) -> Result<TopView, String> {
    let mut state = TopState::new(sample::read_sample(sources)?);
    // Measured rather than assumed: sleep overshoots, and reading the files takes time.
    let started = Instant::now();
    std::thread::sleep(interval);
    let current = sample::read_sample(sources)?;
    Ok(state.advance(current, started.elapsed(), unix_now_ns()))
}

pub(crate) fn unix_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Load of one CPU over the interval, in percent of its time. `None` fields: no delta
/// (CPU came online during the interval, or its counters went backwards).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuLoad {
    /// `None` for the all-CPU row.
    pub cpu: Option<u32>,
    /// user + nice.
    pub user: Option<f64>,
    pub system: Option<f64>,
    pub irq: Option<f64>,
    pub softirq: Option<f64>,
    /// idle + iowait.
    pub idle: Option<f64>,
    pub net_rx_per_sec: Option<f64>,
    pub net_tx_per_sec: Option<f64>,
}

impl CpuLoad {
    pub fn busy(&self) -> Option<f64> {
        self.idle.map(|idle| (100.0 - idle).max(0.0))
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct IfaceRates {
    pub name: String,
    pub rx_packets_per_sec: Option<f64>,
    pub rx_bits_per_sec: Option<f64>,
    pub rx_drops_per_sec: Option<f64>,
    pub tx_packets_per_sec: Option<f64>,
    pub tx_bits_per_sec: Option<f64>,
    pub tx_drops_per_sec: Option<f64>,
    /// Cumulative drops (rx_dropped + tx_dropped) at the second sample.
    pub total_drops: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerRates {
    pub name: String,
    pub packets_per_sec: Option<f64>,
    pub bits_per_sec: Option<f64>,
    pub drops_per_sec: Option<f64>,
    /// Share of the interval spent inspecting, percent.
    pub busy: Option<f64>,
    pub packets: u64,
    pub drops: u64,
    /// Inline runs: verdict rates and totals.
    pub ips: Option<IpsRates>,
}

/// An inline worker's verdicts: rates over the interval, and the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IpsRates {
    pub accepted_per_sec: Option<f64>,
    pub blocked_per_sec: Option<f64>,
    pub rejected_per_sec: Option<f64>,
    pub totals: IpsSnapshot,
}

/// Where packets ended in the XDP program, for one reason ("blocklisted", ...).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct XdpRate {
    pub reason: String,
    pub packets_per_sec: Option<f64>,
    pub packets: u64,
    pub bytes: u64,
}

/// What the worker section shows.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerView {
    /// No `--stats` file given.
    NotRequested,
    /// The file does not exist (picket not running, or not writing snapshots there).
    Missing(PathBuf),
    Unreadable(String),
    /// Rates between the last two distinct snapshots; `age_secs` since the newest one.
    Workers {
        rows: Vec<WorkerRates>,
        age_secs: f64,
        stale: bool,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct TopView {
    pub interval_secs: f64,
    pub all: Option<CpuLoad>,
    pub cpus: Vec<CpuLoad>,
    pub ifaces: Vec<IfaceRates>,
    /// Interfaces left out by the listing limit.
    pub ifaces_not_shown: u64,
    pub workers: WorkerView,
    /// The XDP program's counters per reason (`picket.xdp.*` of the snapshot), when the
    /// DDoS layer runs.
    pub xdp: Vec<XdpRate>,
    /// Adaptive fanout (`dispatch.*` of the snapshot): buckets moved and the imbalance
    /// before/after, one line; `None` when the run does not rebalance.
    pub dispatch: Option<String>,
    /// Lines or files the parsers could not read in the latest sample.
    pub anomalies: u64,
}

/// The adaptive fanout line of `picket top` from a snapshot's global counters.
fn dispatch_line(global: &std::collections::BTreeMap<String, u64>) -> Option<String> {
    use crate::pipeline::adaptive_live::{BUCKETS_MOVED, FLOWS_HANDED_OVER, IMBALANCE_AFTER, IMBALANCE_BEFORE};
    let moved = *global.get(BUCKETS_MOVED)?;
    let get = |name: &str| global.get(name).copied().unwrap_or(0);
    let ratio = |pct: u64| if pct == 0 { "-".to_string() } else { format!("{:.2}", pct as f64 / 100.0) };
    Some(format!(
        "adaptive fanout: {moved} buckets moved, {} flows handed over, imbalance (max/mean) before {} after {}",
        get(FLOWS_HANDED_OVER),
        ratio(get(IMBALANCE_BEFORE)),
        ratio(get(IMBALANCE_AFTER))
    ))
}

/// Carries what rates need between refreshes: the previous sample, and the last two
/// distinct picket snapshots (the file is rewritten on its own schedule, so two reads one
/// interval apart may see the same snapshot).
pub struct TopState {
    previous: Sample,
    snapshot_older: Option<StatsSnapshot>,
    snapshot_newer: Option<StatsSnapshot>,
}

impl TopState {
    pub fn new(first: Sample) -> TopState {
        let snapshot_newer = first.snapshot.clone();
        TopState { previous: first, snapshot_older: None, snapshot_newer }
    }

    /// Takes the next sample, `elapsed` after the previous one, and returns the view.
    pub fn advance(&mut self, current: Sample, elapsed: Duration, now_ns: u64) -> TopView {
        let secs = elapsed.as_secs_f64();
        let workers = self.worker_view(&current, now_ns, secs);
        let xdp = self.xdp_rates();
        let dispatch = self.snapshot_newer.as_ref().and_then(|s| dispatch_line(&s.global));
        let previous = std::mem::replace(&mut self.previous, current);
        let current = &self.previous;

        let all = match (previous.stat.all, current.stat.all) {
            (Some(a), Some(b)) => Some(cpu_load(None, &a, &b, None, None)),
            _ => None,
        };
        let cpus: Vec<CpuLoad> = current
            .stat
            .cpus
            .iter()
            .map(|(cpu, now)| {
                let rx = counter_rate(previous.softirqs.net_rx.get(cpu), current.softirqs.net_rx.get(cpu), secs);
                let tx = counter_rate(previous.softirqs.net_tx.get(cpu), current.softirqs.net_tx.get(cpu), secs);
                match previous.stat.cpus.get(cpu) {
                    Some(before) => cpu_load(Some(*cpu), before, now, rx, tx),
                    None => CpuLoad { cpu: Some(*cpu), net_rx_per_sec: rx, net_tx_per_sec: tx, ..CpuLoad::default() },
                }
            })
            .collect();
        // The all-CPU row's softirq rates: the sum of the CPUs that have one.
        let sum = |f: fn(&CpuLoad) -> Option<f64>| cpus.iter().filter_map(f).reduce(|a, b| a + b);
        let all = all.map(|load| CpuLoad {
            net_rx_per_sec: sum(|c| c.net_rx_per_sec),
            net_tx_per_sec: sum(|c| c.net_tx_per_sec),
            ..load
        });

        let ifaces = current
            .ifaces
            .iter()
            .map(|(name, now)| {
                let before = previous.ifaces.get(name);
                let rate = |f: fn(&sample::NetDevCounters) -> Option<u64>| {
                    counter_rate(before.and_then(f).as_ref(), f(now).as_ref(), secs)
                };
                IfaceRates {
                    name: name.clone(),
                    rx_packets_per_sec: rate(|c| c.rx_packets),
                    rx_bits_per_sec: rate(|c| c.rx_bytes).map(|b| b * 8.0),
                    rx_drops_per_sec: rate(|c| c.rx_dropped),
                    tx_packets_per_sec: rate(|c| c.tx_packets),
                    tx_bits_per_sec: rate(|c| c.tx_bytes).map(|b| b * 8.0),
                    tx_drops_per_sec: rate(|c| c.tx_dropped),
                    total_drops: now.rx_dropped.unwrap_or(0).saturating_add(now.tx_dropped.unwrap_or(0)),
                }
            })
            .collect();

        TopView {
            interval_secs: secs,
            all,
            cpus,
            ifaces,
            ifaces_not_shown: current.ifaces_not_shown,
            workers,
            xdp,
            dispatch,
            anomalies: current.anomalies,
        }
    }

    /// The `picket.xdp.*` counters of the newest snapshot, with rates against the one
    /// before (call after `worker_view`, which rotates the snapshots).
    fn xdp_rates(&self) -> Vec<XdpRate> {
        let Some(newer) = &self.snapshot_newer else { return Vec::new() };
        let older = self.snapshot_older.as_ref().filter(|older| older.timestamp < newer.timestamp);
        let prefix = crate::xdp::stats::PREFIX;
        newer
            .global
            .iter()
            .filter_map(|(name, &packets)| {
                let reason = name.strip_prefix(prefix).filter(|r| !r.ends_with("_bytes"))?;
                let bytes = newer.global.get(&format!("{name}_bytes")).copied().unwrap_or(0);
                let packets_per_sec = older.and_then(|o| {
                    let span = (newer.timestamp - o.timestamp) as f64 / 1e9;
                    counter_rate(o.global.get(name), Some(&packets), span)
                });
                Some(XdpRate { reason: reason.to_string(), packets_per_sec, packets, bytes })
            })
            .collect()
    }

    fn worker_view(&mut self, current: &Sample, now_ns: u64, interval_secs: f64) -> WorkerView {
        let Some(path) = &current.stats_file else { return WorkerView::NotRequested };
        if let Some(error) = &current.snapshot_error {
            return WorkerView::Unreadable(error.clone());
        }
        let Some(snapshot) = &current.snapshot else { return WorkerView::Missing(path.clone()) };
        if self.snapshot_newer.as_ref().map(|s| s.timestamp) != Some(snapshot.timestamp) {
            self.snapshot_older = self.snapshot_newer.take();
            self.snapshot_newer = Some(snapshot.clone());
        }
        let newer = snapshot;
        let older = self.snapshot_older.as_ref().filter(|older| older.timestamp < newer.timestamp);
        let span_secs = older.map(|o| (newer.timestamp - o.timestamp) as f64 / 1e9);
        let rows = newer
            .workers
            .iter()
            .map(|w| {
                let before: Option<&WorkerSnapshot> = older.and_then(|o| o.workers.iter().find(|b| b.name == w.name));
                let rate = |f: fn(&WorkerSnapshot) -> u64| match (before, span_secs) {
                    (Some(b), Some(span)) => counter_rate(Some(&f(b)), Some(&f(w)), span),
                    _ => None,
                };
                WorkerRates {
                    name: w.name.clone(),
                    packets_per_sec: rate(|w| w.packets),
                    bits_per_sec: rate(|w| w.bytes).map(|b| b * 8.0),
                    drops_per_sec: rate(|w| w.drops),
                    // busy_ns per second of wall time is a fraction of 1e9.
                    busy: rate(|w| w.busy_ns).map(|ns| (ns / 1e9 * 100.0).min(100.0)),
                    packets: w.packets,
                    drops: w.drops,
                    ips: w.ips.map(|totals| {
                        let ips_rate = |f: fn(&IpsSnapshot) -> u64| match (before.and_then(|b| b.ips), span_secs) {
                            (Some(b), Some(span)) => counter_rate(Some(&f(&b)), Some(&f(&totals)), span),
                            _ => None,
                        };
                        IpsRates {
                            accepted_per_sec: ips_rate(|i| i.accepted),
                            blocked_per_sec: ips_rate(|i| i.blocked),
                            rejected_per_sec: ips_rate(|i| i.rejected),
                            totals,
                        }
                    }),
                }
            })
            .collect();
        let age_secs = now_ns.saturating_sub(newer.timestamp) as f64 / 1e9;
        // picket rewrites the file every second or so; a few missed updates mean it stopped.
        let stale = age_secs > (3.0 * interval_secs).max(5.0);
        WorkerView::Workers { rows, age_secs, stale }
    }
}

/// Per-second rate of a cumulative counter; `None` without both values or when the
/// counter went backwards (reset, device re-created).
fn counter_rate(before: Option<&u64>, now: Option<&u64>, secs: f64) -> Option<f64> {
    let (before, now) = (*before?, *now?);
    if now < before || secs <= 0.0 {
        return None;
    }
    Some((now - before) as f64 / secs)
}

/// Percentages of the time that passed between two /proc/stat readings of one CPU.
pub fn cpu_load(
    cpu: Option<u32>,
    before: &crate::tools::procfs::CpuTimes,
    now: &crate::tools::procfs::CpuTimes,
    net_rx_per_sec: Option<f64>,
    net_tx_per_sec: Option<f64>,
) -> CpuLoad {
    let mut load = CpuLoad { cpu, net_rx_per_sec, net_tx_per_sec, ..CpuLoad::default() };
    let (b_total, n_total) = (before.total(), now.total());
    if n_total <= b_total {
        return load; // no time passed, or the counters went backwards: nothing to divide
    }
    let total = (n_total - b_total) as f64;
    let pct = |b: u64, n: u64| Some(n.saturating_sub(b) as f64 * 100.0 / total);
    load.user = pct(before.user.saturating_add(before.nice), now.user.saturating_add(now.nice));
    load.system = pct(before.system, now.system);
    load.irq = pct(before.irq, now.irq);
    load.softirq = pct(before.softirq, now.softirq);
    load.idle = pct(before.idle.saturating_add(before.iowait), now.idle.saturating_add(now.iowait));
    load
}

#[cfg(test)]
mod dispatch_tests {
    use super::dispatch_line;
    use std::collections::BTreeMap;

    #[test]
    fn dispatch_line_shows_moves_and_imbalance() {
        let mut global = BTreeMap::new();
        assert_eq!(dispatch_line(&global), None);
        global.insert("dispatch.buckets_moved".to_string(), 37);
        global.insert("dispatch.imbalance_before_pct".to_string(), 131);
        global.insert("dispatch.imbalance_after_pct".to_string(), 104);
        let line = dispatch_line(&global).unwrap();
        assert!(line.contains("37 buckets moved") && line.contains("before 1.31 after 1.04"), "{line}");
    }
}
