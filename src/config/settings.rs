//! Reading the engine's typed settings ([`picket_core::settings`]) from the YAML tree.

use super::app_detection::detection_ports;
use super::{Config, ConfigError};
use picket_core::applayer::http::HttpConfig;
use picket_core::settings::*;
use std::path::PathBuf;

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

/// The engine's settings read from the configuration.
pub trait EngineSettingsExt: Sized {
    /// Reads and validates every setting; absent ones keep Suricata's default. Values that
    /// Suricata tolerates with a warning come back as warnings; the rest are errors.
    fn from_config(cfg: &Config) -> Result<(Self, Vec<String>), ConfigError>;
    /// Applies the `-k` command-line flag (`all` or `none`; `auto` also accepted), which
    /// overrides the YAML for both packet and stream checksum validation.
    fn apply_checksum_flag(&mut self, value: &str) -> Result<(), ConfigError>;
    /// Rule files with relative names placed under `default-rule-path`, as Suricata does.
    fn rule_paths(&self) -> Vec<PathBuf>;
}

impl EngineSettingsExt for EngineSettings {
    /// Reads and validates every setting; absent ones keep Suricata's default. Values that
    /// Suricata tolerates with a warning come back as warnings; the rest are errors.
    fn from_config(cfg: &Config) -> Result<(Self, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        let mut s = EngineSettings::default();
        set_opt(&mut s.midstream, cfg.get_bool("stream.midstream")?);
        set_opt(&mut s.async_oneside, cfg.get_bool("stream.async-oneside")?);
        let policies = "auto, ignore, pass-packet, pass-flow, bypass, drop-packet, drop-flow or reject";
        for (key, slot) in
            [("exception-policy", &mut s.exception_policy), ("stream.midstream-policy", &mut s.midstream_policy)]
        {
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
        set_opt(&mut s.stream_reassembly_memcap, cfg.get_size("stream.reassembly.memcap")?);
        set_opt(&mut s.stream_reassembly_depth, cfg.get_size("stream.reassembly.depth")?);
        if let Some(v) = cfg.get_u64("stream.reassembly.max-regions")? {
            s.stream_reassembly_max_regions = u32::try_from(v)
                .map_err(|_| bad("stream.reassembly.max-regions", &v.to_string(), "at most 4294967295"))?;
        }
        set_opt(&mut s.stream_checksum_validation, cfg.get_bool("stream.checksum-validation")?);
        set_opt(&mut s.stream_bypass, cfg.get_bool("stream.bypass")?);
        // Suricata's `encryption-handling` (track-only or default, bypass, full); older
        // files say `bypass: yes` under the tls section.
        if let Some(text) = cfg.get_str("app-layer.protocols.tls.encryption-handling") {
            s.tls_encryption = EncryptionHandling::parse(&text).ok_or_else(|| {
                bad("app-layer.protocols.tls.encryption-handling", &text, "track-only, default, bypass or full")
            })?;
        } else if let Some(v) = cfg.get_bool("app-layer.protocols.tls.bypass")? {
            s.tls_encryption = if v { EncryptionHandling::Bypass } else { EncryptionHandling::TrackOnly };
        }
        if let Some(text) = cfg.get_str("app-layer.protocols.ssh.encryption-handling") {
            s.ssh_encryption = EncryptionHandling::parse(&text).ok_or_else(|| {
                bad("app-layer.protocols.ssh.encryption-handling", &text, "track-only, bypass or full")
            })?;
        }
        if let Some(text) = cfg.get_str("pcap-file.checksum-checks") {
            s.checksum_mode =
                ChecksumMode::parse(&text).ok_or_else(|| bad("pcap-file.checksum-checks", &text, "auto, yes or no"))?;
        }
        set_opt(&mut s.flow_memcap, cfg.get_size("flow.memcap")?);
        set_opt(&mut s.flow_hash_size, bounded_u32(cfg, "flow.hash-size", 1, u32::MAX)?);
        set_opt(&mut s.flow_prealloc, bounded_u32(cfg, "flow.prealloc", 0, u32::MAX)?);
        if let Some(v) = bounded_u32(cfg, "flow.emergency-recovery", 0, 100)? {
            s.flow_emergency_recovery = v as u8;
        }
        set_opt(&mut s.http_memcap, cfg.get_size("app-layer.protocols.http.memcap")?);
        s.flow_timeouts = FlowTimeouts {
            default: proto_timeouts(cfg, "default", ProtoTimeouts::OTHER)?,
            tcp: proto_timeouts(cfg, "tcp", ProtoTimeouts::TCP)?,
            udp: proto_timeouts(cfg, "udp", ProtoTimeouts::OTHER)?,
            icmp: proto_timeouts(cfg, "icmp", ProtoTimeouts::OTHER)?,
        };
        set_opt(&mut s.vlan_use_for_tracking, cfg.get_bool("vlan.use-for-tracking")?);
        s.mpm_algo = algorithm(cfg, "mpm-algo", MPM_ALGOS)?;
        s.spm_algo = algorithm(cfg, "spm-algo", SPM_ALGOS)?;
        s.default_rule_path = cfg.get_str("default-rule-path").map(PathBuf::from);
        s.rule_files = rule_files(cfg)?;
        // Rule texts are kept only for eve's `rule` field (`--engine-analysis` asks for them
        // itself): ET Open's are about 17 MB of every process's memory.
        s.keep_rule_text = super::eve::alert_log_options(cfg).rule_raw;
        s.classification_file = cfg.get_str("classification-file").map(PathBuf::from);
        s.reference_config_file = cfg.get_str("reference-config-file").map(PathBuf::from);
        s.threshold_file = cfg.get_str("threshold-file").map(PathBuf::from);
        set_opt(&mut s.max_pending_packets, bounded_u32(cfg, "max-pending-packets", 1, 65534)?);
        match cfg.get_u64("packet-alert-max")? {
            Some(max @ 1..=255) => s.packet_alert_max = max as u16,
            Some(max) => warnings
                .push(format!("packet-alert-max {max} is outside 1..=255, using the default {}", s.packet_alert_max)),
            None => {}
        }
        let limits = &mut s.inspection_limits;
        let pcre_max = crate::detect::engine::InspectionLimits::PCRE_LIMIT_MAX;
        set_opt(&mut limits.pcre_match_limit, bounded_u32(cfg, "pcre.match-limit", 1, pcre_max)?);
        set_opt(&mut limits.pcre_match_limit_recursion, bounded_u32(cfg, "pcre.match-limit-recursion", 1, pcre_max)?);
        set_opt(
            &mut limits.inspection_recursion_limit,
            bounded_u32(cfg, "detect.inspection-recursion-limit", 0, u32::MAX)?,
        );
        if let Some(node) = cfg.node("action-order") {
            let names: Vec<String> = match node {
                serde_yaml::Value::Sequence(items) => items.iter().map(yaml_scalar).collect(),
                other => vec![yaml_scalar(other)],
            };
            match crate::detect::engine::ActionOrder::parse(&names) {
                Ok(order) => s.action_order = order,
                Err(e) => warnings.push(format!("{e}; using pass, drop, reject, alert")),
            }
        }
        s.runmode = cfg.get_str("runmode");
        s.default_log_dir = cfg.get_str("default-log-dir").map(PathBuf::from);
        for (slot, transport) in s.dns_detection_ports.iter_mut().zip(["tcp", "udp"]) {
            let specific = format!("app-layer.protocols.dns.{transport}.detection-ports.dp");
            let generic = "app-layer.protocols.dns.detection-ports.dp";
            let Some((key, node)) = [specific.as_str(), generic].into_iter().find_map(|k| cfg.node(k).map(|n| (k, n)))
            else {
                continue;
            };
            match detection_ports(node) {
                Some(ports) => *slot = Some(ports),
                None => warnings.push(format!("{key}: not a port list, keeping DNS detection on port 53")),
            }
        }
        // `app-layer.protocols.dns.<tcp|udp>.enabled`, else `app-layer.protocols.dns.enabled`
        // (Suricata's precedence): a disabled transport detects DNS on no port.
        for (slot, transport) in s.dns_detection_ports.iter_mut().zip(["tcp", "udp"]) {
            let specific = cfg.get_bool(&format!("app-layer.protocols.dns.{transport}.enabled"))?;
            if specific.or(cfg.get_bool("app-layer.protocols.dns.enabled")?) == Some(false) {
                *slot = Some(Vec::new());
            }
        }
        super::app_detection::read(cfg, &mut s.detect_only, &mut warnings)?;
        Ok((s, warnings))
    }

    /// Applies the `-k` command-line flag (`all` or `none`; `auto` also accepted), which
    /// overrides the YAML for both packet and stream checksum validation.
    fn apply_checksum_flag(&mut self, value: &str) -> Result<(), ConfigError> {
        let mode = match value.trim() {
            v if v.eq_ignore_ascii_case("all") => ChecksumMode::Always,
            v if v.eq_ignore_ascii_case("none") => ChecksumMode::Never,
            v if v.eq_ignore_ascii_case("auto") => ChecksumMode::Auto,
            _ => return Err(ConfigError::new(format!("invalid -k '{value}' (expected all or none)"))),
        };
        self.checksum_mode = mode;
        self.stream_checksum_validation = mode != ChecksumMode::Never;
        Ok(())
    }

    /// Rule files with relative names placed under `default-rule-path`, as Suricata does.
    fn rule_paths(&self) -> Vec<PathBuf> {
        self.rule_files
            .iter()
            .map(|file| match &self.default_rule_path {
                Some(dir) if PathBuf::from(file).is_relative() => dir.join(file),
                _ => PathBuf::from(file),
            })
            .collect()
    }
}

fn set_opt<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

fn bad(key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::new(format!("invalid value for '{key}': '{value}' (expected {expected})"))
}

fn bounded_u32(cfg: &Config, key: &str, min: u32, max: u32) -> Result<Option<u32>, ConfigError> {
    match cfg.get_u64(key)? {
        None => Ok(None),
        Some(v) if v >= min as u64 && v <= max as u64 => Ok(Some(v as u32)),
        Some(v) => Err(bad(key, &v.to_string(), &format!("a number from {min} to {max}"))),
    }
}

fn proto_timeouts(cfg: &Config, proto: &str, defaults: ProtoTimeouts) -> Result<ProtoTimeouts, ConfigError> {
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
        set_opt(field, bounded_u32(cfg, &format!("flow-timeouts.{proto}.{name}"), 0, u32::MAX)?);
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
                super::scalar_text(item)
                    .ok_or_else(|| ConfigError::new("invalid value for 'rule-files': entries must be file names"))
            })
            .collect(),
        Some(Value::Mapping(_)) => {
            Err(ConfigError::new("invalid value for 'rule-files': expected a list of file names"))
        }
        Some(other) => Ok(super::scalar_text(other).into_iter().collect()),
    }
}

