//! Reject replies built from packets made with etherparse and parsed back with it: addresses,
//! ports, sequence numbers, flags, checksums and ICMP quotes.

use super::*;
use etherparse::{
    Icmpv4Header, Icmpv4Type, Icmpv6Header, Icmpv6Type, IpNumber, NetHeaders, PacketBuilder, PacketHeaders,
    TransportHeader, VlanId,
};

const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0c];
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x5e];
const CLIENT4: [u8; 4] = [192, 168, 1, 10];
const SERVER4: [u8; 4] = [10, 0, 0, 80];
const CLIENT6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0c];
const SERVER6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x50];
const CLIENT_PORT: u16 = 40000;
const SERVER_PORT: u16 = 80;
const SEQ: u32 = 0xfffffff0; // wraps when the segment's length is added
const ACK_NO: u32 = 7000;

const TO_SOURCE: Reject = Reject { reply: RejectReply::TcpReset, to: RejectTarget::Source };
const TO_DESTINATION: Reject = Reject { reply: RejectReply::TcpReset, to: RejectTarget::Destination };
const TO_BOTH: Reject = Reject { reply: RejectReply::TcpReset, to: RejectTarget::Both };
const ICMP_SOURCE: Reject = Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Source };
const ICMP_DESTINATION: Reject = Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Destination };
const ICMP_BOTH: Reject = Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Both };

/// TCP flags of a test segment.
#[derive(Clone, Copy, Default)]
struct Flags {
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
}

const DATA: Flags = Flags { syn: false, ack: true, fin: false, rst: false };

/// A client-to-server TCP segment over Ethernet (v4 or v6, optionally VLAN-tagged).
fn tcp_frame(v6: bool, vlans: &[u16], flags: Flags, payload: &[u8]) -> Vec<u8> {
    let eth = PacketBuilder::ethernet2(CLIENT_MAC, SERVER_MAC);
    let mut out = Vec::new();
    let vlan = |id: u16| VlanId::try_new(id).expect("vlan id");
    macro_rules! finish {
        ($ip:expr) => {{
            let mut b = $ip.tcp(CLIENT_PORT, SERVER_PORT, SEQ, 64000);
            if flags.syn {
                b = b.syn();
            }
            if flags.ack {
                b = b.ack(ACK_NO);
            }
            if flags.fin {
                b = b.fin();
            }
            if flags.rst {
                b = b.rst();
            }
            b.write(&mut out, payload).expect("build");
        }};
    }
    macro_rules! ip {
        ($b:expr) => {
            if v6 {
                finish!($b.ipv6(CLIENT6, SERVER6, 61))
            } else {
                finish!($b.ipv4(CLIENT4, SERVER4, 61))
            }
        };
    }
    match vlans {
        [] => ip!(eth),
        [one] => ip!(eth.single_vlan(vlan(*one))),
        [outer, inner] => ip!(eth.double_vlan(vlan(*outer), vlan(*inner))),
        _ => unreachable!("at most two tags"),
    }
    out
}

fn udp_frame(v6: bool, payload: &[u8]) -> Vec<u8> {
    let eth = PacketBuilder::ethernet2(CLIENT_MAC, SERVER_MAC);
    let mut out = Vec::new();
    if v6 {
        eth.ipv6(CLIENT6, SERVER6, 61).udp(CLIENT_PORT, 53).write(&mut out, payload).expect("build");
    } else {
        eth.ipv4(CLIENT4, SERVER4, 61).udp(CLIENT_PORT, 53).write(&mut out, payload).expect("build");
    }
    out
}

/// The IP packet of an Ethernet frame built here (no VLAN tags).
fn ip_of(frame: &[u8]) -> &[u8] {
    &frame[eth::HEADER_LEN..]
}

fn build(link: LinkType, frame: &[u8], reject: Reject) -> Result<Vec<Reply>, ReplyError> {
    let mut out = vec![];
    let n = replies(link, frame, reject, &mut out)?;
    assert_eq!(n, out.len(), "the count returned is the number appended");
    Ok(out)
}

