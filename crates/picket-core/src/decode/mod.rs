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
//!   of 20), BSD Null (address family in either byte order: 2 = IPv4, 24/28/30 = IPv6),
//!   Loop (network order), PPP (optional 0xff03, compressed or full protocol field) and
//!   Cisco HDLC. Other link types raise `link.unsupported_type`.
//! - **Encapsulations in the same packet** (as Suricata: no tunnel): PPPoE sessions, MPLS
//!   label stacks (explicit-null labels, else a guess from the first nibble, or an Ethernet
//!   pseudowire after a zero control word), NSH (MD types 1 and 2).
//! - **Tunnels** (see [`tunnel`]): GRE v0 (IP, PPP, VLAN, bridged Ethernet, ERSPAN I/II/III)
//!   and v1 (PPTP/PPP), IPv4/IPv6 in IPv4/IPv6, and in UDP: Teredo, Geneve, VXLAN on the
//!   ports of [`DecodeOptions`] (Suricata's defaults: all enabled, 3544/6081/4789).
//!   [`decode`] returns the innermost packet that has an IP layer, with `tunnel` saying
//!   how it got there; when a tunnel's payload has no IP (VXLAN carrying ARP, a broken
//!   inner header), the outer packet is returned with the inner events. Nesting is limited
//!   by `DecodeOptions::max_layers` (`too_many_layers`). The outer packets are not
//!   returned separately: rules on the outer headers of a tunnel do not see them.
//! - **VLAN**: 0x8100, 0x88a8 and 0x9100 tags; up to three ids are kept, outermost
//!   first (as Suricata). A fourth tag raises `vlan.too_many_layers` and decoding stops.
//! - **Lengths**: the transport layer is bounded by the IP total/payload length, so
//!   Ethernet padding never reaches `payload`. A packet captured shorter than its IP
//!   length (snaplen) raises `ipv4.trunc_pkt` / `ipv6.trunc_pkt` and is still decoded
//!   as far as the captured bytes go; its transport checksum is not verified.
//! - **Fragments are not reassembled here** (see `crate::defrag`, which runs before). An IPv4 fragment (MF set or offset != 0) or an
//!   IPv6 packet with a Fragment header that really fragments sets `fragment`, leaves
//!   `l4 = L4::Other(proto)` and `payload` empty, and its tuple has ports 0. For IPv6 the
//!   extension-header walk stops at the Fragment header, so every fragment of a datagram
//!   reports the same protocol.
//! - **Checksums** (only with `DecodeOptions::validate_checksums`): IPv4 header, TCP, UDP
//!   (0 over IPv4 means "none"; 0 over IPv6 is wrong), ICMPv4, ICMPv6. A wrong one sets
//!   `bad_checksum`; it is not a decoder event (Suricata has none either).
//! - **FiveTuple**: addresses as 16 bytes, IPv4 v4-mapped (`::ffff:a.b.c.d`). For ICMP the
//!   ports carry the type (`src_port`) and code (`dst_port`), as Suricata's eve.json does.
//! - [`flow_hash`] parses just enough to find addresses and ports, for the dispatcher;
//!   possible encapsulations go through [`decode`] so that inner flows hash on their own
//!   tuple.

pub mod checksum;
pub mod events;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod tunnel;
pub mod udp;

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tunnel_tests;

use crate::bytes;
use crate::packet::LinkType;

pub use events::{DecodeEvent, EventSet};
pub use icmp::IcmpView;
pub use ipv4::{Ipv4Option, Ipv4Options, Ipv4View};
pub use ipv6::{Ipv6Fragment, Ipv6Info, Ipv6View};
pub use tcp::{TcpOption, TcpOptions, TcpView};
pub use tunnel::{PortList, TunnelInfo, TunnelKind};
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
pub const PROTO_SCTP: u8 = 132;

/// ICMP or ICMPv6: type and code stand where other protocols have ports.
#[inline]
pub fn is_icmp(proto: u8) -> bool {
    proto == PROTO_ICMP || proto == PROTO_ICMPV6
}

const ETHERNET_HEADER_LEN: usize = 14;
const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;
const VLAN_TAG_LEN: usize = 4;
const MAX_VLAN_LAYERS: u8 = 3;

/// VLAN ids of a packet, outermost first (0: no tag at that layer).
pub type VlanIds = [u16; MAX_VLAN_LAYERS as usize];

/// Suricata's `decoder.vxlan.ports` default.
pub const VXLAN_DEFAULT_PORT: u16 = 4789;
/// Suricata's `decoder.geneve.ports` default.
pub const GENEVE_DEFAULT_PORT: u16 = 6081;
/// Suricata's `decoder.teredo.ports` default.
pub const TEREDO_DEFAULT_PORT: u16 = 3544;
/// Suricata's `decoder.max-layers` default.
pub const DEFAULT_MAX_LAYERS: u8 = 16;

