//! The skewed-capture generator (`scripts/gen_skewed.py`): reproducible output, and
//! captures that picket reads without a single decoder, stream or app-layer anomaly, with
//! the flow shares its summary promises (checked against picket's own flow records).
//!
//! Needs python3; prints SKIPPED and returns without it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_skewed.py")
}

/// A scratch directory for the test, or None (after printing why) without python3.
fn scratch() -> Option<tempfile::TempDir> {
    let ok = Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: python3 not installed");
        return None;
    }
    Some(tempfile::tempdir().unwrap())
}

/// Runs the generator and returns its JSON summary (read from OUT.json).
fn generate(out: &Path, args: &[&str]) -> Value {
    let result = Command::new("python3")
        .arg(script())
        .arg("-o")
        .arg(out)
        .arg("--quiet")
        .args(args)
        .output()
        .expect("spawn python3");
    assert!(result.status.success(), "gen_skewed.py {args:?} failed: {}", String::from_utf8_lossy(&result.stderr));
    let mut summary_path = out.as_os_str().to_owned();
    summary_path.push(".json");
    serde_json::from_str(&std::fs::read_to_string(summary_path).expect("summary written")).expect("summary is JSON")
}

/// Runs picket over a capture with the bundled rules, checksum validation on, logging to
/// a new `logs` directory next to the capture, and returns the eve events.
fn picket_eve(pcap: &Path, extra: &[&str]) -> Vec<Value> {
    let logs = pcap.with_file_name("logs");
    std::fs::create_dir(&logs).unwrap();
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/default.rules");
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .arg("-r")
        .arg(pcap)
        .arg("-S")
        .arg(rules)
        .arg("-l")
        .arg(&logs)
        .args(["-k", "all", "--workers", "2"])
        .args(extra)
        .output()
        .expect("spawn picket");
    assert!(out.status.success(), "picket failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(logs.join("eve.json"))
        .expect("eve.json written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l}: {e}")))
        .collect()
}

/// Packets per flow record (both directions), largest first.
fn flow_sizes(events: &[Value]) -> Vec<u64> {
    let mut sizes: Vec<u64> = events
        .iter()
        .filter(|e| e["event_type"] == "flow")
        .map(|f| u(&f["flow"]["pkts_toserver"]) + u(&f["flow"]["pkts_toclient"]))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a counter: {v}"))
}

/// Every counter under `v` (nested objects flattened to dotted names) that is not zero.
/// The eve stats object with its `picket` subtree (picket's own counters) merged into the
/// counters Suricata also has, so a counter is found by its stats.log name either way.
fn with_picket_counters(stats: &Value) -> Value {
    fn merge(into: &mut Value, from: &Value) {
        match (into, from) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (slot, v) => *slot = v.clone(),
        }
    }
    let mut all = stats.clone();
    if let Some(own) = stats.get("picket") {
        merge(&mut all, own);
    }
    all
}

fn nonzero(prefix: &str, v: &Value, found: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                nonzero(&format!("{prefix}.{k}"), child, found);
            }
        }
        _ => {
            if v.as_u64() != Some(0) {
                found.push(format!("{prefix}={v}"));
            }
        }
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let Some(dir) = scratch() else { return };
    let (a, b, c) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"), dir.path().join("c.pcap"));
    let args = ["--packets", "20000", "--seed", "11"];
    let summary = generate(&a, &args);
    generate(&b, &args);
    generate(&c, &["--packets", "20000", "--seed", "12"]);
    let (a, b, c) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), std::fs::read(c).unwrap());
    assert_eq!(u(&summary["packets"]), 20000, "exactly the requested packet count");
    assert!(a == b, "same seed and arguments must give the same bytes");
    assert!(a != c, "another seed must give another capture");
    // Classic pcap, microsecond timestamps, Ethernet.
    assert_eq!(&a[..4], &0xA1B2_C3D4u32.to_le_bytes());
    assert_eq!(u32::from_le_bytes(a[20..24].try_into().unwrap()), 1);
}

