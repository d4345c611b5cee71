//! Carrying detection state from a running engine to a reloaded one (`SIGUSR2`, `picket ctl
//! reload-rules`), so that a rule reload forgets nothing a rule set before it:
//!
//! | state | where | how it carries over |
//! |---|---|---|
//! | flowbits, flowints | every open flow ([`DetectFlow`]) | ids are interned per engine: renamed by name; names no rule of the new engine uses are dropped |
//! | xbits, hostbits | the engine's shared host and ip-pair tables | the new engine takes over the running one's tables (the same `Arc`); bits are keyed by a hash of their name, so kept as they are; names no rule of the new engine uses are dropped |
//! | `by_flow` thresholds, detection_filters | per worker | keyed by (gid, sid), so kept as they are; trackers of removed rules dropped |
//! | host/pair/rule-tracked thresholds | the engine's shared tables | taken over with them, trackers of removed rules dropped |
//! | detection counters | per worker | kept (they are totals of the run) |
//! | `pass`ed flows, IP-only rules done per direction | every open flow | kept as they are: IP-only rules added by a reload apply to flows that start after it |
//!
//! The flows themselves, their streams and app-layer state stay in the `Inspector`: only the
//! engine changes under them. Per-transaction "alerted once" marks are keyed by sid already.

use super::compile::Names;
use super::{DetectCtx, DetectEngine, DetectFlow};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Flowbit, flowint and xbit names by interned id.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameTables {
    pub flowbits: Vec<String>,
    pub flowints: Vec<String>,
    pub xbits: Vec<String>,
}

impl NameTables {
    pub(crate) fn from_names(names: Names) -> Self {
        NameTables { flowbits: by_id(names.flowbits), flowints: by_id(names.flowints), xbits: by_id(names.xbits) }
    }
}

/// Names indexed by their interned id (ids are dense from 0).
fn by_id(map: HashMap<String, u32>) -> Vec<String> {
    let mut names = vec![String::new(); map.len()];
    for (name, id) in map {
        if let Some(slot) = names.get_mut(id as usize) {
            *slot = name;
        }
    }
    names
}

/// For each id of the old engine, its id in the new one (`None`: the name is gone).
fn id_map(old: &[String], new: &[String]) -> Vec<Option<u32>> {
    let new_ids: HashMap<&str, u32> = new.iter().enumerate().map(|(id, name)| (name.as_str(), id as u32)).collect();
    old.iter().map(|name| new_ids.get(name.as_str()).copied()).collect()
}

fn lookup(map: &[Option<u32>], id: u32) -> Option<u32> {
    map.get(id as usize).copied().flatten()
}

/// How the state of one engine maps onto the next: built once per worker when it switches
/// (name tables are small: hundreds of names, and the (gid, sid) of the rules that limit
/// their alerts).
pub struct EngineCarry {
    flowbits: Vec<Option<u32>>,
    flowints: Vec<Option<u32>>,
    /// (gid, sid) of the new engine's rules with a threshold or detection_filter.
    limited: HashSet<u64>,
}

impl DetectEngine {
    /// How the state kept under `old` (flows, worker contexts) becomes state of `self`.
    pub fn carry_from(&self, old: &DetectEngine) -> EngineCarry {
        EngineCarry {
            flowbits: id_map(&old.names.flowbits, &self.names.flowbits),
            flowints: id_map(&old.names.flowints, &self.names.flowints),
            limited: self.limited_rules(),
        }
    }

    /// Takes over `old`'s shared host and ip-pair tables (thresholds, xbits) before any
    /// worker switches: workers still on `old` and those already on `self` count and set
    /// bits in the same tables meanwhile, so no match is lost. Trackers of rules `self` no
    /// longer has and xbits no rule of `self` names are dropped. The reporting duty of the
    /// tables' counters stays with the worker that had it (`ctx`).
    pub fn adopt_shared_state(&mut self, old: &DetectEngine) {
        let limited = self.limited_rules();
        let bits: HashSet<u64> = self.xbit_keys.iter().copied().collect();
        self.shared = Arc::clone(&old.shared);
        self.shared.retain(|key| limited.contains(&key), |bit| bits.contains(&bit));
    }

    fn limited_rules(&self) -> HashSet<u64> {
        self.rules.iter().filter(|r| r.limit.is_some()).map(|r| r.key()).collect()
    }
}

impl EngineCarry {
    /// Renames the flowbits and flowints of one open flow.
    pub fn flow(&self, flow: &mut DetectFlow) {
        if flow.vars.bits.is_empty() && flow.vars.ints.is_empty() {
            return;
        }
        flow.vars.remap(|id| lookup(&self.flowbits, id), |id| lookup(&self.flowints, id));
    }

