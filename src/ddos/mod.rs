//! The DDoS layer of a live run (`--ddos`, YAML `ddos.enabled`): the XDP program on the
//! capture interfaces, the kernel settings it needs, and (as they land) the controller
//! that steers its maps from the detectors' findings.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`DdosLayer`]: start (load, attach) and stop (detach, restore) |
//! | `synproxy.rs` | [`synproxy::SynproxyGuard`]: the iptables SYNPROXY rules and sysctl the SYN cookies need |
//! | `passthrough.rs` | pass-through derived from the rules and detectors; flow bypass set-up |
//!
//! Started before the capture sockets open (they carry its socket filter) and dropped
//! after the workers end, so no packet is inspected without it and nothing of it
//! outlives the run.

pub mod controller;
pub mod passthrough;
pub mod synproxy;

use crate::config::{AttachPreference, DdosConfig};
use crate::counters::CounterSet;
use crate::counters::CounterSource;
use crate::xdp::maps::{CFG_AFXDP, CFG_BYPASS_DROP};
use crate::xdp::protect::ProtectTable;
use crate::xdp::stats::XdpStats;
use crate::xdp::{AttachMode, XdpLayer, XdpOptions};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use synproxy::SynproxyGuard;

/// How packets reach picket behind the XDP program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// XDP_PASS, then AF_PACKET sockets (which carry the socket filter).
    AfPacket,
    /// Redirected into AF_XDP sockets (`picket_xsks`).
    AfXdp,
}

pub struct DdosLayer {
    // Dropped in this order: the program detaches before the SYNPROXY rules go.
    xdp: XdpLayer,
    socket_filter: Option<Arc<OwnedFd>>,
    /// SYN-cookie destinations; the controller takes it ([`DdosLayer::take_protect`]).
    protect: Option<ProtectTable>,
    /// The SYNPROXY rules and sysctl (`ddos.syn-cookies.synproxy`), removed on drop.
    synproxy: Option<SynproxyGuard>,
}

impl DdosLayer {
    /// Loads the program with `config`'s settings and attaches it to every interface.
    /// Errors are one line naming what is missing.
    pub fn start(config: &DdosConfig, interfaces: &[String], delivery: Delivery) -> Result<DdosLayer, String> {
        let mut flags = 0;
        if delivery == Delivery::AfXdp {
            flags |= CFG_AFXDP;
        }
        if config.bypass_drop {
            flags |= CFG_BYPASS_DROP;
        }
        let opts = XdpOptions {
            flags,
            cookie_mss: config.cookie_mss,
            blocklist_entries: config.blocklist_entries,
            bypass_entries: config.bypass_entries,
        };
        let mut xdp = XdpLayer::load(&opts).map_err(|e| e.to_string())?;
        // SYN cookies are set up before the program sees a packet: the first cookie ACK
        // it passes finds SYNPROXY in place.
        let mut protect = ProtectTable::take(&mut xdp).map_err(|e| e.to_string())?;
        for port in &config.cookie_ports {
            protect.protect(None, *port).map_err(|e| e.to_string())?;
        }
        let synproxy = match config.synproxy {
            true => Some(SynproxyGuard::install(interfaces, config.cookie_mss).map_err(|e| e.to_string())?),
            false => None,
        };
        for interface in interfaces {
            let generic_only = config.attach == AttachPreference::Generic;
            let mode = xdp.attach_preferring(interface, generic_only).map_err(|e| e.to_string())?;
            match (config.attach, mode) {
                (AttachPreference::Native, AttachMode::Generic) => {
                    return Err(format!(
                        "ddos.attach-mode is native but the driver of {interface} has no native XDP; \
                         use attach-mode: auto or generic"
                    ))
                }
                (AttachPreference::Auto, AttachMode::Generic) => {
                    eprintln!("picket: XDP on {interface} in generic mode (its driver has no native XDP): slower")
                }
                _ => {}
            }
        }
        let socket_filter = match delivery {
            Delivery::AfPacket => Some(Arc::new(xdp.socket_filter_fd().map_err(|e| e.to_string())?)),
            Delivery::AfXdp => None,
        };
        Ok(DdosLayer { xdp, socket_filter, protect: Some(protect), synproxy })
    }

    /// The SYN-cookie table, for the controller (once; `None` afterwards).
    pub fn take_protect(&mut self) -> Option<ProtectTable> {
        self.protect.take()
    }

    /// Whether the SYNPROXY rules are installed.
    pub fn synproxy_installed(&self) -> bool {
        self.synproxy.is_some()
    }

    /// The socket filter every AF_PACKET capture socket must carry (`None` for AF_XDP).
    pub fn socket_filter(&self) -> Option<Arc<OwnedFd>> {
        self.socket_filter.clone()
    }

    /// The layer's process-wide counters for the live run (`picket.xdp.*`); call once.
    pub fn counter_sources(&mut self) -> Result<Vec<CounterSource>, String> {
        let stats = XdpStats::take(&mut self.xdp).map_err(|e| e.to_string())?;
        Ok(vec![Box::new(move |into: &mut CounterSet| stats.add_to(into))])
    }

    pub fn xdp_mut(&mut self) -> &mut XdpLayer {
        &mut self.xdp
    }

    /// "XDP native on eth0, eth1" for the start-up line.
    pub fn describe(&self) -> String {
        let attached: Vec<String> =
            self.xdp.attached().iter().map(|(name, mode)| format!("{name} ({})", mode.name())).collect();
        format!("XDP on {}", attached.join(", "))
    }
}
