//! Encapsulation headers: GRE (RFC 2784/2890, and the PPTP variant of RFC 2637), ERSPAN
//! types I/II/III, VXLAN (RFC 7348), Geneve (RFC 8926), Teredo (RFC 4380), NSH (RFC 8300),
//! MPLS (RFC 3032), PPP (RFC 1661), PPPoE sessions (RFC 2516) and Cisco HDLC.
//!
//! The functions here only parse one header and say what follows it; `decode` (mod.rs)
//! walks the layers, counts them and decides what becomes the inner packet. The checks
//! and event names follow Suricata's decoders so that `decode-event` rules carry over.

use super::events::DecodeEvent;
use super::FiveTuple;
use crate::bytes;

pub const PROTO_IPIP: u8 = 4;
pub const PROTO_IPV6_IN_IP: u8 = 41;
pub const PROTO_GRE: u8 = 47;

pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_MPLS_UNICAST: u16 = 0x8847;
pub const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
pub const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;
pub const ETHERTYPE_NSH: u16 = 0x894f;
/// Transparent Ethernet bridging: an Ethernet frame inside GRE or Geneve.
pub const ETHERTYPE_TEB: u16 = 0x6558;
pub const ETHERTYPE_ERSPAN_I_II: u16 = 0x88be;
pub const ETHERTYPE_ERSPAN_III: u16 = 0x22eb;
/// PPP inside GRE version 1 (PPTP).
pub const GRE_PROTO_PPP: u16 = 0x880b;

pub const PPP_IPV4: u16 = 0x0021;
pub const PPP_IPV6: u16 = 0x0057;
/// Van Jacobson uncompressed TCP/IP: an IPv4 header whose protocol byte holds a slot id.
pub const PPP_VJ_UNCOMPRESSED: u16 = 0x002f;

/// What kind of tunnel carried the inner packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    /// GRE version 0 carrying IP, PPP, VLAN-tagged or bridged Ethernet frames.
    Gre,
    /// GRE version 1 (PPTP) carrying PPP.
    Pptp,
    /// ERSPAN type I: GRE 0x88BE without a sequence number, Ethernet right after GRE.
    ErspanI,
    /// ERSPAN type II: GRE 0x88BE with a sequence number and an 8-byte ERSPAN header.
    ErspanII,
    /// ERSPAN type III: GRE 0x22EB, 12-byte header plus an optional 8-byte subheader.
    ErspanIII,
    Vxlan,
    Geneve,
    /// IPv6 in UDP (port 3544 by default).
    Teredo,
    /// IPv4 or IPv6 directly inside IPv4 or IPv6 (protocols 4 and 41).
    IpInIp,
}

impl TunnelKind {
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::Gre => "gre",
            TunnelKind::Pptp => "pptp",
            TunnelKind::ErspanI => "erspan_i",
            TunnelKind::ErspanII => "erspan_ii",
            TunnelKind::ErspanIII => "erspan_iii",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Geneve => "geneve",
            TunnelKind::Teredo => "teredo",
            TunnelKind::IpInIp => "ipip",
        }
    }
}

/// The tunnel around the packet [`decode`](super::decode) returned. This is what
/// Suricata's eve alert logs as `tunnel`: `src_ip`, `dest_ip`, `src_port`, `dest_port`
/// and `proto` of the outermost packet (`outer`; ports are 0 unless it is TCP/UDP, as
/// Suricata writes them), and `depth` (Suricata's recursion level of the inner packet).
/// Suricata also writes `pcap_cnt` and `pkt_src` ("wire/pcap"), which the caller knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelInfo {
    /// The outermost tunnel.
    pub kind: TunnelKind,
    /// The tunnel directly around the inner packet (same as `kind` at depth 1).
    pub innermost_kind: TunnelKind,
    /// The outermost IP packet's flow key.
    pub outer: FiveTuple,
    /// VLAN ids of the outermost packet (the inner packet may add tags: ERSPAN, bridged
    /// Ethernet); the outer flow is keyed with these.
    pub outer_vlan: super::VlanIds,
    /// Number of tunnels crossed to reach the inner packet (1 for one tunnel).
    pub depth: u8,
    /// Offset in the captured bytes where the innermost tunnel's payload starts: the
    /// bytes Suricata logs as the tunnel packet's `packet` (with `packet_info.linktype`
    /// 12, "RAW", whatever the payload's framing).
    pub inner_offset: u32,
}

