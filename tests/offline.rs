//! End-to-end runs of the `picket` binary over captures: outputs, determinism, flow
//! affinity, error handling, and survival on every conformance capture.

mod pcapfile;
use pcapfile::write_pcap;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn picket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_picket"))
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap")
}

fn run_ok(args: &[&str]) -> Output {
    let out = picket().args(args).output().expect("spawn picket");
    assert!(
        out.status.success(),
        "picket {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn read_eve(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("eve.json"))
        .expect("eve.json written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l}: {e}")))
        .collect()
}

/// Runs picket on the sample with extra args and returns the eve events.
fn eve_for(extra: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let mut args = vec!["-r", sample.to_str().unwrap(), "-l", dir.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    run_ok(&args);
    read_eve(dir.path())
}

fn non_stats(events: &[Value]) -> Vec<String> {
    events.iter().filter(|e| e["event_type"] != "stats").map(|e| e.to_string()).collect()
}

#[test]
fn sample_run_writes_flows_stats_and_stats_log() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let out = run_ok(&["-r", sample.to_str().unwrap(), "-l", dir.path().to_str().unwrap(), "--workers", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("W#01") && stdout.contains("W#02"), "load table printed: {stdout}");

    let events = read_eve(dir.path());
    let flows: Vec<_> = events.iter().filter(|e| e["event_type"] == "flow").collect();
    assert!(flows.len() >= 5, "sample has several flows, got {}", flows.len());
    for f in &flows {
        for key in ["timestamp", "flow_id", "src_ip", "dest_ip", "proto"] {
            assert!(!f[key].is_null(), "flow event lacks {key}: {f}");
        }
        assert!(f["flow"]["pkts_toserver"].as_u64().unwrap() + f["flow"]["pkts_toclient"].as_u64().unwrap() > 0);
        let ts = f["timestamp"].as_str().unwrap();
        assert_eq!(ts.len(), "2009-11-24T21:27:09.534255+0000".len(), "Suricata timestamp format: {ts}");
    }
    let stats = events.last().expect("events");
    assert_eq!(stats["event_type"], "stats", "stats event comes last");
    let pkts = stats["stats"]["decoder"]["pkts"].as_u64().unwrap();
    let flow_pkts: u64 = flows
        .iter()
        .map(|f| f["flow"]["pkts_toserver"].as_u64().unwrap() + f["flow"]["pkts_toclient"].as_u64().unwrap())
        .sum();
    assert!(flow_pkts <= pkts && flow_pkts > pkts / 2, "flows account for most packets: {flow_pkts} of {pkts}");
    // Per-worker counters only with eve-log `stats: threads: yes` (Suricata's default: no).
    assert!(stats["stats"].get("threads").is_none(), "{}", stats["stats"]);
    assert!(
        stats["stats"]["picket"]["capture"]["dispatch_ring_full_waits"].is_u64(),
        "ring backpressure is counted (picket's own counter): {}",
        stats["stats"]["picket"]
    );

    let log = std::fs::read_to_string(dir.path().join("stats.log")).unwrap();
    assert!(log.contains("decoder.pkts") && log.contains("Total") && log.contains("W#02"));
}

#[test]
fn output_is_deterministic_for_a_worker_count() {
    for policy in ["flow", "roundrobin", "random"] {
        let a = eve_for(&["--workers", "2", "--dispatch", policy]);
        let b = eve_for(&["--workers", "2", "--dispatch", policy]);
        assert_eq!(non_stats(&a), non_stats(&b), "policy {policy}");
    }
}

/// Suricata's `--no-random` is taken (fixed hash seeds) and changes no event.
#[test]
fn no_random_fixes_seeds_and_changes_no_event() {
    let seeded = eve_for(&["--workers", "2", "--no-random"]);
    let random = eve_for(&["--workers", "2"]);
    assert!(!non_stats(&seeded).is_empty());
    assert_eq!(non_stats(&seeded), non_stats(&random));
}

/// The same flows, with the same packet counts, whether one thread or two workers did the work.
#[test]
fn flow_records_do_not_depend_on_run_mode_under_flow_dispatch() {
    let summary = |events: Vec<Value>| -> BTreeSet<String> {
        events
            .iter()
            .filter(|e| e["event_type"] == "flow")
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    e["flow_id"], e["flow"]["pkts_toserver"], e["flow"]["pkts_toclient"], e["flow"]["bytes_toserver"]
                )
            })
            .collect()
    };
    let single = summary(eve_for(&["--runmode", "single"]));
    let two = summary(eve_for(&["--workers", "2", "--dispatch", "flow"]));
    assert!(!single.is_empty());
    assert_eq!(single, two);
}

