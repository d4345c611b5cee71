//! Live capture from a Linux interface through AF_PACKET TPACKET_V3 receive rings (or
//! TPACKET_V2, one frame per packet, for the low latency an inline bridge needs), and
//! transmission on an interface ([`TxSocket`], `tx.rs`).
//!
//! One [`AfPacketSocket`] per worker. All sockets of a capture join the same
//! PACKET_FANOUT group, and the kernel spreads packets over them (by default by a flow
//! hash that is the same in both directions, so each worker sees whole flows).
//!
//! The kernel writes packets into a ring shared with this process, grouped in blocks of
//! `block_size` bytes. A block is handed to user space when it is full or when
//! `retire_timeout_ms` passed since its first packet; all packets of a ready block are
//! read without a system call, and `poll` is only called when the ring is empty.
//!
//! The kernel takes a VLAN tag out of the frame and reports it beside the packet; it is
//! put back (in a small per-socket buffer, only for tagged packets) so the decoder sees
//! the frame as it was on the wire.
//!
//! All system calls and `unsafe` code are in `sys.rs`; `block.rs` parses a block with
//! bounds-checked safe code.

pub mod adaptive;
mod block;
mod sys;
#[cfg(test)]
mod tests;
mod tx;

pub use tx::{TxOptions, TxSocket, TxStats};

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::bpf::{BpfError, BpfProgram, MAX_SOCKET_FILTER_INSTRUCTIONS};
use super::port::{KernelCounts, LivePort, PortMode};
use super::{CaptureError, PacketSource, RawPacket};
use crate::counters::CounterSet;
use crate::inspect::Verdict;
use crate::packet::{LinkType, Timestamp};

/// How the kernel picks the socket of a fanout group for each packet (PACKET_FANOUT_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanoutMode {
    /// Flow hash, symmetric: both directions of a flow go to the same socket.
    Hash,
    /// Round robin over the sockets.
    Lb,
    /// The socket with the index of the CPU that received the packet.
    Cpu,
    /// Random socket.
    Rnd,
    /// The socket with the index of the receive queue the packet came in on.
    Qm,
    /// An eBPF program (loaded by the caller, kept open until `open` returns) returns
    /// the socket index.
    Ebpf(RawFd),
    /// picket's own eBPF program (`adaptive.rs`): a symmetric flow hash through a bucket
    /// table that picket rewrites to even out the workers' load. The program comes in
    /// [`AfPacketConfig::fanout_program`].
    Adaptive,
}

impl FanoutMode {
    fn kernel_mode(self) -> u32 {
        match self {
            FanoutMode::Hash => libc::PACKET_FANOUT_HASH,
            FanoutMode::Lb => libc::PACKET_FANOUT_LB,
            FanoutMode::Cpu => libc::PACKET_FANOUT_CPU,
            FanoutMode::Rnd => libc::PACKET_FANOUT_RND,
            FanoutMode::Qm => libc::PACKET_FANOUT_QM,
            FanoutMode::Ebpf(_) | FanoutMode::Adaptive => libc::PACKET_FANOUT_EBPF,
        }
    }

    /// Suricata's name for the mode (`cluster-type`).
    pub fn name(self) -> &'static str {
        match self {
            FanoutMode::Hash => "cluster_flow",
            FanoutMode::Lb => "cluster_round_robin",
            FanoutMode::Cpu => "cluster_cpu",
            FanoutMode::Rnd => "cluster_random",
            FanoutMode::Qm => "cluster_qm",
            FanoutMode::Ebpf(_) => "cluster_ebpf",
            FanoutMode::Adaptive => "cluster_adaptive",
        }
    }
}

