//! The typed, validated settings the engine reads, with Suricata's defaults.

use super::{parse_bool, Config, ConfigError};
use std::path::PathBuf;

/// `stream.inline`: whether TCP is reassembled as an inline (IPS) engine would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamInline {
    /// Follow the run mode: inline when running as an IPS.
    Auto,
    Yes,
    No,
}

/// Checksum validation of captured packets (`pcap-file.checksum-checks`, `-k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumMode {
    /// Validate unless the capture looks checksum-offloaded (Suricata's `auto`).
    Auto,
    /// Validate every packet (`-k all`, `yes`).
    Always,
    /// Never validate (`-k none`, `no`).
    Never,
}

impl ChecksumMode {
    /// Accepts `auto`, `all`, `none` and the boolean spellings (yes = all, no = none).
    pub fn parse(text: &str) -> Option<ChecksumMode> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            Some(ChecksumMode::Auto)
        } else if text.eq_ignore_ascii_case("all") {
            Some(ChecksumMode::Always)
        } else if text.eq_ignore_ascii_case("none") {
            Some(ChecksumMode::Never)
        } else {
            parse_bool(text).map(|on| {
                if on {
                    ChecksumMode::Always
                } else {
                    ChecksumMode::Never
                }
            })
        }
    }
}

/// What the engine does when it meets an exception condition (Suricata's exception
/// policies: `exception-policy` master switch, `stream.midstream-policy`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionPolicy {
    /// IPS: drop the flow (or the packet where flows do not apply); IDS: ignore.
    Auto,
    /// Carry on as if nothing happened (Suricata's `ignore`, its internal "not set").
    Ignore,
    PassPacket,
    PassFlow,
    /// Pass the flow and ask the capture to bypass it.
    Bypass,
    DropPacket,
    DropFlow,
    Reject,
}

impl ExceptionPolicy {
    pub fn parse(text: &str) -> Option<ExceptionPolicy> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "auto" => ExceptionPolicy::Auto,
            "ignore" => ExceptionPolicy::Ignore,
            "pass-packet" => ExceptionPolicy::PassPacket,
            "pass-flow" => ExceptionPolicy::PassFlow,
            "bypass" => ExceptionPolicy::Bypass,
            "drop-packet" => ExceptionPolicy::DropPacket,
            "drop-flow" => ExceptionPolicy::DropFlow,
            "reject" => ExceptionPolicy::Reject,
            _ => return None,
        })
    }

    /// `auto` resolved the way Suricata does for a policy that can act on flows: drop the
    /// flow in IPS mode unless midstream pickup is on, otherwise ignore.
    fn pick_auto(midstream: bool, ips: bool) -> ExceptionPolicy {
        if ips && !midstream {
            ExceptionPolicy::DropFlow
        } else {
            ExceptionPolicy::Ignore
        }
    }
}

/// Timeouts in seconds for one protocol (`flow-timeouts.<proto>.*`). `closed` only matters
/// for protocols with a closing handshake (TCP) but is read for all, like Suricata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtoTimeouts {
    pub new: u32,
    pub established: u32,
    pub closed: u32,
    pub bypassed: u32,
    pub emergency_new: u32,
    pub emergency_established: u32,
    pub emergency_closed: u32,
    pub emergency_bypassed: u32,
}

impl ProtoTimeouts {
    const OTHER: ProtoTimeouts = ProtoTimeouts {
        new: 30,
        established: 300,
        closed: 0,
        bypassed: 100,
        emergency_new: 10,
        emergency_established: 100,
        emergency_closed: 0,
        emergency_bypassed: 50,
    };
    const TCP: ProtoTimeouts = ProtoTimeouts {
        closed: 10,
        emergency_closed: 5,
        ..Self::OTHER
    };
}

/// `flow-timeouts`: `default` applies to protocols other than TCP, UDP and ICMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowTimeouts {
    pub default: ProtoTimeouts,
    pub tcp: ProtoTimeouts,
    pub udp: ProtoTimeouts,
    pub icmp: ProtoTimeouts,
}

