//! The inline AF_PACKET bridge (`picket --bridge IF_A,IF_B`, or Suricata's `af-packet:`
//! entries with `copy-mode: ips` / `copy-iface`): packets read on one interface are
//! inspected and, unless the verdict blocks them, sent out of the other one unchanged.
//!
//! Shape: for every worker and every bridged pair, two [`BridgePort`]s, one per direction
//! (A to B, B to A). Each holds
//! - an RX [`AfPacketSocket`] on its ingress interface: member `i` (the worker's index) of
//!   that interface's fanout group, hashed by flow (PACKET_FANOUT_HASH). The kernel's flow
//!   hash is symmetric, and both groups have one member per worker, so both directions of
//!   a flow meet on the same worker. The socket skips what this host sends on the
//!   interface, so the bridge never reads back its own transmissions;
//! - a [`TxSocket`] on the egress interface (forwarded packets, reject replies toward the
//!   destination) and one on the ingress interface (reject replies toward the source).
//!
//! Nothing else connects the two interfaces: when picket stops, bridged traffic stops.
//!
//! Start-up ([`open_ports`]) checks everything before any packet is held: both interfaces
//! exist and are up, are different, have the same link type; warns when their MTUs
//! differ; turns off the receive offloads that merge packets into frames larger than the
//! MTU ([`super::offload`]), saying so on stderr, and turns them back on at the end.
//!
//! `copy-mode: tap` (Suricata's): every packet is forwarded whatever the verdict, and the
//! port reports itself passive so that no block is claimed.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::afpacket::{AfPacketConfig, AfPacketError, AfPacketSocket, TxOptions, TxSocket};
use super::offload::{self, OffloadError, OffloadGuard};
use super::port::{KernelCounts, LivePort, PortMode, TX_ERRORS};
use super::RawPacket;
use crate::counters::CounterSet;
use crate::inspect::Verdict;
use crate::packet::LinkType;
use crate::reject::{self, Reply, Toward};

/// Counter: packets passed on to the egress interface.
pub const FORWARDED: &str = "picket.bridge.forwarded";
/// Counter: frames larger than the egress interface's MTU (or cut by the capture's
/// snap length), which cannot be forwarded and are dropped.
pub const OVERSIZE: &str = "picket.bridge.oversize";
/// Counter: reject replies (TCP RST, ICMP unreachable) handed to a TX socket.
pub const REJECT_REPLIES: &str = "picket.bridge.reject_replies";
/// Counter: packets forwarded with their transport checksum not filled in (the sender
/// left it to checksum offload: a veth whose peer is a local network stack).
pub const CSUM_NOT_READY: &str = "picket.bridge.csum_not_ready";
/// Counter: rejected packets no reply was sent for (a kind that is never answered, such
/// as an ICMP error or a broadcast, or a malformed frame); they are dropped all the same.
pub const REJECT_UNANSWERED: &str = "picket.bridge.reject_unanswered";

/// Ethernet header without VLAN tags: two MAC addresses and the EtherType.
const ETHERNET_HEADER_LEN: usize = 14;
/// Where the EtherType (or a VLAN tag's TPID) sits in an Ethernet frame.
const ETHERTYPE_OFFSET: usize = 12;
/// Bytes of one 802.1Q/802.1ad tag.
const VLAN_TAG_LEN: usize = 4;
/// TPIDs of VLAN tags: 802.1Q, 802.1ad, and the old QinQ 0x9100.
const VLAN_TPIDS: [u16; 3] = [0x8100, 0x88a8, 0x9100];
/// Most VLAN tags looked through when sizing a frame (QinQ has two).
const MAX_VLAN_TAGS: usize = 4;

/// Suricata's `copy-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMode {
    /// Inline: verdicts are carried out (drop, reject).
    Ips,
    /// Everything is forwarded; verdicts are only logged.
    Tap,
}