/// Up to four UDP ports that identify an encapsulation (Suricata also keeps four).
/// Empty means the decoder is disabled. `Copy`, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortList {
    ports: [u16; 4],
    len: u8,
}

impl PortList {
    pub const NONE: PortList = PortList { ports: [0; 4], len: 0 };

    pub const fn one(port: u16) -> Self {
        PortList { ports: [port, 0, 0, 0], len: 1 }
    }

    /// The first four of `ports`; more are ignored (as Suricata does, with a warning
    /// that is the config loader's to give).
    pub fn new(ports: &[u16]) -> Self {
        let mut list = PortList::NONE;
        for &port in ports.iter().take(4) {
            list.ports[list.len as usize] = port;
            list.len += 1;
        }
        list
    }

    #[inline]
    pub fn contains(&self, port: u16) -> bool {
        self.as_slice().contains(&port)
    }

    pub fn as_slice(&self) -> &[u16] {
        &self.ports[..self.len as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// ---------------------------------------------------------------------------------------
// GRE

pub const GRE_HEADER_LEN: usize = 4;

const GRE_CHECKSUM: u8 = 0x80;
const GRE_ROUTING: u8 = 0x40;
const GRE_KEY: u8 = 0x20;
const GRE_SEQUENCE: u8 = 0x10;
const GRE_STRICT_SOURCE_ROUTE: u8 = 0x08;
const GRE_RECURSION: u8 = 0x07;
/// Second byte: the acknowledgment flag (version 1 only) and reserved flags.
const GRE_V1_ACK: u8 = 0x80;
const GRE_RESERVED_FLAGS: u8 = 0x78;

/// A checked GRE header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GreHeader {
    pub version: u8,
    pub protocol: u16,
    /// Bytes up to the payload, optional fields and source routes included.
    pub header_len: usize,
    pub has_sequence: bool,
}

/// Parses a GRE header. Errors carry Suricata's event; the packet then stays a GRE
/// packet with nothing decoded inside.
pub fn parse_gre(data: &[u8]) -> Result<GreHeader, DecodeEvent> {
    if data.len() < GRE_HEADER_LEN {
        return Err(DecodeEvent::GrePktTooSmall);
    }
    let flags = data[0];
    let version_byte = data[1];
    let version = version_byte & 0x07;
    let protocol = u16::from_be_bytes([data[2], data[3]]);
    let mut header_len = GRE_HEADER_LEN;
    match version {
        0 => {
            if flags & GRE_RECURSION != 0 {
                return Err(DecodeEvent::GreVersion0Recur);
            }
            if version_byte & GRE_RESERVED_FLAGS != 0 {
                return Err(DecodeEvent::GreVersion0Flags);
            }
            if flags & GRE_KEY != 0 {
                header_len += 4;
            }
            if flags & GRE_SEQUENCE != 0 {
                header_len += 4;
            }
            // Checksum and offset share one word, present when either flag is set.
            if flags & (GRE_CHECKSUM | GRE_ROUTING) != 0 {
                header_len += 4;
            }
            if header_len > data.len() {
                return Err(DecodeEvent::GreVersion0HdrTooBig);
            }
            if flags & GRE_ROUTING != 0 {
                header_len = skip_source_routes(data, header_len)?;
            }
        }
        1 => {
            if flags & GRE_CHECKSUM != 0 {
                return Err(DecodeEvent::GreVersion1Chksum);
            }
            if flags & GRE_ROUTING != 0 {
                return Err(DecodeEvent::GreVersion1Route);
            }
            if flags & GRE_STRICT_SOURCE_ROUTE != 0 {
                return Err(DecodeEvent::GreVersion1Ssr);
            }
            if flags & GRE_RECURSION != 0 {
                return Err(DecodeEvent::GreVersion1Recur);
            }
            if version_byte & GRE_RESERVED_FLAGS != 0 {
                return Err(DecodeEvent::GreVersion1Flags);
            }
            if protocol != GRE_PROTO_PPP {
                return Err(DecodeEvent::GreVersion1WrongProtocol);
            }
            if flags & GRE_KEY == 0 {
                return Err(DecodeEvent::GreVersion1NoKey);
            }
            header_len += 4; // payload length + call id
            if flags & GRE_SEQUENCE != 0 {
                header_len += 4;
            }
            if version_byte & GRE_V1_ACK != 0 {
                header_len += 4;
            }
            if header_len > data.len() {
                return Err(DecodeEvent::GreVersion1HdrTooBig);
            }
        }
        _ => return Err(DecodeEvent::GreWrongVersion),
    }
    Ok(GreHeader { version, protocol, header_len, has_sequence: flags & GRE_SEQUENCE != 0 })
}

/// RFC 1701 source route entries: address family (2), offset (1), length (1), then
/// `length` bytes; a null entry (family 0, length 0) ends the list.
fn skip_source_routes(data: &[u8], mut at: usize) -> Result<usize, DecodeEvent> {
    loop {
        let entry = data.get(at..at + 4).ok_or(DecodeEvent::GreVersion0MalformedSreHdr)?;
        at += 4;
        let family = u16::from_be_bytes([entry[0], entry[1]]);
        let length = entry[3] as usize;
        if family == 0 && length == 0 {
            return Ok(at);
        }
        at += length;
        if at > data.len() {
            return Err(DecodeEvent::GreVersion0MalformedSreHdr);
        }
    }
}

// ---------------------------------------------------------------------------------------
// ERSPAN

pub const ERSPAN_II_HEADER_LEN: usize = 8;
pub const ERSPAN_III_HEADER_LEN: usize = 12;
const ERSPAN_III_SUBHEADER_LEN: usize = 8;

/// What follows an ERSPAN type III header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErspanFrame {
    Ethernet,
    /// Frame type 2: an IP packet without Ethernet header.
    Ip,
}

/// ERSPAN type II header: returns the VLAN id (0 when untagged) and the mirrored frame.
pub fn parse_erspan_ii(data: &[u8]) -> Result<(u16, &[u8]), DecodeEvent> {
    if data.len() < ERSPAN_II_HEADER_LEN {
        return Err(DecodeEvent::ErspanHeaderTooSmall);
    }
    let word = u16::from_be_bytes([data[0], data[1]]);
    if word >> 12 != 1 {
        return Err(DecodeEvent::ErspanUnsupportedVersion);
    }
    Ok((word & 0x0fff, &data[ERSPAN_II_HEADER_LEN..]))
}

/// ERSPAN type III header: VLAN id, what the frame is, and the frame.
pub fn parse_erspan_iii(data: &[u8]) -> Result<(u16, ErspanFrame, &[u8]), DecodeEvent> {
    if data.len() < ERSPAN_III_HEADER_LEN {
        return Err(DecodeEvent::ErspanHeaderTooSmall);
    }
    let word = u16::from_be_bytes([data[0], data[1]]);
    if word >> 12 != 2 {
        return Err(DecodeEvent::ErspanUnsupportedVersion);
    }
    let frame_type = (data[10] >> 2) & 0x1f;
    let has_subheader = data[11] & 0x01 != 0;
    let header_len = ERSPAN_III_HEADER_LEN + if has_subheader { ERSPAN_III_SUBHEADER_LEN } else { 0 };
    let frame = data.get(header_len..).ok_or(DecodeEvent::ErspanHeaderTooSmall)?;
    let kind = match frame_type {
        0 => ErspanFrame::Ethernet,
        2 => ErspanFrame::Ip,
        _ => return Err(DecodeEvent::ErspanUnsupportedVersion),
    };
    Ok((word & 0x0fff, kind, frame))
}

// ---------------------------------------------------------------------------------------
// UDP encapsulations

pub const VXLAN_HEADER_LEN: usize = 8;
const ETHERNET_HEADER_LEN: usize = 14;

/// A VXLAN header in its strict form (only the I flag set, reserved fields zero, as
/// Suricata's default `reserved-bits-check: strict` demands) followed by at least an
/// Ethernet header. Returns the inner Ethernet frame; `None` means "not VXLAN", and the
/// datagram stays plain UDP.
pub fn parse_vxlan(data: &[u8]) -> Option<&[u8]> {
    if data.len() < VXLAN_HEADER_LEN + ETHERNET_HEADER_LEN {
        return None;
    }
    let strict = data[0] == 0x08 && data[1] == 0 && data[2] == 0 && data[3] == 0 && data[7] == 0;
    strict.then(|| &data[VXLAN_HEADER_LEN..])
}

pub const GENEVE_HEADER_LEN: usize = 8;

/// A Geneve header: returns the protocol type and the payload after the options, or
/// `None` when this is not Geneve version 0.
pub fn parse_geneve(data: &[u8]) -> Option<(u16, &[u8])> {
    if data.len() < GENEVE_HEADER_LEN || data[0] >> 6 != 0 {
        return None;
    }
    let header_len = GENEVE_HEADER_LEN + (data[0] & 0x3f) as usize * 4;
    let payload = data.get(header_len..)?;
    Some((u16::from_be_bytes([data[2], data[3]]), payload))
}

const TEREDO_ORIGIN_INDICATION_LEN: usize = 8;
const IPV6_HEADER_LEN: usize = 40;

/// Teredo has no header of its own: the datagram is Teredo when it holds exactly one
/// well-formed IPv6 packet, optionally behind an origin indication. Authentication
/// (bubble negotiation) messages and anything else are not a tunnel. Returns the IPv6
/// packet.
pub fn parse_teredo(data: &[u8]) -> Option<&[u8]> {
    if data.len() < IPV6_HEADER_LEN {
        return None;
    }
    let mut start = 0;
    if data[0] == 0 {
        if data[1] != 0 || data.len() < TEREDO_ORIGIN_INDICATION_LEN + IPV6_HEADER_LEN {
            return None;
        }
        start = TEREDO_ORIGIN_INDICATION_LEN;
    }
    let ip = &data[start..];
    if ip[0] >> 4 != 6 {
        return None;
    }
    let payload_len = u16::from_be_bytes([ip[4], ip[5]]) as usize;
    let (next_header, hop_limit) = (ip[6], ip[7]);
    // Hop limit 0 and a hop-by-hop header too short to exist are signs of a UDP payload
    // that only happens to start with a 6.
    if hop_limit == 0 || (next_header == 0 && payload_len < 8) {
        return None;
    }
    (ip.len() == IPV6_HEADER_LEN + payload_len).then_some(ip)
}

// ---------------------------------------------------------------------------------------
// NSH

pub const NSH_BASE_LEN: usize = 8;

/// What follows an NSH header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NshNext {
    Ipv4,
    Ipv6,
    Ethernet,
    Mpls,
}

