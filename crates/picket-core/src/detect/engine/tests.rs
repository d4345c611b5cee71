use super::*;
use crate::decode::{decode, DecodeOptions};
use crate::detect::rule::{load_rules_str, RuleVars};
use crate::packet::LinkType;
use etherparse::PacketBuilder;

pub(super) const CLIENT: [u8; 4] = [192, 168, 1, 10];
pub(super) const SERVER: [u8; 4] = [10, 0, 0, 1];
const OUTSIDE: [u8; 4] = [8, 8, 8, 8];

pub(super) fn engine_with(rules: &str, thresholds: ThresholdConfig) -> DetectEngine {
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "parse errors: {:?}", load.errors);
    assert!(load.unsupported_rules.is_empty(), "unsupported: {:?}", load.unsupported_rules);
    let cfg = DetectConfig { thresholds, ..Default::default() };
    let (engine, report) = DetectEngine::build(load.rules, &cfg).expect("build");
    assert!(report.rules_rejected.is_empty(), "rejected: {:?}", report.rules_rejected);
    engine
}

pub(super) fn engine(rules: &str) -> DetectEngine {
    engine_with(rules, ThresholdConfig::default())
}

fn tcp(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(src, dst, 64)
        .tcp(sp, dp, 1000, 64000)
        .ack(1)
        .psh()
        .write(&mut out, payload)
        .unwrap();
    out
}

pub(super) fn udp(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6]).ipv4(src, dst, 64).udp(sp, dp).write(&mut out, payload).unwrap();
    out
}

fn icmp_echo(src: [u8; 4], dst: [u8; 4], id: u16, seq: u16) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(src, dst, 32)
        .icmpv4_echo_request(id, seq)
        .write(&mut out, b"ping")
        .unwrap();
    out
}

/// Everything one inspection call needs besides the frame.
#[derive(Default)]
pub(super) struct Opts<'a> {
    pub(super) secs: u64,
    pub(super) flow: Option<FlowInfo>,
    pub(super) stream: Option<StreamChunk<'a>>,
    pub(super) payload_in_stream: bool,
    pub(super) repeat: bool,
    pub(super) buffers: Option<&'a dyn BufferSource>,
    pub(super) buffers_other: Option<&'a dyn BufferSource>,
}

pub(super) fn inspect_with(
    e: &DetectEngine,
    ctx: &mut DetectCtx,
    frame: &[u8],
    o: Opts<'_>,
    flow: Option<&mut DetectFlow>,
) -> Vec<Alert> {
    let d = decode(LinkType::Ethernet, frame, &DecodeOptions::default());
    let pkt = DetectPacket {
        ts: Timestamp::from_parts(o.secs, 0),
        decoded: Some(&d),
        tuple: d.tuple().expect("ip packet"),
        payload: d.payload,
        flow: o.flow,
        stream: o.stream,
        payload_in_stream: o.payload_in_stream,
        repeat: o.repeat,
        buffers: o.buffers,
        buffers_other: o.buffers_other,
        ..Default::default()
    };
    let mut alerts = Vec::new();
    e.inspect(ctx, &pkt, flow, &mut alerts);
    alerts
}

pub(super) fn sids(e: &DetectEngine, frame: &[u8]) -> Vec<u32> {
    let mut ctx = e.new_ctx();
    inspect_with(e, &mut ctx, frame, Opts::default(), None).iter().map(|a| a.sid).collect()
}

fn to_server() -> Option<FlowInfo> {
    Some(FlowInfo { flow_id: 7, to_server: true, established: true, ..Default::default() })
}

#[test]
fn content_nocase_and_negation() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"a"; content:"EVIL"; nocase; sid:1;)
alert tcp any any -> any any (msg:"b"; content:"evil"; content:!"good"; sid:2;)
alert tcp any any -> any any (msg:"c"; content:"EVIL"; sid:3;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1000, SERVER, 80, b"xx evil yy")), vec![1, 2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1000, SERVER, 80, b"xx evil good")), vec![1]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1000, SERVER, 80, b"EVIL")), vec![1, 3]);
    assert!(sids(&e, &tcp(CLIENT, 1000, SERVER, 80, b"nothing")).is_empty());
}

#[test]
fn relative_content_backtracks_to_later_occurrence() {
    let e =
        engine(r#"alert tcp any any -> any any (msg:"bt"; content:"a"; content:"b"; distance:0; within:1; sid:1;)"#);
    // The first "a" is followed by "x"; only the second "a" has "b" right after it.
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"axxab")), vec![1]);
    assert!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"axxaxb")).is_empty());
    let e = engine(
        r#"alert tcp any any -> any any (msg:"bt3"; content:"k"; content:"v"; distance:1; within:1; content:"z"; within:2; sid:2;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"k1vq kxvz")), vec![2]);
}

#[test]
fn negated_distance_content_retries_the_content_before_it() {
    // Suricata's UriTestSig21 shape: the first "fix" is followed by "and", the second is not.
    // A negated distance-only content makes the keyword before it try later occurrences
    // (Suricata marks it RELATIVE_NEXT, a plain distance-only content DISTANCE_NEXT).
    let e = engine(
        r#"alert tcp any any -> any any (msg:"neg"; content:"fix"; content:"this"; within:6; content:!"and"; distance:0; sid:1;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"fix_this_and_yes_fix_this_now")), vec![1]);
    assert!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"fix_this_and_fix_that")).is_empty());
    // The same with a pcre first.
    let e = engine(r#"alert tcp any any -> any any (msg:"re"; pcre:"/fix_/"; content:!"and"; distance:0; sid:2;)"#);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"fix_and fix_now")), vec![2]);
    assert!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"fix_and fix_and")).is_empty());
}

#[test]
fn depth_offset_startswith_endswith() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"d"; content:"GET"; depth:3; sid:1;)
alert tcp any any -> any any (msg:"o"; content:"abc"; offset:4; sid:2;)
alert tcp any any -> any any (msg:"s"; content:"GET"; startswith; sid:3;)
alert tcp any any -> any any (msg:"e"; content:"end"; endswith; sid:4;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"GET abc end")), vec![1, 2, 3, 4]);
    assert!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"abc GET endx")).is_empty());
}

#[test]
fn isdataat_forms() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"r"; content:"AB"; isdataat:2,relative; sid:1;)
alert tcp any any -> any any (msg:"n"; content:"AB"; isdataat:!1,relative; sid:2;)
alert tcp any any -> any any (msg:"abs"; content:"AB"; isdataat:5; sid:3;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"ABcd")), vec![1]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"xxxxAB")), vec![2, 3]);
}

#[test]
fn pcre_modifiers() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"i"; content:"user"; pcre:"/USER\s+root/i"; sid:1;)
alert tcp any any -> any any (msg:"R"; content:"id="; pcre:"/^\d{3}\b/R"; sid:2;)
alert tcp any any -> any any (msg:"neg"; content:"id="; pcre:!"/admin/"; sid:3;)
alert tcp any any -> any any (msg:"s"; content:"a"; pcre:"/a.b/s"; sid:4;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"user   ROOT id=123 a\nb")), vec![1, 2, 3, 4]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"user x id=12345 admin")), Vec::<u32>::new());
}

#[test]
fn pcre_jit_builds_ahead_of_packets_once() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"p"; content:"user"; pcre:"/USER\s+root/i"; sid:1;)
alert http any any -> any any (msg:"u"; http.uri; content:"/a"; pcre:"/\/a\d+/"; sid:2;)
alert tcp any any -> any any (msg:"c"; content:"x"; sid:3;)"#,
    );
    // One pcre in a packet program, one in an app-buffer program.
    assert_eq!(e.jit_compile_pcre(), 2);
    assert_eq!(e.jit_compile_pcre(), 0, "each pcre is JIT-compiled once");
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"user   ROOT")), vec![1]);
    // A pcre a packet reached first is not built again.
    let e = engine(r#"alert tcp any any -> any any (msg:"p"; content:"user"; pcre:"/USER\s+root/i"; sid:1;)"#);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"user   ROOT")), vec![1]);
    assert_eq!(e.jit_compile_pcre(), 0);
}

