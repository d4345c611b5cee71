//! The nfnetlink_queue message codec: building the configuration and verdict messages
//! picket sends, and reading the packet, acknowledgement and error messages the kernel
//! sends back. Pure and bounds-checked: nothing here panics on any input, and nothing
//! does I/O (the socket is in `sys.rs`).
//!
//! Layout of every message (`linux/netlink.h`, `linux/netfilter/nfnetlink.h`,
//! `linux/netfilter/nfnetlink_queue.h`):
//!
//! ```text
//! nlmsghdr (16 bytes, host byte order): length u32, type u16, flags u16, seq u32, port id u32
//! nfgenmsg (4 bytes):                   family u8, version u8, queue number u16 (big-endian)
//! attributes, each 4-aligned:           length u16, type u16 (host order), value (big-endian)
//! ```
//!
//! A datagram from the kernel may hold several messages one after another; [`Messages`]
//! walks them and stops at the first header that does not fit.

use crate::bytes::{be_u16, be_u32, be_u64, ne_u16, ne_u32, u8_at};
use std::fmt;

/// Netlink messages and attributes start on 4-byte boundaries.
const ALIGN: usize = 4;
/// `struct nlmsghdr`.
pub const NLMSG_HEADER_LEN: usize = 16;
const NLMSG_LEN_OFFSET: usize = 0;
const NLMSG_TYPE_OFFSET: usize = 4;
const NLMSG_SEQ_OFFSET: usize = 8;
/// `struct nfgenmsg`, right after the netlink header.
const NFGEN_LEN: usize = 4;
const NFGEN_QUEUE_OFFSET: usize = 2;
/// `NFNETLINK_V0`.
const NFNETLINK_V0: u8 = 0;
/// Start of the attributes of an nfnetlink message.
const ATTRS_OFFSET: usize = NLMSG_HEADER_LEN + NFGEN_LEN;
/// `struct nlattr`: length u16, type u16.
const ATTR_HEADER_LEN: usize = 4;
/// The two flag bits of an attribute type (`NLA_F_NESTED`, `NLA_F_NET_BYTEORDER`).
const ATTR_TYPE_MASK: u16 = 0x3fff;

/// Netlink control message types (`NLMSG_*`).
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `struct nlmsgerr`: error i32, then the header of the message it answers.
const NLMSGERR_ERROR_OFFSET: usize = NLMSG_HEADER_LEN;
const NLMSGERR_LEN: usize = 4;

/// Netlink request flags (`NLM_F_*`).
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;

/// `NFNL_SUBSYS_QUEUE`: the high byte of an nfnetlink_queue message type.
const NFNL_SUBSYS_QUEUE: u16 = 3;
/// `enum nfqnl_msg_types`, the low byte.
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;

const fn queue_type(msg: u16) -> u16 {
    (NFNL_SUBSYS_QUEUE << 8) | msg
}

/// `enum nfqnl_attr_type`: attributes of packet and verdict messages.
mod attr {
    pub const PACKET_HDR: u16 = 1;
    pub const VERDICT_HDR: u16 = 2;
    pub const MARK: u16 = 3;
    pub const TIMESTAMP: u16 = 4;
    pub const IFINDEX_INDEV: u16 = 5;
    pub const IFINDEX_OUTDEV: u16 = 6;
    pub const PAYLOAD: u16 = 10;
    pub const CAP_LEN: u16 = 13;
    pub const SKB_INFO: u16 = 14;
}

/// `enum nfqnl_attr_config`: attributes of configuration messages.
mod cfg_attr {
    pub const CMD: u16 = 1;
    pub const PARAMS: u16 = 2;
    pub const QUEUE_MAXLEN: u16 = 3;
    pub const MASK: u16 = 4;
    pub const FLAGS: u16 = 5;
}

/// `enum nfqnl_msg_config_cmds`.
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_CFG_CMD_UNBIND: u8 = 2;
/// `enum nfqnl_config_mode`: copy the whole packet (up to the copy range).
const NFQNL_COPY_PACKET: u8 = 2;

