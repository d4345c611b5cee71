//! ICMPv4 (RFC 792) and ICMPv6 (RFC 4443) header view and type/code checks.

use super::events::{DecodeEvent, EventSet};

pub const ICMP_HEADER_LEN: usize = 8;

/// A checked ICMP message (either version): the 8-byte header captured.
#[derive(Clone, Copy, Debug)]
pub struct IcmpView<'a> {
    data: &'a [u8],
}

impl<'a> IcmpView<'a> {
    /// An ICMPv4 message; too short raises `icmpv4.pkt_too_small`.
    pub fn new_v4(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        Self::checked(data, DecodeEvent::Icmpv4PktTooSmall)
    }

    /// An ICMPv6 message; too short raises `icmpv6.pkt_too_small`.
    pub fn new_v6(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        Self::checked(data, DecodeEvent::Icmpv6PktTooSmall)
    }

    fn checked(data: &'a [u8], too_small: DecodeEvent) -> Result<Self, DecodeEvent> {
        if data.len() < ICMP_HEADER_LEN {
            return Err(too_small);
        }
        Ok(IcmpView { data })
    }

    pub fn icmp_type(&self) -> u8 {
        self.data[0]
    }
    pub fn code(&self) -> u8 {
        self.data[1]
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.data[2], self.data[3]])
    }
    /// Bytes 4..8, whose meaning depends on the type.
    pub fn rest_of_header(&self) -> [u8; 4] {
        [self.data[4], self.data[5], self.data[6], self.data[7]]
    }
    /// Identifier of an echo request/reply.
    pub fn echo_id(&self) -> u16 {
        u16::from_be_bytes([self.data[4], self.data[5]])
    }
    /// Sequence number of an echo request/reply.
    pub fn echo_seq(&self) -> u16 {
        u16::from_be_bytes([self.data[6], self.data[7]])
    }
    /// Data after the 8-byte header (for errors: the quoted packet).
    pub fn payload(&self) -> &'a [u8] {
        &self.data[ICMP_HEADER_LEN..]
    }
    /// The whole message, for the checksum.
    pub fn message(&self) -> &'a [u8] {
        self.data
    }
}

/// Type/code validity and the quoted header of error messages (ICMPv4), as Suricata
/// checks them: a type it does not know (router solicitation among them) is
/// `unknown_type`; the quoted IPv4 header of an error is only looked at when the code is
/// valid and something follows the ICMP header (a source quench always quotes); the
/// timestamp messages must hold their 12 bytes of timestamps.
pub fn check_icmpv4(view: &IcmpView<'_>, events: &mut EventSet) {
    let code = view.code();
    let quoted = view.payload();
    let (max_code, quotes_ip) = match view.icmp_type() {
        0 | 8 => (0, false),           // echo reply / request
        3 => (15, !quoted.is_empty()), // destination unreachable
        4 => (0, true),                // source quench
        5 => (3, !quoted.is_empty()),  // redirect
        9 => (255, false),             // router advertisement: codes not checked
        11 => (1, !quoted.is_empty()), // time exceeded
        12 => (0, !quoted.is_empty()), // parameter problem
        13 | 14 => {
            // timestamp request / reply: three 32-bit timestamps after the header
            if quoted.len() < 12 {
                events.insert(DecodeEvent::Icmpv4Ipv4TruncPkt);
            }
            (0, false)
        }
        15..=18 => (0, false), // information, address mask
        _ => {
            events.insert(DecodeEvent::Icmpv4UnknownType);
            return;
        }
    };
    if code > max_code {
        events.insert(DecodeEvent::Icmpv4UnknownCode);
    } else if quotes_ip {
        if quoted.len() < 20 {
            events.insert(DecodeEvent::Icmpv4Ipv4TruncPkt);
        } else if quoted[0] >> 4 != 4 {
            events.insert(DecodeEvent::Icmpv4Ipv4UnknownVer);
        }
    }
}

