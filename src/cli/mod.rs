//! Command line, in Suricata's habits: `picket -r capture.pcap -l logs/ [-c picket.yaml]
//! [-k none|all|auto] [--set key=value]... [--runmode single|workers] [--workers N]
//! [--dispatch flow|roundrobin|random]`, plus subcommands (`picket bench ...`).

mod args;
mod bench;
mod info;
mod live;
mod progress;
mod resolve;

pub use args::{InfoArgs, LiveArgs, RunArgs, ServiceArgs};
pub use bench::BenchArgs;
pub use resolve::{load_rules, resolve, warn, CliError, Resolved};

use crate::capture::{self, PacketSource};
use crate::config::OutputsConfig;
use crate::config::{Config, EngineSettings, EngineSettingsExt};
use crate::counters::CounterSet;
use crate::dispatch::make_policy;
use crate::output::stats::{stats_event_with_global, write_load_table, write_stats_log};
use crate::output::target::{Delivery, Targets};
use crate::pipeline::{self, RunSummary};
use crate::rules::RuleSources;
use clap::{Parser, Subcommand};
use std::fs::{self, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    name = "picket",
    version,
    disable_version_flag = true,
    about = "Multi-core IPS, Suricata-compatible",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure packets/s and Gbit/s on a capture preloaded into memory.
    Bench(BenchArgs),
    /// Rule set tools.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Live per-core load, per-interface rates and per-worker rates (--once: plain tables).
    Top(crate::tools::TopArgs),
    /// Show a NIC's queues, IRQs and RPS/RFS/XPS, then spread them over the cores.
    Tune(crate::tools::TuneArgs),
    /// Talk to a running picket over its control socket (reload-rules, reopen-logs, stats, ...).
    Ctl(crate::service::ctl::CtlArgs),
    /// Write the man page or shell completions generated from this command line.
    Generate(info::GenerateArgs),
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Load rules as a run would and report loaded / skipped / failed, with the
    /// skipped-by-keyword table. Exits 1 when a rule failed (malformed); rules skipped for an
    /// unsupported keyword alone do not fail the check.
    Check {
        /// Rule files (as `-S`); without them, the configured rule-files.
        #[arg(short = 'S', value_name = "FILE")]
        rules: Vec<PathBuf>,
        /// Suricata-format YAML (vars, rule-files, classification-file, threshold-file).
        #[arg(short = 'c', value_name = "FILE")]
        config: Option<PathBuf>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// More rule files.
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    if cli.run.no_random {
        picket_core::flow::hash::fix_seeds();
    }
    let result = match cli.command {
        Some(Command::Bench(args)) => bench::run(&args),
        Some(Command::Rules(RulesCommand::Check { mut rules, config, set, files })) => {
            rules.extend(files);
            let sources = RuleSources { exclusive: rules, extra: vec![] };
            check_rules(config.as_deref(), &set, &sources)
        }
        Some(Command::Top(args)) => crate::tools::run_top(&args).map_err(CliError),
        Some(Command::Tune(args)) => crate::tools::run_tune(&args).map_err(CliError),
        Some(Command::Ctl(args)) => crate::service::ctl::run_client(&args).map_err(CliError),
        Some(Command::Generate(args)) => info::generate(&args),
        None if cli.run.info.requested() => info::run(&cli.run),
        None if cli.run.test_config => {
            let sources =
                RuleSources { exclusive: cli.run.rules_exclusive.clone(), extra: cli.run.rules_extra.clone() };
            check_rules(cli.run.config.as_deref(), &cli.run.set, &sources)
        }
        None if cli.run.is_live() => live::run_live_capture(&cli.run),
        None => match run_offline(&cli.run) {
            Ok(OfflineEnd::Complete) => Ok(()),
            Ok(OfflineEnd::InputSkipped) => return EXIT_INPUT_SKIPPED,
            Ok(OfflineEnd::EventsLost) => return EXIT_EVENTS_LOST,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => 0,
        Err(CliError(msg)) => {
            eprintln!("picket: error: {msg}");
            1
        }
    }
}

/// Exit status of an offline run that wrote its outputs but could not read all of its
/// input: a file of `-r DIR` that cannot be opened or is not a capture, or a read error
/// (each reported with its name, the reason and, where reading started, the byte offset;
/// everything readable was processed). A capture that ends inside a record or holds an
/// invalid record header is reported with the offset but keeps exit status 0: it was read
/// up to the break, nothing after it can be framed, and Suricata treats it the same way.
pub const EXIT_INPUT_SKIPPED: i32 = 3;

/// Exit status of an offline run that read its input but could not write every event: a
/// log file write failed (a full disk). Each failure was reported on stderr and the lost
/// events are counted in `picket.output.events_dropped`; writing went on after them.
/// Takes precedence over [`EXIT_INPUT_SKIPPED`].
pub const EXIT_EVENTS_LOST: i32 = 4;

/// How an offline run that wrote its outputs ended.
#[derive(Debug, PartialEq, Eq)]
enum OfflineEnd {
    Complete,
    InputSkipped,
    EventsLost,
}

fn run_offline(args: &RunArgs) -> Result<OfflineEnd, CliError> {
    let Some(input) = &args.read else {
        return Err(CliError("nothing to do: give a capture with -r FILE|DIR (see --help)".into()));
    };
    let mut resolved = resolve(args)?;
    // Removed when the run ends (`crate::service::daemon`).
    let _pidfile = crate::service::daemon::offline_pidfile(&args.service)?;
    let sources = RuleSources { exclusive: args.rules_exclusive.clone(), extra: args.rules_extra.clone() };
    let rules = load_rules(&resolved.config, &resolved.engine, &sources, true, args.verbose > 0)?;
    resolved.options.inspect.detect = rules.engine.map(Arc::new);
    if let Some(engine) = &resolved.options.inspect.detect {
        let eve = Arc::make_mut(&mut resolved.options.eve);
        crate::output::eve::tx::enable_rule_fingerprints(eve, |b| engine.uses_buffer(b));
    }
    let log_dir = resolved.outputs.log_dir.clone();
    fs::create_dir_all(&log_dir)
        .map_err(|e| CliError(format!("cannot create log directory {}: {e}", log_dir.display())))?;
    // SIGHUP reopens the logs (as live); SIGUSR2 is reported and ignored offline.
    let reopen = crate::service::LogReopen::default();
    let _signals = crate::service::signals::start(reopen.clone(), None)?;
    // SIGINT/SIGTERM stop reading; the run then ends as at the end of its input (workers
    // drained, final stats, logs closed on a whole line). A second one exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    crate::service::signals::register_stop(&stop)?;
    resolved.options.stop = Some(Arc::clone(&stop));
    let mut source = capture::open_offline(input)?;
    // Disabled outputs go nowhere; reading a capture may wait for a slow socket reader.
    let mut targets = Targets::new(reopen, Delivery::Lossless);
    let eve_target = match &resolved.outputs.eve {
        Some(eve) => targets.open(&eve.target)?,
        None => Box::new(std::io::sink()),
    };
    let mut eve = BufWriter::with_capacity(1 << 20, eve_target);
    let mut fast = BufWriter::new(match &resolved.outputs.fast {
        Some(fast) => targets.file(&fast.path, fast.append)?,
        None => Box::new(std::io::sink()),
    });
    let logs = pipeline::LogWriters { eve: &mut eve, fast: &mut fast };
    // A progress bar on stderr when it is a terminal (cli/progress.rs).
    let display = progress::ProgressDisplay::start();
    let state = display.as_ref().map(progress::ProgressDisplay::state);
    let summary = pipeline::run_with_progress(
        source.as_mut(),
        make_policy(resolved.policy, resolved.options.workers, resolved.options.inspect.track_vlan),
        &resolved.options,
        logs,
        state,
    );
    drop(display);
    let summary = summary?;
    fast.flush()?;
    // Every event reaches its target before the targets' counters are read.
    eve.flush()?;
    for e in &summary.capture_errors {
        let what = if e.is_damage() { "read up to the break" } else { "skipped" };
        warn(format!("{e}; {what}"));
    }
    // The counters of the targets join the final stats (files: write errors and the
    // events they lost).
    let target_counters = targets.counters();
    let mut global = CounterSet::new();
    for source in targets.counter_sources() {
        source(&mut global);
    }
    write_final_outputs(&resolved.outputs, &mut eve, &summary, &global, resolved.options.eve.stats_threads)?;
    drop(eve);
    drop(fast);
    report_to_terminal(source.as_ref(), &resolved, &summary);
    // The process exits after this: the engine and the rule-load report (hundreds of MB of
    // small allocations with ET Open) are left to the exit instead of being freed one by
    // one, which took ~0.2 s of serial time at the end of every run.
    leave_to_exit(resolved.options.inspect.detect.take());
    leave_to_exit(rules.load);
    if let Some(failure) = summary.worker_failures.first() {
        return Err(CliError(format!(
            "{failure}; the run stopped after {} packets (stats written for what was inspected)",
            summary.packets_read
        )));
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("picket: stopped by signal after {} packets; stats written for what was read", summary.packets_read);
    }
    let lost = target_counters.events_dropped();
    if lost > 0 {
        warn(format!(
            "{lost} event{} could not be written (see picket.output.events_dropped); exit status {EXIT_EVENTS_LOST}",
            if lost == 1 { "" } else { "s" }
        ));
        return Ok(OfflineEnd::EventsLost);
    }
    let skipped = summary.capture_errors.iter().filter(|e| !e.is_damage()).count();
    if skipped > 0 {
        warn(format!(
            "{skipped} input file{} could not be read in full; exit status {EXIT_INPUT_SKIPPED}",
            if skipped == 1 { "" } else { "s" }
        ));
        return Ok(OfflineEnd::InputSkipped);
    }
    Ok(OfflineEnd::Complete)
}

/// Keeps `value` alive until the process exits instead of freeing it: for large structures
/// built once (rule sets, engines) right before `main` returns, where freeing is pure cost.
fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// `picket rules check` and `-T`.
fn check_rules(config: Option<&Path>, sets: &[String], sources: &RuleSources) -> Result<(), CliError> {
    // Nothing here inspects packets: 4 KiB pages keep the peak where it was before the
    // binary asked for huge pages (src/main.rs).
    crate::heap::without_huge_pages();
    let (config, warnings) = Config::load(config, sets)?;
    for w in warnings {
        warn(w);
    }
    let (engine, warnings) = EngineSettings::from_config(&config)?;
    for w in warnings {
        warn(w);
    }
    // The outputs: section too, as a run would read it (a bad filetype fails the check).
    let outputs = OutputsConfig::from_config(&config, None, crate::config::AppendDefault::Append).map_err(CliError)?;
    for w in outputs.warnings {
        warn(w);
    }
    let loaded = load_rules(&config, &engine, sources, false, false)?;
    println!("{}", loaded.summary());
    if let Some(cache) = &loaded.mpm_cache {
        println!("{}", cache.summary());
    }
    println!("loaded  {}", loaded.build.rules_loaded);
    println!("skipped {}", loaded.skipped());
    println!("failed  {}", loaded.failed());
    let table = loaded.skipped_table();
    if !table.is_empty() {
        println!("\nskipped by keyword:");
        for (keyword, n) in table {
            println!("  {n:>6}  {keyword}");
        }
    }
    if !loaded.build.rules_inactive.is_empty() {
        // Loaded (and counted above) but unable to match yet: say so rather than let a user
        // believe they are covered.
        println!("\nloaded but inactive (cannot match yet):");
        for (reason, n) in &loaded.build.rules_inactive {
            println!("  {n:>6}  {reason}");
        }
    }
    if loaded.build.prefilter_patterns > 0 {
        println!(
            "\nprefilter: {} patterns ({}{}, {} through a shorter pattern they contain), {} TCP/UDP port groups, {} rules checked without a fast pattern, engine memory {:.1} MB",
            loaded.build.prefilter_patterns,
            loaded.build.mpm_algo,
            loaded.hs_code_path.map(|p| format!(" on libhs's {p} code path")).unwrap_or_default(),
            loaded.build.prefilter_patterns_folded,
            loaded.build.prefilter_port_groups,
            loaded.build.rules_always_checked,
            loaded.build.memory_bytes as f64 / 1e6
        );
    }
    // Like Suricata's `-T`, any failed rule fails the check. Skipped rules (valid Suricata
    // with a keyword picket does not implement) do not: Suricata would load them, and the
    // table above names them.
    let failed = loaded.failed();
    leave_to_exit(loaded);
    match failed {
        0 => Ok(()),
        n => Err(CliError(format!("{n} rule(s) failed to load"))),
    }
}

fn write_final_outputs(
    outputs: &OutputsConfig,
    eve: &mut dyn Write,
    summary: &RunSummary,
    global: &CounterSet,
    stats_threads: bool,
) -> Result<(), CliError> {
    let ts = summary.last_ts.unwrap_or_default();
    let uptime = summary.wall.as_secs();
    let threads: Vec<_> = summary.workers.iter().chain(std::iter::once(&summary.reader)).cloned().collect();
    if outputs.eve_types().stats {
        eve.write_all(&stats_event_with_global(ts, uptime, &threads, global, stats_threads))?;
    }
    eve.flush()?;
    let Some(stats_log) = &outputs.stats else { return Ok(()) };
    let mut options = OpenOptions::new();
    options.create(true);
    if stats_log.append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    let mut stats = options
        .open(&stats_log.path)
        .map_err(|e| CliError(format!("cannot write {}: {e}", stats_log.path.display())))?;
    write_stats_log(&mut stats, summary.wall, &wall_clock_date(), &threads)?;
    for (name, value) in global.iter() {
        writeln!(stats, "{name:<45} | {:<25} | {value}", "Global")?;
    }
    Ok(())
}

fn report_to_terminal(source: &dyn PacketSource, resolved: &Resolved, s: &RunSummary) {
    let mode = if resolved.options.single {
        "single".to_string()
    } else {
        format!("workers ({} workers, dispatch {})", s.workers.len(), resolved.policy)
    };
    let alerts: u64 = s.workers.iter().filter_map(|w| w.counters.get("detect.alert")).sum();
    println!(
        "picket: {} packets from {} in {:.3} s, run mode {mode}, {} events written, {alerts} alerts",
        s.packets_read,
        source.describe(),
        s.wall.as_secs_f64(),
        s.events_written
    );
    if let Some(filter) = &resolved.options.bpf_filter {
        println!(
            "picket: BPF filter '{}' passed {} packets and filtered out {}",
            filter.expression(),
            s.packets_read,
            s.bpf_filtered
        );
    }
    if s.ring_full_waits > 0 {
        println!("picket: dispatcher waited on a full worker ring {} times", s.ring_full_waits);
    }
    let mut out = std::io::stdout().lock();
    let _ = write_load_table(&mut out, &s.workers, s.wall);
    if let Some(r) = &s.rebalance {
        let handed: u64 = s.workers.iter().filter_map(|w| w.counters.get(crate::pipeline::FLOWS_HANDED_OVER)).sum();
        let fmt = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
        let _ = writeln!(
            out,
            "adaptive dispatch: {} buckets moved in {} rounds, {handed} flows handed over; load imbalance {} at the first move, {} at the last interval",
            r.buckets_moved,
            r.rounds,
            fmt(r.imbalance_before),
            fmt(r.imbalance_after)
        );
    }
}

/// "MM/DD/YYYY -- HH:MM:SS" in UTC, the Date line of Suricata's stats.log.
fn wall_clock_date() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let iso = crate::output::eve::format_timestamp(crate::packet::Timestamp::from_parts(now.as_secs(), 0));
    // iso is YYYY-MM-DDTHH:MM:SS.ffffff+0000
    format!("{}/{}/{} -- {}", &iso[5..7], &iso[8..10], &iso[0..4], &iso[11..19])
}
