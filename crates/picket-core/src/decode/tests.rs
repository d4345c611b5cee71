//! Whole-packet tests: packets built with etherparse (which computes lengths and
//! checksums independently of our code) or by hand where etherparse refuses to build
//! malformed input.

use super::*;
use etherparse::{IpHeaders, Ipv4Header, Ipv6Header, PacketBuilder, TcpOptionElement, VlanId};
use proptest::prelude::*;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];
const V6_A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn opts() -> DecodeOptions {
    DecodeOptions::default()
}

fn events(d: &Decoded<'_>) -> Vec<DecodeEvent> {
    d.events.iter().collect()
}

fn eth_v4_tcp_syn(payload: &[u8]) -> Vec<u8> {
    let builder = PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv4([192, 168, 1, 1], [10, 0, 0, 2], 64)
        .tcp(40000, 443, 1000, 64240)
        .syn()
        .options(&[
            TcpOptionElement::MaximumSegmentSize(1460),
            TcpOptionElement::SelectiveAcknowledgementPermitted,
            TcpOptionElement::Timestamp(111, 0),
            TcpOptionElement::Noop,
            TcpOptionElement::WindowScale(7),
        ])
        .unwrap();
    let mut out = Vec::new();
    builder.write(&mut out, payload).unwrap();
    out
}

fn eth_v4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B).ipv4(src, dst, 64).udp(sport, dport).write(&mut out, payload).unwrap();
    out
}

fn eth_v6_udp(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B).ipv6(V6_A, V6_B, 64).udp(5353, 53).write(&mut out, payload).unwrap();
    out
}

/// Inserts an extension-header chain after the IPv6 fixed header at `ip_start`. `chain`
/// must end with a header whose next-header byte is the packet's original next header.
fn insert_ipv6_ext(packet: &mut Vec<u8>, ip_start: usize, first_type: u8, chain: &[u8]) {
    let payload_len = u16::from_be_bytes([packet[ip_start + 4], packet[ip_start + 5]]) as usize + chain.len();
    packet[ip_start + 4..ip_start + 6].copy_from_slice(&(payload_len as u16).to_be_bytes());
    packet[ip_start + 6] = first_type;
    let at = ip_start + 40;
    packet.splice(at..at, chain.iter().copied());
}

fn is_subslice(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    inner.is_empty() || (i >= o && i + inner.len() <= o + outer.len())
}

#[test]
fn ethernet_ipv4_tcp_syn_with_options() {
    let pkt = eth_v4_tcp_syn(b"hello");
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![]);
    assert!(!d.bad_checksum && !d.fragment);
    let Some(IpLayer::V4(ip)) = d.ip else { panic!("no IPv4") };
    assert_eq!((ip.version(), ip.header_len(), ip.ttl(), ip.protocol()), (4, 20, 64, 6));
    assert_eq!(ip.total_len() as usize, pkt.len() - 14);
    assert_eq!((ip.src(), ip.dst()), ([192, 168, 1, 1], [10, 0, 0, 2]));
    let L4::Tcp(tcp) = d.l4 else { panic!("no TCP") };
    assert_eq!((tcp.src_port(), tcp.dst_port(), tcp.seq(), tcp.window()), (40000, 443, 1000, 64240));
    assert_eq!(tcp.flags(), tcp::SYN);
    assert_eq!(tcp.header_len(), 40);
    let options: Vec<_> = tcp.options().map(Result::unwrap).collect();
    assert_eq!(
        options,
        vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::Timestamp { value: 111, echo: 0 },
            TcpOption::WindowScale(7),
        ]
    );
    assert_eq!(d.payload, b"hello");
    let t = d.tuple().unwrap();
    assert_eq!(t.src_ip(), "192.168.1.1".parse::<std::net::IpAddr>().unwrap());
    assert_eq!(t.dst_ip(), "10.0.0.2".parse::<std::net::IpAddr>().unwrap());
    assert_eq!((t.src_port, t.dst_port, t.proto, t.is_v4), (40000, 443, 6, true));
    assert_eq!(&t.src[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
    assert_eq!(t.reversed().reversed(), t);
    assert_eq!(d.ip_proto(), Some(6));
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut pkt = eth_v4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1234, 53, b"ab");
    assert!(pkt.len() < 60);
    pkt.resize(60, 0);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![]);
    assert!(!d.bad_checksum);
    assert_eq!(d.payload, b"ab");
    let L4::Udp(udp) = d.l4 else { panic!("no UDP") };
    assert_eq!((udp.src_port(), udp.dst_port(), udp.length()), (1234, 53, 10));
}

