//! Live capture settings: Suricata's `af-packet:` section (per interface, its `default`
//! entry, `--set af-packet.KEY=VALUE`), picket's `--fanout`/`--no-promisc` flags, and
//! `stats.interval`, read into [`AfPacketConfig`]s and durations.

use super::scalar_text as scalar;
use super::{parse_bool, parse_size, ChecksumMode, Config};
use crate::capture::afpacket::{AfPacketConfig, FanoutMode, TxOptions};
use crate::capture::bridge::CopyMode;
use serde_yaml::Value;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Suricata's default `stats.interval`.
pub const DEFAULT_STATS_INTERVAL: Duration = Duration::from_secs(8);

/// Suricata's `cluster-type` names, and picket's short `--fanout` names.
pub fn parse_fanout(name: &str) -> Result<FanoutMode, String> {
    match name.trim() {
        "cluster_flow" | "hash" | "flow" => Ok(FanoutMode::Hash),
        "cluster_round_robin" | "lb" | "roundrobin" => Ok(FanoutMode::Lb),
        "cluster_cpu" | "cpu" => Ok(FanoutMode::Cpu),
        "cluster_random" | "rnd" | "random" => Ok(FanoutMode::Rnd),
        "cluster_qm" | "qm" => Ok(FanoutMode::Qm),
        "cluster_adaptive" | "adaptive" => Ok(FanoutMode::Adaptive),
        "cluster_ebpf" | "ebpf" => {
            Err("cluster_ebpf needs an eBPF load-balancing program, which picket cannot load yet; \
                 picket's own eBPF program is cluster_adaptive"
                .into())
        }
        other => Err(format!(
            "unknown fanout '{other}' (cluster_flow, cluster_round_robin, cluster_cpu, cluster_random, cluster_qm, \
             cluster_adaptive; or hash, lb, cpu, rnd, qm, adaptive)"
        )),
    }
}

/// Command-line choices that override the YAML for every interface.
#[derive(Clone, Debug, Default)]
pub struct CaptureOverrides {
    pub fanout: Option<FanoutMode>,
    pub promiscuous: Option<bool>,
    /// The command line's BPF filter (or the top-level `bpf-filter`); it replaces the
    /// interfaces' own `bpf-filter` settings, as in Suricata.
    pub bpf_filter: Option<String>,
}

/// The interfaces listed in the YAML `af-packet:` section (Suricata's `--af-packet`
/// without a value), the `default` entry excepted.
pub fn configured_interfaces(config: &Config) -> Vec<String> {
    listed_interfaces(config, "af-packet")
}

/// The interfaces listed in a capture section (`af-packet:`, `af-xdp:`), the `default`
/// entry excepted.
pub(super) fn listed_interfaces(config: &Config, section: &str) -> Vec<String> {
    let Some(Value::Sequence(items)) = config.node(section) else { return Vec::new() };
    items.iter().filter_map(|item| item.get("interface").and_then(scalar)).filter(|name| name != "default").collect()
}

/// A setting of `interface` in the `af-packet:` section (see [`interface_value`]).
fn af_packet_value<'a>(config: &'a Config, interface: &str, key: &str) -> Option<&'a Value> {
    interface_value(config, "af-packet", interface, key)
}

/// A setting of `interface` in a capture section (`af-packet:`, `af-xdp:`): its own list
/// entry, else the `default` entry; or, when the section is a mapping (made by
/// `--set af-packet.x=y` without a YAML list), the mapping's value for every interface.
pub(super) fn interface_value<'a>(config: &'a Config, section: &str, interface: &str, key: &str) -> Option<&'a Value> {
    match config.node(section)? {
        Value::Mapping(map) => map.get(key),
        Value::Sequence(items) => {
            let entry =
                |name: &str| items.iter().find(|item| item.get("interface").and_then(scalar).as_deref() == Some(name));
            entry(interface).and_then(|e| e.get(key)).or_else(|| entry("default").and_then(|e| e.get(key)))
        }
        _ => None,
    }
}