/// Settings of one capture socket. All sockets of a fanout group must agree on
/// `fanout_group`, `fanout_mode`, `rollover` and `defrag`, or joining fails.
#[derive(Clone, Debug)]
pub struct AfPacketConfig {
    pub interface: String,
    /// Fanout group id, shared by the sockets of one capture (Suricata's `cluster-id`).
    pub fanout_group: u16,
    pub fanout_mode: FanoutMode,
    /// When a socket's ring is full, hand its packets to another socket of the group
    /// instead of dropping them (breaks per-flow affinity under overload).
    pub rollover: bool,
    /// Reassemble IP fragments before the fanout decision, so all fragments of a
    /// datagram reach the same socket as its flow.
    pub defrag: bool,
    pub promiscuous: bool,
    /// Bytes per ring block: a multiple of the page size. Packets larger than a block
    /// are truncated.
    pub block_size: u32,
    /// Nominal frame size (multiple of 16). With TPACKET_V3 packets are packed in
    /// blocks at their real size; the kernel only checks this against the block size.
    pub frame_size: u32,
    /// Blocks per ring; the ring holds `block_size * block_count` bytes per socket.
    pub block_count: u32,
    /// A block with at least one packet is handed over at the latest this long after
    /// it was opened, bounding the delay on a quiet link. 0 lets the kernel choose
    /// from the link speed.
    pub retire_timeout_ms: u32,
    /// Set to make [`PacketSource::next_packet`] return `Ok(None)`; checked before
    /// every packet and between waits.
    pub stop: Arc<AtomicBool>,
    /// A BPF filter expression, compiled for the interface's link type and attached to
    /// the socket before it is bound: rejected packets never reach the ring.
    pub bpf_filter: Option<String>,
    /// Leave out the packets this host sends on the interface (PACKET_OUTGOING), own
    /// transmissions included: an inline bridge must not read back what it forwarded.
    /// Asked of the kernel (the fanout group's IGNORE_OUTGOING flag, Linux 6.9+) and
    /// checked again per packet, so older kernels only cost the reading.
    pub ignore_outgoing: bool,
    /// TPACKET_V3 (the default): the kernel packs packets into blocks and hands a block
    /// over when it is full or `retire_timeout_ms` after its first packet: few wake-ups,
    /// but a packet may wait up to that timeout. TPACKET_V2: one fixed-size frame per
    /// packet, handed over at once (what an inline bridge needs, as in Suricata's IPS
    /// mode); packets larger than a frame are cut to it.
    pub tpacket_v3: bool,
    /// An eBPF socket filter program (`--ddos`: the XDP layer's `picket_sockfilter`,
    /// which hides what XDP passed through or bypassed), attached before bind like
    /// `bpf_filter`. A socket has one filter: the two exclude each other.
    pub socket_filter: Option<Arc<OwnedFd>>,
    /// The loaded [`adaptive::FanoutProgram`] for [`FanoutMode::Adaptive`], handed to the
    /// fanout group with PACKET_FANOUT_DATA.
    pub fanout_program: Option<Arc<OwnedFd>>,
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            interface: String::new(),
            fanout_group: 99,
            fanout_mode: FanoutMode::Hash,
            rollover: false,
            defrag: true,
            promiscuous: true,
            block_size: 1 << 20,
            frame_size: 2048,
            block_count: 32,
            retire_timeout_ms: 10,
            stop: Arc::new(AtomicBool::new(false)),
            bpf_filter: None,
            ignore_outgoing: false,
            tpacket_v3: true,
            socket_filter: None,
            fanout_program: None,
        }
    }
}

/// Largest ring accepted per socket. Well beyond any sensible setting; catches typos
/// that would pin gigabytes of kernel memory per worker.
pub const MAX_RING_BYTES: u64 = 4 << 30;
/// Largest retire timeout accepted, in milliseconds.
pub const MAX_RETIRE_TIMEOUT_MS: u32 = 10_000;
/// Longest interface name Linux accepts (IFNAMSIZ minus the terminating NUL).
const MAX_INTERFACE_NAME: usize = libc::IFNAMSIZ - 1;
/// How long [`PacketSource::next_packet`] sleeps in `poll` between checks of the stop flag.
const IDLE_WAIT: Duration = Duration::from_millis(100);

impl AfPacketConfig {
    /// Default settings for `interface`.
    pub fn for_interface(interface: &str) -> Self {
        AfPacketConfig { interface: interface.to_string(), ..Default::default() }
    }

    /// Bytes of one socket's ring.
    pub fn ring_bytes(&self) -> u64 {
        self.block_size as u64 * self.block_count as u64
    }

