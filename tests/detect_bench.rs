//! Detection engine throughput harness (ignored by default; run in release):
//! `cargo test --release --test detect_bench -- --ignored --nocapture`
//! Replays bench.pcap (in the repository root; see the README to generate it) from memory: decode, a minimal flow table (direction and
//! "both sides seen" as established), then `inspect` with the full ET Open set.

use picket::capture::{MemorySource, PacketSource};
use picket::decode::{decode, DecodeOptions};
use picket::detect::engine::{DetectConfig, DetectEngine, DetectFlow, DetectPacket, FlowInfo};
use picket::detect::rule::{RuleSetLoad, RuleVars};
use picket::rules::read_rules_file;
use std::collections::HashMap;
use std::time::Instant;

/// Sorted endpoints and protocol.
type FlowKey = ([u8; 16], [u8; 16], u16, u16, u8);
/// Client address/port, both sides seen, detection state, flow id.
type FlowSlot = (([u8; 16], u16), bool, DetectFlow, u64);

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
#[ignore]
fn bench_et_open_on_pcap() {
    let pcap = &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench.pcap");
    let rules_dir = &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/rules/et-open-2024-04-21");
    let (Ok(mut source), Ok(entries)) = (MemorySource::load(pcap), std::fs::read_dir(rules_dir)) else { return };
    let mut files: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rules")).collect();
    files.sort();
    let rss0 = rss_kib();
    let t0 = Instant::now();
    let mut load = RuleSetLoad::new();
    for f in &files {
        read_rules_file(&mut load, f, &RuleVars::default());
    }
    let parse = t0.elapsed();
    let (engine, report) = DetectEngine::build(load.rules, &DetectConfig::default()).unwrap();
    let startup = t0.elapsed();
    let rss1 = rss_kib();
    println!(
        "start-up: parse {parse:?}, total {startup:?} (build {} ms), rules {}, patterns {}, engine memory {} KiB, RSS +{} KiB",
        report.build_micros / 1000,
        report.rules_loaded,
        report.prefilter_patterns,
        report.memory_bytes / 1024,
        rss1.saturating_sub(rss0)
    );
    let mut ctx = engine.new_ctx();
    let opts = DecodeOptions { validate_checksums: false, ..DecodeOptions::default() };
    // Flow key (sorted endpoints) -> (client address/port, both sides seen, state, id).
    let mut flows: HashMap<FlowKey, FlowSlot> = HashMap::new();
    let mut alerts = Vec::new();
    let mut n = 0u64;
    let mut alert_count = 0u64;
    let mut by_sid: HashMap<u32, u64> = HashMap::new();
    let start = Instant::now();
    while let Ok(Some(raw)) = source.next_packet() {
        n += 1;
        let d = decode(raw.link, raw.data, &opts);
        let Some(tuple) = d.tuple() else { continue };
        let a = (tuple.src, tuple.src_port);
        let b = (tuple.dst, tuple.dst_port);
        let key = if a <= b { (a.0, b.0, a.1, b.1, tuple.proto) } else { (b.0, a.0, b.1, a.1, tuple.proto) };
        let next_id = flows.len() as u64 + 1;
        let entry = flows.entry(key).or_insert_with(|| (a, false, DetectFlow::default(), next_id));
        let to_server = entry.0 == a;
        if !to_server {
            entry.1 = true;
        }
        let info = FlowInfo { flow_id: entry.3, to_server, established: entry.1, ..Default::default() };
        let pkt = DetectPacket {
            ts: raw.ts,
            pcap_cnt: n,
            decoded: Some(&d),
            tuple,
            payload: d.payload,
            flow: Some(info),
            ..Default::default()
        };
        alerts.clear();
        engine.inspect(&mut ctx, &pkt, Some(&mut entry.2), &mut alerts);
        alert_count += alerts.len() as u64;
        for al in &alerts {
            *by_sid.entry(al.sid).or_default() += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let mut top: Vec<_> = by_sid.into_iter().collect();
    top.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    println!(
        "replay: {n} packets, {} flows, {alert_count} alerts in {secs:.2} s = {:.0} packets/s (decode + flow lookup + detect, 1 core)",
        flows.len(),
        n as f64 / secs
    );
    println!("top sids: {:?}", &top[..top.len().min(10)]);
    println!("counters: {:?}", engine.counters(&ctx));
}
