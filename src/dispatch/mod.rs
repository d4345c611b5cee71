//! Dispatch policies: which worker gets a packet. The dispatcher asks the policy once per
//! packet; the policy sees the raw bytes (not a decoded packet) so that it can stay cheap
//! and so that live capture paths which only have raw frames can use it too.

pub mod adaptive;

use crate::packet::LinkType;
use adaptive::IndirectionTable;
use std::fmt;
use std::str::FromStr;

/// Chooses a worker for each packet. Implementations keep their own state (a counter, a
/// random generator) and must be deterministic for a given input so that offline runs
/// produce the same output every time.
pub trait DispatchPolicy: Send {
    fn pick(&mut self, link: LinkType, data: &[u8], workers: usize) -> usize;
    fn name(&self) -> &'static str;

    /// The worker and the dispatch bucket of the packet (see [`adaptive`]); policies
    /// without buckets give bucket 0.
    fn pick_bucket(&mut self, link: LinkType, data: &[u8], workers: usize) -> (usize, u16) {
        (self.pick(link, data, workers), 0)
    }

    /// The bucket table a controller may rewrite, for policies that have one.
    fn table(&mut self) -> Option<&mut IndirectionTable> {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// Symmetric flow hash: both directions of a flow reach the same worker. The only
    /// policy under which flow state and detection are exact.
    Flow,
    RoundRobin,
    Random,
    /// The flow hash through a bucket table that a controller rebalances by measured
    /// load, handing flows over with their buckets: as exact as `Flow`.
    Adaptive,
}

impl FromStr for PolicyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "flow" | "hash" => Ok(PolicyKind::Flow),
            "roundrobin" | "round-robin" | "rr" => Ok(PolicyKind::RoundRobin),
            "random" => Ok(PolicyKind::Random),
            "adaptive" => Ok(PolicyKind::Adaptive),
            other => Err(format!("unknown dispatch policy '{other}' (expected flow, adaptive, roundrobin or random)")),
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyKind::Flow => "flow",
            PolicyKind::RoundRobin => "roundrobin",
            PolicyKind::Random => "random",
            PolicyKind::Adaptive => "adaptive",
        })
    }
}

/// The policy for `workers` workers. `track_vlan` is `vlan.use-for-tracking`: off, the
/// flow hash ignores VLAN ids, as the flow table does.
pub fn make_policy(kind: PolicyKind, workers: usize, track_vlan: bool) -> Box<dyn DispatchPolicy> {
    let hash = FlowHash::new(track_vlan);
    match kind {
        PolicyKind::Adaptive => Box::new(adaptive::Adaptive::new(workers, hash)),
        PolicyKind::Flow => Box::new(hash),
        PolicyKind::RoundRobin => Box::new(RoundRobin::default()),
        PolicyKind::Random => Box::new(Random::with_seed(0x9E37_79B9_7F4A_7C15)),
    }
}

/// The symmetric flow hash ([`crate::decode::flow_hash_with`]) with the decoder's default
/// tunnel ports.
#[derive(Clone)]
pub struct FlowHash {
    opts: crate::decode::DecodeOptions,
}

impl FlowHash {
    pub fn new(track_vlan: bool) -> Self {
        FlowHash { opts: crate::decode::DecodeOptions { track_vlan, ..crate::decode::DecodeOptions::DEFAULT } }
    }

    /// The packet's flow hash.
    #[inline]
    pub fn hash(&self, link: LinkType, data: &[u8]) -> u32 {
        crate::decode::flow_hash_with(link, data, &self.opts)
    }
}

impl DispatchPolicy for FlowHash {
    fn pick(&mut self, link: LinkType, data: &[u8], workers: usize) -> usize {
        // Multiply-shift maps the 32-bit hash onto 0..workers without a division.
        ((self.hash(link, data) as u64 * workers as u64) >> 32) as usize
    }
    fn name(&self) -> &'static str {
        "flow"
    }
}

#[derive(Default)]
pub struct RoundRobin {
    next: usize,
}

impl DispatchPolicy for RoundRobin {
    fn pick(&mut self, _: LinkType, _: &[u8], workers: usize) -> usize {
        let w = self.next % workers;
        self.next = self.next.wrapping_add(1);
        w
    }
    fn name(&self) -> &'static str {
        "roundrobin"
    }
}

/// Uniformly random worker from a fixed-seed xorshift generator: random for load, but
/// reproducible run to run.
pub struct Random {
    state: u64,
}

impl Random {
    pub fn with_seed(seed: u64) -> Self {
        Random { state: seed | 1 }
    }
}

impl DispatchPolicy for Random {
    fn pick(&mut self, _: LinkType, _: &[u8], workers: usize) -> usize {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        (((x >> 32) * workers as u64) >> 32) as usize
    }
    fn name(&self) -> &'static str {
        "random"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_cycles() {
        let mut p = RoundRobin::default();
        let got: Vec<_> = (0..6).map(|_| p.pick(LinkType::Ethernet, &[], 3)).collect();
        assert_eq!(got, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn random_spreads_and_is_reproducible() {
        let mut a = Random::with_seed(7);
        let mut b = Random::with_seed(7);
        let mut hits = [0usize; 4];
        for _ in 0..4000 {
            let w = a.pick(LinkType::Ethernet, &[], 4);
            assert_eq!(w, b.pick(LinkType::Ethernet, &[], 4));
            hits[w] += 1;
        }
        assert!(hits.iter().all(|&h| h > 800), "uneven spread {hits:?}");
    }

    #[test]
    fn policy_names_parse() {
        for k in [PolicyKind::Flow, PolicyKind::RoundRobin, PolicyKind::Random, PolicyKind::Adaptive] {
            assert_eq!(k.to_string().parse::<PolicyKind>().unwrap(), k);
        }
        assert!("bogus".parse::<PolicyKind>().is_err());
    }
}
