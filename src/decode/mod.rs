//! Zero-copy protocol decoders. Each header type is a view over the captured bytes,
//! checked once for length when it is made, after which every accessor is a plain read.
//! [`decode`] walks link layer → VLAN → IP → transport and records anomalies as
//! [`DecodeEvent`]s (Suricata's decoder event names) instead of failing: a malformed packet
//! is decoded as far as it goes, counted, and never panics.
//!
//! Behaviour worth knowing:
//! - **Link types**: Ethernet II (802.3 length-field frames are counted as
//!   `ethernet.ieee8023_frame` and not decoded), raw IP (version from the first nibble),
//!   raw IPv4/IPv6, Linux SLL (protocol at offset 14 of 16) and SLL2 (protocol at offset 0
//!   of 20), BSD Null (address family in either byte order: 2 = IPv4, 24/28/30 = IPv6) and
//!   Loop (network order). Other link types raise `link.unsupported_type`.
//! - **VLAN**: 0x8100, 0x88a8 and 0x9100 tags; the first two ids are kept, outermost
//!   first. A third tag raises `vlan.too_many_layers` and decoding stops.
//! - **Lengths**: the transport layer is bounded by the IP total/payload length, so
//!   Ethernet padding never reaches `payload`. A packet captured shorter than its IP
//!   length (snaplen) raises `ipv4.trunc_pkt` / `ipv6.trunc_pkt` and is still decoded
//!   as far as the captured bytes go; its transport checksum is not verified.
//! - **Fragments are not reassembled** (yet). An IPv4 fragment (MF set or offset != 0) or an
//!   IPv6 packet with a Fragment header that really fragments sets `fragment`, leaves
//!   `l4 = L4::Other(proto)` and `payload` empty, and its tuple has ports 0. For IPv6 the
//!   extension-header walk stops at the Fragment header, so every fragment of a datagram
//!   reports the same protocol.
//! - **Checksums** (only with `DecodeOptions::validate_checksums`): IPv4 header, TCP, UDP
//!   (0 over IPv4 means "none"; 0 over IPv6 is wrong), ICMPv4, ICMPv6. A wrong one sets
//!   `bad_checksum`; it is not a decoder event (Suricata has none either).
//! - **FiveTuple**: addresses as 16 bytes, IPv4 v4-mapped (`::ffff:a.b.c.d`). For ICMP the
//!   ports carry the type (`src_port`) and code (`dst_port`), as Suricata's eve.json does.
//! - [`flow_hash`] parses just enough to find addresses and ports, for the dispatcher.

pub mod checksum;
pub mod events;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;

#[cfg(test)]
mod tests;

use crate::packet::LinkType;

pub use events::{DecodeEvent, EventSet};
pub use icmp::IcmpView;
pub use ipv4::{Ipv4Option, Ipv4Options, Ipv4View};
pub use ipv6::{Ipv6Fragment, Ipv6Info, Ipv6View};
pub use tcp::{TcpOption, TcpOptions, TcpView};
pub use udp::UdpView;

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMPV6: u8 = 58;

const ETHERNET_HEADER_LEN: usize = 14;
const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;
const VLAN_TAG_LEN: usize = 4;
const MAX_VLAN_LAYERS: u8 = 2;

#[derive(Clone, Copy, Debug)]
pub struct DecodeOptions {
    /// Verify IPv4 header and transport checksums (sets `Decoded::bad_checksum`).
    pub validate_checksums: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { validate_checksums: true }
    }
}