/// Decoder settings. Build with `DecodeOptions { validate_checksums: x, ..DecodeOptions::default() }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Verify IPv4 header and transport checksums (sets `Decoded::bad_checksum`).
    pub validate_checksums: bool,
    /// UDP destination ports decoded as VXLAN (`decoder.vxlan`: enabled, 4789 by
    /// default in Suricata); empty disables VXLAN.
    pub vxlan_ports: PortList,
    /// UDP destination ports decoded as Geneve (`decoder.geneve`: enabled, 6081).
    pub geneve_ports: PortList,
    /// UDP ports (source or destination) tried as Teredo (`decoder.teredo`: enabled, 3544).
    pub teredo_ports: PortList,
    /// Most encapsulation layers (IP headers, GRE, PPP, MPLS stacks, ...) decoded in one
    /// packet before `too_many_layers` stops the walk (Suricata's `decoder.max-layers`).
    pub max_layers: u8,
    /// VLAN ids are part of the flow (`vlan.use-for-tracking`, default yes): off, the
    /// dispatch hash ignores them, so both sides of a flow tagged on one side only meet.
    pub track_vlan: bool,
}

impl DecodeOptions {
    /// The defaults as a constant, for callers that cannot allocate or hold options.
    pub const DEFAULT: DecodeOptions = DecodeOptions {
        validate_checksums: true,
        vxlan_ports: PortList::one(VXLAN_DEFAULT_PORT),
        geneve_ports: PortList::one(GENEVE_DEFAULT_PORT),
        teredo_ports: PortList::one(TEREDO_DEFAULT_PORT),
        max_layers: DEFAULT_MAX_LAYERS,
        track_vlan: true,
    };
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions::DEFAULT
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

/// Everything [`decode`] learned about one packet. For a tunnelled packet, `ip`, `l4`,
/// `payload`, `fragment`, `bad_checksum` and `tuple()` describe the innermost packet
/// that could be decoded, and `tunnel` the way there.
#[derive(Clone, Copy, Debug)]
pub struct Decoded<'a> {
    /// VLAN ids, outermost first; only the first `min(vlan_depth, 3)` are set. Tags of
    /// every layer count: outer Ethernet, ERSPAN headers, tunnelled Ethernet frames.
    pub vlan: VlanIds,
    /// Number of VLAN tags seen (4 means "too many", decoding stopped).
    pub vlan_depth: u8,
    pub ip: Option<IpLayer<'a>>,
    pub l4: L4<'a>,
    /// Transport payload (TCP/UDP/ICMP data); empty if none.
    pub payload: &'a [u8],
    /// Anomalies of every layer, outer and inner.
    pub events: EventSet,
    /// A checksum of the innermost packet is wrong.
    pub bad_checksum: bool,
    pub fragment: bool,
    /// Set when the packet above was found inside a tunnel.
    pub tunnel: Option<TunnelInfo>,
    /// Source and destination ports of a protocol decoded as [`L4::Other`] that has them
    /// (SCTP: its flows are keyed and logged with ports, as Suricata's are).
    pub other_ports: Option<(u16, u16)>,
}

/// A flow's endpoints: the one identity type shared by decode, flow tracking (inside
/// [`crate::flow::FlowPacket`] and, canonically oriented, [`crate::flow::FlowKey`]),
/// detection and output. Addresses are 16 bytes, IPv4 as v4-mapped IPv6. For ICMP,
/// `src_port` is the type and `dst_port` the code (as in Suricata's eve.json); other
/// protocols without ports, and fragments, have both 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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
        ip_addr(&self.src, self.is_v4)
    }
    pub fn dst_ip(&self) -> std::net::IpAddr {
        ip_addr(&self.dst, self.is_v4)
    }
    /// The same flow seen from the other side.
    #[inline]
    pub fn reversed(&self) -> FiveTuple {
        FiveTuple { src: self.dst, dst: self.src, src_port: self.dst_port, dst_port: self.src_port, ..*self }
    }
    /// The tuple oriented with the lower (address, port) endpoint as `src`, so that both
    /// directions of a conversation give the same value, and whether `self` already was
    /// (its source is the lower endpoint).
    #[inline]
    pub fn canonical(&self) -> (FiveTuple, bool) {
        let src_is_lo = (self.src, self.src_port) <= (self.dst, self.dst_port);
        (if src_is_lo { *self } else { self.reversed() }, src_is_lo)
    }
}

/// An address stored as 16 bytes (IPv4 v4-mapped) back to `IpAddr`.
#[inline]
pub fn ip_addr(bytes: &[u8; 16], is_v4: bool) -> std::net::IpAddr {
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
            vlan: [0; 3],
            vlan_depth: 0,
            ip: None,
            l4: L4::None,
            payload: &[],
            events: EventSet::new(),
            bad_checksum: false,
            fragment: false,
            tunnel: None,
            other_ports: None,
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
            L4::Other(PROTO_SCTP) if !self.fragment => self.other_ports.unwrap_or((0, 0)),
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

    /// Tunnel depth of the packet (Suricata's recursion level): 0 when not tunnelled.
    pub fn tunnel_depth(&self) -> u8 {
        self.tunnel.map_or(0, |t| t.depth)
    }
}

/// State of one walk through a packet's layers.
struct Walk<'a, 'o> {
    /// The captured bytes, to express where inner packets start.
    root: &'a [u8],
    opts: &'o DecodeOptions,
    layers: u8,
}

impl<'a> Walk<'a, '_> {
    /// Counts one more layer; false (with `too_many_layers`) when over the limit.
    fn enter_layer(&mut self, d: &mut Decoded<'a>) -> bool {
        if self.layers >= self.opts.max_layers {
            d.events.insert(DecodeEvent::TooManyLayers);
            return false;
        }
        self.layers += 1;
        true
    }

    fn offset_of(&self, inner: &[u8]) -> u32 {
        (inner.as_ptr() as usize).saturating_sub(self.root.as_ptr() as usize) as u32
    }
}