#[test]
fn checksum_errors_are_detected_and_optional() {
    let good = eth_v4_tcp_syn(b"hello");
    let mut bad_tcp = good.clone();
    *bad_tcp.last_mut().unwrap() ^= 0x55;
    assert!(decode(LinkType::Ethernet, &bad_tcp, &opts()).bad_checksum);
    let no_check = DecodeOptions { validate_checksums: false, ..DecodeOptions::default() };
    assert!(!decode(LinkType::Ethernet, &bad_tcp, &no_check).bad_checksum);

    let mut bad_ip = good.clone();
    bad_ip[14 + 8] -= 1; // TTL
    let d = decode(LinkType::Ethernet, &bad_ip, &opts());
    assert!(d.bad_checksum);
    assert!(matches!(d.l4, L4::Tcp(_)), "a bad checksum does not stop decoding");

    let mut bad_udp = eth_v4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, b"xyz");
    *bad_udp.last_mut().unwrap() ^= 1;
    assert!(decode(LinkType::Ethernet, &bad_udp, &opts()).bad_checksum);
    // A zero UDP checksum over IPv4 means "not computed".
    bad_udp[14 + 20 + 6] = 0;
    bad_udp[14 + 20 + 7] = 0;
    assert!(!decode(LinkType::Ethernet, &bad_udp, &opts()).bad_checksum);

    let good6 = eth_v6_udp(b"query");
    assert!(!decode(LinkType::Ethernet, &good6, &opts()).bad_checksum);
    let mut bad6 = good6.clone();
    bad6[14 + 8] ^= 0x80; // source address is in the pseudo-header
    assert!(decode(LinkType::Ethernet, &bad6, &opts()).bad_checksum);
    // Over IPv6 a zero UDP checksum is not allowed.
    let mut zero6 = good6.clone();
    zero6[14 + 40 + 6] = 0;
    zero6[14 + 40 + 7] = 0;
    assert!(decode(LinkType::Ethernet, &zero6, &opts()).bad_checksum);
}

#[test]
fn icmp_echo_both_versions() {
    let mut v4 = Vec::new();
    PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).icmpv4_echo_request(7, 9).write(&mut v4, b"ping").unwrap();
    let d = decode(LinkType::RawIpv4, &v4, &opts());
    assert_eq!(events(&d), vec![]);
    assert!(!d.bad_checksum);
    let L4::Icmpv4(icmp) = d.l4 else { panic!("no ICMPv4") };
    assert_eq!((icmp.icmp_type(), icmp.code(), icmp.echo_id(), icmp.echo_seq()), (8, 0, 7, 9));
    assert_eq!(d.payload, b"ping");
    let t = d.tuple().unwrap();
    assert_eq!((t.src_port, t.dst_port, t.proto), (8, 0, 1), "ICMP type/code ride in the ports");
    v4[20 + 8] ^= 1;
    assert!(decode(LinkType::RawIpv4, &v4, &opts()).bad_checksum);

    let mut v6 = Vec::new();
    PacketBuilder::ipv6(V6_A, V6_B, 64).icmpv6_echo_reply(7, 9).write(&mut v6, b"pong").unwrap();
    let d = decode(LinkType::RawIpv6, &v6, &opts());
    assert_eq!(events(&d), vec![]);
    assert!(!d.bad_checksum);
    let L4::Icmpv6(icmp) = d.l4 else { panic!("no ICMPv6") };
    assert_eq!((icmp.icmp_type(), icmp.echo_seq()), (129, 9));
    let t = d.tuple().unwrap();
    assert_eq!(t.src_ip(), "2001:db8::1".parse::<std::net::IpAddr>().unwrap());
    assert!(!t.is_v4);
    v6[40 + 8] ^= 1;
    assert!(decode(LinkType::RawIpv6, &v6, &opts()).bad_checksum);
}

#[test]
fn icmp_in_the_wrong_ip_version() {
    // ICMPv4 (protocol 1) inside IPv6.
    let mut v6 = Vec::new();
    PacketBuilder::ipv6(V6_A, V6_B, 64).udp(1, 2).write(&mut v6, &[0; 8]).unwrap();
    v6[6] = 1;
    let d = decode(LinkType::RawIpv6, &v6, &opts());
    assert!(d.events.contains(DecodeEvent::Ipv6Icmpv4));
    assert!(matches!(d.l4, L4::Other(1)));
    // ICMPv6 (58) inside IPv4: change the protocol and fix the header checksum.
    let mut hdr = Ipv4Header::new(8, 64, etherparse::IpNumber(58), [1, 2, 3, 4], [5, 6, 7, 8]).unwrap();
    hdr.header_checksum = hdr.calc_header_checksum();
    let mut v4 = hdr.to_bytes().to_vec();
    v4.extend_from_slice(&[128, 0, 0, 0, 0, 0, 0, 0]);
    let d = decode(LinkType::RawIpv4, &v4, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv4Icmpv6]);
    assert!(!d.bad_checksum);
}

