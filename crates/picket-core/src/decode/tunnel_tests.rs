//! Whole-packet tests for link types, in-packet encapsulations and tunnels: crafted
//! packets (inner packets built with etherparse, tunnel headers by hand) and, where the
//! shared conformance suite is present, its captures.

use super::*;
use crate::bytes::Endian;
use etherparse::{Ipv4Header, Ipv6Header, PacketBuilder};
use proptest::prelude::*;
use std::net::IpAddr;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];
const OUTER_A: [u8; 4] = [198, 51, 100, 1];
const OUTER_B: [u8; 4] = [198, 51, 100, 2];
const INNER_A: [u8; 4] = [10, 0, 0, 1];
const INNER_B: [u8; 4] = [10, 0, 0, 2];
const V6_A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn opts() -> DecodeOptions {
    DecodeOptions::default()
}

fn events(d: &Decoded<'_>) -> Vec<DecodeEvent> {
    d.events.iter().collect()
}

/// An IPv4 packet carrying UDP, built by etherparse.
fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4(src, dst, 64).udp(sport, dport).write(&mut out, payload).unwrap();
    out
}

fn ipv4_tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4(src, dst, 64).tcp(sport, dport, 1, 1024).syn().write(&mut out, b"").unwrap();
    out
}

fn ipv6_udp(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv6(src, dst, 64).udp(sport, dport).write(&mut out, payload).unwrap();
    out
}

