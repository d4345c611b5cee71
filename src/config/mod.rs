//! Configuration, read the way Suricata reads it.
//!
//! Sources, later ones winning:
//! 1. the YAML file given with `-c` (Suricata format: `%YAML 1.1`, `---`, `include:`),
//! 2. `--set key=value` overrides with dotted keys (`outputs.0.eve-log.enabled=yes`).
//!
//! Merge rules follow Suricata's loader: inside one mapping, entries are applied in file order
//! and a key defined again *replaces* the earlier value (no deep merge). `include: FILE` or
//! `include: [A, B]` may appear in any mapping; the included file's top-level entries are
//! applied to that mapping at the point of the include. Relative include paths are looked up
//! next to the including file first, then next to the top-level file (Suricata's rule).
//!
//! All values stay untyped in the tree (as in Suricata, where every value is a string); the
//! typed getters convert and report bad values with the key and the value. [`EngineSettings`]
//! gathers the settings the engine uses, with Suricata's defaults.

mod afpacket;
mod afxdp;
mod app_detection;
mod ddos;
mod detectors;
mod eve;
mod nfq;
mod outputs;
mod settings;
mod smtp;
mod unknown;

pub use afpacket::{
    bridge_capture_configs, bridge_tx_options, capture_configs, configured_bridges, configured_interfaces, copy_iface,
    copy_mode, live_checksum_mode, parse_fanout, stats_interval, CaptureOverrides,
};
pub use afxdp::{afxdp_config, configured_afxdp_interfaces, AfXdpSettings};
pub use ddos::{ddos_config, AttachPreference, DdosConfig};
pub use detectors::{detector_settings, static_blocklist};
pub use eve::eve_log_flag;
pub use eve::{alert_log_options, apply_metadata, file_config, xff_options};
pub use nfq::nfq_config;
pub use outputs::{AppendDefault, EveOutput, FileOutput, OutputsConfig, TargetSpec};
pub use picket_core::settings::{
    parse_bool, parse_size, ChecksumMode, EngineSettings, ExceptionPolicy, FlowTimeouts, ProtoTimeouts, StreamInline,
};
pub use settings::{http_config, EngineSettingsExt, HTTP_CONFIG_PREFIX};
pub use smtp::{smtp_config, SMTP_PREFIX};
pub use unknown::{is_recognised, unrecognised_keys, SURICATA_KEYS};