/// Under flow dispatch each flow is created on exactly one worker, so the per-worker
/// flow totals add up to the single-thread total; round robin splits flows across workers.
#[test]
fn flow_dispatch_keeps_each_flow_on_one_worker() {
    let flows_created = |events: &[Value]| -> (u64, BTreeMap<String, u64>) {
        let stats = &events.last().unwrap()["stats"];
        let per: BTreeMap<String, u64> = stats["threads"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("W#"))
            .map(|(k, v)| (k.clone(), v["flow"]["total"].as_u64().unwrap_or(0)))
            .collect();
        (stats["flow"]["total"].as_u64().unwrap(), per)
    };
    // Per-worker counters are in eve `stats` with `stats: threads: yes`.
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("threads.yaml");
    std::fs::write(&yaml, "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - flow\n        - stats:\n            threads: yes\n").unwrap();
    let yaml = yaml.to_str().unwrap();
    let (single_total, _) = flows_created(&eve_for(&["--runmode", "single", "-c", yaml]));
    let (flow_total, per) = flows_created(&eve_for(&["--workers", "2", "--dispatch", "flow", "-c", yaml]));
    assert_eq!(flow_total, single_total);
    assert!(per.values().all(|&n| n > 0), "both workers got flows: {per:?}");
    let (rr_total, _) = flows_created(&eve_for(&["--workers", "2", "--dispatch", "roundrobin", "-c", yaml]));
    assert!(rr_total > single_total, "round robin splits flows: {rr_total} vs {single_total}");
}