/// An IPv4 header with correct length and checksum in front of `payload`.
fn ipv4_around(proto: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut header = Ipv4Header::new(payload.len() as u16, 64, etherparse::IpNumber(proto), src, dst).unwrap();
    header.header_checksum = header.calc_header_checksum();
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn ipv6_around(proto: u8, payload: &[u8]) -> Vec<u8> {
    let header = Ipv6Header {
        payload_length: payload.len() as u16,
        next_header: etherparse::IpNumber(proto),
        hop_limit: 64,
        source: V6_A,
        destination: V6_B,
        ..Default::default()
    };
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn ethernet(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = MAC_B.to_vec();
    out.extend_from_slice(&MAC_A);
    out.extend_from_slice(&ethertype.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn gre(flags_version: [u8; 2], protocol: u16, optional: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = flags_version.to_vec();
    out.extend_from_slice(&protocol.to_be_bytes());
    out.extend_from_slice(optional);
    out.extend_from_slice(payload);
    out
}

/// Outer Ethernet + IPv4 (OUTER_A -> OUTER_B) + UDP with a valid checksum.
fn eth_udp_outer(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv4(OUTER_A, OUTER_B, 64)
        .udp(sport, dport)
        .write(&mut out, payload)
        .unwrap();
    out
}

fn vxlan(vni: u32, inner_frame: &[u8]) -> Vec<u8> {
    let mut out = vec![0x08, 0, 0, 0];
    out.extend_from_slice(&(vni << 8).to_be_bytes());
    out.extend_from_slice(inner_frame);
    out
}

fn v4(addr: [u8; 4]) -> IpAddr {
    IpAddr::from(addr)
}

/// Inner tuple addresses and ports.
fn inner_key(d: &Decoded<'_>) -> (IpAddr, IpAddr, u16, u16, u8) {
    let t = d.tuple().expect("inner packet has IP");
    (t.src_ip(), t.dst_ip(), t.src_port, t.dst_port, t.proto)
}

#[test]
fn gre_carries_ipv4_and_reports_the_outer_packet() {
    let inner = ipv4_udp(INNER_A, INNER_B, 1234, 53, b"query");
    let frame = ethernet(ETHERTYPE_IPV4, &ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x0800, &[], &inner)));
    let d = decode(LinkType::Ethernet, &frame, &opts());
    assert_eq!(events(&d), vec![]);
    assert!(!d.bad_checksum);
    assert_eq!(inner_key(&d), (v4(INNER_A), v4(INNER_B), 1234, 53, PROTO_UDP));
    assert_eq!(d.payload, b"query");
    let t = d.tunnel.unwrap();
    assert_eq!((t.kind, t.innermost_kind, t.depth), (TunnelKind::Gre, TunnelKind::Gre, 1));
    assert_eq!((t.outer.src_ip(), t.outer.dst_ip(), t.outer.proto), (v4(OUTER_A), v4(OUTER_B), 47));
    assert_eq!((t.outer.src_port, t.outer.dst_port), (0, 0));
    assert_eq!(&frame[t.inner_offset as usize..], &inner[..]);
    assert_eq!(d.tunnel_depth(), 1);

    // The dispatch hash is the outer flow's (the tunnel lives on one worker): both
    // directions of the tunnel meet, whatever they carry.
    let reply = ipv4_udp(INNER_B, INNER_A, 53, 1234, b"answer");
    let back = ethernet(ETHERTYPE_IPV4, &ipv4_around(47, OUTER_B, OUTER_A, &gre([0, 0], 0x0800, &[], &reply)));
    assert_eq!(flow_hash(LinkType::Ethernet, &frame), flow_hash(LinkType::Ethernet, &back));
    let plain = ethernet(ETHERTYPE_IPV4, &ipv4_around(47, OUTER_A, OUTER_B, b"not decoded"));
    assert_eq!(flow_hash(LinkType::Ethernet, &frame), flow_hash(LinkType::Ethernet, &plain));
    let other_tunnel =
        ethernet(ETHERTYPE_IPV4, &ipv4_around(47, [203, 0, 113, 9], OUTER_A, &gre([0, 0], 0x0800, &[], &reply)));
    assert_ne!(flow_hash(LinkType::Ethernet, &frame), flow_hash(LinkType::Ethernet, &other_tunnel));
}

#[test]
fn gre_optional_fields_ipv6_and_errors() {
    let inner = ipv6_udp(V6_A, V6_B, 5000, 6000, b"six");
    // Checksum+offset, key and sequence words.
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0xb0, 0], 0x86dd, &[0; 12], &inner));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!(inner_key(&d).2, 5000);
    assert!(!d.tuple().unwrap().is_v4);

    // A broken GRE header leaves the outer packet with the event.
    let broken = ipv4_around(47, OUTER_A, OUTER_B, &gre([0x01, 0], 0x0800, &[], &inner));
    let d = decode(LinkType::RawIpv4, &broken, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::GreVersion0Recur]);
    assert!(d.tunnel.is_none() && matches!(d.l4, L4::Other(47)));
    assert_eq!(inner_key(&d).0, v4(OUTER_A));

    // An inner packet too short to decode: outer packet, inner events.
    let short = ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x0800, &[], &[0x45, 0, 0]));
    let d = decode(LinkType::RawIpv4, &short, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv4PktTooSmall]);
    assert!(d.tunnel.is_none());

    // Unknown GRE payloads stay GRE packets without events.
    let other = ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x1234, &[], b"xx"));
    let d = decode(LinkType::RawIpv4, &other, &opts());
    assert!(d.events.is_empty() && d.tunnel.is_none());
}

#[test]
fn pptp_gre_version1_carries_ppp() {
    let inner = ipv4_tcp(INNER_A, INNER_B, 40000, 80);
    let mut ppp = vec![0xff, 0x03, 0x00, 0x21];
    ppp.extend_from_slice(&inner);
    // Key (payload length + call id) and sequence number.
    let optional = [(ppp.len() as u16).to_be_bytes(), [0, 7], [0, 0], [0, 1]].concat();
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0x30, 0x01], 0x880b, &optional, &ppp));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d), (v4(INNER_A), v4(INNER_B), 40000, 80, PROTO_TCP));
    let t = d.tunnel.unwrap();
    assert_eq!(t.kind, TunnelKind::Pptp);
    // Suricata's tunnel packet starts at the PPP header.
    assert_eq!(&packet[t.inner_offset as usize..][..4], &[0xff, 0x03, 0x00, 0x21]);

    // LCP inside PPTP: a valid PPP protocol carrying no IP.
    let lcp = [0xff, 0x03, 0xc0, 0x21, 1, 1, 0, 4];
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0x30, 0x01], 0x880b, &optional, &lcp));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::PppUnsupProto]);
    assert!(d.tunnel.is_none());
}