#[test]
fn byte_keywords() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"bt be"; content:"|AA|"; byte_test:2,>,0x0100,0,relative; sid:1;)
alert udp any any -> any any (msg:"bt le"; content:"|AA|"; byte_test:2,=,0x0201,0,relative,little; sid:2;)
alert udp any any -> any any (msg:"bt str"; content:"len="; byte_test:3,=,123,0,relative,string,dec; sid:3;)
alert udp any any -> any any (msg:"bt mask"; content:"|AA|"; byte_test:1,=,0x0,0,relative,bitmask 0xF0; sid:4;)
alert udp any any -> any any (msg:"jump"; content:"|AA|"; byte_jump:1,2,relative; content:"Z"; within:1; sid:5;)
alert udp any any -> any any (msg:"extract"; byte_extract:1,0,n; content:"Q"; offset:1; depth:n; sid:6;)
alert udp any any -> any any (msg:"math"; byte_math:bytes 1,offset 0,oper +,rvalue 1,result r; byte_test:1,=,r,1; content:"|03|"; sid:7;)"#,
    );
    // AA 01 02 -> 0x0102 big endian, 0x0201 little endian; jump 1 byte value 2 from after
    // offset 2 → position of "Z".
    let hits = sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\xAA\x01\x02Z len=123"));
    assert_eq!(hits, vec![1, 2, 3, 4]);
    // byte_jump: AA, then reads byte at relative offset 2 (value 1) and jumps 1 past the read.
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\xAA\x00\x01\x00Zx")), vec![4, 5]);
    // byte_extract: first byte 4 -> "Q" must be in [1, 5).
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x04xxQ")), vec![6]);
    assert!(!sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x02xxQ")).contains(&6));
    // byte_math: 2 + 1 = 3 equals the second byte.
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x02\x03")), vec![7]);
}

#[test]
fn flowbits_across_packets() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"login"; content:"LOGIN"; flowbits:set,logged_in; flowbits:noalert; sid:1;)
alert tcp any any -> any any (msg:"cmd after login"; content:"CMD"; flowbits:isset,logged_in; sid:2;)
alert tcp any any -> any any (msg:"cmd w/o login"; content:"CMD"; flowbits:isnotset,logged_in; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let o = || Opts { flow: to_server(), ..Default::default() };
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"CMD"), o(), Some(&mut flow));
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![3]);
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"LOGIN"), o(), Some(&mut flow));
    assert!(a.is_empty(), "noalert rule must not alert");
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"CMD"), o(), Some(&mut flow));
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![2]);
    // Same packet sets and reads: setters are ordered first.
    let mut fresh = DetectFlow::default();
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"LOGIN CMD"), o(), Some(&mut fresh));
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![2]);
}

#[test]
fn entropy_compares_and_keeps_the_last_value_per_buffer() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"hi"; entropy: value > 1.5; sid:1;)
alert tcp any any -> any any (msg:"lo"; entropy: value < 1.5; sid:2;)
alert tcp any any -> any any (msg:"window"; entropy: offset 2, bytes 2, value = 0; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let o = || Opts { flow: to_server(), ..Default::default() };
    // "abcd": 2 bits per byte; its window "cd" is 1 bit, so sid 3 (= 0) fails, but its
    // value is the one kept: the last computed, matching or not (Suricata's flow float var).
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"abcd"), o(), Some(&mut flow));
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![1]);
    assert_eq!(e.entropy_values(&flow).collect::<Vec<_>>(), vec![("content", 1.0)]);
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"aaaa"), o(), Some(&mut flow));
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(e.entropy_values(&flow).collect::<Vec<_>>(), vec![("content", 0.0)]);
}

#[test]
fn flowint_counts() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"count"; content:"X"; flowint:hits,+,1; flowint:hits,>,2; sid:1;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let mut n = 0;
    for _ in 0..5 {
        n += inspect_with(
            &e,
            &mut ctx,
            &tcp(CLIENT, 1, SERVER, 2, b"X"),
            Opts { flow: to_server(), ..Default::default() },
            Some(&mut flow),
        )
        .len();
    }
    // Suricata evaluates flowint keywords in order: `+` runs on every packet reaching it.
    assert_eq!(n, 3);
    assert_eq!(flow.vars.int(0), Some(5));
}

#[test]
fn thresholds_limit_threshold_both_and_suppress() {
    let rules = r#"alert udp any any -> any any (msg:"limit"; content:"L"; threshold:type limit,track by_src,count 1,seconds 60; sid:1;)
alert udp any any -> any any (msg:"threshold"; content:"T"; threshold:type threshold,track by_src,count 3,seconds 60; sid:2;)
alert udp any any -> any any (msg:"both"; content:"B"; threshold:type both,track by_dst,count 2,seconds 60; sid:3;)
alert udp any any -> any any (msg:"suppressed"; content:"S"; sid:4;)
alert udp any any -> any any (msg:"df"; content:"D"; detection_filter:track by_src,count 2,seconds 60; sid:5;)"#;
    let (cfg, errors) = ThresholdConfig::parse(
        "threshold.config",
        "suppress gen_id 1, sig_id 4, track by_src, ip 192.168.1.10\n",
        &RuleVars::default(),
    );
    assert!(errors.is_empty());
    let e = engine_with(rules, cfg);
    let mut ctx = e.new_ctx();
    let mut count = |payload: &[u8], src: [u8; 4], secs: u64| -> Vec<usize> {
        (0..6)
            .map(|i| {
                inspect_with(
                    &e,
                    &mut ctx,
                    &udp(src, 1, SERVER, 2, payload),
                    Opts { secs: secs + i, ..Default::default() },
                    None,
                )
                .len()
            })
            .collect()
    };
    assert_eq!(count(b"L", CLIENT, 100), vec![1, 0, 0, 0, 0, 0]);
    assert_eq!(count(b"L", OUTSIDE, 100), vec![1, 0, 0, 0, 0, 0], "by_src tracks each source");
    assert_eq!(count(b"L", CLIENT, 200), vec![1, 0, 0, 0, 0, 0], "a new window after 60 s");
    assert_eq!(count(b"T", CLIENT, 100), vec![0, 0, 1, 0, 0, 1]);
    assert_eq!(count(b"B", CLIENT, 100), vec![0, 1, 0, 0, 0, 0]);
    assert_eq!(count(b"S", CLIENT, 100), vec![0; 6]);
    assert_eq!(count(b"S", OUTSIDE, 100), vec![1; 6]);
    assert_eq!(count(b"D", CLIENT, 100), vec![0, 0, 1, 1, 1, 1]);
}

#[test]
fn threshold_config_overrides_rule_threshold() {
    let rules = r#"alert udp any any -> any any (msg:"x"; content:"X"; threshold:type limit,track by_src,count 1,seconds 60; sid:9;)"#;
    let (cfg, _) = ThresholdConfig::parse(
        "t",
        "threshold gen_id 1, sig_id 9, type limit, track by_src, count 3, seconds 60\n",
        &RuleVars::default(),
    );
    let e = engine_with(rules, cfg);
    let mut ctx = e.new_ctx();
    let n: usize =
        (0..5).map(|_| inspect_with(&e, &mut ctx, &udp(CLIENT, 1, SERVER, 2, b"X"), Opts::default(), None).len()).sum();
    assert_eq!(n, 3);
}

#[test]
fn bidirectional_and_ports() {
    let e = engine(
        r#"alert tcp 10.0.0.1 80 <> any any (msg:"bidir"; content:"hi"; sid:1;)
alert tcp 10.0.0.1 80 -> any any (msg:"one way"; content:"hi"; sid:2;)
alert tcp any any -> any [443,8443] (msg:"port"; content:"hi"; sid:3;)"#,
    );
    assert_eq!(sids(&e, &tcp(SERVER, 80, CLIENT, 5555, b"hi")), vec![1, 2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 5555, SERVER, 80, b"hi")), vec![1]);
    assert_eq!(sids(&e, &tcp(CLIENT, 5555, SERVER, 8443, b"hi")), vec![3]);
}

#[test]
fn ip_only_rules_once_per_direction() {
    let e = engine(
        r#"alert ip [8.8.8.8,1.2.3.0/24] any -> $HOME_NET any (msg:"bad src"; sid:1;)
alert ip $HOME_NET any -> 1.2.3.4 any (msg:"bad dst"; sid:2;)
alert ip any any -> any any (msg:"everything"; sid:3;)"#,
    );
    assert_eq!(sids(&e, &udp(OUTSIDE, 53, CLIENT, 999, b"x")), vec![1, 3]);
    assert_eq!(sids(&e, &tcp(CLIENT, 999, [1, 2, 3, 4], 80, b"")), vec![2, 3]);
    assert_eq!(sids(&e, &icmp_echo([1, 2, 3, 9], CLIENT, 1, 1)), vec![1, 3]);
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let frame = udp(OUTSIDE, 53, CLIENT, 999, b"x");
    assert_eq!(
        inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, Some(&mut flow)).len(),
        2
    );
    assert!(inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, Some(&mut flow))
        .is_empty());
}

