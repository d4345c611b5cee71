//! Inline prevention through NFQUEUE: `picket -q N`. The kernel holds each packet an
//! iptables/nftables rule sends to queue N until picket says accept or drop.
//!
//! One [`NfQueue`] per queue, one queue per worker: `iptables ... -j NFQUEUE
//! --queue-balance 0:N-1 --queue-bypass` spreads flows over the queues by a flow hash
//! that is the same in both directions, so a worker sees whole flows.
//!
//! Per [`LivePort::poll`]: `recvmmsg` takes up to [`RECV_SLOTS`] packet messages in one
//! system call; each packet is inspected in place and its verdict appended to one
//! outgoing datagram, which goes to the kernel at the end of the round. Consecutive
//! accepts become one `NFQNL_MSG_VERDICT_BATCH` (it accepts every waiting packet with an
//! id up to the one named), at most `batchcount` packets each; a drop or reject closes
//! the batch first and goes as a single verdict, so no drop is ever swallowed by a later
//! batch. Nothing is held across a `poll` return.
//!
//! Reject: the pending verdicts go out first (so the endpoint has every earlier segment
//! before the RST), then the replies built by `picket_core::reject` through a raw IP
//! socket of this network namespace, then the drop verdict.
//!
//! Choices, and why this is not the `nfq` crate: that crate is small and safe, but it
//! issues one verdict message per packet (no batch verdicts), copies every packet into
//! its own allocation, reads one message per `recv` and turns ENOBUFS reports off. The
//! protocol is small: `wire.rs` codes it (bounds-checked, no allocation when reading),
//! `sys.rs` holds the few system calls.
//!
//! - Queue flags: `NFQA_CFG_F_FAIL_OPEN` per `nfq.fail-open` (default yes).
//!   `NFQA_CFG_F_GSO` is not set: the kernel segments GSO/GRO super-packets before
//!   queueing them and fills in partial checksums, so every packet picket sees is a real
//!   packet with valid checksums, at the cost of the segmentation in the kernel.
//! - Copy mode: whole packets (range 0xffff), IPv4 and IPv6 alike (a queue carries every
//!   family since Linux 3.8; the old per-family bind commands are no-ops and not sent).
//! - Queue length (`nfq.queue-maxlen`) larger than what the socket buffer
//!   (`nfq.socket-buffer`, forced past `rmem_max`) can hold: overload then shows as
//!   socket overruns, which picket can count (below), rather than a full queue, which
//!   the kernel does not count when it fails open.
//! - Fail-open accounting: the kernel numbers queued packets 1, 2, 3, ... and numbers a
//!   packet before handing it to the socket; a packet the full socket buffer could not
//!   take leaves a gap in the ids. With fail-open the kernel accepted it uninspected:
//!   `picket.ips.fail_open` counts those gaps exactly. (Without fail-open the kernel
//!   dropped it and counts it in `queue_user_dropped`, read as kernel drops.) Packets
//!   accepted because the queue itself was full get no id and are not counted anywhere.
//!   Each overrun episode also comes back as one ENOBUFS from `recv`
//!   (`picket.nfq.enobufs`).
//! - Stop: `flush` sends the held verdicts; with fail-open it then sets the queue
//!   length to 0, so that new packets pass in the kernel (as they will with
//!   `--queue-bypass` once picket is gone), and accepts what was queued after the last
//!   poll (`picket.nfq.accepted_at_stop`). Closing the socket drops whatever the queue
//!   still holds, so nothing is left there.

mod reply;
mod sys;
pub mod wire;

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::port::{KernelCounts, LivePort, PortMode, FAIL_OPEN, TX_ERRORS};
use super::RawPacket;
use crate::counters::CounterSet;
use crate::inspect::Verdict;
use crate::packet::{LinkType, Timestamp};
use wire::{ConfigCommand, ConfigRequest, Message, Messages, PacketMessage, NFQA_CFG_F_FAIL_OPEN, NF_ACCEPT, NF_DROP};

