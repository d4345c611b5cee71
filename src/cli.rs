//! Command line, in Suricata's habits: `picket -r capture.pcap -l logs/ [-c picket.yaml]
//! [-k none|all|auto] [--set key=value]... [--runmode single|workers] [--workers N]
//! [--dispatch flow|roundrobin|random]`, plus subcommands (`picket bench ...`).

use crate::capture::bpf::{expression_from_file_text, BpfFilter};
use crate::capture::{self, PacketSource};
use crate::config::{Config, EngineSettings};
use crate::dispatch::{make_policy, PolicyKind};
use crate::rules::{self, LoadedRules, RuleSources};
use crate::inspect::InspectSettings;
use crate::config::{alert_log_options, http_config, EngineSettingsExt};
use std::sync::Arc;
use crate::output::stats::{stats_event, write_load_table, write_stats_log};
use crate::pipeline::{self, RunOptions, RunSummary};
use clap::{Args, Parser, Subcommand};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(name = "picket", version, about = "Multi-core IPS, Suricata-compatible", args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure packets/s and Gbit/s on a capture preloaded into memory.
    Bench(crate::bench::BenchArgs),
    /// Rule set tools.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Live per-core load, per-interface rates and per-worker rates (--once: plain tables).
    Top(crate::tools::TopArgs),
    /// Show a NIC's queues, IRQs and RPS/RFS/XPS, then spread them over the cores.
    Tune(crate::tools::TuneArgs),
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Load rules as a run would and report loaded / skipped / failed, with the
    /// skipped-by-keyword table. Exits 1 when a rule failed to parse.
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

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Read packets from a pcap/pcapng file, or every capture in a directory.
    #[arg(short = 'r', value_name = "FILE|DIR")]
    pub read: Option<PathBuf>,
    /// Directory for eve.json, stats.log and the other logs.
    #[arg(short = 'l', value_name = "LOGDIR")]
    pub log_dir: Option<PathBuf>,
    /// Suricata-format YAML configuration.
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Rule file, used exclusively (replaces the configured rule files).
    #[arg(short = 'S', value_name = "FILE")]
    pub rules_exclusive: Vec<PathBuf>,
    /// Rule file, added to the configured rule files.
    #[arg(short = 's', value_name = "FILE")]
    pub rules_extra: Vec<PathBuf>,
    /// Checksum validation: none, all or auto.
    #[arg(short = 'k', value_name = "none|all|auto")]
    pub checksum: Option<String>,
    /// Override a configuration value (Suricata's dotted keys); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// single: one thread does everything. workers (or autofp): a reader dispatching to N pinned workers.
    #[arg(long, value_name = "single|workers|autofp")]
    pub runmode: Option<String>,
    /// Number of worker threads (default: one per CPU core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Dispatch policy: flow (symmetric flow hash), roundrobin or random.
    #[arg(long, value_name = "POLICY", default_value = "flow")]
    pub dispatch: String,
    /// Do not pin worker threads to CPU cores.
    #[arg(long)]
    pub no_pin: bool,
    /// Act on drop/reject rules as an inline IPS would, while reading a capture.
    #[arg(long)]
    pub simulate_ips: bool,
    /// Test the configuration and rules, then exit (Suricata's -T).
    #[arg(short = 'T')]
    pub test_config: bool,
    /// More log output.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Read the BPF filter from FILE ('#' starts a comment); instead of trailing words.
    #[arg(short = 'F', value_name = "FILE")]
    pub bpf_file: Option<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// A BPF capture filter, as for tcpdump (e.g. `port 22 and host 10.0.0.1`): packets it
    /// rejects are not inspected, not numbered and not logged.
    #[arg(trailing_var_arg = true, value_name = "BPF")]
    pub bpf: Vec<String>,
}

