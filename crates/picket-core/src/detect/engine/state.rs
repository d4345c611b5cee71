//! Detection state: flowbits/flowints (per flow, in `DetectFlow`), xbits (per worker, in
//! `DetectCtx`) and thresholds. `by_flow` thresholds live in the worker (a flow stays on one
//! worker); host- and rule-tracked thresholds live in one table shared by all workers (behind
//! a mutex, taken only when a rule with such a threshold matches), because with flow-hash
//! dispatch a host's flows land on several workers. Worker-local xbits mean that
//! `track ip_src` xbits only see the flows of their own worker (documented limit).

use std::collections::HashMap;

use super::compile::{AlertLimit, FlowintValue, StateAction, StateCheck};
use crate::detect::rule::options::{FlowbitsCmd, FlowintOp, ThresholdType, Track, UniqueOn, XbitsTrack};

/// Upper bound of xbit entries per worker; beyond it new bits are not stored (counted).
pub(crate) const MAX_XBITS: usize = 65_536;
/// Upper bound of threshold trackers per worker; expired ones are pruned first.
pub(crate) const MAX_THRESHOLD_ENTRIES: usize = 131_072;

/// Flow-scoped variables, kept sorted by id.
#[derive(Clone, Debug, Default)]
pub struct FlowVars {
    pub(crate) bits: Vec<u32>,
    pub(crate) ints: Vec<(u32, u32)>,
}

impl FlowVars {
    pub(crate) fn bit(&self, id: u32) -> bool {
        self.bits.binary_search(&id).is_ok()
    }

    fn set_bit(&mut self, id: u32, on: bool) {
        match (self.bits.binary_search(&id), on) {
            (Err(pos), true) => self.bits.insert(pos, id),
            (Ok(pos), false) => {
                self.bits.remove(pos);
            }
            _ => {}
        }
    }

    pub(crate) fn int(&self, id: u32) -> Option<u32> {
        self.ints.binary_search_by_key(&id, |e| e.0).ok().map(|i| self.ints[i].1)
    }

    fn set_int(&mut self, id: u32, v: u32) {
        match self.ints.binary_search_by_key(&id, |e| e.0) {
            Ok(i) => self.ints[i].1 = v,
            Err(i) => self.ints.insert(i, (id, v)),
        }
    }
}

/// Addresses of the packet, for host-tracked state.
#[derive(Clone, Copy)]
pub(crate) struct Hosts {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub flow_id: u64,
    /// Transport ports (0 without ports), for `detection_filter ... unique_on`.
    pub sp: u16,
    pub dp: u16,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct XbitKey {
    id: u32,
    a: [u8; 16],
    b: [u8; 16],
}

fn xbit_key(id: u32, track: XbitsTrack, h: &Hosts) -> XbitKey {
    match track {
        XbitsTrack::IpSrc => XbitKey { id, a: h.src, b: [0; 16] },
        XbitsTrack::IpDst => XbitKey { id, a: h.dst, b: [0; 16] },
        // An ip pair is the same in both directions.
        _ => {
            let (a, b) = if h.src <= h.dst { (h.src, h.dst) } else { (h.dst, h.src) };
            XbitKey { id, a, b }
        }
    }
}

/// Worker-local xbits (`track ip_src|ip_dst|ip_pair`), with expiry in packet time.
#[derive(Default)]
pub(crate) struct XbitTable {
    /// Key -> expiry time in ns (u64::MAX: never).
    bits: HashMap<XbitKey, u64>,
    pub dropped: u64,
}

impl XbitTable {
    fn is_set(&self, key: &XbitKey, now: u64) -> bool {
        self.bits.get(key).is_some_and(|&exp| exp > now)
    }

