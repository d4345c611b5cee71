//! Receive offloads that merge packets (GRO, LRO, hardware GRO, GRO fraglist) on the
//! interfaces of an inline bridge, read and turned off through ethtool's feature
//! interface (the SIOCETHTOOL ioctl, as `ethtool -K` does).
//!
//! Why: with these on, the kernel hands AF_PACKET one "super-packet" of up to 64 KiB in
//! place of many wire-sized packets. A bridge forwards frames as they are, and the other
//! interface cannot send a frame larger than its MTU: the whole super-packet would be
//! lost. So at start-up the bridge turns them off on both interfaces (saying so on
//! stderr) and turns them back on when it stops ([`OffloadGuard`]).
//!
//! Features are found by their kernel names ("rx-gro", ...) in the interface's feature
//! string set, so no feature bit numbers are hard-coded. All parsing of the kernel's
//! answers is bounds-checked safe code; the ioctl itself is in `sys.rs`.

mod sys;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;

/// ethtool command numbers (linux/ethtool.h).
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETHTOOL_SFEATURES: u32 = 0x3b;
/// The string set of feature names.
const ETH_SS_FEATURES: u32 = 4;
/// Bytes of one name in a string set.
const ETH_GSTRING_LEN: usize = 32;
/// More feature names than any kernel has (about 70 today): a bound on what is asked for.
const MAX_FEATURES: usize = 1024;

/// Word offsets in `struct ethtool_sset_info`: cmd, reserved, sset_mask (u64), data[].
const SSET_INFO_MASK: usize = 2;
const SSET_INFO_DATA: usize = 4;
/// Word offsets in `struct ethtool_gstrings`: cmd, string_set, len, data[].
const GSTRINGS_SET: usize = 1;
const GSTRINGS_LEN: usize = 2;
const GSTRINGS_DATA: usize = 3;
/// `struct ethtool_gfeatures` / `ethtool_sfeatures`: cmd, size (feature words), then one
/// block per 32 features: {available, requested, active, never_changed} to read,
/// {valid, requested} to write.
const FEATURES_SIZE: usize = 1;
const FEATURES_BLOCKS: usize = 2;
const GET_BLOCK_WORDS: usize = 4;
const GET_AVAILABLE: usize = 0;
const GET_ACTIVE: usize = 2;
const SET_BLOCK_WORDS: usize = 2;
const SET_VALID: usize = 0;
const SET_REQUESTED: usize = 1;

/// The merging receive offloads, by kernel name, with the name `ethtool -k` shows.
pub const MERGING_OFFLOADS: [(&str, &str); 4] = [
    ("rx-gro", "generic-receive-offload"),
    ("rx-lro", "large-receive-offload"),
    ("rx-gro-hw", "rx-gro-hw"),
    ("rx-gro-list", "rx-gro-list"),
];

/// Why the offloads of an interface could not be read or changed. One line naming the
/// interface and what to do.
#[derive(Debug)]
pub struct OffloadError {
    pub interface: String,
    pub what: &'static str,
    pub source: io::Error,
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "interface {}: cannot {} ({}); turn receive offloads off by hand: ethtool -K {} gro off lro off",
            self.interface, self.what, self.source, self.interface
        )
    }
}

impl std::error::Error for OffloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The state of one named feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureState {
    /// The driver lets it be changed (`ethtool -k` shows "[fixed]" otherwise).
    pub changeable: bool,
    pub active: bool,
}

/// An interface's feature names and their state.
#[derive(Clone, Debug)]
pub struct Features {
    names: Vec<String>,
    /// Per 32 features: (available, active) bit masks.
    words: Vec<(u32, u32)>,
}