impl CopyMode {
    pub fn name(self) -> &'static str {
        match self {
            CopyMode::Ips => "ips",
            CopyMode::Tap => "tap",
        }
    }
}

/// One bridged pair: the capture settings of both interfaces (from their `af-packet:`
/// entries) and how packets are sent.
#[derive(Clone, Debug)]
pub struct BridgeSpec {
    pub a: AfPacketConfig,
    pub b: AfPacketConfig,
    pub mode: CopyMode,
    /// How frames are sent: `sendmmsg` or a TX ring, with or without PACKET_QDISC_BYPASS
    /// (straight to the driver, no qdisc, invisible to packet taps on the egress interface).
    pub tx: TxOptions,
}

/// Why a bridge could not start. One line naming the interface(s) and the fix.
#[derive(Debug)]
pub enum BridgeError {
    SameInterface {
        interface: String,
    },
    /// The two interfaces carry different link layers (Ethernet and raw IP).
    LinkMismatch {
        a: String,
        b: String,
    },
    Socket(AfPacketError),
    Offload(OffloadError),
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::SameInterface { interface } => {
                write!(f, "bridge {interface},{interface}: an interface cannot be bridged with itself")
            }
            BridgeError::LinkMismatch { a, b } => write!(
                f,
                "bridge {a},{b}: the interfaces have different link types (Ethernet and raw IP); \
                 bridge two interfaces of the same kind"
            ),
            BridgeError::Socket(e) => write!(f, "bridge: {e}"),
            BridgeError::Offload(e) => write!(f, "bridge: {e}"),
        }
    }
}

impl std::error::Error for BridgeError {}

impl From<AfPacketError> for BridgeError {
    fn from(e: AfPacketError) -> Self {
        BridgeError::Socket(e)
    }
}

/// Opens every worker's bridge ports, worker by worker, so that worker `i` holds member
/// `i` of each interface's fanout group. Returns `[worker][port]`: one port per worker.
///
/// Order, so that nothing is held before everything that can fail has been checked:
/// the TX sockets first (interface exists, is up; the MTU), then the offloads, and the
/// RX sockets last.
pub fn open_ports(specs: &[BridgeSpec], workers: usize) -> Result<Vec<Vec<Box<dyn LivePort>>>, BridgeError> {
    let workers = workers.max(1);
    let mut tx: Vec<Vec<[TxSocket; 4]>> = Vec::with_capacity(workers);
    for _ in 0..workers {
        let mut mine = Vec::with_capacity(specs.len());
        for spec in specs {
            let (a, b) = (&spec.a.interface, &spec.b.interface);
            if a == b {
                return Err(BridgeError::SameInterface { interface: a.clone() });
            }
            let open = |name: &str| TxSocket::open(name, spec.tx);
            // A->B sends on B (forward) and A (replies to the source); B->A the reverse.
            mine.push([open(b)?, open(a)?, open(a)?, open(b)?]);
        }
        tx.push(mine);
    }
    let mut guards: Vec<[Arc<OffloadGuard>; 2]> = Vec::with_capacity(specs.len());
    for (spec, sockets) in specs.iter().zip(&tx[0]) {
        let (mtu_a, mtu_b) = (sockets[1].mtu(), sockets[0].mtu());
        if mtu_a != mtu_b {
            eprintln!(
                "picket: warning: bridge {},{}: MTUs differ ({mtu_a} and {mtu_b}); frames larger than the smaller \
                 one are dropped and counted in {OVERSIZE} (set the same MTU on both)",
                spec.a.interface, spec.b.interface
            );
        }
        guards.push([offloads_off(&spec.a.interface)?, offloads_off(&spec.b.interface)?]);
    }
    // TPACKET_V2 cuts packets to the frame: make frames hold the largest the MTUs allow.
    let specs: Vec<BridgeSpec> = specs
        .iter()
        .zip(&tx[0])
        .map(|(spec, sockets)| {
            let mtu = sockets[0].mtu().max(sockets[1].mtu());
            BridgeSpec { a: frames_for_mtu(&spec.a, mtu), b: frames_for_mtu(&spec.b, mtu), ..spec.clone() }
        })
        .collect();
    let all_guards: Vec<Arc<OffloadGuard>> = guards.iter().flatten().cloned().collect();
    let mut all = Vec::with_capacity(workers);
    for mine in tx {
        let mut directions = Vec::with_capacity(specs.len() * 2);
        for (spec, [b_fwd, a_back, a_fwd, b_back]) in specs.iter().zip(mine) {
            let rx_config = |cfg: &AfPacketConfig| AfPacketConfig { ignore_outgoing: true, ..cfg.clone() };
            let rx_a = AfPacketSocket::open(&rx_config(&spec.a))?;
            let rx_b = AfPacketSocket::open(&rx_config(&spec.b))?;
            if rx_a.link_type() != rx_b.link_type() {
                return Err(BridgeError::LinkMismatch { a: spec.a.interface.clone(), b: spec.b.interface.clone() });
            }
            let direction = |rx: AfPacketSocket, out: TxSocket, back: TxSocket| Direction {
                link: rx.link_type(),
                rx,
                out,
                back,
                mode: spec.mode,
                stats: DirectionStats::default(),
                warned_csum: false,
            };
            directions.push(direction(rx_a, b_fwd, a_back));
            directions.push(direction(rx_b, a_fwd, b_back));
        }
        let stop = specs.first().map(|s| Arc::clone(&s.a.stop)).unwrap_or_default();
        let port = BridgePort { directions, replies: Vec::new(), _offloads: all_guards.clone(), stop, drained: false };
        all.push(vec![Box::new(port) as Box<dyn LivePort>]);
    }
    Ok(all)
}