#[test]
fn erspan_types_and_their_vlans() {
    let icmp = {
        let mut out = Vec::new();
        PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ipv4(INNER_A, INNER_B, 64)
            .icmpv4_echo_request(1, 2)
            .write(&mut out, b"ping")
            .unwrap();
        out
    };
    // Type II: GRE with a sequence number, ERSPAN version 1 with VLAN 23.
    let mut erspan = vec![0x10, 0x17, 0x08, 0x64, 0, 0, 0, 0];
    erspan.extend_from_slice(&icmp);
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0x10, 0], 0x88be, &[0, 0, 0, 9], &erspan));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d), (v4(INNER_A), v4(INNER_B), 8, 0, PROTO_ICMP));
    assert_eq!((d.vlan_depth, d.vlan[0]), (1, 23));
    let t = d.tunnel.unwrap();
    assert_eq!(t.kind, TunnelKind::ErspanII);
    assert_eq!(&packet[t.inner_offset as usize..], &erspan[..]);

    // Type I: no sequence number, Ethernet right after GRE.
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x88be, &[], &icmp));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!((d.tunnel.unwrap().kind, d.vlan_depth), (TunnelKind::ErspanI, 0));
    assert_eq!(inner_key(&d).0, v4(INNER_A));

    // Type III with the platform subheader, VLAN 5, Ethernet frame.
    let mut erspan3 = vec![0x20, 0x05, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
    erspan3.extend_from_slice(&[0; 8]);
    erspan3.extend_from_slice(&icmp);
    let packet = ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x22eb, &[], &erspan3));
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert_eq!((d.tunnel.unwrap().kind, d.vlan[0]), (TunnelKind::ErspanIII, 5));

    // Three outer tags plus the ERSPAN VLAN is one tag too many.
    let mut tagged = MAC_B.to_vec();
    tagged.extend_from_slice(&MAC_A);
    tagged.extend_from_slice(&[0x88, 0xa8, 0, 100, 0x81, 0x00, 0, 200, 0x81, 0x00, 1, 44, 0x08, 0x00]);
    tagged.extend_from_slice(&ipv4_around(47, OUTER_A, OUTER_B, &gre([0x10, 0], 0x88be, &[0, 0, 0, 9], &erspan)));
    let d = decode(LinkType::Ethernet, &tagged, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::ErspanTooManyVlanLayers]);
    assert!(d.tunnel.is_none());
}

#[test]
fn vxlan_inner_ethernet_vlans_ports_and_arp() {
    let inner_ip = {
        let mut out = Vec::new();
        PacketBuilder::ipv4(INNER_A, INNER_B, 64).icmpv4_echo_request(7, 1).write(&mut out, b"abc").unwrap();
        out
    };
    let frame = eth_udp_outer(50000, 4789, &vxlan(100, &ethernet(ETHERTYPE_IPV4, &inner_ip)));
    let d = decode(LinkType::Ethernet, &frame, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d), (v4(INNER_A), v4(INNER_B), 8, 0, PROTO_ICMP));
    let t = d.tunnel.unwrap();
    assert_eq!(t.kind, TunnelKind::Vxlan);
    assert_eq!((t.outer.src_port, t.outer.dst_port, t.outer.proto), (50000, 4789, PROTO_UDP));
    // Suricata's VXLAN tunnel packet starts after the inner Ethernet header.
    assert_eq!(&frame[t.inner_offset as usize..], &inner_ip[..]);

    // Disabled: plain UDP.
    let off = DecodeOptions { vxlan_ports: PortList::NONE, ..opts() };
    let d = decode(LinkType::Ethernet, &frame, &off);
    assert!(d.tunnel.is_none() && matches!(d.l4, L4::Udp(_)));
    // Another port configured.
    let other = DecodeOptions { vxlan_ports: PortList::new(&[8472]), ..opts() };
    assert!(decode(LinkType::Ethernet, &frame, &other).tunnel.is_none());
    // Source port 4789 alone is not VXLAN (RFC 7348: destination port only).
    let reversed = eth_udp_outer(4789, 50000, &vxlan(100, &ethernet(ETHERTYPE_IPV4, &inner_ip)));
    assert!(decode(LinkType::Ethernet, &reversed, &opts()).tunnel.is_none());

    // An inner VLAN tag joins the outer ones.
    let mut tagged_inner = MAC_B.to_vec();
    tagged_inner.extend_from_slice(&MAC_A);
    tagged_inner.extend_from_slice(&[0x81, 0x00, 0x00, 42, 0x08, 0x00]);
    tagged_inner.extend_from_slice(&inner_ip);
    let pkt = eth_udp_outer(50000, 4789, &vxlan(1, &tagged_inner));
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!((d.vlan_depth, d.vlan[0]), (1, 42));
    assert_eq!(inner_key(&d).0, v4(INNER_A));

    // ARP inside: no tunnel packet, no event.
    let arp = ethernet(0x0806, &[0; 28]);
    let pkt = eth_udp_outer(50000, 4789, &vxlan(1, &arp));
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert!(d.events.is_empty() && d.tunnel.is_none() && matches!(d.l4, L4::Udp(_)));
    // An unknown inner EtherType is an event on the outer packet.
    let odd = ethernet(0x1234, &[0; 28]);
    let pkt = eth_udp_outer(50000, 4789, &vxlan(1, &odd));
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::VxlanUnknownPayloadType]);
}