/// Datagrams read per `recvmmsg`.
pub const RECV_SLOTS: usize = 32;
/// Bytes per receive slot: the largest packet message (a 0xffff-byte payload with its
/// headers and attributes) fits, so the kernel never has to cut one.
const SLOT_BYTES: usize = 0x10000 + 4096;
/// `recvmmsg` rounds per `poll` while the queue keeps them full: bounds one call.
const MAX_ROUNDS: usize = 8;
/// How long `open` and `flush` wait for the kernel to acknowledge a configuration.
const ACK_WAIT: Duration = Duration::from_secs(2);
/// The kernel's list of queues of this network namespace.
const PROC_QUEUES: &str = "/proc/net/netfilter/nfnetlink_queue";

/// Settings of the queues (the YAML `nfq:` section; see `config::nfq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfQueueConfig {
    /// The kernel accepts packets instead of dropping them when the queue or the socket
    /// buffer is full (`nfq.fail-open`).
    pub fail_open: bool,
    /// Most accepts sent as one batch verdict (`nfq.batchcount`); 1 sends each alone.
    pub batchcount: u32,
    /// Packets the kernel may hold for a queue (`nfq.queue-maxlen`).
    pub queue_maxlen: u32,
    /// Receive buffer of the queue's socket in bytes (`nfq.socket-buffer`).
    pub socket_buffer: u32,
}

impl Default for NfQueueConfig {
    fn default() -> Self {
        NfQueueConfig { fail_open: true, batchcount: 32, queue_maxlen: 65536, socket_buffer: 8 << 20 }
    }
}

/// Bounds of the settings: beyond them a value is a typo.
pub const MAX_BATCHCOUNT: u32 = 65_536;
pub const MAX_QUEUE_MAXLEN: u32 = 1 << 20;
pub const MIN_SOCKET_BUFFER: u32 = 64 << 10;
pub const MAX_SOCKET_BUFFER: u32 = 1 << 30;

impl NfQueueConfig {
    pub fn validate(&self) -> Result<(), NfQueueError> {
        let invalid = |field: &'static str, reason: String| Err(NfQueueError::InvalidConfig { field, reason });
        if self.batchcount == 0 || self.batchcount > MAX_BATCHCOUNT {
            return invalid("batchcount", format!("{} is not in 1-{MAX_BATCHCOUNT}", self.batchcount));
        }
        if self.queue_maxlen == 0 || self.queue_maxlen > MAX_QUEUE_MAXLEN {
            return invalid("queue-maxlen", format!("{} is not in 1-{MAX_QUEUE_MAXLEN}", self.queue_maxlen));
        }
        if !(MIN_SOCKET_BUFFER..=MAX_SOCKET_BUFFER).contains(&self.socket_buffer) {
            return invalid(
                "socket-buffer",
                format!("{} bytes is not in {MIN_SOCKET_BUFFER}-{MAX_SOCKET_BUFFER}", self.socket_buffer),
            );
        }
        Ok(())
    }
}

/// Why a queue could not be opened. One line naming the queue and the fix; all of them
/// happen before the queue holds any packet.
#[derive(Debug)]
pub enum NfQueueError {
    InvalidConfig {
        field: &'static str,
        reason: String,
    },
    /// No nfnetlink in the kernel (the netlink family is unknown).
    NoNfnetlink {
        source: io::Error,
    },
    /// nfnetlink is there but nfnetlink_queue is not.
    NoQueueModule {
        queue: u16,
    },
    /// Binding a queue needs CAP_NET_ADMIN in the network namespace.
    NeedsPrivilege {
        queue: u16,
    },
    /// The raw sockets reject replies leave through need CAP_NET_RAW.
    NeedsRawSockets {
        queue: u16,
        source: io::Error,
    },
    /// Another program holds the queue (its netlink port id, usually its pid).
    QueueTaken {
        queue: u16,
        holder: Option<u32>,
    },
    /// A setup step failed; `step` names it.
    Setup {
        queue: u16,
        step: &'static str,
        source: io::Error,
    },
}