/// Socket settings per interface from the `af-packet:` section and the overrides.
/// Returns the configs and warnings about settings picket does not act on.
///
/// Mapping (Suricata key → [`AfPacketConfig`]): `cluster-id` → `fanout_group` (default
/// 99 + the interface's position, as a group belongs to one interface), `cluster-type` →
/// `fanout_mode`, `defrag`, `rollover`, `disable-promisc` → `!promiscuous`, `block-size`,
/// `block-timeout` → `retire_timeout_ms`, `ring-size` (frames per socket) → `block_count`
/// (enough blocks of `block-size` for that many `frame-size` frames); picket's own
/// `block-count` and `frame-size` set those fields directly.
pub fn capture_configs(
    config: &Config,
    interfaces: &[String],
    overrides: &CaptureOverrides,
    stop: &Arc<AtomicBool>,
) -> Result<(Vec<AfPacketConfig>, Vec<String>), String> {
    let mut configs = Vec::with_capacity(interfaces.len());
    let mut warnings = Vec::new();
    for (position, interface) in interfaces.iter().enumerate() {
        let get = |key: &str| af_packet_value(config, interface, key);
        let text = |key: &str| get(key).and_then(scalar);
        let bad = |key: &str, value: &str, expected: &str| {
            format!("af-packet.{key} ({interface}): invalid value '{value}' (expected {expected})")
        };
        let boolean = |key: &str| -> Result<Option<bool>, String> {
            match text(key) {
                None => Ok(None),
                Some(t) => parse_bool(&t).map(Some).ok_or_else(|| bad(key, &t, "yes or no")),
            }
        };
        let number = |key: &str, max: u64| -> Result<Option<u64>, String> {
            match text(key) {
                None => Ok(None),
                Some(t) => match t.trim().parse::<u64>() {
                    Ok(v) if v <= max => Ok(Some(v)),
                    _ => Err(bad(key, &t, &format!("an integer up to {max}"))),
                },
            }
        };
        let size = |key: &str| -> Result<Option<u64>, String> {
            match text(key) {
                None => Ok(None),
                Some(t) => match parse_size(&t) {
                    Some(v) if v <= u32::MAX as u64 => Ok(Some(v)),
                    _ => Err(bad(key, &t, "a size such as 1mb")),
                },
            }
        };

        let mut cfg = AfPacketConfig { stop: Arc::clone(stop), ..AfPacketConfig::for_interface(interface) };
        cfg.fanout_group = match number("cluster-id", u16::MAX as u64)? {
            Some(id) => id as u16,
            None => 99u16.wrapping_add(position as u16),
        };
        if let Some(t) = text("cluster-type") {
            cfg.fanout_mode = parse_fanout(&t).map_err(|e| format!("af-packet.cluster-type ({interface}): {e}"))?;
        }
        if let Some(mode) = overrides.fanout {
            cfg.fanout_mode = mode;
        }
        if let Some(v) = boolean("defrag")? {
            cfg.defrag = v;
        }
        if let Some(v) = boolean("rollover")? {
            cfg.rollover = v;
        }
        if let Some(v) = boolean("disable-promisc")? {
            cfg.promiscuous = !v;
        }
        if let Some(v) = overrides.promiscuous {
            cfg.promiscuous = v;
        }
        if let Some(v) = size("block-size")? {
            cfg.block_size = v as u32;
        }
        if let Some(v) = size("frame-size")? {
            cfg.frame_size = v as u32;
        }
        if let Some(v) = number("block-timeout", u32::MAX as u64)? {
            cfg.retire_timeout_ms = v as u32;
        }
        if let Some(frames) = number("ring-size", 1 << 24)? {
            let bytes = frames * cfg.frame_size as u64;
            cfg.block_count = bytes.div_ceil(cfg.block_size.max(1) as u64).clamp(2, u32::MAX as u64) as u32;
        }
        if let Some(v) = number("block-count", u32::MAX as u64)? {
            cfg.block_count = v as u32;
        }
        cfg.bpf_filter = overrides
            .bpf_filter
            .clone()
            .or_else(|| text("bpf-filter"))
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty());
        for unsupported in ["ebpf-lb-file", "ebpf-filter-file", "xdp-filter-file"] {
            if get(unsupported).is_some() {
                warnings.push(format!("af-packet.{unsupported} ({interface}) is not supported yet and is ignored"));
            }
        }
        cfg.validate().map_err(|e| format!("{e} (interface {interface})"))?;
        configs.push(cfg);
    }
    Ok((configs, warnings))
}