/// Decodes one captured packet. Never panics; anomalies land in `events`.
pub fn decode<'a>(link: LinkType, data: &'a [u8], opts: &DecodeOptions) -> Decoded<'a> {
    let mut d = Decoded::empty();
    let w = &mut Walk { root: data, opts, layers: 0 };
    match link {
        LinkType::Ethernet => decode_ethernet(w, &mut d, data),
        LinkType::LinuxSll => {
            if data.len() < SLL_HEADER_LEN {
                d.events.insert(DecodeEvent::SllPktTooSmall);
            } else {
                let protocol = u16::from_be_bytes([data[14], data[15]]);
                decode_ethertype(w, &mut d, protocol, &data[SLL_HEADER_LEN..]);
            }
        }
        LinkType::LinuxSll2 => {
            if data.len() < SLL2_HEADER_LEN {
                d.events.insert(DecodeEvent::SllPktTooSmall);
            } else {
                let protocol = u16::from_be_bytes([data[0], data[1]]);
                decode_ethertype(w, &mut d, protocol, &data[SLL2_HEADER_LEN..]);
            }
        }
        LinkType::RawIp => match data.first().map(|b| b >> 4) {
            Some(4) => decode_ipv4(w, &mut d, data),
            Some(6) => decode_ipv6(w, &mut d, data),
            _ => d.events.insert(DecodeEvent::IprawInvalidIpVersion),
        },
        LinkType::RawIpv4 => decode_ipv4(w, &mut d, data),
        LinkType::RawIpv6 => decode_ipv6(w, &mut d, data),
        LinkType::Null | LinkType::Loop => {
            if data.len() < NULL_HEADER_LEN {
                d.events.insert(DecodeEvent::LtnullPktTooSmall);
            } else {
                let rest = &data[NULL_HEADER_LEN..];
                match null_family(link, data) {
                    Some(IpVersion::V4) => decode_ipv4(w, &mut d, rest),
                    Some(IpVersion::V6) => decode_ipv6(w, &mut d, rest),
                    None => d.events.insert(DecodeEvent::LtnullUnsupportedType),
                }
            }
        }
        LinkType::Ppp => decode_ppp(w, &mut d, data),
        LinkType::CiscoHdlc => match tunnel::parse_chdlc(data) {
            Ok((ethertype, rest)) => decode_ethertype(w, &mut d, ethertype, rest),
            Err(event) => d.events.insert(event),
        },
        LinkType::Unsupported(_) => d.events.insert(DecodeEvent::LinkUnsupportedType),
    }
    d
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IpVersion {
    V4,
    V6,
}

/// The IP version a BSD Null or Loop header (the first 4 bytes of `frame`) announces;
/// `None` for another family or a shorter frame. Null carries the address family in the
/// capturing host's byte order, which the reader cannot know, so both orders are tried;
/// Loop is always network order.
pub(crate) fn null_family(link: LinkType, frame: &[u8]) -> Option<IpVersion> {
    let family = |value: u32| match value {
        2 => Some(IpVersion::V4),
        // AF_INET6 on BSD (24), FreeBSD/DragonFly (28), macOS (30).
        24 | 28 | 30 => Some(IpVersion::V6),
        _ => None,
    };
    let big = family(bytes::be_u32(frame, 0)?);
    if link == LinkType::Loop {
        return big;
    }
    family(bytes::le_u32(frame, 0)?).or(big)
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
            | 0x8863 // PPPoE discovery
            | 0x888e // 802.1X
            | 0x88cc // LLDP
            | 0x88e5 // MACsec
            | 0x88e7 // 802.1ah
            | 0x88f7 // PTP
            | 0x8902 // CFM
            | 0x9000 // loopback test
    )
}

fn decode_ethernet<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, frame: &'a [u8]) {
    if frame.len() < ETHERNET_HEADER_LEN {
        d.events.insert(DecodeEvent::EthernetPktTooSmall);
        return;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    decode_ethertype(w, d, ethertype, &frame[ETHERNET_HEADER_LEN..]);
}

/// VLAN tags, then the network layer an EtherType names (Suricata's DecodeNetworkLayer).
fn decode_ethertype<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, ethertype: u16, payload: &'a [u8]) {
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
        ETHERTYPE_IPV4 => decode_ipv4(w, d, rest),
        ETHERTYPE_IPV6 => decode_ipv6(w, d, rest),
        tunnel::ETHERTYPE_MPLS_UNICAST | tunnel::ETHERTYPE_MPLS_MULTICAST => decode_mpls(w, d, rest),
        tunnel::ETHERTYPE_PPPOE_SESSION => decode_pppoe_session(w, d, rest),
        tunnel::ETHERTYPE_NSH => decode_nsh(w, d, rest),
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

// ---------------------------------------------------------------------------------------
// Encapsulations decoded within the same packet (no tunnel): PPP, PPPoE, MPLS, NSH.

fn decode_ppp<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_ppp_header(data) {
        Some((protocol, header_len)) => decode_ppp_payload(w, d, protocol, &data[header_len..]),
        None => d.events.insert(DecodeEvent::PppPktTooSmall),
    }
}

