//! Live capture through AF_XDP sockets (`--af-xdp=IFACE`, YAML `af-xdp:`): one socket
//! per RX queue of the interface, fed by picket's XDP program (`bpf/picket_xdp.c`),
//! which redirects the packets picket must inspect into the socket of their queue
//! (the `picket_xsks` map) and deals with the rest in the kernel (blocklist, SYN
//! cookies, bypass, pass-through).
//!
//! Each socket binds in zero-copy mode where the driver supports it (the NIC writes
//! into picket's memory) and in copy mode otherwise (veth, generic XDP). AF_XDP capture
//! is passive: redirected packets leave the kernel stack, so the interface is a sink, as
//! a tap or span port is, and verdicts are not carried out.
//!
//! Own code on `libc` rather than a crate: `xsk-rs` (0.11) is built on `libxdp-sys`,
//! i.e. libxdp and libbpf C libraries compiled or linked in, and libxdp wants to manage
//! the interface's XDP program, while picket loads its own with aya; `xdpilone` (1.3) is
//! pure Rust, but EUPL-1.2 (one more licence to vet beside picket's GPL-2.0) and built
//! around shared UMEMs and TX/RX device queues, more than a receive-only tap needs. What
//! picket needs is one UMEM, a fill ring and an RX ring per queue, under the
//! [`LivePort`] contract: about 300 lines, all `unsafe` in `sys.rs`.
//!
//! Counters: `capture.kernel_packets` (packets read plus kernel drops) and
//! `capture.kernel_drops` (XDP_STATISTICS: `rx_dropped` + `rx_ring_full` +
//! `rx_invalid_descs`), `capture.afxdp.{poll,poll_timeout,poll_failed,empty_reads}`
//! as Suricata names them, `capture.afxdp.{rx_dropped,rx_ring_full,fill_ring_empty,
//! invalid_descs}` for the kernel's finer figures, `capture.afxdp.bad_descriptors` (RX
//! descriptors outside the UMEM, skipped) and `capture.afxdp.coalesce_waits` (see
//! [`COALESCE`]).

mod sys;

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::port::{KernelCounts, LivePort, PortMode};
use super::RawPacket;
use crate::counters::CounterSet;
use crate::inspect::Verdict;
use crate::packet::{LinkType, Timestamp};

/// Frames per socket (UMEM size / frame size; also the fill and RX ring sizes).
pub const DEFAULT_FRAMES: u32 = 4096;
/// Bytes per UMEM frame: a page, which fits a 1500-byte MTU frame with room to spare.
pub const DEFAULT_FRAME_SIZE: u32 = 4096;
/// Largest RX queue index the XDP program's `picket_xsks` map holds (its max_entries).
pub const MAX_QUEUES: u32 = 64;
/// Packets read per call of [`LivePort::poll`] before the worker checks its other work.
const BATCH: u32 = 256;
/// After a wake-up that found fewer than [`SPARSE`] packets ready, the socket waits this
/// long for more before reading: in copy mode every packet can wake the worker, and at
/// moderate rates (10k-200k pps) those wake-ups cost more than the packets. This is the
/// interrupt coalescing a NIC does, bounded far below AF_PACKET's block timeout; under
/// load the ring is never empty and no wait happens.
const COALESCE: Duration = Duration::from_micros(200);
const SPARSE: u32 = BATCH / 4;

/// How a socket binds to its queue (Suricata's `force-bind-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BindMode {
    /// Zero-copy, else copy.
    #[default]
    Auto,
    ZeroCopy,
    Copy,
}

impl BindMode {
    fn attempts(self) -> &'static [(u16, &'static str)] {
        const ZC: (u16, &str) = (libc::XDP_ZEROCOPY, "zero-copy");
        const COPY: (u16, &str) = (libc::XDP_COPY, "copy");
        match self {
            BindMode::Auto => &[ZC, COPY],
            BindMode::ZeroCopy => &[ZC],
            BindMode::Copy => &[COPY],
        }
    }
}

/// Settings of the AF_XDP capture on one interface.
#[derive(Clone, Debug)]
pub struct AfXdpConfig {
    pub interface: String,
    /// Workers asked for in the YAML (`threads`); `None`: one per queue (`auto`).
    pub threads: Option<usize>,
    pub bind: BindMode,
    pub frames: u32,
    pub frame_size: u32,
}