fn run_err(args: &[&str]) -> String {
    let out = picket().args(args).output().unwrap();
    assert!(!out.status.success(), "picket {args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn clear_errors_for_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let sample = sample();
    let s = sample.to_str().unwrap();
    let err = run_err(&["-r", "/nonexistent/x.pcap", "-l", d]);
    assert!(err.contains("/nonexistent/x.pcap"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    run_err(&["-r", s, "-l", d, "--bogus-option"]);
    let err = run_err(&["-r", s, "-l", d, "-k", "sometimes"]);
    assert!(err.contains("sometimes"), "{err}");
    let err = run_err(&["-r", s, "-l", d, "--set", "flow.memcap=lots"]);
    assert!(err.contains("flow.memcap"), "{err}");
    let err = run_err(&["-r", s, "-l", d, "--dispatch", "sideways"]);
    assert!(err.contains("sideways"), "{err}");
    let err = run_err(&["-r", s, "-l", d, "-c", "/nonexistent.yaml"]);
    assert!(err.contains("/nonexistent.yaml"), "{err}");
    let not_pcap = dir.path().join("notes.txt");
    std::fs::write(&not_pcap, "hello, not a capture").unwrap();
    run_err(&["-r", not_pcap.to_str().unwrap(), "-l", d]);
}

#[test]
fn unknown_set_key_warns_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let out = run_ok(&["-r", sample.to_str().unwrap(), "-l", dir.path().to_str().unwrap(), "--set", "no.such.key=1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no.such.key"));
}

#[test]
fn truncated_capture_is_processed_up_to_the_break() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample()).unwrap();
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = run_ok(&["-r", cut.to_str().unwrap(), "-l", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated") || err.contains("Truncated"), "reports the break: {err}");
    let events = read_eve(dir.path());
    let pkts = events.last().unwrap()["stats"]["decoder"]["pkts"].as_u64().unwrap();
    assert!(pkts > 0, "packets before the break were processed");
}

/// Every capture of the conformance suite: picket exits 0 and never panics.
#[test]
fn survives_every_conformance_capture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/pcaps");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} not found", dir.display());
        return;
    };
    let mut pcaps: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    pcaps.sort();
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (i, pcap) in pcaps.iter().enumerate() {
        // Alternate run modes so both paths meet every kind of capture.
        let mode: &[&str] = if i % 2 == 0 { &["--workers", "2"] } else { &["--runmode", "single"] };
        let o = picket()
            .args(["-r", pcap.to_str().unwrap(), "-l", out.path().to_str().unwrap(), "-k", "none"])
            .args(mode)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() || stderr.contains("panicked") {
            failures.push(format!("{}: {:?} {}", pcap.display(), o.status, stderr.lines().last().unwrap_or("")));
        }
    }
    eprintln!("ran picket over {} conformance captures", pcaps.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

fn udp_frame(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(40000, dst_port)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// Runs `-r pcap -S rules -k none` plus `extra` into a fresh log directory (exit 0
/// asserted) and returns its eve events.
fn run_rules_eve(pcap: &Path, rules: &Path, extra: &[&str]) -> Vec<Value> {
    let logs = tempfile::tempdir().unwrap();
    let mut args = vec![
        "-r",
        pcap.to_str().unwrap(),
        "-S",
        rules.to_str().unwrap(),
        "-l",
        logs.path().to_str().unwrap(),
        "-k",
        "none",
    ];
    args.extend_from_slice(extra);
    run_ok(&args);
    read_eve(logs.path())
}

/// Alerts' (pcap_cnt, dest_port), and the stats event.
fn alerts_and_stats(events: &[Value]) -> (Vec<(u64, u64)>, Value) {
    let alerts = events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| (e["pcap_cnt"].as_u64().unwrap(), e["dest_port"].as_u64().unwrap()))
        .collect();
    (alerts, events.last().unwrap()["stats"].clone())
}

/// `picket -r x.pcap ... udp port 22`: only the matching packets are inspected, they are
/// numbered 1, 2, 3 as Suricata numbers what libpcap hands it, and the rest are counted
/// in `capture.bpf_filtered`. The same filter from `-F FILE` and `--set bpf-filter=`.
#[test]
fn bpf_filter_drops_packets_before_numbering() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("mixed.pcap");
    let frames: Vec<_> = (0..6).map(|i| udp_frame(if i % 2 == 0 { 80 } else { 22 }, b"mark")).collect();
    write_pcap(&pcap, &frames);
    let rules = dir.path().join("r.rules");
    std::fs::write(&rules, "alert udp any any -> any any (msg:\"mark\"; content:\"mark\"; sid:1;)\n").unwrap();
    let filter_file = dir.path().join("filter.bpf");
    std::fs::write(&filter_file, "# ssh only\nudp port 22 # the server\n").unwrap();
    let run = |extra: &[&str]| -> Vec<Value> { run_rules_eve(&pcap, &rules, extra) };

    let (alerts, stats) = alerts_and_stats(&run(&[]));
    assert_eq!(alerts, vec![(1, 80), (2, 22), (3, 80), (4, 22), (5, 80), (6, 22)]);
    assert!(stats["picket"]["capture"]["bpf_filtered"].is_null(), "no filter, no counter: {}", stats["picket"]);

    let filter_file = filter_file.to_str().unwrap();
    for extra in [
        &["--runmode", "single", "udp", "port", "22"][..],
        &["--workers", "2", "udp", "port", "22"][..],
        &["-F", filter_file][..],
        &["--set", "bpf-filter=udp port 22"][..],
    ] {
        let (alerts, stats) = alerts_and_stats(&run(extra));
        assert_eq!(alerts, vec![(1, 22), (2, 22), (3, 22)], "{extra:?}");
        assert_eq!(stats["picket"]["capture"]["bpf_filtered"], 3, "{extra:?}: {}", stats["picket"]);
        assert_eq!(stats["decoder"]["pkts"], 3, "{extra:?}");
    }
    // A filter nothing matches: no packet is inspected, the run still succeeds.
    let (alerts, stats) = alerts_and_stats(&run(&["udp", "port", "53"]));
    assert!(alerts.is_empty());
    assert_eq!(stats["picket"]["capture"]["bpf_filtered"], 6);
}

