//! IPv6 fixed header view (RFC 8200) and the extension-header walk.

use super::events::{DecodeEvent, EventSet};

pub const IPV6_HEADER_LEN: usize = 40;

pub const NH_HOP_BY_HOP: u8 = 0;
pub const NH_ROUTING: u8 = 43;
pub const NH_FRAGMENT: u8 = 44;
pub const NH_ESP: u8 = 50;
pub const NH_AUTH: u8 = 51;
pub const NH_NO_NEXT: u8 = 59;
pub const NH_DEST_OPTS: u8 = 60;

/// A checked IPv6 packet: at least 40 bytes and version 6.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6View<'a> {
    data: &'a [u8],
}

impl<'a> Ipv6View<'a> {
    pub fn new(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        if data.len() < IPV6_HEADER_LEN {
            return Err(DecodeEvent::Ipv6PktTooSmall);
        }
        if data[0] >> 4 != 6 {
            return Err(DecodeEvent::Ipv6WrongIpVersion);
        }
        Ok(Ipv6View { data })
    }

    pub fn version(&self) -> u8 {
        self.data[0] >> 4
    }
    pub fn traffic_class(&self) -> u8 {
        (self.data[0] << 4) | (self.data[1] >> 4)
    }
    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.data[1] & 0x0f, self.data[2], self.data[3]])
    }
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([self.data[4], self.data[5]])
    }
    /// Next header of the fixed header (the first extension header, if any).
    pub fn next_header(&self) -> u8 {
        self.data[6]
    }
    pub fn hop_limit(&self) -> u8 {
        self.data[7]
    }
    pub fn src(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.data[8..24]);
        a
    }
    pub fn dst(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.data[24..40]);
        a
    }
    pub fn src_addr(&self) -> std::net::Ipv6Addr {
        self.src().into()
    }
    pub fn dst_addr(&self) -> std::net::Ipv6Addr {
        self.dst().into()
    }
    /// Address bytes, for checksum and hashing without copying.
    pub fn src_bytes(&self) -> &'a [u8] {
        &self.data[8..24]
    }
    pub fn dst_bytes(&self) -> &'a [u8] {
        &self.data[24..40]
    }
    /// Bytes after the fixed header, bounded by the payload length and by the capture.
    pub fn payload(&self) -> &'a [u8] {
        let end = (IPV6_HEADER_LEN + self.payload_len() as usize).min(self.data.len());
        &self.data[IPV6_HEADER_LEN..end]
    }
    pub fn is_truncated(&self) -> bool {
        IPV6_HEADER_LEN + self.payload_len() as usize > self.data.len()
    }
    /// The whole captured packet this view was made from.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }
}

/// What a Fragment extension header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Fragment {
    /// Offset in 8-byte units.
    pub offset: u16,
    pub more: bool,
    pub id: u32,
}

/// The IPv6 layer after the extension-header walk.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Info<'a> {
    pub header: Ipv6View<'a>,
    /// Protocol of the upper layer: TCP, UDP, ICMPv6, ... or the header where the walk
    /// stopped (ESP, No Next Header, a real fragment's next header, a truncated header).
    pub upper_proto: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub upper_offset: usize,
    /// Present when a Fragment header that really fragments (offset != 0 or M set) was seen.
    pub fragment: Option<Ipv6Fragment>,
    /// A Routing header with segments left: the pseudo-header destination is then not
    /// the one in the fixed header, so transport checksums cannot be verified here.
    pub routing_pending: bool,
    /// The walk could not reach the upper layer (truncated extension header).
    pub incomplete: bool,
}

impl<'a> Ipv6Info<'a> {
    /// Upper-layer bytes (bounded by payload length and capture).
    pub fn upper_payload(&self) -> &'a [u8] {
        self.header.payload().get(self.upper_offset - IPV6_HEADER_LEN..).unwrap_or(&[])
    }
}