/// Room in a TPACKET_V2 frame before the packet data: the frame header, the link-level
/// address and alignment (the kernel's offset of the network header, rounded up).
const V2_FRAME_OVERHEAD: u32 = 128;
/// Link header room in a frame: Ethernet plus two VLAN tags.
const LINK_HEADER_ROOM: u32 = (ETHERNET_HEADER_LEN + 2 * VLAN_TAG_LEN) as u32;

/// `cfg` with, for a TPACKET_V2 ring, frames large enough for a packet of `mtu` bytes
/// (a power of two, so they fill the blocks exactly).
fn frames_for_mtu(cfg: &AfPacketConfig, mtu: u32) -> AfPacketConfig {
    let mut cfg = cfg.clone();
    if !cfg.tpacket_v3 {
        let needed = mtu.saturating_add(LINK_HEADER_ROOM + V2_FRAME_OVERHEAD);
        cfg.frame_size = cfg.frame_size.max(needed).next_power_of_two();
        cfg.block_size = cfg.block_size.max(cfg.frame_size).next_multiple_of(cfg.frame_size);
    }
    cfg
}

/// Turns the merging offloads of `interface` off, saying so; the guard turns them back on.
fn offloads_off(interface: &str) -> Result<Arc<OffloadGuard>, BridgeError> {
    let (guard, report) = offload::turn_off_merging(interface).map_err(BridgeError::Offload)?;
    for name in &report.turned_off {
        eprintln!("picket: turned off {name} on {interface} so that bridged frames fit the MTU");
    }
    for name in &report.still_on {
        eprintln!(
            "picket: warning: {name} stays on on {interface} (the driver does not let it change): merged frames \
             larger than the MTU cannot be forwarded and are counted in {OVERSIZE}"
        );
    }
    Ok(Arc::new(guard))
}

/// Counters of one direction of a bridge.
#[derive(Clone, Copy, Debug, Default)]
struct DirectionStats {
    forwarded: u64,
    oversize: u64,
    replies: u64,
    unanswered: u64,
}

