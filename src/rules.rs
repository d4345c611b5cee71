//! From configuration and command line to a running engine: rule variables from the YAML,
//! the rule files (`-S` replaces the configured ones, `-s` adds to them), classification
//! and threshold files, then the engine build. Shared by `picket -r` and `picket rules check`.
//!
//! This is where files are read: the rule parser and the engine only see their contents.

use crate::config::{Config, EngineSettings, EngineSettingsExt};
use crate::detect::engine::{BuildReport, DetectConfig, DetectEngine, EngineBuilder, PortGroupLimits, TableConfig};
use crate::detect::mpm::{MpmAlgo, UnknownMpmAlgo};
use crate::detect::rule::{
    parse_line, rule_lines_from, split_rule_file, ClassificationTable, ParsedLine, RulePiece, RuleSetLoad, RuleSink,
    RuleVars, ThresholdConfig,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the rules come from.
#[derive(Clone, Debug, Default)]
pub struct RuleSources {
    /// `-S`: only these files.
    pub exclusive: Vec<PathBuf>,
    /// `-s`: these in addition to the configured `rule-files`.
    pub extra: Vec<PathBuf>,
}

/// Everything a user wants to know about a rule load.
pub struct LoadedRules {
    pub engine: Option<DetectEngine>,
    pub load: RuleSetLoad,
    pub build: BuildReport,
    pub files: Vec<PathBuf>,
    /// Problems that did not stop the load (missing configured files, bad variables, ...).
    pub warnings: Vec<String>,
    pub elapsed: Duration,
    /// The Hyperscan database cache used by the build (`detect.sgh-mpm-caching`), if any.
    pub mpm_cache: Option<crate::matchers::MpmCache>,
    /// Hyperscan's code path (`native` or `avx2`, [`HS_AVX512_KEY`]) when the build used
    /// Hyperscan.
    pub hs_code_path: Option<&'static str>,
}

impl LoadedRules {
    /// Rules that failed: malformed (parser) or impossible to compile (engine), each one in
    /// `load.errors` with its file and line.
    pub fn failed(&self) -> usize {
        self.load.errors.len()
    }

    /// Valid rules skipped for a Suricata keyword picket does not implement.
    pub fn skipped(&self) -> usize {
        self.load.unsupported_count()
    }

    /// `loaded / skipped / failed`, the line `rules check` and start-up print.
    pub fn summary(&self) -> String {
        format!(
            "{} rules loaded, {} skipped (unsupported keyword), {} failed, {} duplicate sids, from {} file(s) in {:.2} s",
            self.build.rules_loaded,
            self.skipped(),
            self.failed(),
            self.load.duplicates.len(),
            self.files.len(),
            self.elapsed.as_secs_f64()
        )
    }

    /// Skipped rules by unsupported keyword, most frequent first.
    pub fn skipped_table(&self) -> Vec<(String, usize)> {
        let mut rows: Vec<(String, usize)> = self.load.unsupported.iter().map(|(k, &n)| (k.clone(), n)).collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        rows
    }
}

/// Rule variables: Suricata's defaults, overridden by the YAML's `vars:`.
/// Suricata's `host:` / `ippair:` sections (`hash-size`, `prealloc`, `memcap`) over
/// Suricata's defaults.
fn table_config(config: &Config, section: &str, defaults: TableConfig) -> Result<TableConfig, String> {
    let mut cfg = defaults;
    let key = |name: &str| format!("{section}.{name}");
    if let Some(v) = config.get_u64(&key("hash-size")).map_err(|e| e.to_string())? {
        if v == 0 {
            return Err(format!("{}: must be at least 1", key("hash-size")));
        }
        cfg.hash_size = v.min(u32::MAX as u64) as u32;
    }
    if let Some(v) = config.get_u64(&key("prealloc")).map_err(|e| e.to_string())? {
        cfg.prealloc = v.min(u32::MAX as u64) as u32;
    }
    if let Some(v) = config.get_size(&key("memcap")).map_err(|e| e.to_string())? {
        cfg.memcap = v;
    }
    Ok(cfg)
}

/// Suricata's key for prefilter profiling: per-prefilter scans, bytes and time in the stats.
pub const PROFILE_PREFILTER_KEY: &str = "profiling.prefilter.enabled";

/// picket's key (no Suricata equivalent) letting Hyperscan run its AVX-512 code on a CPU that
/// has it; default no: libhs's AVX2 code (see [`crate::matchers::HsCodePath`]).
pub const HS_AVX512_KEY: &str = "mpm-hs-avx512";

/// `detect.profile` (low, medium, high or custom; unset: [`PortGroupLimits::SINGLE`], not
/// Suricata's medium, for memory and compile time) and, for
/// `custom`, `detect.custom-values.toserver-groups` / `toclient-groups`: how many port
/// groups the TCP and UDP prefilter has per direction (Suricata's names and defaults).
fn port_group_limits(config: &Config) -> Result<PortGroupLimits, String> {
    let profile = config.get_str("detect.profile");
    let mut limits = match profile.as_deref() {
        None => PortGroupLimits::default(),
        Some(name) => PortGroupLimits::of_profile(name)
            .ok_or_else(|| format!("detect.profile: '{name}' is not low, medium, high or custom"))?,
    };
    if profile.as_deref() == Some("custom") {
        for (name, field) in [("toserver-groups", &mut limits.toserver), ("toclient-groups", &mut limits.toclient)] {
            let key = format!("detect.custom-values.{name}");
            match config.get_u64(&key).map_err(|e| e.to_string())? {
                None => {}
                Some(n) if (1..=u64::from(PortGroupLimits::MAX)).contains(&n) => *field = n as u16,
                Some(n) => return Err(format!("{key}: {n} is not a number from 1 to {}", PortGroupLimits::MAX)),
            }
        }
    }
    Ok(limits)
}

pub fn rule_vars(config: &Config, warnings: &mut Vec<String>) -> RuleVars {
    let mut vars = RuleVars::default();
    for (name, value) in config.address_groups() {
        vars.set_address(&name, &value);
    }
    for (name, value) in config.port_groups() {
        vars.set_port(&name, &value);
    }
    warnings.extend(vars.validate().into_iter().map(|w| format!("rule variables: {w}")));
    vars
}

/// Loads the rules and builds the engine. A missing `-S`/`-s` file is an error; a bad rule
/// is not (it is in `load.errors` with file and line, the rest load). Each rule compiles as
/// soon as it is parsed (`LoadedRules::load.rules` stays empty).
pub fn load(config: &Config, settings: &EngineSettings, sources: &RuleSources) -> Result<LoadedRules, String> {
    load_inner(config, settings, sources, None, None)
}

/// [`load`] for a rule reload: patterns compile on at most `threads` threads (a reload runs
/// beside working workers). Rules unchanged from `running` share what eve logs of them
/// (text, metadata) with it.
pub fn load_with_threads(
    config: &Config,
    settings: &EngineSettings,
    sources: &RuleSources,
    threads: usize,
    running: Option<&DetectEngine>,
) -> Result<LoadedRules, String> {
    load_inner(config, settings, sources, Some(threads), running)
}

fn load_inner(
    config: &Config,
    settings: &EngineSettings,
    sources: &RuleSources,
    threads: Option<usize>,
    running: Option<&DetectEngine>,
) -> Result<LoadedRules, String> {
    let started = Instant::now();
    let mut warnings = Vec::new();
    for f in sources.exclusive.iter().chain(&sources.extra) {
        std::fs::File::open(f).map_err(|e| format!("cannot read rule file {}: {e}", f.display()))?;
    }
    let mut files = sources.exclusive.clone();
    if files.is_empty() {
        for f in settings.rule_paths() {
            if f.is_file() {
                files.push(f);
            } else {
                warnings.push(format!("configured rule file {} not found, skipped", f.display()));
            }
        }
        files.extend(sources.extra.iter().cloned());
    }
    let vars = rule_vars(config, &mut warnings);
    let mut load = RuleSetLoad::new();
    let classification = match &settings.classification_file {
        Some(path) if path.is_file() => read_config_file(path, ClassificationTable::parse, &mut warnings),
        Some(path) => {
            warnings
                .push(format!("classification file {} not found, using the built-in classifications", path.display()));
            ClassificationTable::default()
        }
        None => ClassificationTable::default(),
    };
    let thresholds = match &settings.threshold_file {
        Some(path) if path.is_file() => {
            read_config_file(path, |name, text| ThresholdConfig::parse(name, text, &vars), &mut warnings)
        }
        Some(path) => {
            warnings.push(format!("threshold file {} not found, no thresholds applied", path.display()));
            ThresholdConfig::default()
        }
        None => ThresholdConfig::default(),
    };
    // Without rule files the engine is still built, empty: the stream and app-layer stages
    // run with it, so eve gets its app-layer records (dns, tls, http, ...) and flow records
    // their `app_proto`, as Suricata parses app layers whatever its rules.
    let algo: MpmAlgo = match settings.mpm_algo.as_deref() {
        Some(a) => a.parse().map_err(|e: UnknownMpmAlgo| e.to_string())?,
        None => MpmAlgo::Auto,
    };
    let cache_dir = mpm_cache_dir(config, algo, &mut warnings)?;
    let cache_max_age = mpm_cache_max_age(config)?;
    let allow_avx512 = config.get_bool(HS_AVX512_KEY).map_err(|e| e.to_string())?.unwrap_or(false);
    let hs_path = crate::matchers::HsCodePath::choose(allow_avx512);
    let (matchers, mpm_cache) =
        crate::matchers::builder_with_cache(algo, threads, cache_dir, hs_path).map_err(|e| e.to_string())?;
    let cfg = DetectConfig {
        matchers,
        classification,
        thresholds,
        packet_alert_max: settings.packet_alert_max,
        action_order: settings.action_order,
        limits: settings.inspection_limits,
        host: table_config(config, "host", TableConfig::HOST)?,
        ippair: table_config(config, "ippair", TableConfig::IPPAIR)?,
        port_groups: port_group_limits(config)?,
        profile_prefilter: config.get_bool(PROFILE_PREFILTER_KEY).map_err(|e| e.to_string())?.unwrap_or(false),
        // A reload keeps the texts if the running rules have them: eve's options are those
        // of the start.
        keep_rule_text: settings.keep_rule_text || running.is_some_and(DetectEngine::keeps_rule_text),
    };
    // Each rule compiles as soon as it is parsed: the parsed form of the rule set (over
    // 100 MB with ET Open) is never held whole, neither at start-up nor during the run.
    let mut builder = match running {
        Some(running) => EngineBuilder::replacing(&cfg, running),
        None => EngineBuilder::new(&cfg),
    };
    // Parsing runs on the threads the patterns compile on (all cores at start-up, one for a
    // reload beside the workers), at most `MAX_PARSE_THREADS`.
    let parse_threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).min(MAX_PARSE_THREADS);
    for f in &files {
        let Some(file) = RulesFile::read(&mut load, f) else { continue };
        builder.reserve(file.rules());
        file.parse_into(&mut load, &vars, parse_threads, &mut |slot, rule| builder.add(slot, rule));
    }
    // Parsing freed far more than it kept (rule text, parse trees); handed back before the
    // pattern sets are compiled, which is the build's high-water mark (two Hyperscan
    // compiles at once on two cores): ET Open's cold `-T` peak, median of 6, 202.7 -> 199.6 MiB.
    crate::heap::release_free_memory();
    let (engine, build) = builder.finish()?;
    // After the build, which marked the files it used: what no build used for the maximum
    // age goes (a rule set long replaced, files of an older format).
    if let (Some(cache), Some(max_age)) = (&mpm_cache, cache_max_age) {
        if let Err(e) = cache.prune(max_age) {
            warnings.push(format!("mpm cache {}: unused files not removed: {e}", cache.dir.display()));
        }
    }
    // A rule the engine cannot compile failed like a malformed one (Suricata has no third
    // kind): it is reported with its file and line and counts as failed, not skipped.
    for (sid, reason) in &build.rules_rejected {
        load.rejected_by_engine(*sid, reason);
    }
    for &sid in &build.prefilter_fallback_sids {
        let place =
            load.location(sid).and_then(|(file, line)| file.map(|f| format!(" ({f}:{line})"))).unwrap_or_default();
        warnings.push(format!(
            "rule sid {sid}{place}: {} cannot compile its fast pattern, prefiltered with Aho-Corasick instead",
            build.mpm_algo
        ));
    }
    let hs_code_path = (crate::matchers::resolve(algo) == MpmAlgo::Hyperscan).then(|| hs_path.name());
    Ok(LoadedRules {
        engine: Some(engine),
        load,
        build,
        files,
        warnings,
        elapsed: started.elapsed(),
        mpm_cache,
        hs_code_path,
    })
}