use serde::de::{self, Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess};
use serde_yaml::{Mapping, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// Dotted keys picket honours. A `--set` of any other key is not applied and produces a
/// warning. An entry ending in `.*` covers that key and everything below it.
/// Keys of the YAML file, and `--set` keys under a section covered as a whole, are
/// checked one by one (`unknown.rs`): a key neither here nor among the stock Suricata
/// settings picket accepts unused ([`SURICATA_KEYS`]) is warned about once.
pub const KNOWN_KEYS: &[&str] = &[
    "vars.*",
    "stream.midstream",
    "stream.midstream-policy",
    "exception-policy",
    "host-os-policy.*",
    "stream.async-oneside",
    "stream.inline",
    "stream.bypass",
    "stream.memcap",
    "stream.checksum-validation",
    "stream.reassembly.depth",
    "stream.reassembly.memcap",
    "stream.reassembly.max-regions",
    "flow.memcap",
    "flow.hash-size",
    "flow.prealloc",
    "flow.emergency-recovery",
    "host.hash-size",
    "host.prealloc",
    "host.memcap",
    "ippair.hash-size",
    "ippair.prealloc",
    "ippair.memcap",
    "flow-timeouts.*",
    "vlan.use-for-tracking",
    "default-rule-path",
    "rule-files",
    "rule-files.*",
    "classification-file",
    "reference-config-file",
    "threshold-file",
    "mpm-algo",
    "mpm-hs-avx512",
    "profiling.prefilter.enabled",
    "spm-algo",
    "packet-alert-max",
    "pcre.match-limit",
    "pcre.match-limit-recursion",
    "max-pending-packets",
    "runmode",
    "threading.dispatch",
    "threading.adaptive.interval-ms",
    "threading.adaptive.threshold",
    "threading.adaptive.max-moves",
    "host-mode",
    "default-log-dir",
    "pcap-file.checksum-checks",
    "detect.*",
    "detect.profile",
    "detect.custom-values.toserver-groups",
    "detect.custom-values.toclient-groups",
    "detect.sgh-mpm-caching",
    "detect.sgh-mpm-caching-path",
    "detect.sgh-mpm-caching-max-age",
    "app-layer.*",
    "app-layer.protocols.http.memcap",
    "app-layer.protocols.smtp.max-tx",
    "app-layer.protocols.smtp.mime.*",
    "app-layer.protocols.smtp.inspected-tracker.content-limit",
    "decoder.*",
    "defrag.*",
    "outputs.*",
    "logging.*",
    "stats.*",
    "threading.*",
    "af-packet.*",
    "nfq.*",
    "ddos.*",
    "af-xdp.*",
    "bpf-filter",
    "unix-command.*",
];

/// Whether `key` is covered by [`KNOWN_KEYS`].
pub fn is_known_key(key: &str) -> bool {
    KNOWN_KEYS.iter().any(|pattern| match pattern.strip_suffix(".*") {
        Some(base) => key == base || (key.starts_with(base) && key[base.len()..].starts_with('.')),
        None => key == *pattern,
    })
}

/// Limits on include chains: deep enough for any real layout, small enough that a file
/// including itself through a diamond of lists cannot make us read thousands of files.
const MAX_INCLUDE_DEPTH: usize = 16;
const MAX_FILES: usize = 256;
/// Configuration files are small; refuse anything that is clearly not one.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A configuration problem, as one line naming the file or key and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    fn new(message: impl Into<String>) -> Self {
        ConfigError { message: message.into() }
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    fn bad_value(key: &str, value: &Value, expected: &str) -> Self {
        ConfigError::new(format!("invalid value for '{key}': '{}' (expected {expected})", describe(value)))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The merged configuration tree. Mapping keys are always strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    root: Value,
    /// The top-level YAML file, if any.
    source: Option<PathBuf>,
}

impl Config {
    /// Reads `path` (with its includes) if given, then applies each `--set key=value`.
    /// Returns the configuration and the warnings to show the user.
    pub fn load(path: Option<&Path>, sets: &[String]) -> Result<(Config, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        let mut config = Config::default();
        if let Some(path) = path {
            let mut loader = Loader::new(path, &mut warnings);
            config.root = Value::Mapping(loader.load_file(path)?);
            config.source = Some(path.to_path_buf());
            for key in unrecognised_keys(&config.root) {
                warnings.push(format!("{}: unknown setting '{key}' ignored", path.display()));
            }
        }
        for set in sets {
            let (key, value) = split_set(set)?;
            split_key(key)?;
            if is_known_key(key) {
                if !is_recognised(key) {
                    warnings.push(format!("--set: unknown setting '{key}' (no setting of picket or Suricata)"));
                }
                config.set(key, value)?;
            } else {
                warnings.push(format!("unknown setting '{key}' ignored"));
            }
        }
        Ok((config, warnings))
    }

    /// Parses YAML text directly (no includes are followed, since there is no folder to
    /// resolve them against). For tests and embedded defaults.
    pub fn from_yaml_str(text: &str) -> Result<Config, ConfigError> {
        let mut warnings = Vec::new();
        let mut loader = Loader::new(Path::new("."), &mut warnings);
        let root = loader.parse_text(text, Path::new("<string>"), None)?;
        Ok(Config { root: Value::Mapping(root), source: None })
    }

    /// The whole merged tree (for `--dump-config`).
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// The top-level YAML file this configuration was read from.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Sets a dotted key, creating missing mappings on the way. A numeric segment indexes a
    /// list (the index may equal the length, which appends). The value is stored as a string,
    /// as Suricata does for `--set`; the typed getters interpret it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let segments = split_key(key)?;
        let mut node = &mut self.root;
        for segment in segments {
            node = child_for_set(node, segment, key)?;
        }
        *node = Value::String(value.to_string());
        Ok(())
    }

    /// The node at a dotted key; numeric segments index lists.
    pub fn node(&self, key: &str) -> Option<&Value> {
        let mut node = &self.root;
        for segment in key.split('.') {
            node = match node {
                Value::Mapping(map) => map.get(segment)?,
                Value::Sequence(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// A scalar value as text. `None` when the key is absent, empty (`key:`) or not a scalar.
    pub fn get_str(&self, key: &str) -> Option<String> {
        scalar_text(self.node(key)?)
    }

    /// A boolean in any Suricata spelling (yes/no/true/false/on/off/1/0, any case).
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        let Some(value) = self.present(key) else {
            return Ok(None);
        };
        let parsed = match value {
            Value::Bool(b) => Some(*b),
            other => scalar_text(other).and_then(|t| parse_bool(&t)),
        };
        parsed.map(Some).ok_or_else(|| ConfigError::bad_value(key, value, "yes/no/true/false/on/off/1/0"))
    }

    /// A non-negative integer.
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        let Some(value) = self.present(key) else {
            return Ok(None);
        };
        let parsed = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        parsed.map(Some).ok_or_else(|| ConfigError::bad_value(key, value, "a non-negative integer"))
    }

    /// A byte size such as `1024`, `64kb`, `128mb`, `1gb`, `1.5 MiB` (see [`parse_size`]).
    pub fn get_size(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        let Some(value) = self.present(key) else {
            return Ok(None);
        };
        let parsed = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => parse_size(s),
            _ => None,
        };
        parsed.map(Some).ok_or_else(|| ConfigError::bad_value(key, value, "a size such as 4096, 64kb, 128mb or 1gb"))
    }

    /// `vars.address-groups`, in file order, followed by Suricata's default groups that the
    /// configuration does not define. Lists are written the way rules spell them: `[a,b]`.
    pub fn address_groups(&self) -> Vec<(String, String)> {
        self.var_groups("vars.address-groups", DEFAULT_ADDRESS_GROUPS)
    }

    /// `vars.port-groups`, like [`Config::address_groups`].
    pub fn port_groups(&self) -> Vec<(String, String)> {
        self.var_groups("vars.port-groups", DEFAULT_PORT_GROUPS)
    }

    fn var_groups(&self, key: &str, defaults: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut groups: Vec<(String, String)> = Vec::new();
        if let Some(Value::Mapping(map)) = self.node(key) {
            for (name, value) in map {
                let (Some(name), Some(value)) = (scalar_text(name), group_text(value)) else {
                    continue;
                };
                groups.push((name, value));
            }
        }
        for (name, value) in defaults {
            if !groups.iter().any(|(n, _)| n == name) {
                groups.push((name.to_string(), value.to_string()));
            }
        }
        groups
    }

    /// The node at `key` unless it is absent or empty.
    fn present(&self, key: &str) -> Option<&Value> {
        self.node(key).filter(|v| !v.is_null())
    }
}

/// Suricata's built-in variables, used for any group the configuration leaves undefined so
/// that rules written for a stock setup load without a `vars:` section.
pub use crate::detect::rule::vars::{DEFAULT_ADDRESS_GROUPS, DEFAULT_PORT_GROUPS};

/// Text of a scalar; `None` for null, lists and mappings.
pub(super) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A variable's value: scalars as they are, lists as `[a,b]` (nested lists kept nested).
fn group_text(value: &Value) -> Option<String> {
    match value {
        Value::Sequence(items) => {
            let parts: Vec<String> = items.iter().filter_map(group_text).collect();
            Some(format!("[{}]", parts.join(",")))
        }
        other => scalar_text(other),
    }
}

/// A short rendering of a bad value for error messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Sequence(_) => "<list>".to_string(),
        Value::Mapping(_) => "<mapping>".to_string(),
        other => scalar_text(other).unwrap_or_default(),
    }
}

