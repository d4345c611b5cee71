//! Header keywords: the raw-header sticky buffers (`tcp.hdr`, `udp.hdr`, `ipv4.hdr`,
//! `ipv6.hdr`, `icmpv4.hdr`, `icmpv6.hdr`) and packet checks that need more of the decoded
//! packet than the classic header keywords (`tcp.mss`, `vlan.id`, `vlan.layers`,
//! `*-csum`, `decode-event`). All of them look at the packet only, never at stream data.

use super::program::Program;
use crate::decode::checksum;
use crate::decode::events::DecodeEvent;
use crate::decode::tcp::TcpOption;
use crate::decode::{Decoded, IpLayer, L4};
use crate::detect::rule::packet_keywords::{ChecksumLayer, VlanId};
use crate::detect::rule::{Buffer, UintCmp};

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMPV6: u8 = 58;

/// A layer's header bytes as an inspection buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderBuffer {
    Ipv4,
    Ipv6,
    Tcp,
    Udp,
    Icmpv4,
    Icmpv6,
}

impl HeaderBuffer {
    pub(crate) fn from_buffer(b: Buffer) -> Option<HeaderBuffer> {
        Some(match b.name {
            "ipv4.hdr" => HeaderBuffer::Ipv4,
            "ipv6.hdr" => HeaderBuffer::Ipv6,
            "tcp.hdr" => HeaderBuffer::Tcp,
            "udp.hdr" => HeaderBuffer::Udp,
            "icmpv4.hdr" => HeaderBuffer::Icmpv4,
            "icmpv6.hdr" => HeaderBuffer::Icmpv6,
            _ => return None,
        })
    }

    /// The header bytes of this layer in `d`, or `None` when the packet has no such layer.
    pub(crate) fn bytes<'a>(self, d: &Decoded<'a>) -> Option<&'a [u8]> {
        match (self, &d.ip, &d.l4) {
            (HeaderBuffer::Ipv4, Some(IpLayer::V4(v)), _) => Some(v.header()),
            // The fixed header plus the extension headers, up to the upper layer.
            (HeaderBuffer::Ipv6, Some(IpLayer::V6(i)), _) => i.header.bytes().get(..i.upper_offset),
            (HeaderBuffer::Tcp, _, L4::Tcp(t)) => t.segment().get(..t.header_len()),
            (HeaderBuffer::Udp, _, L4::Udp(u)) => u.datagram().get(..crate::decode::udp::UDP_HEADER_LEN),
            (HeaderBuffer::Icmpv4, _, L4::Icmpv4(i)) => {
                let msg = i.message();
                msg.get(..icmpv4_header_len(msg))
            }
            (HeaderBuffer::Icmpv6, _, L4::Icmpv6(i)) => i.message().get(..crate::decode::icmp::ICMP_HEADER_LEN),
            _ => None,
        }
    }
}

/// ICMPv4 header length as Suricata counts it: 8 bytes, plus the two timestamps of a
/// timestamp request/reply and the address list of a router advertisement when captured.
fn icmpv4_header_len(msg: &[u8]) -> usize {
    const BASE: usize = 8;
    let extra = match msg.first() {
        Some(13 | 14) => 12,
        Some(9) => match (msg.get(4), msg.get(5)) {
            (Some(&count), Some(&words)) => count as usize * words as usize * 4,
            _ => 0,
        },
        _ => 0,
    };
    if msg.len() >= BASE + extra {
        BASE + extra
    } else {
        BASE
    }
}

/// Packet checks beyond the classic header keywords.
pub(crate) enum HeaderCheck {
    TcpMss(UintCmp<u16>),
    VlanId(VlanId),
    VlanLayers(UintCmp<u8>),
    Checksum { layer: ChecksumLayer, valid: bool },
    DecodeEvent(DecodeEvent),
}