/// Where Suricata 8 caches compiled Hyperscan databases by default is
/// `/var/lib/suricata/cache/hs`; picket's own directory.
pub const DEFAULT_MPM_CACHE_DIR: &str = "/var/lib/picket/cache/hs";

/// Suricata 8.0.3's default `detect.sgh-mpm-caching-max-age`.
const DEFAULT_MPM_CACHE_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);

/// `detect.sgh-mpm-caching-max-age`: cache files unused for longer are removed after a build
/// (default 7 days). `None`: keep every file (`0`).
fn mpm_cache_max_age(config: &Config) -> Result<Option<Duration>, String> {
    let Some(text) = config.get_str("detect.sgh-mpm-caching-max-age") else {
        return Ok(Some(DEFAULT_MPM_CACHE_MAX_AGE));
    };
    parse_age(&text).map_err(|reason| format!("detect.sgh-mpm-caching-max-age: '{text}': {reason}"))
}

/// A whole number of seconds, or of minutes, hours or days with the unit `s`, `m`, `h`, `d`
/// after it (`7d`, `12h`); `0` is `None` (no limit).
fn parse_age(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    const EXPECTED: &str = "expected a number of seconds, or a number followed by s, m, h or d";
    let n: u64 = digits.parse().map_err(|_| EXPECTED.to_string())?;
    let unit_secs: u64 = match unit.trim_start() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(EXPECTED.into()),
    };
    if n == 0 {
        return Ok(None);
    }
    n.checked_mul(unit_secs).map(|s| Some(Duration::from_secs(s))).ok_or_else(|| "too large".to_string())
}