/// Block timeout of a bridge's receive rings when the YAML gives no `block-timeout`: a
/// ring block reaches picket when full or this long after its first packet, so at low
/// rates it bounds the delay the bridge adds.
pub const BRIDGE_BLOCK_TIMEOUT_MS: u32 = 1;

/// [`capture_configs`] for the interfaces of bridges: the same settings, with the
/// bridge's own defaults: TPACKET_V2 rings unless `tpacket-v3: yes`, and for V3 a block
/// timeout of [`BRIDGE_BLOCK_TIMEOUT_MS`] unless `block-timeout` is set.
pub fn bridge_capture_configs(
    config: &Config,
    interfaces: &[String],
    overrides: &CaptureOverrides,
    stop: &Arc<AtomicBool>,
) -> Result<(Vec<AfPacketConfig>, Vec<String>), String> {
    let (mut configs, warnings) = capture_configs(config, interfaces, overrides, stop)?;
    for cfg in &mut configs {
        let interface = cfg.interface.clone();
        let get = |key: &str| af_packet_value(config, &interface, key).and_then(scalar);
        // TPACKET_V2 hands each packet over at once, as Suricata's IPS mode does; V3
        // (`tpacket-v3: yes`) only a block at a time.
        cfg.tpacket_v3 = match get("tpacket-v3") {
            None => false,
            Some(t) => parse_bool(&t).ok_or_else(|| {
                format!("af-packet.tpacket-v3 ({interface}): invalid value '{t}' (expected yes or no)")
            })?,
        };
        if get("block-timeout").is_none() {
            cfg.retire_timeout_ms = BRIDGE_BLOCK_TIMEOUT_MS;
        }
    }
    for (i, a) in configs.iter().enumerate() {
        if let Some(b) = configs[..i].iter().find(|b| b.fanout_group == a.fanout_group) {
            return Err(format!(
                "af-packet.cluster-id: {} and {} both use fanout group {}; a group belongs to one interface, \
                 give each its own cluster-id",
                b.interface, a.interface, a.fanout_group
            ));
        }
    }
    Ok((configs, warnings))
}

/// An interface's `copy-mode` (Suricata's: `ips`, `tap`; `none` or absent: passive).
pub fn copy_mode(config: &Config, interface: &str) -> Result<Option<CopyMode>, String> {
    match af_packet_value(config, interface, "copy-mode").and_then(scalar).as_deref().map(str::trim) {
        None | Some("none") | Some("") => Ok(None),
        Some("ips") => Ok(Some(CopyMode::Ips)),
        Some("tap") => Ok(Some(CopyMode::Tap)),
        Some(other) => {
            Err(format!("af-packet.copy-mode ({interface}): invalid value '{other}' (expected ips, tap or none)"))
        }
    }
}