/// Live capture flags (`picket -i eth0 ...`).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Live capture")]
pub struct LiveArgs {
    /// Capture live from an interface through AF_PACKET rings (repeatable).
    #[arg(short = 'i', value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Suricata's spelling of -i: `--af-packet=IFACE`, or `--af-packet` alone for the
    /// interfaces of the YAML `af-packet:` list.
    #[arg(long = "af-packet", value_name = "IFACE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub af_packet: Vec<String>,
    /// Live capture: how the kernel spreads packets over the workers: hash (flow, the
    /// default), lb (round robin), cpu, rnd or qm; or Suricata's cluster_* names.
    #[arg(long, value_name = "MODE")]
    pub fanout: Option<String>,
    /// Live capture: leave the interfaces out of promiscuous mode.
    #[arg(long)]
    pub no_promisc: bool,
    /// Live capture: serve Prometheus metrics at http://ADDR/metrics (PORT alone binds 127.0.0.1).
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub metrics: Option<String>,
}

impl RunArgs {
    /// Whether an interface was named (`-i`, `--af-packet`).
    pub fn is_live(&self) -> bool {
        !self.live.interfaces.is_empty() || !self.live.af_packet.is_empty()
    }
}

/// An error worth one line on stderr and a non-zero exit.
#[derive(Debug)]
pub struct CliError(pub String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

pub fn warn(msg: impl std::fmt::Display) {
    eprintln!("picket: warning: {msg}");
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
    let result = match cli.command {
        Some(Command::Bench(args)) => crate::bench::run(&args),
        Some(Command::Rules(RulesCommand::Check { mut rules, config, set, files })) => {
            rules.extend(files);
            let sources = RuleSources { exclusive: rules, extra: vec![] };
            check_rules(config.as_deref(), &set, &sources)
        }
        Some(Command::Top(args)) => crate::tools::run_top(&args).map_err(CliError),
        Some(Command::Tune(args)) => crate::tools::run_tune(&args).map_err(CliError),
        None if cli.run.test_config => {
            let sources = RuleSources { exclusive: cli.run.rules_exclusive.clone(), extra: cli.run.rules_extra.clone() };
            check_rules(cli.run.config.as_deref(), &cli.run.set, &sources)
        }
        None if cli.run.is_live() => run_live_capture(&cli.run),
        None => run_offline(&cli.run),
    };
    match result {
        Ok(()) => 0,
        Err(CliError(msg)) => {
            eprintln!("picket: error: {msg}");
            1
        }
    }
}

/// Settings a run needs, resolved from the YAML, `--set` and the command line.
pub struct Resolved {
    pub options: RunOptions,
    pub policy: PolicyKind,
    pub config: Config,
    pub engine: EngineSettings,
    /// The filter given on the command line, with `-F` or as the YAML's top-level
    /// `bpf-filter` (Suricata's key for both); `None` when there is none.
    pub bpf_expression: Option<String>,
}

pub fn resolve(args: &RunArgs) -> Result<Resolved, CliError> {
    let (config, warnings) = Config::load(args.config.as_deref(), &args.set)?;
    for w in warnings {
        warn(w);
    }
    let (mut engine, warnings) = EngineSettings::from_config(&config)?;
    for w in warnings {
        warn(w);
    }
    if let Some(k) = &args.checksum {
        engine.apply_checksum_flag(k).map_err(|e| CliError(format!("-k: {e}")))?;
    }
    let single = match args.runmode.as_deref() {
        None | Some("workers") | Some("autofp") => false,
        Some("single") => true,
        Some(other) => return Err(CliError(format!("--runmode: unknown run mode '{other}' (expected single, workers or autofp)"))),
    };
    let workers = match args.workers {
        Some(0) => return Err(CliError("--workers: must be at least 1".into())),
        Some(n) if n > 1024 => return Err(CliError(format!("--workers: {n} is more than 1024"))),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    };
    let policy = args.dispatch.parse::<PolicyKind>().map_err(|e| CliError(format!("--dispatch: {e}")))?;
    let mut inspect = InspectSettings::from_engine(&engine, if single { 1 } else { workers }, args.simulate_ips);
    inspect.http = Arc::new(http_config(&config)?);
    let eve = Arc::new(alert_log_options(&config));
    let defrag = defrag_config(&config)?;
    let bpf_expression = bpf_expression(args, &config)?;
    let bpf_filter = match &bpf_expression {
        Some(expression) => Some(BpfFilter::new(expression).map_err(|e| CliError(e.to_string()))?),
        None => None,
    };
    Ok(Resolved {
        options: RunOptions { workers, single, pin_cores: !args.no_pin, inspect, eve, defrag, bpf_filter },
        policy,
        config,
        engine,
        bpf_expression,
    })
}

fn run_offline(args: &RunArgs) -> Result<(), CliError> {
    let Some(input) = &args.read else {
        return Err(CliError("nothing to do: give a capture with -r FILE|DIR (see --help)".into()));
    };
    let mut resolved = resolve(args)?;
    let sources = RuleSources { exclusive: args.rules_exclusive.clone(), extra: args.rules_extra.clone() };
    let rules = load_rules(&resolved.config, &resolved.engine, &sources, true, args.verbose > 0)?;
    resolved.options.inspect.detect = rules.engine.map(Arc::new);
    let log_dir = args.log_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    fs::create_dir_all(&log_dir).map_err(|e| CliError(format!("cannot create log directory {}: {e}", log_dir.display())))?;
    let mut source = capture::open_offline(input)?;
    let eve_path = log_dir.join("eve.json");
    let eve_file = File::create(&eve_path).map_err(|e| CliError(format!("cannot write {}: {e}", eve_path.display())))?;
    let mut eve = BufWriter::with_capacity(1 << 20, eve_file);
    let fast_path = log_dir.join("fast.log");
    let mut fast = BufWriter::new(File::create(&fast_path).map_err(|e| CliError(format!("cannot write {}: {e}", fast_path.display())))?);
    let logs = pipeline::LogWriters { eve: &mut eve, fast: &mut fast };
    let summary = pipeline::run(source.as_mut(), make_policy(resolved.policy), &resolved.options, logs)?;
    fast.flush()?;
    if let Some(e) = &summary.capture_error {
        warn(format!("{e}; processed the {} packets before it", summary.packets_read));
    }
    write_final_outputs(&log_dir, &mut eve, &summary)?;
    report_to_terminal(source.as_ref(), &resolved, &summary);
    Ok(())
}

/// `picket -i IFACE [-i IFACE ...] --workers N`: live capture until SIGINT/SIGTERM.
fn run_live_capture(args: &RunArgs) -> Result<(), CliError> {
    use crate::output::metrics::{self, LiveGauges};
    use crate::output::stats::worker_name;
    use crate::pipeline::live::{self, CaptureOverrides, LiveLogs, LiveOptions};
    use std::sync::atomic::{AtomicBool, Ordering};

    if args.read.is_some() {
        return Err(CliError("-r and -i/--af-packet cannot be combined: read a capture or capture live".into()));
    }
    let mut resolved = resolve(args)?;
    let mut interfaces: Vec<String> = Vec::new();
    for name in args.live.interfaces.iter().chain(args.live.af_packet.iter().filter(|n| !n.is_empty())) {
        if !interfaces.contains(name) {
            interfaces.push(name.clone());
        }
    }
    if args.live.af_packet.iter().any(|n| n.is_empty()) {
        for name in live::configured_interfaces(&resolved.config) {
            if !interfaces.contains(&name) {
                interfaces.push(name);
            }
        }
        if interfaces.is_empty() {
            return Err(CliError("--af-packet: no interface given and none listed under af-packet: in the configuration".into()));
        }
    }
    if resolved.options.single {
        warn("--runmode single does not apply to live capture; running workers");
    }
    if args.checksum.is_none() {
        resolved.engine.checksum_mode = live_checksum_mode(&resolved.config, &interfaces)?;
    }
    let workers = resolved.options.workers;
    // Memory caps are split between the workers that will really run.
    let mut inspect = crate::inspect::InspectSettings::from_engine(&resolved.engine, workers, args.simulate_ips);
    inspect.http = resolved.options.inspect.http.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let overrides = CaptureOverrides {
        fanout: args.live.fanout.as_deref().map(live::parse_fanout).transpose().map_err(|e| CliError(format!("--fanout: {e}")))?,
        promiscuous: args.live.no_promisc.then_some(false),
        bpf_filter: resolved.bpf_expression.clone(),
    };
    let (captures, warnings) = live::capture_configs(&resolved.config, &interfaces, &overrides, &stop).map_err(CliError)?;
    for w in warnings {
        warn(w);
    }
    let stats_interval = live::stats_interval(&resolved.config).map_err(CliError)?;
    let metrics_addr = args.live.metrics.as_deref().map(metrics::parse_listen_address).transpose().map_err(|e| CliError(format!("--metrics: {e}")))?;
    let sources = RuleSources { exclusive: args.rules_exclusive.clone(), extra: args.rules_extra.clone() };
    let rules = load_rules(&resolved.config, &resolved.engine, &sources, true, args.verbose > 0)?;
    inspect.detect = rules.engine.map(Arc::new);
    let log_dir = args.log_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    fs::create_dir_all(&log_dir).map_err(|e| CliError(format!("cannot create log directory {}: {e}", log_dir.display())))?;
    // A live sensor appends to its logs across restarts, as Suricata does by default.
    let open_log = |name: &str| {
        let path = log_dir.join(name);
        OpenOptions::new().create(true).append(true).open(&path).map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))
    };
    let logs = LiveLogs { eve: Box::new(open_log("eve.json")?), fast: Box::new(open_log("fast.log")?) };

    // Signals before the sockets: a Ctrl-C during setup still ends the run cleanly. A
    // second one exits at once.
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let sockets = live::open_sockets(&captures, workers).map_err(|e| CliError(e.to_string()))?;
    let gauges = Arc::new(LiveGauges::new((0..workers).map(worker_name)));
    let metrics_server = match metrics_addr {
        Some(addr) => Some(
            metrics::serve(addr, Arc::clone(&gauges), Arc::clone(&stop))
                .map_err(|e| CliError(format!("--metrics: cannot listen on {addr}: {e}")))?,
        ),
        None => None,
    };
    let opts = LiveOptions {
        captures: captures.clone(),
        workers,
        pin_cores: !args.no_pin,
        inspect,
        eve: resolved.options.eve.clone(),
        stats_interval,
        snapshot_path: Some(log_dir.join(crate::tools::snapshot::SNAPSHOT_FILE_NAME)),
        stats_log: Some(log_dir.join("stats.log")),
    };
    let described: Vec<String> = captures
        .iter()
        .map(|c| {
            let filter = c.bpf_filter.as_deref().map(|f| format!(", BPF filter '{f}'")).unwrap_or_default();
            format!("{} (fanout group {}, {}{filter})", c.interface, c.fanout_group, c.fanout_mode.name())
        })
        .collect();
    eprintln!(
        "picket: capturing on {} with {workers} workers, logs in {}{}; stop with Ctrl-C",
        described.join(", "),
        log_dir.display(),
        metrics_server.as_ref().map(|m| format!(", metrics at http://{}/metrics", m.local_addr)).unwrap_or_default()
    );
    let result = live::run_live(sockets, &opts, Arc::clone(&gauges), Arc::clone(&stop), logs);
    stop.store(true, Ordering::Relaxed);
    if let Some(server) = metrics_server {
        let _ = server.thread.join();
    }
    let summary = result?;
    let packets: u64 = summary.workers.iter().map(|w| w.report.packets).sum();
    let drops: u64 = summary.workers.iter().map(|w| w.ring.kernel_drops).sum();
    println!(
        "picket: {packets} packets from {} in {:.3} s, {drops} dropped by the kernel, {} events written",
        interfaces.join(", "),
        summary.wall.as_secs_f64(),
        summary.events_written
    );
    let mut out = std::io::stdout().lock();
    let _ = live::write_live_load_table(&mut out, &summary.workers, summary.wall);
    Ok(())
}