/// The directory for compiled Hyperscan databases: `detect.sgh-mpm-caching` (default yes) and
/// `detect.sgh-mpm-caching-path` (default [`DEFAULT_MPM_CACHE_DIR`]). A directory that cannot
/// be created or written falls back, with a warning, to the user's cache directory
/// (`$XDG_CACHE_HOME/picket/hs` or `~/.cache/picket/hs`), and to no cache if that fails too.
/// `None` also when the backend is not Hyperscan.
fn mpm_cache_dir(config: &Config, algo: MpmAlgo, warnings: &mut Vec<String>) -> Result<Option<PathBuf>, String> {
    if crate::matchers::resolve(algo) != MpmAlgo::Hyperscan {
        return Ok(None);
    }
    if config.get_bool("detect.sgh-mpm-caching").map_err(|e| e.to_string())? == Some(false) {
        return Ok(None);
    }
    let configured = config.get_str("detect.sgh-mpm-caching-path").unwrap_or_else(|| DEFAULT_MPM_CACHE_DIR.into());
    let configured = PathBuf::from(configured);
    #[cfg(feature = "hyperscan")]
    {
        let prepare = crate::matchers::hs::cache::prepare_dir;
        // The kind alone ("permission denied"): the OS error number adds nothing here.
        let problem = match prepare(&configured) {
            Ok(()) => return Ok(Some(configured)),
            Err(e) => e.kind(),
        };
        let fallback = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("picket").join("hs"));
        match fallback {
            Some(dir) if prepare(&dir).is_ok() => {
                warnings.push(format!(
                    "detect.sgh-mpm-caching-path {}: {problem}; caching Hyperscan databases in {} instead",
                    configured.display(),
                    dir.display()
                ));
                Ok(Some(dir))
            }
            _ => {
                warnings.push(format!(
                    "detect.sgh-mpm-caching-path {}: {problem}; Hyperscan databases are not cached",
                    configured.display()
                ));
                Ok(None)
            }
        }
    }
    #[cfg(not(feature = "hyperscan"))]
    {
        let _ = (configured, warnings);
        Ok(None)
    }
}