#[test]
fn vlan_single_and_qinq() {
    let mut single = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .single_vlan(VlanId::try_new(100).unwrap())
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64)
        .udp(1, 2)
        .write(&mut single, b"x")
        .unwrap();
    let d = decode(LinkType::Ethernet, &single, &opts());
    assert_eq!((d.vlan, d.vlan_depth, d.outer_vlan()), ([100, 0, 0], 1, Some(100)));
    assert!(matches!(d.l4, L4::Udp(_)) && d.events.is_empty());

    let mut qinq = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .double_vlan(VlanId::try_new(10).unwrap(), VlanId::try_new(4000).unwrap())
        .ipv6(V6_A, V6_B, 64)
        .udp(1, 2)
        .write(&mut qinq, b"x")
        .unwrap();
    assert_eq!(&qinq[12..14], &[0x88, 0xa8]);
    let d = decode(LinkType::Ethernet, &qinq, &opts());
    assert_eq!((d.vlan, d.vlan_depth), ([10, 4000, 0], 2));
    assert!(matches!(d.l4, L4::Udp(_)) && d.events.is_empty() && !d.bad_checksum);

    // A third tag (0x9100 outermost) is kept, as Suricata keeps three.
    let mut triple = qinq[..12].to_vec();
    triple.extend_from_slice(&[0x91, 0x00, 0x00, 0x05]);
    triple.extend_from_slice(&qinq[12..]);
    let d = decode(LinkType::Ethernet, &triple, &opts());
    assert_eq!((d.vlan, d.vlan_depth), ([5, 10, 4000], 3));
    assert!(matches!(d.l4, L4::Udp(_)) && d.events.is_empty());
    // A fourth stops decoding.
    let mut quad = triple[..12].to_vec();
    quad.extend_from_slice(&[0x91, 0x00, 0x00, 0x07]);
    quad.extend_from_slice(&triple[12..]);
    let d = decode(LinkType::Ethernet, &quad, &opts());
    assert_eq!((d.vlan, d.vlan_depth), ([7, 5, 10], 4));
    assert_eq!(events(&d), vec![DecodeEvent::VlanTooManyLayers]);
    assert!(d.ip.is_none());

    let d = decode(LinkType::Ethernet, &single[..16], &opts());
    assert_eq!(events(&d), vec![DecodeEvent::VlanHeaderTooSmall]);
}

#[test]
fn non_ip_ethertypes() {
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&MAC_A);
    frame.extend_from_slice(&[0x08, 0x06]); // ARP
    frame.extend_from_slice(&[0; 28]);
    let d = decode(LinkType::Ethernet, &frame, &opts());
    assert!(d.events.is_empty() && d.ip.is_none() && d.tuple().is_none());

    frame[12..14].copy_from_slice(&[0x80, 0x35]); // RARP: not decoded, not whitelisted
    assert_eq!(events(&decode(LinkType::Ethernet, &frame, &opts())), vec![DecodeEvent::EthernetUnknownEthertype]);

    frame[12..14].copy_from_slice(&[0x00, 0x26]); // 802.3 length
    assert_eq!(events(&decode(LinkType::Ethernet, &frame, &opts())), vec![DecodeEvent::EthernetIeee8023Frame]);

    let mut tagged = frame[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x07, 0x80, 0x35, 0, 0]);
    let d = decode(LinkType::Ethernet, &tagged, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::EthernetUnknownEthertype, DecodeEvent::VlanUnknownType]);
    assert_eq!(d.vlan[0], 7);
}

#[test]
fn ip_inside_the_wrong_ethertype() {
    let mut pkt = eth_v6_udp(b"x");
    pkt[12..14].copy_from_slice(&[0x08, 0x00]);
    assert_eq!(events(&decode(LinkType::Ethernet, &pkt, &opts())), vec![DecodeEvent::Ipv4WrongIpVersion]);
    let mut pkt = eth_v4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &[0; 30]);
    pkt[12..14].copy_from_slice(&[0x86, 0xdd]);
    assert_eq!(events(&decode(LinkType::Ethernet, &pkt, &opts())), vec![DecodeEvent::Ipv6WrongIpVersion]);
}