/// The network layer of a decoded packet.
#[derive(Clone, Copy, Debug)]
pub enum IpLayer<'a> {
    V4(Ipv4View<'a>),
    V6(Ipv6Info<'a>),
}

/// The transport layer of a decoded packet.
#[derive(Clone, Copy, Debug)]
pub enum L4<'a> {
    /// No transport layer: no IP, a broken IP header, or a transport header too short.
    None,
    Tcp(TcpView<'a>),
    Udp(UdpView<'a>),
    Icmpv4(IcmpView<'a>),
    Icmpv6(IcmpView<'a>),
    /// A protocol not decoded (or a fragment): the IP protocol number.
    Other(u8),
}

/// Everything [`decode`] learned about one packet.
#[derive(Clone, Copy, Debug)]
pub struct Decoded<'a> {
    /// VLAN ids, outermost first; only the first `min(vlan_depth, 2)` are set.
    pub vlan: [u16; 2],
    /// Number of VLAN tags seen (3 means "too many", decoding stopped).
    pub vlan_depth: u8,
    pub ip: Option<IpLayer<'a>>,
    pub l4: L4<'a>,
    /// Transport payload (TCP/UDP/ICMP data); empty if none.
    pub payload: &'a [u8],
    pub events: EventSet,
    pub bad_checksum: bool,
    pub fragment: bool,
}

/// A flow key. Addresses are 16 bytes, IPv4 as v4-mapped IPv6. For ICMP, `src_port` is
/// the type and `dst_port` the code (as in Suricata's eve.json); other protocols without
/// ports, and fragments, have both 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
    pub is_v4: bool,
}

impl FiveTuple {
    pub fn src_ip(&self) -> std::net::IpAddr {
        address(&self.src, self.is_v4)
    }
    pub fn dst_ip(&self) -> std::net::IpAddr {
        address(&self.dst, self.is_v4)
    }
    /// The same flow seen from the other side.
    pub fn reversed(&self) -> FiveTuple {
        FiveTuple { src: self.dst, dst: self.src, src_port: self.dst_port, dst_port: self.src_port, ..*self }
    }
}

fn address(bytes: &[u8; 16], is_v4: bool) -> std::net::IpAddr {
    if is_v4 {
        std::net::Ipv4Addr::new(bytes[12], bytes[13], bytes[14], bytes[15]).into()
    } else {
        std::net::Ipv6Addr::from(*bytes).into()
    }
}

/// `::ffff:a.b.c.d`
pub fn v4_mapped(addr: [u8; 4]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[10] = 0xff;
    out[11] = 0xff;
    out[12..].copy_from_slice(&addr);
    out
}

impl<'a> Decoded<'a> {
    fn empty() -> Self {
        Decoded {
            vlan: [0; 2],
            vlan_depth: 0,
            ip: None,
            l4: L4::None,
            payload: &[],
            events: EventSet::new(),
            bad_checksum: false,
            fragment: false,
        }
    }

    /// The flow key, or `None` without an IP layer.
    pub fn tuple(&self) -> Option<FiveTuple> {
        let (src, dst, proto, is_v4) = match self.ip.as_ref()? {
            IpLayer::V4(v) => (v4_mapped(v.src()), v4_mapped(v.dst()), v.protocol(), true),
            IpLayer::V6(i) => (i.header.src(), i.header.dst(), i.upper_proto, false),
        };
        let (src_port, dst_port) = match &self.l4 {
            L4::Tcp(t) => (t.src_port(), t.dst_port()),
            L4::Udp(u) => (u.src_port(), u.dst_port()),
            L4::Icmpv4(i) | L4::Icmpv6(i) => (i.icmp_type() as u16, i.code() as u16),
            L4::None | L4::Other(_) => (0, 0),
        };
        Some(FiveTuple { src, dst, src_port, dst_port, proto, is_v4 })
    }

    /// IPv4 protocol, or the IPv6 upper-layer protocol after extension headers.
    pub fn ip_proto(&self) -> Option<u8> {
        match self.ip.as_ref()? {
            IpLayer::V4(v) => Some(v.protocol()),
            IpLayer::V6(i) => Some(i.upper_proto),
        }
    }

    /// Outermost VLAN id, if tagged.
    pub fn outer_vlan(&self) -> Option<u16> {
        (self.vlan_depth > 0).then_some(self.vlan[0])
    }
}

/// Decodes one captured packet. Never panics; anomalies land in `events`.
pub fn decode<'a>(link: LinkType, data: &'a [u8], opts: &DecodeOptions) -> Decoded<'a> {
    let mut d = Decoded::empty();
    match link {
        LinkType::Ethernet => {
            if data.len() < ETHERNET_HEADER_LEN {
                d.events.insert(DecodeEvent::EthernetPktTooSmall);
            } else {
                let ethertype = u16::from_be_bytes([data[12], data[13]]);
                decode_ethertype(&mut d, ethertype, &data[ETHERNET_HEADER_LEN..], opts);
            }
        }
        LinkType::LinuxSll => {
            if data.len() < SLL_HEADER_LEN {
                d.events.insert(DecodeEvent::SllPktTooSmall);
            } else {
                let protocol = u16::from_be_bytes([data[14], data[15]]);
                decode_ethertype(&mut d, protocol, &data[SLL_HEADER_LEN..], opts);
            }
        }
        LinkType::LinuxSll2 => {
            if data.len() < SLL2_HEADER_LEN {
                d.events.insert(DecodeEvent::SllPktTooSmall);
            } else {
                let protocol = u16::from_be_bytes([data[0], data[1]]);
                decode_ethertype(&mut d, protocol, &data[SLL2_HEADER_LEN..], opts);
            }
        }
        LinkType::RawIp => match data.first().map(|b| b >> 4) {
            Some(4) => decode_ipv4(&mut d, data, opts),
            Some(6) => decode_ipv6(&mut d, data, opts),
            _ => d.events.insert(DecodeEvent::IprawInvalidIpVersion),
        },
        LinkType::RawIpv4 => decode_ipv4(&mut d, data, opts),
        LinkType::RawIpv6 => decode_ipv6(&mut d, data, opts),
        LinkType::Null | LinkType::Loop => {
            if data.len() < NULL_HEADER_LEN {
                d.events.insert(DecodeEvent::LtnullPktTooSmall);
            } else {
                let rest = &data[NULL_HEADER_LEN..];
                match null_family(link, [data[0], data[1], data[2], data[3]]) {
                    Some(IpVersion::V4) => decode_ipv4(&mut d, rest, opts),
                    Some(IpVersion::V6) => decode_ipv6(&mut d, rest, opts),
                    None => d.events.insert(DecodeEvent::LtnullUnsupportedType),
                }
            }
        }
        LinkType::Unsupported(_) => d.events.insert(DecodeEvent::LinkUnsupportedType),
    }
    d
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum IpVersion {
    V4,
    V6,
}

/// BSD Null carries the address family in the capturing host's byte order, which the
/// reader cannot know, so both orders are tried; Loop is always network order.
fn null_family(link: LinkType, header: [u8; 4]) -> Option<IpVersion> {
    let family = |value: u32| match value {
        2 => Some(IpVersion::V4),
        // AF_INET6 on BSD (24), FreeBSD/DragonFly (28), macOS (30).
        24 | 28 | 30 => Some(IpVersion::V6),
        _ => None,
    };
    let big = family(u32::from_be_bytes(header));
    if link == LinkType::Loop {
        return big;
    }
    family(u32::from_le_bytes(header)).or(big)
}

fn is_vlan_tag(ethertype: u16) -> bool {
    matches!(ethertype, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD)
}

/// EtherTypes that are common on real networks but carry no IP for us to inspect;
/// they are skipped without an event so that `ethernet.unknown_ethertype` stays meaningful.
fn is_known_non_ip_ethertype(ethertype: u16) -> bool {
    matches!(
        ethertype,
        0x0806 // ARP
            | 0x8809 // slow protocols (LACP)
            | 0x8847 | 0x8848 // MPLS
            | 0x8863 | 0x8864 // PPPoE
            | 0x888e // 802.1X
            | 0x88cc // LLDP
            | 0x88e5 // MACsec
            | 0x88e7 // 802.1ah
            | 0x88f7 // PTP
            | 0x8902 // CFM
            | 0x894f // NSH
            | 0x9000 // loopback test
    )
}

fn decode_ethertype<'a>(d: &mut Decoded<'a>, ethertype: u16, payload: &'a [u8], opts: &DecodeOptions) {
    let mut ethertype = ethertype;
    let mut rest = payload;
    while is_vlan_tag(ethertype) {
        if rest.len() < VLAN_TAG_LEN {
            d.events.insert(DecodeEvent::VlanHeaderTooSmall);
            return;
        }
        if d.vlan_depth >= MAX_VLAN_LAYERS {
            d.vlan_depth += 1;
            d.events.insert(DecodeEvent::VlanTooManyLayers);
            return;
        }
        d.vlan[d.vlan_depth as usize] = u16::from_be_bytes([rest[0], rest[1]]) & 0x0fff;
        d.vlan_depth += 1;
        ethertype = u16::from_be_bytes([rest[2], rest[3]]);
        rest = &rest[VLAN_TAG_LEN..];
    }
    match ethertype {
        ETHERTYPE_IPV4 => decode_ipv4(d, rest, opts),
        ETHERTYPE_IPV6 => decode_ipv6(d, rest, opts),
        // 802.3: the field is a length; what follows is LLC, not a protocol we decode.
        0..=1500 => d.events.insert(DecodeEvent::EthernetIeee8023Frame),
        other if is_known_non_ip_ethertype(other) => {}
        _ => {
            d.events.insert(DecodeEvent::EthernetUnknownEthertype);
            if d.vlan_depth > 0 {
                d.events.insert(DecodeEvent::VlanUnknownType);
            }
        }
    }
}

