//! Detection state: flowbits/flowints (per flow, in `DetectFlow`), xbits and hostbits (in
//! the shared host and ip-pair tables, [`SharedState`]) and thresholds. `by_flow` thresholds
//! live in the worker (a flow stays on one worker); host-, pair- and rule-tracked thresholds
//! and all xbits live in tables shared by all workers, because with flow-hash dispatch a
//! host's flows land on several workers. The tables are lock-striped and expire rows
//! incrementally (`tables.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use super::compile::{AlertLimit, FlowintValue, LimitOutcome, StateAction, StateCheck};
use super::tables::{Row, StateTable, TableConfig, Tracker};
use crate::detect::rule::options::{FlowbitsCmd, FlowintOp, ThresholdType, Track, UniqueOn, XbitsTrack};

/// `by_flow` trackers per worker: rows are flows; picket's own bound (Suricata keeps them
/// in flow storage, bounded by the flow memcap).
pub(crate) const FLOW_TRACKERS: TableConfig = TableConfig { hash_size: 256, prealloc: 0, memcap: 16 * 1024 * 1024 };

/// Flow-scoped variables, kept sorted by id.
#[derive(Clone, Debug, Default)]
pub struct FlowVars {
    pub(crate) bits: Vec<u32>,
    pub(crate) ints: Vec<(u32, u32)>,
    /// The last `entropy` value per buffer (`None`: payload / stream). Bounded by the
    /// buffers the rules name (a static set), so it needs no limit of its own.
    pub(crate) entropy: Vec<(Option<crate::detect::rule::buffers::Buffer>, f64)>,
}

impl FlowVars {
    /// Heap the flow's flowbits and flowints hold (allocated capacity), charged to
    /// `flow.memcap` with the flow's other per-flow state. Empty vars allocate nothing.
    pub fn heap_bytes(&self) -> u64 {
        (self.bits.capacity() * std::mem::size_of::<u32>()
            + self.ints.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.entropy.capacity() * std::mem::size_of::<(Option<crate::detect::rule::buffers::Buffer>, f64)>())
            as u64
    }

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