/// Walks the extension headers in `view`'s payload, recording anomalies.
pub fn walk_extension_headers<'a>(view: Ipv6View<'a>, events: &mut EventSet) -> Ipv6Info<'a> {
    let body = view.payload();
    let mut info = Ipv6Info {
        header: view,
        upper_proto: view.next_header(),
        upper_offset: IPV6_HEADER_LEN,
        fragment: None,
        routing_pending: false,
        incomplete: false,
    };
    let mut pos = 0usize;
    let mut next = view.next_header();
    let mut seen_hh = false;
    let mut seen_rh = false;
    let mut seen_fh = false;
    let mut seen_ah = false;
    // A second Destination Options header is legal only after a Routing header.
    let mut dh_count_since_rh = 0u8;
    loop {
        let rest = &body[pos..];
        match next {
            NH_HOP_BY_HOP | NH_ROUTING | NH_DEST_OPTS | NH_FRAGMENT | NH_AUTH => {}
            NH_NO_NEXT => {
                if !rest.is_empty() {
                    events.insert(DecodeEvent::Ipv6DataAfterNoneHeader);
                }
                break;
            }
            NH_ESP => break,
            proto => {
                if is_unassigned_protocol(proto) {
                    events.insert(DecodeEvent::Ipv6UnknownNextHeader);
                }
                break;
            }
        }
        if rest.len() < 2 {
            events.insert(DecodeEvent::Ipv6TruncExthdr);
            info.incomplete = true;
            break;
        }
        let hdr_len = match next {
            NH_FRAGMENT => 8,
            NH_AUTH => (rest[1] as usize + 2) * 4,
            _ => (rest[1] as usize + 1) * 8,
        };
        if hdr_len > rest.len() {
            events.insert(DecodeEvent::Ipv6TruncExthdr);
            info.incomplete = true;
            break;
        }
        let hdr = &rest[..hdr_len];
        match next {
            NH_HOP_BY_HOP => {
                if seen_hh {
                    events.insert(DecodeEvent::Ipv6ExthdrDuplHh);
                }
                seen_hh = true;
                check_tlv_options(&hdr[2..], true, events);
            }
            NH_DEST_OPTS => {
                if dh_count_since_rh > 0 {
                    events.insert(DecodeEvent::Ipv6ExthdrDuplDh);
                }
                dh_count_since_rh += 1;
                check_tlv_options(&hdr[2..], false, events);
            }
            NH_ROUTING => {
                if seen_rh {
                    events.insert(DecodeEvent::Ipv6ExthdrDuplRh);
                }
                seen_rh = true;
                dh_count_since_rh = 0;
                // hdr is at least 8 bytes: type at 2, segments left at 3.
                if hdr[2] == 0 {
                    events.insert(DecodeEvent::Ipv6RhType0);
                }
                if hdr[3] != 0 {
                    info.routing_pending = true;
                }
            }
            NH_FRAGMENT => {
                if seen_fh {
                    events.insert(DecodeEvent::Ipv6ExthdrDuplFh);
                }
                seen_fh = true;
                // Reserved: byte 1 and the two bits below the M flag.
                if hdr[1] != 0 || hdr[3] & 0x06 != 0 {
                    events.insert(DecodeEvent::Ipv6FhNonZeroReservedField);
                }
                let offset = u16::from_be_bytes([hdr[2], hdr[3]]) >> 3;
                let more = hdr[3] & 1 != 0;
                if offset == 0 && !more {
                    // Atomic fragment: the datagram is whole, keep decoding.
                    events.insert(DecodeEvent::Ipv6ExthdrUselessFh);
                } else {
                    let id = u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
                    info.fragment = Some(Ipv6Fragment { offset, more, id });
                    // Stop here: later fragments lack what follows, and all fragments of
                    // one datagram must report the same upper protocol.
                    info.upper_proto = hdr[0];
                    info.upper_offset = IPV6_HEADER_LEN + pos + hdr_len;
                    return info;
                }
            }
            _ => {
                // Authentication Header.
                if seen_ah {
                    events.insert(DecodeEvent::Ipv6ExthdrDuplAh);
                }
                seen_ah = true;
                if hdr[2] != 0 || hdr[3] != 0 {
                    events.insert(DecodeEvent::Ipv6ExthdrAhResNotNull);
                }
            }
        }
        next = hdr[0];
        pos += hdr_len;
    }
    info.upper_proto = next;
    info.upper_offset = IPV6_HEADER_LEN + pos;
    info
}