/// The IP packet inside `eth_v4_udp`, wrapped in each link type.
#[test]
fn every_link_type() {
    let eth = eth_v4_udp([10, 1, 1, 1], [10, 2, 2, 2], 5000, 53, b"dns");
    let ip = &eth[14..];
    let ip6_eth = eth_v6_udp(b"dns");
    let ip6 = &ip6_eth[14..];
    let check = |link: LinkType, data: &[u8], v4: bool| {
        let d = decode(link, data, &opts());
        assert_eq!(events(&d), vec![], "{link:?}");
        assert!(!d.bad_checksum, "{link:?}");
        assert_eq!(d.payload, b"dns", "{link:?}");
        assert_eq!(d.tuple().unwrap().is_v4, v4, "{link:?}");
        assert_eq!(flow_hash(link, data), flow_hash(LinkType::Ethernet, if v4 { &eth } else { &ip6_eth }), "{link:?}");
    };
    check(LinkType::Ethernet, &eth, true);
    check(LinkType::RawIp, ip, true);
    check(LinkType::RawIp, ip6, false);
    check(LinkType::RawIpv4, ip, true);
    check(LinkType::RawIpv6, ip6, false);

    let mut sll = Vec::new();
    PacketBuilder::linux_sll(etherparse::LinuxSllPacketType::OTHERHOST, 6, [1, 2, 3, 4, 5, 6, 0, 0])
        .ipv4([10, 1, 1, 1], [10, 2, 2, 2], 64)
        .udp(5000, 53)
        .write(&mut sll, b"dns")
        .unwrap();
    assert_eq!(sll.len(), 16 + ip.len());
    check(LinkType::LinuxSll, &sll, true);

    // SLL2: protocol, reserved, ifindex, hatype, pkttype, halen, address[8].
    let mut sll2 = vec![0x86, 0xdd, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6];
    sll2.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
    sll2.extend_from_slice(ip6);
    check(LinkType::LinuxSll2, &sll2, false);

    for (header, v4) in [([2u8, 0, 0, 0], true), ([0, 0, 0, 2], true), ([30, 0, 0, 0], false), ([0, 0, 0, 24], false)] {
        let mut null = header.to_vec();
        null.extend_from_slice(if v4 { ip } else { ip6 });
        check(LinkType::Null, &null, v4);
    }
    let mut lo = vec![0, 0, 0, 28];
    lo.extend_from_slice(ip6);
    check(LinkType::Loop, &lo, false);
    // Loop is network order only.
    lo[..4].copy_from_slice(&[28, 0, 0, 0]);
    assert_eq!(events(&decode(LinkType::Loop, &lo, &opts())), vec![DecodeEvent::LtnullUnsupportedType]);
    assert_eq!(events(&decode(LinkType::Null, &[2, 0, 0], &opts())), vec![DecodeEvent::LtnullPktTooSmall]);
    assert_eq!(events(&decode(LinkType::LinuxSll, &sll[..15], &opts())), vec![DecodeEvent::SllPktTooSmall]);
    assert_eq!(events(&decode(LinkType::LinuxSll2, &sll2[..19], &opts())), vec![DecodeEvent::SllPktTooSmall]);
    assert_eq!(events(&decode(LinkType::RawIp, &[0x50; 40], &opts())), vec![DecodeEvent::IprawInvalidIpVersion]);
    assert_eq!(events(&decode(LinkType::RawIp, &[], &opts())), vec![DecodeEvent::IprawInvalidIpVersion]);
    let d = decode(LinkType::Unsupported(147), &eth, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::LinkUnsupportedType]);
    assert!(d.ip.is_none());
    assert_eq!(flow_hash(LinkType::Unsupported(147), &eth), 0);
}

#[test]
fn ipv4_fragments_are_flagged_not_decoded() {
    let mut hdr = Ipv4Header::new(16, 64, etherparse::IpNumber::UDP, [1, 1, 1, 1], [2, 2, 2, 2]).unwrap();
    hdr.more_fragments = true;
    hdr.identification = 77;
    hdr.header_checksum = hdr.calc_header_checksum();
    let mut first = hdr.to_bytes().to_vec();
    first.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0, 40, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let d = decode(LinkType::RawIpv4, &first, &opts());
    assert!(d.fragment && d.events.is_empty() && !d.bad_checksum);
    assert!(matches!(d.l4, L4::Other(17)) && d.payload.is_empty());
    let t = d.tuple().unwrap();
    assert_eq!((t.src_port, t.dst_port, t.proto), (0, 0, 17));

    hdr.more_fragments = false;
    hdr.fragment_offset = etherparse::IpFragOffset::try_new(2).unwrap();
    hdr.header_checksum = hdr.calc_header_checksum();
    let mut last = hdr.to_bytes().to_vec();
    last.extend_from_slice(&[9; 16]);
    let d = decode(LinkType::RawIpv4, &last, &opts());
    let Some(IpLayer::V4(ip)) = d.ip else { panic!() };
    assert_eq!((ip.frag_offset(), ip.more_fragments(), ip.id()), (2, false, 77));
    assert!(d.fragment && d.payload.is_empty());
    // All fragments of a datagram go to the same worker.
    assert_eq!(flow_hash(LinkType::RawIpv4, &first), flow_hash(LinkType::RawIpv4, &last));
}