impl fmt::Display for NfQueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NfQueueError::InvalidConfig { field, reason } => write!(f, "nfq.{field}: {reason}"),
            NfQueueError::NoNfnetlink { source } => {
                write!(f, "NFQUEUE: the kernel has no nfnetlink ({source}); load it with: modprobe nfnetlink_queue")
            }
            NfQueueError::NoQueueModule { queue } => write!(
                f,
                "NFQUEUE queue {queue}: the kernel has no nfnetlink_queue; load it with: modprobe nfnetlink_queue"
            ),
            NfQueueError::NeedsPrivilege { queue } => {
                write!(f, "NFQUEUE queue {queue}: binding a queue needs root or CAP_NET_ADMIN")
            }
            NfQueueError::NeedsRawSockets { queue, source } => write!(
                f,
                "NFQUEUE queue {queue}: sending reject replies needs root or CAP_NET_RAW (raw IP socket: {source})"
            ),
            NfQueueError::QueueTaken { queue, holder } => write!(
                f,
                "NFQUEUE queue {queue} is already bound by another program{}; stop it or choose another queue with -q",
                holder.map(|p| format!(" (netlink port {p}, usually its pid)")).unwrap_or_default()
            ),
            NfQueueError::Setup { queue, step, source } => write!(f, "NFQUEUE queue {queue}: cannot {step}: {source}"),
        }
    }
}

impl std::error::Error for NfQueueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NfQueueError::NoNfnetlink { source }
            | NfQueueError::NeedsRawSockets { source, .. }
            | NfQueueError::Setup { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Opens one queue per worker, in order: worker `i` gets `queues[i]`. Every queue is
/// bound (or the first error returned, the queues bound so far released) before this
/// returns.
pub fn open_ports(queues: &[u16], config: &NfQueueConfig) -> Result<Vec<Vec<Box<dyn LivePort>>>, NfQueueError> {
    let mut all: Vec<Vec<Box<dyn LivePort>>> = Vec::with_capacity(queues.len());
    for &queue in queues {
        all.push(vec![Box::new(NfQueue::open(queue, config)?)]);
    }
    Ok(all)
}

/// One queue's entry in /proc/net/netfilter/nfnetlink_queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcQueue {
    pub queue: u16,
    pub port_id: u32,
    /// Packets waiting for a verdict (in the socket buffer or read and not answered).
    pub waiting: u32,
    /// Dropped because the queue was full (without fail-open).
    pub dropped: u64,
    /// Dropped because the socket buffer was full (without fail-open).
    pub user_dropped: u64,
    /// The last packet id handed out.
    pub id_sequence: u32,
}

/// Parses the kernel's queue list: "queue port waiting copy_mode copy_range dropped
/// user_dropped id_sequence 1" per line. Lines that do not parse are skipped.
pub fn parse_proc_queues(text: &str) -> Vec<ProcQueue> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 {
                return None;
            }
            Some(ProcQueue {
                queue: f[0].parse().ok()?,
                port_id: f[1].parse().ok()?,
                waiting: f[2].parse().ok()?,
                dropped: f[5].parse().ok()?,
                user_dropped: f[6].parse().ok()?,
                id_sequence: f[7].parse().ok()?,
            })
        })
        .collect()
}

fn proc_queue(queue: u16) -> Option<ProcQueue> {
    let text = std::fs::read_to_string(PROC_QUEUES).ok()?;
    parse_proc_queues(&text).into_iter().find(|q| q.queue == queue)
}

/// Counters of one queue since it was bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NfQueueStats {
    /// Packet messages read.
    pub messages: u64,
    /// Verdicts sent: single and batch messages.
    pub verdicts: u64,
    pub batches: u64,
    /// Verdict datagrams the kernel refused, or that could not be sent (retried).
    pub verdict_errors: u64,
    /// Socket overrun reports (ENOBUFS from `recv`).
    pub enobufs: u64,
    /// Packets the kernel accepted uninspected because the socket buffer was full
    /// (gaps in the packet ids, with fail-open).
    pub fail_open: u64,
    /// The same without fail-open: dropped by the kernel.
    pub lost: u64,
    /// Messages that could not be parsed (skipped), or datagrams cut short.
    pub malformed: u64,
    /// Packet messages without payload (copy mode not yet set): accepted uninspected.
    pub no_payload: u64,
    /// Reject replies sent, not built (the builder refused the packet), not sent.
    pub replies: u64,
    pub reply_errors: u64,
    pub tx_errors: u64,
    /// Packets queued after the worker's last poll, accepted uninspected at stop.
    pub accepted_at_stop: u64,
}