fn one(link: LinkType, frame: &[u8], reject: Reject) -> Reply {
    let mut r = build(link, frame, reject).expect("replies");
    assert_eq!(r.len(), 1, "{r:?}");
    r.remove(0)
}

fn parse(link: LinkType, frame: &[u8]) -> PacketHeaders<'_> {
    match link {
        LinkType::Ethernet => PacketHeaders::from_ethernet_slice(frame).expect("reply parses as Ethernet"),
        _ => PacketHeaders::from_ip_slice(frame).expect("reply parses as IP"),
    }
}

/// IP addresses (as bytes) and hop limit of a parsed reply, checking the IPv4 header checksum.
fn ip_facts(h: &PacketHeaders<'_>) -> (Vec<u8>, Vec<u8>, u8) {
    match h.net.as_ref().expect("IP") {
        NetHeaders::Ipv4(ip, _) => {
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "IPv4 header checksum");
            assert!(ip.dont_fragment && !ip.more_fragments);
            (ip.source.to_vec(), ip.destination.to_vec(), ip.time_to_live)
        }
        NetHeaders::Ipv6(ip, _) => (ip.source.to_vec(), ip.destination.to_vec(), ip.hop_limit),
        NetHeaders::Arp(_) => panic!("ARP"),
    }
}

/// The RST of a parsed reply, its checksum verified against the IP header.
fn rst_of(h: &PacketHeaders<'_>) -> etherparse::TcpHeader {
    let Some(TransportHeader::Tcp(t)) = &h.transport else { panic!("not TCP: {:?}", h.transport) };
    let expected = match h.net.as_ref().expect("IP") {
        NetHeaders::Ipv4(ip, _) => t.calc_checksum_ipv4(ip, &[]).expect("sum"),
        NetHeaders::Ipv6(ip, _) => t.calc_checksum_ipv6(ip, &[]).expect("sum"),
        NetHeaders::Arp(_) => unreachable!(),
    };
    assert_eq!(t.checksum, expected, "TCP checksum");
    assert!(t.rst && !t.syn && !t.fin && !t.psh, "a bare RST");
    assert_eq!((t.window_size, t.header_len()), (0, 20));
    assert!(h.payload.slice().is_empty(), "no data");
    t.clone()
}

fn v4(a: [u8; 4]) -> Vec<u8> {
    a.to_vec()
}

#[test]
fn rst_to_the_source_of_a_data_segment() {
    let payload = b"GET /evil HTTP/1.1\r\n\r\n";
    let frame = tcp_frame(false, &[], DATA, payload);
    let reply = one(LinkType::Ethernet, &frame, TO_SOURCE);
    assert_eq!((reply.toward, reply.dst), (Toward::Source, IpAddr::from(CLIENT4)));
    assert_eq!(reply.frame.len(), eth::MIN_FRAME_LEN, "padded to Ethernet's minimum");
    let h = parse(LinkType::Ethernet, &reply.frame);
    let Some(etherparse::LinkHeader::Ethernet2(e)) = &h.link else { panic!("Ethernet") };
    assert_eq!((e.source, e.destination), (SERVER_MAC, CLIENT_MAC), "MACs swapped");
    assert_eq!(ip_facts(&h), (v4(SERVER4), v4(CLIENT4), REPLY_TTL), "from the server to the client");
    let t = rst_of(&h);
    assert_eq!((t.source_port, t.destination_port), (SERVER_PORT, CLIENT_PORT));
    assert_eq!(t.sequence_number, ACK_NO, "the client's rcv_nxt: what it acked");
    assert!(t.ack);
    assert_eq!(t.acknowledgment_number, SEQ.wrapping_add(payload.len() as u32), "acks the blocked data");
}

