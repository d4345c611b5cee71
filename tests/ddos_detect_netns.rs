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
    picket.wait_started(&snapshot, Duration::from_secs(15));
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
    // The scanner's SYNs (curl's and its retries) were dropped by the XDP entry, and the
    // program counted them under its own reason.
    let blocked = ddos["blocked_packets"].as_u64().unwrap_or(0);
    assert!(blocked >= 1, "{ddos}");
    let xdp = &stats["stats"]["picket"]["xdp"];
    assert!(xdp["blocklisted"].as_u64().unwrap_or(0) >= blocked, "{xdp}");
}

const ICMP_FLOOD_SID: u64 = 9_000_004;
const UDP_REFLECTION_SID: u64 = 9_000_003;

/// Starts picket with `--ddos` on `dev` in `ns` with `sets`; returns once it captures.
fn start_picket(lab: &Lab, ns: &str, dev: &str, dir: &std::path::Path, sets: &[String]) -> Guarded {
    let rules = dir.join("empty.rules");
    std::fs::write(&rules, "").unwrap();
    let logs = dir.join("logs");
    let mut cmd = lab.command(ns, env!("CARGO_BIN_EXE_picket"), &["-i", dev, "--ddos", "--workers", "2"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.arg("-S").arg(&rules).arg("-l").arg(&logs).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut picket = lab.spawn(cmd);
    let snapshot = logs.join("picket-stats.json");
    picket.wait_started(&snapshot, Duration::from_secs(15));
    picket
}

/// ICMP echo requests from a raw socket: `python3 -c PING SOURCE DEST COUNT`; with
/// COUNT 1 it waits a second for the reply and exits 0 only if one came.
const PING: &str = r#"
import socket, struct, sys, time
src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.bind((src, 0))
def csum(b):
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xffff)
    return ~(t + (t >> 16)) & 0xffff
def echo(seq):
    body = struct.pack("!BBHHH", 8, 0, 0, 0x7a7a, seq) + b"picket" * 8
    return body[:2] + struct.pack("!H", csum(body)) + body[4:]
for i in range(count):
    s.sendto(echo(i & 0xffff), (dst, 0))
if count == 1:
    s.settimeout(1)
    end = time.time() + 1
    while time.time() < end:
        try:
            pkt, addr = s.recvfrom(2048)
        except socket.timeout:
            break
        ihl = (pkt[0] & 15) * 4
        if addr[0] == dst and pkt[ihl] == 0 and pkt[ihl + 4:ihl + 6] == b"\x7a\x7a":
            sys.exit(0)
    sys.exit(1)
"#;

/// One ping from `source`: whether it was answered within a second.
fn ping_from(lab: &Lab, ns: &str, source: &str, to: &str) -> bool {
    lab.output(ns, "python3", &["-c", PING, source, to, "1"]).status.success()
}

#[test]
fn icmp_flood_and_udp_reflection_block_their_sources_only() {
    if let Some(reason) = skip_reason(&["python3"]) {
        eprintln!("SKIPPED: ddos detect test needs root, `ip netns` and python3: {reason}");
        return;
    }
    const FLOODER: &str = "10.87.0.1";
    const TARGET: &str = "10.87.0.2";
    const BYSTANDER: &str = "10.87.0.3";
    const REFLECTOR: &str = "10.87.0.4";
    let mut lab = Lab::new("dfld");
    let cli = lab.namespace("cli");
    let srv = lab.namespace("srv");
    lab.link(&cli, "veth-fc", &srv, "veth-fs");
    for a in [FLOODER, BYSTANDER, REFLECTOR] {
        lab.address(&cli, "veth-fc", &format!("{a}/24"));
    }
    lab.address(&srv, "veth-fs", &format!("{TARGET}/24"));
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "stats.interval=1".to_string(),
        "ddos.blocklist.block-time=6".to_string(),
        "ddos.detectors.icmp-flood.rate=300".to_string(),
        "ddos.detectors.udp-reflection.rate=300".to_string(),
        // Only these two: the scan detector stays out of the way.
        "ddos.detectors.port-scan.enabled=no".to_string(),
    ];
    let mut picket = start_picket(&lab, &srv, "veth-fs", dir.path(), &sets);
    assert!(ping_from(&lab, &cli, FLOODER, TARGET), "no ping before the flood");

    // Bounded floods: 2000 echo requests, and 1500 NTP-sourced datagrams, as fast as
    // one process sends them.
    assert!(lab.output(&cli, "python3", &["-c", PING, FLOODER, TARGET, "2000"]).status.success());
    let reflect = format!(
        "import socket\n\
         s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('{REFLECTOR}',123))\n\
         for i in range(1500): s.sendto(b'r'*400,('{TARGET}',40000))\n"
    );
    assert!(lab.output(&cli, "python3", &["-c", &reflect]).status.success());

    let eve_path = dir.path().join("logs").join("eve.json");
    let alert_of = |sid: u64| {
        read_eve(&eve_path).into_iter().find(|e| e["event_type"] == "alert" && e["alert"]["signature_id"] == sid)
    };
    wait_for("the ICMP flood and UDP reflection alerts", Duration::from_secs(10), || {
        alert_of(ICMP_FLOOD_SID).is_some() && alert_of(UDP_REFLECTION_SID).is_some()
    });
    // Both sources are blocked; the bystander is not.
    assert!(!ping_from(&lab, &cli, FLOODER, TARGET), "the ICMP flooder still gets through");
    assert!(ping_from(&lab, &cli, BYSTANDER, TARGET), "the bystander was blocked");
    assert!(!ping_from(&lab, &cli, REFLECTOR, TARGET), "the reflector still gets through");

    let icmp = alert_of(ICMP_FLOOD_SID).unwrap();
    assert_eq!(icmp["src_ip"], FLOODER, "{icmp}");
    assert_eq!(icmp["dest_ip"], TARGET, "{icmp}");
    assert_eq!(icmp["alert"]["action"], "blocked", "{icmp}");
    assert_eq!(icmp["alert"]["signature"], format!("picket ICMP flood to {TARGET}"));
    let udp = alert_of(UDP_REFLECTION_SID).unwrap();
    assert_eq!((&udp["src_ip"], &udp["src_port"]), (&REFLECTOR.into(), &123.into()), "{udp}");
    assert_eq!(udp["alert"]["action"], "blocked", "{udp}");
    let signature = udp["alert"]["signature"].as_str().unwrap();
    assert!(signature.starts_with(&format!("picket UDP reflection from port 123 to {TARGET}")), "{signature}");

    std::thread::sleep(Duration::from_millis(1500));
    picket.signal("TERM");
    assert!(picket.wait(Duration::from_secs(15)).success());
    let eve = read_eve(&eve_path);
    assert!(!eve.iter().any(|e| e["event_type"] == "alert" && e["src_ip"] == BYSTANDER));
    let stats = eve.iter().rev().find(|e| e["event_type"] == "stats").expect("a stats event");
    let ddos = &stats["stats"]["picket"]["ddos"];
    assert!(ddos["icmp_flood"]["findings"].as_u64().unwrap_or(0) >= 1, "{ddos}");
    assert!(ddos["udp_reflection"]["findings"].as_u64().unwrap_or(0) >= 1, "{ddos}");
    assert!(ddos["blocks"].as_u64().unwrap_or(0) >= 2, "{ddos}");
    // The probes (and the flood's tail) were dropped by the XDP entries.
    assert!(ddos["blocked_packets"].as_u64().unwrap_or(0) >= 2, "{ddos}");
}

