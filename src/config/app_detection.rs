//! `app-layer.protocols.<proto>` for the protocols picket detects without parsing them
//! (`picket_core::applayer::detect_only`): `enabled` (`yes`, `no`, `detection-only`) and
//! `detection-ports` (`dp`, `sp`), each also under the transport (`<proto>.tcp.enabled`,
//! `<proto>.udp.detection-ports`), which takes precedence as in Suricata.

use super::{Config, ConfigError};
use picket_core::applayer::detect_only::{DetectOnlySettings, ProtoOverride, TABLE};

/// `enabled`: yes/no in any spelling, or `detection-only` (detected, which is all picket
/// does with these protocols anyway). Anything else is an error, as Suricata refuses it.
fn enabled(cfg: &Config, key: &str) -> Result<Option<bool>, ConfigError> {
    match cfg.get_str(key) {
        Some(text) if text.trim().eq_ignore_ascii_case("detection-only") => Ok(Some(true)),
        Some(_) => cfg
            .get_bool(key)
            .map_err(|_| ConfigError::new(format!("invalid value for '{key}' (expected yes, no or detection-only)"))),
        None => Ok(None),
    }
}

/// Reads every detection-only protocol's settings into `settings`; a port list that does
/// not parse is warned about and the default kept.
pub(super) fn read(
    cfg: &Config,
    settings: &mut DetectOnlySettings,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for entry in &TABLE {
        let name = entry.proto.name();
        let base = format!("app-layer.protocols.{name}");
        for (transport, present) in [("tcp", entry.tcp.is_some()), ("udp", entry.udp.is_some())] {
            if !present {
                continue;
            }
            let specific = format!("{base}.{transport}");
            let mut o = ProtoOverride {
                enabled: enabled(cfg, &format!("{specific}.enabled"))?.or(enabled(cfg, &format!("{base}.enabled"))?),
                ..ProtoOverride::default()
            };
            for (side, slot) in [("dp", &mut o.dp), ("sp", &mut o.sp)] {
                let keys = [format!("{specific}.detection-ports.{side}"), format!("{base}.detection-ports.{side}")];
                let Some((key, node)) = keys.iter().find_map(|k| cfg.node(k).map(|n| (k, n))) else { continue };
                match detection_ports(node) {
                    Some(ports) => *slot = Some(ports),
                    None => warnings.push(format!("{key}: not a port list, keeping {name}'s default ports")),
                }
            }
            settings.apply(entry.proto, transport == "tcp", &o);
        }
    }
    Ok(())
}

/// A `detection-ports` value: `53`, `"53, 5353"`, `"[53,5353]"`, `"1000:1010"`, or a YAML list.
pub(super) fn detection_ports(node: &serde_yaml::Value) -> Option<Vec<u16>> {
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