impl Features {
    fn bit(index: usize) -> (usize, u32) {
        (index / 32, 1u32 << (index % 32))
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    pub fn state(&self, name: &str) -> Option<FeatureState> {
        let (word, mask) = Self::bit(self.index_of(name)?);
        let (available, active) = *self.words.get(word)?;
        Some(FeatureState { changeable: available & mask != 0, active: active & mask != 0 })
    }

    /// Parses the string set and GFEATURES answers (kept apart from the ioctl so it can
    /// be tested on made-up answers).
    fn parse(strings: &[u32], count: usize, features: &[u32]) -> Option<Features> {
        let bytes: Vec<u8> = strings.get(GSTRINGS_DATA..)?.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let names = (0..count)
            .map(|i| {
                let raw = bytes.get(i * ETH_GSTRING_LEN..(i + 1) * ETH_GSTRING_LEN)?;
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                Some(String::from_utf8_lossy(&raw[..end]).into_owned())
            })
            .collect::<Option<Vec<_>>>()?;
        let size = *features.get(FEATURES_SIZE)? as usize;
        let words = (0..size.min(count.div_ceil(32)))
            .map(|w| {
                let block = features.get(FEATURES_BLOCKS + w * GET_BLOCK_WORDS..)?;
                Some((*block.get(GET_AVAILABLE)?, *block.get(GET_ACTIVE)?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Features { names, words })
    }
}

/// Reads the feature names and states of `interface`.
pub fn read_features(interface: &str) -> Result<Features, OffloadError> {
    let fail = |what: &'static str| move |source: io::Error| OffloadError { interface: interface.into(), what, source };
    let fd = sys::control_socket().map_err(fail("open a control socket"))?;
    read_features_with(&fd, interface).map_err(fail("read its offload settings (ethtool -k)"))
}

fn read_features_with(fd: &OwnedFd, interface: &str) -> io::Result<Features> {
    let count = feature_count(fd, interface)?;
    let mut strings = vec![0u32; GSTRINGS_DATA + (count * ETH_GSTRING_LEN).div_ceil(4)];
    strings[0] = ETHTOOL_GSTRINGS;
    strings[GSTRINGS_SET] = ETH_SS_FEATURES;
    strings[GSTRINGS_LEN] = count as u32;
    sys::ethtool(fd, interface, &mut strings)?;
    // The kernel writes back how many it filled; never trust it beyond what we asked.
    let filled = (strings[GSTRINGS_LEN] as usize).min(count);
    let words = count.div_ceil(32);
    let mut features = vec![0u32; FEATURES_BLOCKS + words * GET_BLOCK_WORDS];
    features[0] = ETHTOOL_GFEATURES;
    features[FEATURES_SIZE] = words as u32;
    sys::ethtool(fd, interface, &mut features)?;
    Features::parse(&strings, filled, &features).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))
}

fn feature_count(fd: &OwnedFd, interface: &str) -> io::Result<usize> {
    let mut info = [0u32; SSET_INFO_DATA + 1];
    info[0] = ETHTOOL_GSSET_INFO;
    let mask = (1u64 << ETH_SS_FEATURES).to_ne_bytes();
    info[SSET_INFO_MASK] = u32::from_ne_bytes([mask[0], mask[1], mask[2], mask[3]]);
    info[SSET_INFO_MASK + 1] = u32::from_ne_bytes([mask[4], mask[5], mask[6], mask[7]]);
    sys::ethtool(fd, interface, &mut info)?;
    let lo = info[SSET_INFO_MASK].to_ne_bytes();
    let hi = info[SSET_INFO_MASK + 1].to_ne_bytes();
    let answered = u64::from_ne_bytes([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]);
    if answered & (1 << ETH_SS_FEATURES) == 0 {
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    let count = info[SSET_INFO_DATA] as usize;
    if count == 0 || count > MAX_FEATURES {
        return Err(io::Error::from(io::ErrorKind::InvalidData));
    }
    Ok(count)
}

/// Sets the named features of `interface` on or off in one ETHTOOL_SFEATURES.
fn set_features(fd: &OwnedFd, interface: &str, features: &Features, names: &[&str], on: bool) -> io::Result<()> {
    let words = features.names.len().div_ceil(32);
    let mut request = vec![0u32; FEATURES_BLOCKS + words * SET_BLOCK_WORDS];
    request[0] = ETHTOOL_SFEATURES;
    request[FEATURES_SIZE] = words as u32;
    for name in names {
        let Some(index) = features.index_of(name) else { continue };
        let (word, mask) = Features::bit(index);
        let block = FEATURES_BLOCKS + word * SET_BLOCK_WORDS;
        request[block + SET_VALID] |= mask;
        if on {
            request[block + SET_REQUESTED] |= mask;
        }
    }
    // A positive answer means "not everything as asked" (ETHTOOL_F_*); the caller reads
    // the features back to see what really happened.
    sys::ethtool(fd, interface, &mut request).map(|_| ())
}

/// What [`turn_off_merging`] did on one interface.
#[derive(Debug, Default)]
pub struct OffloadReport {
    /// `ethtool -k` names of the offloads turned off.
    pub turned_off: Vec<&'static str>,
    /// Offloads still on because the driver does not let them change ("[fixed]") or
    /// refused: frames larger than the MTU can still arrive, and are counted.
    pub still_on: Vec<&'static str>,
}

/// Turns the merging receive offloads of `interface` off. The returned guard turns back
/// on, when dropped, those this call turned off.
pub fn turn_off_merging(interface: &str) -> Result<(OffloadGuard, OffloadReport), OffloadError> {
    let fail = |what: &'static str| move |source: io::Error| OffloadError { interface: interface.into(), what, source };
    let fd = sys::control_socket().map_err(fail("open a control socket"))?;
    let before = read_features_with(&fd, interface).map_err(fail("read its offload settings (ethtool -k)"))?;
    let active: Vec<(&'static str, &'static str)> =
        MERGING_OFFLOADS.iter().copied().filter(|(name, _)| before.state(name).is_some_and(|s| s.active)).collect();
    let mut report = OffloadReport::default();
    let mut guard = OffloadGuard { interface: interface.to_string(), restore: Vec::new() };
    if active.is_empty() {
        return Ok((guard, report));
    }
    let names: Vec<&str> = active.iter().map(|(name, _)| *name).collect();
    set_features(&fd, interface, &before, &names, false).map_err(fail("turn receive offloads off (ethtool -K)"))?;
    let after = read_features_with(&fd, interface).map_err(fail("read its offload settings (ethtool -k)"))?;
    for (name, shown) in active {
        if after.state(name).is_some_and(|s| s.active) {
            report.still_on.push(shown);
        } else {
            report.turned_off.push(shown);
            guard.restore.push(name);
        }
    }
    Ok((guard, report))
}

/// Offloads turned off on an interface, turned back on when dropped (at the end of a
/// bridge run). A process killed with SIGKILL leaves them off, which is harmless.
#[derive(Debug)]
pub struct OffloadGuard {
    interface: String,
    restore: Vec<&'static str>,
}

impl OffloadGuard {
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Kernel names of the offloads this guard turns back on.
    pub fn restores(&self) -> &[&'static str] {
        &self.restore
    }
}

impl Drop for OffloadGuard {
    fn drop(&mut self) {
        if self.restore.is_empty() {
            return;
        }
        let restored = sys::control_socket().and_then(|fd| {
            let features = read_features_with(&fd, &self.interface)?;
            set_features(&fd, &self.interface, &features, &self.restore, true)
        });
        if let Err(e) = restored {
            eprintln!("picket: could not turn {} back on on {}: {e}", self.restore.join(", "), self.interface);
        }
    }
}