/// What the transport decoder needs from the IP layer.
struct IpContext {
    is_v6: bool,
    /// Transport length the IP header announces (may exceed the captured bytes).
    declared_len: usize,
    /// Pseudo-header address sum when checksums are to be verified (enabled, and the
    /// whole segment captured).
    checksum_addresses: Option<u64>,
    hop_limit: u8,
}

fn decode_ipv4<'a>(d: &mut Decoded<'a>, data: &'a [u8], opts: &DecodeOptions) {
    let ip = match Ipv4View::new(data) {
        Ok(ip) => ip,
        Err(event) => {
            d.events.insert(event);
            return;
        }
    };
    d.ip = Some(IpLayer::V4(ip));
    let header_len = ip.header_len();
    if header_len > ipv4::IPV4_MIN_HEADER_LEN {
        ipv4::validate_options(ip.options(), &mut d.events);
    }
    if opts.validate_checksums && !checksum::ipv4_header_ok(ip.header()) {
        d.bad_checksum = true;
    }
    let total_len = ip.total_len() as usize;
    if total_len < header_len {
        d.events.insert(DecodeEvent::Ipv4IplenSmallerThanHlen);
        return;
    }
    let truncated = ip.is_truncated();
    if truncated {
        d.events.insert(DecodeEvent::Ipv4TruncPkt);
    }
    let proto = ip.protocol();
    if ip.is_fragment() {
        d.fragment = true;
        d.l4 = L4::Other(proto);
        return;
    }
    let ctx = IpContext {
        is_v6: false,
        declared_len: total_len - header_len,
        checksum_addresses: (opts.validate_checksums && !truncated)
            .then(|| checksum::address_sum(&ip.src(), &ip.dst())),
        hop_limit: ip.ttl(),
    };
    decode_transport(d, proto, ip.payload(), &ctx);
}

