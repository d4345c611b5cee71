//! Reject replies: the packets a `reject`, `rejectsrc`, `rejectdst` or `rejectboth` rule
//! answers a blocked packet with, built sans-IO. An inline capture port (NFQUEUE, the
//! AF_PACKET bridge) holds the blocked frame; when the inspector's verdict is
//! [`Verdict::Reject`](crate::inspect::Verdict::Reject) it calls [`replies`] with that frame
//! and transmits what comes back: Ethernet frames on the bridge, raw IP packets (to
//! [`Reply::dst`]) from NFQUEUE.
//!
//! What is sent, and why:
//! - **TCP**: a RST. Linux (RFC 5961 §3) resets a connection only when a RST carries exactly
//!   the receiver's `rcv_nxt`; anything else in the window earns a challenge ACK, which the
//!   IPS then drops, and the connection hangs until it times out. So, for a blocked segment
//!   P (seq S, ack A, L bytes of data, SYN and FIN counting one each):
//!   - to P's source, from P's destination: `seq = A` when P has ACK (A is what the source
//!     expects next from its peer), else 0; `ack = S + L + SYN + FIN`; flags RST|ACK (a
//!     source still in SYN-SENT accepts a RST only with an acceptable ACK);
//!   - to P's destination, from P's source: `seq = S` (P never arrives, so S is the
//!     destination's `rcv_nxt`); RST|ACK with `ack = A` when P has ACK (a destination in
//!     SYN-SENT needs it), else a bare RST.
//!
//!   Window 0, no options, TTL/hop limit 64, IPv4 id 0 with DF.
//! - **Anything else**: ICMP destination unreachable to P's source, from P's destination:
//!   *port unreachable* for UDP and TCP (IPv4 type 3 code 3, IPv6 type 1 code 4; a connected
//!   socket fails at once with ECONNREFUSED), *host unreachable* for other protocols (IPv4
//!   code 1, IPv6 code 3 "address unreachable"). Host rather than protocol unreachable:
//!   only the destination host itself can truthfully say it does not speak a protocol, and
//!   IPv6 has no protocol-unreachable code (it would be a Parameter Problem). The message
//!   quotes P from its IP header on, as much as RFC 1812 §4.3.2.3 (IPv4: the reply stays
//!   within 576 bytes) and RFC 4443 §2.4 (IPv6: within 1280 bytes) allow.
//!   For `rejectdst` there is no ICMP reply: an error quoting a packet the destination never
//!   sent matches none of its sockets and is ignored. Suricata sends one anyway; picket does
//!   not, so `rejectdst` on UDP only drops, and `rejectboth` answers the source alone.
//! - **Never answered** (RFC 1122 §3.2.2, §4.2.2.12; RFC 4443 §2.4 e): ICMP errors (and
//!   ICMPv6 redirects), RSTs, fragments other than the first, packets to or from a broadcast
//!   or multicast address (IP or Ethernet group address), from an unspecified address.
//!   [`replies`] returns `Ok(0)` for those: not an error, the caller counts them.
//! - **Not answered, as an error**: frames that are truncated or malformed, links other than
//!   Ethernet and raw IP, and packets found inside a tunnel (a reply built from the outer
//!   headers would reach the tunnel endpoint and cut every flow in the tunnel; Suricata does
//!   not answer tunnelled packets either).
//!
//! Ethernet replies keep the blocked frame's VLAN tags; toward the source the MAC addresses
//! are swapped (the reply leaves through the port P came in on), toward the destination they
//! are kept. Frames are padded to Ethernet's 60-byte minimum.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::bytes;
use crate::decode::icmp::{IcmpView, ICMP_HEADER_LEN};
use crate::decode::ipv6::IPV6_HEADER_LEN;
use crate::decode::tcp::{TcpView, ACK, FIN, RST, SYN};
use crate::decode::udp::UdpView;
use crate::decode::{self, checksum, DecodeEvent, DecodeOptions, IpLayer};
use crate::decode::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_QINQ, ETHERTYPE_QINQ_OLD, ETHERTYPE_VLAN};
use crate::decode::{PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use crate::inspect::{Reject, RejectReply, RejectTarget};
use crate::packet::LinkType;

#[cfg(test)]
mod tests;

/// The side of the *blocked packet* a reply goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toward {
    /// The blocked packet's sender.
    Source,
    /// The host the blocked packet was meant for.
    Destination,
}

