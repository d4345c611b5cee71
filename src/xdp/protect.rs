//! The destinations the XDP program protects with SYN cookies (`picket_protect_v4/v6`,
//! stage `bpf/syncookie.h`): user space adds and removes entries, the kernel counts
//! what it did for each (SYNs answered, ACKs passed, ACKs dropped).
//!
//! An entry is an address and a port; `None` as the address means every local address
//! (the key's address is all zeros) and port 0 every port. The program looks up
//! (address, port), then (address, any port), then (any address, port).
//!
//! Entries come from `ddos.syn-cookies.ports` at start ([`crate::ddos::DdosLayer`]) and
//! from the controller, which switches protection on for a destination under a SYN
//! flood and off when it ends.

use super::maps::{ProtectV4, ProtectV6, ProtectVal};
use super::{XdpError, XdpLayer};
use aya::maps::{HashMap, MapData, MapError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The IPv4 table's name in the object.
pub const MAP_V4: &str = "picket_protect_v4";
/// The IPv6 table's name in the object.
pub const MAP_V6: &str = "picket_protect_v6";

/// Handles of the two protection tables, taken out of the loaded object.
pub struct ProtectTable {
    v4: HashMap<MapData, ProtectV4, ProtectVal>,
    v6: HashMap<MapData, ProtectV6, ProtectVal>,
}

impl ProtectTable {
    /// Takes `picket_protect_v4` and `picket_protect_v6` out of the loaded program (once).
    pub fn take(xdp: &mut XdpLayer) -> Result<ProtectTable, XdpError> {
        let ebpf = xdp.ebpf_mut();
        let v4 = ebpf.take_map(MAP_V4).ok_or_else(|| taken(MAP_V4))?;
        let v6 = ebpf.take_map(MAP_V6).ok_or_else(|| taken(MAP_V6))?;
        Ok(ProtectTable {
            v4: HashMap::try_from(v4).map_err(|e| XdpError(format!("{MAP_V4}: {e}")))?,
            v6: HashMap::try_from(v6).map_err(|e| XdpError(format!("{MAP_V6}: {e}")))?,
        })
    }

    /// Protects `port` (0: every port) of `addr` (`None`: every address, IPv4 and IPv6).
    /// Protecting an entry twice keeps its counts.
    pub fn protect(&mut self, addr: Option<IpAddr>, port: u16) -> Result<(), XdpError> {
        for key in keys(addr, port) {
            let result = match key {
                Key::V4(k) => self.v4.insert(k, ProtectVal::default(), BPF_NOEXIST),
                Key::V6(k) => self.v6.insert(k, ProtectVal::default(), BPF_NOEXIST),
            };
            match result {
                Ok(()) => {}
                Err(MapError::SyscallError(e)) if e.io_error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(XdpError(format!(
                        "cannot protect {} with SYN cookies: {e} (the table holds {MAX_ENTRIES} entries per \
                         address family)",
                        describe(addr, port)
                    )))
                }
            }
        }
        Ok(())
    }

    /// Stops protecting the entry; one that is not there is not an error.
    pub fn unprotect(&mut self, addr: Option<IpAddr>, port: u16) -> Result<(), XdpError> {
        for key in keys(addr, port) {
            let result = match key {
                Key::V4(k) => self.v4.remove(&k),
                Key::V6(k) => self.v6.remove(&k),
            };
            match result {
                Ok(()) | Err(MapError::KeyNotFound) => {}
                Err(MapError::SyscallError(e)) if e.io_error.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(XdpError(format!("cannot stop protecting {}: {e}", describe(addr, port)))),
            }
        }
        Ok(())
    }

    /// Every entry with the kernel's counts. An any-address entry (`None`) adds up the
    /// counts of its IPv4 and IPv6 halves.
    pub fn entries(&self) -> Vec<(Option<IpAddr>, u16, ProtectVal)> {
        let mut out: Vec<(Option<IpAddr>, u16, ProtectVal)> = Vec::new();
        let mut add = |addr: Option<IpAddr>, port: u16, v: ProtectVal| {
            if let Some(e) = out.iter_mut().find(|e| e.0.is_none() && addr.is_none() && e.1 == port) {
                e.2.syns += v.syns;
                e.2.acks_passed += v.acks_passed;
                e.2.acks_bad += v.acks_bad;
            } else {
                out.push((addr, port, v));
            }
        };
        for (k, v) in self.v4.iter().filter_map(Result::ok) {
            add((k.addr != [0; 4]).then(|| IpAddr::V4(Ipv4Addr::from(k.addr))), k.port, v);
        }
        for (k, v) in self.v6.iter().filter_map(Result::ok) {
            add((k.addr != [0; 16]).then(|| IpAddr::V6(Ipv6Addr::from(k.addr))), k.port, v);
        }
        out
    }
}

/// BPF_NOEXIST: an insert leaves an existing entry (and its counts) as it is.
const BPF_NOEXIST: u64 = 1;
/// Capacity of each table (`max_entries` in bpf/common.h).
const MAX_ENTRIES: u32 = 4096;

enum Key {
    V4(ProtectV4),
    V6(ProtectV6),
}

/// The map keys of an entry: an unspecified or absent address is the all-zero key of
/// its family, `None` the all-zero keys of both.
fn keys(addr: Option<IpAddr>, port: u16) -> Vec<Key> {
    match addr {
        None => {
            vec![Key::V4(ProtectV4 { addr: [0; 4], port, pad: 0 }), Key::V6(ProtectV6 { addr: [0; 16], port, pad: 0 })]
        }
        Some(IpAddr::V4(a)) => vec![Key::V4(ProtectV4 { addr: a.octets(), port, pad: 0 })],
        Some(IpAddr::V6(a)) => vec![Key::V6(ProtectV6 { addr: a.octets(), port, pad: 0 })],
    }
}

fn describe(addr: Option<IpAddr>, port: u16) -> String {
    let host = match addr {
        None => "any address".to_string(),
        Some(a) if a.is_unspecified() => "any address".to_string(),
        Some(a) => a.to_string(),
    };
    if port == 0 {
        format!("{host}, every port")
    } else {
        format!("{host} port {port}")
    }
}

fn taken(name: &str) -> XdpError {
    XdpError(format!("the XDP object has no map {name} (taken twice, or a stale build)"))
}