/// Suricata's `af-packet.checksum-checks` (default `kernel`). Packets this host sends
/// itself, or that reach a veth from a local sender, carry checksums the NIC or the
/// kernel has not filled in yet; the kernel already verified what it received. picket does
/// not read the per-packet "checksum not ready" flag yet, so `kernel` means: no checksum
/// validation in the engine. `yes` validates everything, `auto` samples as with `-k auto`.
fn live_checksum_mode(config: &Config, interfaces: &[String]) -> Result<crate::config::ChecksumMode, CliError> {
    use crate::config::ChecksumMode;
    let key = match config.node("af-packet") {
        Some(serde_yaml::Value::Sequence(items)) => interfaces
            .first()
            .and_then(|first| {
                let position = |name: &str| {
                    items.iter().position(|i| i.get("interface").and_then(|v| v.as_str()) == Some(name))
                };
                position(first).or_else(|| position("default"))
            })
            .map(|i| format!("af-packet.{i}.checksum-checks")),
        _ => Some("af-packet.checksum-checks".to_string()),
    };
    let value = key.as_deref().and_then(|k| config.get_str(k));
    match value.as_deref().map(str::trim) {
        None | Some("kernel") => Ok(ChecksumMode::Never),
        Some("auto") => Ok(ChecksumMode::Auto),
        Some(v) => match crate::config::parse_bool(v) {
            Some(true) => Ok(ChecksumMode::Always),
            Some(false) => Ok(ChecksumMode::Never),
            None => Err(CliError(format!("af-packet.checksum-checks: '{v}' is not kernel, yes, no or auto"))),
        },
    }
}