    /// Checks the settings without touching the system (the page size aside).
    pub fn validate(&self) -> Result<(), AfPacketError> {
        let invalid = |field: &'static str, reason: String| Err(AfPacketError::InvalidConfig { field, reason });
        let name = &self.interface;
        if name.is_empty() {
            return invalid("interface", "no interface given".into());
        }
        if name.len() > MAX_INTERFACE_NAME {
            return invalid(
                "interface",
                format!("{name:?} is {} bytes long; Linux names have at most {MAX_INTERFACE_NAME}", name.len()),
            );
        }
        if name == "." || name == ".." || name.chars().any(|c| c == '/' || c == '\0' || c.is_whitespace()) {
            return invalid("interface", format!("{name:?} is not a valid interface name"));
        }
        let page = sys::page_size();
        if self.block_size == 0 || !(self.block_size as usize).is_multiple_of(page) {
            return invalid(
                "block_size",
                format!("{} is not a multiple of the page size ({page} bytes)", self.block_size),
            );
        }
        let min_frame = libc::TPACKET3_HDRLEN.next_multiple_of(libc::TPACKET_ALIGNMENT) as u32;
        if self.frame_size < min_frame || !(self.frame_size as usize).is_multiple_of(libc::TPACKET_ALIGNMENT) {
            return invalid(
                "frame_size",
                format!(
                    "{} must be a multiple of {} and at least {min_frame}",
                    self.frame_size,
                    libc::TPACKET_ALIGNMENT
                ),
            );
        }
        if self.frame_size > self.block_size {
            return invalid(
                "frame_size",
                format!("{} is larger than block_size ({})", self.frame_size, self.block_size),
            );
        }
        if !self.tpacket_v3 && !self.block_size.is_multiple_of(self.frame_size) {
            return invalid(
                "frame_size",
                format!(
                    "{} does not divide block_size ({}): with TPACKET_V2 the frames fill the blocks exactly",
                    self.frame_size, self.block_size
                ),
            );
        }
        if self.block_count < 2 {
            return invalid(
                "block_count",
                format!("{} is too few: the kernel needs a block to fill while one is read", self.block_count),
            );
        }
        if self.ring_bytes() > MAX_RING_BYTES {
            return invalid(
                "block_count",
                format!(
                    "a ring of {} blocks of {} bytes is {} MiB per socket, more than the limit of {} MiB",
                    self.block_count,
                    self.block_size,
                    self.ring_bytes() >> 20,
                    MAX_RING_BYTES >> 20
                ),
            );
        }
        if self.retire_timeout_ms > MAX_RETIRE_TIMEOUT_MS {
            return invalid(
                "retire_timeout_ms",
                format!("{} ms is more than the limit of {MAX_RETIRE_TIMEOUT_MS} ms", self.retire_timeout_ms),
            );
        }
        if let FanoutMode::Ebpf(fd) = self.fanout_mode {
            if fd < 0 {
                return invalid("fanout_mode", format!("eBPF program descriptor {fd} is not a valid descriptor"));
            }
        }

        Ok(())
    }
}

/// Why a capture socket could not be opened. `Display` gives one line naming the
/// interface and, where there is one, the likely fix.
#[derive(Debug)]
pub enum AfPacketError {
    InvalidConfig {
        field: &'static str,
        reason: String,
    },
    /// The process lacks CAP_NET_RAW in the network namespace.
    NeedsPrivilege {
        interface: String,
        source: io::Error,
    },
    NoSuchInterface {
        interface: String,
    },
    /// The interface exists but is administratively down.
    InterfaceDown {
        interface: String,
    },
    /// The interface's link layer (ARPHRD_* type) is one picket cannot decode.
    UnsupportedLinkType {
        interface: String,
        hardware_type: u16,
    },
    /// The BPF filter does not compile for the interface's link type (or is too long
    /// for a socket filter).
    Filter {
        interface: String,
        error: BpfError,
    },
    /// A setup step failed; `step` names it.
    Setup {
        interface: String,
        step: SetupStep,
        source: io::Error,
    },
}

/// The step of [`AfPacketSocket::open`] that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupStep {
    CreateSocket,
    LookUpInterface,
    SetVersion {
        v3: bool,
    },
    AllocateRing {
        block_size: u32,
        block_count: u32,
    },
    MapRing,
    Promiscuous,
    Bind,
    JoinFanout {
        group: u16,
        mode: &'static str,
    },
    AttachFanoutProgram,
    AttachFilter,
    /// Transmit sockets (`tx.rs`): PACKET_QDISC_BYPASS, the send timeout.
    QdiscBypass,
    SendTimeout,
    TxRing,
}

