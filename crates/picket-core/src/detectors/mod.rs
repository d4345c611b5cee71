//! Plug-in detectors beside the rules: per-worker tallies of decoded packets and flow
//! events, merged across workers (so a flood spread over them is still seen) and
//! evaluated once per window into findings (eve alerts) and actions (block a source,
//! turn SYN cookies on or off for a destination) that the DDoS controller
//! (`src/ddos/controller.rs`) carries out in the XDP maps.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | facts, tallies, the [`Detector`] and [`Evaluate`] traits, [`Detectors`] (a worker's set), settings |
//! | `syn_flood.rs` | SYN rate per destination addr:port against completed handshakes → SYN cookies |
//! | `port_scan.rs` | distinct destination ports/hosts per source → block the source |
//! | `udp_reflection.rs` | UDP response floods from amplifier ports to one destination → block the reflectors |
//! | `icmp_flood.rs` | ICMP rate per destination → block the top sources |
//!
//! Split of work: the worker side ([`Detector`]) only counts, with bounded tables (a key
//! cap per window, counted in `keys_refused`; a member cap per key); the controller side
//! ([`Evaluate`]) holds the state across windows (what is active, when to withdraw).
//! Nothing here allocates per packet: a key's row is created once per window.
//!
//! A finding's source inside the never-block set (the capture interfaces' own addresses
//! and `ddos.detectors.allow`) is alerted but never acted on: a detector never blocks
//! the protected server's own replies.
//!
//! Signatures: gid [`GID`], one sid per detector ([`Kind::sid`]).

pub mod icmp_flood;
pub mod port_scan;
pub mod syn_flood;
pub mod udp_reflection;

use crate::packet::Timestamp;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Generator id of every detector alert (the rules use gid 1; decoder events 1 too).
pub const GID: u32 = 9;
/// eve `alert.category` of every detector alert (Suricata's classification name).
pub const CATEGORY: &str = "Attempted Denial of Service";
/// eve `alert.severity` of detector alerts.
pub const SEVERITY: u8 = 2;

/// Protocol numbers the detectors look at.
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

/// TCP flag bits.
pub const TCP_SYN: u8 = 0x02;
pub const TCP_ACK: u8 = 0x10;

/// The built-in detectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    SynFlood,
    PortScan,
    UdpReflection,
    IcmpFlood,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::SynFlood, Kind::PortScan, Kind::UdpReflection, Kind::IcmpFlood];

    /// The YAML key (`ddos.detectors.<name>`) and counter name (`picket.ddos.<name>.*`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::SynFlood => "syn_flood",
            Kind::PortScan => "port_scan",
            Kind::UdpReflection => "udp_reflection",
            Kind::IcmpFlood => "icmp_flood",
        }
    }

    /// Signature id under [`GID`].
    pub fn sid(self) -> u32 {
        match self {
            Kind::SynFlood => 9_000_001,
            Kind::PortScan => 9_000_002,
            Kind::UdpReflection => 9_000_003,
            Kind::IcmpFlood => 9_000_004,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What a detector learns of one decoded packet. Built once per packet, on the stack.
#[derive(Clone, Copy, Debug)]
pub struct PacketFacts {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// TCP/UDP ports; ICMP: type and code.
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    /// TCP flags byte (0 for other protocols).
    pub tcp_flags: u8,
    /// Bytes on the wire.
    pub len: u32,
    /// From the flow's client to its server, when a flow is known.
    pub to_server: Option<bool>,
    pub ts: Timestamp,
}

/// Flow events the detectors see.
#[derive(Clone, Copy, Debug)]
pub enum FlowEvent {
    /// A TCP flow reached established (three-way handshake, or midstream pickup).
    HandshakeDone { client: (IpAddr, u16), server: (IpAddr, u16) },
    /// A flow ended (timeout, shutdown, eviction).
    Ended { client: (IpAddr, u16), server: (IpAddr, u16), proto: u8, packets: u64, bytes: u64 },
}

/// A tally row's key: an address and a port (0 where the detector keys on the address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub addr: IpAddr,
    pub port: u16,
}

/// One distinct peer of a row (a source, or a destination addr:port) with its packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub addr: IpAddr,
    pub port: u16,
    pub packets: u64,
}