fn decode_ppp_payload<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, protocol: u16, payload: &'a [u8]) {
    match protocol {
        tunnel::PPP_IPV4 if payload.len() < ipv4::IPV4_MIN_HEADER_LEN => {
            d.events.insert(DecodeEvent::PppIp4PktTooSmall)
        }
        tunnel::PPP_IPV4 => decode_ipv4(w, d, payload),
        tunnel::PPP_IPV6 if payload.len() < ipv6::IPV6_HEADER_LEN => d.events.insert(DecodeEvent::PppIp6PktTooSmall),
        tunnel::PPP_IPV6 => decode_ipv6(w, d, payload),
        tunnel::PPP_VJ_UNCOMPRESSED if payload.len() < ipv4::IPV4_MIN_HEADER_LEN => {
            d.events.insert(DecodeEvent::PppVjuPktTooSmall)
        }
        tunnel::PPP_VJ_UNCOMPRESSED => {
            if payload[0] >> 4 == 4 {
                decode_ipv4(w, d, payload);
            }
        }
        p if tunnel::is_known_non_ip_ppp_protocol(p) => d.events.insert(DecodeEvent::PppUnsupProto),
        _ => d.events.insert(DecodeEvent::PppWrongType),
    }
}

fn decode_pppoe_session<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_pppoe_session(data) {
        Ok((protocol, payload)) => decode_ppp_payload(w, d, protocol, payload),
        Err(event) => d.events.insert(event),
    }
}

fn decode_mpls<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_mpls(data) {
        Ok(tunnel::MplsPayload::Ipv4(ip)) => decode_ipv4(w, d, ip),
        Ok(tunnel::MplsPayload::Ipv6(ip)) => decode_ipv6(w, d, ip),
        Ok(tunnel::MplsPayload::Ethernet(frame)) => decode_ethernet(w, d, frame),
        Err(event) => d.events.insert(event),
    }
}

fn decode_nsh<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_nsh(data) {
        Ok((tunnel::NshNext::Ipv4, rest)) => decode_ipv4(w, d, rest),
        Ok((tunnel::NshNext::Ipv6, rest)) => decode_ipv6(w, d, rest),
        Ok((tunnel::NshNext::Ethernet, rest)) => decode_ethernet(w, d, rest),
        Ok((tunnel::NshNext::Mpls, rest)) => decode_mpls(w, d, rest),
        Err(event) => d.events.insert(event),
    }
}

// ---------------------------------------------------------------------------------------
// Tunnels: the payload is a packet of its own.

/// Decodes a tunnel's payload as a packet of its own and, when it has an IP layer,
/// makes it the packet `d` describes (events of both kept, VLANs inherited as Suricata
/// does for tunnel packets). Otherwise `d` stays the outer packet and only gains the
/// inner events. `start` is where the tunnel packet begins (for `inner_offset`).
fn enter_tunnel<'a, 'o, F>(
    w: &mut Walk<'a, 'o>,
    d: &mut Decoded<'a>,
    kind: TunnelKind,
    start: &'a [u8],
    decode_inner: F,
) -> bool
where
    F: FnOnce(&mut Walk<'a, 'o>, &mut Decoded<'a>),
{
    let Some(outer) = d.tuple() else {
        return false;
    };
    let outer_vlan = d.vlan;
    let mut inner = Decoded::empty();
    inner.vlan = d.vlan;
    inner.vlan_depth = d.vlan_depth;
    decode_inner(w, &mut inner);
    if inner.ip.is_none() {
        d.events.union(inner.events);
        return false;
    }
    let (depth, inner_offset, innermost_kind) = match inner.tunnel {
        Some(t) => (t.depth.saturating_add(1), t.inner_offset, t.innermost_kind),
        None => (1, w.offset_of(start), kind),
    };
    inner.events.union(d.events);
    inner.tunnel = Some(TunnelInfo { kind, innermost_kind, outer, outer_vlan, depth, inner_offset });
    *d = inner;
    true
}

fn decode_gre<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    let gre = match tunnel::parse_gre(data) {
        Ok(gre) => gre,
        Err(event) => return d.events.insert(event),
    };
    let payload = &data[gre.header_len..];
    let kind = if gre.version == 1 { TunnelKind::Pptp } else { TunnelKind::Gre };
    match gre.protocol {
        ETHERTYPE_IPV4 => enter_tunnel(w, d, kind, payload, |w, inner| decode_ipv4(w, inner, payload)),
        ETHERTYPE_IPV6 => enter_tunnel(w, d, kind, payload, |w, inner| decode_ipv6(w, inner, payload)),
        tunnel::GRE_PROTO_PPP => enter_tunnel(w, d, kind, payload, |w, inner| decode_ppp(w, inner, payload)),
        ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
            let tag = gre.protocol;
            enter_tunnel(w, d, kind, payload, |w, inner| decode_ethertype(w, inner, tag, payload))
        }
        tunnel::ETHERTYPE_TEB => enter_tunnel(w, d, kind, payload, |w, inner| decode_ethernet(w, inner, payload)),
        // Type I has no header and no GRE sequence number; type II has both.
        tunnel::ETHERTYPE_ERSPAN_I_II if !gre.has_sequence => {
            enter_tunnel(w, d, TunnelKind::ErspanI, payload, |w, inner| decode_ethernet(w, inner, payload))
        }
        tunnel::ETHERTYPE_ERSPAN_I_II => {
            enter_tunnel(w, d, TunnelKind::ErspanII, payload, |w, inner| decode_erspan_ii(w, inner, payload))
        }
        tunnel::ETHERTYPE_ERSPAN_III => {
            enter_tunnel(w, d, TunnelKind::ErspanIII, payload, |w, inner| decode_erspan_iii(w, inner, payload))
        }
        _ => false,
    };
}