#[test]
fn teredo_and_geneve() {
    let inner6 = ipv6_udp(V6_A, V6_B, 1111, 2222, b"teredo");
    let frame = eth_udp_outer(40000, 3544, &inner6);
    let d = decode(LinkType::Ethernet, &frame, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d), (IpAddr::from(V6_A), IpAddr::from(V6_B), 1111, 2222, PROTO_UDP));
    assert_eq!(d.tunnel.unwrap().kind, TunnelKind::Teredo);
    // Source port counts for Teredo.
    assert!(decode(LinkType::Ethernet, &eth_udp_outer(3544, 40000, &inner6), &opts()).tunnel.is_some());
    // A payload that is not exactly one IPv6 packet stays UDP.
    let mut longer = inner6.clone();
    longer.push(0);
    assert!(decode(LinkType::Ethernet, &eth_udp_outer(40000, 3544, &longer), &opts()).tunnel.is_none());

    let inner4 = ipv4_udp(INNER_A, INNER_B, 7, 9, b"gen");
    let mut geneve = vec![0x00, 0x00, 0x65, 0x58, 0, 0, 5, 0];
    geneve.extend_from_slice(&ethernet(ETHERTYPE_IPV4, &inner4));
    let pkt = eth_udp_outer(40000, 6081, &geneve);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(d.tunnel.unwrap().kind, TunnelKind::Geneve);
    assert_eq!(inner_key(&d).2, 7);
    geneve[2..4].copy_from_slice(&[0x12, 0x34]);
    let pkt = eth_udp_outer(40000, 6081, &geneve);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::GeneveUnknownPayloadType]);
}

#[test]
fn ip_in_ip_all_four_combinations() {
    let inner4 = ipv4_udp(INNER_A, INNER_B, 10, 20, b"4");
    let inner6 = ipv6_udp(V6_A, V6_B, 30, 40, b"6");
    let cases = [
        (ipv4_around(4, OUTER_A, OUTER_B, &inner4), LinkType::RawIpv4, 10),
        (ipv4_around(41, OUTER_A, OUTER_B, &inner6), LinkType::RawIpv4, 30),
        (ipv6_around(4, &inner4), LinkType::RawIpv6, 10),
        (ipv6_around(41, &inner6), LinkType::RawIpv6, 30),
    ];
    for (packet, link, sport) in cases {
        let d = decode(link, &packet, &opts());
        assert_eq!(events(&d), vec![], "{link:?}");
        assert_eq!(inner_key(&d).2, sport);
        assert_eq!(d.tunnel.unwrap().kind, TunnelKind::IpInIp);
    }
    // Suricata's checks before an IPv6 outer packet spawns a tunnel.
    let pkt = ipv6_around(4, &inner4[..10]);
    let d = decode(LinkType::RawIpv6, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv4InIpv6TooSmall]);
    let pkt = ipv6_around(41, &inner4);
    let d = decode(LinkType::RawIpv6, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv6InIpv6TooSmall]);
    let mut wrong = inner6.clone();
    wrong[0] = 0x45;
    let pkt = ipv6_around(41, &wrong);
    let d = decode(LinkType::RawIpv6, &pkt, &opts());
    assert_eq!(events(&d), vec![DecodeEvent::Ipv6InIpv6WrongVersion]);
    assert!(d.tunnel.is_none());
}

