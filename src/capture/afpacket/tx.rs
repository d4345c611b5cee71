//! Sending frames on an interface through an AF_PACKET socket: the transmit half of an
//! inline bridge (forwarded packets, reject replies).
//!
//! A [`TxSocket`] is bound to its interface with protocol 0, so the kernel never queues
//! received packets on it. Frames are copied into a small batch and handed to the kernel
//! with one `sendmmsg` per batch ([`TxSocket::flush`], called by the bridge after each
//! poll, or when the batch is full). Each frame goes out exactly as given: the caller
//! supplies the whole link-layer frame (MAC addresses, VLAN tags).
//!
//! With `ring` the frames go through a TPACKET_V2 transmit ring instead: copied into a
//! memory area shared with the kernel and sent with one `send` per flush. The kernel is
//! told to skip frames it cannot send (PACKET_LOSS), so that one bad frame never stalls
//! the ring; such frames are then lost without a count, and `TxStats` only sees a ring
//! that stayed full.
//!
//! With `qdisc_bypass` (PACKET_QDISC_BYPASS) frames go straight to the driver's transmit
//! queue, skipping the interface's queueing discipline: less work per packet, no traffic
//! shaping, and packet taps (tcpdump) on that interface no longer see them.
//!
//! Errors never end the run; each failed frame is counted ([`TxStats`]) and dropped:
//! - `ENOBUFS`: the qdisc or the driver's queue was full (or a veth peer's backlog), and
//!   the kernel freed the frame. It is not retried: the queue is full now and a retry
//!   would only delay the packets behind it; TCP retransmits, as after a loss on a wire.
//! - `EAGAIN`: the socket's send buffer stayed full for [`SEND_TIMEOUT`] (the socket
//!   blocks until then, which is the backpressure: the receive ring holds new packets
//!   meanwhile).
//! - `EMSGSIZE`: the frame is larger than the interface's MTU allows.
//! - anything else (`ENETDOWN`, `ENXIO` when the interface went down or away).

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use super::sys::{self, TxRing, MAX_SEND_BATCH};
use super::{AfPacketError, SetupStep};

/// How a [`TxSocket`] hands frames to the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxOptions {
    /// PACKET_QDISC_BYPASS: straight to the driver's queue.
    pub qdisc_bypass: bool,
    /// A TPACKET_V2 transmit ring instead of `sendmmsg`.
    pub ring: bool,
}

impl TxOptions {
    /// "sendmmsg", "sendmmsg, qdisc bypass", "tx ring", ...
    pub fn describe(self) -> &'static str {
        match (self.ring, self.qdisc_bypass) {
            (false, false) => "sendmmsg",
            (false, true) => "sendmmsg, qdisc bypass",
            (true, false) => "tx ring",
            (true, true) => "tx ring, qdisc bypass",
        }
    }
}

/// Frames in a transmit ring: a few batches' worth.
const TX_RING_FRAMES: usize = 512;
/// Room in a transmit frame for a link header (Ethernet and two VLAN tags).
const TX_LINK_ROOM: usize = 22;

/// Longest a send waits for room in the socket's send buffer before the frame is counted
/// as an error and dropped.
pub const SEND_TIMEOUT: Duration = Duration::from_millis(100);
/// Bytes of frames a batch holds before it is sent even if not full by count (a batch of
/// jumbo frames).
const BATCH_BYTES: usize = 256 << 10;

/// What a [`TxSocket`] did since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames the kernel accepted.
    pub sent: u64,
    /// Frames that could not be sent (the sum of the kinds below).
    pub errors: u64,
    /// ENOBUFS: queue full, frame dropped by the kernel.
    pub no_buffers: u64,
    /// EAGAIN: the send buffer stayed full for [`SEND_TIMEOUT`].
    pub timeouts: u64,
    /// EMSGSIZE: larger than the interface's MTU.
    pub too_big: u64,
    /// `sendmmsg` calls.
    pub syscalls: u64,
}