#[test]
fn bad_bpf_filter_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let sample = sample();
    let s = sample.to_str().unwrap();
    let err = run_err(&["-r", s, "-l", d, "port", "22", "andd", "host"]);
    assert!(err.contains("'port 22 andd host'") && err.contains("syntax error"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let err = run_err(&["-r", s, "-l", d, "port", "70000"]);
    assert!(err.contains("'port 70000'") && err.contains("70000"), "{err}");
    let filter_file = dir.path().join("f.bpf");
    std::fs::write(&filter_file, "tcp\n").unwrap();
    let err = run_err(&["-r", s, "-l", d, "-F", filter_file.to_str().unwrap(), "udp"]);
    assert!(err.contains("BPF filter given twice"), "{err}");
    let err = run_err(&["-r", s, "-l", d, "-F", "/nonexistent/filter"]);
    assert!(err.contains("/nonexistent/filter"), "{err}");
}

/// Issue #16: a rule whose `byte_math ... oper -` goes below zero and feeds `offset:var`
/// panicked a worker on one 60-byte UDP packet. Now the packet is no match for that rule,
/// the next packets are still inspected, and the run exits 0. The catastrophic pcre of the
/// same issue is stopped by `pcre.match-limit` and counted in the stats.
#[test]
fn bounds_hostile_byte_math_and_pcre_do_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("hostile.pcap");
    let mut hostile = b"\x05".to_vec();
    hostile.resize(18, b'A');
    let mut catastrophic = vec![b'a'; 1398];
    catastrophic.push(b'b');
    let frames = vec![udp_frame(53, &hostile), udp_frame(53, &hostile), udp_frame(54, &catastrophic)];
    assert_eq!(frames[0].len(), 60);
    write_pcap(&pcap, &frames);
    let rules = dir.path().join("r.rules");
    std::fs::write(
        &rules,
        concat!(
            "alert udp any any -> any 53 (msg:\"neg\"; byte_math:bytes 1,offset 0,oper -,rvalue 200,result neg; content:\"A\"; offset:neg; sid:1;)\n",
            "alert udp any any -> any 53 (msg:\"control\"; content:\"AAAA\"; sid:2;)\n",
            "alert udp any any -> any 54 (msg:\"redos\"; content:\"a\"; pcre:\"/(a+)+$/R\"; sid:3;)\n",
        ),
    )
    .unwrap();
    let events = run_rules_eve(&pcap, &rules, &[]);
    let (alerts, stats) = alerts_and_stats(&events);
    assert_eq!(alerts, vec![(1, 53), (2, 53)], "only the control rule alerts");
    assert!(events.iter().filter(|e| e["event_type"] == "alert").all(|e| e["alert"]["signature_id"] == 2));
    assert_eq!(stats["picket"]["detect"]["pcre_match_limit"], 1, "{}", stats["picket"]);
}