fn decode_ipv6<'a>(d: &mut Decoded<'a>, data: &'a [u8], opts: &DecodeOptions) {
    let view = match Ipv6View::new(data) {
        Ok(view) => view,
        Err(event) => {
            d.events.insert(event);
            return;
        }
    };
    let truncated = view.is_truncated();
    if truncated {
        d.events.insert(DecodeEvent::Ipv6TruncPkt);
    }
    let info = ipv6::walk_extension_headers(view, &mut d.events);
    d.ip = Some(IpLayer::V6(info));
    if info.fragment.is_some() {
        d.fragment = true;
        d.l4 = L4::Other(info.upper_proto);
        return;
    }
    if info.incomplete {
        return;
    }
    let verify = opts.validate_checksums && !truncated && !info.routing_pending;
    let ctx = IpContext {
        is_v6: true,
        declared_len: (ipv6::IPV6_HEADER_LEN + view.payload_len() as usize).saturating_sub(info.upper_offset),
        checksum_addresses: verify.then(|| checksum::address_sum(view.src_bytes(), view.dst_bytes())),
        hop_limit: view.hop_limit(),
    };
    decode_transport(d, info.upper_proto, info.upper_payload(), &ctx);
}

fn decode_transport<'a>(d: &mut Decoded<'a>, proto: u8, segment: &'a [u8], ctx: &IpContext) {
    match proto {
        PROTO_TCP => {
            let tcp = match TcpView::new(segment) {
                Ok(tcp) => tcp,
                Err(event) => return d.events.insert(event),
            };
            if tcp.header_len() > tcp::TCP_MIN_HEADER_LEN {
                tcp::validate_options(&tcp, &mut d.events);
            }
            if let Some(addresses) = ctx.checksum_addresses {
                if !checksum::transport_ok(addresses, PROTO_TCP, segment) {
                    d.bad_checksum = true;
                }
            }
            d.payload = tcp.payload();
            d.l4 = L4::Tcp(tcp);
        }
        PROTO_UDP => {
            let udp = match UdpView::new(segment) {
                Ok(udp) => udp,
                Err(event) => return d.events.insert(event),
            };
            let udp_len = udp.length() as usize;
            let length_ok = if udp_len < udp::UDP_HEADER_LEN {
                d.events.insert(DecodeEvent::UdpHlenTooSmall);
                false
            } else if udp_len > ctx.declared_len {
                d.events.insert(DecodeEvent::UdpHlenInvalid);
                false
            } else {
                true
            };
            if let (Some(addresses), true) = (ctx.checksum_addresses, length_ok) {
                let present = udp.checksum() != 0;
                // Over IPv4 a zero checksum means "not computed"; IPv6 requires one.
                if (present || ctx.is_v6) && !checksum::transport_ok(addresses, PROTO_UDP, udp.datagram()) {
                    d.bad_checksum = true;
                }
            }
            d.payload = udp.payload();
            d.l4 = L4::Udp(udp);
        }
        PROTO_ICMP if ctx.is_v6 => {
            d.events.insert(DecodeEvent::Ipv6Icmpv4);
            d.l4 = L4::Other(proto);
        }
        PROTO_ICMPV6 if !ctx.is_v6 => {
            d.events.insert(DecodeEvent::Ipv4Icmpv6);
            d.l4 = L4::Other(proto);
        }
        PROTO_ICMP => {
            let icmp = match IcmpView::new_v4(segment) {
                Ok(icmp) => icmp,
                Err(event) => return d.events.insert(event),
            };
            icmp::check_icmpv4(&icmp, &mut d.events);
            if ctx.checksum_addresses.is_some() && !checksum::is_valid(checksum::accumulate(0, segment)) {
                d.bad_checksum = true;
            }
            d.payload = icmp.payload();
            d.l4 = L4::Icmpv4(icmp);
        }
        PROTO_ICMPV6 => {
            let icmp = match IcmpView::new_v6(segment) {
                Ok(icmp) => icmp,
                Err(event) => return d.events.insert(event),
            };
            icmp::check_icmpv6(&icmp, ctx.hop_limit, &mut d.events);
            if let Some(addresses) = ctx.checksum_addresses {
                if !checksum::transport_ok(addresses, PROTO_ICMPV6, segment) {
                    d.bad_checksum = true;
                }
            }
            d.payload = icmp.payload();
            d.l4 = L4::Icmpv6(icmp);
        }
        other => d.l4 = L4::Other(other),
    }
}