    pub(crate) fn set_entropy(&mut self, buffer: Option<crate::detect::rule::buffers::Buffer>, value: f64) {
        match self.entropy.iter_mut().find(|e| e.0 == buffer) {
            Some(slot) => slot.1 = value,
            None => self.entropy.push((buffer, value)),
        }
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

/// An xbit's name as stored in the shared tables: a hash of the name, not the per-engine
/// interned id, so that during a rule reload workers on the old and on the new engine
/// see the same bits.
pub(crate) fn xbit_name_key(name: &str) -> u64 {
    // FNV-1a, 64 bits: stable across runs and engines.
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// State shared by all workers and carried over a rule reload (the engine holds it in an
/// `Arc`): Suricata's host table, ip-pair table and the rule-tracked thresholds.
pub(crate) struct SharedState {
    /// by_src / by_dst thresholds, xbits `track ip_src|ip_dst`, hostbits.
    pub hosts: StateTable<[u8; 16]>,
    /// by_both thresholds and xbits `track ip_pair`, both keyed by the unordered pair.
    pub pairs: StateTable<([u8; 16], [u8; 16])>,
    /// by_rule / by_either thresholds: one tracker per rule, bounded by the rule set.
    pub rules: Mutex<HashMap<u64, Tracker>>,
}

impl SharedState {
    pub(crate) fn new(host: TableConfig, ippair: TableConfig) -> Self {
        SharedState { hosts: StateTable::new(host), pairs: StateTable::new(ippair), rules: Mutex::new(HashMap::new()) }
    }

    fn bit(&self, name: u64, track: XbitsTrack, h: &Hosts, now: u64) -> bool {
        let is_set = |row: Option<&mut Row>| row.is_some_and(|r| r.bits.iter().any(|&(n, _)| n == name));
        match track {
            XbitsTrack::IpSrc => self.hosts.with_row(h.src, now, false, is_set),
            XbitsTrack::IpDst => self.hosts.with_row(h.dst, now, false, is_set),
            _ => self.pairs.with_row(unordered(h), now, false, is_set),
        }
    }

    fn apply_bit(&self, name: u64, cmd: FlowbitsCmd, track: XbitsTrack, expire_secs: u32, h: &Hosts, now: u64) {
        let expiry = if expire_secs == 0 { u64::MAX } else { now.saturating_add(expire_secs as u64 * 1_000_000_000) };
        // Unset never creates a row; set and toggle may (toggle of a missing bit sets it).
        let create = cmd != FlowbitsCmd::Unset;
        let update = |row: Option<&mut Row>| {
            let Some(row) = row else { return };
            let pos = row.bits.iter().position(|&(n, _)| n == name);
            let set = match cmd {
                FlowbitsCmd::Set => true,
                FlowbitsCmd::Unset => false,
                FlowbitsCmd::Toggle => pos.is_none(),
                _ => return,
            };
            match (pos, set) {
                (Some(i), true) => row.bits[i].1 = expiry,
                (None, true) => {
                    // Rows mostly hold one entry: no spare capacity to charge.
                    row.bits.reserve_exact(1);
                    row.bits.push((name, expiry))
                }
                (Some(i), false) => {
                    row.bits.swap_remove(i);
                }
                (None, false) => {}
            }
        };
        match track {
            XbitsTrack::IpSrc => self.hosts.with_row(h.src, now, create, update),
            XbitsTrack::IpDst => self.hosts.with_row(h.dst, now, create, update),
            _ => self.pairs.with_row(unordered(h), now, create, update),
        }
    }

    /// Applies a host-, pair- or rule-tracked threshold/detection_filter to one match: true
    /// when the alert is to be kept.
    pub(crate) fn allow(&self, rule: u64, limit: &AlertLimit, hosts: &Hosts, now: u64) -> LimitOutcome {
        let decide = |row: Option<&mut Row>| decide_in_row(row, rule, limit, hosts, now);
        match limit.track() {
            Track::BySrc => self.hosts.with_row(hosts.src, now, true, decide),
            Track::ByDst => self.hosts.with_row(hosts.dst, now, true, decide),
            // Suricata keys a by_both tracker by the pair, lower address first: both
            // directions count together.
            Track::ByBoth => self.pairs.with_row(unordered(hosts), now, true, decide),
            _ => {
                let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
                let t = rules.entry(rule).or_insert_with(|| fresh_tracker(limit, now));
                if t.expires <= now {
                    *t = fresh_tracker(limit, now);
                }
                decide_tracker(t, limit, hosts, now)
            }
        }
    }
}

/// An ip pair is the same in both directions.
fn unordered(h: &Hosts) -> ([u8; 16], [u8; 16]) {
    if h.src <= h.dst {
        (h.src, h.dst)
    } else {
        (h.dst, h.src)
    }
}

fn flowint_operand(vars: &FlowVars, v: Option<FlowintValue>) -> Option<u32> {
    match v? {
        FlowintValue::Num(n) => Some(n),
        FlowintValue::Flowint(id) => vars.int(id),
    }
}

/// `xbits` maps an xbit's interned id to its name key ([`xbit_name_key`]).
pub(crate) fn check(
    c: &StateCheck,
    vars: Option<&mut FlowVars>,
    shared: &SharedState,
    xbits: &[u64],
    hosts: &Hosts,
    now: u64,
) -> bool {
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
        StateCheck::Xbit { id, track, want_set } => match xbits.get(*id as usize) {
            Some(&name) => shared.bit(name, *track, hosts, now) == *want_set,
            None => false,
        },
    }
}

pub(crate) fn apply(
    a: &StateAction,
    vars: Option<&mut FlowVars>,
    shared: &SharedState,
    xbits: &[u64],
    hosts: &Hosts,
    now: u64,
) {
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
            if let Some(&name) = xbits.get(*id as usize) {
                shared.apply_bit(name, *cmd, *track, *expire_secs, hosts, now)
            }
        }
    }
}