/// Issue #16: one 16 KiB content made Hyperscan refuse its pattern set and aborted the
/// start-up. Now that pattern alone falls back to Aho-Corasick, with a warning naming the
/// rule's sid and place, and the rule still matches (and only where it should).
#[test]
fn bounds_hyperscan_refused_pattern_falls_back_and_matches() {
    let dir = tempfile::tempdir().unwrap();
    let long: Vec<u8> = (0..16384u32).map(|i| b'a' + (i % 23) as u8).collect();
    let hex: String = long.iter().map(|b| format!("{b:02x}")).collect();
    let rules = dir.path().join("r.rules");
    std::fs::write(
        &rules,
        format!(
            "alert udp any any -> any any (msg:\"short\"; content:\"mark\"; sid:1;)\n\
             alert udp any any -> any any (msg:\"long\"; content:\"|{hex}|\"; sid:2;)\n"
        ),
    )
    .unwrap();
    let mut with_long = b"xx".to_vec();
    with_long.extend_from_slice(&long);
    let mut almost = long.clone();
    almost[16000] ^= 0x20;
    let frames = vec![udp_frame(80, &with_long), udp_frame(81, b"mark"), udp_frame(82, &almost)];
    let pcap = dir.path().join("long.pcap");
    write_pcap(&pcap, &frames);
    for algo in ["hs", "ac"] {
        let logs = tempfile::tempdir().unwrap();
        let set = format!("mpm-algo={algo}");
        let out = picket()
            .args(["-r", pcap.to_str().unwrap(), "-S", rules.to_str().unwrap(), "-l", logs.path().to_str().unwrap()])
            .args(["-k", "none", "--set", &set])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if algo == "hs" && !out.status.success() && stderr.contains("Hyperscan") && !stderr.contains("pattern") {
            eprintln!("Hyperscan unavailable here, skipping: {stderr}");
            continue;
        }
        assert!(out.status.success(), "{algo}: {stderr}");
        if algo == "hs" {
            assert!(stderr.contains("sid 2") && stderr.contains("r.rules:2"), "{stderr}");
        }
        let (alerts, _) = alerts_and_stats(&read_eve(logs.path()));
        assert_eq!(alerts, vec![(1, 80), (2, 81)], "{algo}");
    }
}

/// A capture of tunnels: eight inner UDP conversations in GRE between two endpoints, and
/// eight in VXLAN where each direction leaves its VTEP from its own source port (two outer
/// flows per conversation, as real VTEPs do).
fn tunnel_frames() -> Vec<Vec<u8>> {
    let (a, b) = ([192, 0, 2, 1], [192, 0, 2, 2]);
    let inner = |i: u8, back: bool| {
        let (x, y, sp, dp) =
            if back { ([10, 9, 0, 2], [10, 9, 0, i], 53, 1000) } else { ([10, 9, 0, i], [10, 9, 0, 2], 1000, 53) };
        let mut out = Vec::new();
        etherparse::PacketBuilder::ipv4(x, y, 64).udp(sp, dp).write(&mut out, b"tunnelled").unwrap();
        out
    };
    let mut frames = Vec::new();
    for i in 10..18u8 {
        for back in [false, true] {
            let (x, y) = if back { (b, a) } else { (a, b) };
            let gre = [&[0u8, 0, 0x08, 0x00][..], &inner(i, back)].concat();
            let mut out = Vec::new();
            etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
                .ipv4(x, y, 64)
                .write(&mut out, etherparse::IpNumber(47), &gre)
                .unwrap();
            frames.push(out);
            let eth = [&[2u8, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 4, 0x08, 0x00][..], &inner(i + 20, back)].concat();
            let vxlan = [&[0x08u8, 0, 0, 0, 0, 0, 100, 0][..], &eth].concat();
            let sport = if back { 50000 } else { 40000 } + i as u16;
            let mut out = Vec::new();
            etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
                .ipv4(x, y, 64)
                .udp(sport, 4789)
                .write(&mut out, &vxlan)
                .unwrap();
            frames.push(out);
        }
    }
    frames
}