/// Bytes of a rules file per piece of work handed to a parsing thread (about 80 ET Open
/// rules).
const PARSE_PIECE_BYTES: usize = 64 * 1024;

/// Parsing threads at most. The thread that records and compiles the parsed rules is the
/// slower side from two parsing threads on (ET Open, 2 cores: it waits for parsed pieces
/// 30 ms of 300), so more would add nothing but parsed rules waiting in memory (up to four
/// pieces per thread).
const MAX_PARSE_THREADS: usize = 3;

/// A rules file, read and cut into pieces between rules for parsing on several threads.
pub struct RulesFile {
    name: Arc<str>,
    bytes: Vec<u8>,
    pieces: Vec<RulePiece>,
}

impl RulesFile {
    /// Reads `path`; an unreadable file is recorded in `load` (one error at line 0) and gives
    /// `None`.
    pub fn read(load: &mut RuleSetLoad, path: &Path) -> Option<RulesFile> {
        let name = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => {
                let pieces = split_rule_file(&bytes, PARSE_PIECE_BYTES);
                Some(RulesFile { name: Arc::from(name), bytes, pieces })
            }
            Err(e) => {
                load.unreadable(&name, e);
                None
            }
        }
    }

    /// Rules in the file (lines other than blank lines and comments, with their continuation
    /// lines), loaded or not.
    pub fn rules(&self) -> usize {
        self.pieces.iter().map(|p| p.rules).sum()
    }

    /// Parses the file into `load`, handing each rule to `sink` as
    /// `RuleSetLoad::record` does. The pieces are lexed and parsed on `threads` threads
    /// (parsing is about half of a start-up's work) and recorded in file order on the calling
    /// thread, which hands the rules to `sink` meanwhile: the parsed form is held a few pieces
    /// at a time, not whole.
    pub fn parse_into(self, load: &mut RuleSetLoad, vars: &RuleVars, threads: usize, sink: &mut RuleSink<'_>) {
        let RulesFile { name, bytes, pieces } = self;
        let parse_piece = |piece: RulePiece| -> Vec<ParsedLine> {
            let lines = rule_lines_from(&bytes[piece.bytes], piece.first_line);
            lines.into_iter().map(|line| parse_line(line, vars)).collect()
        };
        crate::ordered::map_in_order(pieces, threads, 1, parse_piece, |parsed| {
            for line in parsed {
                load.record(&name, line, Some(&mut *sink));
            }
        });
    }
}