/// The verdicts of one round, in packet order, as one outgoing datagram.
struct Verdicts {
    queue: u16,
    batchcount: u32,
    datagram: Vec<u8>,
    /// Accepted ids not yet in `datagram`: the highest, and how many.
    open_batch: Option<u32>,
    open_count: u32,
}

impl Verdicts {
    fn accept(&mut self, id: u32, stats: &mut NfQueueStats) {
        if self.batchcount <= 1 {
            wire::push_verdict(&mut self.datagram, self.queue, id, NF_ACCEPT, false);
            stats.verdicts += 1;
            return;
        }
        self.open_batch = Some(id);
        self.open_count += 1;
        if self.open_count >= self.batchcount {
            self.close_batch(stats);
        }
    }

    fn drop_packet(&mut self, id: u32, stats: &mut NfQueueStats) {
        // The batch covers lower ids only; it goes first so that it cannot swallow this
        // drop (a batch accepts every waiting id up to its own).
        self.close_batch(stats);
        wire::push_verdict(&mut self.datagram, self.queue, id, NF_DROP, false);
        stats.verdicts += 1;
    }

    fn close_batch(&mut self, stats: &mut NfQueueStats) {
        if let Some(id) = self.open_batch.take() {
            let batch = self.open_count > 1;
            wire::push_verdict(&mut self.datagram, self.queue, id, NF_ACCEPT, batch);
            stats.verdicts += 1;
            stats.batches += batch as u64;
        }
        self.open_count = 0;
    }

    /// Everything decided so far to the kernel. On failure the datagram is kept and
    /// sent again by the next call.
    fn send(&mut self, fd: &OwnedFd, stats: &mut NfQueueStats) -> io::Result<()> {
        self.close_batch(stats);
        if self.datagram.is_empty() {
            return Ok(());
        }
        match sys::send(fd, &self.datagram) {
            Ok(()) => {
                self.datagram.clear();
                Ok(())
            }
            Err(e) => {
                stats.verdict_errors += 1;
                Err(e)
            }
        }
    }
}

/// Everything of a port but its receive buffers, so that packets borrowed from those
/// can be answered through it.
struct QueueState {
    queue: u16,
    fd: OwnedFd,
    port_id: u32,
    config: NfQueueConfig,
    verdicts: Verdicts,
    replies: reply::Replier,
    stats: NfQueueStats,
    /// The id of the last packet read (ids start at 1 after the bind).
    last_id: u32,
    /// The last kernel counts read.
    kernel: KernelCounts,
    /// Sequence number of the next configuration request.
    seq: u32,
}

/// One NFQUEUE queue, bound by this process; give each worker its own.
pub struct NfQueue {
    rx: sys::RecvBatch,
    /// Packet messages that arrived while `open` waited for acknowledgements; the first
    /// `poll` inspects them.
    backlog: Vec<Vec<u8>>,
    state: QueueState,
}

