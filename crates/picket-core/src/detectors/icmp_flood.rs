//! ICMP flood per destination: ICMP/ICMPv6 packets per second to one address. Fires at
//! `rate`; action: block the top sources (those sending at least a tenth of the flood,
//! at most `max-blocks`) for the block time.
//!
//! Echo replies do not count: under an echo-request flood the protected host answers
//! each request, and its replies would be a second "flood" towards the attacker.
//! (An echo-reply flood, smurf style, is therefore not seen by this detector.)

use super::{
    act_on_heavy_sources, CommonSettings, Cooldown, Detector, EvalContext, Evaluate, Finding, Key, Kind, PacketFacts,
    Tally, PROTO_ICMP, PROTO_ICMPV6,
};

/// Sources remembered per destination and window.
pub const MEMBER_CAP: usize = 256;
/// ICMPv6 types below this are errors; 128+ are informational (echo, ND). Neighbour
/// discovery (133-137) is the link's own business and never counts.
const ICMPV6_ND: std::ops::RangeInclusive<u16> = 133..=137;
const ICMP_ECHO_REPLY: u16 = 0;
const ICMPV6_ECHO_REPLY: u16 = 129;

#[derive(Clone, Debug, PartialEq)]
pub struct IcmpFloodSettings {
    pub enabled: bool,
    /// ICMP packets per second to one destination.
    pub rate: u64,
    pub window: u64,
    pub block: bool,
}

impl Default for IcmpFloodSettings {
    fn default() -> Self {
        IcmpFloodSettings { enabled: true, rate: 5000, window: 1, block: true }
    }
}

pub struct IcmpFloodCounter {
    tally: Tally,
    max_keys: usize,
}

impl IcmpFloodCounter {
    pub fn new(max_keys: usize) -> Self {
        IcmpFloodCounter { tally: Tally::default(), max_keys }
    }
}

impl Detector for IcmpFloodCounter {
    fn kind(&self) -> Kind {
        Kind::IcmpFlood
    }

    fn packet(&mut self, p: &PacketFacts) {
        let icmp = match p.proto {
            // PacketFacts carries the ICMP type in `sport`.
            PROTO_ICMP => p.sport != ICMP_ECHO_REPLY,
            PROTO_ICMPV6 => p.sport != ICMPV6_ECHO_REPLY && !ICMPV6_ND.contains(&p.sport),
            _ => false,
        };
        if !icmp {
            return;
        }
        if let Some(row) = self.tally.row(Key { addr: p.dst, port: 0 }, self.max_keys) {
            row.packets += 1;
            row.bytes += p.len as u64;
            row.add_member(p.src, 0, 1, MEMBER_CAP);
        }
    }

    fn take_tally(&mut self) -> Tally {
        self.tally.take()
    }
}

pub struct IcmpFloodEval {
    s: IcmpFloodSettings,
    common: CommonSettings,
    recent: Cooldown,
}

impl IcmpFloodEval {
    pub fn new(s: IcmpFloodSettings, common: CommonSettings) -> Self {
        let recent = Cooldown::new(common.max_keys);
        IcmpFloodEval { s, common, recent }
    }
}

impl Evaluate for IcmpFloodEval {
    fn kind(&self) -> Kind {
        Kind::IcmpFlood
    }

    fn window_secs(&self) -> u64 {
        self.s.window.max(1)
    }

    fn caps(&self) -> (usize, usize) {
        (self.common.max_keys, MEMBER_CAP)
    }

    fn evaluate(&mut self, tally: &Tally, ctx: &EvalContext<'_>) -> Vec<Finding> {
        let window = ctx.window_secs.max(1);
        let mut out = Vec::new();
        for (key, row) in &tally.rows {
            let pps = row.packets / window;
            if pps < self.s.rate {
                continue;
            }
            let heavy = act_on_heavy_sources(row, &mut self.recent, ctx, &self.common, self.s.block, (32, 128));
            let Some((top, actions, spared)) = heavy else { continue };
            out.push(Finding {
                kind: Kind::IcmpFlood,
                signature: format!("picket ICMP flood to {}", key.addr),
                proto: if key.addr.is_ipv4() { PROTO_ICMP } else { PROTO_ICMPV6 },
                src: Some((top.addr, 0)),
                dst: Some((key.addr, 0)),
                rate: pps,
                actions,
                spared,
            });
        }
        out.sort_by(|a, b| a.signature.cmp(&b.signature));
        out
    }
}
