//! Port groups of the packet and stream prefilter (Suricata's signature group heads by
//! port): the TCP and UDP rules of one flow direction are split by the port a packet of that
//! direction is matched on (the destination port to the server, the source port to the
//! client, both the server's), so that a packet is scanned only with the fast patterns of
//! the rules its port can satisfy. Rules that accept any such port join every group.
//!
//! The port space is cut where some rule's port ranges start or end; each piece gets the set
//! of rules that name it, and pieces with the same set share a group (so the 60 ports of
//! `$HTTP_PORTS` make one group, not 60). Past the configured number of groups
//! (`detect.custom-values.toserver-groups` / `toclient-groups`, Suricata's names), the
//! smaller sets are merged into one group holding all of them. Identical pattern sets are
//! compiled once ([`super::build_matchers`]), whichever groups use them. Without
//! `detect.profile` there is one group per direction ([`PortGroupLimits::SINGLE`] says why).

use std::collections::HashMap;

/// How many port groups each direction of TCP and of UDP may have (Suricata's
/// `max_uniq_toserver_groups` / `max_uniq_toclient_groups`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortGroupLimits {
    pub toserver: u16,
    pub toclient: u16,
}

impl PortGroupLimits {
    /// `detect.profile: medium`, Suricata's default (and that of `custom` without values).
    pub const MEDIUM: PortGroupLimits = PortGroupLimits { toserver: 40, toclient: 20 };
    pub const LOW: PortGroupLimits = PortGroupLimits { toserver: 25, toclient: 15 };
    pub const HIGH: PortGroupLimits = PortGroupLimits { toserver: 75, toclient: 75 };
    /// picket's default when `detect.profile` is not set: one group per direction, that is
    /// no split by port. Measured with ET Open on the reference capture (callgrind, 100k
    /// packets), Hyperscan's scan cost hardly depends on how many patterns a database holds:
    /// 8/4 groups saved 0.6% of the packet phase's instructions and `medium` about 4%, while
    /// every group's database repeats the patterns of the any-port rules, so groups cost
    /// memory (`medium`: +45 MiB peak RSS) and compile time (a cold start without cached
    /// databases: 1.7 s with one group, 3.9 s with 8/4, 14 s with `medium`).
    pub const SINGLE: PortGroupLimits = PortGroupLimits { toserver: 1, toclient: 1 };
    /// Groups per direction at most, whatever is configured (a group index is one byte).
    pub const MAX: u16 = 255;

    /// The limits of a `detect.profile` name.
    pub fn of_profile(name: &str) -> Option<PortGroupLimits> {
        match name {
            "low" => Some(Self::LOW),
            "medium" | "custom" => Some(Self::MEDIUM),
            "high" => Some(Self::HIGH),
            _ => None,
        }
    }

    /// The limit of flow direction `dir` (0: to server, 1: to client), at least 1.
    pub fn of_dir(&self, dir: usize) -> usize {
        let n = if dir == 0 { self.toserver } else { self.toclient };
        usize::from(n.clamp(1, Self::MAX))
    }
}

impl Default for PortGroupLimits {
    fn default() -> Self {
        Self::SINGLE
    }
}

/// The port a packet's group is looked up by in flow direction `dir`: the server's.
#[inline]
pub(super) fn key_port(dir: usize, sp: u16, dp: u16) -> u16 {
    if dir == 0 {
        dp
    } else {
        sp
    }
}

/// Which group a port belongs to. Without ports (ICMP, other protocols) there is one group.
#[derive(Default)]
pub(super) struct PortMap {
    /// Group index by port (65,536 entries), or empty for a single group.
    by_port: Vec<u8>,
}

impl PortMap {
    #[inline]
    pub fn group_of(&self, port: u16) -> usize {
        self.by_port.get(usize::from(port)).map_or(0, |&g| usize::from(g))
    }

    pub fn memory_bytes(&self) -> usize {
        self.by_port.capacity()
    }
}

/// The port groups of one (transport, direction): which group each port uses, and for each
/// group which of the entries it holds (indices into the entries given to [`plan`]).
pub(super) struct PortPlan {
    pub map: PortMap,
    pub members: Vec<Vec<usize>>,
}

