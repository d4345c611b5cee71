//! Per-flow counts of the app-layer records (dns, tls, ssh) against what the traffic
//! holds, as Suricata's default output has them: a DNS record per message (each UDP
//! datagram of a DNS flow is one message: requests to the server, responses to the
//! client), one `tls` record per TLS session, one `ssh` record per SSH session, and none
//! for flows of other protocols; a DNS flow first seen from the server is turned round, as
//! Suricata does. Run on the bundled sample, and on a fresh `gen_traffic.py`
//! capture (with VLANs and injected triggers) when the benchmark generator is at hand.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(pcap: &Path) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .args(["-k", "none", "-r"])
        .arg(pcap)
        .arg("-l")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("eve.json")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Checks every flow's dns/tls/ssh record counts; returns the records per type.
fn check_counts(events: &[Value]) -> HashMap<String, usize> {
    let mut per_flow: HashMap<(u64, String), usize> = HashMap::new();
    let mut requests: HashMap<u64, u64> = HashMap::new();
    let mut totals: HashMap<String, usize> = HashMap::new();
    for e in events {
        let kind = e["event_type"].as_str().unwrap().to_string();
        *totals.entry(kind.clone()).or_default() += 1;
        if matches!(kind.as_str(), "dns" | "tls" | "ssh") {
            let flow = e["flow_id"].as_u64().unwrap();
            *per_flow.entry((flow, kind.clone())).or_default() += 1;
            if kind == "dns" && e["dns"]["type"] == "request" {
                *requests.entry(flow).or_default() += 1;
            }
        }
    }
    let flows: Vec<&Value> = events.iter().filter(|e| e["event_type"] == "flow").collect();
    assert!(!flows.is_empty());
    for f in flows {
        let id = f["flow_id"].as_u64().unwrap();
        let count = |kind: &str| per_flow.get(&(id, kind.to_string())).copied().unwrap_or(0);
        let app = f["app_proto"].as_str().unwrap_or("");
        let (to_server, to_client) =
            (f["flow"]["pkts_toserver"].as_u64().unwrap(), f["flow"]["pkts_toclient"].as_u64().unwrap());
        match app {
            "dns" if f["proto"] == "UDP" => {
                assert_eq!(count("dns") as u64, to_server + to_client, "a record per DNS datagram: {f}");
                assert_eq!(requests.get(&id).copied().unwrap_or(0), to_server, "requests go to the server: {f}");
            }
            "tls" => assert_eq!(count("tls"), 1, "one record per TLS session: {f}"),
            "ssh" => assert_eq!(count("ssh"), 1, "one record per SSH session: {f}"),
            _ => {}
        }
        for kind in ["dns", "tls", "ssh"] {
            if app != kind {
                assert_eq!(count(kind), 0, "no {kind} record on a {app} flow: {f}");
            }
        }
    }
    totals
}

#[test]
fn app_records_per_flow_on_the_sample() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap");
    let totals = check_counts(&run(&sample));
    for kind in ["dns", "tls", "ssh"] {
        assert!(totals.get(kind).copied().unwrap_or(0) > 0, "the sample has {kind} records: {totals:?}");
    }
}

/// The benchmark traffic generator, when the checkout has it beside the repository.
fn gen_traffic() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/gen_traffic.py");
    path.is_file().then_some(path)
}

#[test]
fn app_records_per_flow_on_generated_traffic() {
    let Some(generator) = gen_traffic() else {
        eprintln!("gen_traffic.py not found beside the repository; skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("gen.pcap");
    let status = Command::new("python3")
        .arg(&generator)
        .args(["--packets", "30000", "--seed", "5", "--inject-rate", "0.01", "--vlan-frac", "0.05", "-o"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let totals = check_counts(&run(&pcap));
    for kind in ["dns", "tls", "ssh"] {
        assert!(totals.get(kind).copied().unwrap_or(0) > 10, "{kind} records: {totals:?}");
    }
}