#[test]
fn the_ipv4_index_finds_the_rules_of_every_address() {
    // Ranges inside one /16, across /16 edges, at both ends of the address space, nested
    // and overlapping: every address near an edge gets exactly the rules whose ranges hold it.
    let ranges: Vec<(u32, Vec<(u32, u32)>)> = vec![
        (0, vec![(0, 0)]),
        (1, vec![(0x0102_0300, 0x0102_03ff), (0x0a00_0001, 0x0a00_0001)]),
        (2, vec![(0x0102_0000, 0x0102_ffff)]),
        (3, vec![(0x0102_fff0, 0x0103_000f)]),
        (4, vec![(0xffff_ff00, 0xffff_ffff)]),
        (5, vec![(0x0a00_0000, 0x0aff_ffff)]),
        (6, vec![(0x0102_0380, 0x0102_0380)]),
    ];
    let idx = V4Index::build(&ranges);
    let mut probes = vec![0u32, 1, u32::MAX, u32::MAX - 1];
    for (_, rs) in &ranges {
        for &(lo, hi) in rs {
            for a in [lo, hi] {
                probes.extend([
                    a.wrapping_sub(1),
                    a,
                    a.wrapping_add(1),
                    a & 0xffff_0000,
                    a | 0xffff,
                    (a | 0xffff).wrapping_add(1),
                ]);
            }
        }
    }
    for addr in probes {
        let mut found = idx.lookup(addr).to_vec();
        found.sort_unstable();
        let want: Vec<u32> = ranges
            .iter()
            .filter(|(_, rs)| rs.iter().any(|&(lo, hi)| (lo..=hi).contains(&addr)))
            .map(|(r, _)| *r)
            .collect();
        assert_eq!(found, want, "address {addr:#010x}");
    }
}

#[test]
fn a_packet_with_several_stream_chunks_alerts_once_per_rule() {
    // A packet whose ack releases two contiguous runs is inspected per chunk; as in
    // Suricata (one rule evaluation per packet, over every chunk), a header-only rule alerts
    // on the first chunk only, a content rule on the first chunk it matches in, never twice.
    let e = engine(
        r#"alert tcp any any -> any any (msg:"header"; flow:to_server; ttl:64; sid:1;)
alert tcp any any -> any any (msg:"content"; flow:to_server; content:"ATTACK"; sid:2;)
alert tcp any any -> any any (msg:"second"; flow:to_server; content:"LATER"; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = tcp(CLIENT, 1, SERVER, 2, b"");
    let run = |ctx: &mut DetectCtx, data: &'static [u8], offset: u64, repeat: bool| {
        let chunk = StreamChunk { offset, data, new_start: offset, new_end: offset + data.len() as u64, gap_before: 0 };
        let o = Opts { flow: to_server(), stream: Some(chunk), repeat, ..Default::default() };
        let mut s: Vec<u32> = inspect_with(&e, ctx, &frame, o, None).iter().map(|a| a.sid).collect();
        s.sort_unstable();
        s
    };
    assert_eq!(run(&mut ctx, b"xxATTACK", 0, false), vec![1, 2]);
    assert_eq!(run(&mut ctx, b"ATTACK LATER", 100, true), vec![3]);
    // The next packet starts afresh.
    assert_eq!(run(&mut ctx, b"ATTACK", 200, false), vec![1, 2]);
}

#[test]
fn stream_versus_packet_payload() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"default"; flow:established,to_server; content:"ATTACK"; sid:1;)
alert tcp any any -> any any (msg:"only_stream"; flow:established,to_server,only_stream; content:"ATTACK"; sid:2;)
alert tcp any any -> any any (msg:"no_stream"; flow:established,to_server,no_stream; content:"ATTACK"; sid:3;)
alert tcp any any -> any any (msg:"depth"; flow:to_server; content:"HEAD"; depth:4; sid:4;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = tcp(CLIENT, 1, SERVER, 2, b"ATTACK");
    // Packet data went into the stream, no chunk released yet: only the packet rule sees it.
    let a = inspect_with(
        &e,
        &mut ctx,
        &frame,
        Opts { flow: to_server(), payload_in_stream: true, ..Default::default() },
        None,
    );
    assert_eq!(a.iter().map(|a| (a.sid, a.in_stream)).collect::<Vec<_>>(), vec![(3, false)]);
    // The chunk arrives on a later packet: stream rules match in the stream.
    let data = b"xxATTACKxx";
    let chunk = StreamChunk { offset: 0, data, new_start: 0, new_end: data.len() as u64, gap_before: 0 };
    let frame2 = tcp(CLIENT, 1, SERVER, 2, b"");
    let a = inspect_with(
        &e,
        &mut ctx,
        &frame2,
        Opts { flow: to_server(), stream: Some(chunk), ..Default::default() },
        None,
    );
    assert_eq!(a.iter().map(|a| (a.sid, a.in_stream)).collect::<Vec<_>>(), vec![(1, true), (2, true)]);
    // Without stream tracking (payload not added), the default rule falls back to the packet.
    let a = inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, None);
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![1, 3]);
    // depth counts from the stream start: "HEAD" at stream offset 1000 is past depth 4.
    let late = StreamChunk { offset: 1000, data: b"HEAD", new_start: 1000, new_end: 1004, gap_before: 0 };
    let a =
        inspect_with(&e, &mut ctx, &frame2, Opts { flow: to_server(), stream: Some(late), ..Default::default() }, None);
    assert!(a.is_empty());
    let early = StreamChunk { offset: 0, data: b"HEAD", new_start: 0, new_end: 4, gap_before: 0 };
    let a = inspect_with(
        &e,
        &mut ctx,
        &frame2,
        Opts { flow: to_server(), stream: Some(early), ..Default::default() },
        None,
    );
    assert_eq!(a.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![4]);
}

#[test]
fn pass_orders_first_and_passes_flow() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"alert"; content:"X"; sid:1;)
drop tcp any any -> any any (msg:"drop"; content:"X"; sid:2;)
alert tcp any any -> any any (msg:"high prio"; content:"X"; priority:1; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let a = inspect_with(&e, &mut ctx, &tcp(CLIENT, 1, SERVER, 2, b"X"), Opts::default(), None);
    assert_eq!(
        a.iter().map(|a| (a.sid, a.action)).collect::<Vec<_>>(),
        vec![(2, Action::Drop), (3, Action::Alert), (1, Action::Alert)]
    );
    assert_eq!(a[0].severity, 3);
    assert_eq!(a[1].severity, 1);

    let e = engine(
        r#"alert tcp any any -> any any (msg:"alert"; content:"X"; sid:1;)
pass tcp any any -> any any (msg:"pass"; content:"X"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let frame = tcp(CLIENT, 1, SERVER, 2, b"X");
    let a = inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, Some(&mut flow));
    assert_eq!(a.iter().map(|a| (a.sid, a.action)).collect::<Vec<_>>(), vec![(2, Action::Pass)]);
    assert!(!a[0].flow_scope && !flow.passed, "a pass on packet data passes its packet only");

    // An IP-only pass acts on the flow (Suricata's action scope).
    let e = engine(
        r#"alert tcp any any -> any any (msg:"alert"; content:"X"; sid:1;)
pass tcp any any -> any any (msg:"pass"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let a = inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, Some(&mut flow));
    assert_eq!(a.iter().map(|a| (a.sid, a.flow_scope)).collect::<Vec<_>>(), vec![(2, true)]);
    assert!(flow.passed);
    assert!(inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, Some(&mut flow))
        .is_empty());
}

#[test]
fn packet_alert_max_and_classification() {
    let mut text = String::new();
    for sid in 1..=20 {
        text.push_str(&format!(
            "alert udp any any -> any any (msg:\"r{sid}\"; content:\"Z\"; classtype:trojan-activity; sid:{sid};)\n"
        ));
    }
    let e = engine(&text);
    let a = {
        let mut ctx = e.new_ctx();
        inspect_with(&e, &mut ctx, &udp(CLIENT, 1, SERVER, 2, b"Z"), Opts::default(), None)
    };
    assert_eq!(a.len(), 15);
    assert_eq!(&*a[0].category, "A Network Trojan was detected");
    assert_eq!(a[0].severity, 1);
}

#[test]
fn header_keywords() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"syn"; flags:S; sid:1;)
alert tcp any any -> any any (msg:"ack+"; flags:A+; sid:2;)
alert tcp any any -> any any (msg:"dsize"; dsize:>3; sid:3;)
alert ip any any -> any any (msg:"ttl"; ttl:<40; sid:4;)
alert icmp any any -> any any (msg:"echo"; itype:8; icode:0; icmp_id:77; icmp_seq:5; sid:5;)
alert tcp any any -> any any (msg:"window"; window:64000; sid:6;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"abcd")), vec![2, 3, 6]);
    assert_eq!(sids(&e, &icmp_echo(CLIENT, SERVER, 77, 5)), vec![4, 5]);
    assert_eq!(sids(&e, &icmp_echo(CLIENT, SERVER, 78, 5)), vec![4]);
    let mut syn = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(CLIENT, SERVER, 64)
        .tcp(1, 2, 0, 1024)
        .syn()
        .write(&mut syn, b"")
        .unwrap();
    assert_eq!(sids(&e, &syn), vec![1]);
}