/// Hop-by-hop / destination options TLVs (RFC 8200 §4.2).
fn check_tlv_options(mut opts: &[u8], hop_by_hop: bool, events: &mut EventSet) {
    let mut only_padding = true;
    while let Some((&kind, after)) = opts.split_first() {
        if kind == 0 {
            // Pad1 has no length byte.
            opts = after;
            continue;
        }
        let Some(&len) = after.first() else {
            events.insert(DecodeEvent::Ipv6ExthdrInvalidOptlen);
            return;
        };
        let len = len as usize;
        if after.len() < 1 + len {
            events.insert(DecodeEvent::Ipv6ExthdrInvalidOptlen);
            return;
        }
        match kind {
            1 => {
                if len == 0 {
                    events.insert(DecodeEvent::Ipv6ZeroLenPadn);
                }
            }
            _ => {
                only_padding = false;
                let known = match kind {
                    // Router alert, jumbo payload, RPL, quick-start, CALIPSO, MPL,
                    // IOAM, minimum path MTU.
                    0x05 | 0xc2 | 0x63 | 0x26 | 0x07 | 0x6d | 0x11 | 0x31 | 0x30 => hop_by_hop,
                    // Tunnel encapsulation limit, home address.
                    0x04 | 0xc9 => !hop_by_hop,
                    _ => false,
                };
                if !known {
                    events.insert(if hop_by_hop {
                        DecodeEvent::Ipv6HopoptsUnknownOpt
                    } else {
                        DecodeEvent::Ipv6DstoptsUnknownOpt
                    });
                }
            }
        }
        opts = &after[1 + len..];
    }
    if only_padding {
        events.insert(if hop_by_hop {
            DecodeEvent::Ipv6HopoptsOnlyPadding
        } else {
            DecodeEvent::Ipv6DstoptsOnlyPadding
        });
    }
}