// ---------------------------------------------------------------------------------------
// Flow hash for the dispatcher.

/// A symmetric, deterministic hash of the flow a packet belongs to, computed with only
/// enough parsing to find VLAN ids, addresses, protocol and TCP/UDP ports (no checksum
/// or option validation). Both directions of a flow get the same value, and so does
/// every packet [`decode`] would give an equal or reversed [`FiveTuple`] — except that
/// ICMP is hashed without type/code (so echo request and reply meet on one worker) and
/// fragments without ports (so all fragments of a datagram meet). Packets without an IP
/// layer hash to 0.
pub fn flow_hash(link: LinkType, data: &[u8]) -> u32 {
    let Some((network, vlan)) = locate_network_layer(link, data) else {
        return 0;
    };
    let vlan_word = ((vlan[0] as u64) << 16) | vlan[1] as u64;
    match network {
        NetworkLayer::V4(ip) => hash_ipv4(ip, vlan_word),
        NetworkLayer::V6(ip) => hash_ipv6(ip, vlan_word),
    }
}

enum NetworkLayer<'a> {
    V4(&'a [u8]),
    V6(&'a [u8]),
}

fn locate_network_layer(link: LinkType, data: &[u8]) -> Option<(NetworkLayer<'_>, [u16; 2])> {
    let (ethertype, mut rest) = match link {
        LinkType::Ethernet => (read_u16(data, 12)?, data.get(ETHERNET_HEADER_LEN..)?),
        LinkType::LinuxSll => (read_u16(data, 14)?, data.get(SLL_HEADER_LEN..)?),
        LinkType::LinuxSll2 => (read_u16(data, 0)?, data.get(SLL2_HEADER_LEN..)?),
        LinkType::RawIp => {
            return match data.first()? >> 4 {
                4 => Some((NetworkLayer::V4(data), [0; 2])),
                6 => Some((NetworkLayer::V6(data), [0; 2])),
                _ => None,
            }
        }
        LinkType::RawIpv4 => return Some((NetworkLayer::V4(data), [0; 2])),
        LinkType::RawIpv6 => return Some((NetworkLayer::V6(data), [0; 2])),
        LinkType::Null | LinkType::Loop => {
            let header = data.get(..NULL_HEADER_LEN)?;
            let rest = &data[NULL_HEADER_LEN..];
            return match null_family(link, [header[0], header[1], header[2], header[3]])? {
                IpVersion::V4 => Some((NetworkLayer::V4(rest), [0; 2])),
                IpVersion::V6 => Some((NetworkLayer::V6(rest), [0; 2])),
            };
        }
        LinkType::Unsupported(_) => return None,
    };
    let mut ethertype = ethertype;
    let mut vlan = [0u16; 2];
    let mut depth = 0usize;
    while is_vlan_tag(ethertype) {
        if depth == vlan.len() {
            return None; // decode stops here too
        }
        vlan[depth] = read_u16(rest, 0)? & 0x0fff;
        ethertype = read_u16(rest, 2)?;
        rest = &rest[VLAN_TAG_LEN..];
        depth += 1;
    }
    match ethertype {
        ETHERTYPE_IPV4 => Some((NetworkLayer::V4(rest), vlan)),
        ETHERTYPE_IPV6 => Some((NetworkLayer::V6(rest), vlan)),
        _ => None,
    }
}

#[inline]
fn read_u16(data: &[u8], at: usize) -> Option<u16> {
    let bytes = data.get(at..at + 2)?;
    Some(u16::from_be_bytes([bytes[0], bytes[1]]))
}

/// Ports of a TCP/UDP header at the start of `l4`, or 0s.
#[inline]
fn ports(proto: u8, l4: &[u8]) -> (u16, u16) {
    match (proto, l4.get(..4)) {
        (PROTO_TCP | PROTO_UDP, Some(p)) => (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])),
        _ => (0, 0),
    }
}