#[test]
fn flow_keyword_needs_flow_info() {
    let e = engine(r#"alert tcp any any -> any any (msg:"f"; flow:established,to_client; content:"R"; sid:1;)"#);
    let mut ctx = e.new_ctx();
    let frame = tcp(SERVER, 80, CLIENT, 1, b"R");
    assert!(inspect_with(&e, &mut ctx, &frame, Opts::default(), None).is_empty());
    assert!(inspect_with(&e, &mut ctx, &frame, Opts { flow: to_server(), ..Default::default() }, None).is_empty());
    let to_client = Some(FlowInfo { to_server: false, established: true, ..Default::default() });
    assert_eq!(inspect_with(&e, &mut ctx, &frame, Opts { flow: to_client, ..Default::default() }, None).len(), 1);
}

struct FakeHttp;
impl BufferSource for FakeHttp {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        (buffer.name == "http.uri").then_some(b"/admin.php?x=1".as_slice())
    }
}

#[test]
fn app_layer_buffers_need_a_source() {
    let e = engine(r#"alert http any any -> any any (msg:"uri"; http.uri; content:"/admin"; startswith; sid:1;)"#);
    let mut ctx = e.new_ctx();
    let frame = tcp(CLIENT, 1, SERVER, 80, b"GET /admin.php HTTP/1.1\r\n\r\n");
    assert!(inspect_with(&e, &mut ctx, &frame, Opts::default(), None).is_empty());
    let src = FakeHttp;
    assert_eq!(inspect_with(&e, &mut ctx, &frame, Opts { buffers: Some(&src), ..Default::default() }, None).len(), 1);
}

#[test]
fn rst_closed_flow_end_is_established_for_transactions_only() {
    let e = engine(
        r#"alert http any any -> any any (msg:"uri"; flow:established,to_server; http.uri; content:"/admin"; sid:1;)
alert tcp any any -> any any (msg:"raw"; flow:established,to_server; content:"admin"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = tcp(CLIENT, 1, SERVER, 80, b"GET /admin.php HTTP/1.1\r\n\r\n");
    let src = FakeHttp;
    let torn_down = Some(FlowInfo { to_server: true, established: false, tx_established: true, ..Default::default() });
    let alerts =
        inspect_with(&e, &mut ctx, &frame, Opts { flow: torn_down, buffers: Some(&src), ..Default::default() }, None);
    assert_eq!(
        alerts.iter().map(|a| a.sid).collect::<Vec<_>>(),
        vec![1],
        "the transaction is inspected, the raw data is not"
    );
    let not_established = Some(FlowInfo { to_server: true, ..Default::default() });
    assert!(inspect_with(
        &e,
        &mut ctx,
        &frame,
        Opts { flow: not_established, buffers: Some(&src), ..Default::default() },
        None
    )
    .is_empty());
}

/// One direction of a TLS session: its hello's hash under `name`.
struct FakeHello(&'static str, &'static [u8]);
impl BufferSource for FakeHello {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        (buffer.name == self.0).then_some(self.1)
    }
}

#[test]
fn transactional_rules_read_both_directions_on_to_client_packets() {
    let e = engine(
        r#"alert tls any any => any 443 (msg:"both"; ja3.hash; content:"c1"; ja3s.hash; content:"s1"; sid:1;)
alert tls any any => any 443 (msg:"wrong server"; ja3.hash; content:"c1"; ja3s.hash; content:"s2"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let (client, server) = (FakeHello("ja3.hash", b"c1"), FakeHello("ja3s.hash", b"s1"));
    let to_client = Some(FlowInfo { to_server: false, established: true, ..Default::default() });
    let reply = tcp(SERVER, 443, CLIENT, 40000, b"x");
    let opts = |flow, buffers_other| Opts { flow, buffers: Some(&server), buffers_other, ..Default::default() };
    let sids = |alerts: Vec<Alert>| alerts.iter().map(|a| a.sid).collect::<Vec<_>>();
    assert_eq!(sids(inspect_with(&e, &mut ctx, &reply, opts(to_client, Some(&client)), None)), vec![1]);
    assert!(inspect_with(&e, &mut ctx, &reply, opts(to_client, None), None).is_empty(), "needs the client side");
    // The header's source is the client: a to-client packet from another port does not match.
    let other = tcp(SERVER, 8443, CLIENT, 40000, b"x");
    assert!(inspect_with(&e, &mut ctx, &other, opts(to_client, Some(&client)), None).is_empty());
    // Never on to-server packets.
    let request = tcp(CLIENT, 40000, SERVER, 443, b"x");
    let swapped =
        Opts { flow: to_server(), buffers: Some(&client), buffers_other: Some(&server), ..Default::default() };
    assert!(inspect_with(&e, &mut ctx, &request, swapped, None).is_empty());
}

#[test]
fn alerts_carry_rule_metadata_and_flowbit_names() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"m"; content:"A"; flowbits:set,traffic/id/curl; flowbits:set,other; metadata:tag t1, tag t2; sid:1;)
alert tcp any any -> any any (msg:"n"; content:"B"; flowbits:set,unused; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut flow = DetectFlow::default();
    let a = inspect_with(
        &e,
        &mut ctx,
        &tcp(CLIENT, 1, SERVER, 2, b"A"),
        Opts { flow: to_server(), ..Default::default() },
        Some(&mut flow),
    );
    assert_eq!(a.len(), 1);
    let pairs: Vec<(&str, &str)> = a[0].rule_log.metadata.iter().map(|(k, v)| (&**k, &**v)).collect();
    assert_eq!(pairs, vec![("tag", "t1"), ("tag", "t2")]);
    assert!(a[0].rule_log.text.contains("traffic/id/curl"));
    let mut bits: Vec<&str> = e.flowbits_set(&flow).collect();
    bits.sort();
    assert_eq!(bits, vec!["other", "traffic/id/curl"]);
}

/// Suricata places a relative keyword that follows `uricontent` (or `content; http_uri;`)
/// in that content's buffer when no sticky buffer is active.
#[test]
fn relative_keywords_follow_legacy_uri_content() {
    let e = engine(
        r#"alert tcp any any -> any any (msg:"i"; uricontent:"x="; isdataat:!2,relative; sid:1;)
alert tcp any any -> any any (msg:"b"; content:"x="; http_uri; byte_test:1,=,1,0,relative,string,dec; sid:2;)
alert tcp any any -> any any (msg:"e"; uricontent:"x="; byte_extract:1,0,n,relative,string,dec; uricontent:"/"; offset:n; sid:3;)
alert tcp any any -> any any (msg:"p"; content:"x="; isdataat:!2,relative; sid:4;)"#,
    );
    let mut ctx = e.new_ctx();
    // The packet says "x=9" followed by more bytes; the URI buffer says "x=1" at its end.
    let frame = tcp(CLIENT, 1, SERVER, 80, b"GET /x=9999999 HTTP/1.1\r\n\r\n");
    let src = FakeHttp;
    let mut got: Vec<u32> =
        inspect_with(&e, &mut ctx, &frame, Opts { buffers: Some(&src), ..Default::default() }, None)
            .iter()
            .map(|a| a.sid)
            .collect();
    got.sort();
    // sid 3: n = 1, and "/" only occurs at 0: offset 1 finds none.
    assert_eq!(got, vec![1, 2]);
}

#[test]
fn fast_pattern_choice_follows_strength() {
    assert!(lists::pattern_strength(b"|00 01 ff|") > lists::pattern_strength(b"aaa"));
    assert!(lists::pattern_strength(b"ab") < lists::pattern_strength(b"a1"));
    let load = load_rules_str(
        "t",
        r#"alert tcp any any -> any any (msg:"x"; content:"abcdefgh"; content:"|de ad be ef|"; sid:1;)
alert tcp any any -> any any (msg:"y"; content:"aaaa"; content:"zz"; fast_pattern; sid:2;)
alert tcp any any -> any any (msg:"z"; content:!"neg"; sid:3;)"#,
        &RuleVars::default(),
    );
    let mut names = compile::Names::default();
    let classes = ClassificationTable::default();
    let fp: Vec<_> = load
        .rules
        .iter()
        .map(|r| {
            compile::compile_rule(r, r.text.clone(), &classes, &Default::default(), &mut names)
                .unwrap()
                .fast_pattern
                .map(|f| f.0)
        })
        .collect();
    assert_eq!(fp, vec![Some(b"abcdefgh".to_vec()), Some(b"zz".to_vec()), None]);
}

#[test]
fn hostile_inputs_do_not_panic() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"j"; byte_jump:4,0,from_beginning; isdataat:!1,relative; sid:1;)
alert udp any any -> any any (msg:"e"; byte_extract:4,0,v; content:"A"; distance:v; within:v; sid:2;)
alert udp any any -> any any (msg:"p"; pcre:"/(a|aa)+$/"; sid:3;)"#,
    );
    for payload in [&b"\xff\xff\xff\xff"[..], b"\x00\x00\x00\x04", b"", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"] {
        let _ = sids(&e, &udp(CLIENT, 1, SERVER, 2, payload));
    }
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x00\x00\x00\x04")), vec![1]);
}

