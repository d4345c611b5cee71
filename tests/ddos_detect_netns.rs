//! The plug-in detectors end to end: a client namespace with two addresses (a scanner
//! and a well-behaved client) and a server namespace with a real HTTP server
//! (`python3 -m http.server`), picket on the server's veth with `--ddos` (its XDP program
//! attached) and small thresholds. A bounded port scan from one address raises the
//! port-scan alert, that source is blocklisted in XDP (curl from it fails, curl from the
//! other address works, the entry counts dropped packets), and after `block-time` the
//! entry expires and the scanner's curl works again.

mod netlab;

use netlab::{read_eve, skip_reason, wait_for, Guarded, Lab};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SCANNER: &str = "10.88.0.1";
const CLIENT: &str = "10.88.0.3";
const SERVER: &str = "10.88.0.2";
const HTTP_PORT: &str = "8000";
/// Ports the scan probes (bounded: one SYN each).
const SCAN_PORTS: u16 = 40;
/// The port-scan threshold picket runs with.
const SCAN_THRESHOLD: u16 = 20;
/// ddos.blocklist.block-time.
const BLOCK_TIME: u64 = 3;
const PORT_SCAN_SID: u64 = 9_000_002;

/// `curl` from `source` to the server: whether it got the page within 2 s.
fn curl_from(lab: &Lab, ns: &str, source: &str) -> bool {
    let url = format!("http://{SERVER}:{HTTP_PORT}/");
    let out = lab.output(
        ns,
        "curl",
        &["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", "--interface", source, &url],
    );
    String::from_utf8_lossy(&out.stdout).trim() == "200"
}

#[test]
fn a_port_scan_blocklists_its_source_until_the_block_expires() {
    if let Some(reason) = skip_reason(&["python3", "curl"]) {
        eprintln!("SKIPPED: ddos detect test needs root, `ip netns`, python3 and curl: {reason}");
        return;
    }
    let mut lab = Lab::new("ddet");
    let cli = lab.namespace("cli");
    let srv = lab.namespace("srv");
    lab.link(&cli, "veth-dc", &srv, "veth-ds");
    lab.address(&cli, "veth-dc", &format!("{SCANNER}/24"));
    lab.address(&cli, "veth-dc", &format!("{CLIENT}/24"));
    lab.address(&srv, "veth-ds", &format!("{SERVER}/24"));

    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "hello\n").unwrap();
    let mut http = lab.command(&srv, "python3", &["-m", "http.server", HTTP_PORT, "--bind", SERVER]);
    http.current_dir(&www).stdout(Stdio::null()).stderr(Stdio::null());
    let _http = lab.spawn(http);

    let rules = dir.path().join("empty.rules");
    std::fs::write(&rules, "").unwrap();
    let logs = dir.path().join("logs");
    let sets = [
        "stats.interval=1".to_string(),
        format!("ddos.blocklist.block-time={BLOCK_TIME}"),
        format!("ddos.detectors.port-scan.ports={SCAN_THRESHOLD}"),
        "ddos.detectors.port-scan.window=1".to_string(),
    ];
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &srv, env!("CARGO_BIN_EXE_picket"), "-i", "veth-ds", "--ddos", "--workers", "2"]);
    for s in &sets {
        cmd.args(["--set", s]);
    }
    cmd.arg("-S").arg(&rules).arg("-l").arg(&logs).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut picket = Guarded(cmd.spawn().unwrap());
    let snapshot = logs.join("picket-stats.json");
    wait_for("picket to start capturing", Duration::from_secs(15), || {
        if let Ok(Some(status)) = picket.0.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            let _ = picket.0.stderr.take().unwrap().read_to_string(&mut err);
            panic!("picket exited early: {status}: {err}");
        }
        snapshot.exists()
    });
    wait_for("the HTTP server", Duration::from_secs(10), || curl_from(&lab, &cli, CLIENT));
    assert!(curl_from(&lab, &cli, SCANNER), "the scanner's address cannot reach the server before the scan");

    // The scan: one SYN to each of SCAN_PORTS ports (closed ones answer RST at once).
    let scan = format!(
        "import socket\n\
         for p in range(1, {}):\n\
         \x20 s=socket.socket(); s.bind(('{SCANNER}',0)); s.settimeout(0.3)\n\
         \x20 s.connect_ex(('{SERVER}',p)); s.close()\n",
        SCAN_PORTS + 1
    );
    assert!(lab.output(&cli, "python3", &["-c", &scan]).status.success());
    let eve_path = logs.join("eve.json");
    let scan_alert = || {
        read_eve(&eve_path)
            .into_iter()
            .find(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == PORT_SCAN_SID)
    };
    wait_for("the port-scan alert", Duration::from_secs(10), || scan_alert().is_some());
    let alerted = Instant::now();
    let alert = scan_alert().unwrap();
    assert_eq!(alert["src_ip"], SCANNER, "{alert}");
    assert_eq!(alert["alert"]["gid"], 9, "{alert}");
    assert_eq!(alert["alert"]["action"], "blocked", "{alert}");
    assert_eq!(alert["alert"]["category"], "Attempted Denial of Service");
    let signature = alert["alert"]["signature"].as_str().unwrap();
    assert!(signature.starts_with(&format!("picket port scan from {SCANNER} to {SERVER}")), "{signature}");

    // Blocked in XDP: the scanner's curl fails, the other address's works.
    assert!(!curl_from(&lab, &cli, SCANNER), "the scanner still reaches the server while blocked");
    assert!(curl_from(&lab, &cli, CLIENT), "the well-behaved client was blocked too");

    // The entry expires after block-time: the scanner's curl works again.
    wait_for("the block to expire", Duration::from_secs(BLOCK_TIME + 10), || curl_from(&lab, &cli, SCANNER));
    let unblocked_after = alerted.elapsed();
    eprintln!("scanner unblocked {unblocked_after:?} after the alert was read (block-time {BLOCK_TIME} s)");

    // Let a stats event carry the final controller counters, then stop.
    std::thread::sleep(Duration::from_millis(1500));
    picket.signal("TERM");
    let status = picket.wait(Duration::from_secs(15));
    let mut stderr = String::new();
    use std::io::Read;
    let _ = picket.0.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(status.success(), "picket exit {status}: {stderr}");

    let eve = read_eve(&eve_path);
    let scans: Vec<_> =
        eve.iter().filter(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == PORT_SCAN_SID).collect();
    assert_eq!(scans.len(), 1, "one scan, one alert: {scans:?}");
    // The well-behaved client never set a detector off.
    assert!(
        !eve.iter().any(|e| e["event_type"] == "alert" && e["src_ip"] == CLIENT),
        "an alert names the well-behaved client"
    );
    let stats = eve.iter().rev().find(|e| e["event_type"] == "stats").expect("a stats event");
    let ddos = &stats["stats"]["picket"]["ddos"];
    assert!(ddos["port_scan"]["findings"].as_u64().unwrap_or(0) >= 1, "{ddos}");
    assert!(ddos["blocks"].as_u64().unwrap_or(0) >= 1, "{ddos}");
    assert!(ddos["blocks_expired"].as_u64().unwrap_or(0) >= 1, "{ddos}");
    assert_eq!(ddos["blocks_active"], 0, "{ddos}");
    // The scanner's SYNs (curl's and its retries) were dropped by the XDP entry.
    assert!(ddos["blocked_packets"].as_u64().unwrap_or(0) >= 1, "{ddos}");
}
