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
                matches!(
                    self,
                    Bsd | Hpux10 | Irix | Windows | Windows2k3 | OldLinux | Linux | Macos
                )
            }
        } else {
            new_end > old_end && matches!(self, Solaris | Hpux11)
        }
    }
}