impl AfXdpConfig {
    pub fn new(interface: &str) -> AfXdpConfig {
        AfXdpConfig {
            interface: interface.to_string(),
            threads: None,
            bind: BindMode::Auto,
            frames: DEFAULT_FRAMES,
            frame_size: DEFAULT_FRAME_SIZE,
        }
    }
}

/// Why AF_XDP capture could not start. One line naming the interface (and queue) and
/// the fix.
#[derive(Debug)]
pub enum AfXdpError {
    NoSuchInterface {
        interface: String,
    },
    TooManyQueues {
        interface: String,
        queues: u32,
    },
    NeedsPrivilege {
        interface: String,
        source: io::Error,
    },
    /// The driver cannot bind in the mode `force-bind-mode` demands.
    ZeroCopyUnsupported {
        interface: String,
        queue: u32,
        source: io::Error,
    },
    Busy {
        interface: String,
        queue: u32,
    },
    Setup {
        interface: String,
        queue: u32,
        step: &'static str,
        source: io::Error,
    },
    /// The socket could not be put into the XDP program's `picket_xsks` map.
    Register {
        interface: String,
        queue: u32,
        reason: String,
    },
}

impl fmt::Display for AfXdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AfXdpError::NoSuchInterface { interface } => {
                write!(f, "af-xdp: no interface {interface} (see ip link)")
            }
            AfXdpError::TooManyQueues { interface, queues } => write!(
                f,
                "af-xdp: {interface} has {queues} RX queues, more than the {MAX_QUEUES} picket's XDP program maps; \
                 reduce them with ethtool -L {interface} combined {MAX_QUEUES}"
            ),
            AfXdpError::NeedsPrivilege { interface, source } => {
                write!(f, "af-xdp on {interface}: {source}; AF_XDP needs root (CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN)")
            }
            AfXdpError::ZeroCopyUnsupported { interface, queue, source } => write!(
                f,
                "af-xdp on {interface} queue {queue}: the driver refuses zero-copy ({source}); \
                 use force-bind-mode: copy or none"
            ),
            AfXdpError::Busy { interface, queue } => write!(
                f,
                "af-xdp on {interface} queue {queue}: the queue already has an AF_XDP socket (another picket or \
                 AF_XDP program is capturing there); stop it first"
            ),
            AfXdpError::Setup { interface, queue, step, source } => {
                write!(f, "af-xdp on {interface} queue {queue}: {step} failed: {source}")
            }
            AfXdpError::Register { interface, queue, reason } => {
                write!(f, "af-xdp on {interface} queue {queue}: cannot register the socket with XDP: {reason}")
            }
        }
    }
}

impl std::error::Error for AfXdpError {}

/// The number of RX queues of `interface` (what `/sys/class/net/IF/queues` lists).
pub fn rx_queues(interface: &str) -> Result<u32, AfXdpError> {
    let missing = || AfXdpError::NoSuchInterface { interface: interface.to_string() };
    if interface.is_empty() || interface.contains('/') || interface == "." || interface == ".." {
        return Err(missing());
    }
    let dir = std::path::Path::new("/sys/class/net").join(interface).join("queues");
    let entries = std::fs::read_dir(&dir).map_err(|_| missing())?;
    let count =
        entries.filter_map(|e| e.ok()).filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("rx-"))).count()
            as u32;
    Ok(count.max(1))
}

/// Which queues worker `w` of `workers` owns: `w`, `w + workers`, ...
pub fn queues_of_worker(worker: usize, workers: usize, queues: u32) -> Vec<u32> {
    (0..queues).filter(|q| *q as usize % workers.max(1) == worker).collect()
}

/// The workers an AF_XDP capture runs: one per queue at most, and no more than the
/// YAML's `threads` or `--workers`.
pub fn worker_count(config: &AfXdpConfig, configured: usize, queues: u32) -> usize {
    let wanted = config.threads.unwrap_or(queues as usize).min(configured.max(1));
    wanted.clamp(1, queues.max(1) as usize)
}