/// What one key accumulated in a window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub packets: u64,
    pub bytes: u64,
    /// SYN flood: completed handshakes to the key.
    pub handshakes: u64,
    /// Distinct peers, at most the detector's member cap.
    pub members: Vec<Member>,
    /// Peers not recorded because `members` was full.
    pub members_refused: u64,
}

impl Row {
    /// Counts a packet of `addr:port` among the members; refused (counted) past `cap`.
    pub fn add_member(&mut self, addr: IpAddr, port: u16, packets: u64, cap: usize) {
        if let Some(m) = self.members.iter_mut().find(|m| m.addr == addr && m.port == port) {
            m.packets += packets;
        } else if self.members.len() < cap {
            self.members.push(Member { addr, port, packets });
        } else {
            self.members_refused += packets;
        }
    }

    /// The members with the most packets first.
    pub fn top_members(&self) -> Vec<Member> {
        let mut m = self.members.clone();
        m.sort_by(|a, b| b.packets.cmp(&a.packets).then(a.addr.cmp(&b.addr)));
        m
    }
}

/// One detector's counts over a window, on one worker or merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub rows: HashMap<Key, Row>,
    /// Packets whose key was not recorded because the table held `max-keys` keys.
    pub keys_refused: u64,
}

impl Tally {
    /// The row of `key`, created if the table has room; `None` (counted) when full.
    pub fn row(&mut self, key: Key, max_keys: usize) -> Option<&mut Row> {
        if !self.rows.contains_key(&key) && self.rows.len() >= max_keys {
            self.keys_refused += 1;
            return None;
        }
        Some(self.rows.entry(key).or_default())
    }

    /// Adds `other` (another worker's tally) into this one, within the same caps.
    pub fn merge(&mut self, other: &Tally, max_keys: usize, member_cap: usize) {
        self.keys_refused += other.keys_refused;
        for (key, theirs) in &other.rows {
            let Some(row) = self.row(*key, max_keys) else {
                self.keys_refused += theirs.packets.saturating_sub(1);
                continue;
            };
            row.packets += theirs.packets;
            row.bytes += theirs.bytes;
            row.handshakes += theirs.handshakes;
            row.members_refused += theirs.members_refused;
            for m in &theirs.members {
                row.add_member(m.addr, m.port, m.packets, member_cap);
            }
        }
    }

    /// Moves the counts out, leaving this tally empty (keeping its capacity).
    pub fn take(&mut self) -> Tally {
        let out = Tally { rows: self.rows.clone(), keys_refused: self.keys_refused };
        self.rows.clear();
        self.keys_refused = 0;
        out
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.keys_refused == 0
    }
}

/// The worker side of a detector: counts what it sees into its tally.
pub trait Detector: Send {
    fn kind(&self) -> Kind;
    fn packet(&mut self, p: &PacketFacts);
    fn flow_event(&mut self, _e: &FlowEvent) {}
    /// The tally since the last call; the detector starts a new one.
    fn take_tally(&mut self) -> Tally;
}

/// An IP prefix (`10.0.0.0/8`, `2001:db8::/32`, or one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    /// The address alone (/32 or /128).
    pub fn host(addr: IpAddr) -> Prefix {
        Prefix { addr, len: if addr.is_ipv4() { 32 } else { 128 } }
    }

    /// `addr` with its bits past `len` cleared (`len` clamped to the family's width).
    pub fn new(addr: IpAddr, len: u8) -> Prefix {
        match addr {
            IpAddr::V4(a) => {
                let len = len.min(32);
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                Prefix { addr: IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask)), len }
            }
            IpAddr::V6(a) => {
                let len = len.min(128);
                let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
                Prefix { addr: IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask)), len }
            }
        }
    }

    /// Parses `A.B.C.D[/N]` or `X::Y[/N]`; the error names the text and what is wrong.
    pub fn parse(text: &str) -> Result<Prefix, String> {
        let text = text.trim();
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| format!("'{text}' is not an IP address or prefix"))?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => width,
            Some(l) => match l.parse::<u8>() {
                Ok(n) if n <= width => n,
                _ => return Err(format!("'{text}': prefix length must be 0-{width}")),
            },
        };
        Ok(Prefix::new(addr, len))
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        let mapped = match (self.addr, addr) {
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4),
            _ => Some(addr),
        };
        match mapped {
            Some(a) if a.is_ipv4() == self.addr.is_ipv4() => Prefix::new(a, self.len).addr == self.addr,
            _ => false,
        }
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Addresses no detector acts against (alerts still go out).
#[derive(Clone, Debug, Default)]
pub struct NeverBlock {
    pub prefixes: Vec<Prefix>,
}