#[test]
fn rst_to_the_destination_carries_the_blocked_sequence_number() {
    let payload = b"evil";
    let frame = tcp_frame(false, &[], DATA, payload);
    let reply = one(LinkType::Ethernet, &frame, TO_DESTINATION);
    assert_eq!((reply.toward, reply.dst), (Toward::Destination, IpAddr::from(SERVER4)));
    let h = parse(LinkType::Ethernet, &reply.frame);
    let Some(etherparse::LinkHeader::Ethernet2(e)) = &h.link else { panic!("Ethernet") };
    assert_eq!((e.source, e.destination), (CLIENT_MAC, SERVER_MAC), "MACs kept");
    assert_eq!(ip_facts(&h), (v4(CLIENT4), v4(SERVER4), REPLY_TTL));
    let t = rst_of(&h);
    assert_eq!((t.source_port, t.destination_port), (CLIENT_PORT, SERVER_PORT));
    assert_eq!(t.sequence_number, SEQ, "the server's rcv_nxt: the segment it never got");
    assert!(t.ack && t.acknowledgment_number == ACK_NO);
}

#[test]
fn rejectboth_answers_source_then_destination() {
    let frame = tcp_frame(false, &[], DATA, b"x");
    let r = build(LinkType::Ethernet, &frame, TO_BOTH).expect("replies");
    let sides: Vec<(Toward, IpAddr)> = r.iter().map(|r| (r.toward, r.dst)).collect();
    assert_eq!(sides, [(Toward::Source, IpAddr::from(CLIENT4)), (Toward::Destination, IpAddr::from(SERVER4))]);
}

#[test]
fn syn_without_ack_gets_seq_zero_and_an_ack_of_the_syn() {
    let syn = Flags { syn: true, ..Flags::default() };
    let frame = tcp_frame(false, &[], syn, b"");
    let r = build(LinkType::Ethernet, &frame, TO_BOTH).expect("replies");
    let to_client = rst_of(&parse(LinkType::Ethernet, &r[0].frame));
    assert_eq!(to_client.sequence_number, 0);
    assert!(to_client.ack, "SYN-SENT accepts a RST only with an acceptable ACK");
    assert_eq!(to_client.acknowledgment_number, SEQ.wrapping_add(1), "the SYN counts one");
    let to_server = rst_of(&parse(LinkType::Ethernet, &r[1].frame));
    assert_eq!(to_server.sequence_number, SEQ);
    assert!(!to_server.ack && to_server.acknowledgment_number == 0, "nothing to ack: a bare RST");
}

#[test]
fn fin_counts_in_the_ack() {
    let fin = Flags { fin: true, ..DATA };
    let frame = tcp_frame(false, &[], fin, b"bye");
    let t = rst_of(&parse(LinkType::Ethernet, &one(LinkType::Ethernet, &frame, TO_SOURCE).frame));
    assert_eq!(t.acknowledgment_number, SEQ.wrapping_add(3 + 1));
}

#[test]
fn ipv6_rst_both_ways_with_valid_checksums() {
    let frame = tcp_frame(true, &[], DATA, b"evil");
    let r = build(LinkType::Ethernet, &frame, TO_BOTH).expect("replies");
    assert_eq!(r[0].dst, IpAddr::from(CLIENT6));
    let h = parse(LinkType::Ethernet, &r[0].frame);
    assert_eq!(ip_facts(&h), (SERVER6.to_vec(), CLIENT6.to_vec(), REPLY_TTL));
    let t = rst_of(&h);
    assert_eq!((t.sequence_number, t.acknowledgment_number), (ACK_NO, SEQ.wrapping_add(4)));
    assert_eq!(r[0].frame.len(), eth::HEADER_LEN + 40 + 20, "over the Ethernet minimum: no padding");
    let h = parse(LinkType::Ethernet, &r[1].frame);
    assert_eq!(ip_facts(&h), (CLIENT6.to_vec(), SERVER6.to_vec(), REPLY_TTL));
    assert_eq!(rst_of(&h).sequence_number, SEQ);
}

