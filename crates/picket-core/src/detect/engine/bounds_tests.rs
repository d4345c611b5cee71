//! Hostile numbers in rules and packets: every place a byte variable or a packet field
//! becomes a position, length or count in payload inspection must give "no match" when it is
//! out of range (negative, past the buffer, overflowing), never a panic or a wrapped index.

use super::tests::{engine, inspect_with, sids, udp, Opts, CLIENT, SERVER};
use super::{DetectConfig, DetectEngine, InspectionLimits};

/// A 60-byte UDP frame (14 Ethernet + 20 IPv4 + 8 UDP + 18 payload) starting with `first`.
fn frame60(first: &[u8]) -> Vec<u8> {
    let mut payload = first.to_vec();
    payload.resize(18, b'A');
    let f = udp(CLIENT, 1234, SERVER, 53, &payload);
    assert_eq!(f.len(), 60);
    f
}

#[test]
fn byte_math_minus_below_zero_as_content_offset_is_no_match() {
    // The issue's case: 5 - 200 went "negative" through an i64 cast and panicked the slice.
    let e = engine(
        r#"alert udp any any -> any any (msg:"neg"; byte_math:bytes 1,offset 0,oper -,rvalue 200,result neg; content:"A"; offset:neg; sid:1;)
alert udp any any -> any any (msg:"pos"; byte_math:bytes 1,offset 0,oper -,rvalue 1,result p; content:"A"; offset:p; sid:2;)"#,
    );
    assert_eq!(sids(&e, &frame60(b"\x05")), vec![2]);
}

#[test]
fn large_byte_extract_as_any_content_modifier_is_no_match() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"o"; byte_extract:8,0,v; content:"A"; offset:v; sid:1;)
alert udp any any -> any any (msg:"d"; byte_extract:8,0,v; content:"A"; depth:v; sid:2;)
alert udp any any -> any any (msg:"di"; byte_extract:8,0,v; content:"A"; distance:v; sid:3;)
alert udp any any -> any any (msg:"w"; byte_extract:8,0,v; content:"A"; within:v; sid:4;)
alert udp any any -> any any (msg:"ow"; byte_extract:8,0,v; content:"A"; offset:0; content:"A"; distance:0; within:v; sid:5;)"#,
    );
    for top in [0xffu8, 0x80, 0x7f, 0x01] {
        let mut first = vec![top];
        first.extend_from_slice(&[0xff; 7]);
        assert!(sids(&e, &frame60(&first)).is_empty(), "first byte {top:#x}");
    }
    // Small values still work: 8 bytes of value 9 -> "A" at 9.. is found for offset/depth etc.
    let small = frame60(b"\x00\x00\x00\x00\x00\x00\x00\x09");
    assert_eq!(sids(&e, &small), vec![1, 2, 3, 4, 5]);
}

#[test]
fn byte_reads_with_variable_counts_and_offsets_out_of_range_are_no_match() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"bt count"; byte_extract:8,0,n; byte_test:n,>,0,0; sid:1;)
alert udp any any -> any any (msg:"bj count"; byte_extract:8,0,n; byte_jump:n,0; sid:2;)
alert udp any any -> any any (msg:"bm count"; byte_extract:8,0,n; byte_math:bytes n,offset 0,oper +,rvalue 1,result r; sid:3;)
alert udp any any -> any any (msg:"bt value"; byte_extract:8,0,n; byte_test:1,<,n,8; sid:4;)"#,
    );
    // n = 2^64-1: no read of that many bytes; as a byte_test value it is simply large.
    assert_eq!(sids(&e, &frame60(&[0xff; 8])), vec![4]);
}

#[test]
fn isdataat_with_a_huge_variable_finds_no_data() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"has"; byte_extract:8,0,n; isdataat:n; sid:1;)
alert udp any any -> any any (msg:"has rel"; byte_extract:8,0,n; isdataat:n,relative; sid:2;)
alert udp any any -> any any (msg:"not"; byte_extract:8,0,n; isdataat:!n,relative; sid:3;)"#,
    );
    assert_eq!(sids(&e, &frame60(&[0xff; 8])), vec![3]);
    assert_eq!(sids(&e, &frame60(b"\x00\x00\x00\x00\x00\x00\x00\x02")), vec![1, 2]);
}

