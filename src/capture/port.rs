//! One worker's share of a live capture: the [`LivePort`] trait the live worker loop
//! (`pipeline::live`) drives, whatever the packets come from.
//!
//! A port reads packets, asks the worker for a verdict on each, and carries the verdict
//! out where it can:
//! - a passive port (AF_PACKET on a tap or span port) reads and ignores the verdict;
//! - an inline port (NFQUEUE, an AF_PACKET bridge) accepts, drops or rejects each packet
//!   before it reads the next batch, and sends reject replies (TCP RST, ICMP unreachable)
//!   itself, through the path the packet came by.
//!
//! The worker owns its ports, so no port is ever touched by two threads.

use crate::counters::CounterSet;
use crate::inspect::Verdict;
use std::io;
use std::time::Duration;

use super::RawPacket;

/// Counter of an NFQUEUE port: packets the kernel let through unqueued because the
/// queue or socket buffer was full (`nfq.fail-open`). picket's own name (`stats.picket`).
pub const FAIL_OPEN: &str = "picket.ips.fail_open";
/// Counter of an inline port: packets (forwarded or reject replies) that could not be sent.
pub const TX_ERRORS: &str = "picket.ips.tx_errors";

/// What the kernel reports about a port's packets: the basis of the loss accounting
/// (`capture.kernel_packets`, `capture.kernel_drops`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Packets the kernel offered this port, dropped ones included.
    pub packets: u64,
    /// Packets the kernel dropped before the port could read them (ring or queue full).
    pub drops: u64,
}

/// Whether a port acts on the verdicts it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortMode {
    /// Packets are copies (tap, span port): verdicts cannot block anything.
    Passive,
    /// The port holds each packet until its verdict is carried out.
    Inline,
}

pub trait LivePort: Send {
    /// Visits the packets that are ready, waiting at most `wait` when none is; calls
    /// `inspect` once per packet and, inline, carries out the verdict it returns before
    /// the packet's buffer is reused. Returns the number of packets visited (0 after a
    /// timeout).
    ///
    /// An `Err` is not fatal: it reports a transient fault (interface down, a netlink
    /// error); the worker counts it, waits briefly and polls again.
    fn poll(&mut self, wait: Duration, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<usize>;

    /// The kernel's running totals for this port.
    fn kernel_counts(&mut self) -> KernelCounts;

    /// Adds this port's counters (beyond [`KernelCounts`]) to `into`, under Suricata's
    /// names where it has one (`capture.*`, `ips.*`) and `capture.<kind>.*` otherwise.
    fn add_counters(&self, into: &mut CounterSet);

    fn mode(&self) -> PortMode;

    /// One line for logs: "interface eth0 (af-packet fanout group 99, cluster_flow)".
    fn describe(&self) -> String;

    /// Before the worker ends: issues any verdict still held (a batch not yet sent), so
    /// that no packet stays queued in the kernel when picket exits.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