impl NfQueue {
    /// Binds `queue`, with whole-packet copies, the configured length and flags. Errors
    /// name the queue and the fix.
    pub fn open(queue: u16, config: &NfQueueConfig) -> Result<Self, NfQueueError> {
        config.validate()?;
        let setup = |step: &'static str| move |source: io::Error| NfQueueError::Setup { queue, step, source };
        let fd = sys::netlink_socket().map_err(|source| match source.raw_os_error() {
            Some(libc::EPROTONOSUPPORT) | Some(libc::EAFNOSUPPORT) => NfQueueError::NoNfnetlink { source },
            _ => setup("create a netfilter netlink socket")(source),
        })?;
        let port_id = sys::netlink_port_id(&fd).map_err(setup("read the netlink port id"))?;
        sys::set_receive_buffer(&fd, config.socket_buffer).map_err(setup("set the socket receive buffer"))?;
        let replies = reply::Replier::open().map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => NfQueueError::NeedsRawSockets { queue, source },
            _ => setup("open a raw IP socket for reject replies")(source),
        })?;
        let mut port = NfQueue {
            rx: sys::RecvBatch::new(RECV_SLOTS, SLOT_BYTES),
            backlog: Vec::new(),
            state: QueueState {
                queue,
                fd,
                port_id,
                config: config.clone(),
                verdicts: Verdicts {
                    queue,
                    batchcount: config.batchcount,
                    datagram: Vec::with_capacity(4096),
                    open_batch: None,
                    open_count: 0,
                },
                replies,
                stats: NfQueueStats::default(),
                last_id: 0,
                kernel: KernelCounts::default(),
                seq: 0,
            },
        };
        let bind = ConfigRequest {
            command: Some(ConfigCommand::Bind),
            copy_range: Some(wire::MAX_COPY_RANGE),
            queue_maxlen: Some(config.queue_maxlen),
            flags: None,
        };
        port.configure(&bind).map_err(|e| match e.raw_os_error() {
            _ if std::fs::metadata(PROC_QUEUES).is_err() => NfQueueError::NoQueueModule { queue },
            Some(libc::EPERM) | Some(libc::EBUSY) | Some(libc::EEXIST) => match proc_queue(queue) {
                Some(q) if q.port_id != port_id => NfQueueError::QueueTaken { queue, holder: Some(q.port_id) },
                _ if e.raw_os_error() == Some(libc::EPERM) => NfQueueError::NeedsPrivilege { queue },
                _ => NfQueueError::QueueTaken { queue, holder: None },
            },
            _ => setup("bind the queue")(e),
        })?;
        let fail_open = if config.fail_open { NFQA_CFG_F_FAIL_OPEN } else { 0 };
        let flags = ConfigRequest { flags: Some((NFQA_CFG_F_FAIL_OPEN, fail_open)), ..Default::default() };
        port.configure(&flags).map_err(setup("set the queue's fail-open flag (kernel older than 3.6?)"))?;
        Ok(port)
    }

    pub fn queue(&self) -> u16 {
        self.state.queue
    }

    pub fn stats(&self) -> NfQueueStats {
        self.state.stats
    }

    /// Sends one configuration request and waits for the kernel's answer. Packet
    /// messages that come first are kept for the next `poll`.
    fn configure(&mut self, request: &ConfigRequest) -> io::Result<()> {
        let st = &mut self.state;
        st.seq = st.seq.wrapping_add(1);
        let seq = st.seq;
        let mut datagram = Vec::with_capacity(64);
        wire::push_config(&mut datagram, seq, st.queue, request);
        sys::send(&st.fd, &datagram)?;
        let deadline = Instant::now() + ACK_WAIT;
        loop {
            let received = match self.rx.receive(&st.fd) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    st.stats.enobufs += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut answer = None;
            for i in 0..received {
                let (datagram, _) = self.rx.datagram(i);
                let mut packets = false;
                for message in Messages::new(datagram) {
                    match message {
                        Ok(Message::Ack { seq: s }) if s == seq => answer = Some(Ok(())),
                        Ok(Message::Error { seq: s, errno }) if s == seq => {
                            answer = Some(Err(io::Error::from_raw_os_error(errno)))
                        }
                        Ok(Message::Packet(_)) => packets = true,
                        Ok(_) => {}
                        Err(_) => st.stats.malformed += 1,
                    }
                }
                if packets {
                    // Kept whole: `poll` parses it again and answers its packets.
                    self.backlog.push(datagram.to_vec());
                }
            }
            if let Some(answer) = answer {
                return answer;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer from the kernel"));
            }
            if received == 0 {
                sys::wait_readable(&st.fd, left)?;
            }
        }
    }

    /// One `recvmmsg` round: reads, inspects and answers what is ready. Returns the
    /// number of packets and whether the round filled every slot (more may be waiting).
    fn round(&mut self, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<(usize, bool)> {
        let st = &mut self.state;
        let received = match self.rx.receive(&st.fd) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                // The socket overflowed; the lost packets show as id gaps.
                st.stats.enobufs += 1;
                return Ok((0, true));
            }
            Err(e) => return Err(e),
        };
        let now = now_timestamp();
        let mut packets = 0;
        for i in 0..received {
            let (datagram, truncated) = self.rx.datagram(i);
            if truncated {
                st.stats.malformed += 1;
            }
            packets += st.handle_datagram(datagram, now, inspect);
        }
        st.verdicts.send(&st.fd, &mut st.stats)?;
        Ok((packets, received == self.rx.slots()))
    }

    /// Accepts, uninspected, whatever the socket holds now (at stop).
    fn accept_remaining(&mut self) -> io::Result<()> {
        let st = &mut self.state;
        loop {
            let received = match self.rx.receive(&st.fd) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    st.stats.enobufs += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if received == 0 {
                return st.verdicts.send(&st.fd, &mut st.stats);
            }
            for i in 0..received {
                for message in Messages::new(self.rx.datagram(i).0) {
                    if let Ok(Message::Packet(p)) = message {
                        st.note_id(p.id);
                        st.stats.messages += 1;
                        st.stats.accepted_at_stop += 1;
                        st.verdicts.accept(p.id, &mut st.stats);
                    }
                }
            }
            st.verdicts.send(&st.fd, &mut st.stats)?;
        }
    }
}

