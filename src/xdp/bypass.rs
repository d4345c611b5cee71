//! Capture bypass through the XDP program's flow table (`picket_bypass_v4/v6`): a flow the
//! inspector is finished with (`picket_core::inspect::bypass`) is installed there, one
//! entry per direction keyed as its packets appear on the wire, and from then on the XDP
//! program (incoming) and the AF_PACKET socket filter (outgoing) count its packets and
//! keep them from picket.
//!
//! Each live worker owns a [`FlowBypassTable`]: its own descriptors of the two maps
//! (opened by id, [`BypassMaps::open`]), and the flows it installed. No lock on the data
//! path: the kernel's hash map takes concurrent updates, and a flow belongs to one worker.
//!
//! Per worker:
//! - after each packet, [`FlowBypassTable::after_packet`] installs what the inspector
//!   decided to bypass (a full table is counted, `picket.xdp.bypass_refused`, and the flow
//!   stays inspected) and removes the entries of flows that ended;
//! - once per second, [`FlowBypassTable::refresh`] reads the kernel's counts into the
//!   inspector; a flow whose `last_ns` moved is kept alive, so it ends only after the
//!   `bypassed` timeout of silence, with the kernel's counts in its eve record.

use super::maps::{BypassVal, FlowV4, FlowV6};
use super::{XdpError, XdpLayer};
use crate::counters::CounterSet;
use crate::inspect::{BypassCounts, BypassRequest, Inspector};
use aya::maps::{HashMap, Map, MapData};
use picket_core::flow::FlowHandle;
use picket_core::packet::Timestamp;
use std::collections::HashMap as StdHashMap;

/// Names of the flow tables in the XDP object.
const MAP_V4: &str = "picket_bypass_v4";
const MAP_V6: &str = "picket_bypass_v6";

/// Counter: flows the kernel table could not take (full), which stay inspected.
pub const BYPASS_REFUSED: &str = "picket.xdp.bypass_refused";
/// Counter: flows installed in the kernel table.
pub const BYPASS_INSTALLED: &str = "picket.xdp.bypass_installed";
/// Counter: kernel table reads or deletes that failed (other than "no such entry").
pub const BYPASS_ERRORS: &str = "picket.xdp.bypass_errors";

/// The ids of the loaded flow tables, from which each worker opens its own handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BypassMaps {
    v4_id: u32,
    v6_id: u32,
}

impl BypassMaps {
    /// The flow tables of a loaded XDP layer.
    pub fn of(xdp: &mut XdpLayer) -> Result<BypassMaps, XdpError> {
        let id = |name: &str, xdp: &mut XdpLayer| -> Result<u32, XdpError> {
            match xdp.ebpf_mut().map(name) {
                Some(Map::HashMap(data)) => {
                    data.info().map(|i| i.id()).map_err(|e| XdpError(format!("{name}: cannot read the map's id: {e}")))
                }
                Some(_) => Err(XdpError(format!("{name} is not a hash map in the XDP object (stale build?)"))),
                None => Err(XdpError(format!("the XDP object has no map {name} (stale build?)"))),
            }
        };
        Ok(BypassMaps { v4_id: id(MAP_V4, xdp)?, v6_id: id(MAP_V6, xdp)? })
    }

    /// A worker's own handle on the tables.
    pub fn open(&self) -> Result<FlowBypassTable, XdpError> {
        let open = |id: u32, name: &str| -> Result<Map, XdpError> {
            MapData::from_id(id)
                .map(Map::HashMap)
                .map_err(|e| XdpError(format!("{name} (map id {id}): cannot open: {e}; is picket root?")))
        };
        let v4 = HashMap::try_from(open(self.v4_id, MAP_V4)?).map_err(|e| XdpError(format!("{MAP_V4}: {e}")))?;
        let v6 = HashMap::try_from(open(self.v6_id, MAP_V6)?).map_err(|e| XdpError(format!("{MAP_V6}: {e}")))?;
        Ok(FlowBypassTable { v4, v6, flows: StdHashMap::new(), installed: 0, refused: 0, errors: 0 })
    }
}

/// The kernel keys of both directions of a flow: [to server, to client].
#[derive(Clone, Copy, Debug)]
enum Keys {
    V4([FlowV4; 2]),
    V6([FlowV6; 2]),
}

impl Keys {
    fn of(req: &BypassRequest) -> Keys {
        Keys::new(req.is_v4, req.proto, req.client, req.server)
    }

    fn new(is_v4: bool, proto: u8, client: ([u8; 16], u16), server: ([u8; 16], u16)) -> Keys {
        if is_v4 {
            let v4 = |a: &[u8; 16]| -> [u8; 4] { [a[12], a[13], a[14], a[15]] };
            let key = |from: &([u8; 16], u16), to: &([u8; 16], u16)| FlowV4 {
                src: v4(&from.0),
                dst: v4(&to.0),
                sport: from.1,
                dport: to.1,
                proto,
                pad: [0; 3],
            };
            Keys::V4([key(&client, &server), key(&server, &client)])
        } else {
            let key = |from: &([u8; 16], u16), to: &([u8; 16], u16)| FlowV6 {
                src: from.0,
                dst: to.0,
                sport: from.1,
                dport: to.1,
                proto,
                pad: [0; 3],
            };
            Keys::V6([key(&client, &server), key(&server, &client)])
        }
    }
}