/// Loads rules for a run: prints the summary, every failed rule with file and line, and
/// (verbose) the skipped-by-keyword table. Bad rules never stop the rest from loading.
pub fn load_rules(config: &Config, engine: &EngineSettings, sources: &RuleSources, announce: bool, verbose: bool) -> Result<LoadedRules, CliError> {
    let loaded = rules::load(config, engine, sources).map_err(CliError)?;
    for w in &loaded.warnings {
        warn(w);
    }
    for e in &loaded.load.errors {
        eprintln!("picket: rule error: {e}");
    }
    for d in &loaded.load.duplicates {
        warn(format!(
            "duplicate signature {}:{} at {}:{} and {}:{}",
            d.gid, d.sid, d.first_file, d.first_line, d.second_file, d.second_line
        ));
    }
    if announce && !loaded.files.is_empty() {
        eprintln!("picket: {}", loaded.summary());
        if verbose {
            for (keyword, n) in loaded.skipped_table() {
                eprintln!("picket:   skipped {n:>6}  {keyword}");
            }
        }
    }
    Ok(loaded)
}

/// `picket rules check` and `-T`.
fn check_rules(config: Option<&Path>, sets: &[String], sources: &RuleSources) -> Result<(), CliError> {
    let (config, warnings) = Config::load(config, sets)?;
    for w in warnings {
        warn(w);
    }
    let (engine, warnings) = EngineSettings::from_config(&config)?;
    for w in warnings {
        warn(w);
    }
    let loaded = load_rules(&config, &engine, sources, false, false)?;
    println!("{}", loaded.summary());
    println!("loaded  {}", loaded.build.rules_loaded);
    println!("skipped {}", loaded.load.unsupported_count() + loaded.build.rules_rejected.len());
    println!("failed  {}", loaded.load.errors.len());
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
            "\nprefilter: {} patterns ({}), {} rules checked without a fast pattern, engine memory {:.1} MB",
            loaded.build.prefilter_patterns,
            loaded.build.mpm_algo,
            loaded.build.rules_always_checked,
            loaded.build.memory_bytes as f64 / 1e6
        );
    }
    if loaded.load.errors.is_empty() {
        Ok(())
    } else {
        Err(CliError(format!("{} rule(s) failed to load", loaded.load.errors.len())))
    }
}