impl fmt::Display for SetupStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupStep::CreateSocket => write!(f, "cannot create AF_PACKET socket"),
            SetupStep::LookUpInterface => write!(f, "cannot look up interface"),
            SetupStep::SetVersion { v3: true } => write!(f, "cannot select TPACKET_V3 (kernel older than 3.2?)"),
            SetupStep::SetVersion { v3: false } => write!(f, "cannot select TPACKET_V2"),
            SetupStep::AllocateRing { block_size, block_count } => write!(
                f,
                "cannot allocate a receive ring of {block_count} blocks of {block_size} bytes \
                 (lower block-count or block-size)"
            ),
            SetupStep::MapRing => write!(f, "cannot map the receive ring"),
            SetupStep::Promiscuous => write!(f, "cannot enable promiscuous mode"),
            SetupStep::Bind => write!(f, "cannot bind to interface"),
            SetupStep::JoinFanout { group, mode } => write!(
                f,
                "cannot join fanout group {group} ({mode}); another capture may use this group id \
                 with a different mode or rollover/defrag setting"
            ),
            SetupStep::AttachFanoutProgram => write!(f, "cannot attach the eBPF fanout program"),
            SetupStep::AttachFilter => write!(f, "cannot attach the BPF filter to the socket"),
            SetupStep::QdiscBypass => write!(f, "cannot set PACKET_QDISC_BYPASS (kernel older than 3.14?)"),
            SetupStep::SendTimeout => write!(f, "cannot set the send timeout"),
            SetupStep::TxRing => write!(f, "cannot set up a TPACKET_V2 transmit ring"),
        }
    }
}

impl fmt::Display for AfPacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AfPacketError::InvalidConfig { field, reason } => write!(f, "af-packet {field}: {reason}"),
            AfPacketError::NeedsPrivilege { interface, source } => {
                write!(f, "interface {interface}: live capture needs root or CAP_NET_RAW ({source})")
            }
            AfPacketError::NoSuchInterface { interface } => write!(f, "no such interface {interface}"),
            AfPacketError::InterfaceDown { interface } => {
                write!(f, "interface {interface} is down (bring it up with: ip link set {interface} up)")
            }
            AfPacketError::UnsupportedLinkType { interface, hardware_type } => write!(
                f,
                "interface {interface}: link type ARPHRD {hardware_type} is not supported \
                 (Ethernet, loopback and raw-IP interfaces are)"
            ),
            AfPacketError::Filter { interface, error } => write!(f, "interface {interface}: {error}"),
            AfPacketError::Setup { interface, step, source } => write!(f, "interface {interface}: {step}: {source}"),
        }
    }
}

impl std::error::Error for AfPacketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AfPacketError::NeedsPrivilege { source, .. } | AfPacketError::Setup { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Counters of one socket since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Packets the kernel offered this socket, dropped ones included (tp_packets).
    pub kernel_packets: u64,
    /// Packets the kernel dropped because the ring was full (tp_drops).
    pub kernel_drops: u64,
    /// Times the ring was found full and frozen until a block was released
    /// (tp_freeze_q_cnt).
    pub queue_freezes: u64,
    /// Packets handed to the caller.
    pub delivered: u64,
    /// Tagged frames whose VLAN tag was put back.
    pub vlan_tags_restored: u64,
    /// Tagged frames too short to hold MAC addresses: delivered without the tag.
    pub vlan_tags_not_restored: u64,
    /// Packets whose transport checksum was left to offload (TP_STATUS_CSUMNOTREADY):
    /// forwarded as they are, the receiver finds the checksum wrong.
    pub csum_not_ready: u64,
    /// Block or packet headers pointing outside their block; the rest of that block
    /// was skipped.
    pub malformed_headers: u64,
    /// Packets this host sent, left out because `ignore_outgoing` is set and the kernel
    /// still delivered them (it cannot filter a fanout group's before Linux 6.9).
    pub outgoing_skipped: u64,
}

