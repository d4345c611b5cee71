//! End to end: the `picket` binary as an inline AF_PACKET bridge between two network
//! namespaces, with a real HTTP server (`python3 -m http.server`), a UDP echo responder
//! and real clients (curl, python sockets).
//!
//! Topology, one per test: client namespace (10.0.0.1/24 on c0) - bridge namespace (b0,
//! b1: veths without addresses, picket `--bridge b0,b1 --workers 2`) - server namespace
//! (10.0.0.2/24 on s0). c0 and s0 send with checksum offload off, like a NIC on a wire:
//! a veth whose peer offloads checksums hands frames over with the checksum not yet
//! computed, which no bridge in between can pass on unchanged (see README).
//!
//! Needs root, iproute2, python3, curl and ethtool; prints SKIPPED and returns otherwise.
//! Namespaces and processes are cleaned up by netlab's guards; every wait is bounded.

mod netlab;

use netlab::{events_of, read_eve, skip_reason, wait_for, Guarded, Lab};
use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

const CLIENT_IP: &str = "10.0.0.1";
const SERVER_IP: &str = "10.0.0.2";
const HTTP_PORT: u16 = 8080;
const UDP_PORT: u16 = 7777;
/// Bytes of the large download (checks that offload-merged frames are not lost).
const LARGE_FILE_BYTES: usize = 5 << 20;

const RULES: &str = r#"drop http any any -> any any (msg:"bridge test drop"; http.uri; content:"/blocked"; sid:1001;)
reject http any any -> any any (msg:"bridge test reject"; http.uri; content:"/rejectme"; sid:1002;)
reject udp any any -> any 7777 (msg:"bridge test udp reject"; content:"REJECTME"; sid:1003;)
"#;

/// The UDP responder: echoes every datagram.
const UDP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, peer = s.recvfrom(65535)
    s.sendto(data, peer)
"#;

fn skip() -> bool {
    if let Some(reason) = skip_reason(&["python3", "curl", "ethtool"]) {
        eprintln!("SKIPPED: {reason}");
        return true;
    }
    false
}

/// Client, bridge and server namespaces, the servers running, picket not yet.
struct BridgeLab {
    lab: Lab,
    client: String,
    bridge: String,
    dir: tempfile::TempDir,
    /// picket runs so far: each gets its own log directory.
    runs: Cell<u32>,
    _servers: Vec<Guarded>,
}

impl BridgeLab {
    fn new(tag: &str) -> BridgeLab {
        Self::with_offload(tag, false)
    }

