//! Port scan per source: distinct destination addr:port pairs one source probes in a
//! window (TCP SYNs without ACK; UDP datagrams from a higher to a lower port, so a
//! server answering many clients from port 53 is no scanner). Fires at `ports`
//! distinct pairs; action: block the source (/32 or /128) for the block time.

use super::{
    block_sources, CommonSettings, Cooldown, Detector, EvalContext, Evaluate, Finding, Key, Kind, Member, PacketFacts,
    Tally, PROTO_TCP, PROTO_UDP, TCP_ACK, TCP_SYN,
};

#[derive(Clone, Debug, PartialEq)]
pub struct PortScanSettings {
    pub enabled: bool,
    /// Distinct destination addr:port pairs per source and window.
    pub ports: u64,
    pub window: u64,
    pub block: bool,
}

impl Default for PortScanSettings {
    fn default() -> Self {
        PortScanSettings { enabled: true, ports: 100, window: 5, block: true }
    }
}

impl PortScanSettings {
    /// Pairs remembered per source: enough to reach the threshold, bounded.
    pub fn member_cap(&self) -> usize {
        (self.ports as usize).clamp(1, 4096)
    }
}

pub struct PortScanCounter {
    tally: Tally,
    max_keys: usize,
    member_cap: usize,
}

impl PortScanCounter {
    pub fn new(max_keys: usize, member_cap: usize) -> Self {
        PortScanCounter { tally: Tally::default(), max_keys, member_cap }
    }
}

impl Detector for PortScanCounter {
    fn kind(&self) -> Kind {
        Kind::PortScan
    }

    fn packet(&mut self, p: &PacketFacts) {
        let probe = match p.proto {
            PROTO_TCP => p.tcp_flags & (TCP_SYN | TCP_ACK) == TCP_SYN,
            PROTO_UDP => p.sport > p.dport,
            _ => false,
        };
        if !probe {
            return;
        }
        if let Some(row) = self.tally.row(Key { addr: p.src, port: 0 }, self.max_keys) {
            row.packets += 1;
            row.bytes += p.len as u64;
            row.add_member(p.dst, p.dport, 1, self.member_cap);
        }
    }

    fn take_tally(&mut self) -> Tally {
        self.tally.take()
    }
}

pub struct PortScanEval {
    s: PortScanSettings,
    common: CommonSettings,
    recent: Cooldown,
}

impl PortScanEval {
    pub fn new(s: PortScanSettings, common: CommonSettings) -> Self {
        let recent = Cooldown::new(common.max_keys);
        PortScanEval { s, common, recent }
    }
}

impl Evaluate for PortScanEval {
    fn kind(&self) -> Kind {
        Kind::PortScan
    }

    fn window_secs(&self) -> u64 {
        self.s.window.max(1)
    }

    fn caps(&self) -> (usize, usize) {
        (self.common.max_keys, self.s.member_cap())
    }

    fn evaluate(&mut self, tally: &Tally, ctx: &EvalContext<'_>) -> Vec<Finding> {
        let mut out = Vec::new();
        for (key, row) in &tally.rows {
            let distinct = row.members.len() as u64;
            if distinct < self.s.ports || self.recent.active(key.addr, ctx.now_secs) {
                continue;
            }
            self.recent.start(key.addr, ctx.now_secs, self.common.block_time);
            let hosts = {
                let mut h: Vec<_> = row.members.iter().map(|m| m.addr).collect();
                h.sort();
                h.dedup();
                h
            };
            let target = if hosts.len() == 1 { hosts[0].to_string() } else { format!("{} hosts", hosts.len()) };
            let source = [Member { addr: key.addr, port: 0, packets: row.packets }];
            let (actions, spared) = if self.s.block {
                block_sources(&source, ctx.never_block, &self.common, 32, 128)
            } else {
                (Vec::new(), ctx.never_block.contains(key.addr))
            };
            let first = row.members.first().map(|m| (m.addr, m.port));
            out.push(Finding {
                kind: Kind::PortScan,
                signature: format!("picket port scan from {} to {target} ({distinct} ports)", key.addr),
                proto: PROTO_TCP,
                src: Some((key.addr, 0)),
                dst: first,
                rate: distinct / ctx.window_secs.max(1),
                actions,
                spared,
            });
        }
        out.sort_by(|a, b| a.signature.cmp(&b.signature));
        out
    }
}