/// One capture socket with its receive ring; give each worker its own.
pub struct AfPacketSocket {
    // Declared before `fd` so the ring is unmapped before the socket closes.
    ring: sys::Ring,
    fd: OwnedFd,
    interface: String,
    link: LinkType,
    fanout: (u16, FanoutMode),
    stop: Arc<AtomicBool>,
    /// Packets of the held block not yet read, and where the next one's header is.
    remaining_in_block: u32,
    next_offset: usize,
    /// Blocks `advance` may still take before returning; bounds one `poll_packets`.
    acquire_budget: usize,
    /// A tagged frame with its VLAN tag put back; reused between packets.
    vlan_buffer: Vec<u8>,
    ignore_outgoing: bool,
    /// TPACKET_V3 blocks, else TPACKET_V2 frames (one packet per ring slot).
    v3: bool,
    totals: RingStats,
}

fn link_type_for(hardware_type: u16) -> Option<LinkType> {
    /// ARPHRD_RAWIP: raw IP without link header (e.g. cellular modems).
    const ARPHRD_RAWIP: u16 = 519;
    match hardware_type {
        // Loopback carries a (zeroed) Ethernet header.
        libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => Some(LinkType::Ethernet),
        // Devices without a link header: SOCK_RAW data starts at the IP header.
        libc::ARPHRD_NONE
        | ARPHRD_RAWIP
        | libc::ARPHRD_PPP
        | libc::ARPHRD_TUNNEL
        | libc::ARPHRD_TUNNEL6
        | libc::ARPHRD_SIT => Some(LinkType::RawIp),
        _ => None,
    }
}