impl NeverBlock {
    pub fn contains(&self, addr: IpAddr) -> bool {
        self.prefixes.iter().any(|p| p.contains(addr))
    }
}

/// What a finding asks the XDP layer to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Drop packets from `prefix` for `ttl_secs`.
    Block { prefix: Prefix, ttl_secs: u64 },
    /// Answer SYNs to `addr:port` with SYN cookies.
    Protect { addr: IpAddr, port: u16 },
    /// The flood to `addr:port` ended: SYN cookies off again.
    Unprotect { addr: IpAddr, port: u16 },
}

/// One detection: an eve alert, and what to do about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    /// "picket SYN flood to 10.0.0.2:80".
    pub signature: String,
    pub proto: u8,
    /// The attack's source (the scanner, a reflector, the top ICMP source), if one is known.
    pub src: Option<(IpAddr, u16)>,
    pub dst: Option<(IpAddr, u16)>,
    /// Packets per second over the window, and the figure the detector compared.
    pub rate: u64,
    /// Actions to carry out (empty when the source is in the never-block set or the
    /// detector's `block` is off).
    pub actions: Vec<Action>,
    /// The source was in the never-block set: alerted only.
    pub spared: bool,
}

/// What an evaluation sees besides the merged tally.
pub struct EvalContext<'a> {
    /// Seconds on a monotonic clock (the controller's).
    pub now_secs: u64,
    /// Length of the window the tally covers, in seconds (≥ 1).
    pub window_secs: u64,
    pub never_block: &'a NeverBlock,
    /// SYN cookies: SYNs the kernel answered per protected destination since the last
    /// evaluation (ProtectVal.syns deltas), which user space no longer sees.
    pub kernel_syns: &'a HashMap<(IpAddr, u16), u64>,
}

/// The controller side of a detector: state across windows, findings and withdrawals.
pub trait Evaluate: Send {
    fn kind(&self) -> Kind;
    /// The window (seconds) this detector's tallies are summed over before evaluating.
    fn window_secs(&self) -> u64;
    /// Merge cap parameters.
    fn caps(&self) -> (usize, usize);
    /// Evaluates one window's merged tally.
    fn evaluate(&mut self, tally: &Tally, ctx: &EvalContext<'_>) -> Vec<Finding>;
    /// Destinations currently protected by SYN cookies (SYN flood only).
    fn protected(&self) -> usize {
        0
    }
}

/// Settings shared by the detectors.
#[derive(Clone, Debug, PartialEq)]
pub struct CommonSettings {
    /// Keys (destinations or sources) per detector and window on each worker, and merged.
    pub max_keys: usize,
    /// Seconds a block lasts (`ddos.blocklist.block-time`).
    pub block_time: u64,
    /// Most sources one finding blocks.
    pub max_blocks: usize,
}

impl Default for CommonSettings {
    fn default() -> Self {
        CommonSettings { max_keys: 10_000, block_time: 60, max_blocks: 16 }
    }
}

/// All detector settings (`ddos.detectors`), shared by the workers and the controller.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DetectorSettings {
    pub common: CommonSettings,
    pub syn_flood: syn_flood::SynFloodSettings,
    pub port_scan: port_scan::PortScanSettings,
    pub udp_reflection: udp_reflection::UdpReflectionSettings,
    pub icmp_flood: icmp_flood::IcmpFloodSettings,
    /// `ddos.detectors.allow`: prefixes never acted against (besides the interfaces' own).
    pub allow: Vec<Prefix>,
}