/// One packet to transmit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub toward: Toward,
    /// The reply's IP destination (for a raw-socket `sendto`).
    pub dst: IpAddr,
    /// The reply in the link type of the blocked frame: an Ethernet frame, or an IP packet.
    pub frame: Vec<u8>,
}

/// Why no reply could be built. [`ReplyError::name`] is a short name for counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// Replies are built for Ethernet and raw IP only.
    UnsupportedLink(LinkType),
    /// The frame ends inside a link-layer header.
    Truncated { header: &'static str, need: usize, have: usize },
    /// The Ethernet payload is not IPv4 or IPv6 (ARP, MPLS, PPPoE, ...).
    NotIp { ethertype: u16 },
    /// More VLAN tags than the decoder reads.
    TooManyVlanTags,
    /// The IP or transport header is broken: the decoder's event for it, when it named one.
    Malformed(Option<DecodeEvent>),
    /// The blocked packet was found inside a tunnel.
    Tunnelled,
}

impl ReplyError {
    pub fn name(self) -> &'static str {
        match self {
            ReplyError::UnsupportedLink(_) => "unsupported_link",
            ReplyError::Truncated { .. } => "truncated",
            ReplyError::NotIp { .. } => "not_ip",
            ReplyError::TooManyVlanTags => "too_many_vlan_tags",
            ReplyError::Malformed(_) => "malformed",
            ReplyError::Tunnelled => "tunnelled",
        }
    }
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("reject reply not built: ")?;
        match self {
            ReplyError::UnsupportedLink(link) => {
                write!(f, "link type {link:?} is not supported (replies are built for Ethernet and raw IP)")
            }
            ReplyError::Truncated { header, need, have } => {
                write!(f, "the blocked frame ends inside its {header} header ({have} of {need} bytes captured)")
            }
            ReplyError::NotIp { ethertype } => {
                write!(f, "the blocked frame carries EtherType 0x{ethertype:04x}, not IPv4 or IPv6")
            }
            ReplyError::TooManyVlanTags => {
                write!(f, "the blocked frame has more than {} VLAN tags", eth::MAX_VLAN_TAGS)
            }
            ReplyError::Malformed(Some(event)) => write!(f, "the blocked packet is malformed ({})", event.name()),
            ReplyError::Malformed(None) => write!(f, "the blocked packet has no usable IP header"),
            ReplyError::Tunnelled => {
                write!(f, "the blocked packet is inside a tunnel (a reply would reach the tunnel endpoint)")
            }
        }
    }
}

impl std::error::Error for ReplyError {}

/// Ethernet II header fields.
mod eth {
    pub const DST: usize = 0;
    pub const SRC: usize = 6;
    pub const MAC_LEN: usize = 6;
    pub const ETHERTYPE: usize = 12;
    pub const HEADER_LEN: usize = 14;
    /// An 802.1Q/802.1ad tag: TCI, then the next EtherType at this offset.
    pub const VLAN_TAG_LEN: usize = 4;
    pub const VLAN_NEXT_TYPE: usize = 2;
    /// Tags the decoder reads (outer and inner).
    pub const MAX_VLAN_TAGS: usize = 2;
    /// Ethernet's shortest frame (without FCS): replies are padded to it.
    pub const MIN_FRAME_LEN: usize = 60;
    /// The group bit of an address's first byte: broadcast and multicast.
    pub const GROUP_BIT: u8 = 0x01;
}