/// The ERSPAN session's VLAN counts as a tag of the mirrored frame (as in Suricata).
fn push_erspan_vlan(d: &mut Decoded<'_>, vlan: u16) -> bool {
    if vlan == 0 {
        return true;
    }
    if d.vlan_depth >= MAX_VLAN_LAYERS {
        d.events.insert(DecodeEvent::ErspanTooManyVlanLayers);
        return false;
    }
    d.vlan[d.vlan_depth as usize] = vlan;
    d.vlan_depth += 1;
    true
}

fn decode_erspan_ii<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_erspan_ii(data) {
        Ok((vlan, frame)) => {
            if push_erspan_vlan(d, vlan) {
                decode_ethernet(w, d, frame);
            }
        }
        Err(event) => d.events.insert(event),
    }
}

fn decode_erspan_iii<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    match tunnel::parse_erspan_iii(data) {
        Ok((vlan, kind, frame)) => {
            if !push_erspan_vlan(d, vlan) {
                return;
            }
            match (kind, frame.first().map(|b| b >> 4)) {
                (tunnel::ErspanFrame::Ethernet, _) => decode_ethernet(w, d, frame),
                (tunnel::ErspanFrame::Ip, Some(6)) => decode_ipv6(w, d, frame),
                (tunnel::ErspanFrame::Ip, _) => decode_ipv4(w, d, frame),
            }
        }
        Err(event) => d.events.insert(event),
    }
}

/// Protocols 4 and 41 in IPv4 or IPv6. Suricata checks the inner header's size and
/// version before making a tunnel packet only when the outer packet is IPv6.
fn decode_ip_in_ip<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, proto: u8, outer_is_v6: bool, payload: &'a [u8]) {
    let inner_v6 = proto == tunnel::PROTO_IPV6_IN_IP;
    if outer_is_v6 {
        let (min_len, version) = if inner_v6 { (ipv6::IPV6_HEADER_LEN, 6) } else { (ipv4::IPV4_MIN_HEADER_LEN, 4) };
        if payload.len() < min_len {
            let event = if inner_v6 { DecodeEvent::Ipv6InIpv6TooSmall } else { DecodeEvent::Ipv4InIpv6TooSmall };
            return d.events.insert(event);
        }
        if payload[0] >> 4 != version {
            let event =
                if inner_v6 { DecodeEvent::Ipv6InIpv6WrongVersion } else { DecodeEvent::Ipv4InIpv6WrongVersion };
            return d.events.insert(event);
        }
    }
    if inner_v6 {
        enter_tunnel(w, d, TunnelKind::IpInIp, payload, |w, inner| decode_ipv6(w, inner, payload));
    } else {
        enter_tunnel(w, d, TunnelKind::IpInIp, payload, |w, inner| decode_ipv4(w, inner, payload));
    }
}

