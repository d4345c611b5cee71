//! Suricata's `outputs:` list and `default-log-dir`: which logs a run writes, where, and
//! how (`fast:`, `eve-log:`, `stats:`), read once into [`OutputsConfig`].
//!
//! Without an `outputs:` section picket writes what it always wrote: eve.json (every event
//! type), fast.log and stats.log in the log directory. With one, Suricata's rule applies:
//! an output that is not listed, or listed without `enabled: yes`, is not written.
//!
//! The log directory is `-l` if given, else the YAML's top-level `default-log-dir`, else
//! the current directory. Relative file names (and unix socket paths) are under it.
//!
//! Keys picket does not read under these entries are reported once each, naming the key,
//! as `--set` reports unknown settings; outputs picket does not write (`pcap-log`,
//! `file-store`, ...) are reported when enabled. The event types listed under eve-log
//! `types:` select what eve.json gets ([`EveTypes`]); per-type options stay with
//! `config/eve.rs`.

use super::{parse_bool, scalar_text, Config};
use crate::output::eve::EveTypes;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// The eve-log file name when the entry names none (Suricata's).
pub const DEFAULT_EVE_FILE: &str = "eve.json";
pub const DEFAULT_FAST_FILE: &str = "fast.log";
pub const DEFAULT_STATS_FILE: &str = "stats.log";

/// Keys of an `eve-log:` entry picket reads (`redis:` belongs to `output::redis`,
/// `ethernet` and `types:` options to `config/eve.rs`).
const EVE_KEYS: &[&str] =
    &["enabled", "filetype", "filename", "append", "types", "redis", "ethernet", "xff", "suricata-version", "metadata"];
const FAST_KEYS: &[&str] = &["enabled", "filename", "append"];
const STATS_KEYS: &[&str] = &["enabled", "filename", "append"];

/// Where an eve-log goes (`filetype:`).
#[derive(Clone, Debug, PartialEq)]
pub enum TargetSpec {
    /// `regular` (or Suricata's alias `file`): a file, reopened after a rotation.
    Regular { path: PathBuf, append: bool },
    /// `unix_stream`: a connection to a listening stream socket at `path`.
    UnixStream(PathBuf),
    /// `unix_dgram`: one datagram per event to a bound datagram socket at `path`.
    UnixDgram(PathBuf),
    /// `redis`: the eve-log entry, whose `redis:` keys `output::redis::open` reads.
    Redis(Value),
}

impl TargetSpec {
    /// The file or socket, for messages.
    pub fn describe(&self) -> String {
        match self {
            TargetSpec::Regular { path, .. } => path.display().to_string(),
            TargetSpec::UnixStream(path) => format!("unix_stream socket {}", path.display()),
            TargetSpec::UnixDgram(path) => format!("unix_dgram socket {}", path.display()),
            TargetSpec::Redis(_) => "redis".to_string(),
        }
    }
}

/// A plain log file output (`fast:`, `stats:`); `None` in [`OutputsConfig`] when disabled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileOutput {
    pub path: PathBuf,
    pub append: bool,
}

/// The eve-log output.
#[derive(Clone, Debug, PartialEq)]
pub struct EveOutput {
    pub target: TargetSpec,
    pub types: EveTypes,
}

/// Every log of a run, resolved against the log directory.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputsConfig {
    pub log_dir: PathBuf,
    pub eve: Option<EveOutput>,
    pub fast: Option<FileOutput>,
    pub stats: Option<FileOutput>,
    /// One line each, to show the user once.
    pub warnings: Vec<String>,
}

/// Whether a run appends to existing logs when the YAML does not say (`append:`):
/// offline runs start their logs afresh, a live sensor appends across restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendDefault {
    Truncate,
    Append,
}