#[test]
fn ipv4_options_in_a_packet() {
    let mut hdr = Ipv4Header::new(8, 64, etherparse::IpNumber::UDP, [1, 1, 1, 1], [2, 2, 2, 2]).unwrap();
    // Router alert twice: a duplicate.
    hdr.options = [148, 4, 0, 0, 148, 4, 0, 0].into();
    hdr.total_len = 28 + 8;
    hdr.header_checksum = hdr.calc_header_checksum();
    let mut pkt = hdr.to_bytes().to_vec();
    let mut udp = Vec::new();
    PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64).udp(7, 7).write(&mut udp, &[]).unwrap();
    pkt.extend_from_slice(&udp[20..]);
    let d = decode(LinkType::RawIpv4, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv4OptDuplicate]);
    let Some(IpLayer::V4(ip)) = d.ip else { panic!() };
    assert_eq!(ip.header_len(), 28);
    assert_eq!(ip.options().count(), 2);
    assert!(matches!(d.l4, L4::Udp(_)), "options do not hide the transport layer");
    assert!(!d.bad_checksum);
}

#[test]
fn ipv4_length_anomalies() {
    let pkt = eth_v4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, b"abcd");
    let mut small = pkt.clone();
    small[14 + 2..14 + 4].copy_from_slice(&16u16.to_be_bytes());
    let d =
        decode(LinkType::Ethernet, &small, &DecodeOptions { validate_checksums: false, ..DecodeOptions::default() });
    assert_eq!(events(&d), vec![DecodeEvent::Ipv4IplenSmallerThanHlen]);
    assert!(matches!(d.l4, L4::None));
    let mut ihl = pkt.clone();
    ihl[14] = 0x44;
    assert_eq!(events(&decode(LinkType::Ethernet, &ihl, &opts())), vec![DecodeEvent::Ipv4HlenTooSmall]);
}

#[test]
fn udp_length_anomalies() {
    let pkt = eth_v4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, b"abcd");
    let no_csum = DecodeOptions { validate_checksums: false, ..DecodeOptions::default() };
    let mut long = pkt.clone();
    long[14 + 20 + 5] = 50;
    let d = decode(LinkType::Ethernet, &long, &no_csum);
    assert_eq!(events(&d), vec![DecodeEvent::UdpHlenInvalid]);
    assert_eq!(d.payload, b"abcd", "payload stays within the IP packet");
    let mut short = pkt.clone();
    short[14 + 20 + 5] = 3;
    let d = decode(LinkType::Ethernet, &short, &no_csum);
    assert_eq!(events(&d), vec![DecodeEvent::UdpHlenTooSmall]);
    assert!(d.payload.is_empty());
    // UDP length shorter than the IP payload: trailing bytes are not payload.
    let mut trailer = pkt.clone();
    trailer[14 + 20 + 5] = 10;
    let d = decode(LinkType::Ethernet, &trailer, &no_csum);
    assert!(d.events.is_empty());
    assert_eq!(d.payload, b"ab");
}

#[test]
fn tcp_option_anomalies_in_a_packet() {
    let mut out = Vec::new();
    PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64)
        .tcp(1, 2, 3, 4)
        .options_raw(&[2, 4, 5, 0xb4, 2, 4, 5, 0xb4, 8, 3, 0, 0])
        .unwrap()
        .write(&mut out, b"")
        .unwrap();
    let d = decode(LinkType::RawIp, &out, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::TcpOptInvalidLen, DecodeEvent::TcpOptDuplicate]);
    assert!(!d.bad_checksum);
    assert!(matches!(d.l4, L4::Tcp(_)));
}

#[test]
fn ipv6_extension_headers_keep_transport_and_checksum() {
    let mut pkt = eth_v6_udp(b"payload");
    // Hop-by-hop (router alert) -> destination options (PadN) -> UDP.
    let chain = [60, 0, 5, 2, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
    insert_ipv6_ext(&mut pkt, 14, 0, &chain);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv6DstoptsOnlyPadding]);
    assert!(!d.bad_checksum, "pseudo-header length is the UDP length, not the IPv6 payload length");
    let Some(IpLayer::V6(info)) = d.ip else { panic!("no IPv6") };
    assert_eq!((info.upper_proto, info.upper_offset, info.header.next_header()), (17, 56, 0));
    assert_eq!(d.payload, b"payload");
    assert_eq!(d.ip_proto(), Some(17));
    assert_eq!(d.tuple().unwrap().proto, 17);
}