impl AfPacketSocket {
    /// Creates the socket, its TPACKET_V3 ring, binds it to the interface and joins the
    /// fanout group. Packets flow into the ring from the moment it is bound.
    pub fn open(cfg: &AfPacketConfig) -> Result<Self, AfPacketError> {
        cfg.validate()?;
        let interface = cfg.interface.clone();
        let setup = |step: SetupStep| {
            let interface = interface.clone();
            move |source: io::Error| AfPacketError::Setup { interface, step, source }
        };

        let fd = sys::packet_socket().map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                AfPacketError::NeedsPrivilege { interface: interface.clone(), source }
            }
            _ => AfPacketError::Setup { interface: interface.clone(), step: SetupStep::CreateSocket, source },
        })?;

        let ifindex = sys::interface_index(&fd, &interface).map_err(|source| match source.raw_os_error() {
            Some(libc::ENODEV) => AfPacketError::NoSuchInterface { interface: interface.clone() },
            _ => setup(SetupStep::LookUpInterface)(source),
        })?;
        let flags = sys::interface_flags(&fd, &interface).map_err(setup(SetupStep::LookUpInterface))?;
        if flags & libc::IFF_UP == 0 {
            return Err(AfPacketError::InterfaceDown { interface });
        }

        let version =
            if cfg.tpacket_v3 { libc::tpacket_versions::TPACKET_V3 } else { libc::tpacket_versions::TPACKET_V2 };
        sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &(version as libc::c_int))
            .map_err(setup(SetupStep::SetVersion { v3: cfg.tpacket_v3 }))?;

        let frames_per_block = cfg.block_size / cfg.frame_size;
        let request = libc::tpacket_req3 {
            tp_block_size: cfg.block_size,
            tp_block_nr: cfg.block_count,
            tp_frame_size: cfg.frame_size,
            tp_frame_nr: frames_per_block * cfg.block_count,
            tp_retire_blk_tov: cfg.retire_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        let ring_step = SetupStep::AllocateRing { block_size: cfg.block_size, block_count: cfg.block_count };
        sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &request).map_err(setup(ring_step))?;
        // V3: a slot per block; V2: a slot per frame, the frames filling the blocks exactly.
        let ring = if cfg.tpacket_v3 {
            sys::Ring::map(&fd, cfg.block_size as usize, cfg.block_count as usize, block::BLOCK_STATUS_OFFSET)
        } else {
            let frames = frames_per_block as usize * cfg.block_count as usize;
            sys::Ring::map(&fd, cfg.frame_size as usize, frames, block::V2_STATUS_OFFSET)
        }
        .map_err(setup(SetupStep::MapRing))?;

        if cfg.promiscuous {
            // Per-socket membership: the kernel counts it and drops it when the socket closes.
            let membership = libc::packet_mreq {
                mr_ifindex: ifindex,
                mr_type: libc::PACKET_MR_PROMISC as u16,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &membership)
                .map_err(setup(SetupStep::Promiscuous))?;
        }

        if let Some(expression) = &cfg.bpf_filter {
            // Before bind: the socket (protocol 0) receives nothing until bound, so no
            // unfiltered packet can slip into the ring.
            let hardware_type =
                sys::interface_hardware_type(&fd, &interface).map_err(setup(SetupStep::LookUpInterface))?;
            let link = link_type_for(hardware_type)
                .ok_or_else(|| AfPacketError::UnsupportedLinkType { interface: interface.clone(), hardware_type })?;
            let program = BpfProgram::compile(expression, link)
                .map_err(|error| AfPacketError::Filter { interface: interface.clone(), error })?;
            if program.instructions().len() > MAX_SOCKET_FILTER_INSTRUCTIONS {
                let error = BpfError {
                    expression: expression.clone(),
                    link,
                    message: format!(
                        "{} instructions; the kernel accepts at most {MAX_SOCKET_FILTER_INSTRUCTIONS} in a socket filter",
                        program.instructions().len()
                    ),
                };
                return Err(AfPacketError::Filter { interface, error });
            }
            sys::attach_filter(&fd, program.instructions()).map_err(setup(SetupStep::AttachFilter))?;
        }
        if let Some(program) = &cfg.socket_filter {
            let fd_value: libc::c_int = program.as_raw_fd();
            sys::set_option(&fd, libc::SOL_SOCKET, libc::SO_ATTACH_BPF, &fd_value)
                .map_err(setup(SetupStep::AttachFilter))?;
        }

        sys::bind_to_interface(&fd, ifindex).map_err(|source| match source.raw_os_error() {
            Some(libc::ENODEV) => AfPacketError::NoSuchInterface { interface: interface.clone() },
            Some(libc::ENETDOWN) => AfPacketError::InterfaceDown { interface: interface.clone() },
            _ => setup(SetupStep::Bind)(source),
        })?;
        let hardware_type = sys::bound_hardware_type(&fd).map_err(setup(SetupStep::Bind))?;
        let link = link_type_for(hardware_type)
            .ok_or_else(|| AfPacketError::UnsupportedLinkType { interface: interface.clone(), hardware_type })?;

        // Joining needs a bound socket (the kernel refuses fanout on an idle one).
        let mut fanout_type = cfg.fanout_mode.kernel_mode();
        if cfg.rollover {
            fanout_type |= libc::PACKET_FANOUT_FLAG_ROLLOVER;
        }
        if cfg.defrag {
            fanout_type |= libc::PACKET_FANOUT_FLAG_DEFRAG;
        }
        let fanout_arg = |flags: u32| -> u32 { cfg.fanout_group as u32 | (flags << 16) };
        let fanout_step = SetupStep::JoinFanout { group: cfg.fanout_group, mode: cfg.fanout_mode.name() };
        if cfg.ignore_outgoing {
            // Outside a fanout group the socket's own option does it (Linux 4.20+); inside
            // one only the group's flag counts (Linux 6.9+). Older kernels refuse the flag
            // (EINVAL): then every member joins without it and `advance` skips them.
            let _ = sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int);
            let with_flag = fanout_arg(fanout_type | libc::PACKET_FANOUT_FLAG_IGNORE_OUTGOING);
            match sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &with_flag) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &fanout_arg(fanout_type))
                        .map_err(setup(fanout_step))?
                }
                Err(e) => return Err(setup(fanout_step)(e)),
            }
        } else {
            sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &fanout_arg(fanout_type))
                .map_err(setup(fanout_step))?;
        }
        // The program goes to the group after joining (PACKET_FANOUT_DATA acts on the
        // socket's group); each member sets the same program, the first one counts.
        let program = match (cfg.fanout_mode, &cfg.fanout_program) {
            (FanoutMode::Ebpf(program), _) => Some(program),
            (FanoutMode::Adaptive, Some(program)) => Some(program.as_raw_fd()),
            (FanoutMode::Adaptive, None) => {
                // The caller loads the program (`adaptive::FanoutProgram`) before opening.
                return Err(AfPacketError::InvalidConfig {
                    field: "fanout_mode",
                    reason: "cluster_adaptive without its loaded eBPF fanout program".into(),
                });
            }
            _ => None,
        };
        if let Some(program) = program {
            let program: u32 = program as u32;
            sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT_DATA, &program)
                .map_err(setup(SetupStep::AttachFanoutProgram))?;
        }

        Ok(AfPacketSocket {
            ring,
            fd,
            interface,
            link,
            fanout: (cfg.fanout_group, cfg.fanout_mode),
            stop: Arc::clone(&cfg.stop),
            remaining_in_block: 0,
            next_offset: 0,
            acquire_budget: usize::MAX,
            vlan_buffer: Vec::new(),
            ignore_outgoing: cfg.ignore_outgoing,
            v3: cfg.tpacket_v3,
            totals: RingStats::default(),
        })
    }

    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Link layer of the captured frames, from the interface's hardware type.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Visits every packet of the blocks that are ready, without a system call per
    /// packet; only when the ring is empty does it wait in `poll`, at most `timeout`,
    /// and then visit what arrived. Returns the number of packets visited: 0 after a
    /// timeout. One call reads at most one ring's worth of blocks, so a busy link
    /// cannot keep it from returning.
    ///
    /// An `Err` is not fatal: it reports a socket error such as ENETDOWN (interface
    /// taken down); the socket stays bound and delivers again once the link is back.
    pub fn poll_packets(&mut self, timeout: Duration, f: &mut dyn FnMut(RawPacket<'_>)) -> io::Result<usize> {
        let mut visited = self.visit_ready(f);
        if visited == 0 {
            sys::wait_readable(&self.fd, timeout)?;
            visited = self.visit_ready(f);
        }
        Ok(visited)
    }

    /// Kernel counters (read and reset by PACKET_STATISTICS, accumulated here) together
    /// with this socket's own.
    /// This socket's own counters (no system call; the kernel's as of the last [`Self::stats`]).
    pub fn totals(&self) -> RingStats {
        self.totals
    }

    pub fn stats(&mut self) -> io::Result<RingStats> {
        if self.v3 {
            let kernel = sys::statistics(&self.fd)?;
            self.totals.kernel_packets += kernel.tp_packets as u64;
            self.totals.kernel_drops += kernel.tp_drops as u64;
            self.totals.queue_freezes += kernel.tp_freeze_q_cnt as u64;
        } else {
            let kernel = sys::statistics_v2(&self.fd)?;
            self.totals.kernel_packets += kernel.tp_packets as u64;
            self.totals.kernel_drops += kernel.tp_drops as u64;
        }
        Ok(self.totals)
    }

    /// Visits the packets that are ready now, without waiting; returns how many.
    pub fn read_ready(&mut self, f: &mut dyn FnMut(RawPacket<'_>)) -> usize {
        self.visit_ready(f)
    }

    /// Sleeps until one of `sockets` has packets or `timeout` passes. An `Err` reports a
    /// socket error (interface down) and is not fatal.
    pub fn wait_any(sockets: &[&AfPacketSocket], timeout: Duration) -> io::Result<()> {
        let fds: Vec<&OwnedFd> = sockets.iter().map(|s| &s.fd).collect();
        sys::wait_any_readable(&fds, timeout)
    }

    fn visit_ready(&mut self, f: &mut dyn FnMut(RawPacket<'_>)) -> usize {
        self.acquire_budget = self.ring.block_count();
        let mut visited = 0;
        while let Some(frame) = self.advance() {
            f(self.materialize(frame));
            visited += 1;
        }
        self.acquire_budget = usize::MAX;
        visited
    }

    /// Locates the next packet, handing finished blocks back to the kernel and taking
    /// ready ones. `None` when no ready packet is left (or the block budget is spent).
    fn advance(&mut self) -> Option<block::FrameLocation> {
        loop {
            if self.remaining_in_block > 0 {
                self.remaining_in_block -= 1;
                let frame = self.ring.held_block().and_then(|b| {
                    if self.v3 {
                        block::read_frame(b, self.next_offset)
                    } else {
                        block::read_frame_v2(b)
                    }
                });
                let next = frame.and_then(|frame| self.next_offset.checked_add(frame.next_offset as usize));
                match (frame, next) {
                    (Some(frame), Some(next)) => {
                        if frame.next_offset == 0 {
                            // The kernel marks the last packet with offset 0.
                            self.remaining_in_block = 0;
                        }
                        self.next_offset = next;
                        if self.ignore_outgoing && frame.pkttype == Some(libc::PACKET_OUTGOING) {
                            self.totals.outgoing_skipped += 1;
                            continue;
                        }
                        return Some(frame);
                    }
                    _ => {
                        self.totals.malformed_headers += 1;
                        self.remaining_in_block = 0;
                    }
                }
                continue;
            }
            // The held block (if any) is exhausted and none of its bytes are borrowed.
            self.ring.release();
            if self.acquire_budget == 0 || !self.ring.try_acquire() {
                return None;
            }
            self.acquire_budget -= 1;
            if !self.v3 {
                // A V2 slot is one frame holding one packet, its header at offset 0.
                self.remaining_in_block = 1;
                self.next_offset = 0;
                continue;
            }
            match self.ring.held_block().and_then(block::read_block_header) {
                Some(header) => {
                    self.remaining_in_block = header.num_packets;
                    self.next_offset = header.first_offset;
                }
                None => self.totals.malformed_headers += 1,
            }
        }
    }

    /// Builds the packet `advance` located, putting back its VLAN tag if it had one.
    fn materialize(&mut self, frame: block::FrameLocation) -> RawPacket<'_> {
        // `advance` checked the range against the block; the fallback is unreachable.
        let data = self.ring.held_block().and_then(|b| b.get(frame.data_start..frame.data_end)).unwrap_or(&[]);
        let ts = Timestamp::from_parts(frame.sec as u64, frame.nsec);
        self.totals.delivered += 1;
        if frame.csum_not_ready {
            self.totals.csum_not_ready += 1;
        }
        if let (Some((tpid, tci)), LinkType::Ethernet) = (frame.vlan, self.link) {
            if block::restore_vlan_tag(data, tpid, tci, &mut self.vlan_buffer) {
                self.totals.vlan_tags_restored += 1;
                return RawPacket {
                    ts,
                    link: self.link,
                    wire_len: frame.wire_len.saturating_add(4),
                    data: &self.vlan_buffer,
                };
            }
            self.totals.vlan_tags_not_restored += 1;
        }
        RawPacket { ts, link: self.link, wire_len: frame.wire_len, data }
    }
}

/// A passive capture port: packets are copies, so verdicts are not acted on.
impl LivePort for AfPacketSocket {
    fn poll(&mut self, wait: Duration, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<usize> {
        self.poll_packets(wait, &mut |raw| {
            inspect(raw);
        })
    }

    fn kernel_counts(&mut self) -> KernelCounts {
        // Fails only if the socket is gone; the last totals stand.
        let totals = self.stats().unwrap_or(self.totals);
        KernelCounts { packets: totals.kernel_packets, drops: totals.kernel_drops }
    }

    fn add_counters(&self, into: &mut CounterSet) {
        let t = &self.totals;
        into.add("capture.afpacket.queue_freezes", t.queue_freezes);
        into.add("capture.afpacket.malformed_headers", t.malformed_headers);
        into.add("capture.afpacket.vlan_tags_restored", t.vlan_tags_restored);
        if self.ignore_outgoing {
            into.add("capture.afpacket.outgoing_skipped", t.outgoing_skipped);
        }
    }

    fn mode(&self) -> PortMode {
        PortMode::Passive
    }

    fn describe(&self) -> String {
        PacketSource::describe(self)
    }
}

impl PacketSource for AfPacketSocket {
    /// Next packet; waits (in steps of 100 ms) while the ring is empty. `Ok(None)` only
    /// once the configuration's `stop` flag is set. An `Err` reports a socket error
    /// (interface went down) and is not fatal: the next call keeps capturing.
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if let Some(frame) = self.advance() {
                return Ok(Some(self.materialize(frame)));
            }
            if let Err(source) = sys::wait_readable(&self.fd, IDLE_WAIT) {
                return Err(CaptureError::Io { path: PathBuf::from(PacketSource::describe(self)), offset: 0, source });
            }
        }
    }

    fn describe(&self) -> String {
        format!("interface {} (af-packet fanout group {}, {})", self.interface, self.fanout.0, self.fanout.1.name())
    }
}