fn now_timestamp() -> Timestamp {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp::from_parts(now.as_secs(), now.subsec_nanos())
}

impl QueueState {
    /// Inspects and answers every packet message of one datagram; returns how many.
    fn handle_datagram(
        &mut self,
        datagram: &[u8],
        now: Timestamp,
        inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict,
    ) -> usize {
        let mut packets = 0;
        for message in Messages::new(datagram) {
            match message {
                Ok(Message::Packet(p)) => {
                    self.handle_packet(&p, now, inspect);
                    packets += 1;
                }
                // The kernel refused a verdict (an unknown id: already answered?).
                Ok(Message::Error { .. }) => self.stats.verdict_errors += 1,
                Ok(_) => {}
                Err(_) => self.stats.malformed += 1,
            }
        }
        packets
    }

    fn handle_packet(
        &mut self,
        p: &PacketMessage<'_>,
        now: Timestamp,
        inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict,
    ) {
        self.stats.messages += 1;
        self.note_id(p.id);
        let Some(data) = p.payload else {
            self.stats.no_payload += 1;
            self.verdicts.accept(p.id, &mut self.stats);
            return;
        };
        let ts = match p.timestamp {
            Some((sec, usec)) => Timestamp::from_parts(sec, (usec.min(999_999) * 1000) as u32),
            None => now,
        };
        let raw = RawPacket { ts, link: LinkType::RawIp, wire_len: p.wire_len(), data };
        match inspect(raw) {
            Verdict::Pass => self.verdicts.accept(p.id, &mut self.stats),
            Verdict::Drop => self.verdicts.drop_packet(p.id, &mut self.stats),
            Verdict::Reject(reject) => {
                // Earlier packets first: a RST must not overtake the segments before it.
                let _ = self.verdicts.send(&self.fd, &mut self.stats);
                self.replies.send(data, reject, &mut self.stats);
                self.verdicts.drop_packet(p.id, &mut self.stats);
            }
        }
    }

    /// Counts the packets the kernel numbered but could not hand over (id gaps).
    fn note_id(&mut self, id: u32) {
        if let Some(gap) = id_gap(self.last_id, id) {
            self.note_lost(gap);
            self.last_id = id;
        }
    }

    /// Packets the socket could not take: accepted by the kernel with fail-open, else
    /// dropped.
    fn note_lost(&mut self, packets: u32) {
        if self.config.fail_open {
            self.stats.fail_open += packets as u64;
        } else {
            self.stats.lost += packets as u64;
        }
    }
}

/// How many ids lie between the last packet read and this one (ids wrap around at
/// 2^32); `None` for an id that is not after the last one.
fn id_gap(last: u32, id: u32) -> Option<u32> {
    let step = id.wrapping_sub(last);
    (step != 0 && step < u32::MAX / 2).then(|| step - 1)
}