    /// `peer_checksum_offload`: leave checksum offload on on c0 and s0 (veth's default).
    fn with_offload(tag: &str, peer_checksum_offload: bool) -> BridgeLab {
        let mut lab = Lab::new(tag);
        let client = lab.namespace("c");
        let bridge = lab.namespace("b");
        let server = lab.namespace("s");
        lab.link(&client, "c0", &bridge, "b0");
        lab.link(&bridge, "b1", &server, "s0");
        lab.address(&client, "c0", &format!("{CLIENT_IP}/24"));
        lab.address(&server, "s0", &format!("{SERVER_IP}/24"));
        if !peer_checksum_offload {
            for (ns, dev) in [(&client, "c0"), (&server, "s0")] {
                lab.run(ns, "ethtool", &["-K", dev, "tx", "off"]);
            }
        }
        // The bridge's interfaces say nothing themselves.
        lab.run(&bridge, "sysctl", &["-qw", "net.ipv6.conf.all.disable_ipv6=1"]);
        let dir = tempfile::tempdir().unwrap();
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        std::fs::write(www.join("index.txt"), b"hello through the bridge\n").unwrap();
        let mut large = Vec::with_capacity(LARGE_FILE_BYTES);
        let mut x: u32 = 0x1234_5678;
        while large.len() < LARGE_FILE_BYTES {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            large.extend_from_slice(&x.to_le_bytes());
        }
        std::fs::write(www.join("large.bin"), &large).unwrap();
        std::fs::write(dir.path().join("rules"), RULES).unwrap();

        let access_log = std::fs::File::create(dir.path().join("access.log")).unwrap();
        let mut http = lab.command(
            &server,
            "python3",
            &["-m", "http.server", &HTTP_PORT.to_string(), "--bind", SERVER_IP, "--directory", www.to_str().unwrap()],
        );
        http.stdout(Stdio::null()).stderr(access_log);
        let mut udp = lab.command(&server, "python3", &["-c", UDP_ECHO, SERVER_IP, &UDP_PORT.to_string()]);
        udp.stdout(Stdio::null());
        let servers = vec![lab.spawn(http), lab.spawn(udp)];
        let listening = |proto: &str, port: u16| {
            let out = lab.output(&server, "ss", &["-Hln", proto, "sport", "=", &format!(":{port}")]);
            !out.stdout.is_empty()
        };
        wait_for("the HTTP server", Duration::from_secs(10), || listening("-t", HTTP_PORT));
        wait_for("the UDP responder", Duration::from_secs(10), || listening("-u", UDP_PORT));
        BridgeLab { lab, client, bridge, dir, runs: Cell::new(0), _servers: servers }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The log directory of the latest picket run.
    fn log_dir(&self) -> PathBuf {
        self.path(&format!("logs-{}", self.runs.get()))
    }

    /// Starts `picket ARGS -S rules -l logs -k none` in the bridge namespace and waits
    /// until it says its ports are open.
    fn start_picket(&self, args: &[&str]) -> Picket {
        self.runs.set(self.runs.get() + 1);
        let log_dir = self.log_dir();
        std::fs::create_dir_all(&log_dir).unwrap();
        let stderr_path = self.path("picket.stderr");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let rules = self.path("rules");
        let mut all: Vec<&str> = args.to_vec();
        all.extend_from_slice(&["-S", rules.to_str().unwrap(), "-l", log_dir.to_str().unwrap(), "-k", "none"]);
        let mut command = self.lab.command(&self.bridge, env!("CARGO_BIN_EXE_picket"), &all);
        command.stdout(Stdio::null()).stderr(stderr);
        let mut process = self.lab.spawn(command);
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            if text.contains("inline on") || text.contains("capturing on") {
                break;
            }
            if !process.running() {
                panic!("picket exited at start: {text}");
            }
            assert!(started.elapsed() < Duration::from_secs(20), "picket did not start: {text}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Picket { process, stderr_path, eve: log_dir.join("eve.json") }
    }

    /// curl from the client: (exit code, body, seconds taken).
    fn curl(&self, path: &str) -> (i32, Vec<u8>, f64) {
        let started = Instant::now();
        let out = self.lab.output(
            &self.client,
            "curl",
            &["-s", "--max-time", "3", &format!("http://{SERVER_IP}:{HTTP_PORT}{path}")],
        );
        (out.status.code().unwrap_or(-1), out.stdout, started.elapsed().as_secs_f64())
    }

    fn access_log(&self) -> String {
        std::fs::read_to_string(self.path("access.log")).unwrap_or_default()
    }

    /// Runs a python script in the client namespace.
    fn client_python(&self, script: &str) -> Output {
        self.lab.output(&self.client, "python3", &["-c", script])
    }

    /// `ethtool -k DEV` in the bridge namespace: is generic-receive-offload on?
    fn gro_on(&self, dev: &str) -> bool {
        let out = self.lab.run(&self.bridge, "ethtool", &["-k", dev]);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.starts_with("generic-receive-offload:")).expect("ethtool -k shows GRO");
        line.contains(": on")
    }

    /// An interface statistics counter in the bridge namespace.
    fn interface_counter(&self, dev: &str, counter: &str) -> u64 {
        let out = self.lab.run(&self.bridge, "cat", &[&format!("/sys/class/net/{dev}/statistics/{counter}")]);
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

struct Picket {
    process: Guarded,
    stderr_path: PathBuf,
    eve: PathBuf,
}

impl Picket {
    /// SIGTERM, wait for a clean exit, and return the eve events.
    fn stop(mut self) -> Vec<serde_json::Value> {
        self.process.signal("TERM");
        let status = self.process.wait(Duration::from_secs(15));
        assert!(status.success(), "picket exited with {status}: {}", self.stderr());
        read_eve(&self.eve)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

/// A counter of the last eve `stats` event, by dotted path ("picket.bridge.forwarded").
fn stat(events: &[serde_json::Value], path: &str) -> u64 {
    let last = events_of(events, "stats").last().copied().cloned().expect("a stats event");
    let mut node = &last["stats"];
    for part in path.split('.') {
        node = &node[part];
    }
    node.as_u64().unwrap_or_else(|| panic!("no counter {path} in the stats event"))
}

/// Per worker ("W#01", ...): a counter of the last stats event.
fn per_worker(events: &[serde_json::Value], path: &str) -> HashMap<String, u64> {
    let last = events_of(events, "stats").last().copied().cloned().expect("a stats event");
    let threads = last["stats"]["threads"].as_object().expect("per-worker stats").clone();
    threads
        .into_iter()
        .map(|(name, mut node)| {
            for part in path.split('.') {
                node = node[part].clone();
            }
            (name, node.as_u64().unwrap_or(0))
        })
        .collect()
}

fn udp_exchange_script(flows: u16, per_flow: u16) -> String {
    format!(
        r#"
import socket
answered = 0
for i in range({flows}):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("{CLIENT_IP}", 40000 + i))
    s.settimeout(1.0)
    for j in range({per_flow}):
        s.sendto(b"flow %d datagram %d" % (i, j), ("{SERVER_IP}", {UDP_PORT}))
        try:
            s.recv(100)
            answered += 1
        except socket.timeout:
            pass
    s.close()
print(answered)
"#
    )
}

#[test]
fn benign_traffic_passes_byte_exact_and_is_read_once() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("pass");
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);

    let (code, body, _) = lab.curl("/index.txt");
    assert_eq!(code, 0, "benign request failed; picket: {}", picket.stderr());
    assert_eq!(body, b"hello through the bridge\n");
    // ARP went through the bridge: the client knows the server's MAC address.
    let neigh = lab.lab.run(&lab.client, "ip", &["neigh", "show", SERVER_IP]);
    assert!(String::from_utf8_lossy(&neigh.stdout).contains("lladdr"), "no ARP entry for the server");

    let answered = lab.client_python(&udp_exchange_script(1, 100));
    assert_eq!(String::from_utf8_lossy(&answered.stdout).trim(), "100", "UDP echoes through the bridge");

    let rx = lab.interface_counter("b0", "rx_packets") + lab.interface_counter("b1", "rx_packets");
    let events = picket.stop();
    let read = stat(&events, "capture.kernel_packets");
    let forwarded = stat(&events, "picket.bridge.forwarded");
    eprintln!("interfaces received {rx}, picket read {read}, forwarded {forwarded}");
    // Each packet crossing the bridge arrives once on b0 or b1. Had picket read back what
    // it sent (outgoing on the other interface), it would read about twice that.
    assert!(read >= 200 + 6, "picket read {read} packets, fewer than were exchanged");
    assert!(read <= rx, "picket read {read} packets but the interfaces received only {rx}: own transmissions re-read");
    assert_eq!(stat(&events, "picket.capture.afpacket.outgoing_skipped"), 0, "the kernel filters outgoing packets");
    assert!(forwarded >= 206 && forwarded <= read, "forwarded {forwarded} of {read}");
    assert_eq!(stat(&events, "picket.ips.tx_errors"), 0);
    assert_eq!(stat(&events, "picket.bridge.oversize"), 0);
}

#[test]
fn drop_rule_keeps_the_request_from_the_server() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("drop");
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);
    let (code, body, _) = lab.curl("/index.txt");
    assert_eq!((code, body.len()), (0, 25), "benign request before the drop");