#[test]
fn byte_math_wraps_as_suricata_and_a_wrapped_position_finds_no_data() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"add"; byte_extract:8,0,big; byte_math:bytes 1,offset 8,oper +,rvalue big,result r; isdataat:!r; sid:1;)
alert udp any any -> any any (msg:"mul"; byte_extract:8,0,big; byte_math:bytes 1,offset 8,oper *,rvalue big,result r; isdataat:!r; sid:2;)
alert udp any any -> any any (msg:"shl"; byte_math:bytes 1,offset 8,oper <<,rvalue 63,result r; isdataat:!r; sid:3;)
alert udp any any -> any any (msg:"shl64"; byte_math:bytes 1,offset 8,oper <<,rvalue 64,result r; isdataat:!r; sid:4;)
alert udp any any -> any any (msg:"div0"; byte_extract:1,9,zero; byte_math:bytes 1,offset 8,oper /,rvalue zero,result r; isdataat:!r; sid:5;)
alert udp any any -> any any (msg:"shr"; byte_math:bytes 1,offset 8,oper >>,rvalue 64,result r; isdataat:!r; sid:6;)"#,
    );
    // Byte 8 is 0x41 ('A'), byte 9 is 0 (the divisor). As in Suricata, +, * and << wrap
    // on 64 bits: 0x41 + (2^64-1) is 64, past the 18-byte payload (sid 1); the product and
    // 0x41 << 63 are beyond any position, so `isdataat:!r` holds (sids 2, 3). A shift by 64
    // gives 0 (data there: no match), and a division by zero is no match.
    let mut first = vec![0xff; 8];
    first.extend_from_slice(b"A\x00");
    assert_eq!(sids(&e, &frame60(&first)), vec![1, 2, 3]);
    // big = 0, divisor 1: add and div give 65, past the data (sids 1, 5); mul gives 0 and
    // the right shift 0 (data at 0); 0x41 << 63 is still beyond any position (sid 3).
    let mut first = vec![0; 8];
    first.extend_from_slice(b"A\x01");
    assert_eq!(sids(&e, &frame60(&first)), vec![1, 3, 5]);
}

#[test]
fn byte_extract_and_byte_jump_scaling_overflow_is_no_match() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"ext mul"; byte_extract:8,0,v,multiplier 65535; isdataat:!v; sid:1;)
alert udp any any -> any any (msg:"ext align"; byte_extract:8,0,v,align 4; isdataat:!v; sid:2;)
alert udp any any -> any any (msg:"jump mul"; byte_jump:8,0,multiplier 65535; sid:3;)
alert udp any any -> any any (msg:"jump align"; byte_jump:8,0,align; sid:4;)"#,
    );
    assert!(sids(&e, &frame60(&[0xff; 8])).is_empty());
}

/// Sids alerting on `frame` and the value of one detect counter afterwards.
fn sids_and_counter(e: &DetectEngine, frame: &[u8], counter: &str) -> (Vec<u32>, u64) {
    let mut ctx = e.new_ctx();
    let alerts = inspect_with(e, &mut ctx, frame, Opts::default(), None);
    let value = e.counters(&ctx).into_iter().find(|(name, _)| *name == counter).map(|(_, v)| v).expect("counter");
    (alerts.iter().map(|a| a.sid).collect(), value)
}

/// A payload on which `(a+)+$` backtracks exponentially before the `c` alternative matches.
fn catastrophic(n: usize) -> Vec<u8> {
    let mut p = vec![b'a'; n];
    p.extend_from_slice(b"bc");
    p
}