impl DetectorSettings {
    /// One worker's detectors, for those enabled.
    pub fn worker_set(&self) -> Detectors {
        let max_keys = self.common.max_keys;
        let mut list: Vec<Box<dyn Detector>> = Vec::new();
        if self.syn_flood.enabled {
            list.push(Box::new(syn_flood::SynFloodCounter::new(max_keys)));
        }
        if self.port_scan.enabled {
            list.push(Box::new(port_scan::PortScanCounter::new(max_keys, self.port_scan.member_cap())));
        }
        if self.udp_reflection.enabled {
            list.push(Box::new(udp_reflection::UdpReflectionCounter::new(&self.udp_reflection, max_keys)));
        }
        if self.icmp_flood.enabled {
            list.push(Box::new(icmp_flood::IcmpFloodCounter::new(max_keys)));
        }
        Detectors { list }
    }

    /// The controller's evaluators, for those enabled.
    pub fn evaluators(&self) -> Vec<Box<dyn Evaluate>> {
        let c = &self.common;
        let mut out: Vec<Box<dyn Evaluate>> = Vec::new();
        if self.syn_flood.enabled {
            out.push(Box::new(syn_flood::SynFloodEval::new(self.syn_flood.clone(), c.clone())));
        }
        if self.port_scan.enabled {
            out.push(Box::new(port_scan::PortScanEval::new(self.port_scan.clone(), c.clone())));
        }
        if self.udp_reflection.enabled {
            out.push(Box::new(udp_reflection::UdpReflectionEval::new(self.udp_reflection.clone(), c.clone())));
        }
        if self.icmp_flood.enabled {
            out.push(Box::new(icmp_flood::IcmpFloodEval::new(self.icmp_flood.clone(), c.clone())));
        }
        out
    }

    pub fn any_enabled(&self) -> bool {
        self.syn_flood.enabled || self.port_scan.enabled || self.udp_reflection.enabled || self.icmp_flood.enabled
    }
}

/// A worker's detectors; the inspector feeds them.
#[derive(Default)]
pub struct Detectors {
    list: Vec<Box<dyn Detector>>,
}

/// One worker's tallies for one tick, sent to the controller.
#[derive(Clone, Debug, Default)]
pub struct Tallies {
    pub tallies: Vec<(Kind, Tally)>,
}

impl Tallies {
    pub fn is_empty(&self) -> bool {
        self.tallies.iter().all(|(_, t)| t.is_empty())
    }
}

impl Detectors {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn packet(&mut self, p: &PacketFacts) {
        for d in &mut self.list {
            d.packet(p);
        }
    }

    pub fn flow_event(&mut self, e: &FlowEvent) {
        for d in &mut self.list {
            d.flow_event(e);
        }
    }

    pub fn take_tallies(&mut self) -> Tallies {
        Tallies { tallies: self.list.iter_mut().map(|d| (d.kind(), d.take_tally())).collect() }
    }
}

/// Sums workers' tallies per detector over a detector's window, then evaluates: the
/// controller's sans-IO part (it adds the clock, the kernel counts and the actions).
pub struct Evaluator {
    evals: Vec<Box<dyn Evaluate>>,
    /// Per evaluator: the window being summed and the seconds it has covered.
    windows: Vec<(Tally, u64)>,
    /// Keys refused (workers' and merge's) per detector, running total.
    pub keys_refused: [u64; 4],
    /// Findings per detector, running total.
    pub findings: [u64; 4],
}

impl Evaluator {
    pub fn new(settings: &DetectorSettings) -> Evaluator {
        let evals = settings.evaluators();
        let windows = evals.iter().map(|_| (Tally::default(), 0)).collect();
        Evaluator { evals, windows, keys_refused: [0; 4], findings: [0; 4] }
    }

    /// Adds one worker's tallies to the open windows.
    pub fn add(&mut self, tallies: &Tallies) {
        for (kind, tally) in &tallies.tallies {
            if let Some(i) = self.evals.iter().position(|e| e.kind() == *kind) {
                let (max_keys, member_cap) = self.evals[i].caps();
                let before = self.windows[i].0.keys_refused;
                self.windows[i].0.merge(tally, max_keys, member_cap);
                self.keys_refused[kind.index()] += self.windows[i].0.keys_refused - before;
            }
        }
    }