#[test]
fn ipv6_fragment_header() {
    let mut pkt = eth_v6_udp(b"payload");
    // Fragment header: next UDP, offset 0, M=1, id 0x1234.
    insert_ipv6_ext(&mut pkt, 14, 44, &[17, 0, 0, 1, 0, 0, 0x12, 0x34]);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert!(d.fragment && d.events.is_empty());
    assert!(matches!(d.l4, L4::Other(17)) && d.payload.is_empty());
    let Some(IpLayer::V6(info)) = d.ip else { panic!() };
    assert_eq!(info.fragment, Some(Ipv6Fragment { offset: 0, more: true, id: 0x1234 }));
    let t = d.tuple().unwrap();
    assert_eq!((t.proto, t.src_port, t.dst_port), (17, 0, 0));

    let mut later = eth_v6_udp(b"payload");
    insert_ipv6_ext(&mut later, 14, 44, &[17, 0, 0, 0x10, 0, 0, 0x12, 0x34]);
    assert_eq!(flow_hash(LinkType::Ethernet, &pkt), flow_hash(LinkType::Ethernet, &later));

    // Two fragment headers, the first atomic.
    let mut dup = eth_v6_udp(b"payload");
    insert_ipv6_ext(&mut dup, 14, 44, &[44, 0, 0, 0, 0, 0, 0, 1, 17, 0, 0, 1, 0, 0, 0, 2]);
    let d = decode(LinkType::Ethernet, &dup, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv6ExthdrDuplFh, DecodeEvent::Ipv6ExthdrUselessFh]);
}

#[test]
fn ipv6_with_etherparse_extensions_builder() {
    // Independent check of the walk: let etherparse lay out a hop-by-hop header.
    let mut header = Ipv6Header { source: V6_A, destination: V6_B, hop_limit: 1, ..Default::default() };
    header.next_header = etherparse::IpNumber::IPV6_HEADER_HOP_BY_HOP;
    let hop_by_hop = etherparse::Ipv6RawExtHeader::new_raw(etherparse::IpNumber(0), &[5, 2, 0, 0, 1, 0]).unwrap();
    let ext = etherparse::Ipv6Extensions { hop_by_hop_options: Some(hop_by_hop), ..Default::default() };
    let mut out = Vec::new();
    PacketBuilder::ip(IpHeaders::Ipv6(header, ext)).icmpv6_echo_request(1, 2).write(&mut out, b"").unwrap();
    let d = decode(LinkType::RawIp, &out, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv6ZeroLenPadn]);
    assert!(!d.bad_checksum);
    assert!(matches!(d.l4, L4::Icmpv6(_)));
}

#[test]
fn truncation_at_every_offset_ipv4_tcp() {
    let pkt = eth_v4_tcp_syn(b"hello world");
    let tcp_header_end = 14 + 20 + 40;
    for cut in 0..=pkt.len() {
        let d = decode(LinkType::Ethernet, &pkt[..cut], &opts());
        let ev = events(&d);
        let expected: Vec<DecodeEvent> = match cut {
            c if c < 14 => vec![DecodeEvent::EthernetPktTooSmall],
            c if c < 34 => vec![DecodeEvent::Ipv4PktTooSmall],
            c if c < tcp_header_end => vec![DecodeEvent::Ipv4TruncPkt, DecodeEvent::TcpPktTooSmall],
            c if c < pkt.len() => vec![DecodeEvent::Ipv4TruncPkt],
            _ => vec![],
        };
        assert_eq!(ev, expected, "cut at {cut}");
        assert!(!d.bad_checksum, "truncated segments are not checksummed (cut {cut})");
        if cut >= tcp_header_end {
            assert_eq!(d.payload, &pkt[tcp_header_end..cut]);
        }
    }
}

#[test]
fn truncation_at_every_offset_ipv6_ext_udp() {
    let mut pkt = eth_v6_udp(b"hello");
    insert_ipv6_ext(&mut pkt, 14, 0, &[17, 0, 5, 2, 0, 0, 0, 0]);
    for cut in 0..=pkt.len() {
        let d = decode(LinkType::Ethernet, &pkt[..cut], &opts());
        let expected: Vec<DecodeEvent> = match cut {
            c if c < 14 => vec![DecodeEvent::EthernetPktTooSmall],
            c if c < 54 => vec![DecodeEvent::Ipv6PktTooSmall],
            c if c < 62 => vec![DecodeEvent::Ipv6TruncPkt, DecodeEvent::Ipv6TruncExthdr],
            c if c < 70 => vec![DecodeEvent::Ipv6TruncPkt, DecodeEvent::UdpPktTooSmall],
            c if c < pkt.len() => vec![DecodeEvent::Ipv6TruncPkt],
            _ => vec![],
        };
        assert_eq!(events(&d), expected, "cut at {cut}");
        assert!(!d.bad_checksum);
    }
}