/// A send-only packet socket on one interface, with its batch of frames to send.
pub struct TxSocket {
    // Declared before `fd` so the ring is unmapped before the socket closes.
    ring: Option<TxRing>,
    /// Frames put in the ring since the last kick.
    ring_pending: usize,
    fd: OwnedFd,
    interface: String,
    mtu: u32,
    options: TxOptions,
    /// `sendmmsg`: queued frames, back to back, and where each ends.
    arena: Vec<u8>,
    ends: Vec<usize>,
    stats: TxStats,
    /// The most recent error other than the counted kinds, for `describe`-style reports.
    last_error: Option<io::ErrorKind>,
}

impl TxSocket {
    /// Opens a socket that sends on `interface`. Fails with a one-line error naming the
    /// interface when it is missing or down or the process lacks CAP_NET_RAW.
    pub fn open(interface: &str, options: TxOptions) -> Result<TxSocket, AfPacketError> {
        let name = interface.to_string();
        let setup = |step: SetupStep| {
            let interface = name.clone();
            move |source: io::Error| AfPacketError::Setup { interface, step, source }
        };
        let fd = sys::packet_socket().map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => AfPacketError::NeedsPrivilege { interface: name.clone(), source },
            _ => AfPacketError::Setup { interface: name.clone(), step: SetupStep::CreateSocket, source },
        })?;
        let ifindex = sys::interface_index(&fd, interface).map_err(|source| match source.raw_os_error() {
            Some(libc::ENODEV) => AfPacketError::NoSuchInterface { interface: name.clone() },
            _ => setup(SetupStep::LookUpInterface)(source),
        })?;
        let flags = sys::interface_flags(&fd, interface).map_err(setup(SetupStep::LookUpInterface))?;
        if flags & libc::IFF_UP == 0 {
            return Err(AfPacketError::InterfaceDown { interface: name });
        }
        let mtu = sys::interface_mtu(&fd, interface).map_err(setup(SetupStep::LookUpInterface))?;
        if options.qdisc_bypass {
            sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int)
                .map_err(setup(SetupStep::QdiscBypass))?;
        }
        let timeout = libc::timeval { tv_sec: 0, tv_usec: SEND_TIMEOUT.as_micros() as libc::suseconds_t };
        sys::set_option(&fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &timeout).map_err(setup(SetupStep::SendTimeout))?;
        let ring = if options.ring { Some(open_ring(&fd, mtu).map_err(setup(SetupStep::TxRing))?) } else { None };
        sys::bind_send_only(&fd, ifindex).map_err(|source| match source.raw_os_error() {
            Some(libc::ENODEV) => AfPacketError::NoSuchInterface { interface: name.clone() },
            _ => setup(SetupStep::Bind)(source),
        })?;
        Ok(TxSocket {
            ring,
            ring_pending: 0,
            fd,
            interface: name,
            mtu,
            options,
            arena: Vec::with_capacity(BATCH_BYTES),
            ends: Vec::with_capacity(MAX_SEND_BATCH),
            stats: TxStats::default(),
            last_error: None,
        })
    }

    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The interface's MTU when the socket was opened.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    pub fn options(&self) -> TxOptions {
        self.options
    }

    /// Queues a copy of `frame`; the batch is sent when full, else at [`Self::flush`].
    pub fn push(&mut self, frame: &[u8]) {
        if let Some(ring) = &mut self.ring {
            if frame.len() > ring.capacity() {
                count_error(&mut self.stats, &mut self.last_error, &io::Error::from_raw_os_error(libc::EMSGSIZE));
                return;
            }
            if !ring.submit(frame) {
                // The ring is full of frames the kernel has not sent yet: send them now.
                self.flush();
                let Some(ring) = &mut self.ring else { return };
                if !ring.submit(frame) {
                    count_error(&mut self.stats, &mut self.last_error, &io::Error::from_raw_os_error(libc::EAGAIN));
                    return;
                }
            }
            self.ring_pending += 1;
            if self.ring_pending >= MAX_SEND_BATCH {
                self.flush();
            }
            return;
        }
        if self.ends.len() == MAX_SEND_BATCH || (!self.ends.is_empty() && self.arena.len() + frame.len() > BATCH_BYTES)
        {
            self.flush();
        }
        self.arena.extend_from_slice(frame);
        self.ends.push(self.arena.len());
    }

    /// Frames queued and not yet sent.
    pub fn pending(&self) -> usize {
        self.ends.len() + self.ring_pending
    }

    /// Sends every queued frame; failed ones are counted and dropped.
    pub fn flush(&mut self) {
        if self.ring.is_some() {
            if self.ring_pending == 0 {
                return;
            }
            self.stats.syscalls += 1;
            match sys::kick_tx_ring(&self.fd) {
                Ok(_) => self.stats.sent += self.ring_pending as u64,
                Err(e) => count_error(&mut self.stats, &mut self.last_error, &e),
            }
            self.ring_pending = 0;
            return;
        }
        if self.ends.is_empty() {
            return;
        }
        let mut frames: [&[u8]; MAX_SEND_BATCH] = [&[]; MAX_SEND_BATCH];
        let mut start = 0;
        for (slot, &end) in frames.iter_mut().zip(&self.ends) {
            *slot = &self.arena[start..end];
            start = end;
        }
        let frames = &frames[..self.ends.len()];
        let mut next = 0;
        while next < frames.len() {
            self.stats.syscalls += 1;
            match sys::send_frames(&self.fd, &frames[next..]) {
                Ok(0) => break, // cannot happen for a non-empty batch; do not spin
                Ok(sent) => {
                    self.stats.sent += sent as u64;
                    next += sent;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Frame `next` failed: count it, go on with the rest.
                    count_error(&mut self.stats, &mut self.last_error, &e);
                    next += 1;
                }
            }
        }
        self.arena.clear();
        self.ends.clear();
    }

    pub fn stats(&self) -> TxStats {
        self.stats
    }

    /// The kind of the last error that was none of ENOBUFS, EAGAIN, EMSGSIZE.
    pub fn last_error(&self) -> Option<io::ErrorKind> {
        self.last_error
    }
}