    /// One second passed: windows that are complete are evaluated and reset.
    pub fn second(
        &mut self,
        now_secs: u64,
        never_block: &NeverBlock,
        kernel_syns: &HashMap<(IpAddr, u16), u64>,
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        for (eval, (tally, secs)) in self.evals.iter_mut().zip(self.windows.iter_mut()) {
            *secs += 1;
            if *secs < eval.window_secs() {
                continue;
            }
            let ctx = EvalContext { now_secs, window_secs: *secs, never_block, kernel_syns };
            let found = eval.evaluate(tally, &ctx);
            self.findings[eval.kind().index()] += found.iter().filter(|f| !f.signature.is_empty()).count() as u64;
            out.extend(found);
            *tally = Tally::default();
            *secs = 0;
        }
        out
    }

    /// Destinations under SYN cookies right now.
    pub fn protected(&self) -> usize {
        self.evals.iter().map(|e| e.protected()).sum()
    }

    pub fn kinds(&self) -> Vec<Kind> {
        self.evals.iter().map(|e| e.kind()).collect()
    }
}

/// Remembers what was acted on until a deadline, so a continuing attack is alerted and
/// acted on once per block, not once per window. Bounded: past `cap` the oldest goes.
#[derive(Clone, Debug, Default)]
pub struct Cooldown {
    until: HashMap<IpAddr, u64>,
    cap: usize,
}

impl Cooldown {
    pub fn new(cap: usize) -> Cooldown {
        Cooldown { until: HashMap::new(), cap: cap.max(1) }
    }

    /// Whether `addr` is still cooling down at `now`.
    pub fn active(&self, addr: IpAddr, now: u64) -> bool {
        self.until.get(&addr).is_some_and(|&u| u > now)
    }

    pub fn start(&mut self, addr: IpAddr, now: u64, secs: u64) {
        self.until.retain(|_, u| *u > now);
        if self.until.len() >= self.cap {
            if let Some(oldest) = self.until.iter().min_by_key(|(_, u)| **u).map(|(a, _)| *a) {
                self.until.remove(&oldest);
            }
        }
        self.until.insert(addr, now + secs);
    }
}

/// "10.0.0.2:80", "[2001:db8::1]:80".
pub fn endpoint(addr: IpAddr, port: u16) -> String {
    match addr {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

/// What a flood detector does about a flooded destination's sources (`row`): the heavy
/// ones (a tenth of its packets or more, not already cooling down) are blocked with the
/// given prefix lengths when `block` is set, or only reported; each starts its cool-down.
/// Returns the heaviest source, the actions and whether a source was spared (never-block
/// set), or `None` when no source is heavy enough to act on.
pub fn act_on_heavy_sources(
    row: &Row,
    recent: &mut Cooldown,
    ctx: &EvalContext<'_>,
    common: &CommonSettings,
    block: bool,
    (prefix_v4, prefix_v6): (u8, u8),
) -> Option<(Member, Vec<Action>, bool)> {
    let heavy: Vec<Member> = row
        .top_members()
        .into_iter()
        .filter(|m| m.packets * 10 >= row.packets && !recent.active(m.addr, ctx.now_secs))
        .collect();
    let top = heavy.first().copied()?;
    let (actions, spared) = if block {
        block_sources(&heavy, ctx.never_block, common, prefix_v4, prefix_v6)
    } else {
        (Vec::new(), heavy.iter().any(|m| ctx.never_block.contains(m.addr)))
    };
    for m in &heavy {
        recent.start(m.addr, ctx.now_secs, common.block_time);
    }
    Some((top, actions, spared))
}

/// Blocks for the sources of `members` (most packets first) that may be blocked: at
/// most `max_blocks`, none in the never-block set. Returns the actions and whether a
/// source was spared.
pub fn block_sources(
    members: &[Member],
    never_block: &NeverBlock,
    common: &CommonSettings,
    prefix_v4: u8,
    prefix_v6: u8,
) -> (Vec<Action>, bool) {
    let mut actions: Vec<Action> = Vec::new();
    let mut spared = false;
    for m in members {
        if actions.len() >= common.max_blocks {
            break;
        }
        if never_block.contains(m.addr) {
            spared = true;
            continue;
        }
        let len = if m.addr.is_ipv4() { prefix_v4 } else { prefix_v6 };
        let prefix = Prefix::new(m.addr, len);
        let action = Action::Block { prefix, ttl_secs: common.block_time };
        if !actions.contains(&action) {
            actions.push(action);
        }
    }
    (actions, spared)
}

#[cfg(test)]
mod tests;
