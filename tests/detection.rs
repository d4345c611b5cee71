//! End-to-end detection through the `picket` binary: alerts by sid on the bundled sample,
//! fast.log, IPS simulation, and rule-loading diagnostics.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn picket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_picket"))
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn run(args: &[&str]) -> Output {
    picket().args(args).output().expect("spawn picket")
}

fn eve(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("eve.json")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn alerts_by_sid(events: &[Value]) -> BTreeMap<u64, usize> {
    let mut by_sid = BTreeMap::new();
    for e in events.iter().filter(|e| e["event_type"] == "alert") {
        *by_sid.entry(e["alert"]["signature_id"].as_u64().unwrap()).or_default() += 1;
    }
    by_sid
}

fn run_sample(rules: &Path, extra: &[&str]) -> (tempfile::TempDir, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec![
        "-r".into(),
        repo("data/sample.pcap").to_str().unwrap().into(),
        "-S".into(),
        rules.to_str().unwrap().into(),
    ];
    args.extend(["-l".to_string(), dir.path().to_str().unwrap().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = picket().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = eve(dir.path());
    (dir, events)
}

#[test]
fn default_rules_fire_on_the_sample_in_every_run_mode() {
    let rules = repo("rules/default.rules");
    let mut results = Vec::new();
    for mode in [&["--runmode", "single"][..], &["--workers", "1"], &["--workers", "2"]] {
        let (dir, events) = run_sample(&rules, mode);
        let by_sid = alerts_by_sid(&events);
        // Request with ";id" in the URI, the root `id` output in the response (split over the
        // stream), SSH banner, telnet SYN, ICMP echo requests, DNS names, TLS SNI.
        for sid in [9000002, 9000003, 9000010, 9000011, 9000012, 9000020, 9000021] {
            assert!(by_sid.contains_key(&sid), "sid {sid} did not fire in {mode:?}: {by_sid:?}");
        }
        // The rule restricted to $EXTERNAL_NET -> $HOME_NET must not fire on outbound traffic.
        assert!(!by_sid.contains_key(&9000001), "{by_sid:?}");
        let alert = events.iter().find(|e| e["alert"]["signature_id"] == 9000002).unwrap();
        assert_eq!(alert["alert"]["action"], "allowed");
        assert_eq!(alert["alert"]["category"], "Web Application Attack");
        assert_eq!(alert["alert"]["severity"], 1);
        assert_eq!(alert["dest_port"], 80);
        assert!(alert["pcap_cnt"].as_u64().unwrap() > 0 && alert["flow_id"].as_u64().unwrap() > 0);
        let fast = std::fs::read_to_string(dir.path().join("fast.log")).unwrap();
        assert_eq!(fast.lines().count(), by_sid.values().sum::<usize>(), "one fast.log line per alert");
        assert!(fast.contains("[1:9000002:1]"));
        // Flows that alerted say so in their flow event.
        let flow_id = &alert["flow_id"];
        let flow = events.iter().find(|e| e["event_type"] == "flow" && &e["flow_id"] == flow_id).unwrap();
        assert_eq!(flow["flow"]["alerted"], true);
        results.push(by_sid);
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "same alerts in every run mode: {results:?}");
}

#[test]
fn simulate_ips_blocks_the_flow_after_a_drop_rule() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("drop.rules");
    std::fs::write(
        &rules,
        "drop tcp any any -> any 80 (msg:\"drop the injection\"; flow:established,to_server; content:\"|3b|id\"; sid:1; rev:1;)\n",
    )
    .unwrap();
    let (_, ids) = run_sample(&rules, &[]);
    let alert = ids.iter().find(|e| e["event_type"] == "alert").expect("alert in IDS mode");
    assert_eq!(alert["alert"]["action"], "allowed", "IDS mode only alerts");
    assert!(ids.iter().all(|e| e["event_type"] != "drop"));

    let (_, ips) = run_sample(&rules, &["--simulate-ips"]);
    let alert = ips.iter().find(|e| e["event_type"] == "alert").expect("alert in IPS mode");
    assert_eq!(alert["alert"]["action"], "blocked");
    let flow_id = alert["flow_id"].clone();
    let drops: Vec<_> = ips.iter().filter(|e| e["event_type"] == "drop" && e["flow_id"] == flow_id).collect();
    assert!(drops.len() >= 2, "the matching packet and later packets of its flow are dropped: {}", drops.len());
    assert_eq!(drops[0]["drop"]["reason"], "rules");
    assert!(drops[1..].iter().all(|d| d["drop"]["reason"] == "flow drop"));
    // The response carrying the `id` output never reaches inspection.
    assert!(ips.iter().all(|e| e["alert"]["signature_id"] != 9000003));
    // eve-log `drop:` defaults to `flows: start`: of a dropped flow, the packet a rule
    // blocked and the first blocked packet of each direction get a record; the counter
    // counts every blocked packet.
    assert!(drops.len() <= 3, "{} drop records", drops.len());
    let stats = ips.last().unwrap();
    assert!(stats["stats"]["ips"]["blocked"].as_u64().unwrap() >= drops.len() as u64);
}

#[test]
fn bad_rules_are_reported_with_file_and_line_and_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("mixed.rules");
    std::fs::write(
        &rules,
        "alert tcp any any -> any any (msg:\"good\"; content:\"abc\"; sid:1;)\n\
         # a comment\n\
         alert tcp any any -> any any (msg:\"bad content\"; content:\"|zz|\"; sid:2;)\n\
         alert tcp any any -> any any (msg:\"unsupported keyword\"; luajit:check.lua; sid:3;)\n\
         alert tcp any any -> any any (msg:\"dup\"; content:\"x\"; sid:1;)\n\
         alert udp any any -> any 53 (msg:\"good too\"; content:\"q\"; sid:4;)\n",
    )
    .unwrap();
    let out = run(&["rules", "check", "-S", rules.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a failed rule makes `rules check` fail");
    assert!(stderr.contains("mixed.rules:3:"), "file and line of the bad rule: {stderr}");
    assert!(stderr.contains("duplicate signature 1:1"), "{stderr}");
    assert!(stdout.contains("loaded  2"), "{stdout}");
    assert!(stdout.contains("failed  1"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.trim_start().starts_with('1') && l.contains("luajit")),
        "skipped-by-keyword table: {stdout}"
    );

    // A run with the same file still loads the good rules and runs.
    let log = tempfile::tempdir().unwrap();
    let out = run(&[
        "-r",
        repo("data/sample.pcap").to_str().unwrap(),
        "-S",
        rules.to_str().unwrap(),
        "-l",
        log.path().to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("mixed.rules:3:"));
}

#[test]
fn missing_rule_file_is_an_error() {
    let log = tempfile::tempdir().unwrap();
    let out = run(&[
        "-r",
        repo("data/sample.pcap").to_str().unwrap(),
        "-S",
        "/nonexistent.rules",
        "-l",
        log.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.rules"));
}

#[test]
fn suricata_style_config_test_flag() {
    let out = run(&["-T", "-S", repo("rules/default.rules").to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("loaded  9"));
}

/// Rules parsed as strictly as Suricata's: a missing `;` or `"`, an unknown keyword, a regex
/// that does not compile or a line that is not UTF-8 fails its rule (`file:line: reason`),
/// `-T` and `rules check` exit 1, and the good rules of the same file still alert; a rule with
/// only an unsupported (Suricata) keyword is skipped and does not fail the check.
#[test]
fn malformed_rules_fail_the_check_and_only_good_rules_alert() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("strict.rules");
    let mut text = Vec::new();
    for line in [
        // 1: good; the DNS query name in hex (the sample asks for www.example.com).
        &b"alert udp any any -> any 53 (msg:\"hex\"; content:\"|07|example|03|com|00|\"; sid:1;)"[..],
        // 2: good.
        b"alert tcp any any -> any 80 (msg:\"get\"; content:\"GET /index.html\"; sid:2;)",
        // 3: the missing ';' would swallow the content into msg and fire on every packet.
        b"alert ip any any -> any any (msg:\"swallowed\" content:\"never in the sample\"; sid:3;)",
        // 4: an unterminated quote.
        b"alert ip any any -> any any (msg:\"open; content:\"x\"; sid:4;)",
        // 5: the last option without its ';'.
        b"alert ip any any -> any any (msg:\"last\"; sid:5)",
        // 6: a keyword Suricata does not know.
        b"alert ip any any -> any any (msg:\"typo\"; contnet:\"x\"; sid:6;)",
        // 7: a regex that does not compile.
        b"alert tcp any any -> any any (msg:\"pcre\"; pcre:\"/GET (/\"; sid:7;)",
        // 8: a raw 0xff byte (not UTF-8) in a content.
        b"alert udp any any -> any 53 (msg:\"raw byte\"; content:\"\xff\"; sid:8;)",
        // 9: valid Suricata, but a keyword picket does not implement: skipped, not failed.
        b"alert tcp any any -> any any (msg:\"unsupported\"; asn1:oversize_length 10; sid:9;)",
    ] {
        text.extend_from_slice(line);
        text.push(b'\n');
    }
    std::fs::write(&rules, &text).unwrap();
    let path = rules.to_str().unwrap();
    for args in [&["-T", "-S", path][..], &["rules", "check", "-S", path]] {
        let out = run(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        for (line, reason) in [
            (3, "'msg': unescaped '\"' after \"swallowed\""),
            (4, "'msg': the quoted value does not end with its closing '\"'"),
            (5, "option 'sid:5' has no terminating ';'"),
            (6, "unknown rule keyword 'contnet'"),
            (7, "pcre: regex does not compile"),
            (8, "invalid UTF-8: byte 0xff at line 8, column 55"),
        ] {
            assert!(stderr.contains(&format!("strict.rules:{line}: {reason}")), "{args:?}: line {line}: {stderr}");
        }
        assert!(
            stdout.contains("loaded  2") && stdout.contains("skipped 1") && stdout.contains("failed  6"),
            "{stdout}"
        );
        assert!(stdout.contains("6 failed") && stdout.contains("1 skipped (unsupported keyword)"), "{stdout}");
        assert!(stderr.contains("6 rule(s) failed to load"), "{stderr}");
    }

    // A run loads around the failures: only the good rules alert.
    let (_dir, events) = run_sample(&rules, &[]);
    let by_sid = alerts_by_sid(&events);
    assert_eq!(by_sid.keys().copied().collect::<Vec<_>>(), [1, 2], "{by_sid:?}");

    // Good and unsupported rules only: the check passes and still names what it skipped.
    let clean = dir.path().join("clean.rules");
    let kept: Vec<&[u8]> =
        text.split(|&b| b == b'\n').enumerate().filter(|(i, _)| [0, 1, 8].contains(i)).map(|(_, l)| l).collect();
    std::fs::write(&clean, kept.join(&b'\n')).unwrap();
    for args in [&["-T", "-S", clean.to_str().unwrap()][..], &["rules", "check", "-S", clean.to_str().unwrap()]] {
        let out = run(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("failed  0") && stdout.contains("skipped 1") && stdout.contains("asn1"), "{stdout}");
    }
}

/// A rule the parser takes but the engine cannot compile (a transform without a sticky
/// buffer) fails like a malformed one, with its file and line, not as "skipped".
#[test]
fn rules_the_engine_rejects_count_as_failed_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("engine.rules");
    std::fs::write(
        &rules,
        "alert tcp any any -> any 80 (msg:\"get\"; content:\"GET /index.html\"; sid:2;)\n\
         alert tcp any any -> any any (msg:\"transform\"; to_lowercase; content:\"a\"; sid:20;)\n",
    )
    .unwrap();
    let out = run(&["-T", "-S", rules.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("engine.rules:2: sid 20: transforms need a sticky buffer"), "{stderr}");
    assert!(stdout.contains("loaded  1") && stdout.contains("skipped 0") && stdout.contains("failed  1"), "{stdout}");
}

#[test]
fn an_alert_on_a_packet_a_pass_rule_also_matched_has_verdict_pass() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("picket.yaml");
    // Alerts are evaluated before pass rules, so the alert is raised and the packet then
    // passed: Suricata's verdict is the packet's last action.
    std::fs::write(
        &yaml,
        "%YAML 1.1\n---\noutputs:\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n      types:\n        - alert:\n            verdict: yes\naction-order:\n  - alert\n  - pass\n  - drop\n  - reject\n",
    )
    .unwrap();
    let alert_rule = "alert tcp any any -> any 80 (msg:\"injection\"; flow:established,to_server; content:\"|3b|id\"; sid:1; rev:1;)\n";
    let pass_rule = "pass tcp any any -> any 80 (flow:established,to_server; content:\"|3b|id\"; sid:2; rev:1;)\n";
    let verdicts = |rules: &str| -> Vec<String> {
        let file = dir.path().join("v.rules");
        std::fs::write(&file, rules).unwrap();
        let (_, events) = run_sample(&file, &["-c", yaml.to_str().unwrap()]);
        events
            .iter()
            .filter(|e| e["event_type"] == "alert")
            .map(|e| e["verdict"]["action"].as_str().unwrap_or("none").to_string())
            .collect()
    };
    assert_eq!(verdicts(alert_rule), vec!["alert"]);
    assert_eq!(verdicts(&format!("{alert_rule}{pass_rule}")), vec!["pass"]);
}