/// Queue flags (`NFQA_CFG_F_*`).
/// A full queue (or socket buffer) accepts packets instead of dropping them.
pub const NFQA_CFG_F_FAIL_OPEN: u32 = 0x1;
/// Deliver GSO super-packets unsegmented (and checksums possibly not filled in). picket
/// does not set it: the kernel segments, so every packet fits the MTU and has its checksums.
pub const NFQA_CFG_F_GSO: u32 = 0x4;

/// `NFQA_SKB_INFO` bits.
const NFQA_SKB_GSO: u32 = 0x2;

/// Largest copy range the kernel accepts (`NFQNL_MAX_COPY_RANGE`, 0xffff less an
/// attribute header); asking for more is clamped to it.
pub const MAX_COPY_RANGE: u32 = 0xffff;

/// Netfilter verdicts (`NF_*`).
pub const NF_DROP: u32 = 0;
pub const NF_ACCEPT: u32 = 1;

/// Byte lengths of the fixed attribute structures.
const PACKET_HDR_LEN: usize = 7; // packet_id u32, hw_protocol u16, hook u8
const TIMESTAMP_LEN: usize = 16; // sec u64, usec u64
const VERDICT_HDR_LEN: usize = 8; // verdict u32, id u32

fn align(n: usize) -> usize {
    n.next_multiple_of(ALIGN)
}

/// Appends one netlink message to a buffer: header first, attributes after, length
/// fixed up by [`MessageBuilder::finish`].
struct MessageBuilder<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
}

impl<'a> MessageBuilder<'a> {
    fn new(out: &'a mut Vec<u8>, kind: u16, flags: u16, seq: u32, queue: u16) -> Self {
        let start = out.len();
        out.extend_from_slice(&0u32.to_ne_bytes()); // length, fixed in finish()
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        out.extend_from_slice(&seq.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes()); // port id 0: to the kernel
                                                    // nfgenmsg: AF_UNSPEC (the queue carries every family), version 0, queue number.
        out.extend_from_slice(&[libc::AF_UNSPEC as u8, NFNETLINK_V0]);
        out.extend_from_slice(&queue.to_be_bytes());
        MessageBuilder { out, start }
    }

    fn attr(self, kind: u16, value: &[u8]) -> Self {
        let len = ATTR_HEADER_LEN + value.len();
        self.out.extend_from_slice(&(len as u16).to_ne_bytes());
        self.out.extend_from_slice(&kind.to_ne_bytes());
        self.out.extend_from_slice(value);
        self.out.resize(self.out.len() + (align(len) - len), 0);
        self
    }

    fn finish(self) {
        let len = (self.out.len() - self.start) as u32;
        self.out[self.start..self.start + 4].copy_from_slice(&len.to_ne_bytes());
    }
}

/// One configuration request for a queue; every part is optional and they are applied
/// by the kernel in this order (command, copy parameters, length, flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigRequest {
    pub command: Option<ConfigCommand>,
    /// Copy whole packets, up to this many bytes.
    pub copy_range: Option<u32>,
    pub queue_maxlen: Option<u32>,
    /// `(mask, flags)`: the flags under `mask` are set to their value in `flags`.
    pub flags: Option<(u32, u32)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigCommand {
    /// Take the queue (it carries IPv4 and IPv6 alike since Linux 3.8).
    Bind,
    Unbind,
}