impl LivePort for NfQueue {
    fn poll(&mut self, wait: Duration, inspect: &mut dyn FnMut(RawPacket<'_>) -> Verdict) -> io::Result<usize> {
        let mut visited = 0;
        // Leftovers first: verdicts a failed send kept, packets that came during `open`.
        self.state.verdicts.send(&self.state.fd, &mut self.state.stats)?;
        if !self.backlog.is_empty() {
            let now = now_timestamp();
            for datagram in std::mem::take(&mut self.backlog) {
                visited += self.state.handle_datagram(&datagram, now, inspect);
            }
            self.state.verdicts.send(&self.state.fd, &mut self.state.stats)?;
        }
        let (packets, mut full) = self.round(inspect)?;
        visited += packets;
        if visited == 0 && !full && !wait.is_zero() && sys::wait_readable(&self.state.fd, wait)? {
            let (packets, more) = self.round(inspect)?;
            visited += packets;
            full = more;
        }
        // A busy queue: more rounds while they come back full, a bounded number.
        let mut rounds = 1;
        while full && rounds < MAX_ROUNDS {
            let (packets, more) = self.round(inspect)?;
            visited += packets;
            full = more;
            rounds += 1;
        }
        Ok(visited)
    }

    fn kernel_counts(&mut self) -> KernelCounts {
        let st = &mut self.state;
        if let Some(q) = proc_queue(st.queue).filter(|q| q.port_id == st.port_id) {
            st.kernel = KernelCounts { packets: q.id_sequence as u64, drops: q.dropped + q.user_dropped };
        }
        st.kernel
    }

    fn add_counters(&self, into: &mut CounterSet) {
        let s = &self.state.stats;
        into.add(FAIL_OPEN, s.fail_open);
        into.add(TX_ERRORS, s.tx_errors);
        into.add("picket.nfq.messages", s.messages);
        into.add("picket.nfq.verdicts", s.verdicts);
        into.add("picket.nfq.batches", s.batches);
        into.add("picket.nfq.verdict_errors", s.verdict_errors);
        into.add("picket.nfq.enobufs", s.enobufs);
        into.add("picket.nfq.lost", s.lost);
        into.add("picket.nfq.malformed", s.malformed);
        into.add("picket.nfq.no_payload", s.no_payload);
        into.add("picket.nfq.replies", s.replies);
        into.add("picket.nfq.reply_errors", s.reply_errors);
        into.add("picket.nfq.accepted_at_stop", s.accepted_at_stop);
    }

    fn mode(&self) -> PortMode {
        PortMode::Inline
    }

    fn describe(&self) -> String {
        let c = &self.state.config;
        format!(
            "NFQUEUE queue {} ({}, batches of up to {})",
            self.state.queue,
            if c.fail_open { "fail-open" } else { "fail-closed" },
            c.batchcount
        )
    }

    fn flush(&mut self) -> io::Result<()> {
        self.state.verdicts.send(&self.state.fd, &mut self.state.stats)?;
        if self.state.config.fail_open {
            // From here on the kernel accepts new packets itself (queue "full").
            let stop = ConfigRequest { queue_maxlen: Some(0), ..Default::default() };
            let configured = self.configure(&stop);
            // Packets that came while waiting for the answer: accepted, uninspected.
            for datagram in std::mem::take(&mut self.backlog) {
                for message in Messages::new(&datagram) {
                    if let Ok(Message::Packet(p)) = message {
                        let st = &mut self.state;
                        st.note_id(p.id);
                        st.stats.messages += 1;
                        st.stats.accepted_at_stop += 1;
                        st.verdicts.accept(p.id, &mut st.stats);
                    }
                }
            }
            configured?;
        }
        self.accept_remaining()?;
        // Packets numbered after the last one read never arrived: the tail of an overrun.
        let st = &mut self.state;
        if let Some(q) = proc_queue(st.queue).filter(|q| q.port_id == st.port_id) {
            if let Some(gap) = id_gap(st.last_id, q.id_sequence.wrapping_add(1)) {
                st.note_lost(gap);
                st.last_id = q.id_sequence;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