/// Reads one rules file into `load`; an unreadable file becomes one error at line 0.
pub fn read_rules_file(load: &mut RuleSetLoad, path: &Path, vars: &RuleVars) {
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => load.load_bytes(&name, &bytes, vars),
        Err(e) => load.unreadable(&name, e),
    }
}

fn read_config_file<T: Default>(
    path: &Path,
    parse: impl FnOnce(&str, &str) -> (T, Vec<crate::detect::rule::LocatedError>),
    warnings: &mut Vec<String>,
) -> T {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let (value, errors) = parse(&path.display().to_string(), &text);
            warnings.extend(errors.iter().map(|e| e.to_string()));
            value
        }
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}", path.display()));
            T::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::engine::{DetectConfig, DetectEngine};
    use std::collections::BTreeMap;

    #[test]
    fn cache_max_age_takes_suricata_style_durations() {
        let days = |d: u64| Ok(Some(Duration::from_secs(d * 86_400)));
        assert_eq!(parse_age("7d"), days(7));
        assert_eq!(parse_age(" 12h "), Ok(Some(Duration::from_secs(12 * 3_600))));
        assert_eq!(parse_age("90m"), Ok(Some(Duration::from_secs(5_400))));
        assert_eq!(parse_age("3600"), Ok(Some(Duration::from_secs(3_600))));
        assert_eq!(parse_age("30 s"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(parse_age("0"), Ok(None), "0 keeps every file");
        for bad in ["", "d", "7w", "-1d", "1.5d", "7dd", "99999999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad:?}");
        }
        assert!(parse_age("18446744073709551615d").is_err(), "overflow");
    }

    fn read(path: &Path) -> RuleSetLoad {
        let mut load = RuleSetLoad::new();
        read_rules_file(&mut load, path, &RuleVars::default());
        load
    }

    /// The ET Open rule files (sorted), when the shared copy is there (../shared from the
    /// repository).
    fn et_open_files() -> Option<Vec<PathBuf>> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/rules/et-open-2024-04-21");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: ET Open rules not found at {}", dir.display());
            return None;
        };
        let mut files: Vec<_> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rules")).collect();
        files.sort();
        Some(files)
    }

    fn read_all(files: &[PathBuf]) -> RuleSetLoad {
        let mut load = RuleSetLoad::new();
        let vars = RuleVars::default();
        for f in files {
            read_rules_file(&mut load, f, &vars);
        }
        load
    }

    /// Loads `path` as start-up does and as a reload does (replacing the first load's
    /// engine); both stream each parsed rule into the engine.
    fn load_both_ways(path: PathBuf) -> (LoadedRules, LoadedRules) {
        let (config, _) = Config::load(None, &[]).unwrap();
        let (settings, _) = EngineSettings::from_config(&config).unwrap();
        let sources = RuleSources { exclusive: vec![path], extra: Vec::new() };
        let whole = load(&config, &settings, &sources).unwrap();
        let streamed = load_with_threads(&config, &settings, &sources, 1, whole.engine.as_ref()).unwrap();
        (whole, streamed)
    }

    /// A rules file of one content rule in `dir`.
    fn one_rule(dir: &Path) -> RuleSources {
        let path = dir.join("p.rules");
        std::fs::write(&path, "alert udp any any -> any any (content:\"A\"; sid:1;)\n").unwrap();
        RuleSources { exclusive: vec![path], extra: Vec::new() }
    }

    /// Loads `sources` under the built-in configuration with `sets` (as `--set`); also
    /// returns the configuration's warnings.
    fn load_with_sets(sources: &RuleSources, sets: &[String]) -> (Result<LoadedRules, String>, Vec<String>) {
        let (config, warnings) = Config::load(None, sets).unwrap();
        let (settings, _) = EngineSettings::from_config(&config).unwrap();
        (load(&config, &settings, sources), warnings)
    }

    #[test]
    fn prefilter_profiling_reaches_the_engine_from_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let sources = one_rule(dir.path());
        for (sets, expected) in [(vec![], false), (vec!["profiling.prefilter.enabled=yes".to_string()], true)] {
            let loaded = load_with_sets(&sources, &sets).0.unwrap();
            assert_eq!(loaded.engine.expect("engine").profiles_prefilter(), expected, "{sets:?}");
        }
    }

    /// `mpm-hs-avx512` picks Hyperscan's code path for the build (libhs's AVX2 code by default
    /// on a CPU with AVX-512, its own pick with `yes`), and the load reports it; other
    /// backends have none.
    #[test]
    fn hyperscan_code_path_follows_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let sources = one_rule(dir.path());
        let hs = crate::matchers::hyperscan_usable();
        let default_path = crate::matchers::HsCodePath::choose(false).name();
        for (set, expected) in [
            (None, hs.then_some(default_path)),
            (Some("mpm-hs-avx512=no"), hs.then_some(default_path)),
            (Some("mpm-hs-avx512=yes"), hs.then_some("native")),
            (Some("mpm-algo=ac"), None),
        ] {
            let mut sets = vec!["detect.sgh-mpm-caching=no".to_string()];
            sets.extend(set.map(str::to_string));
            let (loaded, warnings) = load_with_sets(&sources, &sets);
            assert!(warnings.is_empty(), "{warnings:?}");
            assert_eq!(loaded.unwrap().hs_code_path, expected, "{sets:?}");
        }
        let (loaded, _) = load_with_sets(&sources, &["mpm-hs-avx512=maybe".to_string()]);
        let error = loaded.err().expect("a bad value fails the load");
        assert!(error.contains("mpm-hs-avx512"), "{error}");
    }

    #[test]
    fn reload_load_streams_rules_and_keeps_the_later_revision() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.rules");
        std::fs::write(
            &path,
            "alert udp any any -> any any (content:\"A\"; sid:1; rev:1;)\n\
             alert udp any any -> any any (content:\"B\"; sid:2;)\n\
             alert udp any any -> any any (content:\"C\"; sid:1; rev:2;)\n\
             alert udp any any -> any any (content:\"D\"; sid:3; rev:1;)\n\
             alert udp any any -> any any (content:\"E\"; sid:3; rev:1;)\n",
        )
        .unwrap();
        let (whole, streamed) = load_both_ways(path);
        assert!(whole.load.rules.is_empty() && streamed.load.rules.is_empty(), "the parsed rules went into the engine");
        for loaded in [&whole, &streamed] {
            assert_eq!(loaded.build.rules_loaded, 3);
            assert_eq!(loaded.load.duplicates.len(), 2);
            assert!(loaded.load.duplicates[0].replaced && !loaded.load.duplicates[1].replaced);
        }
        assert_eq!(streamed.summary().split(',').next(), whole.summary().split(',').next());
    }

    /// A rule the engine rejects fails with its file and line in both load paths (start-up
    /// and reload), so a reload refuses it like a malformed rule; unsupported stays apart.
    #[test]
    fn engine_rejections_are_failed_rules_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.rules");
        std::fs::write(
            &path,
            "alert udp any any -> any any (content:\"A\"; sid:1;)\n\
             alert tcp any any -> any any (to_lowercase; content:\"a\"; sid:2;)\n\
             alert tcp any any -> any any (asn1:oversize_length 10; sid:3;)\n",
        )
        .unwrap();
        let (whole, streamed) = load_both_ways(path);
        for loaded in [&whole, &streamed] {
            assert_eq!((loaded.build.rules_loaded, loaded.failed(), loaded.skipped()), (1, 1, 1));
            let error = loaded.load.errors[0].to_string();
            assert!(error.ends_with("r.rules:2: sid 2: transforms need a sticky buffer"), "{error}");
            assert!(loaded.summary().contains("1 skipped (unsupported keyword), 1 failed"));
        }
    }

    /// Parsing on several threads loads exactly what one thread loads: the same rules in the
    /// same order (a later revision replacing the earlier one in its place), the same failed
    /// and skipped rules and duplicates, with their lines.
    #[test]
    fn parsing_on_threads_loads_what_one_thread_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.rules");
        let mut text = String::new();
        // Long messages: the file must make many pieces for the threads to share.
        let pad = "p".repeat(1000);
        for i in 0..1200u32 {
            let sid = 1000 + i;
            let rule = match i % 12 {
                3 => format!(
                    "alert udp any any -> any any (msg:\"again {i}\"; content:\"y{i}\"; sid:{}; rev:2;)",
                    sid - 1
                ),
                4 => format!("alert udp any any -> any any (content:\"z{i}\"; sid:{}; rev:1;)", sid - 2),
                5 => format!("alert tcp any any -> any any (asn1:oversize_length 10; sid:{sid};)"),
                7 => format!("alert udp any any -> any any (content:\"x{i}\"; no_such_keyword; sid:{sid};)"),
                8 => format!("alert tcp any any -> any any (to_lowercase; content:\"a\"; sid:{sid};)"),
                9 => format!("# alert udp any any -> any any (content:\"x{i}\"; sid:{sid};)"),
                10 => format!("alert udp any any -> any any (msg:\"two lines\"; \\\n content:\"x{i}\"; sid:{sid};)"),
                _ => format!("alert udp any any -> any any (msg:\"r{i} {pad}\"; content:\"x{i}\"; sid:{sid}; rev:1;)"),
            };
            text.push_str(&rule);
            text.push('\n');
        }
        assert!(split_rule_file(text.as_bytes(), PARSE_PIECE_BYTES).len() >= 8, "pieces for several threads");
        std::fs::write(&path, text).unwrap();
        let (config, _) = Config::load(None, &[]).unwrap();
        let (mut settings, _) = EngineSettings::from_config(&config).unwrap();
        settings.keep_rule_text = true;
        let sources = RuleSources { exclusive: vec![path], extra: Vec::new() };
        let outcome = |threads: usize| {
            let loaded = load_with_threads(&config, &settings, &sources, threads, None).unwrap();
            let rules: Vec<(u32, u32, String)> =
                loaded.engine.as_ref().unwrap().analysis().rules.into_iter().map(|r| (r.sid, r.rev, r.text)).collect();
            let errors: Vec<String> = loaded.load.errors.iter().map(|e| e.to_string()).collect();
            let summary = loaded.summary().split(" from ").next().unwrap().to_string();
            (rules, errors, loaded.load.unsupported_rules, loaded.load.duplicates, summary)
        };
        let one = outcome(1);
        let (rules, errors, unsupported, duplicates, _) = &one;
        assert_eq!(rules.len(), 1200 - 100 * 6, "{}", one.4);
        assert!(rules.iter().any(|(sid, rev, text)| *sid == 1002 && *rev == 2 && text.contains("again 3")));
        assert_eq!(errors.len(), 200, "unknown keyword and engine rejections");
        assert!(
            errors.iter().any(|e| e.ends_with("many.rules:8: unknown rule keyword 'no_such_keyword'")),
            "{errors:?}"
        );
        assert_eq!((unsupported.len(), duplicates.len()), (100, 200));
        for threads in [2, 3] {
            assert!(outcome(threads) == one, "{threads} threads load what one thread loads");
        }
    }

    #[test]
    fn detect_profile_sets_the_port_group_limits() {
        let limits = |yaml: &str| port_group_limits(&Config::from_yaml_str(yaml).unwrap());
        assert_eq!(limits("x: 1\n"), Ok(PortGroupLimits { toserver: 1, toclient: 1 }));
        assert_eq!(limits("detect:\n  profile: medium\n"), Ok(PortGroupLimits { toserver: 40, toclient: 20 }));
        assert_eq!(limits("detect:\n  profile: low\n"), Ok(PortGroupLimits { toserver: 25, toclient: 15 }));
        assert_eq!(limits("detect:\n  profile: high\n"), Ok(PortGroupLimits { toserver: 75, toclient: 75 }));
        // custom-values count only with profile custom, as in Suricata.
        let custom = "detect:\n  profile: PROFILE\n  custom-values:\n    toserver-groups: 5\n    toclient-groups: 2\n";
        assert_eq!(limits(&custom.replace("PROFILE", "custom")), Ok(PortGroupLimits { toserver: 5, toclient: 2 }));
        assert_eq!(limits(&custom.replace("PROFILE", "medium")), Ok(PortGroupLimits::MEDIUM));
        assert!(limits("detect:\n  profile: huge\n").unwrap_err().contains("huge"));
        let zero = "detect:\n  profile: custom\n  custom-values:\n    toclient-groups: 0\n";
        assert!(limits(zero).unwrap_err().contains("toclient-groups"));
    }

    #[test]
    fn unreadable_file_is_one_error() {
        let load = read(Path::new("/nonexistent/x.rules"));
        assert_eq!(load.errors.len(), 1);
        assert_eq!(load.errors[0].line, 0);
        assert!(load.errors[0].file.contains("x.rules"));
        assert!(matches!(load.errors[0].error, crate::detect::rule::RuleError::Unreadable { .. }));
    }

    #[test]
    fn load_from_file_keeps_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.rules");
        std::fs::write(&path, "\n\nalert ip any any -> any any (sid:10;)\nalert ip any any -> any any (sid:x;)\n")
            .unwrap();
        let load = read(&path);
        assert_eq!(load.rules[0].line, 3);
        assert_eq!(load.errors[0].line, 4);
        assert!(load.errors[0].error.to_string().contains("sid"));
        assert!(load.errors[0].file.ends_with("a.rules"));
    }

    #[test]
    fn et_open_loads() {
        let Some(files) = et_open_files() else { return };
        let start = std::time::Instant::now();
        let load = read_all(&files);
        let elapsed = start.elapsed();
        eprintln!(
            "ET Open: {} files, {} rules parsed, {} unsupported, {} errors, {} duplicates in {:?}",
            files.len(),
            load.rules.len(),
            load.unsupported_count(),
            load.errors.len(),
            load.duplicates.len(),
            elapsed
        );
        for (kw, n) in &load.unsupported {
            eprintln!("  unsupported {kw}: {n}");
        }
        for e in load.errors.iter().take(40) {
            eprintln!("  error {e}");
        }
        assert!(load.rules.len() + load.unsupported_count() >= 24_000);
        assert!(load.errors.is_empty(), "{} parse errors", load.errors.len());
    }

    /// Loads ET Open (if present) and prints what the build did: `--nocapture` to see it.
    #[test]
    fn et_open_builds() {
        let Some(files) = et_open_files() else { return };
        let t0 = std::time::Instant::now();
        let load = read_all(&files);
        let parse = t0.elapsed();
        let parsed = load.rules.len();
        let (errors, unsupported) = (load.errors.len(), load.unsupported_count());
        let (engine, report) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for (_, r) in &report.rules_rejected {
            let key: String = r.chars().take(50).collect();
            *reasons.entry(key).or_default() += 1;
        }
        println!("ET Open: parsed {parsed} rules in {parse:?} ({errors} parse errors, {unsupported} unsupported)");
        println!(
            "build: {} ms, loaded {}, rejected {}, prefilter patterns {}, ip-only {}, always-checked {}, algo {}, memory {} KiB",
            report.build_micros / 1000,
            report.rules_loaded,
            report.rules_rejected.len(),
            report.prefilter_patterns,
            report.rules_ip_only,
            report.rules_always_checked,
            report.mpm_algo,
            report.memory_bytes / 1024
        );
        println!("rejected by reason: {reasons:#?}");
        let mut inactive: Vec<_> = report.rules_inactive.iter().collect();
        inactive.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
        println!("inactive (top): {:?}", &inactive[..inactive.len().min(12)]);
        assert_eq!(engine.rule_count(), report.rules_loaded);
        assert!(report.rules_loaded > 20_000);
    }
}