#[test]
fn nested_tunnels_count_depth_and_stop_at_the_layer_limit() {
    // VXLAN inside GRE inside IPv4.
    let inner = ipv4_tcp(INNER_A, INNER_B, 1000, 443);
    let mut udp = Vec::new();
    PacketBuilder::ipv4([172, 16, 0, 1], [172, 16, 0, 2], 64)
        .udp(60000, 4789)
        .write(&mut udp, &vxlan(9, &ethernet(ETHERTYPE_IPV4, &inner)))
        .unwrap();
    let packet = ethernet(ETHERTYPE_IPV4, &ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x0800, &[], &udp)));
    let d = decode(LinkType::Ethernet, &packet, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d), (v4(INNER_A), v4(INNER_B), 1000, 443, PROTO_TCP));
    let t = d.tunnel.unwrap();
    assert_eq!((t.kind, t.innermost_kind, t.depth), (TunnelKind::Gre, TunnelKind::Vxlan, 2));
    assert_eq!(t.outer.src_ip(), v4(OUTER_A));
    assert_eq!(&packet[t.inner_offset as usize..], &inner[..]);

    // IP-in-IP 30 deep: the walk stops at max_layers, flags it, and still returns the
    // deepest packet it decoded.
    let mut packet = ipv4_udp(INNER_A, INNER_B, 1, 2, b"deep");
    for _ in 0..30 {
        packet = ipv4_around(4, OUTER_A, OUTER_B, &packet);
    }
    let d = decode(LinkType::RawIpv4, &packet, &opts());
    assert!(d.events.contains(DecodeEvent::TooManyLayers));
    assert_eq!(d.tunnel.unwrap().depth, DEFAULT_MAX_LAYERS - 1);
    let shallow = DecodeOptions { max_layers: 4, ..opts() };
    assert_eq!(decode(LinkType::RawIpv4, &packet, &shallow).tunnel.unwrap().depth, 3);
}

#[test]
fn mpls_pppoe_nsh_in_the_same_packet() {
    let inner = ipv4_udp(INNER_A, INNER_B, 5, 6, b"x");
    // Two labels, the second at the bottom of the stack.
    let mut mpls = vec![0x00, 0x06, 0x40, 0x40, 0x00, 0x0c, 0x81, 0x40];
    mpls.extend_from_slice(&inner);
    let pkt = ethernet(0x8847, &mpls);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d).2, 5);
    assert!(d.tunnel.is_none(), "MPLS is not a tunnel in Suricata");
    let mut reserved = vec![0x00, 0x00, 0x71, 0x40];
    reserved.extend_from_slice(&inner);
    assert_eq!(
        events(&decode(LinkType::Ethernet, &ethernet(0x8847, &reserved), &opts())),
        vec![DecodeEvent::MplsBadLabelReserved]
    );

    let mut pppoe = vec![0x11, 0x00, 0x00, 0x01];
    pppoe.extend_from_slice(&((inner.len() + 2) as u16).to_be_bytes());
    pppoe.extend_from_slice(&[0x00, 0x21]);
    pppoe.extend_from_slice(&inner);
    let frame = ethernet(0x8864, &pppoe);
    let d = decode(LinkType::Ethernet, &frame, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d).3, 6);
    // Both directions through PPPoE hash together, through the decoding path.
    let reply = ipv4_udp(INNER_B, INNER_A, 6, 5, b"y");
    let mut back = pppoe[..6].to_vec();
    back.extend_from_slice(&[0x00, 0x21]);
    back.extend_from_slice(&reply);
    assert_eq!(flow_hash(LinkType::Ethernet, &frame), flow_hash(LinkType::Ethernet, &ethernet(0x8864, &back)));
    let mut short_ip = pppoe[..8].to_vec();
    short_ip.extend_from_slice(&inner[..12]);
    assert_eq!(
        events(&decode(LinkType::Ethernet, &ethernet(0x8864, &short_ip), &opts())),
        vec![DecodeEvent::PppIp4PktTooSmall]
    );

    let mut nsh = vec![0x00, 0x02, 0x02, 0x01, 0, 0, 1, 0xff];
    nsh.extend_from_slice(&inner);
    let pkt = ethernet(0x894f, &nsh);
    let d = decode(LinkType::Ethernet, &pkt, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d).2, 5);
}