    /// A worker context for `new` that keeps `old`'s `by_flow` threshold trackers (those of
    /// rules `new` still has), counters and counter-reporting duty; scratch is sized for
    /// `new`.
    pub fn ctx(&self, old: DetectCtx, new: &DetectEngine) -> DetectCtx {
        let mut ctx = new.new_ctx();
        let DetectCtx { flow_trackers, counters, reports_shared, .. } = old;
        flow_trackers.retain_rules(|key| self.limited.contains(&key));
        ctx.flow_trackers = flow_trackers;
        ctx.counters = counters;
        ctx.reports_shared = reports_shared;
        ctx
    }
}

impl DetectCtx {
    /// `by_flow` threshold trackers held by this worker (for tests and reload reports).
    pub fn flow_tracker_entries(&self) -> usize {
        self.flow_trackers.len()
    }
}

impl DetectEngine {
    /// (xbits, threshold trackers) held in the shared host and ip-pair tables (for tests
    /// and reload reports). Walks the tables.
    pub fn shared_state_entries(&self) -> (usize, usize) {
        self.shared.entries()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Alert, DetectConfig, DetectPacket, FlowInfo};
    use super::*;
    use crate::decode::{decode, DecodeOptions};
    use crate::detect::rule::{load_rules_str, RuleVars};
    use crate::packet::{LinkType, Timestamp};
    use etherparse::PacketBuilder;

    fn engine(rules: &str) -> DetectEngine {
        let load = load_rules_str("carry.rules", rules, &RuleVars::default());
        assert!(load.errors.is_empty(), "{:?}", load.errors);
        DetectEngine::build(load.rules, &DetectConfig::default()).expect("build").0
    }

    fn udp(src: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4(src, [10, 0, 0, 1], 64)
            .udp(1000, 53)
            .write(&mut out, payload)
            .unwrap();
        out
    }

    /// Inspects one UDP packet at `secs` as part of flow 7; returns the sids that alerted.
    fn sids(
        e: &DetectEngine,
        ctx: &mut DetectCtx,
        flow: &mut DetectFlow,
        src: [u8; 4],
        payload: &[u8],
        secs: u64,
    ) -> Vec<u32> {
        let frame = udp(src, payload);
        let d = decode(LinkType::Ethernet, &frame, &DecodeOptions::default());
        let pkt = DetectPacket {
            ts: Timestamp::from_parts(secs, 0),
            decoded: Some(&d),
            tuple: d.tuple().expect("ip"),
            payload: d.payload,
            flow: Some(FlowInfo { flow_id: 7, to_server: true, established: true, ..Default::default() }),
            ..Default::default()
        };
        let mut alerts: Vec<Alert> = Vec::new();
        e.inspect(ctx, &pkt, Some(flow), &mut alerts);
        alerts.iter().map(|a| a.sid).collect()
    }

    #[test]
    fn flowbits_and_flowints_set_before_the_swap_are_seen_after_it() {
        let old = engine(
            r#"alert udp any any -> any any (content:"LOGIN"; flowbits:set,logged_in; flowint:tries,+,1; flowbits:noalert; sid:1;)"#,
        );
        // The new engine interns other names first: the ids of logged_in and tries change.
        let new = engine(
            r#"alert udp any any -> any any (content:"X"; flowbits:set,a; flowbits:set,b; flowint:c,+,1; flowbits:noalert; sid:5;)
alert udp any any -> any any (content:"CMD"; flowbits:isset,logged_in; flowint:tries,=,1; sid:2;)
alert udp any any -> any any (content:"CMD"; flowbits:isnotset,logged_in; sid:3;)"#,
        );
        let (mut ctx, mut flow) = (old.new_ctx(), DetectFlow::default());
        assert!(sids(&old, &mut ctx, &mut flow, [1, 1, 1, 1], b"LOGIN", 1).is_empty());
        let carry = new.carry_from(&old);
        carry.flow(&mut flow);
        let mut ctx = carry.ctx(ctx, &new);
        assert_eq!(sids(&new, &mut ctx, &mut flow, [1, 1, 1, 1], b"CMD", 2), vec![2]);
        assert_eq!(new.flowbits_set(&flow).collect::<Vec<_>>(), vec!["logged_in"]);
        // Without the carry the old ids would point at other names.
        let (mut fresh_ctx, mut fresh) = (new.new_ctx(), DetectFlow::default());
        assert_eq!(sids(&new, &mut fresh_ctx, &mut fresh, [1, 1, 1, 1], b"CMD", 2), vec![3]);
    }

