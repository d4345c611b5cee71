//! Worst cases of the host and ip-pair state tables (issue #16): a `threshold: track by_src`
//! rule hit by many sources, and `xbits` set over many ip pairs. Each source (pair) is new,
//! which is what a spoofed-source flood looks like to the tables.
//!
//! The `#[ignore]`d benchmarks print packets per second (run in release):
//! `cargo test --release --test tables_bench -- --ignored --nocapture`
//! `TABLES_BENCH_N` sets the number of sources (default 500000).
//! The non-ignored tests run a scaled-down worst case against a generous time bound.

use picket::decode::{decode, DecodeOptions};
use picket::detect::engine::{Alert, DetectConfig, DetectEngine, DetectFlow, DetectPacket, FlowInfo};
use picket::detect::rule::{load_rules_str, RuleVars};
use picket::packet::{LinkType, Timestamp};
use std::time::{Duration, Instant};

fn engine(rules: &str) -> DetectEngine {
    let load = load_rules_str("tables_bench.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    DetectEngine::build(load.rules, &DetectConfig::default()).expect("build").0
}

fn udp(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(src, dst, 64)
        .udp(1000, 53)
        .write(&mut out, payload)
        .expect("build packet");
    out
}

/// The i-th address of 10.0.0.0/8 (distinct for i < 2^24).
fn addr(i: u32) -> [u8; 4] {
    [10, (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

/// Inspects `n` packets, one per source `src(i)` towards `dst(i)`, each `per_key` times in a
/// row; packet time advances 10 µs per packet. Returns (elapsed, alerts).
fn run(
    e: &DetectEngine,
    n: u32,
    per_key: u32,
    src: impl Fn(u32) -> [u8; 4],
    dst: impl Fn(u32) -> [u8; 4],
) -> (Duration, u64) {
    let mut ctx = e.new_ctx();
    let mut alerts: Vec<Alert> = Vec::new();
    let mut total = 0u64;
    let mut flow = DetectFlow::default();
    let frames: Vec<Vec<u8>> = (0..n).map(|i| udp(src(i), dst(i), b"HIT")).collect();
    let started = Instant::now();
    let mut k = 0u64;
    for (i, frame) in frames.iter().enumerate() {
        let d = decode(LinkType::Ethernet, frame, &DecodeOptions::default());
        for _ in 0..per_key {
            k += 1;
            let pkt = DetectPacket {
                ts: Timestamp(1_000_000_000 + k * 10_000),
                decoded: Some(&d),
                tuple: d.tuple().expect("ip"),
                payload: d.payload,
                flow: Some(FlowInfo {
                    flow_id: i as u64 + 1,
                    to_server: true,
                    established: true,
                    ..Default::default()
                }),
                ..Default::default()
            };
            alerts.clear();
            e.inspect(&mut ctx, &pkt, Some(&mut flow), &mut alerts);
            total += alerts.len() as u64;
        }
    }
    (started.elapsed(), total)
}

const THRESHOLD_RULE: &str =
    r#"alert udp any any -> any any (content:"HIT"; threshold:type limit,track by_src,count 1,seconds 60; sid:1;)"#;
const XBITS_RULE: &str = r#"alert udp any any -> any any (content:"HIT"; xbits:set,seen,track ip_pair,expire 60; noalert; sid:1;)
alert udp any any -> any any (content:"HIT"; xbits:isset,seen,track ip_pair; sid:2;)"#;

fn bench_n() -> u32 {
    std::env::var("TABLES_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(500_000)
}

fn report(name: &str, n: u32, per_key: u32, elapsed: Duration, alerts: u64) {
    let pkts = n as f64 * per_key as f64;
    println!(
        "{name}: {n} keys x {per_key}: {elapsed:?}, {:.0} pkt/s, {alerts} alerts",
        pkts / elapsed.as_secs_f64().max(1e-9)
    );
}

#[test]
#[ignore]
fn bench_threshold_by_src_many_sources() {
    let n = bench_n();
    let e = engine(THRESHOLD_RULE);
    // Benign: the same few sources over and over.
    let (t, a) = run(&e, n, 1, |i| addr(i % 16), |_| [192, 168, 0, 1]);
    report("threshold by_src, 16 sources (benign)", n, 1, t, a);
    let e = engine(THRESHOLD_RULE);
    let (t, a) = run(&e, n, 1, addr, |_| [192, 168, 0, 1]);
    report("threshold by_src, all sources new (worst)", n, 1, t, a);
}

#[test]
#[ignore]
fn bench_xbits_many_ip_pairs() {
    let n = bench_n();
    let e = engine(XBITS_RULE);
    let (t, a) = run(&e, n, 2, |i| addr(i % 16), |_| [192, 168, 0, 1]);
    report("xbits ip_pair, 16 pairs (benign)", n, 2, t, a);
    let e = engine(XBITS_RULE);
    let (t, a) = run(&e, n, 2, addr, |i| [192, 168, (i >> 8) as u8, i as u8]);
    report("xbits ip_pair, all pairs new (worst)", n, 2, t, a);
}

/// Scaled-down worst case (issue #16): 40k new sources against a by_src limit, 40k new ip
/// pairs setting xbits, each compared with as many packets from 16 sources. Before the
/// lock-striped tables this was quadratic (a full-table scan per new key once full).
#[test]
fn many_new_sources_cost_about_what_few_do() {
    let n = 40_000;
    for (name, rules, per_key) in [("threshold by_src", THRESHOLD_RULE, 1), ("xbits ip_pair", XBITS_RULE, 2)] {
        let (base, benign_alerts) = run(&engine(rules), n, per_key, |i| addr(i % 16), |_| [192, 168, 0, 1]);
        let (worst, worst_alerts) = run(&engine(rules), n, per_key, addr, |i| [192, 168, (i >> 8) as u8, i as u8]);
        // Alert semantics as before the tables: a limit of 1 per source alerts once per
        // source; the setter runs before the checker, so every packet of a pair alerts.
        let expected = if per_key == 1 { (16, n as u64) } else { (2 * n as u64, 2 * n as u64) };
        assert_eq!((benign_alerts, worst_alerts), expected, "{name}");
        assert!(worst < base * 10 + Duration::from_millis(500), "{name}: {worst:?} vs benign {base:?}");
    }
}

/// A table at its memcap evicts (and counts) instead of letting matches through untracked,
/// and its memory stays under the cap.
#[test]
fn a_full_host_table_evicts_and_counts() {
    let load = load_rules_str("tables.rules", THRESHOLD_RULE, &RuleVars::default());
    let cfg = DetectConfig {
        host: picket::detect::engine::TableConfig { hash_size: 64, prealloc: 0, memcap: 64 * 1024 },
        ..DetectConfig::default()
    };
    let e = DetectEngine::build(load.rules, &cfg).expect("build").0;
    let mut ctx = e.new_ctx();
    let mut alerts = Vec::new();
    let mut flow = DetectFlow::default();
    let mut count = |i: u32, ctx: &mut _, alerts: &mut Vec<Alert>| {
        let frame = udp(addr(i), [192, 168, 0, 1], b"HIT");
        let d = decode(LinkType::Ethernet, &frame, &DecodeOptions::default());
        let pkt = DetectPacket {
            ts: Timestamp::from_parts(10, 0),
            decoded: Some(&d),
            tuple: d.tuple().expect("ip"),
            payload: d.payload,
            flow: Some(FlowInfo { flow_id: 1, to_server: true, established: true, ..Default::default() }),
            ..Default::default()
        };
        alerts.clear();
        e.inspect(ctx, &pkt, Some(&mut flow), alerts);
        alerts.len()
    };
    for i in 0..5_000 {
        assert_eq!(count(i, &mut ctx, &mut alerts), 1, "first match of a source alerts");
        assert_eq!(count(i, &mut ctx, &mut alerts), 0, "the limit holds for the newest source");
    }
    let counters: std::collections::HashMap<_, _> = e.counters(&ctx).into_iter().collect();
    assert!(counters["host.memuse"] <= 64 * 1024, "{counters:?}");
    assert_eq!(counters["host.memcap"], 64 * 1024);
    assert!(counters["host.memcap_evicted"] >= 4_000, "{counters:?}");
    assert_eq!(counters["host.memcap_refused"], 0);
    // A second worker context reports the shared table's counters as zeros (no double count).
    let other: std::collections::HashMap<_, _> = e.counters(&e.new_ctx()).into_iter().collect();
    assert_eq!(other["host.memcap_evicted"], 0);
}