/// The blocklist against the kernel's real tries (loaded, not attached): bounded with a
/// refusal count, entries extended not reset, expiry returns the final counts, static
/// entries never expire, prefixes normalized.
#[test]
fn blocklist_tries_are_bounded_and_expire() {
    use picket::xdp::blocklist::Blocklist;
    use picket::xdp::{XdpLayer, XdpOptions};
    use std::net::IpAddr;
    if let Some(reason) = skip_reason(&[]) {
        eprintln!("SKIPPED: blocklist test needs root: {reason}");
        return;
    }
    if !XdpLayer::available() {
        eprintln!("SKIPPED: this build has no XDP program (clang missing at build time)");
        return;
    }
    let opts = XdpOptions { blocklist_entries: 2, ..XdpOptions::default() };
    let mut xdp = XdpLayer::load(&opts).expect("load the XDP program");
    let mut list = Blocklist::take(&mut xdp).unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert!(list.block(ip("198.51.100.77"), 24, None).unwrap(), "static /24");
    assert!(list.block(ip("192.0.2.1"), 32, Some(Duration::from_millis(50))).unwrap());
    // The IPv4 trie holds 2: a third prefix is refused and counted.
    assert!(!list.block(ip("192.0.2.2"), 32, Some(Duration::from_secs(5))).unwrap());
    assert_eq!(list.refused(), 1);
    // The IPv6 trie is separate; an IPv4-mapped address is IPv4 (here: already listed).
    assert!(list.block(ip("2001:db8::1"), 64, Some(Duration::from_millis(50))).unwrap());
    assert!(list.block(ip("::ffff:192.0.2.1"), 32, Some(Duration::from_millis(50))).unwrap());
    assert_eq!(list.len(), 3);
    let mut listed: Vec<String> = list.entries().iter().map(|(a, l, _)| format!("{a}/{l}")).collect();
    listed.sort();
    assert_eq!(listed, ["192.0.2.1/32", "198.51.100.0/24", "2001:db8::/64"]);
    assert!(list.block(ip("10.0.0.1"), 33, None).is_err(), "a /33 is refused with an error");
    std::thread::sleep(Duration::from_millis(120));
    let mut expired: Vec<String> = list.expire().iter().map(|(a, l, _)| format!("{a}/{l}")).collect();
    expired.sort();
    assert_eq!(expired, ["192.0.2.1/32", "2001:db8::/64"]);
    assert_eq!(list.len(), 1, "the static entry stays");
    // Room again: the refused prefix fits now.
    assert!(list.block(ip("192.0.2.2"), 32, Some(Duration::from_secs(5))).unwrap());
    list.unblock(ip("192.0.2.2"), 32).unwrap();
    list.unblock(ip("192.0.2.2"), 32).unwrap(); // absent: nothing to do
    assert_eq!(list.len(), 1);
}