#[test]
fn dsize_not_equal_needs_a_payload() {
    let e = engine(
        r#"alert tcp any any -> any any (dsize:!9; sid:1;)
alert tcp any any -> any any (dsize:<10; sid:2;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"")), vec![2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"abc")), vec![1, 2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"123456789")), vec![2]);
}

#[test]
fn backoff_alerts_on_count_then_multiples() {
    let e = engine(
        r#"alert udp any any -> any any (content:"X"; threshold:type backoff, track by_flow, count 3, multiplier 2; sid:1;)"#,
    );
    let mut ctx = e.new_ctx();
    let alerting: Vec<usize> = (1..=30)
        .filter(|_| {
            !inspect_with(
                &e,
                &mut ctx,
                &udp(CLIENT, 1, SERVER, 2, b"X"),
                Opts { flow: to_server(), ..Default::default() },
                None,
            )
            .is_empty()
        })
        .collect();
    assert_eq!(alerting, vec![3, 6, 12, 24]);
}

#[test]
fn host_thresholds_are_shared_by_workers_and_unique_on_counts_ports() {
    let e = engine(
        r#"alert tcp any any -> any any (content:"D"; detection_filter:track by_dst, count 1, seconds 60, unique_on dst_port; sid:1;)"#,
    );
    // Two workers, one flow each, same destination host.
    let (mut w1, mut w2) = (e.new_ctx(), e.new_ctx());
    let n = |ctx: &mut DetectCtx, dp: u16| {
        inspect_with(&e, ctx, &tcp(CLIENT, 5, SERVER, dp, b"D"), Opts::default(), None).len()
    };
    assert_eq!(n(&mut w1, 80), 0);
    assert_eq!(n(&mut w1, 80), 0, "a repeated port does not count");
    assert_eq!(n(&mut w2, 81), 1, "second distinct port, seen by another worker");
    assert_eq!(n(&mut w1, 80), 1, "the filter stays exceeded within the window");
}

#[test]
fn flow_pkts_and_bytes_compare_the_flow_counters() {
    let e = engine(
        r#"alert ip any any -> any any (flow.pkts:toclient,=2; flow.bytes:toserver,<3000; sid:1;)
alert ip any any -> any any (flow.pkts_toserver:>=3; sid:2;)
alert ip any any -> any any (flow.bytes:either,>5000; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = udp(CLIENT, 1, SERVER, 2, b"x");
    let mut run = |pkts: (u64, u64), bytes: (u64, u64)| -> Vec<u32> {
        let flow = FlowInfo {
            flow_id: 1,
            to_server: true,
            pkts_toserver: pkts.0,
            pkts_toclient: pkts.1,
            bytes_toserver: bytes.0,
            bytes_toclient: bytes.1,
            ..Default::default()
        };
        inspect_with(&e, &mut ctx, &frame, Opts { flow: Some(flow), ..Default::default() }, None)
            .iter()
            .map(|a| a.sid)
            .collect()
    };
    assert_eq!(run((1, 2), (100, 100)), vec![1]);
    assert_eq!(run((3, 1), (100, 6000)), vec![2, 3]);
    assert_eq!(run((1, 2), (3000, 0)), Vec::<u32>::new());
    // Without flow information none of them can match.
    assert!(sids(&e, &frame).is_empty());
}

#[test]
fn stream_size_compares_sequence_space_per_side() {
    let e = engine(
        r#"alert tcp any any -> any any (stream_size:server,<,1111; sid:1;)
alert tcp any any -> any any (stream_size:either,>,5000; sid:2;)
alert tcp any any -> any any (stream_size:both,>=,10; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = tcp(CLIENT, 1, SERVER, 2, b"x");
    let mut run = |client: u64, server: u64| -> Vec<u32> {
        let flow = FlowInfo { flow_id: 1, to_server: true, stream_size: [client, server], ..Default::default() };
        inspect_with(&e, &mut ctx, &frame, Opts { flow: Some(flow), ..Default::default() }, None)
            .iter()
            .map(|a| a.sid)
            .collect()
    };
    assert_eq!(run(1, 1008), vec![1]);
    assert_eq!(run(6000, 1111), vec![2, 3]);
    assert_eq!(run(20, 2000), vec![3]);
    assert_eq!(run(5, 2000), Vec::<u32>::new());
    assert!(sids(&e, &frame).is_empty(), "no flow, no stream_size");
}

#[test]
fn byte_jump_with_zero_byte_count_from_variable_reads_nothing() {
    let e = engine(
        r#"alert udp any any -> any any (byte_extract:1,0,n; byte_jump:n,0,relative; content:"a"; within:1; sid:1;)"#,
    );
    // n = 0: the jump reads no bytes and stays after the extracted byte, where "a" is.
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x00ab")), vec![1]);
    // n = 1: reads 'a' (0x61) and jumps past the end of the buffer.
    assert!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"\x01ab")).is_empty());
}

/// App-layer buffers by name, each with one or more instances.
struct FakeTx(Vec<(&'static str, Vec<&'static [u8]>)>);
impl BufferSource for FakeTx {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        self.get_nth(buffer, 0)
    }
    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        self.0.iter().find(|(name, _)| *name == buffer.name).and_then(|(_, v)| v.get(index).copied())
    }
}

fn tx_sids(e: &DetectEngine, ctx: &mut DetectCtx, tx: &FakeTx, payload: &[u8]) -> Vec<u32> {
    let frame = tcp(CLIENT, 1, SERVER, 80, payload);
    let mut got: Vec<u32> = inspect_with(e, ctx, &frame, Opts { buffers: Some(tx), ..Default::default() }, None)
        .iter()
        .map(|a| a.sid)
        .collect();
    got.sort_unstable();
    got
}