/// An interface's `copy-iface`: the interface its packets are forwarded to.
pub fn copy_iface(config: &Config, interface: &str) -> Option<String> {
    // Only the interface's own entry: a `default` copy-iface would pair every interface
    // with the same one.
    let Some(Value::Sequence(items)) = config.node("af-packet") else { return None };
    let entry = items.iter().find(|item| item.get("interface").and_then(scalar).as_deref() == Some(interface))?;
    entry.get("copy-iface").and_then(scalar).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// A yes/no setting of an interface's `af-packet:` entry, `false` when absent.
fn flag(config: &Config, interface: &str, key: &str) -> Result<bool, String> {
    match af_packet_value(config, interface, key).and_then(scalar) {
        None => Ok(false),
        Some(t) => parse_bool(&t)
            .ok_or_else(|| format!("af-packet.{key} ({interface}): invalid value '{t}' (expected yes or no)")),
    }
}

/// How a bridge of `a` and `b` sends: picket's `qdisc-bypass` (PACKET_QDISC_BYPASS) and
/// `tx-ring` (a TPACKET_V2 transmit ring instead of `sendmmsg`), default no; either
/// interface's entry turns them on for the pair.
pub fn bridge_tx_options(config: &Config, a: &str, b: &str) -> Result<TxOptions, String> {
    Ok(TxOptions {
        qdisc_bypass: flag(config, a, "qdisc-bypass")? || flag(config, b, "qdisc-bypass")?,
        ring: flag(config, a, "tx-ring")? || flag(config, b, "tx-ring")?,
    })
}

/// Two interfaces bridged with each other, and the copy mode.
pub type BridgePair = (String, String, CopyMode);

/// The bridges Suricata's IPS form of the `af-packet:` section asks for, among the
/// `interfaces` chosen for a live run: entries with `copy-mode: ips` (or `tap`) and a
/// `copy-iface` naming the other interface, which names this one back. `None` when no
/// chosen interface has a copy mode (a passive capture). The peer of a chosen interface
/// joins the run even if it was not named. Each pair once, in the order met.
pub fn configured_bridges(config: &Config, interfaces: &[String]) -> Result<Option<Vec<BridgePair>>, String> {
    let mut modes = Vec::with_capacity(interfaces.len());
    for name in interfaces {
        modes.push((name, copy_mode(config, name)?));
    }
    let Some((first, mode)) = modes.iter().find_map(|(n, m)| m.map(|m| (*n, m))) else { return Ok(None) };
    if let Some((passive, _)) = modes.iter().find(|(_, m)| m.is_none()) {
        return Err(format!(
            "af-packet: {first} has copy-mode {} but {passive} has none; picket runs either every interface \
             inline (copy-mode ips or tap, in pairs) or every one passively",
            mode.name()
        ));
    }
    let mut pairs: Vec<BridgePair> = Vec::new();
    for (name, mode) in &modes {
        let Some(mode) = *mode else { continue };
        let name = name.as_str();
        if pairs.iter().any(|(a, b, _)| a == name || b == name) {
            continue;
        }
        let Some(peer) = copy_iface(config, name) else {
            return Err(format!(
                "af-packet.copy-iface ({name}): missing; copy-mode {} needs the interface to forward to",
                mode.name()
            ));
        };
        if peer == name {
            return Err(format!("af-packet.copy-iface ({name}): an interface cannot be bridged with itself"));
        }
        match copy_iface(config, &peer) {
            Some(back) if back == name => {}
            Some(back) => {
                return Err(format!(
                    "af-packet.copy-iface ({peer}): is {back}, but {name} forwards to {peer}; each of the two \
                     interfaces must name the other"
                ))
            }
            None => {
                return Err(format!(
                    "af-packet.copy-iface ({peer}): missing, but {name} forwards to {peer}; add an entry for {peer} \
                     with copy-mode {} and copy-iface {name}",
                    mode.name()
                ))
            }
        }
        if copy_mode(config, &peer)? != Some(mode) {
            return Err(format!(
                "af-packet.copy-mode ({peer}): must be {} like {name}'s, its bridge partner",
                mode.name()
            ));
        }
        if pairs.iter().any(|(a, b, _)| *a == peer || *b == peer) {
            return Err(format!("af-packet.copy-iface ({name}): {peer} is already in another bridge"));
        }
        pairs.push((name.to_string(), peer, mode));
    }
    Ok(Some(pairs))
}

/// `stats.interval` in seconds (Suricata's default 8); 0 turns periodic stats off.
pub fn stats_interval(config: &Config) -> Result<Option<Duration>, String> {
    match config.get_u64("stats.interval").map_err(|e| e.message().to_string())? {
        None => Ok(Some(DEFAULT_STATS_INTERVAL)),
        Some(0) => Ok(None),
        Some(secs) => Ok(Some(Duration::from_secs(secs.min(86_400)))),
    }
}

/// Suricata's `af-packet.checksum-checks` (default `kernel`). Packets this host sends
/// itself, or that reach a veth from a local sender, carry checksums the NIC or the
/// kernel has not filled in yet; the kernel already verified what it received. picket does
/// not read the per-packet "checksum not ready" flag yet, so `kernel` means: no checksum
/// validation in the engine. `yes` validates everything, `auto` samples as with `-k auto`.
pub fn live_checksum_mode(config: &Config, interfaces: &[String]) -> Result<ChecksumMode, String> {
    let key = match config.node("af-packet") {
        Some(Value::Sequence(items)) => interfaces
            .first()
            .and_then(|first| {
                let position =
                    |name: &str| items.iter().position(|i| i.get("interface").and_then(|v| v.as_str()) == Some(name));
                position(first).or_else(|| position("default"))
            })
            .map(|i| format!("af-packet.{i}.checksum-checks")),
        _ => Some("af-packet.checksum-checks".to_string()),
    };
    let value = key.as_deref().and_then(|k| config.get_str(k));
    match value.as_deref().map(str::trim) {
        None | Some("kernel") => Ok(ChecksumMode::Never),
        Some("auto") => Ok(ChecksumMode::Auto),
        Some(v) => match parse_bool(v) {
            Some(true) => Ok(ChecksumMode::Always),
            Some(false) => Ok(ChecksumMode::Never),
            None => Err(format!("af-packet.checksum-checks: '{v}' is not kernel, yes, no or auto")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop() -> Arc<AtomicBool> {
        Arc::new(AtomicBool::new(false))
    }

    #[test]
    fn set_keys_map_to_socket_settings() {
        let sets: Vec<String> = [
            "af-packet.cluster-type=cluster_round_robin",
            "af-packet.cluster-id=42",
            "af-packet.block-size=64kb",
            "af-packet.ring-size=1000",
            "af-packet.block-timeout=25",
            "af-packet.disable-promisc=yes",
            "af-packet.defrag=no",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (config, warnings) = Config::load(None, &sets).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let (cfgs, _) =
            capture_configs(&config, &["eth0".into(), "eth1".into()], &Default::default(), &stop()).unwrap();
        let c = &cfgs[0];
        assert_eq!(c.fanout_mode, FanoutMode::Lb);
        assert_eq!(c.fanout_group, 42);
        assert_eq!(c.block_size, 64 << 10);
        // 1000 frames of 2048 bytes in 64 KiB blocks: 31.25, rounded up.
        assert_eq!(c.block_count, 32);
        assert_eq!(c.retire_timeout_ms, 25);
        assert!(!c.promiscuous);
        assert!(!c.defrag);
        assert_eq!(cfgs[1].interface, "eth1");
    }

    #[test]
    fn yaml_list_entries_and_default_and_overrides() {
        let config = Config::from_yaml_str(
            "af-packet:\n  - interface: eth0\n    cluster-type: cluster_cpu\n    cluster-id: 7\n  - interface: eth1\n  - interface: default\n    block-size: 131072\n    copy-mode: ips\n",
        )
        .unwrap();
        assert_eq!(configured_interfaces(&config), vec!["eth0".to_string(), "eth1".to_string()]);
        let ifaces = configured_interfaces(&config);
        let (cfgs, warnings) = capture_configs(&config, &ifaces, &Default::default(), &stop()).unwrap();
        assert_eq!((cfgs[0].fanout_mode, cfgs[0].fanout_group), (FanoutMode::Cpu, 7));
        // eth1 has no cluster-id: a group of its own, not eth0's.
        assert_eq!((cfgs[1].fanout_mode, cfgs[1].fanout_group), (FanoutMode::Hash, 100));
        assert_eq!(cfgs[1].block_size, 131072);
        assert!(warnings.is_empty(), "copy-mode is understood: {warnings:?}");
        assert!(cfgs.iter().all(|c| c.promiscuous));

        let forced = CaptureOverrides { fanout: Some(FanoutMode::Qm), promiscuous: Some(false), ..Default::default() };
        let (cfgs, _) = capture_configs(&config, &ifaces, &forced, &stop()).unwrap();
        assert!(cfgs.iter().all(|c| c.fanout_mode == FanoutMode::Qm && !c.promiscuous));
    }

    #[test]
    fn bpf_filter_per_interface_and_from_the_command_line() {
        let config = Config::from_yaml_str(
            "af-packet:\n  - interface: eth0\n    bpf-filter: tcp port 22\n  - interface: eth1\n    bpf-filter: \"\"\n  - interface: default\n    bpf-filter: udp\n",
        )
        .unwrap();
        let ifaces: Vec<String> = ["eth0", "eth1", "eth2"].iter().map(|s| s.to_string()).collect();
        let (cfgs, warnings) = capture_configs(&config, &ifaces, &Default::default(), &stop()).unwrap();
        assert!(warnings.is_empty(), "bpf-filter is applied, not warned about: {warnings:?}");
        let filters: Vec<_> = cfgs.iter().map(|c| c.bpf_filter.as_deref()).collect();
        // An empty filter is no filter (eth1 keeps its own, empty, setting).
        assert_eq!(filters, vec![Some("tcp port 22"), None, Some("udp")]);
        let overrides = CaptureOverrides { bpf_filter: Some("icmp".into()), ..Default::default() };
        let (cfgs, _) = capture_configs(&config, &ifaces, &overrides, &stop()).unwrap();
        assert!(cfgs.iter().all(|c| c.bpf_filter.as_deref() == Some("icmp")), "the command line wins");
    }

    #[test]
    fn bad_settings_are_one_line_errors() {
        for (set, needle) in [
            ("af-packet.cluster-type=cluster_magic", "unknown fanout"),
            ("af-packet.cluster-type=cluster_ebpf", "eBPF"),
            ("af-packet.cluster-id=70000", "cluster-id"),
            ("af-packet.block-size=1000", "page size"),
            ("af-packet.defrag=maybe", "yes or no"),
        ] {
            let (config, _) = Config::load(None, &[set.to_string()]).unwrap();
            let err = capture_configs(&config, &["eth0".into()], &Default::default(), &stop()).unwrap_err();
            assert!(err.contains(needle) && !err.contains('\n'), "{set}: {err}");
        }
    }

    fn bridges_of(yaml: &str, interfaces: &[&str]) -> Result<Option<Vec<BridgePair>>, String> {
        let config = Config::from_yaml_str(yaml).unwrap();
        let interfaces: Vec<String> = interfaces.iter().map(|s| s.to_string()).collect();
        configured_bridges(&config, &interfaces)
    }

    #[test]
    fn copy_mode_ips_pairs_interfaces_that_name_each_other() {
        let yaml = "af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth1\n  - interface: eth1\n    copy-mode: ips\n    copy-iface: eth0\n";
        let pair = vec![("eth0".to_string(), "eth1".to_string(), CopyMode::Ips)];
        assert_eq!(bridges_of(yaml, &["eth0", "eth1"]).unwrap(), Some(pair.clone()));
        // The partner joins even when only one side was named.
        assert_eq!(bridges_of(yaml, &["eth0"]).unwrap(), Some(pair));
        let tap = yaml.replace("ips", "tap");
        assert_eq!(bridges_of(&tap, &["eth1"]).unwrap().unwrap()[0].2, CopyMode::Tap);
        assert_eq!(bridges_of("af-packet:\n  - interface: eth0\n", &["eth0"]).unwrap(), None);
    }

    #[test]
    fn copy_mode_mistakes_are_one_line_errors() {
        for (yaml, names, needle) in [
            ("af-packet:\n  - interface: eth0\n    copy-mode: ips\n", &["eth0"][..], "copy-iface (eth0): missing"),
            ("af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth0\n", &["eth0"], "itself"),
            (
                "af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth1\n  - interface: eth1\n    copy-mode: ips\n    copy-iface: eth2\n",
                &["eth0"],
                "must name the other",
            ),
            (
                "af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth1\n",
                &["eth0"],
                "copy-iface (eth1): missing",
            ),
            (
                "af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth1\n  - interface: eth1\n    copy-mode: tap\n    copy-iface: eth0\n",
                &["eth0"],
                "must be ips",
            ),
            ("af-packet:\n  - interface: eth0\n    copy-mode: ips\n    copy-iface: eth1\n  - interface: eth1\n    copy-mode: ips\n    copy-iface: eth0\n  - interface: eth2\n", &["eth0", "eth1", "eth2"], "eth2 has none"),
            ("af-packet:\n  - interface: eth0\n    copy-mode: mirror\n", &["eth0"], "expected ips, tap or none"),
        ] {
            let err = bridges_of(yaml, names).unwrap_err();
            assert!(err.contains(needle) && !err.contains('\n'), "{needle}: {err}");
        }
    }

    #[test]
    fn bridge_configs_default_to_v2_rings_and_separate_groups() {
        let config = Config::from_yaml_str(
            "af-packet:\n  - interface: eth0\n    tpacket-v3: yes\n  - interface: eth1\n    qdisc-bypass: yes\n",
        )
        .unwrap();
        let names = vec!["eth0".to_string(), "eth1".to_string()];
        let (cfgs, _) = bridge_capture_configs(&config, &names, &Default::default(), &stop()).unwrap();
        assert!(cfgs[0].tpacket_v3 && !cfgs[1].tpacket_v3);
        assert_eq!(cfgs[0].retire_timeout_ms, BRIDGE_BLOCK_TIMEOUT_MS);
        let tx = bridge_tx_options(&config, "eth0", "eth1").unwrap();
        assert!(tx.qdisc_bypass && !tx.ring);
        let same = Config::from_yaml_str(
            "af-packet:\n  - interface: eth0\n    cluster-id: 5\n  - interface: eth1\n    cluster-id: 5\n",
        )
        .unwrap();
        let err = bridge_capture_configs(&same, &names, &Default::default(), &stop()).unwrap_err();
        assert!(err.contains("both use fanout group 5"), "{err}");
    }

    #[test]
    fn fanout_names() {
        assert_eq!(parse_fanout("cluster_flow").unwrap(), FanoutMode::Hash);
        assert_eq!(parse_fanout("hash").unwrap(), FanoutMode::Hash);
        assert_eq!(parse_fanout("cluster_random").unwrap(), FanoutMode::Rnd);
        assert_eq!(parse_fanout("rnd").unwrap(), FanoutMode::Rnd);
        assert_eq!(parse_fanout("cluster_adaptive").unwrap(), FanoutMode::Adaptive);
        assert_eq!(parse_fanout("adaptive").unwrap(), FanoutMode::Adaptive);
        assert!(parse_fanout("bogus").is_err());
    }

    #[test]
    fn stats_interval_default_off_and_value() {
        let interval = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            stats_interval(&Config::load(None, &sets).unwrap().0).unwrap()
        };
        assert_eq!(interval(&[]), Some(Duration::from_secs(8)));
        assert_eq!(interval(&["stats.interval=0"]), None);
        assert_eq!(interval(&["stats.interval=2"]), Some(Duration::from_secs(2)));
    }
}
