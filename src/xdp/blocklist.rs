//! The XDP blocklist from user space: prefixes whose packets the program drops
//! (`picket_block_v4` / `picket_block_v6`, LPM tries on the source address, see
//! `bpf/blocklist.h`), each until its expiry time or for the whole run.
//!
//! Entries are written by the DDoS controller (a detector's block, `ddos.blocklist.block-time`)
//! and at start for `ddos.blocklist.static` (never expire). The program ignores an
//! expired entry at once; [`Blocklist::expire`] removes it, so the tries only hold what
//! applies. The tries are bounded (`ddos.blocklist.max-entries`): a block that finds
//! its trie full is refused and counted ([`Blocklist::refused`]).
//!
//! Time base: `expires_ns` is CLOCK_MONOTONIC nanoseconds, the clock of the program's
//! `bpf_ktime_get_ns()` ([`monotonic_ns`]).

use super::maps::BlockVal;
use super::{monotonic_ns, XdpError, XdpLayer};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{MapData, MapError};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// Map names in `bpf/common.h`.
pub const MAP_V4: &str = "picket_block_v4";
pub const MAP_V6: &str = "picket_block_v6";

/// What user space remembers of an entry (the kernel holds the counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// 0: never expires.
    expires_ns: u64,
}

pub struct Blocklist {
    v4: LpmTrie<MapData, [u8; 4], BlockVal>,
    v6: LpmTrie<MapData, [u8; 16], BlockVal>,
    /// Every entry written, by (address with host bits cleared, prefix length).
    entries: HashMap<(IpAddr, u8), Entry>,
    refused: u64,
}

impl Blocklist {
    /// Takes the two tries out of the loaded program.
    pub fn take(xdp: &mut XdpLayer) -> Result<Blocklist, XdpError> {
        let take = |xdp: &mut XdpLayer, name: &str| {
            xdp.ebpf_mut()
                .take_map(name)
                .ok_or_else(|| XdpError(format!("the XDP object has no map {name} (stale build?)")))
        };
        let v4 = LpmTrie::try_from(take(xdp, MAP_V4)?).map_err(|e| XdpError(format!("{MAP_V4}: {e}")))?;
        let v6 = LpmTrie::try_from(take(xdp, MAP_V6)?).map_err(|e| XdpError(format!("{MAP_V6}: {e}")))?;
        Ok(Blocklist { v4, v6, entries: HashMap::new(), refused: 0 })
    }

    /// Blocks `addr/prefix_len` for `ttl` (`None`: until the run ends). Blocking a prefix
    /// already listed extends it (a static entry stays static) and keeps its counts.
    /// `Ok(false)`: the trie is full, the block was refused (counted).
    pub fn block(&mut self, addr: IpAddr, prefix_len: u8, ttl: Option<Duration>) -> Result<bool, XdpError> {
        let (addr, len) = normalize(addr, prefix_len)?;
        let now = monotonic_ns();
        let wanted = match ttl {
            None => 0,
            Some(t) => now.saturating_add(t.as_nanos().min(u64::MAX as u128) as u64).max(1),
        };
        let old = self.entries.get(&(addr, len)).copied();
        let expires_ns = match old {
            Some(Entry { expires_ns: 0 }) => 0,
            Some(Entry { expires_ns: e }) if wanted != 0 && e > wanted => e,
            _ => wanted,
        };
        let counts = if old.is_some() { self.read(addr, len).unwrap_or_default() } else { BlockVal::default() };
        let value = BlockVal { expires_ns, ..counts };
        let result = match addr {
            IpAddr::V4(a) => self.v4.insert(&Key::new(len as u32, a.octets()), value, 0),
            IpAddr::V6(a) => self.v6.insert(&Key::new(len as u32, a.octets()), value, 0),
        };
        match result {
            Ok(()) => {
                self.entries.insert((addr, len), Entry { expires_ns });
                Ok(true)
            }
            Err(e) if is_full(&e) => {
                self.refused += 1;
                Ok(false)
            }
            Err(e) => Err(XdpError(format!("cannot block {addr}/{len}: {e}"))),
        }
    }

    /// Removes `addr/prefix_len` (absent: nothing to do).
    pub fn unblock(&mut self, addr: IpAddr, prefix_len: u8) -> Result<(), XdpError> {
        let (addr, len) = normalize(addr, prefix_len)?;
        self.entries.remove(&(addr, len));
        let result = match addr {
            IpAddr::V4(a) => self.v4.remove(&Key::new(len as u32, a.octets())),
            IpAddr::V6(a) => self.v6.remove(&Key::new(len as u32, a.octets())),
        };
        match result {
            Ok(()) | Err(MapError::KeyNotFound) => Ok(()),
            Err(MapError::SyscallError(e)) if e.io_error.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            Err(e) => Err(XdpError(format!("cannot unblock {addr}/{len}: {e}"))),
        }
    }

    /// Removes the entries whose time is up and returns them with their final counts.
    pub fn expire(&mut self) -> Vec<(IpAddr, u8, BlockVal)> {
        let now = monotonic_ns();
        let due: Vec<(IpAddr, u8)> =
            self.entries.iter().filter(|(_, e)| e.expires_ns != 0 && e.expires_ns <= now).map(|(k, _)| *k).collect();
        let mut out = Vec::with_capacity(due.len());
        for (addr, len) in due {
            let counts = self.read(addr, len).unwrap_or_default();
            let _ = self.unblock(addr, len);
            out.push((addr, len, counts));
        }
        out
    }

    /// The entries in force, with the kernel's counts.
    pub fn entries(&self) -> Vec<(IpAddr, u8, BlockVal)> {
        self.entries.keys().map(|&(a, l)| (a, l, self.read(a, l).unwrap_or_default())).collect()
    }

    /// Entries in force (static ones included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Blocks refused because a trie was full.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The kernel's value of exactly this prefix (not a longest-prefix lookup of it).
    fn read(&self, addr: IpAddr, len: u8) -> Option<BlockVal> {
        let value = match addr {
            IpAddr::V4(a) => self.v4.get(&Key::new(len as u32, a.octets()), 0),
            IpAddr::V6(a) => self.v6.get(&Key::new(len as u32, a.octets()), 0),
        }
        .ok()?;
        // A lookup is a longest-prefix match; for a key that is itself in the trie, that
        // is this entry.
        Some(value)
    }
}

/// The address with its host bits cleared; an IPv4-mapped IPv6 address is IPv4.
fn normalize(addr: IpAddr, len: u8) -> Result<(IpAddr, u8), XdpError> {
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(addr),
        v4 => v4,
    };
    let width = if addr.is_ipv4() { 32 } else { 128 };
    if len > width {
        return Err(XdpError(format!("{addr}/{len}: prefix length must be 0-{width}")));
    }
    let p = crate::detectors::Prefix::new(addr, len);
    Ok((p.addr, p.len))
}

/// Whether an insert failed because the trie holds `max_entries` already.
fn is_full(e: &MapError) -> bool {
    match e {
        MapError::SyscallError(s) => {
            matches!(s.io_error.raw_os_error(), Some(libc::ENOSPC) | Some(libc::E2BIG) | Some(libc::ENOMEM))
        }
        _ => false,
    }
}