/// Where Suricata keeps the libhtp settings that apply to every server.
pub const HTTP_CONFIG_PREFIX: &str = "app-layer.protocols.http.libhtp.default-config";

/// The defaults overridden by what `config` sets under [`HTTP_CONFIG_PREFIX`]
/// (`request-body-limit`, `response-body-limit`, `response-body-decompress-layer-limit`,
/// `compression-bomb-limit`). A limit of 0 means unlimited, as in Suricata.
pub fn http_config(config: &Config) -> Result<HttpConfig, ConfigError> {
    let mut c = HttpConfig::default();
    let key = |name: &str| format!("{}.{name}", HTTP_CONFIG_PREFIX);
    let unlimited_if_zero = |v: u64| if v == 0 { usize::MAX } else { v.min(usize::MAX as u64) as usize };
    if let Some(v) = config.get_size(&key("request-body-limit"))? {
        c.request_body_limit = unlimited_if_zero(v);
    }
    if let Some(v) = config.get_size(&key("response-body-limit"))? {
        c.response_body_limit = unlimited_if_zero(v);
    }
    if let Some(v) = config.get_u64(&key("response-body-decompress-layer-limit"))? {
        c.decompress_layer_limit = v.min(u32::MAX as u64) as u32;
    }
    if let Some(v) = config.get_size(&key("compression-bomb-limit"))? {
        c.compression_bomb_limit = if v == 0 { u64::MAX } else { v };
    }
    Ok(c)
}

/// A YAML scalar as text (a list item of `action-order`).
fn yaml_scalar(v: &serde_yaml::Value) -> String {
    match v {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        serde_yaml::Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}