/// Type/code validity, MLD hop limit and the quoted header of error messages (ICMPv6).
pub fn check_icmpv6(view: &IcmpView<'_>, hop_limit: u8, events: &mut EventSet) {
    let code = view.code();
    let (max_code, quotes_ip) = match view.icmp_type() {
        1 => (8, true),  // destination unreachable
        2 => (0, true),  // packet too big
        3 => (1, true),  // time exceeded
        4 => (10, true), // parameter problem
        128 | 129 => (0, false),
        130..=132 | 143 => {
            // MLD must stay on the link (RFC 2710 / 3810).
            if hop_limit != 1 {
                events.insert(DecodeEvent::Icmpv6MldMessageWithInvalidHl);
            }
            (0, false)
        }
        133..=137 => (0, false), // neighbour discovery
        138 => (255, false),     // router renumbering: codes 0, 1, 255
        139 | 140 => (2, false), // node information
        141..=142 | 144..=161 => (255, false),
        100 | 101 | 200 | 201 => {
            events.insert(DecodeEvent::Icmpv6ExperimentationType);
            return;
        }
        5..=99 | 102..=126 | 162..=199 | 202..=254 => {
            events.insert(DecodeEvent::Icmpv6UnassignedType);
            return;
        }
        _ => {
            // 0, 127, 255: reserved.
            events.insert(DecodeEvent::Icmpv6UnknownType);
            return;
        }
    };
    if code > max_code {
        events.insert(DecodeEvent::Icmpv6UnknownCode);
    }
    if quotes_ip {
        let quoted = view.payload();
        if quoted.len() < 40 {
            events.insert(DecodeEvent::Icmpv6Ipv6TruncPkt);
        } else if quoted[0] >> 4 != 6 {
            events.insert(DecodeEvent::Icmpv6Ipv6UnknownVersion);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_events(msg: &[u8]) -> Vec<DecodeEvent> {
        let mut ev = EventSet::new();
        check_icmpv4(&IcmpView::new_v4(msg).unwrap(), &mut ev);
        ev.iter().collect()
    }

    fn v6_events(msg: &[u8], hop_limit: u8) -> Vec<DecodeEvent> {
        let mut ev = EventSet::new();
        check_icmpv6(&IcmpView::new_v6(msg).unwrap(), hop_limit, &mut ev);
        ev.iter().collect()
    }

    #[test]
    fn echo_accessors() {
        let m = [8, 0, 0xf7, 0xfd, 0, 1, 0, 2, b'x'];
        let v = IcmpView::new_v4(&m).unwrap();
        assert_eq!((v.icmp_type(), v.code(), v.checksum(), v.echo_id(), v.echo_seq()), (8, 0, 0xf7fd, 1, 2));
        assert_eq!(v.rest_of_header(), [0, 1, 0, 2]);
        assert_eq!(v.payload(), b"x");
        assert_eq!(IcmpView::new_v6(&m[..7]).unwrap_err(), DecodeEvent::Icmpv6PktTooSmall);
    }

    #[test]
    fn icmpv4_checks() {
        assert!(v4_events(&[8, 0, 0, 0, 0, 0, 0, 0]).is_empty());
        assert_eq!(v4_events(&[8, 1, 0, 0, 0, 0, 0, 0]), vec![DecodeEvent::Icmpv4UnknownCode]);
        assert_eq!(v4_events(&[42, 0, 0, 0, 0, 0, 0, 0]), vec![DecodeEvent::Icmpv4UnknownType]);
        assert_eq!(v4_events(&[3, 3, 0, 0, 0, 0, 0, 0, 0x45]), vec![DecodeEvent::Icmpv4Ipv4TruncPkt]);
        let mut unreachable = vec![3, 3, 0, 0, 0, 0, 0, 0];
        unreachable.extend_from_slice(&[0x65; 28]);
        assert_eq!(v4_events(&unreachable), vec![DecodeEvent::Icmpv4Ipv4UnknownVer]);
        unreachable[8] = 0x45;
        assert!(v4_events(&unreachable).is_empty());
        // Nothing quoted: not looked at, except by a source quench.
        assert!(v4_events(&[3, 3, 0, 0, 0, 0, 0, 0]).is_empty());
        assert_eq!(v4_events(&[4, 0, 0, 0, 0, 0, 0, 0]), vec![DecodeEvent::Icmpv4Ipv4TruncPkt]);
        // A code out of range: the quote is not looked at.
        let mut redirect = vec![5, 213, 0, 0, 0, 0, 0, 0];
        redirect.extend_from_slice(&[0x65; 28]);
        assert_eq!(v4_events(&redirect), vec![DecodeEvent::Icmpv4UnknownCode]);
        // Router solicitation is not a type Suricata knows; a timestamp needs its 12 bytes.
        assert_eq!(v4_events(&[10, 0, 0, 0, 0, 0, 0, 0]), vec![DecodeEvent::Icmpv4UnknownType]);
        assert_eq!(v4_events(&[13, 0, 0, 0, 0, 0, 0, 0, 1, 2]), vec![DecodeEvent::Icmpv4Ipv4TruncPkt]);
        assert!(v4_events(&[14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_empty());
    }

    #[test]
    fn icmpv6_checks() {
        assert!(v6_events(&[128, 0, 0, 0, 0, 0, 0, 0], 64).is_empty());
        assert_eq!(v6_events(&[128, 3, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6UnknownCode]);
        assert_eq!(v6_events(&[130, 0, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6MldMessageWithInvalidHl]);
        assert!(v6_events(&[130, 0, 0, 0, 0, 0, 0, 0], 1).is_empty());
        assert_eq!(v6_events(&[50, 0, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6UnassignedType]);
        assert_eq!(v6_events(&[200, 0, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6ExperimentationType]);
        assert_eq!(v6_events(&[0, 0, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6UnknownType]);
        assert_eq!(v6_events(&[1, 4, 0, 0, 0, 0, 0, 0], 64), vec![DecodeEvent::Icmpv6Ipv6TruncPkt]);
        let mut too_big = vec![2, 0, 0, 0, 0, 0, 5, 0xdc];
        too_big.extend_from_slice(&[0x45; 40]);
        assert_eq!(v6_events(&too_big, 64), vec![DecodeEvent::Icmpv6Ipv6UnknownVersion]);
    }
}