impl Default for FlowTimeouts {
    fn default() -> Self {
        FlowTimeouts {
            default: ProtoTimeouts::OTHER,
            tcp: ProtoTimeouts::TCP,
            udp: ProtoTimeouts::OTHER,
            icmp: ProtoTimeouts::OTHER,
        }
    }
}

/// Everything the engine reads from the configuration, validated.
///
/// File paths are kept as written: Suricata resolves relative ones against the working
/// directory, and so does picket (rule files excepted, see [`EngineSettings::rule_paths`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineSettings {
    /// `stream.midstream`: pick up TCP sessions without seeing their handshake.
    pub midstream: bool,
    /// `stream.midstream-policy`, if set.
    pub midstream_policy: Option<ExceptionPolicy>,
    /// `exception-policy`: the master switch, default for every policy not set itself.
    pub exception_policy: Option<ExceptionPolicy>,
    /// `host-os-policy`: (policy name, address or CIDR) pairs in file order.
    pub host_os_policy: Vec<(String, String)>,
    /// `stream.async-oneside`: accept TCP sessions seen in one direction only.
    pub async_oneside: bool,
    pub stream_inline: StreamInline,
    /// `stream.memcap`, bytes.
    pub stream_memcap: u64,
    /// `stream.reassembly.memcap`, bytes.
    pub stream_reassembly_memcap: u64,
    /// `stream.reassembly.depth`, bytes per direction; 0 means unlimited.
    pub stream_reassembly_depth: u64,
    /// `stream.checksum-validation`: drop TCP segments with bad checksums from the stream.
    pub stream_checksum_validation: bool,
    /// `pcap-file.checksum-checks`, overridden by `-k` (see [`EngineSettings::apply_checksum_flag`]).
    pub checksum_mode: ChecksumMode,
    /// `flow.memcap`, bytes.
    pub flow_memcap: u64,
    /// `flow.hash-size`, buckets (at least 1).
    pub flow_hash_size: u32,
    /// `flow.prealloc`, flows.
    pub flow_prealloc: u32,
    pub flow_timeouts: FlowTimeouts,
    /// `vlan.use-for-tracking`: VLAN ids are part of the flow key.
    pub vlan_use_for_tracking: bool,
    /// `mpm-algo` (`auto`, `ac`, `ac-bs`, `ac-ks`, `hs`); `None` = engine's choice.
    pub mpm_algo: Option<String>,
    /// `spm-algo` (`auto`, `bm`, `hs`); `None` = engine's choice.
    pub spm_algo: Option<String>,
    pub default_rule_path: Option<PathBuf>,
    /// `rule-files`, as written.
    pub rule_files: Vec<String>,
    pub classification_file: Option<PathBuf>,
    pub reference_config_file: Option<PathBuf>,
    pub threshold_file: Option<PathBuf>,
    /// `max-pending-packets`, 1..=65534.
    pub max_pending_packets: u32,
    /// `packet-alert-max`: alerts kept per packet, 1..=255 (outside that range Suricata warns
    /// and keeps the default, and so do we).
    pub packet_alert_max: u16,
    pub runmode: Option<String>,
    pub default_log_dir: Option<PathBuf>,
    /// `app-layer.protocols.dns.{tcp,udp}.detection-ports.dp` (or the key without the
    /// transport): server ports on which DNS is recognised; `None` keeps port 53.
    pub dns_detection_ports: [Option<Vec<u16>>; 2],
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            midstream: false,
            midstream_policy: None,
            exception_policy: None,
            host_os_policy: Vec::new(),
            async_oneside: false,
            stream_inline: StreamInline::Auto,
            stream_memcap: 64 << 20,
            stream_reassembly_memcap: 256 << 20,
            stream_reassembly_depth: 1 << 20,
            stream_checksum_validation: true,
            checksum_mode: ChecksumMode::Auto,
            flow_memcap: 32 << 20,
            flow_hash_size: 65536,
            flow_prealloc: 10000,
            flow_timeouts: FlowTimeouts::default(),
            vlan_use_for_tracking: true,
            mpm_algo: None,
            spm_algo: None,
            default_rule_path: None,
            rule_files: Vec::new(),
            classification_file: None,
            reference_config_file: None,
            threshold_file: None,
            max_pending_packets: 1024,
            packet_alert_max: 15,
            runmode: None,
            default_log_dir: None,
            dns_detection_ports: [None, None],
        }
    }
}