fn fresh_tracker(limit: &AlertLimit, now: u64) -> Tracker {
    let count = match limit {
        AlertLimit::Threshold(t) => t.count,
        AlertLimit::DetectionFilter(d) => d.count,
        AlertLimit::RateFilter(r) => r.count,
    };
    let mut t = Tracker {
        window_start: now,
        count: 0,
        next: count.max(1),
        ports: Vec::new(),
        expires: u64::MAX,
        rate_since: u64::MAX,
    };
    t.expires = tracker_expiry(&t, limit);
    t
}

const NANOS: u64 = 1_000_000_000;

/// When a tracker would restart anyway: the end of its window, except for backoff (which
/// never restarts) and windows of 0 seconds (count forever); a rate_filter whose new action
/// is on lives until its timeout has passed. Dropping it then changes nothing, which is
/// what lets the tables expire rows.
fn tracker_expiry(t: &Tracker, limit: &AlertLimit) -> u64 {
    let (seconds, backoff) = match limit {
        AlertLimit::Threshold(th) => (th.seconds, th.kind == ThresholdType::Backoff),
        AlertLimit::DetectionFilter(d) => (d.seconds, false),
        AlertLimit::RateFilter(r) if t.rate_since != u64::MAX => {
            // Suricata ends the new action once whole seconds since it began exceed
            // `timeout`.
            let end = (t.rate_since / NANOS).saturating_add(u64::from(r.timeout) + 1).saturating_mul(NANOS);
            return end.max(t.window_start.saturating_add(u64::from(r.seconds) * NANOS));
        }
        AlertLimit::RateFilter(r) => (r.seconds, false),
    };
    if seconds == 0 || backoff {
        u64::MAX
    } else {
        t.window_start.saturating_add(seconds as u64 * NANOS)
    }
}

/// Finds (or starts) the rule's tracker in `row` and decides. Without a row (its table had
/// no room, counted there) the match is judged on a fresh tracker that is not kept.
fn decide_in_row(row: Option<&mut Row>, rule: u64, limit: &AlertLimit, hosts: &Hosts, now: u64) -> LimitOutcome {
    let Some(row) = row else {
        return decide_tracker(&mut fresh_tracker(limit, now), limit, hosts, now);
    };
    let i = match row.trackers.iter().position(|(r, _)| *r == rule) {
        Some(i) => i,
        None => {
            row.trackers.reserve_exact(1);
            row.trackers.push((rule, fresh_tracker(limit, now)));
            row.trackers.len() - 1
        }
    };
    decide_tracker(&mut row.trackers[i].1, limit, hosts, now)
}