#[test]
fn vlan_tags_are_kept() {
    for tags in [&[42u16][..], &[100, 200]] {
        let frame = tcp_frame(false, tags, DATA, b"evil");
        for reject in [TO_SOURCE, TO_DESTINATION] {
            let reply = one(LinkType::Ethernet, &frame, reject);
            let h = parse(LinkType::Ethernet, &reply.frame);
            let ids: Vec<u16> = h
                .link_exts
                .iter()
                .map(|x| match x {
                    etherparse::LinkExtHeader::Vlan(v) => v.vlan_id.value(),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(ids, tags, "tags in their order");
            rst_of(&h);
        }
    }
}

#[test]
fn raw_ip_in_raw_ip_out() {
    for v6 in [false, true] {
        let frame = tcp_frame(v6, &[], DATA, b"evil");
        let ip = ip_of(&frame);
        let link_exact = if v6 { LinkType::RawIpv6 } else { LinkType::RawIpv4 };
        for link in [LinkType::RawIp, link_exact] {
            let reply = one(link, ip, TO_SOURCE);
            let ip_len = if v6 { 40 } else { 20 };
            assert_eq!(reply.frame.len(), ip_len + 20, "an IP packet, no link header, no padding");
            let h = parse(link, &reply.frame);
            assert!(h.link.is_none());
            assert_eq!(rst_of(&h).sequence_number, ACK_NO);
            let expected: IpAddr = if v6 { CLIENT6.into() } else { CLIENT4.into() };
            assert_eq!(reply.dst, expected);
        }
    }
}

/// The ICMP message of a reply (raw IP or Ethernet without tags), its checksum checked.
fn icmp_of(link: LinkType, frame: &[u8]) -> (u8, u8, Vec<u8>) {
    let h = parse(link, frame);
    ip_facts(&h);
    let quote = h.payload.slice().to_vec();
    match (&h.net, &h.transport) {
        (Some(NetHeaders::Ipv4(ip, _)), Some(TransportHeader::Icmpv4(icmp))) => {
            let expected = Icmpv4Header::with_checksum(icmp.icmp_type.clone(), &quote).checksum;
            assert_eq!(icmp.checksum, expected, "ICMP checksum");
            assert_eq!(ip.total_len as usize, 20 + 8 + quote.len());
            let bytes = icmp.to_bytes();
            (bytes[0], bytes[1], quote)
        }
        (Some(NetHeaders::Ipv6(ip, _)), Some(TransportHeader::Icmpv6(icmp))) => {
            let expected = Icmpv6Header::with_checksum(icmp.icmp_type, ip.source, ip.destination, &quote).expect("sum");
            assert_eq!(icmp.checksum, expected.checksum, "ICMPv6 checksum");
            let bytes = icmp.to_bytes();
            (bytes[0], bytes[1], quote)
        }
        other => panic!("not ICMP: {other:?}"),
    }
}

#[test]
fn udp_gets_port_unreachable_quoting_the_datagram() {
    let frame = udp_frame(false, b"\x12\x34 query");
    let reply = one(LinkType::Ethernet, &frame, ICMP_SOURCE);
    assert_eq!((reply.toward, reply.dst), (Toward::Source, IpAddr::from(CLIENT4)));
    let h = parse(LinkType::Ethernet, &reply.frame);
    assert_eq!(ip_facts(&h), (v4(SERVER4), v4(CLIENT4), REPLY_TTL), "from the datagram's destination");
    let (ty, code, quote) = icmp_of(LinkType::Ethernet, &reply.frame);
    assert_eq!((ty, code), (3, 3), "destination unreachable, port unreachable");
    assert_eq!(quote, ip_of(&frame), "the whole datagram, IP header on");
}

#[test]
fn ipv6_udp_gets_icmpv6_port_unreachable() {
    let frame = udp_frame(true, b"hello");
    let reply = one(LinkType::Ethernet, &frame, ICMP_SOURCE);
    assert_eq!(reply.dst, IpAddr::from(CLIENT6));
    let (ty, code, quote) = icmp_of(LinkType::Ethernet, &reply.frame);
    assert_eq!((ty, code), (1, 4));
    assert_eq!(quote, ip_of(&frame));
}

#[test]
fn quotes_stop_at_the_rfc_limits() {
    let big = vec![0xabu8; 1500];
    let v4_reply = one(LinkType::Ethernet, &udp_frame(false, &big), ICMP_SOURCE);
    assert_eq!(v4_reply.frame.len(), eth::HEADER_LEN + 576, "RFC 1812: 576 bytes of IP");
    let (_, _, quote) = icmp_of(LinkType::Ethernet, &v4_reply.frame);
    assert_eq!(quote.len(), 576 - 28);
    assert_eq!(quote[..28], ip_of(&udp_frame(false, &big))[..28], "IP and UDP headers first");
    let v6_frame = udp_frame(true, &big);
    let v6_reply = one(LinkType::Ethernet, &v6_frame, ICMP_SOURCE);
    assert_eq!(v6_reply.frame.len(), eth::HEADER_LEN + 1280, "RFC 4443: the minimum MTU");
    let (_, _, quote) = icmp_of(LinkType::Ethernet, &v6_reply.frame);
    assert_eq!(quote[..], ip_of(&v6_frame)[..1280 - 48]);
}

#[test]
fn a_short_capture_is_quoted_as_far_as_it_goes() {
    // NFQUEUE with a copy range: the IP length says 1528 bytes, 100 were delivered.
    let frame = udp_frame(false, &[7u8; 1500]);
    let cut = &ip_of(&frame)[..100];
    let reply = one(LinkType::RawIpv4, cut, ICMP_SOURCE);
    let (_, _, quote) = icmp_of(LinkType::RawIpv4, &reply.frame);
    assert_eq!(quote, cut);
}

#[test]
fn other_protocols_get_host_unreachable() {
    let mut v4 = Vec::new();
    PacketBuilder::ipv4(CLIENT4, SERVER4, 61).icmpv4_echo_request(1, 2).write(&mut v4, b"ping").expect("build");
    let (ty, code, quote) = icmp_of(LinkType::RawIp, &one(LinkType::RawIp, &v4, ICMP_SOURCE).frame);
    assert_eq!((ty, code, quote), (3, 1, v4.clone()));
    let mut v6 = Vec::new();
    PacketBuilder::ipv6(CLIENT6, SERVER6, 61).icmpv6_echo_request(1, 2).write(&mut v6, b"ping").expect("build");
    let (ty, code, _) = icmp_of(LinkType::RawIp, &one(LinkType::RawIp, &v6, ICMP_SOURCE).frame);
    assert_eq!((ty, code), (1, 3), "address unreachable");
    // An IP protocol picket does not decode (SCTP).
    let mut sctp = Vec::new();
    PacketBuilder::ipv4(CLIENT4, SERVER4, 61).write(&mut sctp, IpNumber(132), &[0u8; 16]).expect("build");
    let (ty, code, _) = icmp_of(LinkType::RawIp, &one(LinkType::RawIp, &sctp, ICMP_SOURCE).frame);
    assert_eq!((ty, code), (3, 1));
}

#[test]
fn icmp_goes_to_the_source_only() {
    let frame = udp_frame(false, b"x");
    assert_eq!(build(LinkType::Ethernet, &frame, ICMP_DESTINATION), Ok(vec![]), "rejectdst: drop only");
    let both = build(LinkType::Ethernet, &frame, ICMP_BOTH).expect("replies");
    assert_eq!(both.len(), 1);
    assert_eq!(both[0].toward, Toward::Source);
}

#[test]
fn a_tcp_reset_asked_for_udp_falls_back_to_icmp() {
    let reply = one(LinkType::Ethernet, &udp_frame(false, b"x"), TO_SOURCE);
    assert_eq!(icmp_of(LinkType::Ethernet, &reply.frame).0, 3);
}

#[test]
fn never_answered() {
    let rst = Flags { rst: true, ..DATA };
    assert_eq!(build(LinkType::Ethernet, &tcp_frame(false, &[], rst, b""), TO_BOTH), Ok(vec![]), "a RST");

    let mut unreachable = Vec::new();
    PacketBuilder::ipv4(CLIENT4, SERVER4, 61)
        .icmpv4(Icmpv4Type::DestinationUnreachable(etherparse::icmpv4::DestUnreachableHeader::Port))
        .write(&mut unreachable, &[0u8; 28])
        .expect("build");
    assert_eq!(build(LinkType::RawIp, &unreachable, ICMP_BOTH), Ok(vec![]), "an ICMP error");
    let mut unreachable6 = Vec::new();
    PacketBuilder::ipv6(CLIENT6, SERVER6, 61)
        .icmpv6(Icmpv6Type::DestinationUnreachable(etherparse::icmpv6::DestUnreachableCode::Port))
        .write(&mut unreachable6, &[0u8; 48])
        .expect("build");
    assert_eq!(build(LinkType::RawIp, &unreachable6, ICMP_BOTH), Ok(vec![]), "an ICMPv6 error");

    // A later fragment: offset 1 (8 bytes), IPv4 header checksum not checked here.
    let mut later = ip_of(&udp_frame(false, &[0u8; 40])).to_vec();
    later[v4::FLAGS_FRAGMENT + 1] = 1;
    assert_eq!(build(LinkType::RawIp, &later, ICMP_BOTH), Ok(vec![]), "a later IPv4 fragment");
    let mut later6 = Vec::new();
    let frag = [17u8, 0, 0, 0x08 /* offset 1, M=0 */, 0, 0, 0, 9];
    PacketBuilder::ipv6(CLIENT6, SERVER6, 61).write(&mut later6, IpNumber(44), &[&frag[..], &[0u8; 8]].concat()).ok();
    assert_eq!(build(LinkType::RawIp, &later6, ICMP_BOTH), Ok(vec![]), "a later IPv6 fragment");

    let mut to_broadcast = Vec::new();
    PacketBuilder::ipv4(CLIENT4, [255; 4], 61).udp(68, 67).write(&mut to_broadcast, b"x").expect("build");
    assert_eq!(build(LinkType::RawIp, &to_broadcast, ICMP_BOTH), Ok(vec![]), "to the broadcast address");
    let mut to_multicast = Vec::new();
    PacketBuilder::ipv4(CLIENT4, [224, 0, 0, 251], 61).udp(5353, 5353).write(&mut to_multicast, b"x").expect("b");
    assert_eq!(build(LinkType::RawIp, &to_multicast, ICMP_BOTH), Ok(vec![]), "to a multicast group");
    let mut from_nowhere = Vec::new();
    PacketBuilder::ipv4([0; 4], SERVER4, 61).udp(68, 67).write(&mut from_nowhere, b"x").expect("build");
    assert_eq!(build(LinkType::RawIp, &from_nowhere, ICMP_BOTH), Ok(vec![]), "from 0.0.0.0");
    let mut to_multicast6 = Vec::new();
    let all_nodes = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    PacketBuilder::ipv6(CLIENT6, all_nodes, 1).udp(1, 2).write(&mut to_multicast6, b"x").expect("build");
    assert_eq!(build(LinkType::RawIp, &to_multicast6, ICMP_BOTH), Ok(vec![]), "to ff02::1");

    let mut eth_broadcast = tcp_frame(false, &[], DATA, b"x");
    eth_broadcast[eth::DST..eth::DST + 6].copy_from_slice(&[0xff; 6]);
    assert_eq!(build(LinkType::Ethernet, &eth_broadcast, TO_BOTH), Ok(vec![]), "an Ethernet broadcast");
}

#[test]
fn a_first_fragment_is_answered() {
    // The first fragment of a TCP segment: MF set, offset 0; the TCP header is in it.
    let mut first = ip_of(&tcp_frame(false, &[], DATA, &[1u8; 40])).to_vec();
    first[v4::FLAGS_FRAGMENT] |= 0x20;
    let reply = one(LinkType::RawIpv4, &first, TO_SOURCE);
    assert_eq!(rst_of(&parse(LinkType::RawIp, &reply.frame)).sequence_number, ACK_NO);
}

#[test]
fn broken_input_is_a_typed_error() {
    let frame = tcp_frame(false, &[], DATA, b"evil");
    let err = |link, bytes: &[u8]| build(link, bytes, TO_BOTH).expect_err("an error");
    assert_eq!(err(LinkType::Ethernet, &frame[..10]), ReplyError::Truncated { header: "Ethernet", need: 14, have: 10 });
    let tagged = tcp_frame(false, &[5], DATA, b"");
    assert!(matches!(err(LinkType::Ethernet, &tagged[..16]), ReplyError::Truncated { header: "VLAN", .. }));
    let mut arp = frame.clone();
    arp[eth::ETHERTYPE..eth::ETHERTYPE + 2].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(err(LinkType::Ethernet, &arp), ReplyError::NotIp { ethertype: 0x0806 });
    let mut three_tags = tcp_frame(false, &[1, 2], DATA, b"");
    three_tags.splice(eth::HEADER_LEN..eth::HEADER_LEN, [0, 3, 0x81, 0x00]);
    assert_eq!(err(LinkType::Ethernet, &three_tags), ReplyError::TooManyVlanTags);
    assert_eq!(err(LinkType::LinuxSll, &frame), ReplyError::UnsupportedLink(LinkType::LinuxSll));
    // The IP header promises a TCP header the capture does not hold.
    let cut = &frame[..eth::HEADER_LEN + 20 + 10];
    assert_eq!(err(LinkType::Ethernet, cut), ReplyError::Malformed(Some(DecodeEvent::TcpPktTooSmall)));
    assert!(matches!(err(LinkType::RawIp, &[0x45, 0, 0]), ReplyError::Malformed(Some(_))));
    assert!(matches!(err(LinkType::RawIp, &[]), ReplyError::Malformed(_)));
    for e in [err(LinkType::Ethernet, cut), err(LinkType::Ethernet, &arp), ReplyError::Malformed(None)] {
        let text = e.to_string();
        assert!(text.starts_with("reject reply not built: ") && !text.contains('\n'), "{text}");
    }
}

#[test]
fn tunnelled_packets_are_not_answered() {
    // TCP in GRE in IPv4: the rule saw the inner flow; the outer headers lead to the tunnel endpoint.
    let inner = ip_of(&tcp_frame(false, &[], DATA, b"evil")).to_vec();
    let gre = [&[0u8, 0, 0x08, 0x00][..], &inner].concat();
    let mut outer = Vec::new();
    PacketBuilder::ipv4([172, 16, 0, 1], [172, 16, 0, 2], 61).write(&mut outer, IpNumber(47), &gre).expect("build");
    let mut out = vec![];
    assert_eq!(replies(LinkType::RawIp, &outer, TO_BOTH, &mut out), Err(ReplyError::Tunnelled));
    assert!(out.is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// Hostile input: random bytes, and valid frames cut anywhere or with a byte changed,
    /// never panic; every reply built decodes as IP toward the address it names.
    #[test]
    fn never_panics_and_replies_decode(
        seed in 0usize..6,
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        flip in proptest::prelude::any::<(proptest::sample::Index, u8)>(),
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
        sel in 0u8..16,
    ) {
        let frames = [
            tcp_frame(false, &[], DATA, b"evil"),
            tcp_frame(true, &[7, 8], Flags { syn: true, ..Flags::default() }, b""),
            udp_frame(false, &[1; 60]),
            udp_frame(true, b"q"),
            noise.clone(),
            [&[0x45u8][..], &noise].concat(),
        ];
        let mut frame = frames[seed].clone();
        if !frame.is_empty() && sel & 1 == 1 {
            let at = flip.0.index(frame.len());
            frame[at] ^= flip.1 | 1;
        }
        let len = if sel & 2 == 2 { cut.index(frame.len() + 1) } else { frame.len() };
        let frame = &frame[..len];
        let link = [LinkType::Ethernet, LinkType::RawIp, LinkType::RawIpv4, LinkType::RawIpv6][(sel >> 2) as usize];
        let reject = [TO_BOTH, ICMP_BOTH, TO_DESTINATION][seed % 3];
        let mut out = vec![];
        if let Ok(n) = replies(link, frame, reject, &mut out) {
            proptest::prop_assert_eq!(n, out.len());
            for r in &out {
                let d = decode::decode(link, &r.frame, &DecodeOptions::default());
                proptest::prop_assert!(!d.bad_checksum, "checksums of a reply are right");
                let tuple = d.tuple();
                proptest::prop_assert!(tuple.is_some());
                proptest::prop_assert_eq!(tuple.map(|t| t.dst_ip()), Some(r.dst));
            }
        }
    }
}
