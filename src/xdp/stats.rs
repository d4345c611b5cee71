//! The XDP program's per-reason counters (`picket_stats`, one slot per CPU), summed over
//! CPUs and named for eve (`stats.picket.xdp.*`), picket-stats.json and Prometheus.

use super::maps::{Counter, Reason};
use super::{XdpError, XdpLayer};
use crate::counters::CounterSet;
use aya::maps::{MapData, PerCpuArray};

/// Prefix of the XDP counters in a [`CounterSet`] (eve: `stats.picket.xdp`).
pub const PREFIX: &str = "picket.xdp.";

pub struct XdpStats {
    map: PerCpuArray<MapData, Counter>,
}

impl XdpStats {
    /// Takes the `picket_stats` map out of the loaded object.
    pub fn take(xdp: &mut XdpLayer) -> Result<XdpStats, XdpError> {
        let map = xdp.ebpf_mut().take_map("picket_stats").ok_or_else(|| super::missing("picket_stats"))?;
        let map = PerCpuArray::try_from(map).map_err(|e| XdpError(format!("picket_stats: {e}")))?;
        Ok(XdpStats { map })
    }

    /// Packets and bytes per reason, summed over CPUs. A slot that cannot be read
    /// (it should not happen) reads as zero.
    pub fn read(&self) -> Vec<(Reason, Counter)> {
        Reason::ALL
            .iter()
            .map(|&reason| {
                let total = self.map.get(&(reason as u32), 0).map_or(Counter::default(), |per_cpu| {
                    per_cpu.iter().fold(Counter::default(), |sum, c| Counter {
                        packets: sum.packets + c.packets,
                        bytes: sum.bytes + c.bytes,
                    })
                });
                (reason, total)
            })
            .collect()
    }

    /// Adds `picket.xdp.<reason>` (packets) and `picket.xdp.<reason>_bytes` to `into`.
    pub fn add_to(&self, into: &mut CounterSet) {
        for (reason, c) in self.read() {
            into.add(&format!("{PREFIX}{}", reason.name()), c.packets);
            into.add(&format!("{PREFIX}{}_bytes", reason.name()), c.bytes);
        }
    }
}
