//! Suricata's `af-xdp:` section (per interface, its `default` entry, or a mapping made by
//! `--set af-xdp.KEY=VALUE`), read into an [`AfXdpConfig`] and the XDP attach mode it
//! forces.
//!
//! ```yaml
//! af-xdp:
//!   - interface: eth0
//!     threads: auto            # auto: one worker per RX queue (capped by --workers)
//!     force-xdp-mode: none     # drv | skb | none: how picket's XDP program attaches
//!     force-bind-mode: none    # zero | copy | none: zero-copy, copy, or zero-copy else copy
//!     disable-busy-poll: yes   # read, not acted on (picket waits in poll())
//!     gro-flush-timeout: 2000000
//!     napi-defer-hard-irq: 2
//!     mem-unaligned: no
//! ```

use super::{parse_bool, AttachPreference, Config};
use crate::capture::afxdp::{AfXdpConfig, BindMode};

/// Keys picket reads but does not act on: a warning names them once.
const IGNORED_KEYS: &[&str] = &["disable-busy-poll", "gro-flush-timeout", "napi-defer-hard-irq", "mem-unaligned"];

/// The interfaces listed in the `af-xdp:` section (for a bare `--af-xdp`), `default`
/// excepted.
pub fn configured_afxdp_interfaces(config: &Config) -> Vec<String> {
    super::afpacket::listed_interfaces(config, "af-xdp")
}

/// What the `af-xdp:` section says for `interface`.
#[derive(Debug)]
pub struct AfXdpSettings {
    pub capture: AfXdpConfig,
    /// `force-xdp-mode`: drv → native, skb → generic; `None` for none/absent.
    pub attach: Option<AttachPreference>,
    /// Settings read but not acted on, one line each.
    pub warnings: Vec<String>,
}

/// The settings of `interface`. Errors are one line naming the key and what it takes.
pub fn afxdp_config(config: &Config, interface: &str) -> Result<AfXdpSettings, String> {
    let mut capture = AfXdpConfig::new(interface);
    let text = |key: &str| {
        super::afpacket::interface_value(config, "af-xdp", interface, key)
            .and_then(super::scalar_text)
            .map(|t| t.trim().to_string())
    };
    if let Some(threads) = text("threads") {
        capture.threads = match threads.as_str() {
            "auto" | "" => None,
            n => match n.parse::<usize>() {
                Ok(n) if (1..=1024).contains(&n) => Some(n),
                _ => return Err(format!("af-xdp.threads of {interface}: '{n}' is not auto or a number 1-1024")),
            },
        };
    }
    if let Some(mode) = text("force-bind-mode") {
        capture.bind = match mode.as_str() {
            "none" | "" => BindMode::Auto,
            "zero" => BindMode::ZeroCopy,
            "copy" => BindMode::Copy,
            other => return Err(format!("af-xdp.force-bind-mode of {interface}: '{other}' is not zero, copy or none")),
        };
    }
    let attach = match text("force-xdp-mode").as_deref() {
        None | Some("none") | Some("") => None,
        Some("drv") => Some(AttachPreference::Native),
        Some("skb") => Some(AttachPreference::Generic),
        Some(other) => {
            return Err(format!("af-xdp.force-xdp-mode of {interface}: '{other}' is not drv, skb or none"));
        }
    };
    let mut warnings = Vec::new();
    for key in IGNORED_KEYS {
        if let Some(v) = text(key) {
            // A busy-poll switch that asks for what picket does anyway is no news.
            if *key == "disable-busy-poll" && parse_bool(&v) == Some(true) {
                continue;
            }
            warnings.push(format!(
                "af-xdp.{key} of {interface} is not acted on: picket waits in poll() without busy polling or \
                 NAPI tuning, with aligned UMEM frames"
            ));
        }
    }
    Ok(AfXdpSettings { capture, attach, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str, interface: &str) -> Result<AfXdpSettings, String> {
        afxdp_config(&Config::from_yaml_str(yaml).unwrap(), interface)
    }

    #[test]
    fn defaults_without_a_section() {
        let s = parse("other: 1\n", "eth0").unwrap();
        assert_eq!((s.capture.threads, s.capture.bind, s.attach), (None, BindMode::Auto, None));
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn entries_default_and_checks() {
        let yaml =
            "af-xdp:\n  - interface: eth0\n    threads: 2\n    force-bind-mode: copy\n    force-xdp-mode: skb\n  \
                    - interface: default\n    force-bind-mode: zero\n    gro-flush-timeout: 2000000\n    \
                    disable-busy-poll: yes\n";
        let config = Config::from_yaml_str(yaml).unwrap();
        assert_eq!(configured_afxdp_interfaces(&config), vec!["eth0".to_string()]);
        let s = afxdp_config(&config, "eth0").unwrap();
        assert_eq!(
            (s.capture.threads, s.capture.bind, s.attach),
            (Some(2), BindMode::Copy, Some(AttachPreference::Generic))
        );
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("gro-flush-timeout"));
        let s = afxdp_config(&config, "eth1").unwrap();
        assert_eq!(s.capture.bind, BindMode::ZeroCopy);
        assert!(parse("af-xdp:\n  - interface: eth0\n    threads: lots\n", "eth0").unwrap_err().contains("threads"));
        assert!(parse("af-xdp:\n  - interface: eth0\n    force-bind-mode: fast\n", "eth0")
            .unwrap_err()
            .contains("force-bind-mode"));
        assert!(parse("af-xdp:\n  - interface: eth0\n    force-xdp-mode: hw\n", "eth0")
            .unwrap_err()
            .contains("force-xdp-mode"));
    }
}