/// Sets the socket up for a TPACKET_V2 transmit ring with frames for `mtu` and maps it.
fn open_ring(fd: &OwnedFd, mtu: u32) -> io::Result<TxRing> {
    let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    sys::set_option(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
    // Frames the kernel cannot send are skipped instead of stopping the ring.
    sys::set_option(fd, libc::SOL_PACKET, libc::PACKET_LOSS, &1 as &libc::c_int)?;
    // Without PACKET_TX_HAS_OFF the data starts right after the V2 header.
    let data_offset = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();
    let frame_size = (mtu as usize + TX_LINK_ROOM + data_offset).next_power_of_two().max(2048);
    let block_size = frame_size.max(sys::page_size());
    let frames_per_block = block_size / frame_size;
    let blocks = TX_RING_FRAMES.div_ceil(frames_per_block);
    let request = libc::tpacket_req {
        tp_block_size: block_size as u32,
        tp_block_nr: blocks as u32,
        tp_frame_size: frame_size as u32,
        tp_frame_nr: (blocks * frames_per_block) as u32,
    };
    sys::set_option(fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &request)?;
    let len_offset = std::mem::offset_of!(libc::tpacket2_hdr, tp_len);
    TxRing::map(fd, frame_size, blocks * frames_per_block, len_offset, data_offset)
}

fn count_error(stats: &mut TxStats, last_error: &mut Option<io::ErrorKind>, e: &io::Error) {
    stats.errors += 1;
    match e.raw_os_error() {
        Some(libc::ENOBUFS) => stats.no_buffers += 1,
        Some(libc::EAGAIN) => stats.timeouts += 1,
        Some(libc::EMSGSIZE) => stats.too_big += 1,
        _ => *last_error = Some(e.kind()),
    }
}

impl Drop for TxSocket {
    fn drop(&mut self) {
        self.flush();
    }
}
