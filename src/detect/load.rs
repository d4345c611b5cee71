//! From configuration and command line to a running engine: rule variables from the YAML,
//! the rule files (`-S` replaces the configured ones, `-s` adds to them), classification
//! and threshold files, then the engine build. Shared by `picket -r` and `picket rules check`.

use crate::config::{Config, EngineSettings};
use crate::detect::engine::{BuildReport, DetectConfig, DetectEngine};
use crate::detect::rule::{ClassificationTable, RuleSetLoad, RuleVars, ThresholdConfig};
use std::path::{Path, PathBuf};
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
}

impl LoadedRules {
    /// `loaded / skipped / failed`, the line `rules check` and start-up print.
    pub fn summary(&self) -> String {
        format!(
            "{} rules loaded, {} skipped (unsupported keyword), {} failed, {} duplicate sids, from {} file(s) in {:.2} s",
            self.build.rules_loaded,
            self.load.unsupported_count() + self.build.rules_rejected.len(),
            self.load.errors.len(),
            self.load.duplicates.len(),
            self.files.len(),
            self.elapsed.as_secs_f64()
        )
    }

    /// Skipped rules by keyword (parser) and by reason (engine), most frequent first.
    pub fn skipped_table(&self) -> Vec<(String, usize)> {
        let mut rows: Vec<(String, usize)> = self.load.unsupported.iter().map(|(k, &n)| (k.clone(), n)).collect();
        let mut engine_reasons = std::collections::BTreeMap::<String, usize>::new();
        for (_, reason) in &self.build.rules_rejected {
            *engine_reasons.entry(reason.clone()).or_default() += 1;
        }
        rows.extend(engine_reasons);
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        rows
    }
}

/// Rule variables: Suricata's defaults, overridden by the YAML's `vars:`.
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
/// is not (it is reported with file and line, the rest load).
pub fn load(config: &Config, settings: &EngineSettings, sources: &RuleSources) -> Result<LoadedRules, String> {
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
    for f in &files {
        load.load_file(f, &vars);
    }
    let classification = match &settings.classification_file {
        Some(path) if path.is_file() => read_config_file(path, |name, text| ClassificationTable::parse(name, text), &mut warnings),
        Some(path) => {
            warnings.push(format!("classification file {} not found, using the built-in classifications", path.display()));
            ClassificationTable::default()
        }
        None => ClassificationTable::default(),
    };
    let thresholds = match &settings.threshold_file {
        Some(path) if path.is_file() => read_config_file(path, |name, text| ThresholdConfig::parse(name, text, &vars), &mut warnings),
        Some(path) => {
            warnings.push(format!("threshold file {} not found, no thresholds applied", path.display()));
            ThresholdConfig::default()
        }
        None => ThresholdConfig::default(),
    };
    if files.is_empty() {
        return Ok(LoadedRules { engine: None, load, build: BuildReport::default(), files, warnings, elapsed: started.elapsed() });
    }
    let cfg = DetectConfig {
        mpm_algo: settings.mpm_algo.clone(),
        classification,
        thresholds,
        packet_alert_max: settings.packet_alert_max,
    };
    let (engine, build) = DetectEngine::build(load.rules.clone(), &cfg)?;
    Ok(LoadedRules { engine: Some(engine), load, build, files, warnings, elapsed: started.elapsed() })
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