#[test]
fn flow_hash_basics() {
    let a = eth_v4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"q");
    let b = eth_v4_udp([10, 0, 0, 2], [10, 0, 0, 1], 53, 1000, b"answer");
    let other = eth_v4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1001, 53, b"q");
    assert_eq!(flow_hash(LinkType::Ethernet, &a), flow_hash(LinkType::Ethernet, &b));
    assert_ne!(flow_hash(LinkType::Ethernet, &a), flow_hash(LinkType::Ethernet, &other));
    assert_ne!(flow_hash(LinkType::Ethernet, &a), 0);
    // Echo request and reply meet on one worker.
    let mut req = Vec::new();
    PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64).icmpv4_echo_request(1, 1).write(&mut req, b"").unwrap();
    let mut rep = Vec::new();
    PacketBuilder::ipv4([2, 2, 2, 2], [1, 1, 1, 1], 64).icmpv4_echo_reply(1, 1).write(&mut rep, b"").unwrap();
    assert_eq!(flow_hash(LinkType::RawIp, &req), flow_hash(LinkType::RawIp, &rep));
    // VLAN is part of the flow.
    let mut tagged = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .single_vlan(VlanId::try_new(5).unwrap())
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(1000, 53)
        .write(&mut tagged, b"q")
        .unwrap();
    assert_ne!(flow_hash(LinkType::Ethernet, &a), flow_hash(LinkType::Ethernet, &tagged));
    // ...unless `vlan.use-for-tracking` is off.
    let untracked = DecodeOptions { track_vlan: false, ..DecodeOptions::DEFAULT };
    assert_eq!(
        flow_hash_with(LinkType::Ethernet, &a, &untracked),
        flow_hash_with(LinkType::Ethernet, &tagged, &untracked)
    );
    // Non-IP and garbage.
    assert_eq!(flow_hash(LinkType::Ethernet, &[0xff; 10]), 0);
    let mut arp = a.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(flow_hash(LinkType::Ethernet, &arp), 0);
}

#[test]
fn flow_hash_spreads_flows() {
    let mut seen = std::collections::HashSet::new();
    for i in 0..2000u16 {
        let pkt = eth_v4_udp([10, 0, (i >> 8) as u8, i as u8], [10, 9, 9, 9], 1024 + i, 80, b"");
        seen.insert(flow_hash(LinkType::Ethernet, &pkt) % 64);
    }
    assert_eq!(seen.len(), 64, "2000 flows should reach every one of 64 workers");
}

fn v4_packet(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, tcp: bool, vlan: Option<u16>) -> Vec<u8> {
    let base = PacketBuilder::ethernet2(MAC_A, MAC_B);
    let mut out = Vec::new();
    match vlan {
        Some(id) => {
            let ip = base.single_vlan(VlanId::try_new(id).unwrap()).ipv4(src, dst, 64);
            if tcp {
                ip.tcp(sport, dport, 1, 1).write(&mut out, b"x")
            } else {
                ip.udp(sport, dport).write(&mut out, b"x")
            }
        }
        None => {
            let ip = base.ipv4(src, dst, 64);
            if tcp {
                ip.tcp(sport, dport, 1, 1).write(&mut out, b"x")
            } else {
                ip.udp(sport, dport).write(&mut out, b"x")
            }
        }
    }
    .unwrap();
    out
}

fn v6_packet(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, tcp: bool) -> Vec<u8> {
    let ip = PacketBuilder::ipv6(src, dst, 64);
    let mut out = Vec::new();
    if tcp { ip.tcp(sport, dport, 1, 1).write(&mut out, b"x") } else { ip.udp(sport, dport).write(&mut out, b"x") }
        .unwrap();
    out
}

const ALL_LINKS: [LinkType; 9] = [
    LinkType::Ethernet,
    LinkType::RawIp,
    LinkType::RawIpv4,
    LinkType::RawIpv6,
    LinkType::LinuxSll,
    LinkType::LinuxSll2,
    LinkType::Null,
    LinkType::Loop,
    LinkType::Unsupported(9999),
];