/// Tunnels are dispatched by their outer packet: the outer flows (GRE, each VXLAN
/// direction) and the inner flows get the same records whether one thread or two workers
/// did the work, and each inner conversation is one flow with packets both ways.
#[test]
fn tunnel_flow_records_do_not_depend_on_run_mode() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("tunnels.pcap");
    write_pcap(&pcap, &tunnel_frames());
    let flows = |mode: &[&str]| -> BTreeSet<String> {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec!["-r", pcap.to_str().unwrap(), "-l", out.path().to_str().unwrap()];
        args.extend_from_slice(mode);
        run_ok(&args);
        read_eve(out.path())
            .iter()
            .filter(|e| e["event_type"] == "flow")
            .map(|e| {
                let f = &e["flow"];
                format!(
                    "{} {}:{} {}:{} {}/{}",
                    e["proto"],
                    e["src_ip"],
                    e["src_port"],
                    e["dest_ip"],
                    e["dest_port"],
                    f["pkts_toserver"],
                    f["pkts_toclient"]
                )
            })
            .collect()
    };
    let single = flows(&["--runmode", "single"]);
    // One GRE flow with every GRE packet, 16 outer VXLAN flows, 16 inner flows.
    assert_eq!(single.len(), 33, "{single:#?}");
    assert!(single.contains("\"GRE\" \"192.0.2.1\":null \"192.0.2.2\":null 8/8"), "{single:#?}");
    assert!(single.contains("\"UDP\" \"192.0.2.2\":50010 \"192.0.2.1\":4789 1/0"), "{single:#?}");
    assert!(single.contains("\"UDP\" \"10.9.0.30\":1000 \"10.9.0.2\":53 1/1"), "{single:#?}");
    for workers in ["2", "3"] {
        assert_eq!(single, flows(&["--workers", workers, "--dispatch", "flow"]), "{workers} workers");
    }
}

/// eve's `rule` field (eve-log `alert: metadata: rule: raw: yes`, as in Suricata) carries
/// each rule as written, beside its metadata. Without `raw` there is no `rule` field (the
/// engine then drops the rule texts once compiled) and each alert still has its own rule's
/// metadata.
#[test]
fn eve_rule_field_follows_metadata_rule_raw() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("mark.pcap");
    write_pcap(&pcap, &[udp_frame(53, b"mark")]);
    let texts = [
        "alert udp any any -> any any (msg:\"one\"; content:\"mark\"; metadata:k a; sid:1;)",
        "alert udp any any -> any any (msg:\"two\"; content:\"mark\"; metadata:k b; sid:2;)",
    ];
    let rules = dir.path().join("r.rules");
    std::fs::write(&rules, texts.join("\n") + "\n").unwrap();
    let yaml = dir.path().join("raw.yaml");
    std::fs::write(
        &yaml,
        "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: regular\n      filename: eve.json\n      \
         types:\n        - alert:\n            metadata:\n              rule:\n                raw: yes\n",
    )
    .unwrap();
    let alerts = |extra: &[&str]| -> Vec<Value> {
        let events = run_rules_eve(&pcap, &rules, extra);
        let mut alerts: Vec<Value> = events.into_iter().filter(|e| e["event_type"] == "alert").collect();
        alerts.sort_by_key(|e| e["alert"]["signature_id"].as_u64());
        assert_eq!(alerts.len(), 2, "{alerts:?}");
        alerts
    };
    for (with_raw, extra) in [(true, &["-c", yaml.to_str().unwrap()][..]), (false, &[][..])] {
        for (alert, (text, value)) in alerts(extra).iter().zip(texts.iter().zip(["a", "b"])) {
            let alert = &alert["alert"];
            assert_eq!(alert["metadata"]["k"][0], value, "{alert}");
            if with_raw {
                assert_eq!(alert["rule"], *text, "{alert}");
            } else {
                assert!(alert.get("rule").is_none(), "{alert}");
            }
        }
    }
}