/// A flow this worker installed.
struct Installed {
    handle: FlowHandle,
    keys: Keys,
    /// The latest `last_ns` of either direction when last read.
    last_ns: u64,
}

/// One worker's view of the kernel flow tables (see the module docs).
pub struct FlowBypassTable {
    v4: HashMap<MapData, FlowV4, BypassVal>,
    v6: HashMap<MapData, FlowV6, BypassVal>,
    flows: StdHashMap<u64, Installed>,
    installed: u64,
    refused: u64,
    errors: u64,
}

impl FlowBypassTable {
    /// After a packet: installs the flows the inspector bypassed, removes ended ones.
    pub fn after_packet(&mut self, inspector: &mut Inspector) {
        if inspector.has_bypass_requests() {
            let requests: Vec<BypassRequest> = inspector.take_bypass_requests().collect();
            for req in requests {
                if self.install(&req) {
                    self.installed += 1;
                } else {
                    self.refused += 1;
                    inspector.bypass_refused(req.handle);
                }
            }
        }
        self.remove_ended(inspector);
    }

    /// Once per second, before the inspector's clock advances to `now`: the kernel's
    /// counts of every installed flow into the inspector; flows with new packets since the
    /// last refresh were alive at `now`.
    pub fn refresh(&mut self, inspector: &mut Inspector, now: Timestamp) {
        for flow in self.flows.values_mut() {
            let vals = match &flow.keys {
                Keys::V4(k) => [self.v4.get(&k[0], 0).ok(), self.v4.get(&k[1], 0).ok()],
                Keys::V6(k) => [self.v6.get(&k[0], 0).ok(), self.v6.get(&k[1], 0).ok()],
            };
            let [ts, tc] = vals.map(|v| v.unwrap_or_default());
            let counts = BypassCounts {
                pkts_toserver: ts.packets,
                pkts_toclient: tc.packets,
                bytes_toserver: ts.bytes,
                bytes_toclient: tc.bytes,
            };
            let last_ns = ts.last_ns.max(tc.last_ns);
            let active = (last_ns > flow.last_ns).then_some(now);
            flow.last_ns = last_ns;
            inspector.bypass_update(flow.handle, counts, active);
        }
        self.remove_ended(inspector);
    }

    /// Adds this worker's bypass-table counters.
    pub fn add_counters(&self, into: &mut CounterSet) {
        into.add(BYPASS_INSTALLED, self.installed);
        into.add(BYPASS_REFUSED, self.refused);
        into.add(BYPASS_ERRORS, self.errors);
    }

    /// Flows installed and not yet ended.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Inserts both directions; on any failure (table full) nothing stays inserted.
    fn install(&mut self, req: &BypassRequest) -> bool {
        let keys = Keys::of(req);
        let zero = BypassVal::default();
        let ok = match &keys {
            Keys::V4(k) => {
                let first = self.v4.insert(k[0], zero, 0).is_ok();
                let both = first && self.v4.insert(k[1], zero, 0).is_ok();
                if first && !both {
                    let _ = self.v4.remove(&k[0]);
                }
                both
            }
            Keys::V6(k) => {
                let first = self.v6.insert(k[0], zero, 0).is_ok();
                let both = first && self.v6.insert(k[1], zero, 0).is_ok();
                if first && !both {
                    let _ = self.v6.remove(&k[0]);
                }
                both
            }
        };
        if ok {
            self.flows.insert(req.flow_id, Installed { handle: req.handle, keys, last_ns: 0 });
        }
        ok
    }

    fn remove_ended(&mut self, inspector: &mut Inspector) {
        for flow_id in inspector.take_bypass_ended() {
            let Some(flow) = self.flows.remove(&flow_id) else { continue };
            let failed = match &flow.keys {
                Keys::V4(k) => k.iter().filter(|k| self.v4.remove(k).is_err()).count(),
                Keys::V6(k) => k.iter().filter(|k| self.v6.remove(k).is_err()).count(),
            };
            self.errors += failed as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_both_directions_as_on_the_wire() {
        let mut client = [0u8; 16];
        client[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        let mut server = [0u8; 16];
        server[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 2]);
        let Keys::V4([ts, tc]) = Keys::new(true, 6, (client, 40000), (server, 80)) else { panic!("v4 keys") };
        assert_eq!((ts.src, ts.dst, ts.sport, ts.dport, ts.proto), ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80, 6));
        assert_eq!((tc.src, tc.dst, tc.sport, tc.dport), ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000));
    }
}