/// IPv4 header fields (RFC 791), without options.
mod v4 {
    pub const VERSION_IHL: usize = 0;
    pub const TOTAL_LEN: usize = 2;
    pub const FLAGS_FRAGMENT: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const HEADER_LEN: usize = 20;
    /// Version 4, header length 5 words.
    pub const VERSION_IHL_NO_OPTIONS: u8 = 0x45;
    pub const DONT_FRAGMENT: u16 = 0x4000;
    /// RFC 1812 §4.3.2.3: an ICMP error, IP header included, stays within 576 bytes.
    pub const ICMP_ERROR_MAX_LEN: usize = 576;
    pub const ICMP_DEST_UNREACHABLE: u8 = 3;
    pub const ICMP_HOST_UNREACHABLE: u8 = 1;
    pub const ICMP_PORT_UNREACHABLE: u8 = 3;
}

/// IPv6 fixed header fields (RFC 8200).
mod v6 {
    pub const VERSION_CLASS_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
    /// Version 6 in the top nibble; traffic class and flow label 0.
    pub const VERSION_BYTE: u8 = 0x60;
    /// RFC 4443 §2.4 (c): an ICMPv6 error stays within the minimum IPv6 MTU.
    pub const ICMP_ERROR_MAX_LEN: usize = 1280;
    pub const ICMP_DEST_UNREACHABLE: u8 = 1;
    pub const ICMP_ADDRESS_UNREACHABLE: u8 = 3;
    pub const ICMP_PORT_UNREACHABLE: u8 = 4;
    /// ICMPv6 types below this are errors (RFC 4443 §2.1).
    pub const ICMP_FIRST_INFORMATIONAL: u8 = 128;
    pub const ICMP_REDIRECT: u8 = 137;
}

/// TCP header fields (RFC 9293), without options.
mod tcp_hdr {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const CHECKSUM: usize = 16;
    pub const HEADER_LEN: usize = 20;
    /// Data offset 5 words, in the top nibble.
    pub const DATA_OFFSET_NO_OPTIONS: u8 = 5 << 4;
}

/// ICMP and ICMPv6 header fields: type, code, checksum, 4 unused bytes, then the quote.
mod icmp_hdr {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
}

/// TTL / hop limit of every reply.
const REPLY_TTL: u8 = 64;

/// ICMPv4 types that are errors (RFC 792, RFC 1122 §3.2.2): unreachable, source quench,
/// redirect, time exceeded, parameter problem.
const ICMPV4_ERROR_TYPES: [u8; 5] = [3, 4, 5, 11, 12];

/// Tunnels are looked for as the inspector does; checksums do not matter here.
const DECODE_OPTIONS: DecodeOptions = DecodeOptions { validate_checksums: false, ..DecodeOptions::DEFAULT };

/// Builds the replies `reject` asks for to the blocked `frame` (in link type `link`),
/// appends them to `out` and returns how many it appended: 0 when the packet must not be
/// answered (see the module docs) or when `rejectdst` meets a packet only ICMP could answer.
pub fn replies(link: LinkType, frame: &[u8], reject: Reject, out: &mut Vec<Reply>) -> Result<usize, ReplyError> {
    let Split { l2, ip, ip_link } = split_link(link, frame)?;
    if l2.is_some_and(|h| group_address(h, eth::DST) || group_address(h, eth::SRC)) {
        return Ok(0);
    }
    let Some(blocked) = Blocked::parse(l2, ip, ip_link)? else { return Ok(0) };
    if blocked.addrs.must_not_answer() {
        return Ok(0);
    }
    let sides: &[Toward] = match reject.to {
        RejectTarget::Source => &[Toward::Source],
        RejectTarget::Destination => &[Toward::Destination],
        RejectTarget::Both => &[Toward::Source, Toward::Destination],
    };
    let before = out.len();
    for &toward in sides {
        let reply = match (&blocked.transport, reject.reply) {
            (Transport::Tcp(seg), RejectReply::TcpReset) => Some(blocked.tcp_reset(seg, toward)),
            (_, _) if toward == Toward::Source => Some(blocked.icmp_unreachable()),
            _ => None,
        };
        out.extend(reply);
    }
    Ok(out.len() - before)
}