impl HeaderCheck {
    fn matches(&self, d: &Decoded<'_>) -> bool {
        match self {
            HeaderCheck::TcpMss(cmp) => match &d.l4 {
                L4::Tcp(t) => t
                    .options()
                    .find_map(|o| match o {
                        Ok(TcpOption::Mss(mss)) => Some(mss),
                        _ => None,
                    })
                    .is_some_and(|mss| cmp.matches(mss)),
                _ => false,
            },
            HeaderCheck::VlanId(v) => {
                let n = (d.vlan_depth as usize).min(d.vlan.len());
                v.matches(&d.vlan[..n])
            }
            HeaderCheck::VlanLayers(cmp) => cmp.matches(d.vlan_depth),
            HeaderCheck::Checksum { layer, valid } => checksum_valid(*layer, d) == Some(*valid),
            HeaderCheck::DecodeEvent(e) => d.events.contains(*e),
        }
    }
}

/// Verifies one layer's checksum on the packet as captured (independent of the decoder's
/// checksum validation setting, as in Suricata). `None`: the packet has no such layer.
fn checksum_valid(layer: ChecksumLayer, d: &Decoded<'_>) -> Option<bool> {
    let v4 = match &d.ip {
        Some(IpLayer::V4(v)) => Some(v),
        _ => None,
    };
    let v6 = match &d.ip {
        Some(IpLayer::V6(i)) => Some(i),
        _ => None,
    };
    let v4_sum = || v4.map(|v| checksum::address_sum(&v.src(), &v.dst()));
    let v6_sum = || v6.map(|i| checksum::address_sum(i.header.src_bytes(), i.header.dst_bytes()));
    match (layer, &d.l4) {
        (ChecksumLayer::Ipv4, _) => v4.map(|v| checksum::ipv4_header_ok(v.header())),
        (ChecksumLayer::Tcpv4, L4::Tcp(t)) => v4_sum().map(|s| checksum::transport_ok(s, PROTO_TCP, t.segment())),
        (ChecksumLayer::Tcpv6, L4::Tcp(t)) => v6_sum().map(|s| checksum::transport_ok(s, PROTO_TCP, t.segment())),
        // Over IPv4 a zero UDP checksum means "not computed", which is valid.
        (ChecksumLayer::Udpv4, L4::Udp(u)) => {
            v4_sum().map(|s| u.checksum() == 0 || checksum::transport_ok(s, PROTO_UDP, u.datagram()))
        }
        (ChecksumLayer::Udpv6, L4::Udp(u)) => v6_sum().map(|s| checksum::transport_ok(s, PROTO_UDP, u.datagram())),
        (ChecksumLayer::Icmpv4, L4::Icmpv4(i)) => v4.map(|_| checksum::is_valid(checksum::accumulate(0, i.message()))),
        (ChecksumLayer::Icmpv6, L4::Icmpv6(i)) => {
            v6_sum().map(|s| checksum::transport_ok(s, PROTO_ICMPV6, i.message()))
        }
        _ => None,
    }
}

/// The header keywords of one rule.
#[derive(Default)]
pub(crate) struct HeaderRule {
    pub buffers: Vec<(HeaderBuffer, Program)>,
    pub checks: Vec<HeaderCheck>,
}

impl HeaderRule {
    pub(crate) fn is_empty(&self) -> bool {
        self.buffers.is_empty() && self.checks.is_empty()
    }

    /// The rule's header keywords hold on this packet (trivially true without any);
    /// `run` runs a payload program over a header buffer. Pseudo packets (stream data at
    /// flow end, `decoded: None`) carry no headers and never match them.
    pub(crate) fn matches(&self, decoded: Option<&Decoded<'_>>, mut run: impl FnMut(&Program, &[u8]) -> bool) -> bool {
        if self.is_empty() {
            return true;
        }
        let Some(d) = decoded else { return false };
        if !self.checks.iter().all(|c| c.matches(d)) {
            return false;
        }
        self.buffers.iter().all(|(which, program)| match which.bytes(d) {
            Some(bytes) => run(program, bytes),
            None => false,
        })
    }
}