    let (code, _, took) = lab.curl("/blocked");
    // 28: curl's "operation timed out".
    assert_eq!(code, 28, "the dropped request must time out (took {took:.2} s)");
    let events = picket.stop();
    let log = lab.access_log();
    assert!(log.contains("GET /index.txt"), "access log: {log}");
    assert!(!log.contains("/blocked"), "the dropped request reached the server: {log}");

    let alerts = events_of(&events, "alert");
    let alert = alerts.iter().find(|a| a["alert"]["signature_id"] == 1001).expect("alert for the drop rule");
    assert_eq!(alert["alert"]["action"], "blocked");
    assert!(!events_of(&events, "drop").is_empty(), "eve drop events");
    assert!(stat(&events, "ips.blocked") >= 1);
}

#[test]
fn reject_rules_reset_tcp_and_refuse_udp() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("rej");
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);

    let (code, _, took) = lab.curl("/rejectme");
    // 56: "failure in receiving network data" (connection reset by peer).
    assert_eq!(code, 56, "curl should see a reset (took {took:.2} s); picket: {}", picket.stderr());
    assert!(took < 1.0, "the reset took {took:.2} s");

    let script = format!(
        r#"
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
s.connect(("{SERVER_IP}", {UDP_PORT}))
s.send(b"hello")
print(s.recv(100).decode())
# The ICMP answer may be late on a machine starved of CPU: up to three tries, as a
# resolver would; an answer from the server ends it at once.
for attempt in range(3):
    s.send(b"REJECTME please")
    try:
        s.recv(100)
        print("answered")
        break
    except ConnectionRefusedError:
        print("refused")
        break
    except socket.timeout:
        if attempt == 2:
            print("timeout")
"#
    );
    let out = lab.client_python(&script);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello\nrefused",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let events = picket.stop();
    assert!(!lab.access_log().contains("/rejectme"), "the rejected request reached the server");
    assert!(stat(&events, "ips.rejected") >= 2);
    // One RST each way for TCP (reject = rejectsrc: to the client only) and one ICMP.
    assert!(stat(&events, "picket.bridge.reject_replies") >= 2);
}