/// `host-os-policy:` maps each policy name to a list of addresses (or one address).
fn host_os_policy(cfg: &Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(serde_yaml::Value::Mapping(map)) = cfg.node("host-os-policy") {
        for (name, addrs) in map {
            let Some(name) = name.as_str() else { continue };
            let items: Vec<&serde_yaml::Value> = match addrs {
                serde_yaml::Value::Sequence(items) => items.iter().collect(),
                other => vec![other],
            };
            for item in items {
                if let Some(addr) = item.as_str() {
                    for part in addr.trim_matches(|c| c == '[' || c == ']').split(',') {
                        if !part.trim().is_empty() {
                            out.push((name.to_string(), part.trim().to_string()));
                        }
                    }
                }
            }
        }
    }
    out
}

const MPM_ALGOS: &[&str] = &["auto", "ac", "ac-bs", "ac-ks", "hs"];
const SPM_ALGOS: &[&str] = &["auto", "bm", "hs"];

impl EngineSettings {
    /// `stream.midstream-policy` as Suricata resolves it: the key itself, else the master
    /// switch, else the built-in default (drop the flow in IPS mode without midstream
    /// pickup, ignore otherwise). In IDS mode dropping is not possible and becomes ignore.
    pub fn effective_midstream_policy(&self, ips: bool) -> ExceptionPolicy {
        let policy = match (self.midstream_policy, self.exception_policy) {
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => ExceptionPolicy::Auto,
        };
        let policy = if policy == ExceptionPolicy::Auto { ExceptionPolicy::pick_auto(self.midstream, ips) } else { policy };
        match policy {
            ExceptionPolicy::DropFlow | ExceptionPolicy::DropPacket if !ips => ExceptionPolicy::Ignore,
            // A midstream pickup concerns the whole flow: per-packet variants act on it.
            ExceptionPolicy::DropPacket => ExceptionPolicy::DropFlow,
            ExceptionPolicy::PassPacket => ExceptionPolicy::PassFlow,
            p => p,
        }
    }