/// Teredo (either port), Geneve and VXLAN (destination port), in Suricata's order.
fn decode_udp_tunnels<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, src_port: u16, dst_port: u16, payload: &'a [u8]) {
    let opts = *w.opts;
    if opts.teredo_ports.contains(src_port) || opts.teredo_ports.contains(dst_port) {
        if let Some(ip6) = tunnel::parse_teredo(payload) {
            if enter_tunnel(w, d, TunnelKind::Teredo, ip6, |w, inner| decode_ipv6(w, inner, ip6)) {
                return;
            }
        }
    }
    if opts.geneve_ports.contains(dst_port) {
        if let Some((protocol, inner_bytes)) = tunnel::parse_geneve(payload) {
            match protocol {
                tunnel::ETHERTYPE_TEB => {
                    enter_tunnel(w, d, TunnelKind::Geneve, inner_bytes, |w, inner| {
                        decode_ethernet(w, inner, inner_bytes)
                    });
                }
                ETHERTYPE_IPV4 => {
                    enter_tunnel(w, d, TunnelKind::Geneve, inner_bytes, |w, inner| decode_ipv4(w, inner, inner_bytes));
                }
                ETHERTYPE_IPV6 => {
                    enter_tunnel(w, d, TunnelKind::Geneve, inner_bytes, |w, inner| decode_ipv6(w, inner, inner_bytes));
                }
                tunnel::ETHERTYPE_ARP => {}
                _ => d.events.insert(DecodeEvent::GeneveUnknownPayloadType),
            }
            return;
        }
    }
    if opts.vxlan_ports.contains(dst_port) {
        if let Some(frame) = tunnel::parse_vxlan(payload) {
            // The tunnel packet starts after the inner Ethernet header, as in Suricata.
            let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
            let after_ethernet = &frame[ETHERNET_HEADER_LEN..];
            match ethertype {
                ETHERTYPE_IPV4 | ETHERTYPE_IPV6 | ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
                    enter_tunnel(w, d, TunnelKind::Vxlan, after_ethernet, |w, inner| {
                        decode_ethertype(w, inner, ethertype, after_ethernet)
                    });
                }
                tunnel::ETHERTYPE_ARP => {}
                _ => d.events.insert(DecodeEvent::VxlanUnknownPayloadType),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// IP and transport.

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

fn decode_ipv4<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    let opts = *w.opts;
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
    match proto {
        tunnel::PROTO_GRE => {
            d.l4 = L4::Other(proto);
            decode_gre(w, d, ip.payload());
        }
        tunnel::PROTO_IPIP | tunnel::PROTO_IPV6_IN_IP => {
            d.l4 = L4::Other(proto);
            decode_ip_in_ip(w, d, proto, false, ip.payload());
        }
        _ => {
            let ctx = IpContext {
                is_v6: false,
                declared_len: total_len - header_len,
                checksum_addresses: (opts.validate_checksums && !truncated)
                    .then(|| checksum::address_sum(&ip.src(), &ip.dst())),
                hop_limit: ip.ttl(),
            };
            decode_transport(w, d, proto, ip.payload(), &ctx);
        }
    }
}

fn decode_ipv6<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, data: &'a [u8]) {
    if !w.enter_layer(d) {
        return;
    }
    let opts = *w.opts;
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
    match info.upper_proto {
        tunnel::PROTO_GRE => {
            d.l4 = L4::Other(info.upper_proto);
            decode_gre(w, d, info.upper_payload());
        }
        proto @ (tunnel::PROTO_IPIP | tunnel::PROTO_IPV6_IN_IP) => {
            d.l4 = L4::Other(proto);
            decode_ip_in_ip(w, d, proto, true, info.upper_payload());
        }
        proto => {
            let verify = opts.validate_checksums && !truncated && !info.routing_pending;
            let ctx = IpContext {
                is_v6: true,
                declared_len: (ipv6::IPV6_HEADER_LEN + view.payload_len() as usize).saturating_sub(info.upper_offset),
                checksum_addresses: verify.then(|| checksum::address_sum(view.src_bytes(), view.dst_bytes())),
                hop_limit: view.hop_limit(),
            };
            decode_transport(w, d, proto, info.upper_payload(), &ctx);
        }
    }
}

fn decode_transport<'a>(w: &mut Walk<'a, '_>, d: &mut Decoded<'a>, proto: u8, segment: &'a [u8], ctx: &IpContext) {
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
            if length_ok {
                decode_udp_tunnels(w, d, udp.src_port(), udp.dst_port(), udp.payload());
            }
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
        PROTO_SCTP => {
            // The common header's ports only (chunks are not decoded).
            d.l4 = L4::Other(proto);
            d.other_ports =
                segment.get(..4).map(|h| (u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]])));
        }
        other => d.l4 = L4::Other(other),
    }
}

// ---------------------------------------------------------------------------------------
// Flow hash for the dispatcher.

/// A symmetric, deterministic hash of the flow a packet belongs to, computed with only
/// enough parsing to find VLAN ids, addresses, protocol and TCP/UDP ports (no checksum
/// or option validation). Both directions of a flow get the same value, and so does
/// every packet [`decode`] would give an equal or reversed [`FiveTuple`] and VLANs —
/// except that ICMP is hashed without type/code (so echo request and reply meet on one
/// worker) and fragments without ports (so all fragments of a datagram meet). Tunnelled
/// packets hash on their OUTERMOST tuple, as Suricata's autofp dispatches a tunnel packet
/// and its inner packets to the thread of the outer flow: the outer flow (which has a
/// flow record of its own) and every inner flow of one tunnel live on one worker. An
/// IP-in-IP or GRE tunnel is thus one worker's load. UDP tunnels (VXLAN, Geneve, Teredo)
/// hash on the outer addresses without ports: the two directions are two outer flows with
/// different source ports, and both must meet the inner flows they carry, so all the
/// traffic between two tunnel endpoints is one worker's load too. Encapsulations
/// the plain parse cannot see through (MPLS, PPP, PPPoE, NSH) are left to [`decode`]. Packets without an IP layer hash to 0. Uses the default
/// tunnel ports; see [`flow_hash_with`].
pub fn flow_hash(link: LinkType, data: &[u8]) -> u32 {
    flow_hash_with(link, data, &DecodeOptions::DEFAULT)
}

/// [`flow_hash`] with the tunnel ports and layer limit of `opts` (which must be the
/// options the workers decode with).
pub fn flow_hash_with(link: LinkType, data: &[u8], opts: &DecodeOptions) -> u32 {
    match locate_network_layer(link, data) {
        Located::Ip(network, vlan) => {
            let vlan_word = tracked_vlan_word(vlan, opts);
            match network {
                NetworkLayer::V4(ip) => hash_ipv4(ip, vlan_word, opts),
                NetworkLayer::V6(ip) => hash_ipv6(ip, vlan_word, opts),
            }
        }
        Located::NeedsDecode => hash_by_decoding(link, data, opts),
        Located::NoIp => 0,
    }
}