/// Appends a configuration message asking for an acknowledgement under `seq`.
pub fn push_config(out: &mut Vec<u8>, seq: u32, queue: u16, request: &ConfigRequest) {
    let mut m = MessageBuilder::new(out, queue_type(NFQNL_MSG_CONFIG), NLM_F_ACK, seq, queue);
    if let Some(command) = request.command {
        let code = match command {
            ConfigCommand::Bind => NFQNL_CFG_CMD_BIND,
            ConfigCommand::Unbind => NFQNL_CFG_CMD_UNBIND,
        };
        // nfqnl_msg_config_cmd: command u8, pad u8, pf u16 (ignored since Linux 3.8).
        m = m.attr(cfg_attr::CMD, &[code, 0, 0, 0]);
    }
    if let Some(range) = request.copy_range {
        // nfqnl_msg_config_params (packed): copy_range u32, copy_mode u8.
        let mut params = [0u8; 5];
        params[..4].copy_from_slice(&range.min(MAX_COPY_RANGE).to_be_bytes());
        params[4] = NFQNL_COPY_PACKET;
        m = m.attr(cfg_attr::PARAMS, &params);
    }
    if let Some(maxlen) = request.queue_maxlen {
        m = m.attr(cfg_attr::QUEUE_MAXLEN, &maxlen.to_be_bytes());
    }
    if let Some((mask, flags)) = request.flags {
        m = m.attr(cfg_attr::MASK, &mask.to_be_bytes()).attr(cfg_attr::FLAGS, &flags.to_be_bytes());
    }
    m.finish();
}

/// Appends a verdict for packet `id`; with `batch`, for every packet of the queue whose
/// id is `id` or lower and that is still waiting (`NFQNL_MSG_VERDICT_BATCH`). No
/// acknowledgement is asked: the kernel reports a failure as an error message.
pub fn push_verdict(out: &mut Vec<u8>, queue: u16, id: u32, verdict: u32, batch: bool) {
    let kind = queue_type(if batch { NFQNL_MSG_VERDICT_BATCH } else { NFQNL_MSG_VERDICT });
    let mut header = [0u8; VERDICT_HDR_LEN];
    header[..4].copy_from_slice(&verdict.to_be_bytes());
    header[4..].copy_from_slice(&id.to_be_bytes());
    MessageBuilder::new(out, kind, 0, 0, queue).attr(attr::VERDICT_HDR, &header).finish();
}

/// One message from the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    Packet(PacketMessage<'a>),
    /// A request was carried out (an `NLMSG_ERROR` with error 0).
    Ack {
        seq: u32,
    },
    /// A request failed: `errno` is positive (EPERM, EINVAL, ...).
    Error {
        seq: u32,
        errno: i32,
    },
    /// Anything else (NOOP, DONE, another message type): skipped.
    Other {
        kind: u16,
    },
}

/// A queued packet waiting for its verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketMessage<'a> {
    pub queue: u16,
    /// The packet's id in its queue: verdicts name it.
    pub id: u32,
    /// EtherType of the payload (0x0800 IPv4, 0x86dd IPv6).
    pub hw_protocol: u16,
    /// Netfilter hook (0 prerouting, 1 input, 2 forward, 3 output, 4 postrouting).
    pub hook: u8,
    /// The packet from its network header on; absent when the queue copies metadata only.
    pub payload: Option<&'a [u8]>,
    /// Length of the packet when the payload was cut to the copy range.
    pub cap_len: Option<u32>,
    /// Seconds and microseconds, when the packet carries a receive timestamp.
    pub timestamp: Option<(u64, u64)>,
    pub mark: Option<u32>,
    pub in_ifindex: Option<u32>,
    pub out_ifindex: Option<u32>,
    /// The kernel delivered a GSO super-packet (only with `NFQA_CFG_F_GSO`).
    pub gso: bool,
}

impl PacketMessage<'_> {
    /// The packet's length on the wire.
    pub fn wire_len(&self) -> u32 {
        self.cap_len.unwrap_or_else(|| self.payload.map_or(0, |p| p.len() as u32))
    }
}

/// Why a message could not be read. One line, for counters and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// A header claims more bytes than the datagram holds, or fewer than a header.
    BadLength { what: &'static str, claimed: usize, available: usize },
    /// A packet message without its `NFQA_PACKET_HDR`: it has no id to answer.
    NoPacketHeader,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::BadLength { what, claimed, available } => {
                write!(f, "nfnetlink {what} claims {claimed} bytes, {available} available")
            }
            WireError::NoPacketHeader => write!(f, "nfnetlink packet message without a packet header"),
        }
    }
}