fn group_address(l2: &[u8], at: usize) -> bool {
    bytes::u8_at(l2, at).is_some_and(|b| b & eth::GROUP_BIT != 0)
}

fn is_vlan_tag(ethertype: u16) -> bool {
    matches!(ethertype, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD)
}

/// A blocked frame split at its IP header.
struct Split<'a> {
    /// Ethernet header with its VLAN tags; `None` for raw IP.
    l2: Option<&'a [u8]>,
    ip: &'a [u8],
    /// The link type to decode `ip` as.
    ip_link: LinkType,
}

/// Splits a frame into its link-layer header and its IP packet.
fn split_link(link: LinkType, frame: &[u8]) -> Result<Split<'_>, ReplyError> {
    match link {
        LinkType::Ethernet => {
            let truncated = |header, need| ReplyError::Truncated { header, need, have: frame.len() };
            let mut ethertype = bytes::be_u16(frame, eth::ETHERTYPE).ok_or(truncated("Ethernet", eth::HEADER_LEN))?;
            let mut l2_len = eth::HEADER_LEN;
            let mut tags = 0;
            while is_vlan_tag(ethertype) {
                if tags == eth::MAX_VLAN_TAGS {
                    return Err(ReplyError::TooManyVlanTags);
                }
                ethertype = bytes::be_u16(frame, l2_len + eth::VLAN_NEXT_TYPE)
                    .ok_or(truncated("VLAN", l2_len + eth::VLAN_TAG_LEN))?;
                l2_len += eth::VLAN_TAG_LEN;
                tags += 1;
            }
            let ip_link = match ethertype {
                ETHERTYPE_IPV4 => LinkType::RawIpv4,
                ETHERTYPE_IPV6 => LinkType::RawIpv6,
                other => return Err(ReplyError::NotIp { ethertype: other }),
            };
            let (l2, ip) = frame.split_at_checked(l2_len).ok_or(truncated("Ethernet", l2_len))?;
            Ok(Split { l2: Some(l2), ip, ip_link })
        }
        LinkType::RawIp | LinkType::RawIpv4 | LinkType::RawIpv6 => Ok(Split { l2: None, ip: frame, ip_link: link }),
        other => Err(ReplyError::UnsupportedLink(other)),
    }
}

/// A blocked packet's endpoints.
#[derive(Clone, Copy, Debug)]
enum Addrs {
    V4 { src: Ipv4Addr, dst: Ipv4Addr },
    V6 { src: Ipv6Addr, dst: Ipv6Addr },
}

impl Addrs {
    /// RFC 1122 §3.2.2 / §4.2.2.12, RFC 4443 §2.4 (e): nothing answers a packet sent to a
    /// broadcast or multicast address, or from one (or from nowhere).
    fn must_not_answer(self) -> bool {
        match self {
            Addrs::V4 { src, dst } => {
                src.is_unspecified()
                    || src.is_broadcast()
                    || src.is_multicast()
                    || dst.is_broadcast()
                    || dst.is_multicast()
            }
            Addrs::V6 { src, dst } => src.is_unspecified() || src.is_multicast() || dst.is_multicast(),
        }
    }

    /// The endpoints of a reply going `toward` one side of the blocked packet.
    fn of_reply(self, toward: Toward) -> Addrs {
        match (self, toward) {
            (a, Toward::Destination) => a,
            (Addrs::V4 { src, dst }, Toward::Source) => Addrs::V4 { src: dst, dst: src },
            (Addrs::V6 { src, dst }, Toward::Source) => Addrs::V6 { src: dst, dst: src },
        }
    }