    #[test]
    fn names_the_new_engine_does_not_use_are_dropped() {
        let old = engine(r#"alert udp any any -> any any (content:"A"; flowbits:set,gone; flowbits:noalert; sid:1;)"#);
        let new = engine(r#"alert udp any any -> any any (content:"B"; flowbits:isset,kept; sid:2;)"#);
        let (mut ctx, mut flow) = (old.new_ctx(), DetectFlow::default());
        sids(&old, &mut ctx, &mut flow, [1, 1, 1, 1], b"A", 1);
        assert_eq!(flow.vars.bits.len(), 1);
        new.carry_from(&old).flow(&mut flow);
        assert!(flow.vars.bits.is_empty(), "a bit no rule names is dropped, not renamed to another");
    }

    #[test]
    fn threshold_counts_continue_across_the_swap() {
        // by_flow: the worker's table; by_src: the shared one.
        let rules = |extra: &str| {
            format!(
                r#"{extra}
alert udp any any -> any any (content:"F"; threshold:type threshold,track by_flow,count 4,seconds 60; sid:10;)
alert udp any any -> any any (content:"S"; threshold:type threshold,track by_src,count 4,seconds 60; sid:11;)
alert udp any any -> any any (content:"R"; threshold:type limit,track by_src,count 1,seconds 60; sid:12;)"#
            )
        };
        let old = engine(&rules(""));
        let mut new = engine(&rules(r#"alert udp any any -> any any (content:"Z"; sid:99;)"#));
        let (mut ctx, mut flow) = (old.new_ctx(), DetectFlow::default());
        let src = [192, 168, 1, 10];
        for secs in 1..=3 {
            assert!(sids(&old, &mut ctx, &mut flow, src, b"F", secs).is_empty());
            assert!(sids(&old, &mut ctx, &mut flow, src, b"S", secs).is_empty());
        }
        assert_eq!(sids(&old, &mut ctx, &mut flow, src, b"R", 3), vec![12]);
        new.adopt_shared_state(&old);
        let carry = new.carry_from(&old);
        carry.flow(&mut flow);
        let mut ctx = carry.ctx(ctx, &new);
        // The 4th match after the swap is the one that alerts; the limit stays used up.
        assert_eq!(sids(&new, &mut ctx, &mut flow, src, b"F", 4), vec![10]);
        assert_eq!(sids(&new, &mut ctx, &mut flow, src, b"S", 4), vec![11]);
        assert!(sids(&new, &mut ctx, &mut flow, src, b"R", 4).is_empty());
        assert_eq!(ctx.counters.alerts, 3, "counters are totals of the run");
    }

    #[test]
    fn trackers_of_removed_rules_are_dropped() {
        let old = engine(
            r#"alert udp any any -> any any (content:"F"; threshold:type threshold,track by_flow,count 9,seconds 60; sid:10;)
alert udp any any -> any any (content:"S"; threshold:type threshold,track by_src,count 9,seconds 60; sid:11;)"#,
        );
        let mut new = engine(r#"alert udp any any -> any any (content:"Z"; sid:99;)"#);
        let (mut ctx, mut flow) = (old.new_ctx(), DetectFlow::default());
        sids(&old, &mut ctx, &mut flow, [1, 1, 1, 1], b"F", 1);
        sids(&old, &mut ctx, &mut flow, [1, 1, 1, 1], b"S", 1);
        assert_eq!(ctx.flow_tracker_entries(), 1);
        assert_eq!(old.shared_state_entries().1, 1);
        new.adopt_shared_state(&old);
        let ctx = new.carry_from(&old).ctx(ctx, &new);
        assert_eq!(ctx.flow_tracker_entries(), 0);
        assert_eq!(new.shared_state_entries().1, 0);
    }

    #[test]
    fn xbits_carry_over_by_name() {
        let old = engine(r#"alert udp any any -> any any (content:"A"; xbits:set,seen,track ip_src; noalert; sid:1;)"#);
        let mut new = engine(
            r#"alert udp any any -> any any (content:"Q"; xbits:set,other,track ip_src; noalert; sid:3;)
alert udp any any -> any any (content:"B"; xbits:isset,seen,track ip_src; sid:2;)"#,
        );
        let (mut ctx, mut flow) = (old.new_ctx(), DetectFlow::default());
        sids(&old, &mut ctx, &mut flow, [1, 1, 1, 1], b"A", 1);
        new.adopt_shared_state(&old);
        let mut ctx = new.carry_from(&old).ctx(ctx, &new);
        assert_eq!(sids(&new, &mut ctx, &mut flow, [1, 1, 1, 1], b"B", 2), vec![2]);
        assert!(sids(&new, &mut ctx, &mut flow, [2, 2, 2, 2], b"B", 2).is_empty());
    }
}