    /// Reads and validates every setting; absent ones keep Suricata's default. Values that
    /// Suricata tolerates with a warning come back as warnings; the rest are errors.
    pub fn from_config(cfg: &Config) -> Result<(Self, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        let mut s = EngineSettings::default();
        set_opt(&mut s.midstream, cfg.get_bool("stream.midstream")?);
        set_opt(&mut s.async_oneside, cfg.get_bool("stream.async-oneside")?);
        let policies = "auto, ignore, pass-packet, pass-flow, bypass, drop-packet, drop-flow or reject";
        for (key, slot) in [("exception-policy", &mut s.exception_policy), ("stream.midstream-policy", &mut s.midstream_policy)] {
            if let Some(text) = cfg.get_str(key) {
                *slot = Some(ExceptionPolicy::parse(&text).ok_or_else(|| bad(key, &text, policies))?);
            }
        }
        s.host_os_policy = host_os_policy(cfg);
        if let Some(text) = cfg.get_str("stream.inline") {
            s.stream_inline = if text.trim().eq_ignore_ascii_case("auto") {
                StreamInline::Auto
            } else {
                match cfg.get_bool("stream.inline") {
                    Ok(Some(true)) => StreamInline::Yes,
                    Ok(_) => StreamInline::No,
                    Err(_) => return Err(bad("stream.inline", &text, "auto, yes or no")),
                }
            };
        }
        set_opt(&mut s.stream_memcap, cfg.get_size("stream.memcap")?);
        set_opt(
            &mut s.stream_reassembly_memcap,
            cfg.get_size("stream.reassembly.memcap")?,
        );
        set_opt(
            &mut s.stream_reassembly_depth,
            cfg.get_size("stream.reassembly.depth")?,
        );
        set_opt(
            &mut s.stream_checksum_validation,
            cfg.get_bool("stream.checksum-validation")?,
        );
        if let Some(text) = cfg.get_str("pcap-file.checksum-checks") {
            s.checksum_mode = ChecksumMode::parse(&text)
                .ok_or_else(|| bad("pcap-file.checksum-checks", &text, "auto, yes or no"))?;
        }
        set_opt(&mut s.flow_memcap, cfg.get_size("flow.memcap")?);
        set_opt(
            &mut s.flow_hash_size,
            bounded_u32(cfg, "flow.hash-size", 1, u32::MAX)?,
        );
        set_opt(
            &mut s.flow_prealloc,
            bounded_u32(cfg, "flow.prealloc", 0, u32::MAX)?,
        );
        s.flow_timeouts = FlowTimeouts {
            default: proto_timeouts(cfg, "default", ProtoTimeouts::OTHER)?,
            tcp: proto_timeouts(cfg, "tcp", ProtoTimeouts::TCP)?,
            udp: proto_timeouts(cfg, "udp", ProtoTimeouts::OTHER)?,
            icmp: proto_timeouts(cfg, "icmp", ProtoTimeouts::OTHER)?,
        };
        set_opt(
            &mut s.vlan_use_for_tracking,
            cfg.get_bool("vlan.use-for-tracking")?,
        );
        s.mpm_algo = algorithm(cfg, "mpm-algo", MPM_ALGOS)?;
        s.spm_algo = algorithm(cfg, "spm-algo", SPM_ALGOS)?;
        s.default_rule_path = cfg.get_str("default-rule-path").map(PathBuf::from);
        s.rule_files = rule_files(cfg)?;
        s.classification_file = cfg.get_str("classification-file").map(PathBuf::from);
        s.reference_config_file = cfg.get_str("reference-config-file").map(PathBuf::from);
        s.threshold_file = cfg.get_str("threshold-file").map(PathBuf::from);
        set_opt(
            &mut s.max_pending_packets,
            bounded_u32(cfg, "max-pending-packets", 1, 65534)?,
        );
        match cfg.get_u64("packet-alert-max")? {
            Some(max @ 1..=255) => s.packet_alert_max = max as u16,
            Some(max) => warnings.push(format!(
                "packet-alert-max {max} is outside 1..=255, using the default {}",
                s.packet_alert_max
            )),
            None => {}
        }
        s.runmode = cfg.get_str("runmode");
        s.default_log_dir = cfg.get_str("default-log-dir").map(PathBuf::from);
        for (slot, transport) in s.dns_detection_ports.iter_mut().zip(["tcp", "udp"]) {
            let specific = format!("app-layer.protocols.dns.{transport}.detection-ports.dp");
            let generic = "app-layer.protocols.dns.detection-ports.dp";
            let Some((key, node)) = [specific.as_str(), generic].into_iter().find_map(|k| cfg.node(k).map(|n| (k, n))) else {
                continue;
            };
            match detection_ports(node) {
                Some(ports) => *slot = Some(ports),
                None => warnings.push(format!("{key}: not a port list, keeping DNS detection on port 53")),
            }
        }
        Ok((s, warnings))
    }

    /// Applies the `-k` command-line flag (`all` or `none`; `auto` also accepted), which
    /// overrides the YAML for both packet and stream checksum validation.
    pub fn apply_checksum_flag(&mut self, value: &str) -> Result<(), ConfigError> {
        let mode = match value.trim() {
            v if v.eq_ignore_ascii_case("all") => ChecksumMode::Always,
            v if v.eq_ignore_ascii_case("none") => ChecksumMode::Never,
            v if v.eq_ignore_ascii_case("auto") => ChecksumMode::Auto,
            _ => {
                return Err(ConfigError::new(format!(
                    "invalid -k '{value}' (expected all or none)"
                )))
            }
        };
        self.checksum_mode = mode;
        self.stream_checksum_validation = mode != ChecksumMode::Never;
        Ok(())
    }