/// Opens a socket for every RX queue of the interface and spreads them over
/// `workers` (worker `i` owns queues `i`, `i + workers`, ...); `register(queue, fd)`
/// puts each socket into the XDP program's map. Returns `[worker][port]`.
pub fn open_ports(
    config: &AfXdpConfig,
    workers: usize,
    register: &mut dyn FnMut(u32, RawFd) -> Result<(), String>,
) -> Result<Vec<Vec<Box<dyn LivePort>>>, AfXdpError> {
    let queues = rx_queues(&config.interface)?;
    if queues > MAX_QUEUES {
        return Err(AfXdpError::TooManyQueues { interface: config.interface.clone(), queues });
    }
    let mut all: Vec<Vec<Box<dyn LivePort>>> = (0..workers.max(1)).map(|_| Vec::new()).collect();
    for (w, ports) in all.iter_mut().enumerate() {
        for queue in queues_of_worker(w, workers, queues) {
            let socket = AfXdpSocket::open(config, queue)?;
            register(queue, socket.xsk.raw_fd()).map_err(|reason| AfXdpError::Register {
                interface: config.interface.clone(),
                queue,
                reason,
            })?;
            ports.push(Box::new(socket));
        }
    }
    Ok(all)
}

/// [`open_ports`] with each socket put into `xdp`'s `picket_xsks` map at its queue
/// index, where the XDP program redirects that queue's packets.
pub fn open_behind_xdp(
    config: &AfXdpConfig,
    workers: usize,
    xdp: &mut crate::xdp::XdpLayer,
) -> Result<Vec<Vec<Box<dyn LivePort>>>, AfXdpError> {
    let unregistered = |reason: String| AfXdpError::Register { interface: config.interface.clone(), queue: 0, reason };
    let map = xdp
        .ebpf_mut()
        .map_mut(XSK_MAP)
        .ok_or_else(|| unregistered(format!("the XDP object has no map {XSK_MAP} (stale build?)")))?;
    let mut xsks: aya::maps::XskMap<&mut aya::maps::MapData> =
        aya::maps::XskMap::try_from(map).map_err(|e| unregistered(format!("{XSK_MAP}: {e}")))?;
    open_ports(config, workers, &mut |queue, fd| xsks.set(queue, fd, 0).map_err(|e| format!("{XSK_MAP}: {e}")))
}

/// The XDP program's map of AF_XDP sockets, indexed by RX queue (`bpf/common.h`).
pub const XSK_MAP: &str = "picket_xsks";

/// Running totals of one socket.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    delivered: u64,
    polls: u64,
    poll_timeouts: u64,
    poll_failures: u64,
    empty_reads: u64,
    coalesce_waits: u64,
}

/// One AF_XDP socket, bound to one RX queue, owned by one worker.
pub struct AfXdpSocket {
    xsk: sys::Xsk,
    interface: String,
    queue: u32,
    totals: Totals,
    /// The kernel's statistics when last read (kept if a later read fails).
    kernel: sys::XskStats,
}

impl AfXdpSocket {
    /// Creates and binds the socket of `queue` (zero-copy first, unless told otherwise).
    pub fn open(config: &AfXdpConfig, queue: u32) -> Result<AfXdpSocket, AfXdpError> {
        let interface = config.interface.clone();
        let ifindex = sys::interface_index(&interface)
            .map_err(|_| AfXdpError::NoSuchInterface { interface: interface.clone() })?;
        let frames = config.frames.max(64).next_power_of_two();
        let frame_size = if config.frame_size <= 2048 { 2048 } else { 4096 };
        let geometry = sys::Geometry { frames, frame_size };
        let attempts = config.bind.attempts();
        for (i, (flags, _name)) in attempts.iter().enumerate() {
            let error = match sys::Xsk::open(ifindex, queue, geometry, *flags) {
                sys::BindOutcome::Bound(xsk) => {
                    return Ok(AfXdpSocket {
                        xsk,
                        interface,
                        queue,
                        totals: Totals::default(),
                        kernel: sys::XskStats::default(),
                    })
                }
                sys::BindOutcome::Unsupported(e) if i + 1 < attempts.len() => {
                    let _ = e; // zero-copy refused: copy mode next
                    continue;
                }
                sys::BindOutcome::Unsupported(e) => {
                    return Err(AfXdpError::ZeroCopyUnsupported { interface, queue, source: e.source })
                }
                sys::BindOutcome::Failed(e) => e,
            };
            return Err(match error.source.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    AfXdpError::NeedsPrivilege { interface, source: error.source }
                }
                Some(libc::EBUSY) => AfXdpError::Busy { interface, queue },
                Some(libc::ENODEV) => AfXdpError::NoSuchInterface { interface },
                _ => AfXdpError::Setup { interface, queue, step: error.step, source: error.source },
            });
        }
        // Every bind mode has at least one attempt; this only answers an empty list.
        Err(AfXdpError::Setup { interface, queue, step: "bind", source: io::Error::other("no bind mode to try") })
    }

    /// Whether the socket runs in zero-copy mode.
    pub fn zero_copy(&self) -> bool {
        self.xsk.zero_copy
    }

    pub fn queue(&self) -> u32 {
        self.queue
    }

    fn refresh_kernel(&mut self) {
        if let Ok(stats) = self.xsk.statistics() {
            self.kernel = stats;
        }
    }

    fn read_batch(&mut self, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> u32 {
        let ts = now();
        let mut visit = |data: &[u8]| {
            // Passive: the verdict cannot act on a redirected packet's copy.
            let _ = inspect(RawPacket { ts, link: LinkType::Ethernet, wire_len: data.len() as u32, data });
        };
        let n = self.xsk.receive(BATCH, &mut visit);
        self.totals.delivered += n as u64;
        n
    }
}