#[test]
fn ppp_and_cisco_hdlc_link_types() {
    let inner = ipv4_udp(INNER_A, INNER_B, 5, 6, b"x");
    for prefix in [&[0x21][..], &[0x00, 0x21], &[0xff, 0x03, 0x00, 0x21], &[0xff, 0x03, 0x21]] {
        let packet = [prefix, &inner[..]].concat();
        let d = decode(LinkType::Ppp, &packet, &opts());
        assert_eq!(events(&d), vec![], "{prefix:x?}");
        assert_eq!(inner_key(&d).2, 5);
        assert_eq!(flow_hash(LinkType::Ppp, &packet), flow_hash(LinkType::RawIpv4, &inner));
    }
    assert_eq!(events(&decode(LinkType::Ppp, &[], &opts())), vec![DecodeEvent::PppPktTooSmall]);
    assert_eq!(events(&decode(LinkType::Ppp, &[0x12, 0x34, 0], &opts())), vec![DecodeEvent::PppWrongType]);
    assert_eq!(events(&decode(LinkType::Ppp, &[0x57, 0x60, 0], &opts())), vec![DecodeEvent::PppIp6PktTooSmall]);

    let chdlc = [&[0x0f, 0x00, 0x08, 0x00][..], &inner[..]].concat();
    let d = decode(LinkType::CiscoHdlc, &chdlc, &opts());
    assert_eq!(events(&d), vec![]);
    assert_eq!(inner_key(&d).3, 6);
    assert_eq!(events(&decode(LinkType::CiscoHdlc, &chdlc[..3], &opts())), vec![DecodeEvent::ChdlcPktTooSmall]);
}

#[test]
fn udp_on_a_tunnel_port_that_is_not_a_tunnel_hashes_like_plain_udp() {
    // One direction goes through the decoding path (destination 4789), the other not.
    let a = eth_udp_outer(50000, 4789, b"not vxlan at all");
    let mut b = Vec::new();
    PacketBuilder::ethernet2(MAC_B, MAC_A).ipv4(OUTER_B, OUTER_A, 64).udp(4789, 50000).write(&mut b, b"reply").unwrap();
    assert!(decode(LinkType::Ethernet, &a, &opts()).tunnel.is_none());
    assert_eq!(flow_hash(LinkType::Ethernet, &a), flow_hash(LinkType::Ethernet, &b));
}

// ---------------------------------------------------------------------------------------
// Conformance captures (skipped when the shared suite is absent).

const CONFORMANCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/conformance");