enum NetworkLayer<'a> {
    V4(&'a [u8]),
    V6(&'a [u8]),
}

enum Located<'a> {
    Ip(NetworkLayer<'a>, VlanIds),
    /// An encapsulation the plain parse leaves to `decode`.
    NeedsDecode,
    NoIp,
}

/// [`vlan_word`], or 0 when VLANs are not part of the flow.
#[inline]
fn tracked_vlan_word(vlan: VlanIds, opts: &DecodeOptions) -> u64 {
    if opts.track_vlan {
        vlan_word(vlan)
    } else {
        0
    }
}

#[inline]
fn vlan_word(vlan: VlanIds) -> u64 {
    ((vlan[0] as u64) << 32) | ((vlan[1] as u64) << 16) | vlan[2] as u64
}

fn locate_network_layer(link: LinkType, data: &[u8]) -> Located<'_> {
    let header = match link {
        LinkType::Ethernet => bytes::be_u16(data, 12).zip(data.get(ETHERNET_HEADER_LEN..)),
        LinkType::LinuxSll => bytes::be_u16(data, 14).zip(data.get(SLL_HEADER_LEN..)),
        LinkType::LinuxSll2 => bytes::be_u16(data, 0).zip(data.get(SLL2_HEADER_LEN..)),
        LinkType::RawIp => {
            return match data.first().map(|b| b >> 4) {
                Some(4) => Located::Ip(NetworkLayer::V4(data), [0; 3]),
                Some(6) => Located::Ip(NetworkLayer::V6(data), [0; 3]),
                _ => Located::NoIp,
            }
        }
        LinkType::RawIpv4 => return Located::Ip(NetworkLayer::V4(data), [0; 3]),
        LinkType::RawIpv6 => return Located::Ip(NetworkLayer::V6(data), [0; 3]),
        LinkType::Null | LinkType::Loop => {
            let Some(rest) = data.get(NULL_HEADER_LEN..) else {
                return Located::NoIp;
            };
            return match null_family(link, data) {
                Some(IpVersion::V4) => Located::Ip(NetworkLayer::V4(rest), [0; 3]),
                Some(IpVersion::V6) => Located::Ip(NetworkLayer::V6(rest), [0; 3]),
                None => Located::NoIp,
            };
        }
        LinkType::Ppp | LinkType::CiscoHdlc => return Located::NeedsDecode,
        LinkType::Unsupported(_) => return Located::NoIp,
    };
    let Some((mut ethertype, mut rest)) = header else {
        return Located::NoIp;
    };
    let mut vlan: VlanIds = [0; 3];
    let mut depth = 0usize;
    while is_vlan_tag(ethertype) {
        if depth == vlan.len() {
            return Located::NoIp; // decode stops here too
        }
        let (Some(tag), Some(next)) = (bytes::be_u16(rest, 0), bytes::be_u16(rest, 2)) else {
            return Located::NoIp;
        };
        vlan[depth] = tag & 0x0fff;
        ethertype = next;
        rest = &rest[VLAN_TAG_LEN..];
        depth += 1;
    }
    match ethertype {
        ETHERTYPE_IPV4 => Located::Ip(NetworkLayer::V4(rest), vlan),
        ETHERTYPE_IPV6 => Located::Ip(NetworkLayer::V6(rest), vlan),
        tunnel::ETHERTYPE_MPLS_UNICAST
        | tunnel::ETHERTYPE_MPLS_MULTICAST
        | tunnel::ETHERTYPE_PPPOE_SESSION
        | tunnel::ETHERTYPE_NSH => Located::NeedsDecode,
        _ => Located::NoIp,
    }
}

/// Ports of a TCP/UDP header at the start of `l4`, or 0s.
#[inline]
fn ports(proto: u8, l4: &[u8]) -> (u16, u16) {
    match (proto, bytes::be_u32(l4, 0)) {
        (PROTO_TCP | PROTO_UDP, Some(p)) => ((p >> 16) as u16, p as u16),
        _ => (0, 0),
    }
}

/// True for UDP with a tunnel port (VXLAN, Geneve, Teredo) at either end. Such packets
/// hash without their ports: the two directions of a UDP tunnel are two outer flows
/// (each VTEP picks its own source port, from the inner flow), and both must be on the
/// worker of the inner flows they carry. Either end, so both directions agree.
#[inline]
fn udp_tunnel_ports(proto: u8, src_port: u16, dst_port: u16, opts: &DecodeOptions) -> bool {
    proto == PROTO_UDP
        && [src_port, dst_port]
            .into_iter()
            .any(|p| opts.vxlan_ports.contains(p) || opts.geneve_ports.contains(p) || opts.teredo_ports.contains(p))
}

/// Ports a packet is hashed with: none for a UDP tunnel (see [`udp_tunnel_ports`]).
#[inline]
fn hash_ports(proto: u8, ports: (u16, u16), opts: &DecodeOptions) -> (u16, u16) {
    if udp_tunnel_ports(proto, ports.0, ports.1, opts) {
        (0, 0)
    } else {
        ports
    }
}

