//! Target-based overlap policies: which copy of a byte wins when two segments disagree.

/// Suricata's `host-os-policy` names. The policy belongs to the *receiving* host of a
/// direction (the destination of the segments), so a flow may use two different policies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OverlapPolicy {
    /// Data already held always wins.
    First,
    /// Newly arrived data always wins.
    Last,
    #[default]
    Bsd,
    Linux,
    OldLinux,
    Windows,
    Windows2k3,
    Vista,
    Solaris,
    Hpux10,
    Hpux11,
    Irix,
    Macos,
}

impl OverlapPolicy {
    /// Parses a Suricata policy name. `bsd-right` and `old-solaris` fold into their nearest
    /// policy exactly as Suricata does when it assigns a stream's policy.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "first" => OverlapPolicy::First,
            "last" => OverlapPolicy::Last,
            "bsd" | "bsd-right" | "bsd_right" => OverlapPolicy::Bsd,
            "linux" => OverlapPolicy::Linux,
            "old-linux" | "old_linux" => OverlapPolicy::OldLinux,
            "windows" => OverlapPolicy::Windows,
            "windows2k3" => OverlapPolicy::Windows2k3,
            "vista" => OverlapPolicy::Vista,
            "solaris" | "old-solaris" | "old_solaris" => OverlapPolicy::Solaris,
            "hpux10" => OverlapPolicy::Hpux10,
            "hpux11" => OverlapPolicy::Hpux11,
            "irix" => OverlapPolicy::Irix,
            "macos" => OverlapPolicy::Macos,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            OverlapPolicy::First => "first",
            OverlapPolicy::Last => "last",
            OverlapPolicy::Bsd => "bsd",
            OverlapPolicy::Linux => "linux",
            OverlapPolicy::OldLinux => "old-linux",
            OverlapPolicy::Windows => "windows",
            OverlapPolicy::Windows2k3 => "windows2k3",
            OverlapPolicy::Vista => "vista",
            OverlapPolicy::Solaris => "solaris",
            OverlapPolicy::Hpux10 => "hpux10",
            OverlapPolicy::Hpux11 => "hpux11",
            OverlapPolicy::Irix => "irix",
            OverlapPolicy::Macos => "macos",
        }
    }

    /// Decides, for one already-held segment `[old_start, old_end)` overlapped by a new
    /// segment `[new_start, new_end)`, whether the new bytes replace the held ones.
    ///
    /// The decision depends only on where the new segment starts and ends relative to the
    /// held one, which is how the target stacks differ:
    /// - same start: held data wins, except that old-linux/solaris/hpux11 take the new data
    ///   when it reaches at least as far, and linux when it reaches strictly further;
    /// - new starts before: new data wins for every stack except first/vista, and for
    ///   solaris/hpux11 only when the new segment also covers the held one's end;
    /// - new starts after: held data wins, except solaris/hpux11 when the new segment
    ///   runs past the held one's end.
    pub fn new_data_wins(self, new_start: u64, new_end: u64, old_start: u64, old_end: u64) -> bool {
        use OverlapPolicy::*;
        match self {
            Last => return true,
            First | Vista => return false,
            _ => {}
        }
        if new_start == old_start {
            if new_end < old_end {
                false
            } else if new_end > old_end {
                matches!(self, Linux | OldLinux | Solaris | Hpux11)
            } else {
                matches!(self, OldLinux | Solaris | Hpux11)
            }
        } else if new_start < old_start {
            if matches!(self, Solaris | Hpux11) {
                new_end >= old_end
            } else {
                matches!(self, Bsd | Hpux10 | Irix | Windows | Windows2k3 | OldLinux | Linux | Macos)
            }
        } else {
            new_end > old_end && matches!(self, Solaris | Hpux11)
        }
    }
}

/// `host-os-policy`: which overlap policy each receiving host uses, by longest matching
/// prefix (Suricata keeps these in a radix tree with the same lookup rule).
#[derive(Clone, Debug, Default)]
pub struct HostOsPolicy {
    /// (network as a 128-bit value, prefix length in that space, policy); IPv4 entries are
    /// stored v4-mapped so one table serves both families.
    nets: Vec<(u128, u8, OverlapPolicy)>,
}

impl HostOsPolicy {
    /// Builds the table from (policy name, address or CIDR) pairs; returns the entries that
    /// could not be understood so the caller can warn about them.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> (Self, Vec<String>) {
        let mut table = HostOsPolicy::default();
        let mut rejected = Vec::new();
        for (name, addr) in entries {
            match (OverlapPolicy::from_name(name), parse_net(addr)) {
                (Some(policy), Some((net, len))) => table.nets.push((net, len, policy)),
                _ => rejected.push(format!("host-os-policy: {name}: {addr}")),
            }
        }
        // Longest prefix first, so the first hit is the most specific one.
        table.nets.sort_by_key(|n| std::cmp::Reverse(n.1));
        (table, rejected)
    }

    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// The policy of the host at `addr` (16 bytes, IPv4 v4-mapped), if one is configured.
    pub fn lookup(&self, addr: &[u8; 16]) -> Option<OverlapPolicy> {
        let value = u128::from_be_bytes(*addr);
        self.nets.iter().find(|(net, len, _)| prefix_mask(*len) & value == *net).map(|e| e.2)
    }
}

fn prefix_mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len.min(128) as u32)
    }
}

/// `a.b.c.d`, `a.b.c.d/n`, IPv6 and `IPv6/n` into (masked v4-mapped network, prefix length).
fn parse_net(text: &str) -> Option<(u128, u8)> {
    let text = text.trim().trim_matches('"');
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l.trim().parse::<u8>().ok()?)),
        None => (text, None),
    };
    let ip: std::net::IpAddr = addr.trim().parse().ok()?;
    let (value, len) = match ip {
        std::net::IpAddr::V4(v4) => {
            let len = len.unwrap_or(32);
            if len > 32 {
                return None;
            }
            (u128::from_be_bytes(v4.to_ipv6_mapped().octets()), 96 + len)
        }
        std::net::IpAddr::V6(v6) => {
            let len = len.unwrap_or(128);
            if len > 128 {
                return None;
            }
            (u128::from_be_bytes(v6.octets()), len)
        }
    };
    Some((value & prefix_mask(len), len))
}

#[cfg(test)]
mod host_os_tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        std::net::Ipv4Addr::from(a).to_ipv6_mapped().octets()
    }

    #[test]
    fn longest_prefix_wins_and_unknown_hosts_get_none() {
        let (t, bad) = HostOsPolicy::from_entries([
            ("windows", "0.0.0.0/0"),
            ("old-linux", "2.2.2.2"),
            ("linux", "10.0.0.0/8"),
            ("bsd", "nonsense"),
            ("solaris", "2001:db8::/32"),
        ]);
        assert_eq!(bad.len(), 1);
        assert_eq!(t.lookup(&v4([2, 2, 2, 2])), Some(OverlapPolicy::OldLinux));
        assert_eq!(t.lookup(&v4([10, 1, 2, 3])), Some(OverlapPolicy::Linux));
        assert_eq!(t.lookup(&v4([1, 1, 1, 1])), Some(OverlapPolicy::Windows));
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(t.lookup(&v6.octets()), Some(OverlapPolicy::Solaris));
        let other: std::net::Ipv6Addr = "2001:db9::1".parse().unwrap();
        assert_eq!(t.lookup(&other.octets()), None);
    }
}