    fn apply(&mut self, key: XbitKey, cmd: FlowbitsCmd, expire_secs: u32, now: u64) {
        let expiry = if expire_secs == 0 { u64::MAX } else { now.saturating_add(expire_secs as u64 * 1_000_000_000) };
        let set = match cmd {
            FlowbitsCmd::Set => true,
            FlowbitsCmd::Unset => false,
            FlowbitsCmd::Toggle => !self.is_set(&key, now),
            _ => return,
        };
        if !set {
            self.bits.remove(&key);
            return;
        }
        if self.bits.len() >= MAX_XBITS && !self.bits.contains_key(&key) {
            self.bits.retain(|_, exp| *exp > now);
            if self.bits.len() >= MAX_XBITS {
                self.dropped += 1;
                return;
            }
        }
        self.bits.insert(key, expiry);
    }
}

fn flowint_operand(vars: &FlowVars, v: Option<FlowintValue>) -> Option<u32> {
    match v? {
        FlowintValue::Num(n) => Some(n),
        FlowintValue::Flowint(id) => vars.int(id),
    }
}

pub(crate) fn check(c: &StateCheck, vars: Option<&mut FlowVars>, xbits: &XbitTable, hosts: &Hosts, now: u64) -> bool {
    let mut empty = FlowVars::default();
    let has_flow = vars.is_some();
    let vars = vars.unwrap_or(&mut empty);
    match c {
        StateCheck::FlowintModify { id, op, value } => {
            if !has_flow {
                return false;
            }
            let Some(v) = flowint_operand(vars, *value) else { return false };
            let new = match op {
                FlowintOp::Set => v,
                FlowintOp::Add => vars.int(*id).unwrap_or(0).wrapping_add(v),
                FlowintOp::Sub => match vars.int(*id) {
                    Some(cur) => cur.wrapping_sub(v),
                    None => return false,
                },
                _ => return false,
            };
            vars.set_int(*id, new);
            true
        }
        StateCheck::FlowbitsAll { ids, want_set } => ids.iter().all(|&id| vars.bit(id) == *want_set),
        StateCheck::FlowbitsAny { ids, want_set } => ids.iter().any(|&id| vars.bit(id) == *want_set),
        StateCheck::Flowint { id, op, value } => {
            let cur = vars.int(*id);
            match op {
                FlowintOp::IsSet => cur.is_some(),
                FlowintOp::NotSet => cur.is_none(),
                _ => {
                    let (Some(cur), Some(v)) = (cur, flowint_operand(vars, *value)) else { return false };
                    match op {
                        FlowintOp::Eq => cur == v,
                        FlowintOp::Ne => cur != v,
                        FlowintOp::Lt => cur < v,
                        FlowintOp::Le => cur <= v,
                        FlowintOp::Gt => cur > v,
                        FlowintOp::Ge => cur >= v,
                        _ => false,
                    }
                }
            }
        }
        StateCheck::Xbit { id, track, want_set } => xbits.is_set(&xbit_key(*id, *track, hosts), now) == *want_set,
    }
}

pub(crate) fn apply(a: &StateAction, vars: Option<&mut FlowVars>, xbits: &mut XbitTable, hosts: &Hosts, now: u64) {
    match a {
        StateAction::Flowbit { id, cmd } => {
            let Some(vars) = vars else { return };
            match cmd {
                FlowbitsCmd::Set => vars.set_bit(*id, true),
                FlowbitsCmd::Unset => vars.set_bit(*id, false),
                FlowbitsCmd::Toggle => {
                    let on = !vars.bit(*id);
                    vars.set_bit(*id, on)
                }
                _ => {}
            }
        }
        StateAction::Xbit { id, cmd, track, expire_secs } => {
            xbits.apply(xbit_key(*id, *track, hosts), *cmd, *expire_secs, now)
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ThresholdKey {
    /// The rule's (gid, sid) (`CompiledRule::key`).
    rule: u64,
    a: [u8; 16],
    b: [u8; 16],
    flow: u64,
}

#[derive(Clone)]
struct Tracker {
    window_start: u64,
    count: u32,
    /// backoff: count at which the next alert fires.
    next: u32,
    /// `unique_on`: distinct ports seen in the window, at most `count + 1` of them (enough to
    /// know that the filter is exceeded), so memory stays bounded by the rule.
    ports: Vec<u16>,
}

#[derive(Default)]
pub(crate) struct ThresholdTable {
    entries: HashMap<ThresholdKey, Tracker>,
    pub dropped: u64,
}

impl ThresholdTable {
    /// Applies a threshold/detection_filter to one match: true when the alert is to be kept.
    pub(crate) fn allow(&mut self, rule: u64, limit: &AlertLimit, hosts: &Hosts, now: u64) -> bool {
        let (track, count, seconds) = match limit {
            AlertLimit::Threshold(t) => (t.track, t.count, t.seconds),
            AlertLimit::DetectionFilter(d) => (d.track, d.count, d.seconds),
        };
        let mut key = ThresholdKey { rule, a: [0; 16], b: [0; 16], flow: 0 };
        match track {
            Track::BySrc => key.a = hosts.src,
            Track::ByDst => key.a = hosts.dst,
            Track::ByBoth => {
                key.a = hosts.src;
                key.b = hosts.dst;
            }
            Track::ByFlow => key.flow = hosts.flow_id,
            Track::ByRule | Track::ByEither => {}
        }
        let window = seconds as u64 * 1_000_000_000;
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_THRESHOLD_ENTRIES {
            // Prune trackers whose window ended; they would restart anyway.
            self.entries.retain(|_, t| now.saturating_sub(t.window_start) < window.max(1_000_000_000 * 3600));
            if self.entries.len() >= MAX_THRESHOLD_ENTRIES {
                self.dropped += 1;
                return true;
            }
        }
        let fresh = Tracker { window_start: now, count: 0, next: count.max(1), ports: Vec::new() };
        let t = self.entries.entry(key).or_insert_with(|| fresh.clone());
        let expired = seconds > 0 && now.saturating_sub(t.window_start) >= window;
        match limit {
            AlertLimit::DetectionFilter(df) => {
                if expired {
                    *t = fresh;
                }
                match df.unique_on {
                    Some(unique) => {
                        // Count distinct ports, not matches: alert once more than `count`
                        // distinct values were seen in the window.
                        let port = match unique {
                            UniqueOn::SrcPort => hosts.sp,
                            UniqueOn::DstPort => hosts.dp,
                        };
                        if !t.ports.contains(&port) && (t.ports.len() as u64) <= count as u64 {
                            t.ports.push(port);
                        }
                        t.ports.len() as u64 > count as u64
                    }
                    None => {
                        t.count = t.count.saturating_add(1);
                        t.count > count
                    }
                }
            }
            AlertLimit::Threshold(th) => match th.kind {
                ThresholdType::Limit => {
                    if expired {
                        *t = fresh;
                    }
                    t.count = t.count.saturating_add(1);
                    t.count <= count
                }
                ThresholdType::Threshold => {
                    if expired {
                        *t = fresh;
                    }
                    t.count = t.count.saturating_add(1);
                    if t.count >= count {
                        t.count = 0;
                        true
                    } else {
                        false
                    }
                }
                ThresholdType::Both => {
                    if expired {
                        *t = fresh;
                    }
                    t.count = t.count.saturating_add(1);
                    t.count == count
                }
                ThresholdType::Backoff => {
                    // Suricata: the `count`-th match alerts, then the count*m-th, count*m^2-th...
                    let multiplier = th.multiplier.unwrap_or(10).max(2);
                    t.count = t.count.saturating_add(1);
                    if t.count == t.next {
                        t.next = t.next.saturating_mul(multiplier);
                        true
                    } else {
                        false
                    }
                }
            },
        }
    }
}

// Carrying state over to a reloaded engine (`carry.rs`): ids are interned per engine, so
// bits and ints are renamed; trackers are keyed by (gid, sid) and only lose the rules that
// are gone.

impl FlowVars {
    /// Renames every flowbit and flowint id with `bit` / `int`; those without a new id
    /// (no rule of the new engine names them) are dropped.
    pub(crate) fn remap(&mut self, bit: impl Fn(u32) -> Option<u32>, int: impl Fn(u32) -> Option<u32>) {
        self.bits = self.bits.iter().filter_map(|&id| bit(id)).collect();
        self.bits.sort_unstable();
        self.bits.dedup();
        self.ints = self.ints.iter().filter_map(|&(id, v)| int(id).map(|new| (new, v))).collect();
        self.ints.sort_unstable_by_key(|e| e.0);
        self.ints.dedup_by_key(|e| e.0);
    }
}

impl XbitTable {
    /// Renames every xbit id with `map`; bits without a new id are dropped.
    pub(crate) fn remap(&mut self, map: impl Fn(u32) -> Option<u32>) {
        let old = std::mem::take(&mut self.bits);
        self.bits = old.into_iter().filter_map(|(k, exp)| map(k.id).map(|id| (XbitKey { id, ..k }, exp))).collect();
    }

    pub(crate) fn len(&self) -> usize {
        self.bits.len()
    }
}

impl ThresholdTable {
    /// Keeps the trackers of the rules `keep` says still exist (by `CompiledRule::key`).
    pub(crate) fn retain_rules(&mut self, keep: impl Fn(u64) -> bool) {
        self.entries.retain(|k, _| keep(k.rule));
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