#[test]
fn two_workers_share_flows_and_keep_each_on_one() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("aff");
    let yaml = lab.path("threads.yaml");
    let yaml = netlab::threads_yaml(&yaml).to_str().unwrap();
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2", "-c", yaml]);
    const FLOWS: u16 = 32;
    const PER_FLOW: u16 = 3;
    let out = lab.client_python(&udp_exchange_script(FLOWS, PER_FLOW));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), (FLOWS * PER_FLOW).to_string());
    let events = picket.stop();

    let packets = per_worker(&events, "capture.kernel_packets");
    assert_eq!(packets.len(), 2, "{packets:?}");
    assert!(packets.values().all(|&n| n >= 10), "flows on both workers: {packets:?}");

    // A flow split over two workers would be two flow records, each one-sided.
    let mut records: HashMap<u64, u32> = HashMap::new();
    for flow in events_of(&events, "flow") {
        if flow["proto"] != "UDP" || flow["dest_port"] != UDP_PORT {
            continue;
        }
        let port = flow["src_port"].as_u64().unwrap();
        *records.entry(port).or_default() += 1;
        assert_eq!(flow["flow"]["pkts_toserver"], PER_FLOW as u64, "{flow}");
        assert_eq!(flow["flow"]["pkts_toclient"], PER_FLOW as u64, "both directions on one worker: {flow}");
    }
    assert_eq!(records.len(), FLOWS as usize, "one record per flow: {records:?}");
    assert!(records.values().all(|&n| n == 1), "a flow logged by two workers: {records:?}");
}

#[test]
fn gro_is_turned_off_for_the_run_and_large_transfers_pass() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("gro");
    for dev in ["b0", "b1"] {
        lab.lab.run(&lab.bridge, "ethtool", &["-K", dev, "gro", "on"]);
        assert!(lab.gro_on(dev));
    }
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);
    let said = picket.stderr();
    for dev in ["b0", "b1"] {
        assert!(!lab.gro_on(dev), "GRO still on on {dev}");
        assert!(
            said.contains(&format!("turned off generic-receive-offload on {dev} so that bridged frames fit the MTU")),
            "{said}"
        );
    }
    let out = lab.lab.output(
        &lab.client,
        "curl",
        &["-s", "--max-time", "10", "-o", "-", &format!("http://{SERVER_IP}:{HTTP_PORT}/large.bin")],
    );
    assert_eq!(out.status.code(), Some(0));
    let expected = std::fs::read(lab.path("www/large.bin")).unwrap();
    assert!(out.stdout == expected, "download of {} bytes differs ({} received)", expected.len(), out.stdout.len());
    let events = picket.stop();
    assert_eq!(stat(&events, "picket.bridge.oversize"), 0);
    // Put back as it was when picket stops.
    assert!(lab.gro_on("b0") && lab.gro_on("b1"), "GRO not restored");
}