impl std::error::Error for WireError {}

/// The messages of one datagram, in order. After an error the iterator ends: the
/// lengths that locate the next message can no longer be trusted.
pub struct Messages<'a> {
    rest: &'a [u8],
}

impl<'a> Messages<'a> {
    pub fn new(datagram: &'a [u8]) -> Self {
        Messages { rest: datagram }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Message<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let available = self.rest.len();
        let claimed = ne_u32(self.rest, NLMSG_LEN_OFFSET).map_or(available, |l| l as usize);
        if available < NLMSG_HEADER_LEN || claimed < NLMSG_HEADER_LEN || claimed > available {
            self.rest = &[];
            return Some(Err(WireError::BadLength { what: "message", claimed, available }));
        }
        let (message, rest) = self.rest.split_at(claimed);
        // The last message of a datagram may lack its padding.
        self.rest = rest.get(align(claimed) - claimed..).unwrap_or(&[]);
        let parsed = parse_message(message);
        if parsed.is_err() {
            self.rest = &[];
        }
        Some(parsed)
    }
}

/// One message whose length has been checked against its buffer.
fn parse_message(message: &[u8]) -> Result<Message<'_>, WireError> {
    let kind = ne_u16(message, NLMSG_TYPE_OFFSET).unwrap_or(0);
    let seq = ne_u32(message, NLMSG_SEQ_OFFSET).unwrap_or(0);
    match kind {
        NLMSG_ERROR => {
            let code = ne_u32(message, NLMSGERR_ERROR_OFFSET).ok_or(WireError::BadLength {
                what: "error message",
                claimed: NLMSG_HEADER_LEN + NLMSGERR_LEN,
                available: message.len(),
            })? as i32;
            // The error answers the request whose header follows; its seq names it.
            let answered = ne_u32(message, NLMSG_HEADER_LEN + NLMSGERR_LEN + NLMSG_SEQ_OFFSET).unwrap_or(seq);
            Ok(if code == 0 { Message::Ack { seq: answered } } else { Message::Error { seq: answered, errno: -code } })
        }
        k if k == queue_type(NFQNL_MSG_PACKET) => parse_packet(message).map(Message::Packet),
        NLMSG_NOOP | NLMSG_DONE => Ok(Message::Other { kind }),
        _ => Ok(Message::Other { kind }),
    }
}

fn parse_packet(message: &[u8]) -> Result<PacketMessage<'_>, WireError> {
    let queue = be_u16(message, NLMSG_HEADER_LEN + NFGEN_QUEUE_OFFSET).ok_or(WireError::BadLength {
        what: "packet message",
        claimed: ATTRS_OFFSET,
        available: message.len(),
    })?;
    let mut packet = PacketMessage {
        queue,
        id: 0,
        hw_protocol: 0,
        hook: 0,
        payload: None,
        cap_len: None,
        timestamp: None,
        mark: None,
        in_ifindex: None,
        out_ifindex: None,
        gso: false,
    };
    let mut have_header = false;
    let mut rest = message.get(ATTRS_OFFSET..).unwrap_or(&[]);
    while rest.len() >= ATTR_HEADER_LEN {
        let len = ne_u16(rest, 0).unwrap_or(0) as usize;
        let kind = ne_u16(rest, 2).unwrap_or(0) & ATTR_TYPE_MASK;
        if len < ATTR_HEADER_LEN || len > rest.len() {
            return Err(WireError::BadLength { what: "attribute", claimed: len, available: rest.len() });
        }
        let value = &rest[ATTR_HEADER_LEN..len];
        match kind {
            attr::PACKET_HDR if value.len() >= PACKET_HDR_LEN => {
                packet.id = be_u32(value, 0).unwrap_or(0);
                packet.hw_protocol = be_u16(value, 4).unwrap_or(0);
                packet.hook = u8_at(value, 6).unwrap_or(0);
                have_header = true;
            }
            attr::PAYLOAD => packet.payload = Some(value),
            attr::CAP_LEN => packet.cap_len = be_u32(value, 0),
            attr::TIMESTAMP if value.len() >= TIMESTAMP_LEN => {
                packet.timestamp = be_u64(value, 0).zip(be_u64(value, 8));
            }
            attr::MARK => packet.mark = be_u32(value, 0),
            attr::IFINDEX_INDEV => packet.in_ifindex = be_u32(value, 0),
            attr::IFINDEX_OUTDEV => packet.out_ifindex = be_u32(value, 0),
            attr::SKB_INFO => packet.gso = be_u32(value, 0).is_some_and(|info| info & NFQA_SKB_GSO != 0),
            _ => {}
        }
        rest = rest.get(align(len)..).unwrap_or(&[]);
    }
    if !have_header {
        return Err(WireError::NoPacketHeader);
    }
    Ok(packet)
}

