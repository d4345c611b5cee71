//! The DDoS layer of a live run (`--ddos`, YAML `ddos.enabled`): the XDP program on the
//! capture interfaces, the kernel settings it needs, and (as they land) the controller
//! that steers its maps from the detectors' findings.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`DdosLayer`]: start (load, attach) and stop (detach, restore) |
//!
//! Started before the capture sockets open (they carry its socket filter) and dropped
//! after the workers end, so no packet is inspected without it and nothing of it
//! outlives the run.

pub mod controller;

use crate::config::{AttachPreference, DdosConfig};
use crate::counters::CounterSet;
use crate::pipeline::live::CounterSource;
use crate::xdp::maps::{CFG_AFXDP, CFG_BYPASS_DROP};
use crate::xdp::stats::XdpStats;
use crate::xdp::{AttachMode, XdpLayer, XdpOptions};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// How packets reach picket behind the XDP program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// XDP_PASS, then AF_PACKET sockets (which carry the socket filter).
    AfPacket,
    /// Redirected into AF_XDP sockets (`picket_xsks`).
    AfXdp,
}

pub struct DdosLayer {
    xdp: XdpLayer,
    socket_filter: Option<Arc<OwnedFd>>,
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
        for interface in interfaces {
            let mode = xdp.attach(interface).map_err(|e| e.to_string())?;
            match (config.attach, mode) {
                (AttachPreference::Native, AttachMode::Generic) => {
                    return Err(format!(
                        "ddos.attach-mode is native but the driver of {interface} has no native XDP; \
                         use attach-mode: auto or generic"
                    ))
                }
                (_, AttachMode::Generic) => {
                    eprintln!("picket: XDP on {interface} in generic mode (its driver has no native XDP): slower")
                }
                _ => {}
            }
        }
        let socket_filter = match delivery {
            Delivery::AfPacket => Some(Arc::new(xdp.socket_filter_fd().map_err(|e| e.to_string())?)),
            Delivery::AfXdp => None,
        };
        Ok(DdosLayer { xdp, socket_filter })
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