impl OutputsConfig {
    /// Reads `outputs:` and `default-log-dir`; `log_dir` is `-l` when given (it wins).
    /// Errors name the key and what it takes.
    pub fn from_config(config: &Config, log_dir: Option<&Path>, append: AppendDefault) -> Result<Self, String> {
        let log_dir = match log_dir {
            Some(dir) => dir.to_path_buf(),
            None => config
                .get_str("default-log-dir")
                .filter(|d| !d.trim().is_empty())
                .map_or_else(|| PathBuf::from("."), |d| PathBuf::from(d.trim())),
        };
        // Absolute, so that a reopen after `-D` changed the working directory finds the
        // same files.
        let log_dir = std::path::absolute(&log_dir).unwrap_or(log_dir);
        let default_append = append == AppendDefault::Append;
        let mut out =
            OutputsConfig { eve: None, fast: None, stats: None, warnings: Vec::new(), log_dir: log_dir.clone() };
        let Some(outputs) = config.node("outputs") else {
            out.eve = Some(EveOutput {
                target: TargetSpec::Regular { path: log_dir.join(DEFAULT_EVE_FILE), append: default_append },
                types: EveTypes::all(),
            });
            out.fast = Some(FileOutput { path: log_dir.join(DEFAULT_FAST_FILE), append: default_append });
            // stats.log has always been appended to, offline too.
            out.stats = Some(FileOutput { path: log_dir.join(DEFAULT_STATS_FILE), append: true });
            return Ok(out);
        };
        let Value::Sequence(items) = outputs else {
            return Err("outputs: expected a list of outputs (- eve-log: ..., - fast: ...)".into());
        };
        for (index, item) in items.iter().enumerate() {
            let Value::Mapping(map) = item else { continue };
            for (name, entry) in map {
                let Some(name) = scalar_text(name) else { continue };
                let key = format!("outputs.{index}.{name}");
                if !matches!(name.as_str(), "fast" | "eve-log" | "stats") {
                    if enabled(entry, &key).unwrap_or(false) {
                        out.warnings.push(format!("{key}: picket does not write '{name}'; ignored"));
                    }
                    continue;
                }
                out.warn_unknown_keys(entry, &key, &name);
                if !enabled(entry, &key)? {
                    continue;
                }
                match name.as_str() {
                    "fast" if out.fast.is_some() => out.warnings.push(format!("{key}: a second fast output; ignored")),
                    "fast" => out.fast = Some(out.file_output(entry, &key, DEFAULT_FAST_FILE, default_append)?),
                    // stats.log has always been appended to, offline too.
                    "stats" if out.stats.is_some() => {
                        out.warnings.push(format!("{key}: a second stats output; ignored"))
                    }
                    "stats" => out.stats = Some(out.file_output(entry, &key, DEFAULT_STATS_FILE, true)?),
                    "eve-log" if out.eve.is_some() => out
                        .warnings
                        .push(format!("{key}: picket writes one eve-log output (the first enabled one); ignored")),
                    "eve-log" => out.eve = Some(out.eve_output(entry, &key, default_append)?),
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// The eve event types written (none when eve-log is disabled).
    pub fn eve_types(&self) -> EveTypes {
        self.eve.as_ref().map_or(EveTypes::none(), |e| e.types)
    }

    fn under_log_dir(&self, name: &str) -> PathBuf {
        let path = Path::new(name);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.log_dir.join(path)
        }
    }

    fn file_output(&self, entry: &Value, key: &str, default_name: &str, append: bool) -> Result<FileOutput, String> {
        Ok(FileOutput {
            path: self.under_log_dir(&filename(entry, key)?.unwrap_or_else(|| default_name.to_string())),
            append: flag(entry, "append", key)?.unwrap_or(append),
        })
    }

    fn eve_output(&mut self, entry: &Value, key: &str, default_append: bool) -> Result<EveOutput, String> {
        let name = filename(entry, key)?.unwrap_or_else(|| DEFAULT_EVE_FILE.to_string());
        let filetype = match entry.get("filetype") {
            None | Some(Value::Null) => "regular".to_string(),
            Some(v) => scalar_text(v).ok_or_else(|| format!("{key}.filetype: expected a word"))?,
        };
        let target = match filetype.trim() {
            "regular" | "file" => TargetSpec::Regular {
                path: self.under_log_dir(&name),
                append: flag(entry, "append", key)?.unwrap_or(default_append),
            },
            "unix_stream" => TargetSpec::UnixStream(self.under_log_dir(&name)),
            "unix_dgram" => TargetSpec::UnixDgram(self.under_log_dir(&name)),
            "redis" => TargetSpec::Redis(entry.clone()),
            other => {
                return Err(format!(
                    "{key}.filetype: '{other}' is not supported by picket; use regular, unix_stream, unix_dgram or \
                     redis"
                ))
            }
        };
        let types = match entry.get("types") {
            None | Some(Value::Null) => EveTypes::all(),
            Some(Value::Sequence(list)) => self.eve_types_of(list, key),
            Some(_) => return Err(format!("{key}.types: expected a list of event types (- alert, - flow, ...)")),
        };
        Ok(EveOutput { target, types })
    }

    /// The listed event types; the ones picket does not produce are reported.
    fn eve_types_of(&mut self, list: &[Value], key: &str) -> EveTypes {
        let mut types = EveTypes::none();
        let mut missing: Vec<String> = Vec::new();
        for item in list {
            let name = match item {
                Value::Mapping(map) => map.keys().next().and_then(scalar_text),
                other => scalar_text(other),
            };
            let Some(name) = name.map(|n| n.trim().to_string()) else { continue };
            if !types.enable(&name) && !missing.contains(&name) {
                missing.push(name);
            }
        }
        match missing.as_slice() {
            [] => {}
            [one] => self.warnings.push(format!("{key}: eve-log type '{one}' is not produced by picket yet")),
            more => self.warnings.push(format!(
                "{key}: eve-log types {} are not produced by picket yet",
                more.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ")
            )),
        }
        types
    }

    fn warn_unknown_keys(&mut self, entry: &Value, key: &str, name: &str) {
        let known = match name {
            "fast" => FAST_KEYS,
            "stats" => STATS_KEYS,
            _ => EVE_KEYS,
        };
        let Value::Mapping(map) = entry else { return };
        for (k, v) in map {
            let Some(k) = scalar_text(k) else { continue };
            // A setting that asks for nothing (`community-id: false`, `seed: 0`) is what
            // picket does anyway.
            if !known.contains(&k.as_str()) && !asks_for_nothing(v) {
                self.warnings.push(format!("unknown setting '{key}.{k}' ignored (picket does not use it)"));
            }
        }
    }
}

/// Whether a value is off, zero or empty.
fn asks_for_nothing(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => parse_bool(s) == Some(false) || s.trim().is_empty() || s.trim() == "0",
        _ => false,
    }
}

/// `enabled:` of an output entry; absent means disabled, as in Suricata.
fn enabled(entry: &Value, key: &str) -> Result<bool, String> {
    Ok(flag(entry, "enabled", key)?.unwrap_or(false))
}

fn flag(entry: &Value, name: &str, key: &str) -> Result<Option<bool>, String> {
    match entry.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => scalar_text(other)
            .and_then(|t| parse_bool(&t))
            .map(Some)
            .ok_or_else(|| format!("{key}.{name}: expected yes or no")),
    }
}

fn filename(entry: &Value, key: &str) -> Result<Option<String>, String> {
    match entry.get("filename") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match scalar_text(v).map(|s| s.trim().to_string()) {
            Some(name) if !name.is_empty() => Ok(Some(name)),
            _ => Err(format!("{key}.filename: expected a file name")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(yaml: &str, dir: Option<&str>, append: AppendDefault) -> Result<OutputsConfig, String> {
        OutputsConfig::from_config(&Config::from_yaml_str(yaml).unwrap(), dir.map(Path::new), append)
    }

    #[test]
    fn without_outputs_everything_as_before() {
        let o = outputs("vars: {}\n", Some("/l"), AppendDefault::Truncate).unwrap();
        assert_eq!(
            o.eve,
            Some(EveOutput {
                target: TargetSpec::Regular { path: "/l/eve.json".into(), append: false },
                types: EveTypes::all()
            })
        );
        assert_eq!(o.fast, Some(FileOutput { path: "/l/fast.log".into(), append: false }));
        assert_eq!(o.stats, Some(FileOutput { path: "/l/stats.log".into(), append: true }));
        assert!(o.warnings.is_empty());
    }

    #[test]
    fn listed_outputs_only_and_log_dir_precedence() {
        let yaml = "default-log-dir: /var/log/x\noutputs:\n  - fast:\n      enabled: no\n  - eve-log:\n      \
                    enabled: yes\n      filename: alerts.json\n      append: yes\n      types:\n        - alert:\n            \
                    payload: yes\n        - smtp\n        - ftp\n        - rdp\n";
        let o = outputs(yaml, None, AppendDefault::Truncate).unwrap();
        assert_eq!(o.log_dir, PathBuf::from("/var/log/x"));
        assert_eq!(o.fast, None);
        assert_eq!(o.stats, None, "not listed");
        let eve = o.eve.unwrap();
        assert_eq!(eve.target, TargetSpec::Regular { path: "/var/log/x/alerts.json".into(), append: true });
        assert!(eve.types.alert && !eve.types.flow && !eve.types.stats && !eve.types.drop);
        assert_eq!(o.warnings, vec!["outputs.1.eve-log: eve-log types 'ftp', 'rdp' are not produced by picket yet"]);
        let o = outputs(yaml, Some("/cli"), AppendDefault::Truncate).unwrap();
        assert_eq!(o.log_dir, PathBuf::from("/cli"), "-l wins");
    }

    #[test]
    fn socket_targets_unknown_keys_and_errors() {
        let yaml =
            "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: unix_dgram\n      filename: eve.sock\n      \
                    community-id: yes\n      community-id-seed: 0\n      pcap-file: false\n  - pcap-log:\n      enabled: yes\n  - file-store:\n      enabled: no\n";
        let o = outputs(yaml, Some("/l"), AppendDefault::Append).unwrap();
        assert_eq!(o.eve.unwrap().target, TargetSpec::UnixDgram("/l/eve.sock".into()));
        assert_eq!(
            o.warnings,
            vec![
                "unknown setting 'outputs.0.eve-log.community-id' ignored (picket does not use it)",
                "outputs.1.pcap-log: picket does not write 'pcap-log'; ignored"
            ]
        );
        let bad = outputs(
            "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: syslog\n",
            None,
            AppendDefault::Append,
        );
        assert!(bad.unwrap_err().contains("'syslog' is not supported"));
        let bad = outputs("outputs:\n  - fast:\n      enabled: maybe\n", None, AppendDefault::Append);
        assert_eq!(bad.unwrap_err(), "outputs.0.fast.enabled: expected yes or no");
    }
}