    fn dst(self) -> IpAddr {
        match self {
            Addrs::V4 { dst, .. } => dst.into(),
            Addrs::V6 { dst, .. } => dst.into(),
        }
    }

    /// The unfolded sum of the pseudo-header addresses.
    fn address_sum(self) -> u64 {
        match self {
            Addrs::V4 { src, dst } => checksum::address_sum(&src.octets(), &dst.octets()),
            Addrs::V6 { src, dst } => checksum::address_sum(&src.octets(), &dst.octets()),
        }
    }
}

/// What a TCP RST is computed from.
#[derive(Clone, Copy, Debug)]
struct TcpSegment {
    src_port: u16,
    dst_port: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    /// Sequence space the segment takes: data length plus one each for SYN and FIN.
    seq_len: u32,
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Tcp(TcpSegment),
    /// UDP: answered with port unreachable.
    Udp,
    /// Anything else not excluded: answered with host unreachable.
    Other,
}

/// The blocked packet, as far as a reply needs it.
struct Blocked<'a> {
    /// Ethernet header with its VLAN tags; `None` for raw IP.
    l2: Option<&'a [u8]>,
    addrs: Addrs,
    /// The IP packet as captured, cut to its declared length: what an ICMP error quotes.
    packet: &'a [u8],
    transport: Transport,
}

impl<'a> Blocked<'a> {
    /// `Ok(None)` for packets that are never answered.
    fn parse(l2: Option<&'a [u8]>, ip: &'a [u8], ip_link: LinkType) -> Result<Option<Self>, ReplyError> {
        let d = decode::decode(ip_link, ip, &DECODE_OPTIONS);
        let malformed = || ReplyError::Malformed(d.events.iter().next());
        if d.tunnel.is_some() {
            return Err(ReplyError::Tunnelled);
        }
        let (addrs, declared_len, upper_offset, proto) = match d.ip {
            Some(IpLayer::V4(v)) => {
                if v.frag_offset() != 0 {
                    return Ok(None);
                }
                let addrs = Addrs::V4 { src: v.src_addr(), dst: v.dst_addr() };
                (addrs, v.total_len() as usize, v.header_len(), v.protocol())
            }
            Some(IpLayer::V6(info)) => {
                if info.fragment.is_some_and(|f| f.offset != 0) {
                    return Ok(None);
                }
                if info.incomplete {
                    return Err(malformed());
                }
                let addrs = Addrs::V6 { src: info.header.src_addr(), dst: info.header.dst_addr() };
                let declared = IPV6_HEADER_LEN + info.header.payload_len() as usize;
                (addrs, declared, info.upper_offset, info.upper_proto)
            }
            None => return Err(malformed()),
        };
        let packet = ip.get(..declared_len.min(ip.len())).unwrap_or(ip);
        // The transport header and what follows, as captured and within the IP length; each
        // transport's view checks its header is there (a first fragment has it too).
        let upper = packet.get(upper_offset..).ok_or_else(malformed)?;
        let upper_declared = declared_len.checked_sub(upper_offset).ok_or_else(malformed)?;
        let transport = match proto {
            PROTO_TCP => {
                let tcp = TcpView::new(upper).map_err(|e| ReplyError::Malformed(Some(e)))?;
                if tcp.has(RST) {
                    return Ok(None);
                }
                let data_len = upper_declared.checked_sub(tcp.header_len()).ok_or_else(malformed)?;
                let flags = tcp.flags();
                let seq_len = data_len as u32 + u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
                Transport::Tcp(TcpSegment {
                    src_port: tcp.src_port(),
                    dst_port: tcp.dst_port(),
                    seq: tcp.seq(),
                    ack: tcp.ack(),
                    flags,
                    seq_len,
                })
            }
            PROTO_UDP => {
                UdpView::new(upper).map_err(|e| ReplyError::Malformed(Some(e)))?;
                Transport::Udp
            }
            PROTO_ICMP => {
                let msg = IcmpView::new_v4(upper).map_err(|e| ReplyError::Malformed(Some(e)))?;
                if ICMPV4_ERROR_TYPES.contains(&msg.icmp_type()) {
                    return Ok(None);
                }
                Transport::Other
            }
            PROTO_ICMPV6 => {
                let msg = IcmpView::new_v6(upper).map_err(|e| ReplyError::Malformed(Some(e)))?;
                let t = msg.icmp_type();
                if t < v6::ICMP_FIRST_INFORMATIONAL || t == v6::ICMP_REDIRECT {
                    return Ok(None);
                }
                Transport::Other
            }
            _ => Transport::Other,
        };
        Ok(Some(Blocked { l2, addrs, packet, transport }))
    }