#[test]
fn picket_reads_a_skewed_capture_cleanly_with_the_promised_shares() {
    let Some(dir) = scratch() else { return };
    let pcap = dir.path().join("skewed.pcap");
    let summary = generate(&pcap, &["--packets", "40000", "--seed", "3", "--inject-rate", "0.2", "--ipv6", "0.1"]);
    // The heavy downloads pass the default 1 MiB stream depth, and a response cut by the
    // depth is an HTTP anomaly (truncated); without a depth nothing may be anomalous.
    let events = picket_eve(&pcap, &["--set", "stream.reassembly.depth=0"]);
    // Suricata's counters and picket's own (under `picket`) in one tree.
    let stats = &with_picket_counters(&events.last().expect("events")["stats"]);

    // Decoder: every packet decoded, every checksum right, no decoder event.
    let decoder = &stats["decoder"];
    assert_eq!(u(&decoder["pkts"]), u(&summary["packets"]));
    let mut bad = Vec::new();
    for key in ["invalid", "bad_checksum", "other_ip_proto", "ipv4_frag_not_reassembled", "ipv6_frag_not_reassembled"] {
        nonzero(&format!("decoder.{key}"), &decoder[key], &mut bad);
    }
    nonzero("decoder.event", &decoder["event"], &mut bad);
    // Stream: no handshake, sequence or reassembly anomaly, every TCP flow a full session.
    nonzero("stream", &stats["stream"], &mut bad);
    for key in [
        "invalid_flags",
        "midstream_pickups",
        "no_session",
        "pkt_after_close",
        "overlap",
        "overlap_diff_data",
        "reassembly_gap",
        "reassembly_old_segments",
        "reassembly_out_of_window",
        "stream_depth_reached",
        "rst",
    ] {
        nonzero(&format!("tcp.{key}"), &stats["tcp"][key], &mut bad);
    }
    nonzero("flow.tcp_reuse", &stats["flow"]["tcp_reuse"], &mut bad);
    // App layer: the parsers accept everything.
    let app = &stats["app_layer"];
    nonzero("app_layer.http", &app["http"], &mut bad);
    for key in ["invalid_records", "invalid_handshake", "record_overflows", "handshake_too_large", "gaps"] {
        nonzero(&format!("app_layer.tls.{key}"), &app["tls"][key], &mut bad);
    }
    for key in ["malformed", "not_request", "not_response", "records_skipped", "gap_bytes_skipped"] {
        nonzero(&format!("app_layer.dns.{key}"), &app["dns"][key], &mut bad);
    }
    assert!(bad.is_empty(), "anomalies on a generated capture: {bad:?}");
    assert_eq!(u(&stats["tcp"]["sessions"]), u(&stats["flow"]["tcp"]), "every TCP flow opens with a handshake");
    assert_eq!(u(&stats["flow"]["end"]["state"]["closed"]), u(&stats["flow"]["tcp"]), "every TCP flow closes");

    // Per-protocol packet counts agree with what picket decoded.
    let proto = &summary["packets_by_protocol"];
    assert_eq!(u(&decoder["tcp"]), u(&proto["tcp"]));
    assert_eq!(u(&decoder["udp"]), u(&proto["udp"]));
    assert_eq!(u(&decoder["icmpv4"]), u(&proto["icmp"]));
    assert_eq!(u(&decoder["icmpv6"]), u(&proto["icmpv6"]));
    assert_eq!(u(&decoder["ipv6"]), u(&summary["ipv6_packets"]));
    assert!(u(&decoder["ipv6"]) > 0, "some IPv6");

    // Flow records: the app protocols are recognised, and flows match the summary.
    let flows: Vec<&Value> = events.iter().filter(|e| e["event_type"] == "flow").collect();
    assert_eq!(flows.len() as u64, u(&summary["flows"]));
    let mut apps: BTreeMap<String, u64> = BTreeMap::new();
    for f in &flows {
        *apps.entry(f["app_proto"].as_str().unwrap_or("none").to_string()).or_default() += 1;
    }
    let kinds = &summary["flows_by_kind"];
    assert_eq!(apps.get("dns").copied(), Some(u(&kinds["dns"])), "{apps:?}");
    assert_eq!(apps.get("http").copied(), Some(u(&kinds["http"]) + u(&kinds["heavy_tcp"])), "{apps:?}");
    assert_eq!(apps.get("tls").copied(), Some(u(&kinds["tls"])), "{apps:?}");

    // Hot servers (their IPv4 and IPv6 addresses) take the promised share of the normal
    // flows, and each of them far more than any other server.
    // Addresses compared parsed: eve writes IPv6 in Suricata's expanded form.
    let ip = |v: &Value| v.as_str().unwrap().parse::<std::net::IpAddr>().unwrap();
    let hot: Vec<std::net::IpAddr> = summary["hot_server_addresses"].as_array().unwrap().iter().map(ip).collect();
    assert_eq!(hot.len(), 8);
    let mut per_server: BTreeMap<std::net::IpAddr, u64> = BTreeMap::new();
    for f in &flows {
        *per_server.entry(ip(&f["dest_ip"])).or_default() += 1;
    }
    let to_hot: u64 = hot.iter().map(|a| per_server.get(a).copied().unwrap_or(0)).sum();
    assert_eq!(to_hot, u(&summary["hot_server_flows"]));
    let hot_share = to_hot as f64 / u(&summary["normal_flows"]) as f64;
    assert!((hot_share - 0.4).abs() < 0.05, "hot servers take {hot_share} of the normal flows, default 0.4");
    let coldest_hot = hot.iter().step_by(2).map(|a| per_server[a]).min().unwrap();
    let busiest_other = per_server.iter().filter(|(a, _)| !hot.contains(a)).map(|(_, n)| *n).max().unwrap();
    assert!(busiest_other * 4 < coldest_hot, "other servers: at most {busiest_other} flows, hot ones {coldest_hot}");

    // The heaviest flows in picket's records carry the promised share, flow by flow.
    let sizes = flow_sizes(&events);
    let total = u(&decoder["pkts"]) as f64;
    let top: Vec<u64> = summary["top_flows"].as_array().unwrap().iter().map(|f| u(&f["packets"])).collect();
    assert_eq!(top.len(), 8, "6 heavy TCP + 2 heavy UDP by default");
    assert_eq!(&sizes[..top.len()], &top[..], "heavy flows as picket counted them");
    let heavy_share = top.iter().sum::<u64>() as f64 / total;
    assert!((heavy_share - 0.75).abs() < 0.02, "heavy share {heavy_share}, default 0.75");
    assert!(sizes[top.len()] < top[top.len() - 1] / 2, "normal flows stay well below the heavy ones: {sizes:?}");
    assert!((sizes[0] as f64 / total) <= 0.20, "no single flow above ~20%");

    // Alerts: ICMP echo, the DNS name, and exactly the injected HTTP contents.
    let mut alerts: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["event_type"] == "alert") {
        *alerts.entry(u(&e["alert"]["signature_id"])).or_default() += 1;
    }
    assert_eq!(
        alerts.get(&9000012).copied(),
        Some(u(&decoder["icmpv4"]).div_ceil(2)),
        "one per echo request (the last may lack its reply): {alerts:?}"
    );
    assert!(alerts.contains_key(&9000020), "DNS query for example.com: {alerts:?}");
    let injected = &summary["injected"];
    assert!(injected.as_object().unwrap().len() >= 2, "several kinds injected: {injected}");
    for (kind, sid) in [("cgi_id", 9000002), ("uid0_response", 9000003), ("dosexec", 9000030)] {
        let want = injected.get(kind).map(u).unwrap_or(0);
        assert_eq!(alerts.get(&sid).copied().unwrap_or(0), want, "{kind} -> sid {sid}: {alerts:?}");
    }
}

#[test]
fn explicit_heavy_weights_set_each_heavy_flow_share() {
    let Some(dir) = scratch() else { return };
    let pcap = dir.path().join("weights.pcap");
    let args = ["--packets", "20000", "--seed", "4", "--heavy-tcp", "2", "--heavy-udp", "2"];
    let summary = generate(&pcap, &[&args[..], &["--heavy-share", "0.4", "--heavy-weights", "4,2,1,1"]].concat());
    let sizes = flow_sizes(&picket_eve(&pcap, &[]));
    assert_eq!(u(&summary["packets"]), 20000);
    for (i, want) in [0.2, 0.1, 0.05, 0.05].iter().enumerate() {
        let share = sizes[i] as f64 / 20000.0;
        assert!((share - want).abs() < 0.005, "flow {i}: share {share}, want {want} ({sizes:?})");
    }
}
