//! Which traffic the loaded rules can ever match, from their headers alone: the TCP and UDP
//! ports, and whether ICMP or other IP protocols matter. picket's XDP layer passes the
//! rest to the kernel without handing it to picket ("pass-through", `src/ddos/passthrough.rs`).
//!
//! Conservative by construction (a packet left out here is never inspected):
//! - an IP rule (`ip`, `ipv4`, `ipv6`, `pkthdr`: IP-only rules among them) makes every
//!   protocol fully interesting;
//! - a rule on an application protocol (`alert http ...`, or app-layer buffers) makes its
//!   transports fully interesting: protocols are recognised on any port;
//! - otherwise a TCP/UDP rule adds the ports of one side: a packet of a flow the rule can
//!   match has, in one direction or the other, that side's port as its source or its
//!   destination, which is what the XDP program checks. With `any` on both sides the
//!   transport is fully interesting. Port variables and negations are already resolved
//!   into the rule's port ranges.
//! - rules that can never match (unsupported keywords) add nothing.

use super::compile::{CompiledRule, ProtoMatch};
use super::DetectEngine;
use crate::detect::rule::PortSet;

/// Number of TCP (or UDP) ports.
pub const PORTS: usize = 1 << 16;

/// One transport's interesting ports.
#[derive(Clone, PartialEq, Eq)]
pub struct PortInterest {
    /// Every port (and port-less fragments, which the XDP program always inspects).
    pub all: bool,
    /// Indexed by port; meaningful when `all` is false.
    ports: Vec<bool>,
}

impl std::fmt::Debug for PortInterest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.all {
            return f.write_str("all");
        }
        let list: Vec<u16> = (0..PORTS).filter(|&p| self.ports[p]).map(|p| p as u16).collect();
        write!(f, "{list:?}")
    }
}

impl Default for PortInterest {
    fn default() -> Self {
        PortInterest { all: false, ports: vec![false; PORTS] }
    }
}

impl PortInterest {
    /// Whether a packet with this port (as source or destination) is interesting.
    pub fn contains(&self, port: u16) -> bool {
        self.all || self.ports[port as usize]
    }

    /// Ports a packet may have and still be passed through (0 when `all`).
    pub fn uninteresting(&self) -> usize {
        if self.all {
            0
        } else {
            self.ports.iter().filter(|&&p| !p).count()
        }
    }

    /// Marks one port interesting.
    pub fn add_port(&mut self, port: u16) {
        self.ports[port as usize] = true;
    }

    fn add_set(&mut self, set: &PortSet) {
        for &(lo, hi) in set.ranges.as_slice() {
            for p in lo..=hi {
                self.ports[p as usize] = true;
            }
        }
    }

    fn add_rule(&mut self, rule: &CompiledRule, app: bool) {
        if app || rule.src_ports.is_any() && rule.dst_ports.is_any() {
            self.all = true;
            return;
        }
        // One side suffices (see the module docs): the narrower one.
        let size = |s: &PortSet| -> u64 { s.ranges.as_slice().iter().map(|&(lo, hi)| hi as u64 - lo as u64 + 1).sum() };
        let side = if rule.src_ports.is_any() {
            &rule.dst_ports
        } else if rule.dst_ports.is_any() || size(&rule.src_ports) < size(&rule.dst_ports) {
            &rule.src_ports
        } else {
            &rule.dst_ports
        };
        self.add_set(side);
    }
}

/// What the rules can match (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrafficInterest {
    pub tcp: PortInterest,
    pub udp: PortInterest,
    /// ICMP and ICMPv6.
    pub icmp: bool,
    /// Other IP protocols (SCTP, GRE, ...).
    pub other: bool,
}

impl TrafficInterest {
    /// Everything is interesting (no pass-through).
    pub fn everything() -> Self {
        TrafficInterest {
            tcp: PortInterest { all: true, ..PortInterest::default() },
            udp: PortInterest { all: true, ..PortInterest::default() },
            icmp: true,
            other: true,
        }
    }

    fn add_rule(&mut self, rule: &CompiledRule) {
        if rule.never_matches.is_some() {
            return;
        }
        let app = rule.app_proto_header || rule.inspects_app_layer();
        match rule.proto {
            ProtoMatch::Any | ProtoMatch::Ipv4 | ProtoMatch::Ipv6 => *self = TrafficInterest::everything(),
            ProtoMatch::Tcp => self.tcp.add_rule(rule, app),
            ProtoMatch::Udp => self.udp.add_rule(rule, app),
            ProtoMatch::TcpOrUdp => {
                self.tcp.add_rule(rule, app);
                self.udp.add_rule(rule, app);
            }
            ProtoMatch::Icmp | ProtoMatch::Icmpv4 | ProtoMatch::Icmpv6 => self.icmp = true,
            ProtoMatch::Sctp => self.other = true,
        }
    }
}

impl DetectEngine {
    /// The traffic the loaded rules can match (see [`interest`](self)).
    pub fn traffic_interest(&self) -> TrafficInterest {
        let mut interest = TrafficInterest::default();
        for rule in &self.rules {
            interest.add_rule(rule);
        }
        interest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::engine::DetectConfig;
    use crate::detect::rule::{load_rules_str, RuleVars};

    fn engine_from(rules: &str) -> DetectEngine {
        let load = load_rules_str("test.rules", rules, &RuleVars::default());
        assert!(load.errors.is_empty(), "parse errors: {:?}", load.errors);
        DetectEngine::build(load.rules, &DetectConfig::default()).expect("build").0
    }

    #[test]
    fn ports_protocols_and_the_any_cases() {
        let e = engine_from(
            "alert tcp any any -> any 80 (msg:\"a\"; content:\"x\"; sid:1;)\n\
             alert tcp any [1000:1002,!1001] -> any any (msg:\"b\"; sid:2;)\n\
             alert udp any any -> any ![0:52,54:65535] (msg:\"c\"; sid:3;)\n\
             alert tcp any 5000 -> any [6000:7000] (msg:\"d\"; sid:4;)\n",
        );
        let i = e.traffic_interest();
        assert!(!i.tcp.all && !i.udp.all && !i.icmp && !i.other);
        for p in [80, 1000, 1002, 5000] {
            assert!(i.tcp.contains(p), "tcp {p}");
        }
        for p in [81, 1001, 6000, 22, 443] {
            assert!(!i.tcp.contains(p), "tcp {p}");
        }
        assert!(i.udp.contains(53) && !i.udp.contains(80));
        assert_eq!(i.tcp.uninteresting(), PORTS - 4);

        let app = engine_from("alert http any any -> any 8080 (msg:\"h\"; sid:1;)\n").traffic_interest();
        assert!(app.tcp.all && !app.udp.all, "an app-layer rule makes its transport interesting");
        let dns = engine_from("alert dns any any -> any 53 (msg:\"d\"; sid:1;)\n").traffic_interest();
        assert!(dns.tcp.all && dns.udp.all);
        let icmp = engine_from("alert icmp any any -> any any (msg:\"i\"; sid:1;)\n").traffic_interest();
        assert!(icmp.icmp && !icmp.tcp.all && icmp.tcp.uninteresting() == PORTS);
        let ip = engine_from("alert ip 10.0.0.1 any -> any any (msg:\"ip\"; sid:1;)\n").traffic_interest();
        assert_eq!(ip, TrafficInterest::everything());
        let both_any = engine_from("alert tcp any any -> any any (msg:\"t\"; flags:S; sid:1;)\n").traffic_interest();
        assert!(both_any.tcp.all && !both_any.udp.all && !both_any.icmp);
    }
}