/// Runs picket expecting a start-up failure: exit 1, one line on stderr containing `needle`.
fn expect_start_error(lab: &BridgeLab, args: &[&str], needle: &str) {
    let rules = lab.path("rules");
    let log_dir = lab.log_dir();
    std::fs::create_dir_all(&log_dir).unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["-S", rules.to_str().unwrap(), "-l", log_dir.to_str().unwrap()]);
    let started = Instant::now();
    let out = lab.lab.output(&lab.bridge, env!("CARGO_BIN_EXE_picket"), &all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(errors.len(), 1, "{args:?}: one error line expected: {stderr}");
    assert!(errors[0].contains(needle), "{args:?}: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn start_up_errors_are_one_line_before_any_packet_is_held() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("err");
    expect_start_error(&lab, &["--bridge", "b0,nosuch0"], "no such interface nosuch0");
    expect_start_error(&lab, &["--bridge", "b0,b0"], "itself");
    lab.lab.run(&lab.bridge, "ip", &["link", "set", "b1", "down"]);
    expect_start_error(&lab, &["--bridge", "b0,b1"], "b1 is down");
    lab.lab.run(&lab.bridge, "ip", &["link", "set", "b1", "up"]);

    // Suricata's YAML form, with a copy-iface that does not name its partner back.
    let yaml = lab.path("bad.yaml");
    std::fs::write(
        &yaml,
        "%YAML 1.1\n---\naf-packet:\n  - interface: b0\n    copy-mode: ips\n    copy-iface: b1\n  - interface: b1\n    copy-mode: ips\n    copy-iface: c9\n",
    )
    .unwrap();
    expect_start_error(&lab, &["-c", yaml.to_str().unwrap(), "--af-packet"], "must name the other");
    // None of these held traffic: nothing was ever read.
    assert!(!lab.log_dir().join("eve.json").exists() || read_eve(&lab.log_dir().join("eve.json")).is_empty());
}

/// Suricata's IPS configuration (`copy-mode: ips`, `copy-iface`) bridges like `--bridge`;
/// `copy-mode: tap` forwards everything, a drop rule only alerts.
#[test]
fn yaml_copy_mode_ips_bridges_and_tap_only_watches() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("yaml");
    let config = |mode: &str| {
        let path = lab.path(&format!("{mode}.yaml"));
        std::fs::write(
            &path,
            format!(
                "%YAML 1.1\n---\naf-packet:\n  - interface: b0\n    copy-mode: {mode}\n    copy-iface: b1\n    cluster-id: 98\n  - interface: b1\n    copy-mode: {mode}\n    copy-iface: b0\n    cluster-id: 97\n"
            ),
        )
        .unwrap();
        path
    };
    let ips = config("ips");
    let picket = lab.start_picket(&["-c", ips.to_str().unwrap(), "--af-packet", "--workers", "2"]);
    assert!(picket.stderr().contains("bridge b0 <-> b1 (copy-mode ips"), "{}", picket.stderr());
    assert_eq!(lab.curl("/index.txt").0, 0);
    assert_eq!(lab.curl("/blocked").0, 28, "copy-mode ips drops");
    picket.stop();
    assert!(!lab.access_log().contains("/blocked"));

    let tap = config("tap");
    let picket = lab.start_picket(&["-c", tap.to_str().unwrap(), "--af-packet", "--workers", "2"]);
    let (code, _, _) = lab.curl("/blocked");
    // The file does not exist: the server answers 404, so curl succeeds.
    assert_eq!(code, 0, "copy-mode tap must not block: {}", picket.stderr());
    let events = picket.stop();
    assert!(lab.access_log().contains("GET /blocked"));
    let alerts = events_of(&events, "alert");
    let alert = alerts.iter().find(|a| a["alert"]["signature_id"] == 1001).expect("tap mode still alerts");
    assert_ne!(alert["alert"]["action"], "blocked", "tap mode must not claim a block: {alert}");
}

