//! UDP reflection/amplification: responses from amplifier service ports (DNS 53, NTP
//! 123, memcached 11211, SSDP 1900, chargen 19, CLDAP 389, SNMP 161, ...) flooding one
//! destination. Fires when the packets or bytes per second to a destination from those
//! ports reach `rate` / `bps`; action: block the reflecting sources that send at least
//! a tenth of the flood (at most `max-blocks`, as /`block-prefix-v4` or /`block-prefix-v6`).

use super::{
    act_on_heavy_sources, CommonSettings, Cooldown, Detector, EvalContext, Evaluate, Finding, Key, Kind, PacketFacts,
    Tally, PROTO_UDP,
};

/// Default amplifier source ports: chargen, DNS, NTP, SNMP, CLDAP, SSDP, memcached, WS-Discovery.
pub const DEFAULT_PORTS: [u16; 8] = [19, 53, 123, 161, 389, 1900, 11211, 3702];
/// Sources remembered per destination and window.
pub const MEMBER_CAP: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub struct UdpReflectionSettings {
    pub enabled: bool,
    /// Packets per second to one destination from amplifier ports.
    pub rate: u64,
    /// Bits per second to one destination from amplifier ports (0: not used).
    pub bps: u64,
    pub window: u64,
    pub block: bool,
    pub ports: Vec<u16>,
    pub block_prefix_v4: u8,
    pub block_prefix_v6: u8,
}

impl Default for UdpReflectionSettings {
    fn default() -> Self {
        UdpReflectionSettings {
            enabled: true,
            rate: 10_000,
            bps: 100_000_000,
            window: 1,
            block: true,
            ports: DEFAULT_PORTS.to_vec(),
            block_prefix_v4: 32,
            block_prefix_v6: 128,
        }
    }
}

pub struct UdpReflectionCounter {
    tally: Tally,
    max_keys: usize,
    /// Amplifier ports as a bitmap: one lookup per packet.
    ports: Box<[u64; 1024]>,
}

impl UdpReflectionCounter {
    pub fn new(s: &UdpReflectionSettings, max_keys: usize) -> Self {
        let mut ports = Box::new([0u64; 1024]);
        for &p in &s.ports {
            ports[p as usize / 64] |= 1 << (p % 64);
        }
        UdpReflectionCounter { tally: Tally::default(), max_keys, ports }
    }

    fn amplifier(&self, port: u16) -> bool {
        self.ports[port as usize / 64] & (1 << (port % 64)) != 0
    }
}

impl Detector for UdpReflectionCounter {
    fn kind(&self) -> Kind {
        Kind::UdpReflection
    }

    fn packet(&mut self, p: &PacketFacts) {
        if p.proto != PROTO_UDP || !self.amplifier(p.sport) || self.amplifier(p.dport) {
            return;
        }
        if let Some(row) = self.tally.row(Key { addr: p.dst, port: 0 }, self.max_keys) {
            row.packets += 1;
            row.bytes += p.len as u64;
            row.add_member(p.src, p.sport, 1, MEMBER_CAP);
        }
    }

    fn take_tally(&mut self) -> Tally {
        self.tally.take()
    }
}

pub struct UdpReflectionEval {
    s: UdpReflectionSettings,
    common: CommonSettings,
    recent: Cooldown,
}

impl UdpReflectionEval {
    pub fn new(s: UdpReflectionSettings, common: CommonSettings) -> Self {
        let recent = Cooldown::new(common.max_keys);
        UdpReflectionEval { s, common, recent }
    }
}

impl Evaluate for UdpReflectionEval {
    fn kind(&self) -> Kind {
        Kind::UdpReflection
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
            let bps = row.bytes * 8 / window;
            if pps < self.s.rate && (self.s.bps == 0 || bps < self.s.bps) {
                continue;
            }
            // Heavy reflectors: a tenth of the flood or more, not cooling down already.
            let prefixes = (self.s.block_prefix_v4, self.s.block_prefix_v6);
            let heavy = act_on_heavy_sources(row, &mut self.recent, ctx, &self.common, self.s.block, prefixes);
            let Some((top, actions, spared)) = heavy else { continue };
            out.push(Finding {
                kind: Kind::UdpReflection,
                signature: format!(
                    "picket UDP reflection from port {} to {} ({} reflectors)",
                    top.port,
                    key.addr,
                    row.members.len()
                ),
                proto: PROTO_UDP,
                src: Some((top.addr, top.port)),
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
