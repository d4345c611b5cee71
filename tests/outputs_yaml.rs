//! The YAML `outputs:` section and `default-log-dir`, honoured by real offline runs of the
//! binary over data/sample.pcap: which logs are written, where, which eve event types,
//! append or truncate, warnings for keys picket does not use, and eve-log to a real
//! listening unix socket (stream and datagram).

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// One alert per DNS query of the sample (12), beside its 24 flows, its app-layer records
/// and the final stats.
const RULE: &str = "alert udp any any -> any 53 (msg:\"dns query\"; sid:1;)\n";
const SAMPLE_ALERTS: usize = 12;
const SAMPLE_FLOWS: usize = 24;
/// The sample's app-layer records with every type on: 12 DNS queries and their 12
/// responses, 7 HTTP transactions with 7 bodies, one TLS and one SSH session.
const SAMPLE_APP: [(&str, usize); 5] = [("dns", 24), ("http", 7), ("fileinfo", 7), ("tls", 1), ("ssh", 1)];

/// Every event type of the sample when eve writes them all.
fn sample_all() -> BTreeMap<String, usize> {
    let mut all = counts(&[("alert", SAMPLE_ALERTS), ("flow", SAMPLE_FLOWS), ("stats", 1)]);
    all.extend(SAMPLE_APP.iter().map(|(k, n)| (k.to_string(), *n)));
    all
}

/// Number of events of [`sample_all`] but the final stats.
fn sample_all_but_stats() -> usize {
    sample_all().values().sum::<usize>() - 1
}

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.rules"), RULE).unwrap();
        Run { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `picket -r sample -S rules -c picket.yaml [-l logs] EXTRA...` run in the temp dir,
    /// with `yaml` as picket.yaml.
    fn picket(&self, yaml: &str, log_dir: Option<&str>, extra: &[&str]) -> Output {
        std::fs::write(self.path("picket.yaml"), yaml).unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_picket"));
        cmd.current_dir(self.dir.path()).arg("-r").arg(sample).args(["-S", "r.rules", "-c", "picket.yaml"]);
        if let Some(dir) = log_dir {
            cmd.args(["-l", dir]);
        }
        let out = cmd.args(extra).output().expect("spawn picket");
        assert!(out.status.success(), "picket failed: {}", String::from_utf8_lossy(&out.stderr));
        out
    }
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l}: {e}")))
        .collect()
}