/// Splits `entries` into at most `limit` groups. `entries[i]` is the port ranges (inclusive)
/// rule entry `i` needs on the key side, or `None` when it accepts any port there: such an
/// entry is in every group. Members stay in entry order.
pub(super) fn plan(entries: &[Option<&[(u16, u16)]>], limit: usize) -> PortPlan {
    let limit = limit.clamp(1, usize::from(PortGroupLimits::MAX));
    // Cut points: every range start and the port after every range end.
    let mut cuts: Vec<u32> = vec![0];
    for ranges in entries.iter().flatten() {
        for &(lo, hi) in ranges.iter() {
            cuts.push(u32::from(lo));
            cuts.push(u32::from(hi) + 1);
        }
    }
    cuts.retain(|&c| c <= u32::from(u16::MAX));
    cuts.sort_unstable();
    cuts.dedup();
    // The port-specific entries of each piece [cuts[i], cuts[i+1]).
    let mut piece_members: Vec<Vec<usize>> = vec![Vec::new(); cuts.len()];
    for (i, ranges) in entries.iter().enumerate() {
        let Some(ranges) = ranges else { continue };
        for &(lo, hi) in ranges.iter() {
            let first = cuts.partition_point(|&c| c < u32::from(lo));
            let last = cuts.partition_point(|&c| c <= u32::from(hi));
            for piece in piece_members.iter_mut().take(last).skip(first) {
                if piece.last() != Some(&i) {
                    piece.push(i);
                }
            }
        }
    }
    // Pieces with the same members share a set; count the ports of each set.
    let mut set_of: HashMap<&[usize], usize> = HashMap::new();
    let mut sets: Vec<(&[usize], u32)> = Vec::new();
    let mut piece_set = Vec::with_capacity(cuts.len());
    for (i, members) in piece_members.iter().enumerate() {
        let end = cuts.get(i + 1).copied().unwrap_or(u32::from(u16::MAX) + 1);
        let id = *set_of.entry(members.as_slice()).or_insert_with(|| {
            sets.push((members.as_slice(), 0));
            sets.len() - 1
        });
        sets[id].1 += end - cuts[i];
        piece_set.push(id);
    }
    // Over the limit: the sets with the most rules keep a group of their own (the set of no
    // port-specific rule first: it serves most ports), the rest share the last group.
    let mut order: Vec<usize> = (0..sets.len()).collect();
    order.sort_by_key(|&s| (!sets[s].0.is_empty(), std::cmp::Reverse(sets[s].0.len()), s));
    let own = if sets.len() <= limit { sets.len() } else { limit - 1 };
    let mut group_of_set = vec![own; sets.len()];
    for (group, &s) in order.iter().take(own).enumerate() {
        group_of_set[s] = group;
    }
    let group_count = if sets.len() <= limit { sets.len() } else { limit };
    let any: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].is_none()).collect();
    let mut specific: Vec<Vec<usize>> = vec![Vec::new(); group_count];
    for (s, (members, _)) in sets.iter().enumerate() {
        specific[group_of_set[s]].extend_from_slice(members);
    }
    let members = specific
        .into_iter()
        .map(|mut group| {
            group.extend_from_slice(&any);
            group.sort_unstable();
            group.dedup();
            group
        })
        .collect();
    let map = if group_count <= 1 {
        PortMap::default()
    } else {
        let mut by_port = vec![0u8; usize::from(u16::MAX) + 1];
        for (i, &start) in cuts.iter().enumerate() {
            let end = cuts.get(i + 1).copied().unwrap_or(u32::from(u16::MAX) + 1);
            let group = group_of_set[piece_set[i]] as u8;
            by_port[start as usize..end as usize].fill(group);
        }
        PortMap { by_port }
    };
    PortPlan { map, members }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members_of(p: &PortPlan, port: u16) -> &[usize] {
        &p.members[p.map.group_of(port)]
    }

    #[test]
    fn ports_get_the_rules_that_name_them_and_any_port_rules_join_all() {
        let http: &[(u16, u16)] = &[(80, 80), (8080, 8080)];
        let smb: &[(u16, u16)] = &[(139, 139), (445, 445)];
        let high: &[(u16, u16)] = &[(1024, 65535)];
        let entries = [Some(http), None, Some(smb), Some(high), Some(&[(445u16, 445u16)][..])];
        let p = plan(&entries, 40);
        assert_eq!(members_of(&p, 80), [0, 1]);
        assert_eq!(members_of(&p, 8080), [0, 1, 3]);
        assert_eq!(members_of(&p, 139), [1, 2]);
        assert_eq!(members_of(&p, 445), [1, 2, 4]);
        assert_eq!(members_of(&p, 443), [1]);
        assert_eq!(members_of(&p, 65535), [1, 3]);
        assert_eq!(members_of(&p, 0), [1]);
        // Ports with the same rules share a group: 0-79, 81-138, ... all hold the any-port rule.
        assert_eq!(p.map.group_of(22), p.map.group_of(443));
        assert_eq!(p.members.len(), 6);
    }

    #[test]
    fn over_the_limit_small_sets_share_one_group_that_holds_them_all() {
        let singles: Vec<[(u16, u16); 1]> = (1..=10u16).map(|p| [(p, p)]).collect();
        let mut entries: Vec<Option<&[(u16, u16)]>> = singles.iter().map(|r| Some(&r[..])).collect();
        let wide: &[(u16, u16)] = &[(5, 6)];
        entries.push(Some(wide));
        entries.push(None);
        let p = plan(&entries, 3);
        assert_eq!(p.members.len(), 3);
        // The no-specific-rule set keeps its own group; then the largest sets (ports 5 and 6
        // hold two rules each); every other port shares the last group, which holds them all.
        assert_eq!(members_of(&p, 100), [11]);
        assert_eq!(members_of(&p, 5), [4, 10, 11]);
        assert_eq!(members_of(&p, 1), [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(members_of(&p, 6), members_of(&p, 1));
        // Whatever the grouping, a port's group holds every rule that names the port.
        for port in 0..=20u16 {
            for (i, e) in entries.iter().enumerate() {
                let named = e.is_none_or(|r| r.iter().any(|&(lo, hi)| (lo..=hi).contains(&port)));
                assert!(!named || members_of(&p, port).contains(&i), "port {port} rule {i}");
            }
        }
    }

    #[test]
    fn one_group_needs_no_port_map() {
        let p = plan(&[None, None], 40);
        assert_eq!(p.members, [vec![0, 1]]);
        assert_eq!(p.map.memory_bytes(), 0);
        let p = plan(&[Some(&[(80, 80)][..]), None], 1);
        assert_eq!(p.members, [vec![0, 1]]);
    }
}