/// Builds a packet message the way the kernel does; for tests of the parser and the port.
#[cfg(test)]
pub fn push_packet_for_test(out: &mut Vec<u8>, queue: u16, id: u32, payload: &[u8], timestamp: Option<(u64, u64)>) {
    let mut header = [0u8; PACKET_HDR_LEN];
    header[..4].copy_from_slice(&id.to_be_bytes());
    header[4..6].copy_from_slice(&0x0800u16.to_be_bytes());
    header[6] = 2;
    let mut m = MessageBuilder::new(out, queue_type(NFQNL_MSG_PACKET), 0, 0, queue).attr(attr::PACKET_HDR, &header);
    if let Some((sec, usec)) = timestamp {
        let mut ts = [0u8; TIMESTAMP_LEN];
        ts[..8].copy_from_slice(&sec.to_be_bytes());
        ts[8..].copy_from_slice(&usec.to_be_bytes());
        m = m.attr(attr::TIMESTAMP, &ts);
    }
    m.attr(attr::PAYLOAD, payload).finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs_of(message: &[u8]) -> Vec<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        let mut rest = &message[ATTRS_OFFSET..];
        while rest.len() >= 4 {
            let len = ne_u16(rest, 0).unwrap() as usize;
            out.push((ne_u16(rest, 2).unwrap(), rest[4..len].to_vec()));
            rest = &rest[align(len).min(rest.len())..];
        }
        out
    }

    #[test]
    fn config_message_carries_bind_params_maxlen_and_flags() {
        let mut out = Vec::new();
        let request = ConfigRequest {
            command: Some(ConfigCommand::Bind),
            copy_range: Some(0x1_0000),
            queue_maxlen: Some(4096),
            flags: Some((NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN)),
        };
        push_config(&mut out, 7, 513, &request);
        assert_eq!(out.len() % 4, 0);
        assert_eq!(ne_u32(&out, 0).unwrap() as usize, out.len());
        assert_eq!(ne_u16(&out, 4).unwrap(), 0x0302);
        assert_eq!(ne_u16(&out, 6).unwrap(), NLM_F_REQUEST | NLM_F_ACK, "flags");
        assert_eq!(ne_u32(&out, 8).unwrap(), 7);
        assert_eq!(be_u16(&out, 18).unwrap(), 513);
        let attrs = attrs_of(&out);
        assert_eq!(attrs[0], (cfg_attr::CMD, vec![1, 0, 0, 0]));
        // The copy range is clamped to what the kernel takes.
        assert_eq!(attrs[1], (cfg_attr::PARAMS, vec![0, 0, 0xff, 0xff, NFQNL_COPY_PACKET]));
        assert_eq!(attrs[2], (cfg_attr::QUEUE_MAXLEN, 4096u32.to_be_bytes().to_vec()));
        assert_eq!(attrs[3], (cfg_attr::MASK, 1u32.to_be_bytes().to_vec()));
        assert_eq!(attrs[4], (cfg_attr::FLAGS, 1u32.to_be_bytes().to_vec()));
    }

    #[test]
    fn verdicts_single_and_batch() {
        let mut out = Vec::new();
        push_verdict(&mut out, 1, 42, NF_ACCEPT, true);
        let first = out.len();
        push_verdict(&mut out, 1, 43, NF_DROP, false);
        assert_eq!(ne_u16(&out, 4).unwrap(), 0x0303);
        assert_eq!(ne_u16(&out, first + 4).unwrap(), 0x0301);
        let attrs = attrs_of(&out[..first]);
        assert_eq!(attrs, vec![(attr::VERDICT_HDR, [1u32.to_be_bytes(), 42u32.to_be_bytes()].concat())]);
        let attrs = attrs_of(&out[first..]);
        assert_eq!(attrs, vec![(attr::VERDICT_HDR, [0u32.to_be_bytes(), 43u32.to_be_bytes()].concat())]);
    }

    #[test]
    fn packet_messages_parse_in_sequence() {
        let mut out = Vec::new();
        push_packet_for_test(&mut out, 3, 9, &[0x45, 0, 0, 20, 1], Some((1_700_000_000, 250)));
        push_packet_for_test(&mut out, 3, 10, &[0x60; 40], None);
        let messages: Vec<_> = Messages::new(&out).collect();
        assert_eq!(messages.len(), 2);
        let Ok(Message::Packet(p)) = messages[0] else { panic!("{:?}", messages[0]) };
        assert_eq!((p.queue, p.id, p.hw_protocol, p.hook), (3, 9, 0x0800, 2));
        assert_eq!(p.payload, Some(&[0x45, 0, 0, 20, 1][..]));
        assert_eq!(p.timestamp, Some((1_700_000_000, 250)));
        assert_eq!(p.wire_len(), 5);
        let Ok(Message::Packet(p)) = messages[1] else { panic!("{:?}", messages[1]) };
        assert_eq!((p.id, p.timestamp, p.wire_len()), (10, None, 40));
    }

    #[test]
    fn acks_and_errors_name_the_request() {
        let mut out = Vec::new();
        for code in [0i32, -1] {
            let start = out.len();
            out.extend_from_slice(&36u32.to_ne_bytes());
            out.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
            out.extend_from_slice(&[0; 10]);
            out.extend_from_slice(&code.to_ne_bytes());
            let mut request = Vec::new();
            push_config(&mut request, 5, 0, &ConfigRequest::default());
            out.extend_from_slice(&request[..16]);
            assert_eq!(out.len() - start, 36);
        }
        let messages: Vec<_> = Messages::new(&out).collect();
        assert_eq!(messages, vec![Ok(Message::Ack { seq: 5 }), Ok(Message::Error { seq: 5, errno: 1 })]);
    }

    #[test]
    fn damaged_messages_end_the_walk_without_panicking() {
        let mut good = Vec::new();
        push_packet_for_test(&mut good, 0, 1, &[0x45; 30], Some((1, 2)));
        // Every truncation and every single-byte corruption of the length fields.
        for cut in 0..good.len() {
            let _ = Messages::new(&good[..cut]).count();
        }
        for at in 0..good.len() {
            for value in [0u8, 1, 3, 4, 0x7f, 0xff] {
                let mut bad = good.clone();
                bad[at] = value;
                for m in Messages::new(&bad) {
                    if let Ok(Message::Packet(p)) = m {
                        assert!(p.payload.is_none_or(|d| d.len() <= bad.len()));
                    }
                }
            }
        }
        let mut no_header = Vec::new();
        MessageBuilder::new(&mut no_header, queue_type(NFQNL_MSG_PACKET), 0, 0, 0).attr(attr::PAYLOAD, &[1]).finish();
        assert_eq!(Messages::new(&no_header).next(), Some(Err(WireError::NoPacketHeader)));
        let claimed_too_long = [0xffu8; 20];
        assert!(matches!(Messages::new(&claimed_too_long).next(), Some(Err(WireError::BadLength { .. }))));
    }
}