/// One direction of one bridged pair on one worker: reads the ingress interface,
/// forwards on the egress one.
struct Direction {
    rx: AfPacketSocket,
    /// Sends on the egress interface.
    out: TxSocket,
    /// Sends on the ingress interface (replies to the source of a rejected packet).
    back: TxSocket,
    mode: CopyMode,
    link: LinkType,
    stats: DirectionStats,
    /// The unfinished-checksum warning was given for this ingress interface.
    warned_csum: bool,
}

/// A worker's share of every bridge: both directions of each pair. One port rather than
/// one per direction so that an idle worker sleeps in one `poll` on all its ingress
/// sockets and wakes for whichever has a packet first.
pub struct BridgePort {
    directions: Vec<Direction>,
    /// Reject replies being built; reused between packets.
    replies: Vec<Reply>,
    /// Held so the offloads come back on once every port of the interface is gone.
    _offloads: Vec<Arc<OffloadGuard>>,
    /// The run's stop flag (SIGINT/SIGTERM).
    stop: Arc<AtomicBool>,
    /// After the stop: the packets in the rings at that moment were handled.
    drained: bool,
}

impl BridgePort {
    /// Ingress and egress interface of each direction.
    pub fn directions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.directions.iter().map(|d| (d.rx.interface(), d.out.interface()))
    }

    /// Reads what is ready on every ingress socket, carrying out each verdict; then sends
    /// what was queued. Returns the packets visited.
    fn read_ready(&mut self, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> usize {
        let replies = &mut self.replies;
        let mut visited = 0;
        for d in &mut self.directions {
            let Direction { rx, out, back, mode, link, stats, warned_csum } = d;
            let (mode, link, mtu) = (*mode, *link, out.mtu() as usize);
            visited += rx.read_ready(&mut |raw| {
                let verdict = inspect(raw);
                let forward = match verdict {
                    _ if mode == CopyMode::Tap => true,
                    Verdict::Pass => true,
                    Verdict::Drop => false,
                    Verdict::Reject(reject) => {
                        // Toward the source out of the port the packet came in by; toward the
                        // destination out of the other one, where the packet was going.
                        replies.clear();
                        match reject::replies(link, raw.data, reject, replies) {
                            Ok(0) | Err(_) => stats.unanswered += 1,
                            Ok(_) => {
                                for reply in replies.iter() {
                                    stats.replies += 1;
                                    match reply.toward {
                                        Toward::Source => back.push(&reply.frame),
                                        Toward::Destination => out.push(&reply.frame),
                                    }
                                }
                            }
                        }
                        false
                    }
                };
                if forward {
                    if raw.data.len() < raw.wire_len as usize || network_len(link, raw.data) > mtu {
                        stats.oversize += 1;
                    } else {
                        stats.forwarded += 1;
                        out.push(raw.data);
                    }
                }
            });
            // No packet waits for the next poll: the batch goes out now.
            out.flush();
            back.flush();
            if !*warned_csum && rx.totals().csum_not_ready > 0 {
                *warned_csum = true;
                eprintln!(
                    "picket: warning: frames from {} arrive with their checksum left to offload (the sender is a \
                     local stack, e.g. a veth peer): forwarded as they are, the receiver drops them; turn checksum \
                     offload off on the sending side (ethtool -K PEER tx off). Counted in {CSUM_NOT_READY}",
                    rx.interface()
                );
            }
        }
        visited
    }
}

/// Bytes of `frame` above the link layer: what the egress MTU limits.
fn network_len(link: LinkType, frame: &[u8]) -> usize {
    if link != LinkType::Ethernet {
        return frame.len();
    }
    let mut header = ETHERNET_HEADER_LEN;
    for _ in 0..MAX_VLAN_TAGS {
        let at = header - (ETHERNET_HEADER_LEN - ETHERTYPE_OFFSET);
        let tpid = frame.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        match tpid {
            Some(t) if VLAN_TPIDS.contains(&t) => header += VLAN_TAG_LEN,
            _ => break,
        }
    }
    frame.len().saturating_sub(header)
}