fn type_counts(events: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for e in events {
        *counts.entry(e["event_type"].as_str().unwrap_or("?").to_string()).or_insert(0) += 1;
    }
    counts
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn fast_disabled_eve_filename_and_types_honoured() {
    let run = Run::new();
    let yaml =
        "outputs:\n  - fast:\n      enabled: no\n      filename: fast.log\n  - eve-log:\n      enabled: yes\n      \
                filetype: regular\n      filename: events.json\n      types:\n        - alert:\n            \
                payload: yes\n        - ftp:\n            extended: yes\n  - stats:\n      enabled: yes\n      \
                filename: counters.log\n";
    let out = run.picket(yaml, Some("logs"), &[]);
    let logs = run.path("logs");
    assert!(!logs.join("fast.log").exists(), "fast disabled: no fast.log");
    assert!(!logs.join("eve.json").exists(), "eve goes to its filename");
    assert!(!logs.join("stats.log").exists(), "stats goes to its filename");
    assert!(std::fs::read_to_string(logs.join("counters.log")).unwrap().contains("decoder.pkts"));
    let events = lines_of(&logs.join("events.json"));
    assert_eq!(type_counts(&events), counts(&[("alert", SAMPLE_ALERTS)]), "only the listed types");
    assert!(events[0]["payload"].is_string(), "per-type options still apply: {}", events[0]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("eve-log type 'ftp' is not produced by picket yet").count(),
        1,
        "a listed type picket does not produce warns once: {stderr}"
    );

    // Listing flow and stats brings them back; alert left out goes.
    let yaml = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - flow\n        - stats\n";
    run.picket(yaml, Some("logs2"), &[]);
    let events = lines_of(&run.path("logs2/eve.json"));
    assert_eq!(type_counts(&events), counts(&[("flow", SAMPLE_FLOWS), ("stats", 1)]));
    assert!(!run.path("logs2/fast.log").exists(), "an outputs: section lists what is written");
}

#[test]
fn without_outputs_section_everything_as_before() {
    let run = Run::new();
    run.picket("vars:\n  address-groups:\n    HOME_NET: any\n", Some("logs"), &[]);
    let events = lines_of(&run.path("logs/eve.json"));
    assert_eq!(type_counts(&events), sample_all());
    assert_eq!(std::fs::read_to_string(run.path("logs/fast.log")).unwrap().lines().count(), SAMPLE_ALERTS);
    assert!(run.path("logs/stats.log").exists());
}

#[test]
fn default_log_dir_unless_l_is_given() {
    let run = Run::new();
    let yaml = format!(
        "default-log-dir: {}\noutputs:\n  - eve-log:\n      enabled: yes\n  - fast:\n      enabled: yes\n",
        run.path("from-yaml").display()
    );
    run.picket(&yaml, None, &[]);
    assert_eq!(lines_of(&run.path("from-yaml/eve.json")).len(), sample_all_but_stats() + 1);
    assert!(run.path("from-yaml/fast.log").exists());
    run.picket(&yaml, Some("from-cli"), &[]);
    assert!(run.path("from-cli/eve.json").exists(), "-l wins over default-log-dir");
    assert_eq!(lines_of(&run.path("from-yaml/eve.json")).len(), sample_all_but_stats() + 1, "untouched");
}

#[test]
fn append_yes_keeps_and_no_truncates() {
    let run = Run::new();
    let yaml = |append: &str| {
        format!(
            "outputs:\n  - eve-log:\n      enabled: yes\n      append: {append}\n      types: [alert]\n  - fast:\n      \
             enabled: yes\n      append: {append}\n"
        )
    };
    // Offline runs truncate by default: two runs leave one run's lines.
    run.picket("outputs:\n  - eve-log:\n      enabled: yes\n      types: [alert]\n", Some("logs"), &[]);
    run.picket("outputs:\n  - eve-log:\n      enabled: yes\n      types: [alert]\n", Some("logs"), &[]);
    assert_eq!(lines_of(&run.path("logs/eve.json")).len(), SAMPLE_ALERTS);
    run.picket(&yaml("yes"), Some("logs"), &[]);
    run.picket(&yaml("yes"), Some("logs"), &[]);
    assert_eq!(lines_of(&run.path("logs/eve.json")).len(), 3 * SAMPLE_ALERTS, "append: yes keeps what was there");
    let fast = std::fs::read_to_string(run.path("logs/fast.log")).unwrap();
    assert_eq!(fast.lines().count(), 2 * SAMPLE_ALERTS);
    run.picket(&yaml("no"), Some("logs"), &[]);
    assert_eq!(lines_of(&run.path("logs/eve.json")).len(), SAMPLE_ALERTS, "append: no starts afresh");
    assert_eq!(std::fs::read_to_string(run.path("logs/fast.log")).unwrap().lines().count(), SAMPLE_ALERTS);
}

#[test]
fn unknown_keys_warn_once_each_naming_the_key() {
    let run = Run::new();
    let yaml = "outputs:\n  - eve-log:\n      enabled: yes\n      community-id: yes\n      frobnicate: 3\n      pcap-file: false\n  - fast:\n      \
                enabled: yes\n      colour: red\n  - pcap-log:\n      enabled: yes\n  - file-store:\n      enabled: no\n";
    let out = run.picket(yaml, Some("logs"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for key in ["outputs.0.eve-log.community-id", "outputs.0.eve-log.frobnicate", "outputs.1.fast.colour"] {
        assert_eq!(stderr.matches(&format!("unknown setting '{key}' ignored")).count(), 1, "{key}: {stderr}");
    }
    assert_eq!(stderr.matches("picket does not write 'pcap-log'").count(), 1, "{stderr}");
    assert!(!stderr.contains("file-store"), "a disabled output is not reported: {stderr}");
    assert!(!stderr.contains("pcap-file"), "a setting that asks for nothing is not reported: {stderr}");
    assert!(!stderr.contains("'outputs.0.eve-log.enabled'"), "{stderr}");
}

#[test]
fn bad_filetype_is_refused_naming_the_key() {
    let run = Run::new();
    std::fs::write(run.path("picket.yaml"), "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: syslog\n")
        .unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .current_dir(run.dir.path())
        .arg("-r")
        .arg(sample)
        .args(["-c", "picket.yaml", "-l", "logs"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("outputs.0.eve-log.filetype: 'syslog' is not supported"), "{stderr}");
    assert!(!run.path("logs").exists(), "refused before anything is written");
    // -T checks the outputs as a run reads them.
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .current_dir(run.dir.path())
        .args(["-T", "-S", "r.rules", "-c", "picket.yaml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'syslog' is not supported"));
}

fn socket_yaml(filetype: &str, path: &Path) -> String {
    format!(
        "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: {filetype}\n      filename: {}\n",
        path.display()
    )
}

#[test]
fn unix_stream_reader_receives_every_event() {
    let run = Run::new();
    let socket = run.path("eve.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("picket connects");
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).expect("read until picket closes");
        text
    });
    run.picket(&socket_yaml("unix_stream", &socket), Some("logs"), &[]);
    let text = reader.join().unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("whole JSON lines")).collect();
    assert_eq!(type_counts(&events), sample_all());
    let stats = &events.last().unwrap()["stats"]["picket"]["output"];
    assert_eq!((stats["socket_connects"].as_u64(), stats["socket_dropped"].as_u64()), (Some(1), Some(0)), "{stats}");
    assert!(!run.path("logs/eve.json").exists(), "nothing written to a file");
}

#[test]
fn unix_dgram_reader_receives_one_datagram_per_event() {
    let run = Run::new();
    let socket = run.path("eve.sock");
    let reader = UnixDatagram::bind(&socket).unwrap();
    reader.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The socket's queue holds a few datagrams only: read while picket sends, until the
    // final stats event (the last one) arrives.
    let reader = std::thread::spawn(move || {
        let mut events = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = reader.recv(&mut buf) {
            let text = String::from_utf8(buf[..n].to_vec()).unwrap();
            assert_eq!(text.matches('\n').count(), 1, "one event per datagram: {text}");
            let event: Value = serde_json::from_str(&text).unwrap();
            let last = event["event_type"] == "stats";
            events.push(event);
            if last {
                break;
            }
        }
        events
    });
    run.picket(&socket_yaml("unix_dgram", &socket), Some("logs"), &[]);
    let events = reader.join().unwrap();
    assert_eq!(type_counts(&events), sample_all());
}

#[test]
fn unix_socket_without_reader_drops_and_counts() {
    let run = Run::new();
    let yaml = socket_yaml("unix_dgram", &run.path("nobody.sock"));
    let yaml = format!("{yaml}  - stats:\n      enabled: yes\n");
    let out = run.picket(&yaml, Some("logs"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("cannot reach unix_dgram socket").count(), 1, "reported once: {stderr}");
    let stats = std::fs::read_to_string(run.path("logs/stats.log")).unwrap();
    let dropped = stats.lines().find(|l| l.starts_with("picket.output.socket_dropped")).expect("counter in stats.log");
    let n: u64 = dropped.rsplit('|').next().unwrap().trim().parse().unwrap();
    // Every event but the final stats (written after the counters were read) was dropped.
    assert_eq!(n as usize, sample_all_but_stats(), "{dropped}");
}
