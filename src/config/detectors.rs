//! `ddos.detectors` (the plug-in detectors' thresholds) and `ddos.blocklist.static`
//! (prefixes blocked for the whole run), read into picket-core's
//! [`DetectorSettings`](crate::detectors::DetectorSettings).
//!
//! ```yaml
//! ddos:
//!   blocklist:
//!     block-time: 60           # seconds a detector's block lasts (ddos.rs reads it)
//!     static: ["198.51.100.0/24", "2001:db8::/32"]   # never expire
//!   detectors:
//!     enabled: yes             # no: every detector off, whatever their own keys say
//!     max-keys: 10000          # destinations/sources per detector and window; more are refused (counted)
//!     max-blocks: 16           # sources one finding blocks at most
//!     allow: ["192.0.2.0/24"]  # never blocked (besides the capture interfaces' own addresses)
//!     syn-flood:      { enabled: yes, rate: 5000, ratio: 3, window: 1, block: yes, hold: 10 }
//!     port-scan:      { enabled: yes, ports: 100, window: 5, block: yes }
//!     udp-reflection: { enabled: yes, rate: 10000, bps: 100000000, window: 1, block: yes,
//!                       ports: [19, 53, 123, 161, 389, 1900, 11211, 3702],
//!                       block-prefix-v4: 32, block-prefix-v6: 128 }
//!     icmp-flood:     { enabled: yes, rate: 5000, window: 1, block: yes }
//! ```
//!
//! `block: no` makes a detector alert only. Errors are one line naming the key.

use super::{Config, ConfigError};
use crate::detectors::{DetectorSettings, Prefix};

/// Longest window a detector may sum over, in seconds.
const MAX_WINDOW: u64 = 3600;

/// The `ddos.detectors` section; `block_time` is `ddos.blocklist.block-time`.
pub fn detector_settings(config: &Config, block_time: u64) -> Result<DetectorSettings, String> {
    let mut out = DetectorSettings::default();
    out.common.block_time = block_time;
    let r = Reader { config };
    if let Some(v) = r.bounded("ddos.detectors.max-keys", 1, 1 << 22)? {
        out.common.max_keys = v as usize;
    }
    if let Some(v) = r.bounded("ddos.detectors.max-blocks", 1, 4096)? {
        out.common.max_blocks = v as usize;
    }
    if let Some(list) = prefixes(config, "ddos.detectors.allow")? {
        out.allow = list;
    }
    let base = "ddos.detectors.syn-flood";
    let s = &mut out.syn_flood;
    r.flag(base, "enabled", &mut s.enabled)?;
    r.flag(base, "block", &mut s.block)?;
    r.number(base, "rate", 1, u64::MAX >> 8, &mut s.rate)?;
    r.number(base, "ratio", 1, 1_000_000, &mut s.ratio)?;
    r.number(base, "window", 1, MAX_WINDOW, &mut s.window)?;
    r.number(base, "hold", 1, MAX_WINDOW, &mut s.hold)?;

    let base = "ddos.detectors.port-scan";
    let s = &mut out.port_scan;
    r.flag(base, "enabled", &mut s.enabled)?;
    r.flag(base, "block", &mut s.block)?;
    r.number(base, "ports", 2, 65535, &mut s.ports)?;
    r.number(base, "window", 1, MAX_WINDOW, &mut s.window)?;

    let base = "ddos.detectors.udp-reflection";
    let s = &mut out.udp_reflection;
    r.flag(base, "enabled", &mut s.enabled)?;
    r.flag(base, "block", &mut s.block)?;
    r.number(base, "rate", 1, u64::MAX >> 8, &mut s.rate)?;
    r.number(base, "bps", 0, u64::MAX >> 8, &mut s.bps)?;
    r.number(base, "window", 1, MAX_WINDOW, &mut s.window)?;
    let mut v4 = s.block_prefix_v4 as u64;
    let mut v6 = s.block_prefix_v6 as u64;
    r.number(base, "block-prefix-v4", 8, 32, &mut v4)?;
    r.number(base, "block-prefix-v6", 16, 128, &mut v6)?;
    (s.block_prefix_v4, s.block_prefix_v6) = (v4 as u8, v6 as u8);
    if let Some(node) = config.node(&format!("{base}.ports")) {
        s.ports = super::ddos::ports(node).ok_or(format!("{base}.ports: expected a list of ports 1-65535"))?;
    }

    let base = "ddos.detectors.icmp-flood";
    let s = &mut out.icmp_flood;
    r.flag(base, "enabled", &mut s.enabled)?;
    r.flag(base, "block", &mut s.block)?;
    r.number(base, "rate", 1, u64::MAX >> 8, &mut s.rate)?;
    r.number(base, "window", 1, MAX_WINDOW, &mut s.window)?;
    // `ddos.detectors.enabled: no` turns every detector off at once (the XDP layer then
    // only blocklists, answers SYN cookies, bypasses and passes through).
    if config.get_bool("ddos.detectors.enabled").map_err(|e| e.message().to_string())? == Some(false) {
        out.syn_flood.enabled = false;
        out.port_scan.enabled = false;
        out.udp_reflection.enabled = false;
        out.icmp_flood.enabled = false;
    }
    Ok(out)
}