/// Suricata's `defrag:` section: on unless `defrag.enabled: no`; memcap, timeout, policy.
fn defrag_config(config: &Config) -> Result<Option<crate::defrag::DefragConfig>, CliError> {
    if config.get_bool("defrag.enabled")? == Some(false) {
        return Ok(None);
    }
    let mut cfg = crate::defrag::DefragConfig::default();
    if let Some(memcap) = config.get_size("defrag.memcap")? {
        cfg.memcap = memcap;
    }
    if let Some(timeout) = config.get_u64("defrag.timeout")? {
        cfg.timeout_secs = timeout.min(u32::MAX as u64) as u32;
    }
    if let Some(policy) = config.get_str("defrag.default-policy") {
        cfg.policy = crate::defrag::DefragPolicy::from_name(&policy)
            .ok_or_else(|| CliError(format!("defrag.default-policy: unknown policy '{policy}'")))?;
    }
    Ok(Some(cfg))
}

/// The BPF filter of a run, from (in Suricata's order of precedence) the trailing words
/// of the command line or `-F FILE`, else the YAML's top-level `bpf-filter` (which
/// `--set bpf-filter=...` also sets). An empty expression is no filter.
fn bpf_expression(args: &RunArgs, config: &Config) -> Result<Option<String>, CliError> {
    let from_words = check_bpf_words(&args.bpf)?;
    let from_file = match &args.bpf_file {
        Some(path) => {
            let text = fs::read_to_string(path)
                .map_err(|e| CliError(format!("-F: cannot read BPF filter file {}: {e}", path.display())))?;
            Some(expression_from_file_text(&text))
        }
        None => None,
    };
    let expression = match (from_words, from_file) {
        (Some(words), Some(_)) => {
            return Err(CliError(format!(
                "BPF filter given twice: '{words}' on the command line and a file with -F; use one of them"
            )))
        }
        (Some(words), None) => Some(words),
        (None, Some(file)) => Some(file),
        (None, None) => config.get_str("bpf-filter"),
    };
    Ok(expression.map(|e| e.trim().to_string()).filter(|e| !e.is_empty()))
}