    fn tcp_reset(&self, seg: &TcpSegment, toward: Toward) -> Reply {
        let had_ack = seg.flags & ACK != 0;
        let (src_port, dst_port, seq, ack) = match toward {
            Toward::Source => {
                (seg.dst_port, seg.src_port, if had_ack { seg.ack } else { 0 }, Some(seg.seq.wrapping_add(seg.seq_len)))
            }
            Toward::Destination => (seg.src_port, seg.dst_port, seg.seq, had_ack.then_some(seg.ack)),
        };
        let mut rst = [0u8; tcp_hdr::HEADER_LEN];
        put_u16(&mut rst, tcp_hdr::SRC_PORT, src_port);
        put_u16(&mut rst, tcp_hdr::DST_PORT, dst_port);
        put_u32(&mut rst, tcp_hdr::SEQ, seq);
        put_u32(&mut rst, tcp_hdr::ACK, ack.unwrap_or(0));
        rst[tcp_hdr::DATA_OFFSET] = tcp_hdr::DATA_OFFSET_NO_OPTIONS;
        rst[tcp_hdr::FLAGS] = if ack.is_some() { RST | ACK } else { RST };
        // Window 0 and urgent pointer 0 stay as zeroed.
        let addrs = self.addrs.of_reply(toward);
        self.reply(toward, addrs, PROTO_TCP, &rst, Some(tcp_hdr::CHECKSUM), true)
    }

    /// Destination unreachable to the blocked packet's source, quoting the packet.
    fn icmp_unreachable(&self) -> Reply {
        let addrs = self.addrs.of_reply(Toward::Source);
        let has_ports = matches!(self.transport, Transport::Tcp(_) | Transport::Udp);
        let (proto, ty, code, max_len, ip_len, pseudo) = match addrs {
            Addrs::V4 { .. } => (
                PROTO_ICMP,
                v4::ICMP_DEST_UNREACHABLE,
                if has_ports { v4::ICMP_PORT_UNREACHABLE } else { v4::ICMP_HOST_UNREACHABLE },
                v4::ICMP_ERROR_MAX_LEN,
                v4::HEADER_LEN,
                false,
            ),
            Addrs::V6 { .. } => (
                PROTO_ICMPV6,
                v6::ICMP_DEST_UNREACHABLE,
                if has_ports { v6::ICMP_PORT_UNREACHABLE } else { v6::ICMP_ADDRESS_UNREACHABLE },
                v6::ICMP_ERROR_MAX_LEN,
                IPV6_HEADER_LEN,
                true,
            ),
        };
        let quote_len = self.packet.len().min(max_len - ip_len - ICMP_HEADER_LEN);
        let mut msg = Vec::with_capacity(ICMP_HEADER_LEN + quote_len);
        msg.resize(ICMP_HEADER_LEN, 0);
        msg[icmp_hdr::TYPE] = ty;
        msg[icmp_hdr::CODE] = code;
        msg.extend_from_slice(&self.packet[..quote_len]);
        self.reply(Toward::Source, addrs, proto, &msg, Some(icmp_hdr::CHECKSUM), pseudo)
    }

