//! Tests of the header keywords (`headers.rs`) and of hostbits/tag parsing end to end.

use super::*;
use crate::decode::{decode, DecodeOptions};
use crate::detect::rule::{load_rules_str, RuleVars};
use crate::packet::LinkType;
use etherparse::PacketBuilder;

fn engine(rules: &str) -> DetectEngine {
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "parse errors: {:?}", load.errors);
    assert!(load.unsupported_rules.is_empty(), "unsupported: {:?}", load.unsupported_rules);
    let (engine, report) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    assert!(report.rules_rejected.is_empty(), "rejected: {:?}", report.rules_rejected);
    engine
}

fn sids_in(e: &DetectEngine, ctx: &mut DetectCtx, frame: &[u8]) -> Vec<u32> {
    let d = decode(LinkType::Ethernet, frame, &DecodeOptions { validate_checksums: false, ..DecodeOptions::default() });
    let pkt = DetectPacket {
        ts: Timestamp::from_parts(1, 0),
        decoded: Some(&d),
        tuple: d.tuple().expect("ip packet"),
        payload: d.payload,
        ..Default::default()
    };
    let mut alerts = Vec::new();
    e.inspect(ctx, &pkt, None, &mut alerts);
    let mut s: Vec<u32> = alerts.iter().map(|a| a.sid).collect();
    s.sort_unstable();
    s
}

fn sids(e: &DetectEngine, frame: &[u8]) -> Vec<u32> {
    sids_in(e, &mut e.new_ctx(), frame)
}

fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([192, 168, 0, 1], [10, 0, 0, 1], 64)
        .udp(53, 80)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// A TCP SYN with an MSS option, built by hand so the options are exact.
fn tcp_syn_with_mss(mss: u16) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(40000, 80, 7, 1024)
        .syn()
        .options(&[
            etherparse::TcpOptionElement::MaximumSegmentSize(mss),
            etherparse::TcpOptionElement::Noop,
            etherparse::TcpOptionElement::Noop,
        ])
        .unwrap()
        .write(&mut out, &[])
        .unwrap();
    out
}

#[test]
fn udp_and_ipv4_header_buffers() {
    let e = engine(concat!(
        "alert udp any any -> any any (udp.hdr; content:\"|00 08|\"; offset:4; depth:2; sid:1;)\n",
        "alert udp any any -> any any (udp.hdr; content:\"|00 09|\"; offset:4; depth:2; sid:2;)\n",
        "alert ip any any -> any any (ipv4.hdr; content:\"|0a 00 00 01|\"; offset:16; depth:4; sid:3;)\n",
        // The payload is not part of the header buffer.
        "alert udp any any -> any any (udp.hdr; content:\"abc\"; sid:4;)\n",
        "alert udp any any -> any any (tcp.hdr; content:\"|00|\"; sid:5;)\n",
    ));
    assert_eq!(sids(&e, &udp_frame(&[])), vec![1, 3]);
    assert_eq!(sids(&e, &udp_frame(b"abc")), vec![3]);
}

#[test]
fn tcp_header_buffer_includes_options_and_mss_keyword() {
    let e = engine(concat!(
        "alert tcp any any -> any any (tcp.hdr; content:\"|02 04|\"; offset:20; byte_test:2,<,536,0,big,relative; sid:1;)\n",
        "alert tcp any any -> any any (tcp.mss:<536; sid:2;)\n",
        "alert tcp any any -> any any (tcp.mss:1460; sid:3;)\n",
        "alert tcp any any -> any any (tcp.hdr; content:\"|00 50|\"; offset:2; depth:2; sid:4;)\n",
    ));
    assert_eq!(sids(&e, &tcp_syn_with_mss(500)), vec![1, 2, 4]);
    assert_eq!(sids(&e, &tcp_syn_with_mss(1460)), vec![3, 4]);
}