#[test]
fn transforms_apply_in_order_before_the_buffer_program() {
    let e = engine(
        r#"alert http any any -> any any (http.uri; url_decode; to_lowercase; content:"/etc/passwd"; sid:1;)
alert http any any -> any any (http.uri; content:"/etc/passwd"; sid:2;)
alert http any any -> any any (http.uri; to_lowercase; url_decode; content:"/etc/passwd"; sid:3;)
alert http any any -> any any (http.uri; compress_whitespace; to_sha256; content:"|ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad|"; sid:4;)"#,
    );
    let mut ctx = e.new_ctx();
    // %45 decodes to 'E': lowercasing first leaves it uppercase.
    let tx = FakeTx(vec![("http.uri", vec![b"/%45tc/PASSWD"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1]);
    let tx = FakeTx(vec![("http.uri", vec![b"abc"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [4]);
}

#[test]
fn same_buffer_with_another_chain_is_another_inspection() {
    // The raw uri must start with "/get?data=", the xor-decoded capture must hold "password=".
    let e = engine(
        r#"alert http any any -> any any (http.uri; content:"/get?data="; startswith; http.uri; pcrexform:"/get\?data=(.*)"; xor:"0d0ac8ff"; content:"password="; sid:1;)"#,
    );
    let key = [0x0d, 0x0a, 0xc8, 0xff];
    let mut uri = b"/get?data=".to_vec();
    uri.extend(b"password=1".iter().zip(key.iter().cycle()).map(|(b, k)| b ^ k));
    let uri: &'static [u8] = Box::leak(uri.into_boxed_slice());
    let mut ctx = e.new_ctx();
    assert_eq!(tx_sids(&e, &mut ctx, &FakeTx(vec![("http.uri", vec![uri])]), b"x"), [1]);
    // Same data under another prefix: the untransformed inspection fails.
    let mut other = uri.to_vec();
    other[1] = b'G';
    let other: &'static [u8] = Box::leak(other.into_boxed_slice());
    assert!(tx_sids(&e, &mut ctx, &FakeTx(vec![("http.uri", vec![other])]), b"x").is_empty());
}

#[test]
fn bsize_and_urilen_compare_buffer_lengths() {
    let e = engine(
        r#"alert http any any -> any any (http.user_agent; bsize:0; sid:1;)
alert http any any -> any any (http.request_line; bsize:10<>100; sid:2;)
alert http any any -> any any (http.request_line; content:"GET"; bsize:>100; sid:3;)
alert http any any -> any any (urilen:<10; http.uri; content:"/a"; sid:4;)
alert http any any -> any any (urilen:13,raw; sid:5;)
alert http any any -> any any (http.uri; content:"/"; bsize:2; content:"a"; distance:0; within:1; sid:6;)
alert http any any -> any any (http.uri; dotprefix; bsize:3; sid:7;)"#,
    );
    let mut ctx = e.new_ctx();
    let tx = FakeTx(vec![
        ("http.user_agent", vec![b""]),
        ("http.request_line", vec![b"GET /a HTTP/1.1"]),
        ("http.uri", vec![b"/a"]),
        ("http.uri.raw", vec![b"/%61?q=123456"]),
    ]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1, 2, 4, 5, 6, 7]);
    // An absent buffer has no length: bsize:0 does not match it.
    let tx = FakeTx(vec![("http.uri", vec![b"/a/b/c/d/e/f"])]);
    assert!(tx_sids(&e, &mut ctx, &tx, b"x").is_empty());
}

#[test]
fn base64_decode_feeds_base64_data() {
    let e = engine(
        r#"alert http any any -> any any (content:"arg"; http_uri; base64_decode:bytes 17, offset 1, relative; base64_data; content:"thisisatest"; sid:1;)
alert http any any -> any any (content:"arg"; http_uri; base64_decode:bytes 10, offset 1, relative; base64_data; content:"test"; sid:2;)
alert tcp any any -> any any (content:"B64:"; base64_decode:relative; base64_data; content:"hello"; sid:3;)
alert tcp any any -> any any (content:"B64:"; base64_decode:relative; base64_data; content:"nope"; sid:4;)
alert tcp any any -> any any (content:"|27|"; base64_decode:relative; base64_data; content:"world"; startswith; sid:5;)"#,
    );
    let mut ctx = e.new_ctx();
    let tx = FakeTx(vec![("http.uri", vec![b"/?arg=dGhpc2lzYXRlc3QK"])]);
    // sid 2 decodes only "dGhpc2lzYX": "thisisa", no "test".
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 80, b"B64:aGVsbG8gd29ybGQ=")), [3]);
    // The first quote is followed by garbage: the content retries at the second one.
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 80, b"'!!!! 'd29ybGQ=")), [5]);
}