impl LivePort for BridgePort {
    fn poll(&mut self, wait: Duration, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            // Stopping: handle what the rings hold now, once. Traffic that keeps coming
            // must not keep the worker from ending (the live loop drains until a poll
            // finds nothing).
            if self.drained {
                return Ok(0);
            }
            self.drained = true;
            return Ok(self.read_ready(inspect));
        }
        let visited = self.read_ready(inspect);
        if visited > 0 || wait.is_zero() {
            return Ok(visited);
        }
        let sockets: Vec<&AfPacketSocket> = self.directions.iter().map(|d| &d.rx).collect();
        AfPacketSocket::wait_any(&sockets, wait)?;
        Ok(self.read_ready(inspect))
    }

    fn kernel_counts(&mut self) -> KernelCounts {
        let mut total = KernelCounts::default();
        for d in &mut self.directions {
            let k = LivePort::kernel_counts(&mut d.rx);
            total.packets += k.packets;
            total.drops += k.drops;
        }
        total
    }

    fn add_counters(&self, into: &mut CounterSet) {
        for d in &self.directions {
            LivePort::add_counters(&d.rx, into);
            into.add(FORWARDED, d.stats.forwarded);
            into.add(OVERSIZE, d.stats.oversize);
            into.add(CSUM_NOT_READY, d.rx.totals().csum_not_ready);
            into.add(TX_ERRORS, d.out.stats().errors + d.back.stats().errors);
            if d.mode == CopyMode::Ips {
                into.add(REJECT_REPLIES, d.stats.replies);
                into.add(REJECT_UNANSWERED, d.stats.unanswered);
            }
        }
    }

    fn mode(&self) -> PortMode {
        if self.directions.iter().any(|d| d.mode == CopyMode::Ips) {
            PortMode::Inline
        } else {
            PortMode::Passive
        }
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .directions
            .iter()
            .map(|d| {
                format!(
                    "{} -> {} ({}, {}; {})",
                    d.rx.interface(),
                    d.out.interface(),
                    d.mode.name(),
                    LivePort::describe(&d.rx),
                    d.out.options().describe()
                )
            })
            .collect();
        format!("bridge {}", parts.join("; "))
    }

    fn flush(&mut self) -> io::Result<()> {
        for d in &mut self.directions {
            d.out.flush();
            d.back.flush();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_length_skips_link_header_and_vlan_tags() {
        let mut frame = vec![0u8; 14 + 1500];
        frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(network_len(LinkType::Ethernet, &frame), 1500);
        let mut tagged = vec![0u8; 12];
        tagged.extend_from_slice(&0x88a8u16.to_be_bytes());
        tagged.extend_from_slice(&[0, 5]);
        tagged.extend_from_slice(&0x8100u16.to_be_bytes());
        tagged.extend_from_slice(&[0, 7]);
        tagged.extend_from_slice(&0x0800u16.to_be_bytes());
        tagged.extend_from_slice(&[0u8; 1500]);
        assert_eq!(network_len(LinkType::Ethernet, &tagged), 1500);
        assert_eq!(network_len(LinkType::RawIp, &[0u8; 60]), 60);
        // Too short for a header: nothing above it, never a panic.
        assert_eq!(network_len(LinkType::Ethernet, &[0x81, 0]), 0);
        let only_tags: Vec<u8> = [0u8; 12].into_iter().chain([0x81, 0x00].into_iter().cycle().take(40)).collect();
        assert_eq!(network_len(LinkType::Ethernet, &only_tags), only_tags.len() - 14 - 4 * MAX_VLAN_TAGS);
    }

    #[test]
    fn errors_are_one_line() {
        let e = BridgeError::SameInterface { interface: "b0".into() };
        assert!(e.to_string().contains("b0,b0") && !e.to_string().contains('\n'));
        let e = BridgeError::LinkMismatch { a: "eth0".into(), b: "tun0".into() };
        assert!(e.to_string().contains("eth0,tun0"));
    }
}
