//! Pass-through and flow bypass set-up of a `--ddos` run.
//!
//! **Pass-through** (`ddos.pass-through: auto`, the default): traffic that no loaded rule
//! and no detector can ever match is passed to the kernel by the XDP program and hidden
//! from the capture sockets, so picket never sees it. What the rules can match comes from
//! their headers (`DetectEngine::traffic_interest`: protocols, port sets with variables and
//! negations resolved; IP-only and app-layer rules make their protocols fully
//! interesting); the detectors add what they watch ([`DetectorNeeds`]). The result goes into
//! `picket_ports` (one slot per TCP and UDP port) and the `CFG_PASSTHROUGH` /
//! `CFG_INSPECT_*` flags of `picket_config`, ports first so that no packet is ever judged
//! against a half-written table.
//!
//! **Flow bypass**: the inspector's bypassed flows go into the XDP flow tables
//! (`crate::xdp::bypass`); [`configure`] tells the inspector that the capture can take them.

use crate::config::DdosConfig;
use crate::inspect::InspectSettings;
use crate::xdp::bypass::BypassMaps;
use crate::xdp::maps::{XdpConfig, CFG_INSPECT_ICMP, CFG_INSPECT_OTHER, CFG_INSPECT_TCP_CTRL, CFG_PASSTHROUGH};
use crate::xdp::{XdpError, XdpLayer};
use aya::maps::{Array, MapData};
use picket_core::detect::engine::interest::{TrafficInterest, PORTS};

use super::DdosLayer;

/// UDP source ports of reflection/amplification floods (chargen, DNS, portmap, NTP,
/// NetBIOS, SNMP, CLDAP, SSDP, WS-Discovery, memcached): the detectors watch responses from
/// them, so they stay interesting whatever the rules say.
pub const AMPLIFICATION_PORTS: [u16; 10] = [19, 53, 111, 123, 137, 161, 389, 1900, 3702, 11211];

/// `picket_ports` slots: TCP ports first, then UDP (bpf/common.h PORT_SLOTS).
const UDP_BASE: u32 = PORTS as u32;

/// What the detectors need to see besides what the rules match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectorNeeds {
    /// TCP SYN and RST to any port (SYN flood, port scan): `CFG_INSPECT_TCP_CTRL`.
    pub tcp_control: bool,
    /// ICMP floods.
    pub icmp: bool,
    /// UDP ports (either side) of the amplification detector.
    pub udp_ports: Vec<u16>,
}

impl DetectorNeeds {
    /// Nothing: no detector runs.
    pub fn none() -> Self {
        DetectorNeeds::default()
    }

    /// What the built-in detectors watch (SYN flood, port scan, ICMP flood, amplification).
    pub fn builtin() -> Self {
        DetectorNeeds { tcp_control: true, icmp: true, udp_ports: AMPLIFICATION_PORTS.to_vec() }
    }

    /// What the enabled detectors of a run watch (`ddos.detectors.<name>.enabled`).
    pub fn of(settings: &picket_core::detectors::DetectorSettings) -> Self {
        let mut udp_ports = Vec::new();
        if settings.udp_reflection.enabled {
            udp_ports = settings.udp_reflection.ports.clone();
        }
        DetectorNeeds {
            tcp_control: settings.syn_flood.enabled || settings.port_scan.enabled,
            icmp: settings.icmp_flood.enabled,
            udp_ports,
        }
    }
}

/// The rules' interest plus the detectors' needs, and the `picket_config` flags for it.
pub fn derive(
    rules: Option<&picket_core::detect::engine::DetectEngine>,
    needs: &DetectorNeeds,
) -> (TrafficInterest, u32) {
    // Without rules nothing matches: only the detectors' traffic is interesting.
    let mut interest = rules.map(|e| e.traffic_interest()).unwrap_or_default();
    interest.icmp |= needs.icmp;
    for &p in &needs.udp_ports {
        interest.udp.add_port(p);
    }
    let mut flags = CFG_PASSTHROUGH;
    if interest.icmp {
        flags |= CFG_INSPECT_ICMP;
    }
    if interest.other {
        flags |= CFG_INSPECT_OTHER;
    }
    if needs.tcp_control {
        flags |= CFG_INSPECT_TCP_CTRL;
    }
    (interest, flags)
}

/// "TCP: 65533 of 65536 ports pass through; UDP: all inspected; ICMP inspected; other
/// protocols pass through" for the start-up line.
pub fn describe(interest: &TrafficInterest) -> String {
    let ports = |name: &str, p: &picket_core::detect::engine::interest::PortInterest| {
        if p.all {
            format!("{name}: all ports inspected")
        } else {
            format!("{name}: {} of {PORTS} ports pass through", p.uninteresting())
        }
    };
    format!(
        "{}; {}; ICMP {}; other protocols {}",
        ports("TCP", &interest.tcp),
        ports("UDP", &interest.udp),
        if interest.icmp { "inspected" } else { "passes through" },
        if interest.other { "inspected" } else { "pass through" }
    )
}