/// Splits `key=value` at the first `=`; both sides are trimmed.
fn split_set(set: &str) -> Result<(&str, &str), ConfigError> {
    let Some((key, value)) = set.split_once('=') else {
        return Err(ConfigError::new(format!("invalid --set '{set}': expected key=value")));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError::new(format!("invalid --set '{set}': empty key")));
    }
    Ok((key, value.trim()))
}

fn split_key(key: &str) -> Result<Vec<&str>, ConfigError> {
    let segments: Vec<&str> = key.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(ConfigError::new(format!("invalid key '{key}': empty segment")));
    }
    Ok(segments)
}

/// The child of `node` named `segment`, created if missing. Scalars and nulls in the way are
/// replaced by a mapping (or by a list when the first index is 0 and nothing was there).
fn child_for_set<'a>(node: &'a mut Value, segment: &str, key: &str) -> Result<&'a mut Value, ConfigError> {
    let index = segment.parse::<usize>().ok();
    match node {
        Value::Mapping(_) => {}
        Value::Sequence(_) if index.is_some() => {}
        Value::Sequence(_) => {
            return Err(ConfigError::new(format!(
                "invalid key '{key}': '{segment}' names an entry of a list; use its index (0, 1, ...)"
            )))
        }
        Value::Null if index == Some(0) => *node = Value::Sequence(Vec::new()),
        _ => *node = Value::Mapping(Mapping::new()),
    }
    match (node, index) {
        (Value::Sequence(items), Some(i)) => {
            if i == items.len() {
                items.push(Value::Null);
            }
            let len = items.len();
            items.get_mut(i).ok_or_else(|| {
                ConfigError::new(format!("invalid key '{key}': index {i} is past the end of a list of {len}"))
            })
        }
        (Value::Mapping(map), _) => Ok(map.entry(Value::String(segment.to_string())).or_insert(Value::Null)),
        _ => Err(ConfigError::new(format!("invalid key '{key}'"))),
    }
}