fn hash_ipv4(ip: &[u8], vlan_word: u64) -> u32 {
    if ip.len() < ipv4::IPV4_MIN_HEADER_LEN {
        return 0;
    }
    let header_len = ((ip[0] & 0x0f) as usize) * 4;
    let proto = ip[9];
    let is_fragment = ip[6] & 0x3f != 0 || ip[7] != 0;
    let (src_port, dst_port) = match ip.get(header_len..) {
        Some(l4) if !is_fragment && header_len >= ipv4::IPV4_MIN_HEADER_LEN => ports(proto, l4),
        _ => (0, 0),
    };
    let src = ((u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]) as u64) << 16) | src_port as u64;
    let dst = ((u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]) as u64) << 16) | dst_port as u64;
    let (low, high) = if src <= dst { (src, dst) } else { (dst, src) };
    let mut h = mix(HASH_SEED, low);
    h = mix(h, high);
    h = mix(h, proto as u64 | (vlan_word << 8));
    finish(h)
}

fn hash_ipv6(ip: &[u8], vlan_word: u64) -> u32 {
    if ip.len() < ipv6::IPV6_HEADER_LEN {
        return 0;
    }
    let (proto, src_port, dst_port) = ipv6_upper_ports(ip);
    let mut src = [0u8; 16];
    src.copy_from_slice(&ip[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&ip[24..40]);
    let a = (u128::from_be_bytes(src), src_port);
    let b = (u128::from_be_bytes(dst), dst_port);
    let (low, high) = if a <= b { (a, b) } else { (b, a) };
    let mut h = HASH_SEED;
    for (addr, port) in [low, high] {
        h = mix(h, (addr >> 64) as u64);
        h = mix(h, addr as u64);
        h = mix(h, port as u64);
    }
    h = mix(h, proto as u64 | (vlan_word << 8));
    finish(h)
}

/// Upper protocol and ports after the usual extension headers, with the same rule as
/// `walk_extension_headers` for fragments (stop, no ports).
fn ipv6_upper_ports(ip: &[u8]) -> (u8, u16, u16) {
    let end = (ipv6::IPV6_HEADER_LEN + u16::from_be_bytes([ip[4], ip[5]]) as usize).min(ip.len());
    let body = &ip[ipv6::IPV6_HEADER_LEN..end];
    let mut next = ip[6];
    let mut pos = 0usize;
    loop {
        let Some(hdr) = body.get(pos..pos + 2) else {
            return (next, 0, 0);
        };
        let len = match next {
            ipv6::NH_HOP_BY_HOP | ipv6::NH_ROUTING | ipv6::NH_DEST_OPTS => (hdr[1] as usize + 1) * 8,
            ipv6::NH_AUTH => (hdr[1] as usize + 2) * 4,
            ipv6::NH_FRAGMENT => {
                let Some(frag) = body.get(pos..pos + 8) else {
                    return (next, 0, 0);
                };
                let offset_and_more = u16::from_be_bytes([frag[2], frag[3]]) & 0xfff9;
                if offset_and_more != 0 {
                    return (frag[0], 0, 0);
                }
                8
            }
            proto => {
                let (src_port, dst_port) = ports(proto, &body[pos..]);
                return (proto, src_port, dst_port);
            }
        };
        if pos + len > body.len() {
            return (next, 0, 0);
        }
        next = hdr[0];
        pos += len;
    }
}

const HASH_SEED: u64 = 0x243f_6a88_85a3_08d3;

#[inline]
fn mix(h: u64, word: u64) -> u64 {
    (h ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}

/// Murmur3's 64-bit finaliser, so that every input bit reaches the low bits a worker
/// index is taken from.
#[inline]
fn finish(mut h: u64) -> u32 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}