/// A veth peer that leaves checksums to offload sends frames a bridge cannot pass on as
/// they are: picket says so once, with the fix, and counts them.
#[test]
fn unfinished_checksums_from_a_veth_peer_are_reported() {
    if skip() {
        return;
    }
    let lab = BridgeLab::with_offload("csum", true);
    let picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);
    lab.client_python(&udp_exchange_script(2, 2));
    wait_for("the checksum warning", Duration::from_secs(5), || picket.stderr().contains("ethtool -K PEER tx off"));
    let said = picket.stderr();
    assert!(said.contains("frames from b0 arrive with their checksum left to offload"), "{said}");
    let events = picket.stop();
    assert!(stat(&events, "picket.bridge.csum_not_ready") >= 4, "UDP datagrams with unfinished checksums");
}

/// The other ways of sending (picket's `tx-ring` and `qdisc-bypass` keys) forward the same
/// bytes and carry reject replies.
#[test]
fn tx_ring_and_qdisc_bypass_forward_byte_exact() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("tx");
    let expected = std::fs::read(lab.path("www/large.bin")).unwrap();
    for (keys, shown) in [
        ("tx-ring: yes", "tx ring"),
        ("qdisc-bypass: yes", "sendmmsg, qdisc bypass"),
        ("tx-ring: yes\n    qdisc-bypass: yes", "tx ring, qdisc bypass"),
    ] {
        let path = lab.path("tx.yaml");
        std::fs::write(
            &path,
            format!(
                "%YAML 1.1\n---\naf-packet:\n  - interface: b0\n    copy-mode: ips\n    copy-iface: b1\n    {keys}\n  - interface: b1\n    copy-mode: ips\n    copy-iface: b0\n"
            ),
        )
        .unwrap();
        let picket = lab.start_picket(&["-c", path.to_str().unwrap(), "--af-packet", "--workers", "2"]);
        assert!(picket.stderr().contains(&format!("(copy-mode ips, {shown})")), "{}", picket.stderr());
        let out = lab.lab.output(
            &lab.client,
            "curl",
            &["-s", "--max-time", "10", "-o", "-", &format!("http://{SERVER_IP}:{HTTP_PORT}/large.bin")],
        );
        assert!(out.stdout == expected, "{shown}: download differs ({} of {} bytes)", out.stdout.len(), expected.len());
        assert_eq!(lab.curl("/rejectme").0, 56, "{shown}: reset");
        let events = picket.stop();
        assert_eq!(stat(&events, "picket.ips.tx_errors"), 0, "{shown}");
        assert!(stat(&events, "picket.bridge.reject_replies") >= 1, "{shown}");
    }
}

/// SIGTERM ends the bridge promptly even while traffic keeps coming.
#[test]
fn sigterm_stops_the_bridge_under_a_flood() {
    if skip() {
        return;
    }
    let lab = BridgeLab::new("term");
    let mut picket = lab.start_picket(&["--bridge", "b0,b1", "--workers", "2"]);
    let flood = format!(
        r#"
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 6
while time.time() < end:
    for _ in range(100):
        s.sendto(b"x" * 32, ("{SERVER_IP}", 9))
"#
    );
    let mut sender = lab.lab.command(&lab.client, "python3", &["-c", &flood]);
    sender.stdout(Stdio::null()).stderr(Stdio::null());
    let _sender = lab.lab.spawn(sender);
    std::thread::sleep(Duration::from_millis(1500));
    let stopped = Instant::now();
    picket.process.signal("TERM");
    let status = picket.process.wait(Duration::from_secs(10));
    let took = stopped.elapsed();
    assert!(status.success(), "{}", picket.stderr());
    assert!(took < Duration::from_secs(3), "picket took {took:?} to stop while traffic flowed");
    let events = read_eve(&picket.eve);
    assert!(stat(&events, "picket.bridge.forwarded") > 1000, "the flood went through the bridge");
}