#[test]
fn byte_variables_carry_from_one_header_buffer_to_the_next() {
    // The IPv4 header has TTL 64 at offset 8 and protocol 6 at offset 9; the TCP header the
    // destination port 80 at offset 2. Variables computed from ipv4.hdr drive a byte_test, a
    // byte count and a content offset in tcp.hdr, as Suricata's per-rule variables do.
    let e = engine(concat!(
        // n = 6 - 5 = 1; r = TTL (1 byte) + 16 = 80.
        "alert tcp any any -> any any (ipv4.hdr; byte_math:bytes 1, offset 9, oper -, rvalue 5, result n; byte_math:bytes n, offset 8, oper +, rvalue 16, result r; tcp.hdr; byte_test:2,=,r,2; sid:1;)\n",
        "alert tcp any any -> any any (ipv4.hdr; byte_math:bytes 1, offset 8, oper +, rvalue 17, result r; tcp.hdr; byte_test:2,=,r,2; sid:2;)\n",
        // o = 6 - 4 = 2: the port is at the offset; p = 6: it is not.
        "alert tcp any any -> any any (ipv4.hdr; byte_math:bytes 1, offset 9, oper -, rvalue 4, result o; tcp.hdr; content:\"|00 50|\"; offset:o; depth:2; sid:3;)\n",
        "alert tcp any any -> any any (ipv4.hdr; byte_extract:1,9,p; tcp.hdr; content:\"|00 50|\"; offset:p; depth:2; sid:4;)\n",
    ));
    assert_eq!(sids(&e, &tcp_syn_with_mss(1460)), vec![1, 3]);
}

#[test]
fn icmpv4_header_length_follows_suricata() {
    // Router advertisement: 2 addresses of 2 words each -> 8 + 16 header bytes.
    let mut msg = vec![9, 0, 0, 0, 2, 2, 0, 30];
    msg.extend_from_slice(&[10, 14, 80, 84, 0, 0, 0, 1, 10, 14, 80, 85, 0, 0, 0, 1]);
    assert_eq!(icmpv4_len(&msg), 24);
    // Truncated address list: only the base header.
    assert_eq!(icmpv4_len(&msg[..12]), 8);
    assert_eq!(icmpv4_len(&[8, 0, 0, 0, 0, 1, 0, 1, b'x']), 8);
    let mut ts = vec![13, 0, 0, 0, 0, 1, 0, 1];
    ts.extend_from_slice(&[0; 12]);
    assert_eq!(icmpv4_len(&ts), 20);
}

fn icmpv4_len(msg: &[u8]) -> usize {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64)
        .write(&mut out, etherparse::IpNumber(1), msg)
        .unwrap();
    let d = decode(LinkType::Ethernet, &out, &DecodeOptions::default());
    headers::HeaderBuffer::Icmpv4.bytes(&d).map_or(0, |b| b.len())
}

#[test]
fn checksum_keywords_verify_regardless_of_decoder_setting() {
    let e = engine(concat!(
        "alert udp any any -> any any (udpv4-csum:valid; sid:1;)\n",
        "alert udp any any -> any any (udpv4-csum:invalid; sid:2;)\n",
        "alert ip any any -> any any (ipv4-csum:valid; sid:3;)\n",
        "alert ip any any -> any any (ipv4-csum:invalid; sid:4;)\n",
        "alert udp any any -> any any (tcpv4-csum:invalid; sid:5;)\n",
    ));
    let good = udp_frame(b"data");
    assert_eq!(sids(&e, &good), vec![1, 3]);
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff; // payload byte: the UDP checksum no longer matches
    assert_eq!(sids(&e, &bad), vec![2, 3]);
    let mut bad_ip = good.clone();
    bad_ip[14 + 8] ^= 0x01; // TTL: the IPv4 header checksum breaks
    assert_eq!(sids(&e, &bad_ip), vec![1, 4]);
}

fn vlan_frame(tags: &[u16]) -> Vec<u8> {
    let mut inner = Vec::new();
    PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64).udp(1, 2).write(&mut inner, b"x").unwrap();
    let mut f = vec![2; 6];
    f.extend_from_slice(&[1; 6]);
    for t in tags {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&t.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&inner);
    f
}