/// Link type and packets of a conformance test's capture (classic pcap, either byte
/// order), or `None` when the suite is not on this machine.
pub(crate) fn conformance_pcap(test: &str) -> Option<(LinkType, Vec<Vec<u8>>)> {
    let spec = std::fs::read_to_string(format!("{CONFORMANCE}/tests/{test}/test.json")).ok()?;
    let spec: serde_json::Value = serde_json::from_str(&spec).ok()?;
    let file = std::fs::read(format!("{CONFORMANCE}/{}", spec["pcap"].as_str()?)).ok()?;
    let order = match bytes::le_u32(&file, 0)? {
        0xa1b2c3d4 | 0xa1b23c4d => Endian::Little,
        0xd4c3b2a1 | 0x4d3cb2a1 => Endian::Big,
        _ => panic!("{test}: not a classic pcap"),
    };
    let read = |at: usize| order.u32(&file, at);
    let link = LinkType::from_pcap(read(20)? & 0xffff);
    let mut packets = Vec::new();
    let mut at = 24;
    while let Some(caplen) = read(at + 8) {
        let start = at + 16;
        packets.push(file.get(start..start + caplen as usize)?.to_vec());
        at = start + caplen as usize;
    }
    Some((link, packets))
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn conformance_erspan_type_ii_gives_vlan_23_and_icmp_tuples() {
    let Some((link, packets)) = conformance_pcap("decode-erspan-typeII-01") else { return };
    let mut echo = 0;
    let mut reply = 0;
    for p in &packets {
        let d = decode(link, p, &opts());
        let Some(t) = d.tunnel else { continue };
        assert_eq!(t.kind, TunnelKind::ErspanII);
        assert_eq!((d.vlan_depth, d.vlan[0]), (1, 23));
        match inner_key(&d) {
            (s, dst, 8, 0, PROTO_ICMP) if s == ip("23.0.0.2") && dst == ip("23.0.0.3") => echo += 1,
            (s, dst, 0, 0, PROTO_ICMP) if s == ip("23.0.0.3") && dst == ip("23.0.0.2") => reply += 1,
            other => panic!("unexpected inner packet {other:?}"),
        }
    }
    // The test expects two alerts for each direction.
    assert_eq!((echo, reply), (2, 2));
}

#[test]
fn conformance_nsh_both_md_types() {
    for test in ["decode-nsh-type1", "decode-nsh-type2"] {
        let Some((link, packets)) = conformance_pcap(test) else { return };
        let d = decode(link, &packets[0], &opts());
        assert_eq!(events(&d), vec![], "{test}");
        assert_eq!(inner_key(&d), (ip("10.0.0.1"), ip("10.0.0.2"), 52377, 52464, PROTO_UDP), "{test}");
        assert_eq!(d.payload, b"data\n\n");
    }
}

#[test]
fn conformance_vxlan_has_four_echo_requests_with_tunnel_port_4789() {
    let Some((link, packets)) = conformance_pcap("vxlan-decoder-02") else { return };
    let mut requests = 0;
    for p in &packets {
        let d = decode(link, p, &opts());
        if let (Some(t), L4::Icmpv4(icmp)) = (d.tunnel, d.l4) {
            assert_eq!((t.kind, t.outer.dst_port, t.depth), (TunnelKind::Vxlan, 4789, 1));
            if icmp.icmp_type() == 8 {
                requests += 1;
            }
        }
    }
    assert_eq!(requests, 4);
}

#[test]
fn conformance_gre_inner_flows_are_the_ones_the_pass_rules_name() {
    if let Some((link, packets)) = conformance_pcap("bug-5633-gre-01") {
        for p in &packets {
            let d = decode(link, p, &opts());
            assert_eq!(d.tunnel.unwrap().kind, TunnelKind::Gre);
            assert_eq!(d.vlan[0], 6);
            let (_, dst, _, _, proto) = inner_key(&d);
            assert_eq!((dst, proto), (ip("2.2.2.2"), PROTO_UDP));
        }
    }
    if let Some((link, packets)) = conformance_pcap("bug-5633-gre-02") {
        // Every echo request (what `alert icmp ... itype:8` matches) is to or from the
        // address the pass rule names, so no alert may remain.
        let mut requests = 0;
        for p in &packets {
            let d = decode(link, p, &opts());
            assert!(d.tunnel.is_some());
            let (src, dst, itype, _, proto) = inner_key(&d);
            if proto == PROTO_ICMP && itype == 8 {
                requests += 1;
                assert!(src == ip("172.28.2.3") || dst == ip("172.28.2.3"));
            }
        }
        assert_eq!((packets.len(), requests), (40, 4));
    }
}

#[test]
fn conformance_chdlc_sll2_and_teredo_decode() {
    if let Some((link, packets)) = conformance_pcap("decode-chdlc-01") {
        assert_eq!((link, link.suricata_name()), (LinkType::CiscoHdlc, "C_HDLC"));
        let http = packets.iter().filter(|p| decode(link, p, &opts()).payload.starts_with(b"GET ")).count();
        assert_eq!(http, 1);
        assert!(packets.iter().all(|p| decode(link, p, &opts()).tuple().is_some()));
    }
    if let Some((link, packets)) = conformance_pcap("decode-sll2-02") {
        assert_eq!(link.suricata_name(), "LINUX_SLL2");
        assert!(packets.iter().any(|p| decode(link, p, &opts()).payload.starts_with(b"GET /testing")));
    }
    if let Some((link, packets)) = conformance_pcap("decode-teredo-01") {
        let teredo: Vec<_> = packets.iter().map(|p| decode(link, p, &opts())).filter(|d| d.tunnel.is_some()).collect();
        assert!(!teredo.is_empty());
        for d in &teredo {
            assert_eq!(d.tunnel.unwrap().kind, TunnelKind::Teredo);
            assert!(!d.tuple().unwrap().is_v4);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random bytes behind every tunnel header: never a panic, payload inside the
    /// capture, inner offset inside the capture.
    #[test]
    fn tunnels_survive_random_payloads(kind in 0usize..9, body in proptest::collection::vec(any::<u8>(), 0..120)) {
        let packet = match kind {
            0 => ipv4_around(47, OUTER_A, OUTER_B, &gre([0, 0], 0x0800, &[], &body)),
            1 => ipv4_around(47, OUTER_A, OUTER_B, &gre([0x10, 0], 0x88be, &[0; 4], &body)),
            2 => ipv4_around(47, OUTER_A, OUTER_B, &gre([0x30, 1], 0x880b, &[0; 8], &body)),
            3 => ipv4_around(4, OUTER_A, OUTER_B, &body),
            4 => ipv6_around(41, &body),
            5 => ipv4_udp(OUTER_A, OUTER_B, 1, 4789, &vxlan(1, &body)),
            6 => ipv4_udp(OUTER_A, OUTER_B, 1, 3544, &body),
            7 => ipv4_around(47, OUTER_A, OUTER_B, &body),
            _ => ipv4_udp(OUTER_A, OUTER_B, 1, 6081, &body),
        };
        for link in [LinkType::RawIp, LinkType::Ppp, LinkType::CiscoHdlc] {
            let d = decode(link, &packet, &opts());
            let (start, end) = (packet.as_ptr() as usize, packet.as_ptr() as usize + packet.len());
            prop_assert!(d.payload.is_empty() || (d.payload.as_ptr() as usize >= start && d.payload.as_ptr() as usize + d.payload.len() <= end));
            if let Some(t) = d.tunnel {
                prop_assert!((t.inner_offset as usize) <= packet.len());
                prop_assert!(t.depth >= 1);
            }
            let _ = flow_hash(link, &packet);
        }
    }

    /// GRE and VXLAN tunnels: both directions of the tunnel meet, and the hash is the one
    /// the bare outer packet gets, whatever the inner flow.
    #[test]
    fn tunnelled_flow_hash_is_symmetric(a: [u8; 4], b: [u8; 4], sport: u16, dport: u16, vxlan_tunnel: bool) {
        let forward = ipv4_udp(a, b, sport, dport, b"f");
        let backward = ipv4_udp(b, a, dport, sport, b"b");
        let wrap = |inner: &[u8], back: bool| {
            let (x, y) = if back { (OUTER_B, OUTER_A) } else { (OUTER_A, OUTER_B) };
            if vxlan_tunnel {
                let (s, d) = if back { (4789, 40000) } else { (40000, 4789) };
                ipv4_udp(x, y, s, d, &vxlan(3, &ethernet(ETHERTYPE_IPV4, inner)))
            } else {
                ipv4_around(47, x, y, &gre([0, 0], 0x0800, &[], inner))
            }
        };
        let (f, r) = (wrap(&forward, false), wrap(&backward, true));
        prop_assert_eq!(flow_hash(LinkType::RawIpv4, &f), flow_hash(LinkType::RawIpv4, &r));
        let bare = if vxlan_tunnel {
            ipv4_udp(OUTER_A, OUTER_B, 40000, 4789, b"x")
        } else {
            ipv4_around(47, OUTER_A, OUTER_B, b"x")
        };
        prop_assert_eq!(flow_hash(LinkType::RawIpv4, &f), flow_hash(LinkType::RawIpv4, &bare));
    }
}
