//! SYN flood per destination addr:port: the rate of SYNs (without ACK) against the
//! handshakes that complete. A flood of spoofed SYNs completes almost none.
//!
//! Fires when, over a window, SYNs per second reach `rate` and there are at least
//! `ratio` SYNs per completed handshake. Action: SYN cookies on for that destination
//! (answered in XDP from then on). While cookies are on, the SYNs no longer reach user
//! space, so the withdrawal reads the kernel's per-destination SYN counts
//! ([`EvalContext::kernel_syns`]): cookies go off after `hold` seconds below half the
//! rate.

use super::{
    endpoint, Action, CommonSettings, EvalContext, Evaluate, Finding, Kind, PacketFacts, Tally, PROTO_TCP, TCP_ACK,
    TCP_SYN,
};
use super::{Detector, FlowEvent, Key};
use std::collections::HashMap;
use std::net::IpAddr;

#[derive(Clone, Debug, PartialEq)]
pub struct SynFloodSettings {
    pub enabled: bool,
    /// SYNs per second to one destination addr:port.
    pub rate: u64,
    /// Minimum SYNs per completed handshake.
    pub ratio: u64,
    pub window: u64,
    /// Turn SYN cookies on (no: alert only).
    pub block: bool,
    /// Seconds below half the rate before cookies go off again.
    pub hold: u64,
}

impl Default for SynFloodSettings {
    fn default() -> Self {
        SynFloodSettings { enabled: true, rate: 5000, ratio: 3, window: 1, block: true, hold: 10 }
    }
}

/// Worker side: SYNs and completed handshakes per destination.
pub struct SynFloodCounter {
    tally: Tally,
    max_keys: usize,
}

impl SynFloodCounter {
    pub fn new(max_keys: usize) -> Self {
        SynFloodCounter { tally: Tally::default(), max_keys }
    }
}

impl Detector for SynFloodCounter {
    fn kind(&self) -> Kind {
        Kind::SynFlood
    }

    fn packet(&mut self, p: &PacketFacts) {
        if p.proto != PROTO_TCP || p.tcp_flags & (TCP_SYN | TCP_ACK) != TCP_SYN {
            return;
        }
        if let Some(row) = self.tally.row(Key { addr: p.dst, port: p.dport }, self.max_keys) {
            row.packets += 1;
            row.bytes += p.len as u64;
        }
    }

    fn flow_event(&mut self, e: &FlowEvent) {
        if let FlowEvent::HandshakeDone { server, .. } = e {
            // Only destinations that received SYNs this window matter: no new key.
            if let Some(row) = self.tally.rows.get_mut(&Key { addr: server.0, port: server.1 }) {
                row.handshakes += 1;
            }
        }
    }

    fn take_tally(&mut self) -> Tally {
        self.tally.take()
    }
}

/// A destination under SYN cookies.
#[derive(Clone, Copy, Debug)]
struct Protected {
    /// Consecutive seconds below half the rate.
    quiet_secs: u64,
}

/// Controller side.
pub struct SynFloodEval {
    s: SynFloodSettings,
    common: CommonSettings,
    active: HashMap<(IpAddr, u16), Protected>,
}

impl SynFloodEval {
    pub fn new(s: SynFloodSettings, common: CommonSettings) -> Self {
        SynFloodEval { s, common, active: HashMap::new() }
    }
}

impl Evaluate for SynFloodEval {
    fn kind(&self) -> Kind {
        Kind::SynFlood
    }

    fn window_secs(&self) -> u64 {
        self.s.window.max(1)
    }

    fn caps(&self) -> (usize, usize) {
        (self.common.max_keys, 0)
    }

    fn protected(&self) -> usize {
        self.active.len()
    }

    fn evaluate(&mut self, tally: &Tally, ctx: &EvalContext<'_>) -> Vec<Finding> {
        let window = ctx.window_secs.max(1);
        let mut out = Vec::new();
        // Withdrawals first: the rate is what user space saw plus what the kernel answered.
        let mut ended = Vec::new();
        for (dst, state) in self.active.iter_mut() {
            let seen = tally.rows.get(&Key { addr: dst.0, port: dst.1 }).map_or(0, |r| r.packets);
            let rate = (seen + ctx.kernel_syns.get(dst).copied().unwrap_or(0)) / window;
            if rate * 2 < self.s.rate {
                state.quiet_secs += window;
            } else {
                state.quiet_secs = 0;
            }
            if state.quiet_secs >= self.s.hold {
                ended.push(*dst);
            }
        }
        for dst in ended {
            self.active.remove(&dst);
            out.push(Finding {
                kind: Kind::SynFlood,
                signature: String::new(), // a withdrawal: no alert
                proto: PROTO_TCP,
                src: None,
                dst: Some(dst),
                rate: 0,
                actions: vec![Action::Unprotect { addr: dst.0, port: dst.1 }],
                spared: false,
            });
        }
        let mut keys: Vec<(&Key, &super::Row)> = tally.rows.iter().collect();
        keys.sort_by_key(|(_, row)| std::cmp::Reverse(row.packets));
        for (key, row) in keys {
            let rate = row.packets / window;
            let dst = (key.addr, key.port);
            if rate < self.s.rate || row.packets < self.s.ratio.saturating_mul(row.handshakes) {
                continue;
            }
            if self.active.contains_key(&dst) {
                continue;
            }
            let act = self.s.block && self.active.len() < self.common.max_keys;
            if act {
                self.active.insert(dst, Protected { quiet_secs: 0 });
            }
            out.push(Finding {
                kind: Kind::SynFlood,
                signature: format!("picket SYN flood to {}", endpoint(key.addr, key.port)),
                proto: PROTO_TCP,
                src: None,
                dst: Some(dst),
                rate,
                actions: if act { vec![Action::Protect { addr: key.addr, port: key.port }] } else { Vec::new() },
                spared: false,
            });
        }
        out
    }
}