#[test]
fn vlan_id_and_layers() {
    let e = engine(concat!(
        "alert ip any any -> any any (vlan.id:200,0; sid:1;)\n",
        "alert ip any any -> any any (vlan.id:300; sid:2;)\n",
        "alert ip any any -> any any (vlan.id:300,-1; sid:3;)\n",
        "alert ip any any -> any any (vlan.id:!200,1; sid:4;)\n",
        "alert ip any any -> any any (vlan.id:>100,all; sid:5;)\n",
        "alert ip any any -> any any (vlan.id:>250,all; sid:6;)\n",
        "alert ip any any -> any any (vlan.layers:2; sid:7;)\n",
        "alert ip any any -> any any (vlan.layers:0; sid:8;)\n",
        "alert ip any any -> any any (vlan.id:0x12C,1; sid:9;)\n",
    ));
    assert_eq!(sids(&e, &vlan_frame(&[200, 300])), vec![1, 2, 3, 4, 5, 7, 9]);
    // Untagged: only the layer count can match.
    assert_eq!(sids(&e, &vlan_frame(&[])), vec![8]);
}

#[test]
fn decode_event_keyword() {
    let e = engine(concat!(
        "alert ip any any -> any any (decode-event:udp.hlen_invalid; sid:1;)\n",
        "alert ip any any -> any any (decode-event:ipv4.trunc_pkt; sid:2;)\n",
    ));
    assert!(sids(&e, &udp_frame(b"xy")).is_empty());
    // UDP length field larger than the IP payload.
    let mut f = udp_frame(b"xy");
    f[14 + 20 + 5] = 200;
    assert_eq!(sids(&e, &f), vec![1]);
}

#[test]
fn content_depth_counts_from_offset() {
    let e = engine(concat!(
        "alert udp any any -> any any (content:\"cd\"; offset:2; depth:2; sid:1;)\n",
        "alert udp any any -> any any (content:\"cd\"; offset:1; depth:2; sid:2;)\n",
        "alert udp any any -> any any (content:\"ab\"; depth:4; sid:3;)\n",
    ));
    assert_eq!(sids(&e, &udp_frame(b"abcdef")), vec![1, 3]);
}

#[test]
fn hostbits_are_host_tracked_xbits() {
    let e = engine(concat!(
        "alert udp any any -> any any (hostbits:set,seen,src; sid:1;)\n",
        "alert udp any any -> any any (hostbits:isset,seen,src; sid:2;)\n",
        "alert udp any any -> any any (hostbits:isset,seen,dst; sid:3;)\n",
        "alert udp any any -> any any (hostbits:isnotset,seen,dst; sid:4;)\n",
        "alert udp any any -> any any (hostbits:toggle,flip; sid:5;)\n",
        "alert udp any any -> any any (hostbits:isset,flip; sid:6;)\n",
        "alert udp any any -> any any (hostbits:noalert; hostbits:isset,seen; sid:7;)\n",
    ));
    let mut ctx = e.new_ctx();
    let f = udp_frame(b"x");
    // Setters run before readers (Suricata's ordering), so the bit is seen on the same packet.
    assert_eq!(sids_in(&e, &mut ctx, &f), vec![1, 2, 4, 5, 6]);
    // The toggle flips it off again on the next packet.
    assert_eq!(sids_in(&e, &mut ctx, &f), vec![1, 2, 4, 5]);
}

#[test]
fn tag_is_accepted_and_the_rule_still_alerts() {
    let e = engine(concat!(
        "alert udp any any -> any any (tag:session; sid:1;)\n",
        "alert udp any any -> any any (tag:host,9,packets,dst; tag:host,15,seconds,src; sid:2;)\n",
    ));
    assert_eq!(sids(&e, &udp_frame(b"x")), vec![1, 2]);
}
