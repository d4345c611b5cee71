//! The `ddos:` section (and `--set ddos.KEY=VALUE`): picket's kernel fast path, read into
//! a [`DdosConfig`]. Suricata has no such section; the keys follow its style.
//!
//! ```yaml
//! ddos:
//!   enabled: no              # or --ddos on the command line
//!   attach-mode: auto        # auto (native, else generic) | native | generic
//!   blocklist:
//!     max-entries: 65536     # per address family; refused inserts are counted
//!     block-time: 60         # seconds a detector's block lasts
//!   syn-cookies:
//!     ports: []              # always protected, on every local address (e.g. [80, 443])
//!     mss: 1460
//!     synproxy: yes          # install the iptables SYNPROXY rules and sysctls the cookies need
//!   bypass:
//!     action: pass           # pass (to the kernel stack) | drop (a tap: nobody needs them)
//!     max-entries: 65536     # flow directions per address family
//!   pass-through: auto       # auto: pass what no rule or detector can match | no
//!   detectors: ...           # see src/config/detectors.rs
//! ```

use super::Config;

/// `ddos.attach-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AttachPreference {
    /// Native where the driver supports it, else generic.
    #[default]
    Auto,
    Native,
    Generic,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DdosConfig {
    pub enabled: bool,
    pub attach: AttachPreference,
    pub blocklist_entries: u32,
    /// Seconds a detector's block lasts.
    pub block_time: u64,
    /// Ports always protected by SYN cookies.
    pub cookie_ports: Vec<u16>,
    pub cookie_mss: u16,
    /// Install (and remove on exit) the iptables SYNPROXY rules and sysctls.
    pub synproxy: bool,
    /// Bypassed flows are dropped in XDP rather than passed to the kernel stack.
    pub bypass_drop: bool,
    pub bypass_entries: u32,
    pub pass_through: bool,
}

impl Default for DdosConfig {
    fn default() -> Self {
        DdosConfig {
            enabled: false,
            attach: AttachPreference::Auto,
            blocklist_entries: 65536,
            block_time: 60,
            cookie_ports: Vec::new(),
            cookie_mss: 1460,
            synproxy: true,
            bypass_drop: false,
            bypass_entries: 65536,
            pass_through: true,
        }
    }
}

/// The `ddos:` section. Errors are one line naming the key and what it takes.
pub fn ddos_config(config: &Config) -> Result<DdosConfig, String> {
    let mut out = DdosConfig::default();
    let err = |e: super::ConfigError| e.message().to_string();
    if let Some(v) = config.get_bool("ddos.enabled").map_err(err)? {
        out.enabled = v;
    }
    if let Some(mode) = config.get_str("ddos.attach-mode") {
        out.attach = match mode.trim() {
            "auto" => AttachPreference::Auto,
            "native" | "driver" => AttachPreference::Native,
            "generic" | "skb" => AttachPreference::Generic,
            other => return Err(format!("ddos.attach-mode: '{other}' is not auto, native or generic")),
        };
    }
    let bounded = |key: &str, min: u64, max: u64| -> Result<Option<u64>, String> {
        match config.get_u64(key).map_err(err)? {
            None => Ok(None),
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            Some(v) => Err(format!("{key}: {v} is not in {min}-{max}")),
        }
    };
    if let Some(v) = bounded("ddos.blocklist.max-entries", 1, 1 << 24)? {
        out.blocklist_entries = v as u32;
    }
    if let Some(v) = bounded("ddos.blocklist.block-time", 1, 7 * 86400)? {
        out.block_time = v;
    }
    if let Some(node) = config.node("ddos.syn-cookies.ports") {
        out.cookie_ports = ports(node).ok_or("ddos.syn-cookies.ports: expected a list of ports 1-65535")?;
    }
    if let Some(v) = bounded("ddos.syn-cookies.mss", 536, 9000)? {
        out.cookie_mss = v as u16;
    }
    if let Some(v) = config.get_bool("ddos.syn-cookies.synproxy").map_err(err)? {
        out.synproxy = v;
    }
    if let Some(action) = config.get_str("ddos.bypass.action") {
        out.bypass_drop = match action.trim() {
            "pass" => false,
            "drop" => true,
            other => return Err(format!("ddos.bypass.action: '{other}' is not pass or drop")),
        };
    }
    if let Some(v) = bounded("ddos.bypass.max-entries", 2, 1 << 24)? {
        out.bypass_entries = v as u32;
    }
    if let Some(v) = config.get_str("ddos.pass-through") {
        out.pass_through = match v.trim() {
            "auto" | "yes" | "true" | "on" => true,
            "no" | "false" | "off" => false,
            other => return Err(format!("ddos.pass-through: '{other}' is not auto or no")),
        };
    }
    Ok(out)
}

/// A YAML list of ports (numbers, or strings of numbers), a comma-separated string, or a
/// single port; `None` when any is not a port 1-65535.
pub(super) fn ports(node: &serde_yaml::Value) -> Option<Vec<u16>> {
    let one = |v: &serde_yaml::Value| -> Option<u16> {
        let n = match v {
            serde_yaml::Value::Number(n) => n.as_u64()?,
            serde_yaml::Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        (1..=65535).contains(&n).then_some(n as u16)
    };
    match node {
        serde_yaml::Value::Sequence(items) => items.iter().map(one).collect(),
        serde_yaml::Value::String(s) => s.split(',').map(|p| p.trim().parse().ok().filter(|p| *p > 0)).collect(),
        other => one(other).map(|p| vec![p]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<DdosConfig, String> {
        ddos_config(&Config::from_yaml_str(yaml).unwrap())
    }

    #[test]
    fn defaults_without_a_section() {
        assert_eq!(parse("other: 1\n").unwrap(), DdosConfig::default());
    }

    #[test]
    fn keys_are_read_and_checked() {
        let c = parse(
            "ddos:\n  enabled: yes\n  attach-mode: generic\n  blocklist:\n    max-entries: 100\n    block-time: 5\n  \
             syn-cookies:\n    ports: [80, \"443\"]\n    mss: 1400\n    synproxy: no\n  bypass:\n    action: drop\n  \
             pass-through: no\n",
        )
        .unwrap();
        assert!(c.enabled && c.bypass_drop && !c.synproxy && !c.pass_through);
        assert_eq!(c.attach, AttachPreference::Generic);
        assert_eq!((c.blocklist_entries, c.block_time, c.cookie_mss), (100, 5, 1400));
        assert_eq!(c.cookie_ports, vec![80, 443]);
        assert!(parse("ddos:\n  syn-cookies:\n    ports: [0]\n").unwrap_err().contains("ports"));
        assert!(parse("ddos:\n  attach-mode: hw\n").unwrap_err().contains("attach-mode"));
        assert!(parse("ddos:\n  blocklist:\n    block-time: 0\n").unwrap_err().contains("block-time"));
    }
}