fn now() -> Timestamp {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp::from_parts(now.as_secs(), now.subsec_nanos())
}

/// A passive capture port: the XDP program redirected the packets, and the kernel
/// stack never sees them, whatever the verdict.
impl LivePort for AfXdpSocket {
    fn poll(&mut self, wait: Duration, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<usize> {
        let n = self.read_batch(inspect);
        if n > 0 || wait.is_zero() {
            if n == 0 {
                self.totals.empty_reads += 1;
            }
            return Ok(n as usize);
        }
        self.totals.polls += 1;
        match self.xsk.wait(wait) {
            Ok(true) => {
                if self.xsk.ready() < SPARSE {
                    self.totals.coalesce_waits += 1;
                    std::thread::sleep(COALESCE);
                }
            }
            Ok(false) => {
                self.totals.poll_timeouts += 1;
                return Ok(0);
            }
            Err(e) => {
                self.totals.poll_failures += 1;
                return Err(e);
            }
        }
        Ok(self.read_batch(inspect) as usize)
    }

    fn kernel_counts(&mut self) -> KernelCounts {
        self.refresh_kernel();
        let k = &self.kernel;
        let drops = k.rx_dropped + k.rx_ring_full + k.rx_invalid_descs;
        KernelCounts { packets: self.totals.delivered + drops, drops }
    }

    fn add_counters(&self, into: &mut CounterSet) {
        let (t, k) = (&self.totals, &self.kernel);
        into.add("capture.afxdp.poll", t.polls);
        into.add("capture.afxdp.poll_timeout", t.poll_timeouts);
        into.add("capture.afxdp.poll_failed", t.poll_failures);
        into.add("capture.afxdp.empty_reads", t.empty_reads);
        into.add("capture.afxdp.coalesce_waits", t.coalesce_waits);
        into.add("capture.afxdp.rx_dropped", k.rx_dropped);
        into.add("capture.afxdp.rx_ring_full", k.rx_ring_full);
        into.add("capture.afxdp.fill_ring_empty", k.rx_fill_ring_empty);
        into.add("capture.afxdp.invalid_descs", k.rx_invalid_descs);
        into.add("capture.afxdp.bad_descriptors", self.xsk.bad_descriptors);
    }

    fn mode(&self) -> PortMode {
        PortMode::Passive
    }

    fn describe(&self) -> String {
        format!(
            "interface {} queue {} (af-xdp, {})",
            self.interface,
            self.queue,
            if self.xsk.zero_copy { "zero-copy" } else { "copy" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_spread_over_workers() {
        assert_eq!(queues_of_worker(0, 2, 4), vec![0, 2]);
        assert_eq!(queues_of_worker(1, 2, 4), vec![1, 3]);
        assert_eq!(queues_of_worker(0, 1, 3), vec![0, 1, 2]);
        assert!(queues_of_worker(2, 3, 2).is_empty());
    }

    #[test]
    fn workers_never_outnumber_queues() {
        let mut c = AfXdpConfig::new("eth0");
        assert_eq!(worker_count(&c, 4, 2), 2);
        assert_eq!(worker_count(&c, 1, 8), 1);
        c.threads = Some(3);
        assert_eq!(worker_count(&c, 8, 8), 3);
        assert_eq!(worker_count(&c, 0, 0), 1);
    }

    #[test]
    fn missing_interface_is_one_line() {
        let e = rx_queues("picket-no-such0").unwrap_err().to_string();
        assert!(e.contains("no interface picket-no-such0") && !e.contains('\n'), "{e}");
        assert!(rx_queues("../etc").is_err());
    }
}