/// The YAML as written, before Suricata's merge rules: mappings keep duplicate keys and their
/// order (serde_yaml's own `Value` rejects duplicates, but Suricata files may repeat
/// `include:`, and Suricata lets a repeated key override the earlier one).
enum RawNode {
    Scalar(Value),
    List(Vec<RawNode>),
    Map(Vec<(RawNode, RawNode)>),
}

impl<'de> Deserialize<'de> for RawNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> de::Visitor<'de> for RawVisitor {
    type Value = RawNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Number(v.into())))
    }
    fn visit_i128<E>(self, v: i128) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::String(v.to_string())))
    }
    fn visit_u128<E>(self, v: u128) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::String(v.to_string())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Number(v.into())))
    }
    fn visit_str<E>(self, v: &str) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<RawNode, E> {
        Ok(RawNode::Scalar(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<RawNode, D::Error> {
        RawNode::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(RawNode::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(RawNode::Map(entries))
    }
    /// Tagged values (`!foo bar`): Suricata ignores tags, so do we.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<RawNode, A::Error> {
        let (_tag, variant): (String, _) = data.variant()?;
        variant.newtype_variant()
    }
}

struct Loader<'w> {
    /// Folder of the top-level file: Suricata resolves includes against it.
    top_dir: PathBuf,
    /// Files being loaded, outermost first, to report include cycles.
    stack: Vec<PathBuf>,
    files_read: usize,
    warnings: &'w mut Vec<String>,
}

impl<'w> Loader<'w> {
    fn new(top_file: &Path, warnings: &'w mut Vec<String>) -> Self {
        Loader { top_dir: parent_dir(top_file), stack: Vec::new(), files_read: 0, warnings }
    }

    fn load_file(&mut self, path: &Path) -> Result<Mapping, ConfigError> {
        let shown = path.display();
        let identity = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&identity) {
            return Err(ConfigError::new(format!("{shown}: include cycle")));
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(ConfigError::new(format!("{shown}: includes nested deeper than {MAX_INCLUDE_DEPTH}")));
        }
        self.files_read += 1;
        if self.files_read > MAX_FILES {
            return Err(ConfigError::new(format!("{shown}: more than {MAX_FILES} configuration files included")));
        }
        let text = read_limited(path).map_err(|e| ConfigError::new(format!("{shown}: {e}")))?;
        self.stack.push(identity);
        let result = self.parse_text(&text, path, Some(&parent_dir(path)));
        self.stack.pop();
        result
    }

    /// Parses one document and applies the merge rules; `dir` is where relative includes are
    /// looked up (`None`: includes are not allowed).
    fn parse_text(&mut self, text: &str, path: &Path, dir: Option<&Path>) -> Result<Mapping, ConfigError> {
        let shown = path.display();
        // serde_yaml accepts the `%YAML 1.1` directive itself; nothing to strip.
        let raw = RawNode::deserialize(serde_yaml::Deserializer::from_str(text))
            .map_err(|e| ConfigError::new(format!("{shown}: {e}")))?;
        let mut root = Mapping::new();
        match raw {
            RawNode::Map(entries) => self.apply_entries(entries, &mut root, path, dir)?,
            RawNode::Scalar(Value::Null) => {}
            _ => return Err(ConfigError::new(format!("{shown}: the top level must be a mapping of settings"))),
        }
        Ok(root)
    }

    /// Applies mapping entries in order: later keys replace earlier ones, `include` splices
    /// in another file's top-level entries.
    fn apply_entries(
        &mut self,
        entries: Vec<(RawNode, RawNode)>,
        into: &mut Mapping,
        path: &Path,
        dir: Option<&Path>,
    ) -> Result<(), ConfigError> {
        for (key, value) in entries {
            let key = match key {
                RawNode::Scalar(k) => scalar_text(&k),
                _ => None,
            }
            .ok_or_else(|| ConfigError::new(format!("{}: mapping keys must be plain scalars", path.display())))?;
            if key == "include" {
                for target in self.include_targets(value, path)? {
                    let Some(dir) = dir else {
                        return Err(ConfigError::new(format!(
                            "{}: include '{target}' cannot be resolved here",
                            path.display()
                        )));
                    };
                    let file = self.resolve_include(&target, dir);
                    for (k, v) in self.load_file(&file)? {
                        into.insert(k, v);
                    }
                }
            } else {
                let value = self.resolve(value, path, dir)?;
                into.insert(Value::String(key), value);
            }
        }
        Ok(())
    }

    fn resolve(&mut self, node: RawNode, path: &Path, dir: Option<&Path>) -> Result<Value, ConfigError> {
        Ok(match node {
            RawNode::Scalar(v) => v,
            RawNode::List(items) => {
                Value::Sequence(items.into_iter().map(|item| self.resolve(item, path, dir)).collect::<Result<_, _>>()?)
            }
            RawNode::Map(entries) => {
                let mut map = Mapping::new();
                self.apply_entries(entries, &mut map, path, dir)?;
                Value::Mapping(map)
            }
        })
    }

    /// File names of an `include:` value: one name or a list of names.
    fn include_targets(&mut self, value: RawNode, path: &Path) -> Result<Vec<String>, ConfigError> {
        let bad =
            || ConfigError::new(format!("{}: include expects a file name or a list of file names", path.display()));
        match value {
            RawNode::Scalar(Value::Null) => {
                self.warnings.push(format!("{}: empty include ignored", path.display()));
                Ok(Vec::new())
            }
            RawNode::Scalar(v) => Ok(vec![scalar_text(&v).ok_or_else(bad)?]),
            RawNode::List(items) => items
                .into_iter()
                .map(|item| match item {
                    RawNode::Scalar(v) => scalar_text(&v).ok_or_else(bad),
                    _ => Err(bad()),
                })
                .collect(),
            RawNode::Map(_) => Err(bad()),
        }
    }

    /// Next to the including file if it exists there, else next to the top-level file
    /// (where Suricata looks). Errors then name the first candidate.
    fn resolve_include(&self, target: &str, including_dir: &Path) -> PathBuf {
        let target = Path::new(target);
        if target.is_absolute() {
            return target.to_path_buf();
        }
        let beside = including_dir.join(target);
        if !beside.exists() {
            let from_top = self.top_dir.join(target);
            if from_top.exists() {
                return from_top;
            }
        }
        beside
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn read_limited(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read: not a regular file".to_string());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("cannot read: larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())
}

#[cfg(test)]
mod tests;