/// `ddos.blocklist.static`: prefixes blocked from start to exit. The error names the
/// bad entry.
pub fn static_blocklist(config: &Config) -> Result<Vec<Prefix>, String> {
    Ok(prefixes(config, "ddos.blocklist.static")?.unwrap_or_default())
}

/// A YAML list of prefixes (or one, or a comma-separated string).
fn prefixes(config: &Config, key: &str) -> Result<Option<Vec<Prefix>>, String> {
    let Some(node) = config.node(key) else { return Ok(None) };
    let texts: Vec<String> = match node {
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .map(|v| match v {
                serde_yaml::Value::String(s) => Ok(s.clone()),
                other => Err(format!("{key}: {other:?} is not a prefix string like \"192.0.2.0/24\"")),
            })
            .collect::<Result<_, _>>()?,
        serde_yaml::Value::String(s) => s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect(),
        serde_yaml::Value::Null => Vec::new(),
        _ => return Err(format!("{key}: expected a list of prefixes like [\"192.0.2.0/24\", \"2001:db8::/32\"]")),
    };
    texts.iter().map(|t| Prefix::parse(t).map_err(|e| format!("{key}: {e}"))).collect::<Result<_, _>>().map(Some)
}

struct Reader<'a> {
    config: &'a Config,
}

impl Reader<'_> {
    fn bounded(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
        match self.config.get_u64(key).map_err(|e: ConfigError| e.message().to_string())? {
            None => Ok(None),
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            Some(v) => Err(format!("{key}: {v} is not in {min}-{max}")),
        }
    }

    fn number(&self, base: &str, name: &str, min: u64, max: u64, into: &mut u64) -> Result<(), String> {
        if let Some(v) = self.bounded(&format!("{base}.{name}"), min, max)? {
            *into = v;
        }
        Ok(())
    }

    fn flag(&self, base: &str, name: &str, into: &mut bool) -> Result<(), String> {
        let key = format!("{base}.{name}");
        if let Some(v) = self.config.get_bool(&key).map_err(|e| e.message().to_string())? {
            *into = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<DetectorSettings, String> {
        detector_settings(&Config::from_yaml_str(yaml).unwrap(), 7)
    }

    #[test]
    fn one_switch_turns_every_detector_off() {
        let config =
            Config::from_yaml_str("ddos:\n  detectors:\n    enabled: no\n    port-scan:\n      enabled: yes\n")
                .unwrap();
        let s = detector_settings(&config, 60).unwrap();
        assert!(!s.syn_flood.enabled && !s.port_scan.enabled && !s.udp_reflection.enabled && !s.icmp_flood.enabled);
        let s = detector_settings(&Config::from_yaml_str("other: 1\n").unwrap(), 60).unwrap();
        assert!(s.syn_flood.enabled && s.port_scan.enabled && s.udp_reflection.enabled && s.icmp_flood.enabled);
    }

    #[test]
    fn defaults_without_a_section() {
        let s = parse("other: 1\n").unwrap();
        let mut expected = DetectorSettings::default();
        expected.common.block_time = 7;
        assert_eq!(s, expected);
        assert!(s.any_enabled());
    }

    #[test]
    fn keys_are_read_and_checked() {
        let s = parse(
            "ddos:\n  detectors:\n    max-keys: 50\n    allow: [\"192.0.2.0/24\", \"2001:db8::1\"]\n    \
             syn-flood:\n      rate: 10\n      ratio: 2\n      hold: 4\n    port-scan:\n      ports: 15\n      \
             window: 2\n      block: no\n    udp-reflection:\n      enabled: no\n      ports: [53, \"123\"]\n      \
             block-prefix-v4: 24\n    icmp-flood:\n      rate: 99\n",
        )
        .unwrap();
        assert_eq!(s.common.max_keys, 50);
        assert_eq!(s.allow.len(), 2);
        assert_eq!((s.syn_flood.rate, s.syn_flood.ratio, s.syn_flood.hold), (10, 2, 4));
        assert_eq!((s.port_scan.ports, s.port_scan.window, s.port_scan.block), (15, 2, false));
        assert!(!s.udp_reflection.enabled);
        assert_eq!(s.udp_reflection.ports, vec![53, 123]);
        assert_eq!(s.udp_reflection.block_prefix_v4, 24);
        assert_eq!(s.icmp_flood.rate, 99);
        assert!(parse("ddos:\n  detectors:\n    port-scan:\n      ports: 1\n")
            .unwrap_err()
            .contains("port-scan.ports"));
        assert!(parse("ddos:\n  detectors:\n    allow: [\"10.0.0.0/40\"]\n").unwrap_err().contains("10.0.0.0/40"));
    }

    #[test]
    fn static_entries_name_the_bad_prefix() {
        let c = Config::from_yaml_str("ddos:\n  blocklist:\n    static: [\"198.51.100.0/24\", \"2001:db8::/32\"]\n")
            .unwrap();
        let list = static_blocklist(&c).unwrap();
        assert_eq!(list.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["198.51.100.0/24", "2001:db8::/32"]);
        let bad =
            Config::from_yaml_str("ddos:\n  blocklist:\n    static: [\"198.51.100.0/24\", \"bogus/8\"]\n").unwrap();
        let err = static_blocklist(&bad).unwrap_err();
        assert!(err.contains("ddos.blocklist.static") && err.contains("'bogus/8'"), "{err}");
    }
}
