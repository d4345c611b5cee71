//! From command line and configuration to a resolved run: settings read once, at the edge,
//! into the typed structs the pipeline and the core take.

use super::args::RunArgs;
use crate::capture::bpf::{expression_from_file_text, BpfFilter};
use crate::config::{
    alert_log_options, file_config, http_config, smtp_config, AppendDefault, Config, EngineSettings, EngineSettingsExt,
    OutputsConfig,
};
use crate::dispatch::adaptive::AdaptiveSettings;
use crate::dispatch::PolicyKind;
use crate::inspect::InspectSettings;
use crate::pipeline::RunOptions;
use crate::rules::{self, LoadedRules, RuleSources};
use std::fs;
use std::path::Path;
use std::sync::Arc;

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

/// Settings a run needs, resolved from the YAML, `--set` and the command line.
pub struct Resolved {
    pub options: RunOptions,
    pub policy: PolicyKind,
    pub config: Config,
    pub engine: EngineSettings,
    /// The filter given on the command line, with `-F` or as the YAML's top-level
    /// `bpf-filter` (Suricata's key for both); `None` when there is none.
    pub bpf_expression: Option<String>,
    /// The logs to write (`outputs:`, `default-log-dir`, `-l`).
    pub outputs: OutputsConfig,
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
        Some(other) => {
            return Err(CliError(format!("--runmode: unknown run mode '{other}' (expected single, workers or autofp)")))
        }
    };
    let workers = match args.workers {
        Some(0) => return Err(CliError("--workers: must be at least 1".into())),
        Some(n) if n > 1024 => return Err(CliError(format!("--workers: {n} is more than 1024"))),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    };
    let policy = match (&args.dispatch, config.get_str("threading.dispatch")) {
        (Some(cli), _) => cli.parse::<PolicyKind>().map_err(|e| CliError(format!("--dispatch: {e}")))?,
        (None, Some(yaml)) => yaml.parse::<PolicyKind>().map_err(|e| CliError(format!("threading.dispatch: {e}")))?,
        (None, None) => PolicyKind::Flow,
    };
    let adaptive = adaptive_settings(&config)?;
    let mut inspect = InspectSettings::from_engine(&engine, if single { 1 } else { workers }, args.simulate_ips);
    let mut http = http_config(&config)?;
    let append = if args.is_live() { AppendDefault::Append } else { AppendDefault::Truncate };
    let outputs = OutputsConfig::from_config(&config, args.log_dir.as_deref(), append).map_err(CliError)?;
    for w in &outputs.warnings {
        warn(w);
    }
    let mut eve = alert_log_options(&config);
    crate::output::eve::set_ipv6_compress(crate::config::eve_log_flag(&config, "ipv6-compress", false));
    eve.types = outputs.eve_types();
    eve.fast_log = outputs.fast.is_some();
    http.files = file_config(&config, eve.types.files);
    http.smtp = smtp_config(&config)?;
    // `body-md5: auto` (the default): computed when eve's `smtp` entry logs it, as Suricata.
    let body_md5_key = format!("{}.mime.body-md5", crate::config::SMTP_PREFIX);
    if eve.smtp.email.body_md5 && config.get_str(&body_md5_key).is_none_or(|v| v == "auto") {
        http.smtp.mime.body_md5 = true;
    }
    inspect.http = Arc::new(http);
    inspect.log_decode_anomalies = eve.types.anomaly && eve.anomaly.decode;
    // Suricata keeps the flows' MAC addresses only for eve-log's `ethernet: yes`.
    inspect.track_macs = eve.ethernet;
    crate::output::eve::common::set_common_options(crate::output::eve::common::CommonOptions {
        suricata_version: eve.suricata_version,
        ethernet: eve.ethernet,
        community_id: eve.community_id,
        metadata: eve.metadata,
    });
    let eve = Arc::new(eve);
    let defrag = defrag_config(&config)?;
    let bpf_expression = bpf_expression(args, &config)?;
    let bpf_filter = match &bpf_expression {
        Some(expression) => Some(BpfFilter::new(expression).map_err(|e| CliError(e.to_string()))?),
        None => None,
    };
    Ok(Resolved {
        options: RunOptions {
            workers,
            single,
            pin_cores: !args.no_pin,
            inspect,
            eve,
            defrag,
            bpf_filter,
            stop: None,
            adaptive,
        },
        policy,
        config,
        engine,
        bpf_expression,
        outputs,
    })
}

/// `threading.adaptive.*`: how the adaptive dispatch controller measures and moves.
pub(crate) fn adaptive_settings(config: &Config) -> Result<AdaptiveSettings, CliError> {
    let mut s = AdaptiveSettings::default();
    let number = |key: &str| -> Result<Option<f64>, CliError> {
        match config.get_str(key) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some)
                .ok_or_else(|| CliError(format!("{key}: '{v}' is not a non-negative number"))),
        }
    };
    if let Some(ms) = number("threading.adaptive.interval-ms")? {
        if ms < 1.0 {
            return Err(CliError("threading.adaptive.interval-ms: must be at least 1".into()));
        }
        s.interval = std::time::Duration::from_micros((ms * 1000.0) as u64);
    }
    if let Some(t) = number("threading.adaptive.threshold")? {
        if t < 1.0 {
            return Err(CliError("threading.adaptive.threshold: must be at least 1.0 (max/mean busy)".into()));
        }
        s.threshold = t;
    }
    if let Some(m) = number("threading.adaptive.max-moves")? {
        s.max_moves = m as usize;
    }
    Ok(s)
}

/// Loads rules for a run: prints the summary, every failed rule with file and line, and
/// (verbose) the skipped-by-keyword table. Bad rules never stop the rest from loading.
pub fn load_rules(
    config: &Config,
    engine: &EngineSettings,
    sources: &RuleSources,
    announce: bool,
    verbose: bool,
) -> Result<LoadedRules, CliError> {
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
        if let Some(cache) = &loaded.mpm_cache {
            eprintln!("picket: {}", cache.summary());
        }
        if verbose {
            for (keyword, n) in loaded.skipped_table() {
                eprintln!("picket:   skipped {n:>6}  {keyword}");
            }
        }
    }
    Ok(loaded)
}

/// Suricata's `defrag:` section: on unless `defrag.enabled: no`; memcap, timeout,
/// trackers, max-frags, policy.
pub(super) fn defrag_config(config: &Config) -> Result<Option<crate::defrag::DefragConfig>, CliError> {
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
    if let Some(trackers) = config.get_u64("defrag.trackers")? {
        cfg.max_trackers = trackers.min(usize::MAX as u64) as usize;
    }
    if let Some(max_frags) = config.get_u64("defrag.max-frags")? {
        cfg.max_frags = max_frags.min(usize::MAX as u64) as usize;
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
pub(super) fn bpf_expression(args: &RunArgs, config: &Config) -> Result<Option<String>, CliError> {
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
pub(super) fn check_bpf_words(words: &[String]) -> Result<Option<String>, CliError> {
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