    /// Wraps a transport message (checksum field zero) in IP and, for Ethernet, in the
    /// blocked frame's link header; fills in the checksums.
    fn reply(
        &self,
        toward: Toward,
        addrs: Addrs,
        proto: u8,
        message: &[u8],
        checksum_at: Option<usize>,
        pseudo_header: bool,
    ) -> Reply {
        let l2_len = self.l2.map_or(0, <[u8]>::len);
        let mut frame = Vec::with_capacity(eth::MIN_FRAME_LEN.max(l2_len + IPV6_HEADER_LEN + message.len()));
        if let Some(l2) = self.l2 {
            frame.extend_from_slice(l2);
            if toward == Toward::Source {
                frame[eth::DST..eth::DST + eth::MAC_LEN].copy_from_slice(&l2[eth::SRC..eth::SRC + eth::MAC_LEN]);
                frame[eth::SRC..eth::SRC + eth::MAC_LEN].copy_from_slice(&l2[eth::DST..eth::DST + eth::MAC_LEN]);
            }
        }
        match addrs {
            Addrs::V4 { src, dst } => frame.extend_from_slice(&ipv4_header(src, dst, proto, message.len())),
            Addrs::V6 { src, dst } => frame.extend_from_slice(&ipv6_header(src, dst, proto, message.len())),
        }
        let start = frame.len();
        frame.extend_from_slice(message);
        if let Some(at) = checksum_at {
            let acc = if pseudo_header {
                checksum::pseudo_header(addrs.address_sum(), proto, message.len() as u32)
            } else {
                0
            };
            let sum = checksum::compute(checksum::accumulate(acc, message));
            put_u16(&mut frame[start..], at, sum);
        }
        if self.l2.is_some() && frame.len() < eth::MIN_FRAME_LEN {
            frame.resize(eth::MIN_FRAME_LEN, 0);
        }
        Reply { toward, dst: addrs.dst(), frame }
    }
}

fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload_len: usize) -> [u8; v4::HEADER_LEN] {
    let mut h = [0u8; v4::HEADER_LEN];
    h[v4::VERSION_IHL] = v4::VERSION_IHL_NO_OPTIONS;
    // Replies are at most 576 bytes (ICMP) or 40 (RST): the length always fits.
    put_u16(&mut h, v4::TOTAL_LEN, (v4::HEADER_LEN + payload_len) as u16);
    // Identification 0: with DF set the datagram is never fragmented (RFC 6864).
    put_u16(&mut h, v4::FLAGS_FRAGMENT, v4::DONT_FRAGMENT);
    h[v4::TTL] = REPLY_TTL;
    h[v4::PROTOCOL] = proto;
    h[v4::SRC..v4::SRC + 4].copy_from_slice(&src.octets());
    h[v4::DST..v4::DST + 4].copy_from_slice(&dst.octets());
    let sum = checksum::compute(checksum::accumulate(0, &h));
    put_u16(&mut h, v4::CHECKSUM, sum);
    h
}

fn ipv6_header(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, payload_len: usize) -> [u8; IPV6_HEADER_LEN] {
    let mut h = [0u8; IPV6_HEADER_LEN];
    h[v6::VERSION_CLASS_FLOW] = v6::VERSION_BYTE;
    // At most 1240 bytes (ICMPv6 within 1280): fits.
    put_u16(&mut h, v6::PAYLOAD_LEN, payload_len as u16);
    h[v6::NEXT_HEADER] = next_header;
    h[v6::HOP_LIMIT] = REPLY_TTL;
    h[v6::SRC..v6::SRC + 16].copy_from_slice(&src.octets());
    h[v6::DST..v6::DST + 16].copy_from_slice(&dst.octets());
    h
}

/// Writes a big-endian field at a named offset of a header this module sized.
fn put_u16(buf: &mut [u8], at: usize, value: u16) {
    if let Some(field) = buf.get_mut(at..at + 2) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}

fn put_u32(buf: &mut [u8], at: usize, value: u32) {
    if let Some(field) = buf.get_mut(at..at + 4) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}