/// IANA protocol numbers 146..=252 are unassigned (253/254 are for experiments, 255 reserved).
fn is_unassigned_protocol(proto: u8) -> bool {
    (146..=252).contains(&proto) || proto == 255
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(next: u8, body: &[u8]) -> Vec<u8> {
        let mut p = vec![0x61, 0x23, 0x45, 0x67];
        p.extend_from_slice(&(body.len() as u16).to_be_bytes());
        p.push(next);
        p.push(64);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(body);
        p
    }

    fn walk(next: u8, body: &[u8]) -> (u8, usize, Option<Ipv6Fragment>, Vec<DecodeEvent>) {
        let p = packet(next, body);
        let mut ev = EventSet::new();
        let info = walk_extension_headers(Ipv6View::new(&p).unwrap(), &mut ev);
        (info.upper_proto, info.upper_offset, info.fragment, ev.iter().collect())
    }

    #[test]
    fn fixed_header_accessors() {
        let p = packet(17, &[0; 8]);
        let v = Ipv6View::new(&p).unwrap();
        assert_eq!((v.version(), v.traffic_class(), v.flow_label()), (6, 0x12, 0x34567));
        assert_eq!((v.payload_len(), v.next_header(), v.hop_limit()), (8, 17, 64));
        assert_eq!(v.src_addr(), "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap());
        assert_eq!(v.dst()[15], 2);
        assert_eq!(Ipv6View::new(&p[..39]).unwrap_err(), DecodeEvent::Ipv6PktTooSmall);
        let mut v4 = p.clone();
        v4[0] = 0x45;
        assert_eq!(Ipv6View::new(&v4).unwrap_err(), DecodeEvent::Ipv6WrongIpVersion);
    }

    #[test]
    fn hop_by_hop_router_alert_then_udp() {
        // HBH: next=UDP, len 0 (8 bytes): router alert (5,2,0,0), PadN(1,0)... use Pad1 x2.
        let body = [17, 0, 5, 2, 0, 0, 0, 0, /* udp */ 0, 1, 0, 2, 0, 8, 0, 0];
        assert_eq!(walk(0, &body), (17, 48, None, vec![]));
    }

    #[test]
    fn padding_only_and_zero_len_padn() {
        let body = [6, 0, 1, 0, 1, 2, 0, 0];
        assert_eq!(walk(0, &body).3, vec![DecodeEvent::Ipv6HopoptsOnlyPadding, DecodeEvent::Ipv6ZeroLenPadn]);
        let body = [6, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(walk(60, &body).3, vec![DecodeEvent::Ipv6DstoptsOnlyPadding]);
        // Unknown option type 0x3e in destination options; length 9 overruns.
        let body = [6, 0, 0x3e, 4, 0, 0, 0, 0];
        assert_eq!(walk(60, &body).3, vec![DecodeEvent::Ipv6DstoptsUnknownOpt]);
        let body = [6, 0, 0x3e, 9, 0, 0, 0, 0];
        assert_eq!(walk(60, &body).3, vec![DecodeEvent::Ipv6ExthdrInvalidOptlen]);
    }

    #[test]
    fn duplicates_and_routing() {
        let mut body = vec![0u8, 0, 5, 2, 0, 0, 0, 0]; // HBH -> HBH
        body.extend_from_slice(&[43, 0, 5, 2, 0, 0, 0, 0]); // second HBH -> routing
        body.extend_from_slice(&[43, 0, 0, 0, 0, 0, 0, 0]); // routing type 0 -> routing
        body.extend_from_slice(&[6, 0, 2, 0, 0, 0, 0, 0]); // routing type 2 -> TCP
        let (proto, off, frag, ev) = walk(0, &body);
        assert_eq!((proto, off, frag), (6, 72, None));
        assert_eq!(ev, vec![DecodeEvent::Ipv6ExthdrDuplRh, DecodeEvent::Ipv6ExthdrDuplHh, DecodeEvent::Ipv6RhType0]);
    }

    #[test]
    fn destination_options_twice_only_around_routing() {
        let dh_to_rh = [43u8, 0, 1, 4, 0, 0, 0, 0];
        let rh_to_dh = [60u8, 0, 2, 0, 0, 0, 0, 0];
        let dh_to_udp = [17u8, 0, 1, 4, 0, 0, 0, 0];
        let body: Vec<u8> = [&dh_to_rh[..], &rh_to_dh, &dh_to_udp].concat();
        assert!(!walk(60, &body).3.contains(&DecodeEvent::Ipv6ExthdrDuplDh));
        let dh_to_dh = [60u8, 0, 1, 4, 0, 0, 0, 0];
        let body: Vec<u8> = [&dh_to_dh[..], &dh_to_udp].concat();
        assert!(walk(60, &body).3.contains(&DecodeEvent::Ipv6ExthdrDuplDh));
    }

    #[test]
    fn fragments() {
        // First fragment (offset 0, M=1) of a UDP datagram.
        let body = [17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef, 0, 1, 0, 2];
        let (proto, off, frag, ev) = walk(44, &body);
        assert_eq!((proto, off), (17, 48));
        assert_eq!(frag, Some(Ipv6Fragment { offset: 0, more: true, id: 0xdeadbeef }));
        assert!(ev.is_empty());
        // Later fragment with a reserved bit set.
        let body = [17, 1, 0, 0x10, 0, 0, 0, 1];
        let (_, _, frag, ev) = walk(44, &body);
        assert_eq!(frag, Some(Ipv6Fragment { offset: 2, more: false, id: 1 }));
        assert_eq!(ev, vec![DecodeEvent::Ipv6FhNonZeroReservedField]);
        // Atomic fragment: decoding continues to the upper layer.
        let body = [17, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 8, 0, 0];
        assert_eq!(walk(44, &body), (17, 48, None, vec![DecodeEvent::Ipv6ExthdrUselessFh]));
    }

    #[test]
    fn auth_esp_none_and_truncation() {
        // AH (len field 1 -> 12 bytes) with non-zero reserved, then ESP.
        let body = [50, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        assert_eq!(walk(51, &body), (50, 52, None, vec![DecodeEvent::Ipv6ExthdrAhResNotNull]));
        assert_eq!(walk(59, &[1, 2]).3, vec![DecodeEvent::Ipv6DataAfterNoneHeader]);
        assert_eq!(walk(59, &[]).3, vec![]);
        assert_eq!(walk(0, &[6, 1, 0, 0, 0, 0, 0, 0]).3, vec![DecodeEvent::Ipv6TruncExthdr]);
        assert_eq!(walk(0, &[6]).3, vec![DecodeEvent::Ipv6TruncExthdr]);
        assert_eq!(walk(200, &[]).3, vec![DecodeEvent::Ipv6UnknownNextHeader]);
    }
}