/// Invariants any decode result must hold, whatever the input.
fn check_invariants(data: &[u8], d: &Decoded<'_>) {
    assert!(is_subslice(data, d.payload));
    if d.fragment {
        assert!(d.payload.is_empty());
        assert!(matches!(d.l4, L4::Other(_)));
    }
    if d.ip.is_none() {
        assert!(matches!(d.l4, L4::None) && d.tuple().is_none());
    }
    assert!(d.vlan_depth <= 3);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn flow_hash_is_symmetric_v4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, tcp: bool, vlan in proptest::option::of(0u16..4095)) {
        let ab = v4_packet(src, dst, sport, dport, tcp, vlan);
        let ba = v4_packet(dst, src, dport, sport, tcp, vlan);
        prop_assert_eq!(flow_hash(LinkType::Ethernet, &ab), flow_hash(LinkType::Ethernet, &ba));
        // And it agrees with what decode reports.
        let d = decode(LinkType::Ethernet, &ab, &opts());
        let t = d.tuple().unwrap();
        prop_assert_eq!((t.src_port, t.dst_port), (sport, dport));
        prop_assert!(!d.bad_checksum);
    }

    #[test]
    fn flow_hash_is_symmetric_v6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, tcp: bool) {
        let ab = v6_packet(src, dst, sport, dport, tcp);
        let ba = v6_packet(dst, src, dport, sport, tcp);
        prop_assert_eq!(flow_hash(LinkType::RawIpv6, &ab), flow_hash(LinkType::RawIpv6, &ba));
        let t = decode(LinkType::RawIpv6, &ab, &opts()).tuple().unwrap();
        prop_assert_eq!(t.reversed(), decode(LinkType::RawIpv6, &ba, &opts()).tuple().unwrap());
    }

    #[test]
    fn decode_survives_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        for link in ALL_LINKS {
            let d = decode(link, &data, &opts());
            check_invariants(&data, &d);
            let _ = flow_hash(link, &data);
        }
    }

    /// Random bytes behind a plausible IP header reach the deeper layers far more often.
    #[test]
    fn decode_survives_random_ip_bodies(
        first in prop_oneof![0x40u8..0x50, Just(0x60u8)],
        proto in prop_oneof![Just(0u8), Just(1), Just(6), Just(17), Just(43), Just(44), Just(58), Just(60), Just(51), any::<u8>()],
        frag_bytes: [u8; 2],
        rest in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut data = vec![first, 0, 0, 0, frag_bytes[0], frag_bytes[1], proto, 64];
        data.extend_from_slice(&rest);
        let len = data.len() as u16;
        if first == 0x60 {
            data[4..6].copy_from_slice(&len.saturating_sub(40).to_be_bytes());
        } else if data.len() >= 20 {
            data[2..4].copy_from_slice(&len.to_be_bytes());
            data[6] = frag_bytes[0] & 0x40; // mostly not fragments
            data[9] = proto;
        }
        for link in [LinkType::RawIp, LinkType::RawIpv4, LinkType::RawIpv6] {
            let d = decode(link, &data, &opts());
            check_invariants(&data, &d);
            let _ = flow_hash(link, &data);
        }
    }

    #[test]
    fn decode_survives_mutated_packets(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        for base in [eth_v4_tcp_syn(b"some data"), eth_v6_udp(b"udp data")] {
            let mut pkt = base.clone();
            for (at, value) in &flips {
                let i = at % pkt.len();
                pkt[i] = *value;
            }
            pkt.truncate(cut % (pkt.len() + 1));
            let d = decode(LinkType::Ethernet, &pkt, &opts());
            check_invariants(&pkt, &d);
            let _ = flow_hash(LinkType::Ethernet, &pkt);
        }
    }
}

/// SCTP flows are keyed by their ports (the common header's), as Suricata keys them.
#[test]
fn sctp_ports_in_the_tuple() {
    let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    // IPv4, 20-byte header, total length 32, protocol 132.
    frame.extend_from_slice(&[0x45, 0, 0, 32, 0, 1, 0, 0, 64, 132, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    // SCTP common header: ports 7 -> 9, verification tag, checksum.
    frame.extend_from_slice(&[0, 7, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0]);
    let d = decode(LinkType::Ethernet, &frame, &DecodeOptions::default());
    let t = d.tuple().expect("an IP packet");
    assert_eq!((t.proto, t.src_port, t.dst_port), (132, 7, 9));
    // A header cut short keeps ports 0.
    let short = &frame[..frame.len() - 10];
    let mut cut = short.to_vec();
    cut[16..18].copy_from_slice(&22u16.to_be_bytes());
    let t = decode(LinkType::Ethernet, &cut, &DecodeOptions::default()).tuple().expect("an IP packet");
    assert_eq!((t.src_port, t.dst_port), (0, 0));
}