/// Parses a Network Service Header. Errors carry Suricata's event.
pub fn parse_nsh(data: &[u8]) -> Result<(NshNext, &[u8]), DecodeEvent> {
    if data.len() < NSH_BASE_LEN {
        return Err(DecodeEvent::NshHeaderTooSmall);
    }
    if data[0] >> 6 != 0 {
        return Err(DecodeEvent::NshUnsupportedVersion);
    }
    // Length in 4-byte words, the low 6 bits of the first 16.
    let length = (u16::from_be_bytes([data[0], data[1]]) & 0x3f) as usize * 4;
    if length < NSH_BASE_LEN || length > data.len() {
        return Err(DecodeEvent::NshBadHeaderLength);
    }
    let md_type = data[2] & 0x0f;
    match md_type {
        0 | 0x0f => return Err(DecodeEvent::NshReservedType),
        1 if length != 24 => return Err(DecodeEvent::NshBadHeaderLength),
        1 | 2 => {}
        _ => return Err(DecodeEvent::NshUnsupportedType),
    }
    let next = match data[3] {
        1 => NshNext::Ipv4,
        2 => NshNext::Ipv6,
        3 => NshNext::Ethernet,
        5 => NshNext::Mpls,
        _ => return Err(DecodeEvent::NshUnknownPayload),
    };
    Ok((next, &data[length..]))
}