#[test]
fn pcre_match_limit_hit_is_no_match_and_counted() {
    let rules = r#"alert udp any any -> any any (msg:"default"; pcre:"/(a+)+$|c/"; sid:1;)
alert udp any any -> any any (msg:"override"; pcre:"/(a+)+$|c/"; pcre_limit:10000000; sid:2;)
alert udp any any -> any any (msg:"O flag"; pcre:"/(a+)+$|c/O"; sid:3;)
alert udp any any -> any any (msg:"cheap"; pcre:"/a+bc/"; sid:4;)"#;
    let e = engine(rules);
    let (hits, limit_hits) =
        sids_and_counter(&e, &udp(CLIENT, 1, SERVER, 2, &catastrophic(16)), "detect.pcre_match_limit");
    assert_eq!(hits, vec![2, 3, 4], "the default-limited pcre gives up, the lifted ones match");
    assert_eq!(limit_hits, 1);
    // A short subject stays under the limit: the same pcre matches.
    let (hits, limit_hits) =
        sids_and_counter(&e, &udp(CLIENT, 1, SERVER, 2, &catastrophic(3)), "detect.pcre_match_limit");
    assert_eq!((hits, limit_hits), (vec![1, 2, 3, 4], 0));
}

#[test]
fn configured_pcre_limits_apply_to_every_pcre() {
    let rules = r#"alert udp any any -> any any (msg:"default"; pcre:"/(a+)+$|c/"; sid:1;)"#;
    let load = crate::detect::rule::load_rules_str("t.rules", rules, &Default::default());
    let limits = InspectionLimits { pcre_match_limit: 10_000_000, ..InspectionLimits::DEFAULT };
    let (e, _) = DetectEngine::build(load.rules, &DetectConfig { limits, ..Default::default() }).expect("build");
    let (hits, limit_hits) =
        sids_and_counter(&e, &udp(CLIENT, 1, SERVER, 2, &catastrophic(16)), "detect.pcre_match_limit");
    assert_eq!((hits, limit_hits), (vec![1], 0));
}

#[test]
fn pcre_limit_must_follow_a_pcre() {
    let load = crate::detect::rule::load_rules_str(
        "t.rules",
        r#"alert udp any any -> any any (msg:"x"; content:"a"; pcre_limit:100; sid:1;)"#,
        &Default::default(),
    );
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    let (_, report) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    assert_eq!(report.rules_rejected.len(), 1, "{:?}", report.rules_rejected);
    assert!(report.rules_rejected[0].1.contains("pcre_limit"));
}

/// The issue's worst cases, scaled to a 1.4 KB packet: a catastrophic pcre, and the same pcre
/// retried after every occurrence of a content. Each must stop at the limits and finish far
/// within a generous bound (measured: well under 10 ms each in release; the bound is 1 s,
/// where the unbounded engine took 22.9 s for the relative case).
#[test]
fn hostile_pcre_worst_cases_finish_within_a_generous_bound() {
    let e = engine(
        r#"alert udp any any -> any any (msg:"abs"; pcre:"/(a+)+$/"; sid:1;)
alert udp any any -> any any (msg:"rel"; content:"a"; pcre:"/(a+)+$/R"; sid:2;)"#,
    );
    let mut payload = vec![b'a'; 1398];
    payload.push(b'b');
    let frame = udp(CLIENT, 1, SERVER, 2, &payload);
    let started = std::time::Instant::now();
    let (hits, limit_hits) = sids_and_counter(&e, &frame, "detect.pcre_match_limit");
    let took = started.elapsed();
    assert!(hits.is_empty());
    assert_eq!(limit_hits, 2, "each rule stops at its first limit hit");
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
}

#[test]
fn inspection_recursion_limit_bounds_content_retries_and_is_configurable() {
    // 'a' never followed by 'Z': every occurrence of "a" is retried (the leading "Z" lets
    // the rule past the prefilter).
    let rules = r#"alert udp any any -> any any (msg:"retry"; content:"a"; content:"Z"; within:1; sid:1;)"#;
    let mut payload = b"Z".to_vec();
    payload.extend_from_slice(&[b'a'; 1000]);
    let frame = udp(CLIENT, 1, SERVER, 2, &payload);
    let e = engine(rules);
    assert_eq!(sids_and_counter(&e, &frame, "detect.recursion_limit"), (vec![], 0), "1000 tries < 3000");
    let load = crate::detect::rule::load_rules_str("t.rules", rules, &Default::default());
    let limits = InspectionLimits { inspection_recursion_limit: 100, ..InspectionLimits::DEFAULT };
    let (e, _) = DetectEngine::build(load.rules, &DetectConfig { limits, ..Default::default() }).expect("build");
    assert_eq!(sids_and_counter(&e, &frame, "detect.recursion_limit"), (vec![], 1));
}