    /// Rule files with relative names placed under `default-rule-path`, as Suricata does.
    pub fn rule_paths(&self) -> Vec<PathBuf> {
        self.rule_files
            .iter()
            .map(|file| match &self.default_rule_path {
                Some(dir) if PathBuf::from(file).is_relative() => dir.join(file),
                _ => PathBuf::from(file),
            })
            .collect()
    }
}

/// A `detection-ports` value: `53`, `"53, 5353"`, `"[53,5353]"`, `"1000:1010"`, or a YAML list.
fn detection_ports(node: &serde_yaml::Value) -> Option<Vec<u16>> {
    use serde_yaml::Value;
    let text = match node {
        Value::Sequence(items) => {
            let mut all = Vec::new();
            for item in items {
                all.extend(detection_ports(item)?);
            }
            return (!all.is_empty()).then_some(all);
        }
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let mut ports = Vec::new();
    for part in text.trim().trim_start_matches('[').trim_end_matches(']').split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once(':') {
            Some((lo, hi)) => (lo.trim().parse::<u16>().ok()?, hi.trim().parse::<u16>().ok()?),
            None => {
                let p = part.parse::<u16>().ok()?;
                (p, p)
            }
        };
        // A range is kept small: each port is probed by a linear scan.
        if lo > hi || hi - lo > 1024 {
            return None;
        }
        ports.extend(lo..=hi);
    }
    (!ports.is_empty()).then_some(ports)
}

fn set_opt<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

fn bad(key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::new(format!(
        "invalid value for '{key}': '{value}' (expected {expected})"
    ))
}

fn bounded_u32(cfg: &Config, key: &str, min: u32, max: u32) -> Result<Option<u32>, ConfigError> {
    match cfg.get_u64(key)? {
        None => Ok(None),
        Some(v) if v >= min as u64 && v <= max as u64 => Ok(Some(v as u32)),
        Some(v) => Err(bad(
            key,
            &v.to_string(),
            &format!("a number from {min} to {max}"),
        )),
    }
}

fn proto_timeouts(
    cfg: &Config,
    proto: &str,
    defaults: ProtoTimeouts,
) -> Result<ProtoTimeouts, ConfigError> {
    let mut t = defaults;
    let fields: [(&str, &mut u32); 8] = [
        ("new", &mut t.new),
        ("established", &mut t.established),
        ("closed", &mut t.closed),
        ("bypassed", &mut t.bypassed),
        ("emergency-new", &mut t.emergency_new),
        ("emergency-established", &mut t.emergency_established),
        ("emergency-closed", &mut t.emergency_closed),
        ("emergency-bypassed", &mut t.emergency_bypassed),
    ];
    for (name, field) in fields {
        set_opt(
            field,
            bounded_u32(cfg, &format!("flow-timeouts.{proto}.{name}"), 0, u32::MAX)?,
        );
    }
    Ok(t)
}

fn algorithm(cfg: &Config, key: &str, allowed: &[&str]) -> Result<Option<String>, ConfigError> {
    let Some(name) = cfg.get_str(key) else {
        return Ok(None);
    };
    let name = name.trim().to_ascii_lowercase();
    if allowed.contains(&name.as_str()) {
        Ok(Some(name))
    } else {
        Err(bad(key, &name, &allowed.join(", ")))
    }
}

/// `rule-files`: normally a list; a single name is accepted too.
fn rule_files(cfg: &Config) -> Result<Vec<String>, ConfigError> {
    use serde_yaml::Value;
    match cfg.node("rule-files") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Sequence(items)) => items
            .iter()
            .filter(|item| !item.is_null())
            .map(|item| {
                super::scalar_text(item).ok_or_else(|| {
                    ConfigError::new("invalid value for 'rule-files': entries must be file names")
                })
            })
            .collect(),
        Some(Value::Mapping(_)) => Err(ConfigError::new(
            "invalid value for 'rule-files': expected a list of file names",
        )),
        Some(other) => Ok(super::scalar_text(other).into_iter().collect()),
    }
}