/// The per-match logic of thresholds, detection_filters and rate_filters, with Suricata's
/// outcomes: below a threshold or detection_filter nothing happens (not even the rule's
/// action); past a `limit` or `both` count, and between backoff alerts, the match is silent
/// but the rule still acts. The tables have already dropped a tracker whose window ended,
/// so `t` is within its window (or fresh).
fn decide_tracker(t: &mut Tracker, limit: &AlertLimit, hosts: &Hosts, now: u64) -> LimitOutcome {
    use LimitOutcome::{Alert, Rate, Silent, Skip};
    let alert_or = |hit: bool, otherwise: LimitOutcome| if hit { Alert } else { otherwise };
    let outcome = match limit {
        AlertLimit::DetectionFilter(df) => match df.unique_on {
            Some(unique) => {
                // Count distinct ports, not matches: alert once more than `count`
                // distinct values were seen in the window.
                let port = match unique {
                    UniqueOn::SrcPort => hosts.sp,
                    UniqueOn::DstPort => hosts.dp,
                };
                if !t.ports.contains(&port) && (t.ports.len() as u64) <= df.count as u64 {
                    t.ports.push(port);
                }
                alert_or(t.ports.len() as u64 > df.count as u64, Skip)
            }
            None => {
                t.count = t.count.saturating_add(1);
                alert_or(t.count > df.count, Skip)
            }
        },
        AlertLimit::Threshold(th) => match th.kind {
            ThresholdType::Limit => {
                t.count = t.count.saturating_add(1);
                alert_or(t.count <= th.count, Silent)
            }
            ThresholdType::Threshold => {
                t.count = t.count.saturating_add(1);
                if t.count >= th.count {
                    t.count = 0;
                    Alert
                } else {
                    Skip
                }
            }
            ThresholdType::Both => {
                t.count = t.count.saturating_add(1);
                match t.count.cmp(&th.count) {
                    std::cmp::Ordering::Less => Skip,
                    std::cmp::Ordering::Equal => Alert,
                    std::cmp::Ordering::Greater => Silent,
                }
            }
            ThresholdType::Backoff => {
                // Suricata: the `count`-th match alerts, then the count*m-th, count*m^2-th...
                // Matches in between are silent, except the very first (Suricata's new
                // tracker entry, which neither alerts nor acts below its count).
                let multiplier = th.multiplier.unwrap_or(10).max(2);
                t.count = t.count.saturating_add(1);
                if t.count == t.next {
                    t.next = t.next.saturating_mul(multiplier);
                    Alert
                } else if t.count == 1 {
                    Skip
                } else {
                    Silent
                }
            }
        },
        AlertLimit::RateFilter(r) => {
            if t.rate_since != u64::MAX {
                // The new action holds until more than `timeout` whole seconds have passed
                // since it began; the match that finds it over acts as its rule says.
                if (now / NANOS).saturating_sub(t.rate_since / NANOS) > u64::from(r.timeout) {
                    t.rate_since = u64::MAX;
                    Alert
                } else {
                    Rate(r.new_action)
                }
            } else {
                t.count = t.count.saturating_add(1);
                if t.count > r.count {
                    t.rate_since = now;
                    Rate(r.new_action)
                } else {
                    Alert
                }
            }
        }
    };
    t.expires = tracker_expiry(t, limit);
    outcome
}

/// `by_flow` trackers of one worker, keyed by flow id.
pub(crate) struct FlowTrackers {
    pub table: StateTable<u64>,
}

impl Default for FlowTrackers {
    fn default() -> Self {
        FlowTrackers { table: StateTable::new(FLOW_TRACKERS) }
    }
}

impl FlowTrackers {
    pub(crate) fn allow(&self, rule: u64, limit: &AlertLimit, hosts: &Hosts, now: u64) -> LimitOutcome {
        self.table.with_row(hosts.flow_id, now, true, |row| decide_in_row(row, rule, limit, hosts, now))
    }
}

// Carrying state over to a reloaded engine (`carry.rs`): flowbit and flowint ids are interned
// per engine, so they are renamed; xbits are keyed by a hash of their name and trackers by
// (gid, sid), so both only lose what the new rule set no longer names.

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

impl SharedState {
    /// Keeps the trackers of the rules `keep_rule` says still exist (by `CompiledRule::key`)
    /// and the xbits whose name key `keep_bit` accepts. O(table): once per reload.
    pub(crate) fn retain(&self, keep_rule: impl Fn(u64) -> bool, keep_bit: impl Fn(u64) -> bool) {
        let mut prune = |row: &mut Row| {
            row.trackers.retain(|(r, _)| keep_rule(*r));
            row.bits.retain(|(n, _)| keep_bit(*n));
        };
        self.hosts.for_each_row(&mut prune);
        self.pairs.for_each_row(&mut prune);
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).retain(|r, _| keep_rule(*r));
    }

    /// (xbits, trackers) held, for tests and reload reports. O(table).
    pub(crate) fn entries(&self) -> (usize, usize) {
        let (hb, ht) = self.hosts.entries();
        let (pb, pt) = self.pairs.entries();
        (hb + pb, ht + pt + self.rules.lock().unwrap_or_else(|e| e.into_inner()).len())
    }
}

impl FlowTrackers {
    /// Keeps the trackers of the rules `keep` says still exist.
    pub(crate) fn retain_rules(&self, keep: impl Fn(u64) -> bool) {
        self.table.for_each_row(|row| row.trackers.retain(|(r, _)| keep(*r)));
    }

    pub(crate) fn len(&self) -> usize {
        self.table.entries().1
    }
}