/// Writes `picket_ports`, then adds `flags` to `picket_config`.
pub fn apply(xdp: &mut XdpLayer, interest: &TrafficInterest, flags: u32) -> Result<(), XdpError> {
    {
        let map = xdp.ebpf_mut().map_mut("picket_ports").ok_or_else(|| missing("picket_ports"))?;
        let mut ports: Array<&mut MapData, u8> =
            Array::try_from(map).map_err(|e| XdpError(format!("picket_ports: {e}")))?;
        for (base, set) in [(0u32, &interest.tcp), (UDP_BASE, &interest.udp)] {
            for port in 0..PORTS as u32 {
                let value = u8::from(set.contains(port as u16));
                // The array starts zeroed: only interesting ports need a write.
                if value != 0 {
                    ports
                        .set(base + port, value, 0)
                        .map_err(|e| XdpError(format!("picket_ports[{}]: {e}", base + port)))?;
                }
            }
        }
    }
    let map = xdp.ebpf_mut().map_mut("picket_config").ok_or_else(|| missing("picket_config"))?;
    let mut config: Array<&mut MapData, XdpConfig> =
        Array::try_from(map).map_err(|e| XdpError(format!("picket_config: {e}")))?;
    let mut value = config.get(&0, 0).map_err(|e| XdpError(format!("picket_config: {e}")))?;
    value.flags |= flags;
    config.set(0, value, 0).map_err(|e| XdpError(format!("picket_config: {e}")))
}

fn missing(name: &str) -> XdpError {
    XdpError(format!("the XDP object has no map {name} (stale build?)"))
}

/// Sets up pass-through (per `ddos.pass-through`) and flow bypass for a started layer;
/// marks `inspect` so its bypasses go to the capture. Returns the flow tables the
/// workers open. Errors are one line naming the map and the cause.
pub fn configure(
    layer: &mut DdosLayer,
    ddos: &DdosConfig,
    needs: &DetectorNeeds,
    inspect: &mut InspectSettings,
) -> Result<Option<BypassMaps>, String> {
    if ddos.pass_through {
        let (interest, flags) = derive(inspect.detect.as_deref(), needs);
        apply(layer.xdp_mut(), &interest, flags).map_err(|e| format!("ddos.pass-through: {e}"))?;
        eprintln!("picket: pass-through: {}", describe(&interest));
    }
    let maps = BypassMaps::of(layer.xdp_mut()).map_err(|e| e.to_string())?;
    inspect.bypass.capture = true;
    Ok(Some(maps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use picket_core::detect::rule::RuleVars;

    fn engine(rules: &str) -> picket_core::detect::engine::DetectEngine {
        let load = picket_core::detect::rule::load_rules_str("t.rules", rules, &RuleVars::default());
        assert!(load.errors.is_empty(), "{:?}", load.errors);
        picket_core::detect::engine::DetectEngine::build(load.rules, &Default::default()).unwrap().0
    }

    #[test]
    fn rules_and_detectors_make_the_port_table_and_flags() {
        let e = engine("alert tcp any any -> any 8080 (msg:\"x\"; sid:1;)\n");
        let (i, flags) = derive(Some(&e), &DetectorNeeds::none());
        assert_eq!(flags, CFG_PASSTHROUGH);
        assert!(i.tcp.contains(8080) && !i.tcp.contains(8081) && !i.udp.contains(53));
        assert_eq!(describe(&i), "TCP: 65535 of 65536 ports pass through; UDP: 65536 of 65536 ports pass through; ICMP passes through; other protocols pass through");

        let (i, flags) = derive(Some(&e), &DetectorNeeds::builtin());
        assert_eq!(flags, CFG_PASSTHROUGH | CFG_INSPECT_ICMP | CFG_INSPECT_TCP_CTRL);
        assert!(i.udp.contains(53) && i.udp.contains(11211) && !i.udp.contains(54));

        let (i, flags) = derive(None, &DetectorNeeds::none());
        assert_eq!((i.tcp.uninteresting(), flags), (PORTS, CFG_PASSTHROUGH), "no rules: everything passes");
    }

    /// What ET Open leaves to pass through (printed; the README quotes it), when the shared
    /// copy is there. Its IP rules and app-layer rules make every protocol interesting.
    #[test]
    fn et_open_pass_through() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/rules/et-open-2024-04-21");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: ET Open rules not found at {}", dir.display());
            return;
        };
        let mut files: Vec<_> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rules")).collect();
        files.sort();
        let mut load = picket_core::detect::rule::RuleSetLoad::new();
        for f in &files {
            crate::rules::read_rules_file(&mut load, f, &RuleVars::default());
        }
        let (e, _) = picket_core::detect::engine::DetectEngine::build(load.rules, &Default::default()).unwrap();
        let (i, _) = derive(Some(&e), &DetectorNeeds::none());
        eprintln!("ET Open pass-through: {}", describe(&i));
        assert!(i.tcp.all && i.udp.all && i.icmp, "ET Open has `ip any any` and app-layer rules");
    }
}