/// The hash of the packet's own (outermost) IPv4 tuple, tunnel or not.
fn hash_ipv4(ip: &[u8], vlan_word: u64, opts: &DecodeOptions) -> u32 {
    if ip.len() < ipv4::IPV4_MIN_HEADER_LEN {
        return 0;
    }
    let header_len = ((ip[0] & 0x0f) as usize) * 4;
    let proto = ip[9];
    let is_fragment = ip[6] & 0x3f != 0 || ip[7] != 0;
    let (src_port, dst_port) = match ip.get(header_len..) {
        Some(l4) if !is_fragment && header_len >= ipv4::IPV4_MIN_HEADER_LEN => {
            hash_ports(proto, ports(proto, l4), opts)
        }
        _ => (0, 0),
    };
    let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
    let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
    hash_v4_key(src, dst, src_port, dst_port, proto, vlan_word)
}

fn hash_v4_key(src: u32, dst: u32, src_port: u16, dst_port: u16, proto: u8, vlan_word: u64) -> u32 {
    let src = ((src as u64) << 16) | src_port as u64;
    let dst = ((dst as u64) << 16) | dst_port as u64;
    let (low, high) = if src <= dst { (src, dst) } else { (dst, src) };
    let mut h = mix(HASH_SEED, low);
    h = mix(h, high);
    h = mix(h, proto as u64 | (vlan_word << 8));
    finish(h)
}

/// The hash of the packet's own (outermost) IPv6 tuple, tunnel or not.
fn hash_ipv6(ip: &[u8], vlan_word: u64, opts: &DecodeOptions) -> u32 {
    if ip.len() < ipv6::IPV6_HEADER_LEN {
        return 0;
    }
    let (proto, src_port, dst_port, _) = ipv6_upper_ports(ip);
    let (src_port, dst_port) = hash_ports(proto, (src_port, dst_port), opts);
    let mut src = [0u8; 16];
    src.copy_from_slice(&ip[8..24]);
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&ip[24..40]);
    hash_v6_key(u128::from_be_bytes(src), u128::from_be_bytes(dst), src_port, dst_port, proto, vlan_word)
}

fn hash_v6_key(src: u128, dst: u128, src_port: u16, dst_port: u16, proto: u8, vlan_word: u64) -> u32 {
    let a = (src, src_port);
    let b = (dst, dst_port);
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

/// The slow path for encapsulations: hash exactly what `decode` reports, with the same
/// key layout as the plain path so that a flow whose directions take different paths
/// (a UDP port that is a tunnel port one way only) still meets itself.
fn hash_by_decoding(link: LinkType, data: &[u8], opts: &DecodeOptions) -> u32 {
    let d = decode(link, data, &DecodeOptions { validate_checksums: false, ..*opts });
    // A tunnel under the encapsulation (GRE behind MPLS, ...) hashes on its outer packet,
    // as the plain path does; fragment is then the outer packet's too (ports are 0 when
    // it is fragmented, and a tunnel is only entered on an unfragmented one).
    let (t, vlan, fragment) = match d.tunnel {
        Some(t) => (t.outer, t.outer_vlan, false),
        None => match d.tuple() {
            Some(t) => (t, if d.vlan_depth > MAX_VLAN_LAYERS { [0; 3] } else { d.vlan }, d.fragment),
            None => return 0,
        },
    };
    let (src_port, dst_port) = match t.proto {
        PROTO_TCP | PROTO_UDP if !fragment => hash_ports(t.proto, (t.src_port, t.dst_port), opts),
        _ => (0, 0),
    };
    if t.is_v4 {
        let src = u32::from_be_bytes([t.src[12], t.src[13], t.src[14], t.src[15]]);
        let dst = u32::from_be_bytes([t.dst[12], t.dst[13], t.dst[14], t.dst[15]]);
        hash_v4_key(src, dst, src_port, dst_port, t.proto, tracked_vlan_word(vlan, opts))
    } else {
        hash_v6_key(
            u128::from_be_bytes(t.src),
            u128::from_be_bytes(t.dst),
            src_port,
            dst_port,
            t.proto,
            tracked_vlan_word(vlan, opts),
        )
    }
}

/// Upper protocol, ports and "is a fragment" after the usual extension headers, with
/// the same rule as `walk_extension_headers` for fragments (stop, no ports).
fn ipv6_upper_ports(ip: &[u8]) -> (u8, u16, u16, bool) {
    let end = (ipv6::IPV6_HEADER_LEN + u16::from_be_bytes([ip[4], ip[5]]) as usize).min(ip.len());
    let body = &ip[ipv6::IPV6_HEADER_LEN..end];
    let mut next = ip[6];
    let mut pos = 0usize;
    loop {
        let Some(hdr) = body.get(pos..pos + 2) else {
            return (next, 0, 0, false);
        };
        let len = match next {
            ipv6::NH_HOP_BY_HOP | ipv6::NH_ROUTING | ipv6::NH_DEST_OPTS => (hdr[1] as usize + 1) * 8,
            ipv6::NH_AUTH => (hdr[1] as usize + 2) * 4,
            ipv6::NH_FRAGMENT => {
                let Some(frag) = body.get(pos..pos + 8) else {
                    return (next, 0, 0, false);
                };
                let offset_and_more = u16::from_be_bytes([frag[2], frag[3]]) & 0xfff9;
                if offset_and_more != 0 {
                    return (frag[0], 0, 0, true);
                }
                8
            }
            proto => {
                let (src_port, dst_port) = ports(proto, &body[pos..]);
                return (proto, src_port, dst_port, false);
            }
        };
        if pos + len > body.len() {
            return (next, 0, 0, false);
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