// ---------------------------------------------------------------------------------------
// MPLS

/// What the bottom of an MPLS label stack carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MplsPayload<'a> {
    Ipv4(&'a [u8]),
    Ipv6(&'a [u8]),
    /// Ethernet pseudowire, after its 4-byte control word.
    Ethernet(&'a [u8]),
}

const MPLS_LABEL_IPV4_NULL: u32 = 0;
const MPLS_LABEL_ROUTER_ALERT: u32 = 1;
const MPLS_LABEL_IPV6_NULL: u32 = 2;
const MPLS_LABEL_IMPLICIT_NULL: u32 = 3;
const MPLS_MAX_RESERVED_LABEL: u32 = 15;

/// Pops the label stack and guesses the payload. `Err` is an event that ends decoding.
pub fn parse_mpls(mut data: &[u8]) -> Result<MplsPayload<'_>, DecodeEvent> {
    let label = loop {
        let Some(shim) = bytes::be_u32(data, 0) else {
            return Err(DecodeEvent::MplsHeaderTooSmall);
        };
        data = &data[4..];
        if (shim >> 8) & 1 == 1 {
            break shim >> 12;
        }
    };
    match label {
        MPLS_LABEL_IPV4_NULL => return Ok(MplsPayload::Ipv4(data)),
        MPLS_LABEL_IPV6_NULL => return Ok(MplsPayload::Ipv6(data)),
        // Router alert is not allowed at the bottom; implicit null never goes on the wire.
        MPLS_LABEL_ROUTER_ALERT => return Err(DecodeEvent::MplsBadLabelRouterAlert),
        MPLS_LABEL_IMPLICIT_NULL => return Err(DecodeEvent::MplsBadLabelImplicitNull),
        l if l < MPLS_MAX_RESERVED_LABEL => return Err(DecodeEvent::MplsBadLabelReserved),
        _ => {}
    }
    // Enough for the pseudowire control word, the longest thing guessed from.
    if data.len() < 4 {
        return Err(DecodeEvent::MplsPktTooSmall);
    }
    match data[0] >> 4 {
        4 => Ok(MplsPayload::Ipv4(data)),
        6 => Ok(MplsPayload::Ipv6(data)),
        0 => Ok(MplsPayload::Ethernet(&data[4..])),
        _ => Err(DecodeEvent::MplsUnknownPayloadType),
    }
}

// ---------------------------------------------------------------------------------------
// PPP, PPPoE, Cisco HDLC

/// PPP framing at the start of `data`: skips the HDLC address/control pair (0xff 0x03)
/// when present and reads the protocol field, one byte when compressed (odd first byte).
/// Returns the protocol and the header length.
pub fn parse_ppp_header(data: &[u8]) -> Option<(u16, usize)> {
    let at = if data.first() == Some(&0xff) { 2 } else { 0 };
    parse_ppp_protocol(data, at)
}

/// The PPP protocol field at `at` (RFC 1661 §6.5 protocol-field compression).
pub fn parse_ppp_protocol(data: &[u8], at: usize) -> Option<(u16, usize)> {
    let first = *data.get(at)?;
    if first & 1 == 1 {
        return Some((first as u16, at + 1));
    }
    Some((bytes::be_u16(data, at)?, at + 2))
}

/// Valid PPP protocols that carry no IP for us: control protocols and other network
/// layers. Seeing them raises `ppp.unsup_proto`; anything else unknown is `ppp.wrong_type`.
pub fn is_known_non_ip_ppp_protocol(protocol: u16) -> bool {
    matches!(
        protocol,
        0x0023
            | 0x0027
            | 0x0029
            | 0x002b
            | 0x002d
            | 0x0031
            | 0x0033
            | 0x0035
            | 0x003f
            | 0x0201
            | 0x0231
            | 0x0233
            | 0x0281
            | 0x0283
            | 0x8021
            | 0x8023
            | 0x8027
            | 0x8029
            | 0x802b
            | 0x8033
            | 0x8035
            | 0x803f
            | 0x8057
            | 0x8281
            | 0xc021
            | 0xc023
            | 0xc025
            | 0xc223
    )
}

pub const PPPOE_HEADER_LEN: usize = 6;

/// A PPPoE session header: returns the PPP protocol and the PPP payload.
pub fn parse_pppoe_session(data: &[u8]) -> Result<(u16, &[u8]), DecodeEvent> {
    if data.len() < PPPOE_HEADER_LEN {
        return Err(DecodeEvent::PppoePktTooSmall);
    }
    if data[1] != 0 {
        // Session data always has code 0; other codes belong to discovery.
        return Err(DecodeEvent::PppoeWrongCode);
    }
    let (protocol, header_len) = parse_ppp_protocol(data, PPPOE_HEADER_LEN).ok_or(DecodeEvent::PppoePktTooSmall)?;
    Ok((protocol, &data[header_len..]))
}

pub const CHDLC_HEADER_LEN: usize = 4;

/// Cisco HDLC: address, control, EtherType. Returns the EtherType and the payload.
pub fn parse_chdlc(data: &[u8]) -> Result<(u16, &[u8]), DecodeEvent> {
    if data.len() < CHDLC_HEADER_LEN {
        return Err(DecodeEvent::ChdlcPktTooSmall);
    }
    Ok((u16::from_be_bytes([data[2], data[3]]), &data[CHDLC_HEADER_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gre_version0_optional_fields_and_routes() {
        let plain = [0x00, 0x00, 0x08, 0x00];
        assert_eq!(
            parse_gre(&plain).unwrap(),
            GreHeader { version: 0, protocol: 0x0800, header_len: 4, has_sequence: false }
        );
        // Checksum + key + sequence: 4 + 4 + 4 + 4.
        let full = [0xb0, 0x00, 0x86, 0xdd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
        let h = parse_gre(&full).unwrap();
        assert_eq!((h.header_len, h.protocol, h.has_sequence), (16, 0x86dd, true));
        assert_eq!(parse_gre(&full[..12]), Err(DecodeEvent::GreVersion0HdrTooBig));
        assert_eq!(parse_gre(&[0x01, 0x00, 0x08, 0x00]), Err(DecodeEvent::GreVersion0Recur));
        assert_eq!(parse_gre(&[0x00, 0x08, 0x08, 0x00]), Err(DecodeEvent::GreVersion0Flags));
        assert_eq!(parse_gre(&[0x00, 0x02, 0x08, 0x00]), Err(DecodeEvent::GreWrongVersion));
        assert_eq!(parse_gre(&[0x00, 0x00, 0x08]), Err(DecodeEvent::GrePktTooSmall));
        // Routing: checksum/offset word, one 4-byte route entry of length 4, null entry.
        let routed = [0x40, 0x00, 0x08, 0x00, 0, 0, 0, 0, 0x08, 0x00, 0, 4, 1, 2, 3, 4, 0, 0, 0, 0];
        assert_eq!(parse_gre(&routed).unwrap().header_len, 20);
        assert_eq!(parse_gre(&routed[..16]), Err(DecodeEvent::GreVersion0MalformedSreHdr));
        let runaway = [0x40, 0x00, 0x08, 0x00, 0, 0, 0, 0, 0x08, 0x00, 0, 200, 1, 2];
        assert_eq!(parse_gre(&runaway), Err(DecodeEvent::GreVersion0MalformedSreHdr));
    }

    #[test]
    fn gre_version1_pptp() {
        // Key and sequence set, version 1 with ack: 4 + 4 + 4 + 4.
        let pptp = [0x30, 0x81, 0x88, 0x0b, 0, 10, 0, 1, 0, 0, 0, 5, 0, 0, 0, 4];
        let h = parse_gre(&pptp).unwrap();
        assert_eq!((h.version, h.protocol, h.header_len), (1, GRE_PROTO_PPP, 16));
        assert_eq!(parse_gre(&pptp[..12]), Err(DecodeEvent::GreVersion1HdrTooBig));
        let cases: [([u8; 4], DecodeEvent); 6] = [
            ([0xa0, 0x01, 0x88, 0x0b], DecodeEvent::GreVersion1Chksum),
            ([0x60, 0x01, 0x88, 0x0b], DecodeEvent::GreVersion1Route),
            ([0x28, 0x01, 0x88, 0x0b], DecodeEvent::GreVersion1Ssr),
            ([0x21, 0x01, 0x88, 0x0b], DecodeEvent::GreVersion1Recur),
            ([0x20, 0x09, 0x88, 0x0b], DecodeEvent::GreVersion1Flags),
            ([0x20, 0x01, 0x08, 0x00], DecodeEvent::GreVersion1WrongProtocol),
        ];
        for (header, event) in cases {
            assert_eq!(parse_gre(&header), Err(event), "{header:x?}");
        }
        assert_eq!(parse_gre(&[0x00, 0x01, 0x88, 0x0b]), Err(DecodeEvent::GreVersion1NoKey));
    }

    #[test]
    fn erspan_headers() {
        let ii = [0x10, 0x17, 0x08, 0x64, 0, 0, 0, 0, 0xaa];
        assert_eq!(parse_erspan_ii(&ii), Ok((23, &ii[8..])));
        assert_eq!(parse_erspan_ii(&ii[..7]), Err(DecodeEvent::ErspanHeaderTooSmall));
        assert_eq!(parse_erspan_ii(&[0x20, 0, 0, 0, 0, 0, 0, 0]), Err(DecodeEvent::ErspanUnsupportedVersion));
        let mut iii = [0x20, 0x05, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xbb];
        assert_eq!(parse_erspan_iii(&iii), Ok((5, ErspanFrame::Ethernet, &iii[12..])));
        iii[10] = 2 << 2;
        assert_eq!(parse_erspan_iii(&iii).unwrap().1, ErspanFrame::Ip);
        iii[11] = 1; // platform subheader announced but missing
        assert_eq!(parse_erspan_iii(&iii), Err(DecodeEvent::ErspanHeaderTooSmall));
    }

    #[test]
    fn vxlan_geneve_teredo_recognition() {
        let mut vxlan = vec![0x08, 0, 0, 0, 0, 0, 100, 0];
        vxlan.extend_from_slice(&[0u8; 14]);
        assert_eq!(parse_vxlan(&vxlan).map(|f| f.len()), Some(14));
        for (i, v) in [(0, 0x0c), (1, 1), (2, 1), (7, 1)] {
            let mut bad = vxlan.clone();
            bad[i] = v;
            assert_eq!(parse_vxlan(&bad), None, "byte {i}");
        }
        assert_eq!(parse_vxlan(&vxlan[..21]), None);

        let geneve = [0x01, 0, 0x65, 0x58, 0, 0, 1, 0, 9, 9, 9, 9, 0xee];
        assert_eq!(parse_geneve(&geneve), Some((ETHERTYPE_TEB, &geneve[12..])));
        assert_eq!(parse_geneve(&[0x41, 0, 0x65, 0x58, 0, 0, 1, 0]), None);
        assert_eq!(parse_geneve(&geneve[..10]), None);

        let mut ip6 = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        ip6.extend_from_slice(&[0; 32]);
        ip6.extend_from_slice(&[0; 8]);
        assert_eq!(parse_teredo(&ip6), Some(&ip6[..]));
        let mut with_origin = vec![0, 0, 0x12, 0x34, 1, 2, 3, 4];
        with_origin.extend_from_slice(&ip6);
        assert_eq!(parse_teredo(&with_origin), Some(&ip6[..]));
        with_origin[1] = 1; // authentication indicator: not a tunnelled packet
        assert_eq!(parse_teredo(&with_origin), None);
        let mut wrong_len = ip6.clone();
        wrong_len.push(0);
        assert_eq!(parse_teredo(&wrong_len), None);
        let mut zero_hops = ip6.clone();
        zero_hops[7] = 0;
        assert_eq!(parse_teredo(&zero_hops), None);
    }

    #[test]
    fn nsh_header_checks() {
        let md1 = [0x00, 0x06, 0x01, 0x01, 0, 0, 1, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0x45];
        assert_eq!(parse_nsh(&md1), Ok((NshNext::Ipv4, &md1[24..])));
        let md2 = [0x00, 0x02, 0x02, 0x02, 0, 0, 1, 2, 0x60];
        assert_eq!(parse_nsh(&md2), Ok((NshNext::Ipv6, &md2[8..])));
        assert_eq!(parse_nsh(&md2[..7]), Err(DecodeEvent::NshHeaderTooSmall));
        assert_eq!(parse_nsh(&[0x40, 0x02, 0x02, 0x02, 0, 0, 0, 0]), Err(DecodeEvent::NshUnsupportedVersion));
        assert_eq!(parse_nsh(&[0x00, 0x03, 0x02, 0x02, 0, 0, 0, 0]), Err(DecodeEvent::NshBadHeaderLength));
        assert_eq!(parse_nsh(&[0x00, 0x02, 0x01, 0x02, 0, 0, 0, 0]), Err(DecodeEvent::NshBadHeaderLength));
        assert_eq!(parse_nsh(&[0x00, 0x02, 0x00, 0x02, 0, 0, 0, 0]), Err(DecodeEvent::NshReservedType));
        assert_eq!(parse_nsh(&[0x00, 0x02, 0x03, 0x02, 0, 0, 0, 0]), Err(DecodeEvent::NshUnsupportedType));
        assert_eq!(parse_nsh(&[0x00, 0x02, 0x02, 0x04, 0, 0, 0, 0]), Err(DecodeEvent::NshUnknownPayload));
    }

    #[test]
    fn mpls_label_stack() {
        // Label 100 (not bottom), label 200 (bottom), then IPv4.
        let stack = [0x00, 0x06, 0x40, 0x40, 0x00, 0x0c, 0x81, 0x40, 0x45, 0, 0, 20];
        assert_eq!(parse_mpls(&stack), Ok(MplsPayload::Ipv4(&stack[8..])));
        let explicit_v6 = [0x00, 0x00, 0x21, 0x40, 0x60];
        assert_eq!(parse_mpls(&explicit_v6), Ok(MplsPayload::Ipv6(&explicit_v6[4..])));
        let pseudowire = [0x00, 0x0c, 0x81, 0x40, 0, 0, 0, 0, 0xee];
        assert_eq!(parse_mpls(&pseudowire), Ok(MplsPayload::Ethernet(&pseudowire[8..])));
        assert_eq!(parse_mpls(&[0x00, 0x00, 0x11, 0x40, 0x45, 0, 0, 0]), Err(DecodeEvent::MplsBadLabelRouterAlert));
        assert_eq!(parse_mpls(&[0x00, 0x00, 0x31, 0x40, 0x45, 0, 0, 0]), Err(DecodeEvent::MplsBadLabelImplicitNull));
        assert_eq!(parse_mpls(&[0x00, 0x00, 0x71, 0x40, 0x45, 0, 0, 0]), Err(DecodeEvent::MplsBadLabelReserved));
        assert_eq!(parse_mpls(&[0x00, 0x0c, 0x81, 0x40, 0x45]), Err(DecodeEvent::MplsPktTooSmall));
        assert_eq!(parse_mpls(&[0x00, 0x0c, 0x81, 0x40, 0x95, 0, 0, 0]), Err(DecodeEvent::MplsUnknownPayloadType));
        assert_eq!(parse_mpls(&[0x00, 0x06, 0x40, 0x40, 0x00]), Err(DecodeEvent::MplsHeaderTooSmall));
    }

    #[test]
    fn ppp_framing_variants() {
        assert_eq!(parse_ppp_header(&[0x21, 0x45]), Some((PPP_IPV4, 1)));
        assert_eq!(parse_ppp_header(&[0x00, 0x21, 0x45]), Some((PPP_IPV4, 2)));
        assert_eq!(parse_ppp_header(&[0xff, 0x03, 0x00, 0x57]), Some((PPP_IPV6, 4)));
        assert_eq!(parse_ppp_header(&[0xff, 0x03, 0x57]), Some((PPP_IPV6, 3)));
        assert_eq!(parse_ppp_header(&[0xff, 0x03]), None);
        assert_eq!(parse_ppp_header(&[0x00]), None);
        assert!(is_known_non_ip_ppp_protocol(0xc021));
        assert!(!is_known_non_ip_ppp_protocol(0x1234));
        let pppoe = [0x11, 0x00, 0x12, 0x34, 0x00, 0x16, 0x00, 0x21, 0x45];
        assert_eq!(parse_pppoe_session(&pppoe), Ok((PPP_IPV4, &pppoe[8..])));
        assert_eq!(parse_pppoe_session(&pppoe[..6]), Err(DecodeEvent::PppoePktTooSmall));
        let mut discovery_code = pppoe;
        discovery_code[1] = 0x09;
        assert_eq!(parse_pppoe_session(&discovery_code), Err(DecodeEvent::PppoeWrongCode));
        assert_eq!(parse_chdlc(&[0x0f, 0, 0x08, 0x00, 0x45]), Ok((0x0800, &[0x45u8][..])));
        assert_eq!(parse_chdlc(&[0x0f, 0, 0x08]), Err(DecodeEvent::ChdlcPktTooSmall));
    }

    #[test]
    fn port_lists() {
        let l = PortList::new(&[1, 2, 3, 4, 5]);
        assert_eq!(l.as_slice(), &[1, 2, 3, 4]);
        assert!(l.contains(4) && !l.contains(5));
        assert!(PortList::NONE.is_empty() && !PortList::NONE.contains(0));
        assert!(PortList::one(4789).contains(4789));
    }
}