#[test]
fn multi_instance_buffers_are_transformed_one_by_one() {
    let e = engine(r#"alert dns any any -> any any (dns.query; dotprefix; content:".google.com"; endswith; sid:1;)"#);
    let mut ctx = e.new_ctx();
    let tx = FakeTx(vec![("dns.query", vec![b"notgoogle.com", b"google.com.evil"])]);
    assert!(tx_sids(&e, &mut ctx, &tx, b"x").is_empty());
    let tx = FakeTx(vec![("dns.query", vec![b"notgoogle.com", b"google.com"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1]);
}

#[test]
fn failed_transform_matches_nothing_not_even_negation() {
    let e = engine(
        r#"alert http any any -> any any (http.uri; from_base64:mode strict; content:!"zzz"; sid:1;)
alert http any any -> any any (http.uri; from_base64; content:"foobar"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    assert!(tx_sids(&e, &mut ctx, &FakeTx(vec![("http.uri", vec![b"!not base64"])]), b"x").is_empty());
    assert_eq!(tx_sids(&e, &mut ctx, &FakeTx(vec![("http.uri", vec![b"Zm9vYmFy"])]), b"x"), [1, 2]);
}

#[test]
fn transform_scratch_is_reused_across_packets() {
    let e = engine(r#"alert http any any -> any any (http.uri; url_decode; to_lowercase; content:"/x"; sid:1;)"#);
    let mut ctx = e.new_ctx();
    let tx = FakeTx(vec![("http.uri", vec![b"/X%20/y"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1]);
    let pointers = |ctx: &DetectCtx| {
        let mut p: Vec<*const u8> = ctx.transform_scratch.iter().map(|v| v.as_ptr()).collect();
        p.sort();
        p
    };
    let buffers = pointers(&ctx);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1]);
    let again = pointers(&ctx);
    assert_eq!(buffers, again, "steady state must not reallocate");
}

#[test]
fn transform_and_bsize_placement_rules() {
    let rejected = |text: &str| {
        let load = load_rules_str("t.rules", text, &RuleVars::default());
        assert!(load.errors.is_empty(), "{:?}", load.errors);
        let (_, report) = DetectEngine::build(load.rules, &DetectConfig::default()).unwrap();
        report.rules_rejected.len()
    };
    assert_eq!(rejected(r#"alert tcp any any -> any any (to_lowercase; content:"a"; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert tcp any any -> any any (content:"a"; bsize:1; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert http any any -> any any (http.uri; pcrexform:"abc"; content:"a"; sid:1;)"#), 1);
    // base64_data without base64_decode loads but cannot match.
    let load = load_rules_str(
        "t.rules",
        r#"alert tcp any any -> any any (base64_data; content:"a"; sid:1;)"#,
        &RuleVars::default(),
    );
    let (_, report) = DetectEngine::build(load.rules, &DetectConfig::default()).unwrap();
    assert_eq!(report.rules_inactive.get("base64_data without base64_decode"), Some(&1));
}

#[test]
fn body_buffers_holding_the_same_bytes_are_scanned_once() {
    let e = engine(
        r#"alert http any any -> any any (file.data; content:"evil"; sid:1;)
alert http any any -> any any (http.response_body; content:"bad"; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    // HTTP hands out the response body under both names: one scan finds both rules.
    let body: &'static [u8] = b"an evil and bad body";
    let tx = FakeTx(vec![("file.data", vec![body]), ("http.response_body", vec![body])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1, 2]);
    assert_eq!((ctx.counters.prefilter_scans, ctx.counters.prefilter_shared_skips), (1, 1));
    // Different bytes under the two names are each scanned, and each rule is verified on
    // its own buffer: the other buffer's pattern makes it a candidate, not a match.
    let tx = FakeTx(vec![("file.data", vec![b"only bad here"]), ("http.response_body", vec![b"only evil here"])]);
    assert!(tx_sids(&e, &mut ctx, &tx, b"x").is_empty());
    assert_eq!((ctx.counters.prefilter_scans, ctx.counters.prefilter_shared_skips), (3, 1));
    assert_eq!(ctx.counters.candidates, 2 + 2);
    let tx = FakeTx(vec![("file.data", vec![b"evil"]), ("http.response_body", vec![b"bad"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [1, 2]);
}

/// An engine whose TCP/UDP prefilter has at most `port_groups` groups per direction.
fn engine_grouped(rules: &str, port_groups: PortGroupLimits) -> DetectEngine {
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "parse errors: {:?}", load.errors);
    DetectEngine::build(load.rules, &DetectConfig { port_groups, ..Default::default() }).expect("build").0
}

#[test]
fn prefilter_port_groups_only_offer_rules_the_server_port_can_meet() {
    let e = engine_grouped(
        r#"alert tcp any any -> any 445 (content:"abc"; sid:1;)
alert tcp any any -> any any (content:"abc"; sid:2;)
alert tcp any 80 -> any any (flow:to_client; content:"abc"; sid:3;)
alert tcp any 445 <> any any (content:"abc"; sid:4;)
alert udp any any -> any 53 (content:"abc"; sid:5;)"#,
        PortGroupLimits::MEDIUM,
    );
    let to_client = Some(FlowInfo { flow_id: 7, to_server: false, established: true, ..Default::default() });
    let run = |ctx: &mut DetectCtx, frame: &[u8], flow: Option<FlowInfo>| -> Vec<u32> {
        let mut got: Vec<u32> =
            inspect_with(&e, ctx, frame, Opts { flow, ..Default::default() }, None).iter().map(|a| a.sid).collect();
        got.sort_unstable();
        got
    };
    let mut ctx = e.new_ctx();
    // To port 80: the port-445 rule is not even a candidate; the `<>` rule is in every group.
    assert_eq!(run(&mut ctx, &tcp(CLIENT, 5555, SERVER, 80, b"abc"), to_server()), [2]);
    assert_eq!((ctx.counters.candidates, ctx.counters.candidates_header_mismatch), (2, 1));
    assert_eq!(run(&mut ctx, &tcp(CLIENT, 5555, SERVER, 445, b"abc"), to_server()), [1, 2, 4]);
    // The `<>` rule matches with the sides swapped, from whichever group.
    assert_eq!(run(&mut ctx, &tcp(CLIENT, 445, SERVER, 80, b"abc"), to_server()), [2, 4]);
    // To the client the group is picked by the source port: rules without a direction and
    // with any source port (sid 1) are in every to-client group.
    let before = ctx.counters.candidates;
    assert_eq!(run(&mut ctx, &tcp(SERVER, 80, CLIENT, 5555, b"abc"), to_client), [2, 3]);
    assert_eq!(run(&mut ctx, &tcp(SERVER, 8080, CLIENT, 5555, b"abc"), to_client), [2]);
    assert_eq!(ctx.counters.candidates - before, 4 + 3);
    assert_eq!(run(&mut ctx, &udp(CLIENT, 5555, SERVER, 53, b"abc"), None), [5]);
    assert!(run(&mut ctx, &udp(CLIENT, 5555, SERVER, 54, b"abc"), None).is_empty());
}

#[test]
fn one_port_group_per_direction_still_finds_every_rule() {
    let rules = r#"alert tcp any any -> any 445 (content:"abc"; sid:1;)
alert tcp any any -> any any (content:"abc"; sid:2;)
alert tcp any any -> any 80 (content:"abc"; sid:3;)"#;
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    let port_groups = PortGroupLimits { toserver: 1, toclient: 1 };
    let (e, report) = DetectEngine::build(load.rules, &DetectConfig { port_groups, ..Default::default() }).unwrap();
    // TCP and UDP, two directions each: one group apiece.
    assert_eq!(report.prefilter_port_groups, 4);
    assert_eq!(sids(&e, &tcp(CLIENT, 5555, SERVER, 445, b"abc")), [1, 2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 5555, SERVER, 80, b"abc")), [2, 3]);
    // One group (the default): all three rules are candidates to port 80; with port groups
    // (medium) the port-445 rule is not.
    for (limits, candidates) in [(PortGroupLimits::default(), 3), (PortGroupLimits::MEDIUM, 2)] {
        let e = engine_grouped(rules, limits);
        let mut ctx = e.new_ctx();
        let got = inspect_with(&e, &mut ctx, &tcp(CLIENT, 5555, SERVER, 80, b"abc"), Opts::default(), None);
        assert_eq!(got.len(), 2);
        assert_eq!(ctx.counters.candidates, candidates, "{limits:?}");
    }
}

#[test]
fn absent_matches_a_missing_buffer_and_or_else_inspects_a_present_one() {
    let e = engine(
        r#"alert http any any -> any any (http.referer; absent; sid:1;)
alert http any any -> any any (http.referer; absent: or_else; content:!"example"; sid:2;)
alert http any any -> any any (http.referer; absent: or_else; content:"example"; sid:3;)
alert http any any -> any any (http.uri; content:"/"; http.referer; content:!"example"; sid:4;)"#,
    );
    let mut ctx = e.new_ctx();
    // No referer: absent and or_else match; a negated content needs the buffer (sid 4).
    assert_eq!(tx_sids(&e, &mut ctx, &FakeTx(vec![("http.uri", vec![b"/"])]), b"x"), [1, 2, 3]);
    let tx = FakeTx(vec![("http.uri", vec![b"/"]), ("http.referer", vec![b"http://example.com/"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [3]);
    let tx = FakeTx(vec![("http.uri", vec![b"/"]), ("http.referer", vec![b"http://other/"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"x"), [2, 4]);
}

#[test]
fn absent_placement_is_checked_at_load() {
    let rejected = |text: &str| {
        let load = load_rules_str("t.rules", text, &RuleVars::default());
        if !load.errors.is_empty() {
            return 1;
        }
        let (_, report) = DetectEngine::build(load.rules, &DetectConfig::default()).unwrap();
        report.rules_rejected.len()
    };
    // Without or_else nothing may inspect the buffer; with it, something must.
    assert_eq!(rejected(r#"alert http any any -> any any (http.referer; absent; content:"a"; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert http any any -> any any (http.referer; absent: or_else; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert http any any -> any any (http.referer; content:"a"; absent; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert tcp any any -> any any (absent; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert http any any -> any any (http.referer; absent: maybe; sid:1;)"#), 1);
    assert_eq!(rejected(r#"alert http any any -> any any (http.referer; absent; sid:1;)"#), 0);
}

#[test]
fn flow_age_compares_whole_seconds_since_the_flow_began() {
    let e = engine(
        r#"alert ip any any -> any any (flow.age:>20; sid:1;)
alert ip any any -> any any (flow.age:<=20; sid:2;)"#,
    );
    let mut ctx = e.new_ctx();
    let frame = udp(CLIENT, 1, SERVER, 2, b"x");
    let mut run = |age_secs: u32| -> Vec<u32> {
        let flow = FlowInfo { flow_id: 1, to_server: true, age_secs, ..Default::default() };
        inspect_with(&e, &mut ctx, &frame, Opts { flow: Some(flow), ..Default::default() }, None)
            .iter()
            .map(|a| a.sid)
            .collect()
    };
    assert_eq!(run(21), vec![1]);
    assert_eq!(run(20), vec![2]);
    assert_eq!(run(0), vec![2]);
    assert!(sids(&e, &frame).is_empty(), "no flow, no flow.age");
    assert_eq!(
        crate::inspect::age_secs(crate::packet::Timestamp(999_999_999), crate::packet::Timestamp(1_000_000_000)),
        1
    );
}

/// Header keywords (`flags`, `ttl`, `window`, ...) make a rule inspect the packet, as
/// Suricata's `SIG_FLAG_REQUIRE_PACKET` does: its content matches the packet's own bytes
/// even when they went into the stream (a TCP Fast Open SYN's data), and never a stream
/// chunk.
#[test]
fn header_keywords_make_a_rule_inspect_the_packet() {
    let e = engine(
        r#"alert tcp any any -> any any (flags:PA; content:"GET"; sid:1;)
alert tcp any any -> any any (ttl:64; content:"GET"; sid:2;)
alert tcp any any -> any any (content:"GET"; sid:3;)"#,
    );
    let mut ctx = e.new_ctx();
    let mut run = |payload: &[u8], opts: Opts| -> Vec<(u32, bool)> {
        let frame = tcp(CLIENT, 1, SERVER, 2, payload);
        inspect_with(&e, &mut ctx, &frame, opts, None).iter().map(|a| (a.sid, a.in_stream)).collect()
    };
    let in_stream = Opts { flow: to_server(), payload_in_stream: true, ..Default::default() };
    assert_eq!(run(b"GET /", in_stream), vec![(1, false), (2, false)]);
    let data = b"GET /";
    let chunk = StreamChunk { offset: 0, data, new_start: 0, new_end: data.len() as u64, gap_before: 0 };
    assert_eq!(run(b"", Opts { flow: to_server(), stream: Some(chunk), ..Default::default() }), vec![(3, true)]);
}

#[test]
fn ip_proto_equality_narrows_the_rule_to_its_transport() {
    let e = engine(
        r#"alert ip any any -> any any (msg:"esp"; ip_proto:50; sid:1;)
alert ip any any -> any any (msg:"udp by number"; ip_proto:17; sid:2;)
alert ip any any -> any any (msg:"not udp"; ip_proto:!17; sid:3;)
alert tcp any any -> any any (msg:"never"; ip_proto:17; sid:4;)
alert ip any any -> any any (msg:"below udp"; ip_proto:<17; sid:5;)"#,
    );
    let mut esp = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(CLIENT, SERVER, 64)
        .write(&mut esp, etherparse::IpNumber(50), &[0u8; 16])
        .unwrap();
    assert_eq!(sids(&e, &esp), vec![1, 3]);
    assert_eq!(sids(&e, &udp(CLIENT, 1, SERVER, 2, b"x")), vec![2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"x")), vec![3, 5]);
    assert_eq!(sids(&e, &icmp_echo(CLIENT, SERVER, 1, 1)), vec![3, 5]);
    // Each rule sits in the groups of the transports it can match, and no others.
    let placed = |sid: u32, t: usize| {
        let idx = e.rules.iter().position(|r| r.sid == sid).expect("rule") as u32;
        e.groups[t].iter().any(|g| g.always.any_port.contains(&idx))
    };
    assert!(placed(1, T_OTHER) && !placed(1, T_TCP) && !placed(1, T_UDP));
    assert!(placed(2, T_UDP) && !placed(2, T_OTHER) && !placed(2, T_TCP));
    assert!((0..5).all(|t| !placed(4, t)));
    assert!((0..5).all(|t| placed(3, t)));
}

#[test]
fn a_rule_found_through_a_shorter_fast_pattern_still_needs_its_own() {
    // sid 2's fast pattern contains sid 1's: the prefilter looks for `abcd` on its behalf
    // (cover.rs), and sid 2 alerts only where its own content is.
    let e = engine(
        r#"alert tcp any any -> any any (msg:"short"; content:"abcd"; sid:1;)
alert tcp any any -> any any (msg:"long"; content:"xxabcdyy"; sid:2;)
alert tcp any any -> any any (msg:"long nocase"; content:"ZZABCD"; nocase; sid:3;)"#,
    );
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"--abcd--")), vec![1]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"--xxabcdyy--")), vec![1, 2]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"--zzABCD--")), vec![3]);
    assert_eq!(sids(&e, &tcp(CLIENT, 1, SERVER, 2, b"--zzabcd--")), vec![1, 3]);
}

/// A rebuild (rule reload) shares an unchanged rule's logged metadata and text with the
/// running engine, and only an equal one: without rule texts
/// ([`DetectConfig::keep_rule_text`] off) rules are told apart by their metadata, not all
/// matched by the same empty text.
#[test]
fn a_rebuild_shares_only_equal_rule_logs() {
    let text = "alert udp any any -> any any (content:\"a\"; metadata:k a; sid:1;)\n\
                alert udp any any -> any any (content:\"b\"; metadata:k b; sid:2;)\n\
                alert udp any any -> any any (content:\"c\"; metadata:k a; sid:3;)\n";
    for keep_rule_text in [true, false] {
        let cfg = DetectConfig { keep_rule_text, ..Default::default() };
        let load = |text: &str| load_rules_str("t.rules", text, &RuleVars::default()).rules;
        let running = DetectEngine::build(load(text), &cfg).expect("build").0;
        let mut builder = EngineBuilder::replacing(&cfg, &running);
        // sid 2 changes its content, not its metadata.
        for (slot, rule) in load(&text.replace("\"b\"", "\"B\"")).into_iter().enumerate() {
            builder.add(slot, rule);
        }
        let rebuilt = builder.finish().expect("rebuild").0;
        assert_eq!(rebuilt.keeps_rule_text(), keep_rule_text);
        for (old, new) in running.rules.iter().zip(&rebuilt.rules) {
            assert_eq!(old.sid, new.sid);
            let value = if new.sid == 2 { "b" } else { "a" };
            assert_eq!(&*new.rule_log.metadata[0].1, value, "sid {} keep_rule_text {keep_rule_text}", new.sid);
            assert_eq!(new.rule_log.text.is_empty(), !keep_rule_text);
            // Rules with equal logs may share any one of them.
            let shared = running.rules.iter().any(|r| Arc::ptr_eq(&r.rule_log, &new.rule_log));
            assert_eq!(shared, new.sid != 2 || !keep_rule_text, "sid {} keep_rule_text {keep_rule_text}", new.sid);
            assert_eq!(old.rule_log.metadata, new.rule_log.metadata, "sid {}", new.sid);
        }
    }
}

/// The prefilter profile's counters of `ctx`, by name.
fn profile_of(e: &DetectEngine, ctx: &DetectCtx) -> BTreeMap<String, u64> {
    e.prefilter_profile(ctx).into_iter().collect()
}

#[test]
fn prefilter_profiling_counts_each_scan_site_apart() {
    let rules = r#"alert tcp any any -> any any (flow:established,to_server; content:"ATTACK"; sid:1;)
alert tcp any any -> any any (flow:to_server,no_stream; content:"PKT"; sid:2;)
alert http any any -> any any (file.data; content:"evil"; sid:3;)
alert http any any -> any any (http.uri; content:"/admin"; sid:4;)"#;
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    let cfg = DetectConfig { profile_prefilter: true, ..Default::default() };
    let (e, _) = DetectEngine::build(load.rules, &cfg).expect("build");
    let mut ctx = e.new_ctx();
    assert!(profile_of(&e, &ctx).is_empty(), "nothing scanned yet");

    // A payload that went into the stream: scanned with the packet-only set; then a chunk
    // of the stream, 10 bytes, on a packet without payload.
    let frame = tcp(CLIENT, 1, SERVER, 2, b"PKT+ATTACK");
    let in_stream = Opts { flow: to_server(), payload_in_stream: true, ..Default::default() };
    assert_eq!(inspect_with(&e, &mut ctx, &frame, in_stream, None).iter().map(|a| a.sid).collect::<Vec<_>>(), [2]);
    let data = b"xxATTACKxx";
    let chunk = StreamChunk { offset: 0, data, new_start: 0, new_end: data.len() as u64, gap_before: 0 };
    let empty = tcp(CLIENT, 1, SERVER, 2, b"");
    let with_chunk = Opts { flow: to_server(), stream: Some(chunk), ..Default::default() };
    assert_eq!(inspect_with(&e, &mut ctx, &empty, with_chunk, None).iter().map(|a| a.sid).collect::<Vec<_>>(), [1]);
    // A transaction: its body and URI, each scanned by its own prefilter, and the packet's
    // payload (not in a stream) with the full set.
    let tx = FakeTx(vec![("file.data", vec![b"an evil body"]), ("http.uri", vec![b"/admin/x"])]);
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"GET"), [3, 4]);

    let p = profile_of(&e, &ctx);
    let site = |name: &str| -> (u64, u64) {
        let get = |field: &str| p.get(&format!("detect.prefilter.{name}.{field}")).copied();
        (get("scans").unwrap_or_else(|| panic!("no {name} in {p:?}")), get("bytes").unwrap())
    };
    assert_eq!(site("tcp.toserver.payload_packet_only"), (1, 10));
    assert_eq!(site("tcp.toserver.stream"), (1, 10));
    assert_eq!(site("tcp.toserver.payload"), (1, 3));
    assert_eq!(site("tcp.toserver.file_data"), (1, 12));
    assert_eq!(site("tcp.toserver.http_uri"), (1, 8));
    // Every site reports scans, bytes and time, and only sites that scanned are reported.
    assert_eq!(p.len(), 5 * 3, "{p:?}");
    assert!(p.keys().all(|k| k.ends_with(".scans") || k.ends_with(".bytes") || k.ends_with(".usec")));
    assert_eq!(ctx.counters.prefilter_scans, 5);

    // Off (the default): the same scans, no profile.
    let load = load_rules_str("test.rules", rules, &RuleVars::default());
    let (e, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    let mut ctx = e.new_ctx();
    assert_eq!(tx_sids(&e, &mut ctx, &tx, b"GET"), [3, 4]);
    assert_eq!(ctx.counters.prefilter_scans, 3);
    assert!(profile_of(&e, &ctx).is_empty());
}

#[test]
fn prefilter_profile_names_are_unique_per_port_group_and_transform() {
    let e = engine_grouped(
        r#"alert tcp any any -> any 445 (content:"abc"; sid:1;)
alert tcp any any -> any 80 (content:"def"; sid:2;)
alert http any any -> any any (http.uri; content:"/a"; sid:3;)
alert http any any -> any any (http.uri; to_lowercase; content:"/b"; sid:4;)
alert http any any -> any any (http.uri; strip_whitespace; content:"/c"; sid:5;)"#,
        PortGroupLimits::MEDIUM,
    );
    let labels = &e.prefilter_labels;
    let unique: std::collections::BTreeSet<&String> = labels.iter().collect();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
    for name in ["tcp.toserver.stream_pg1", "tcp.toserver.stream_pg2", "tcp.toserver.payload_packet_only_pg1"] {
        assert!(labels.iter().any(|l| l == name), "no {name} in {labels:?}");
    }
    for name in ["tcp.toserver.http_uri", "tcp.toserver.http_uri_transformed", "tcp.toserver.http_uri_transformed_2"] {
        assert!(labels.iter().any(|l| l == name), "no {name} in {labels:?}");
    }
}