/// Trailing words are a BPF filter, as on Suricata's command line. A shell glob after `-S`
/// (`-S rules/*.rules`) or an option after the filter lands here too: say so instead of
/// silently taking rule files and options for filter words.
fn check_bpf_words(words: &[String]) -> Result<Option<String>, CliError> {
    if words.is_empty() {
        return Ok(None);
    }
    if let Some(option) = words.iter().find(|w| w.starts_with('-')) {
        return Err(CliError(format!(
            "'{option}' comes after the BPF filter '{}': put options before the filter",
            words.join(" ")
        )));
    }
    if let Some(file) = words.iter().find(|w| Path::new(w.as_str()).is_file()) {
        return Err(CliError(format!(
            "'{file}' is a file, not a BPF filter word: -S takes one rule file; repeat -S for each file \
             (e.g. `$(printf -- '-S %s ' rules/*.rules)`) or list them under rule-files in the -c YAML"
        )));
    }
    Ok(Some(words.join(" ")))
}

fn write_final_outputs(log_dir: &Path, eve: &mut dyn Write, summary: &RunSummary) -> Result<(), CliError> {
    let ts = summary.last_ts.unwrap_or_default();
    let uptime = summary.wall.as_secs();
    let threads: Vec<_> = summary.workers.iter().chain(std::iter::once(&summary.reader)).cloned().collect();
    eve.write_all(&stats_event(ts, uptime, &threads))?;
    eve.flush()?;
    let stats_path = log_dir.join("stats.log");
    let mut stats = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&stats_path)
        .map_err(|e| CliError(format!("cannot write {}: {e}", stats_path.display())))?;
    write_stats_log(&mut stats, summary.wall, &wall_clock_date(), &threads)?;
    Ok(())
}

fn report_to_terminal(source: &dyn PacketSource, resolved: &Resolved, s: &RunSummary) {
    let mode = if resolved.options.single {
        "single".to_string()
    } else {
        format!("workers ({} workers, dispatch {})", s.workers.len(), resolved.policy)
    };
    println!(
        "picket: {} packets from {} in {:.3} s, run mode {mode}, {} events written",
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
}

/// "MM/DD/YYYY -- HH:MM:SS" in UTC, the Date line of Suricata's stats.log.
fn wall_clock_date() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let iso = crate::output::eve::format_timestamp(crate::packet::Timestamp::from_parts(now.as_secs(), 0));
    // iso is YYYY-MM-DDTHH:MM:SS.ffffff+0000
    format!("{}/{}/{} -- {}", &iso[5..7], &iso[8..10], &iso[0..4], &iso[11..19])
}
