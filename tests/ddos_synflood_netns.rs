//! SYN-flood defence end to end: a client namespace and a server namespace over a veth
//! pair, `python3 -m http.server` in the server namespace on a port listed in
//! `ddos.syn-cookies.ports`, and `picket -i <server veth> --ddos` there. A spoofed SYN
//! flood (trafgen, random source addresses, one core, bounded in count and time) is
//! answered with SYN cookies from XDP while real `curl` requests go through the kernel's
//! SYNPROXY to the server; afterwards the SYNPROXY rules, the conntrack sysctl and the
//! XDP program are gone. A second test kills picket with SIGKILL and checks that the next
//! start repairs what it left.
//!
//! veth note: XDP_TX on a veth hands the frame to the peer's NAPI, which this kernel only
//! wakes for a peer that has an XDP program itself (GRO on the peer is not enough), so
//! the client's end gets a pass-everything XDP program built here with clang. Real NICs
//! need nothing of the kind.

mod netlab;

use netlab::{events_of, read_eve, skip_reason, wait_for, Guarded, Lab};
use std::path::Path;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

const CLIENT_DEV: &str = "sf-c";
const SERVER_DEV: &str = "sf-s";
const CLIENT_IP: &str = "10.79.0.1";
const SERVER_IP: &str = "10.79.0.2";
const HTTP_PORT: u16 = 8080;
/// Flood bounds: at most this many SYNs, for at most FLOOD_SECONDS.
const FLOOD_PACKETS: u64 = 3_000_000;
const FLOOD_SECONDS: u64 = 8;
const CURLS: usize = 20;
const LOOSE_SYSCTL: &str = "/proc/sys/net/netfilter/nf_conntrack_tcp_loose";

const PASS_PROGRAM: &str = "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n\
    SEC(\"xdp\") int pass(struct xdp_md *ctx) { return XDP_PASS; }\n\
    char LICENSE[] SEC(\"license\") = \"GPL\";\n";

struct Setup {
    lab: Lab,
    client: String,
    server: String,
    dir: tempfile::TempDir,
    _http: Guarded,
}

fn skipped() -> bool {
    if let Some(reason) = skip_reason(&["trafgen", "curl", "python3", "iptables", "ip6tables", "ethtool", "clang"]) {
        eprintln!("SKIPPED: {reason}");
        return true;
    }
    false
}

fn setup(tag: &str) -> Setup {
    let mut lab = Lab::new(tag);
    let client = lab.namespace("c");
    let server = lab.namespace("s");
    lab.link(&client, CLIENT_DEV, &server, SERVER_DEV);
    lab.address(&client, CLIENT_DEV, &format!("{CLIENT_IP}/24"));
    lab.address(&server, SERVER_DEV, &format!("{SERVER_IP}/24"));
    let dir = tempfile::tempdir().unwrap();
    // The peer's XDP program (see the module note).
    let source = dir.path().join("pass.c");
    let object = dir.path().join("pass.o");
    std::fs::write(&source, PASS_PROGRAM).unwrap();
    netlab::run(
        "clang",
        &[
            "-O2",
            "-target",
            "bpf",
            "-I/usr/include/x86_64-linux-gnu",
            "-c",
            source.to_str().unwrap(),
            "-o",
            object.to_str().unwrap(),
        ],
    );
    netlab::run(
        "ip",
        &["-n", &client, "link", "set", "dev", CLIENT_DEV, "xdpdrv", "obj", object.to_str().unwrap(), "sec", "xdp"],
    );
    let mut http = lab.command(&server, "python3", &["-m", "http.server", &HTTP_PORT.to_string(), "--bind", SERVER_IP]);
    http.current_dir(dir.path()).stdout(Stdio::null()).stderr(Stdio::null());
    let http = lab.spawn(http);
    let setup = Setup { lab, client, server, dir, _http: http };
    wait_for("the HTTP server", Duration::from_secs(10), || curl(&setup).is_some());
    setup
}

/// One HTTP request from the client namespace: its time, or None when it failed.
fn curl(s: &Setup) -> Option<Duration> {
    let started = Instant::now();
    let url = format!("http://{SERVER_IP}:{HTTP_PORT}/");
    let out =
        s.lab.output(&s.client, "curl", &["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", &url]);
    (String::from_utf8_lossy(&out.stdout) == "200").then(|| started.elapsed())
}

/// What picket changes in the server namespace: INPUT chains and the conntrack sysctl.
fn kernel_state(s: &Setup) -> (String, String, String) {
    let text = |program: &str, args: &[&str]| {
        String::from_utf8_lossy(&s.lab.output(&s.server, program, args).stdout).into_owned()
    };
    (text("iptables", &["-w", "-S", "INPUT"]), text("ip6tables", &["-w", "-S", "INPUT"]), text("cat", &[LOOSE_SYSCTL]))
}

fn xdp_attached(s: &Setup) -> bool {
    let out = s.lab.output(&s.server, "ip", &["link", "show", "dev", SERVER_DEV]);
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

/// The kernel's count of XDP_TX frames on the server's veth (one per SYN cookie sent).
fn xdp_tx(s: &Setup) -> u64 {
    let out = s.lab.output(&s.server, "ethtool", &["-S", SERVER_DEV]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rx_queue_0_xdp_tx:"))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum()
}

fn start_picket(s: &Setup, logs: &Path) -> Guarded {
    start_picket_with(s, logs, &format!("ddos:\n  syn-cookies:\n    ports: [{HTTP_PORT}]\n    mss: 1460\n"))
}

fn start_picket_with(s: &Setup, logs: &Path, yaml_text: &str) -> Guarded {
    std::fs::create_dir_all(logs).unwrap();
    let yaml = s.dir.path().join("picket.yaml");
    std::fs::write(&yaml, yaml_text).unwrap();
    let rules = s.dir.path().join("local.rules");
    std::fs::write(&rules, "alert tcp any any -> any 8080 (msg:\"http\"; flow:established; sid:1;)\n").unwrap();
    let mut command = s.lab.command(&s.server, env!("CARGO_BIN_EXE_picket"), &["-i", SERVER_DEV, "--ddos"]);
    command
        .args(["--set", "stats.interval=1", "-c"])
        .arg(&yaml)
        .arg("-S")
        .arg(&rules)
        .arg("-l")
        .arg(logs)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut picket = s.lab.spawn(command);
    let snapshot = logs.join("picket-stats.json");
    picket.wait_started(&snapshot, Duration::from_secs(60));
    picket
}

/// A spoofed SYN flood to the server's HTTP port from the client namespace: 198.18.x.y
/// sources, random ports and sequence numbers, no options, one core, bounded. Returns
/// the packets trafgen sent.
fn flood(s: &Setup) -> u64 {
    let out = s.lab.output(&s.server, "cat", &[&format!("/sys/class/net/{SERVER_DEV}/address")]);
    let mac: Vec<String> = String::from_utf8_lossy(&out.stdout).trim().split(':').map(|b| format!("0x{b}")).collect();
    let ip: Vec<String> = SERVER_IP.split('.').map(String::from).collect();
    // Source MAC that is nobody's: the SYN-ACKs coming back are dropped by the client's
    // link layer at once.
    let conf = format!(
        "{{ {mac}, 0x02,0x00,0x00,0x00,0x00,0x01, c16(0x0800),\n\
         0x45, 0x00, c16(40), drnd(2), c16(0x4000), 64, 6, csumip(14, 33),\n\
         198, 18, drnd(2), {ip},\n\
         drnd(2), c16({HTTP_PORT}), drnd(4), c32(0), 0x50, 0x02, c16(64240), csumtcp(14, 34), c16(0) }}\n",
        mac = mac.join(","),
        ip = ip.join(", ")
    );
    let path = s.dir.path().join("synflood.cfg");
    std::fs::write(&path, conf).unwrap();
    let tx_packets = || {
        let out = s.lab.output(&s.client, "cat", &[&format!("/sys/class/net/{CLIENT_DEV}/statistics/tx_packets")]);
        String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().expect("tx_packets of the client veth")
    };
    let before = tx_packets();
    let started = Instant::now();
    // trafgen gives up when the veth pushes back (EAGAIN on its TX ring flush): start it
    // again until the packet or time bound is reached.
    loop {
        let sent = tx_packets() - before;
        let left = Duration::from_secs(FLOOD_SECONDS).saturating_sub(started.elapsed());
        if sent >= FLOOD_PACKETS || left < Duration::from_millis(200) {
            return sent;
        }
        let out = s
            .lab
            .command(&s.client, "timeout", &[&format!("{:.1}", left.as_secs_f64()), "trafgen", "--dev", CLIENT_DEV])
            .arg("--conf")
            .arg(&path)
            .args(["-P", "1", "-n", &(FLOOD_PACKETS - sent).to_string()])
            .output()
            .expect("run trafgen");
        let err = String::from_utf8_lossy(&out.stderr);
        // 124: stopped by `timeout` at the time bound.
        let fine = out.status.success() || out.status.code() == Some(124) || err.contains("Flushing TX_RING failed");
        assert!(fine, "trafgen failed: {}: {err}", out.status);
    }
}

fn stop(picket: &mut Guarded) {
    picket.signal("TERM");
    let status = picket.wait(Duration::from_secs(20));
    assert!(status.success(), "picket exited with {status}");
}

/// `stats.picket.xdp.<name>` of the last stats event.
fn eve_xdp(eve: &[serde_json::Value], name: &str) -> Option<u64> {
    let stats = eve.iter().rev().find(|e| e["event_type"] == "stats")?;
    stats["stats"]["picket"]["xdp"][name].as_u64()
}

#[test]
fn syn_flood_is_answered_in_xdp_and_real_clients_get_through() {
    if skipped() {
        return;
    }
    let s = setup("synf");
    let before = kernel_state(&s);
    let logs = s.dir.path().join("logs");
    let mut picket = start_picket(&s, &logs);
    let (v4_rules, v6_rules, loose) = kernel_state(&s);
    assert!(v4_rules.contains("SYNPROXY") && v4_rules.contains("picket-ddos:sf-s"), "{v4_rules}");
    assert!(v6_rules.contains("SYNPROXY"), "{v6_rules}");
    assert_eq!(loose.trim(), "0");
    assert!(xdp_attached(&s));
    assert!(curl(&s).is_some(), "a request before the flood failed");
    let tx_before = xdp_tx(&s);

    let sent = thread::scope(|scope| {
        let flooder = scope.spawn(|| flood(&s));
        thread::sleep(Duration::from_millis(500));
        let mut times = Vec::new();
        for i in 0..CURLS {
            let t = curl(&s);
            println!("curl {i}: {}", t.map(|t| format!("{:.1} ms", t.as_secs_f64() * 1e3)).unwrap_or("FAILED".into()));
            times.push(t);
        }
        let sent = flooder.join().unwrap();
        let ok = times.iter().filter(|t| t.is_some()).count();
        assert_eq!(ok, CURLS, "{ok} of {CURLS} requests succeeded during the flood");
        sent
    });
    let cookies = xdp_tx(&s) - tx_before;
    println!("flood: {sent} SYNs sent, {cookies} SYN cookies sent from XDP");
    stop(&mut picket);

    let eve = read_eve(&logs.join("eve.json"));
    let stats = eve.iter().rev().find(|e| e["event_type"] == "stats").expect("a stats event");
    let decoded = stats["stats"]["decoder"]["pkts"].as_u64().unwrap_or(0);
    let captured = stats["stats"]["capture"]["kernel_packets"].as_u64().unwrap_or(0);
    println!("user space: decoder.pkts {decoded}, capture.kernel_packets {captured}");
    let sent_by_xdp = eve_xdp(&eve, "cookie_sent").expect("stats.picket.xdp.cookie_sent in the last stats event");
    let passed = eve_xdp(&eve, "cookie_ack_passed").unwrap_or(0);
    println!("eve: picket.xdp.cookie_sent {sent_by_xdp}, cookie_ack_passed {passed}");
    assert!(sent_by_xdp >= sent * 9 / 10, "cookie_sent {sent_by_xdp} of {sent} SYNs");
    // Every curl's handshake ACK carried a valid cookie to SYNPROXY.
    assert!(passed >= CURLS as u64, "only {passed} cookie ACKs passed for {CURLS} requests");
    assert!(sent > 10_000, "the flood was too small to mean anything: {sent}");
    assert!(cookies >= sent * 9 / 10, "only {cookies} of {sent} SYNs were answered from XDP");
    assert!(decoded < sent / 100 && captured < sent / 100, "the flood reached user space: {decoded} decoded of {sent}");

    assert_eq!(kernel_state(&s), before, "iptables rules or the sysctl were not restored");
    assert!(!xdp_attached(&s), "XDP program still attached after exit");
}

/// No port is protected in advance: the SYN-flood detector sees the flood's SYN rate to
/// the server's port, turns SYN cookies on for that destination (the SYNs then stop
/// reaching user space), and turns them off `hold` seconds after the flood ends.
#[test]
fn a_syn_flood_switches_cookies_on_for_its_destination_and_off_after() {
    if skipped() {
        return;
    }
    let s = setup("synd");
    let logs = s.dir.path().join("logs");
    let yaml = "ddos:\n  detectors:\n    syn-flood: { rate: 2000, ratio: 3, window: 1, hold: 2 }\n";
    let mut picket = start_picket_with(&s, &logs, yaml);
    let snapshot = logs.join("picket-stats.json");
    let global = |name: &str| -> u64 {
        let text = std::fs::read_to_string(&snapshot).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        v["global"][name].as_u64().unwrap_or(0)
    };
    assert_eq!(global("picket.ddos.protected_active"), 0, "nothing is protected before the flood");
    assert_eq!(global("picket.xdp.cookie_sent"), 0);

    let (sent, ok) = thread::scope(|scope| {
        let flooder = scope.spawn(|| flood(&s));
        thread::sleep(Duration::from_secs(3));
        let active_during = global("picket.ddos.protected_active");
        let ok = (0..10).filter(|_| curl(&s).is_some()).count();
        assert_eq!(active_during, 1, "the flooded destination is protected during the flood");
        (flooder.join().unwrap(), ok)
    });
    println!("flood: {sent} SYNs; {ok} of 10 requests succeeded during it");
    assert_eq!(ok, 10, "requests failed while cookies were on");
    let cookies = global("picket.xdp.cookie_sent");
    assert!(cookies > sent / 2, "only {cookies} of {sent} SYNs were answered in XDP");
    // The flood is over: below half the rate for `hold` seconds, the cookies go off.
    wait_for("the protection to be withdrawn", Duration::from_secs(15), || {
        global("picket.ddos.protected_active") == 0 && global("picket.ddos.protect_off") >= 1
    });
    let cookies_after = global("picket.xdp.cookie_sent");
    assert!(curl(&s).is_some(), "a request after the flood failed");
    thread::sleep(Duration::from_millis(1500));
    assert_eq!(global("picket.xdp.cookie_sent"), cookies_after, "the request after the flood got a cookie");
    stop(&mut picket);

    let eve = read_eve(&logs.join("eve.json"));
    let alerts: Vec<_> =
        events_of(&eve, "alert").into_iter().filter(|a| a["alert"]["signature_id"] == 9000001).collect();
    assert!(!alerts.is_empty(), "no SYN flood alert");
    let a = alerts[0];
    assert_eq!(a["alert"]["signature"], format!("picket SYN flood to {SERVER_IP}:{HTTP_PORT}"), "{a:#}");
    assert_eq!(a["alert"]["action"], "blocked", "{a:#}");
    assert_eq!(a["dest_ip"], SERVER_IP, "{a:#}");
}

#[test]
fn kill_9_then_restart_repairs_and_cleans_up() {
    if skipped() {
        return;
    }
    let s = setup("synk");
    // A value picket must restore, different from what it sets.
    s.lab.run(&s.server, "sh", &["-c", &format!("echo 1 > {LOOSE_SYSCTL}")]);
    let before = kernel_state(&s);
    let logs = s.dir.path().join("logs");

    let mut first = start_picket(&s, &logs);
    first.signal("KILL");
    first.wait(Duration::from_secs(10));
    let (left, _, loose) = kernel_state(&s);
    assert!(left.contains("picket-ddos"), "the killed run's rules should still be there: {left}");
    assert_eq!(loose.trim(), "0");
    // The XDP program went with the process (BPF link).
    assert!(!xdp_attached(&s), "XDP program survived kill -9");

    std::fs::remove_dir_all(&logs).unwrap();
    let mut second = start_picket(&s, &logs);
    let (rules, v6_rules, _) = kernel_state(&s);
    assert_eq!(rules.matches("picket-ddos").count(), 2, "stale rules not removed: {rules}");
    assert_eq!(v6_rules.matches("picket-ddos").count(), 2, "stale rules not removed: {v6_rules}");
    assert!(curl(&s).is_some(), "a request after the restart failed");
    stop(&mut second);
    assert_eq!(kernel_state(&s), before, "not restored after kill -9 and restart");
    assert!(!xdp_attached(&s));
}

// ---------------------------------------------------------------------------------
// The SYN-cookie stage frame by frame in the kernel (BPF_PROG_TEST_RUN): real helpers,
// real maps, no namespaces.

mod frames {
    use picket::xdp::maps::Reason;
    use picket::xdp::protect::ProtectTable;
    use picket::xdp::stats::XdpStats;
    use picket::xdp::{XdpLayer, XdpOptions};
    use std::net::{IpAddr, Ipv4Addr};

    pub const XDP_DROP: u32 = 1;
    pub const XDP_PASS: u32 = 2;
    pub const XDP_TX: u32 = 3;
    pub const CLIENT: [u8; 4] = [192, 0, 2, 7];
    pub const SERVER: [u8; 4] = [198, 51, 100, 2];
    pub const CLIENT6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
    pub const SERVER6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    pub const PORT: u16 = 443;
    pub const CLIENT_TSVAL: u32 = 0x1234_5678;
    /// Linux's SYN options: MSS 1400, SACK permitted, timestamp, NOP, window scale 9.
    pub fn linux_options() -> Vec<u8> {
        let mut o = vec![2, 4, 0x05, 0x78, 4, 2, 8, 10];
        o.extend_from_slice(&CLIENT_TSVAL.to_be_bytes());
        o.extend_from_slice(&[0, 0, 0, 0, 1, 3, 3, 9]);
        o
    }

    pub fn load() -> Option<(XdpLayer, XdpStats, ProtectTable)> {
        if let Some(why) = super::netlab::skip_reason(&[]) {
            eprintln!("SKIPPED: {why}");
            return None;
        }
        let mut xdp = XdpLayer::load(&XdpOptions { cookie_mss: 1460, ..XdpOptions::default() }).expect("load");
        let stats = XdpStats::take(&mut xdp).expect("picket_stats");
        let mut protect = ProtectTable::take(&mut xdp).expect("protect tables");
        protect.protect(Some(IpAddr::V4(Ipv4Addr::from(SERVER))), PORT).unwrap();
        protect.protect(None, PORT).unwrap();
        Some((xdp, stats, protect))
    }

    pub fn count(stats: &XdpStats, reason: Reason) -> u64 {
        stats.read().into_iter().find(|(r, _)| *r == reason).map_or(0, |(_, c)| c.packets)
    }

    /// Ones' complement sum of `data` (16-bit big-endian words), not folded.
    fn sum(data: &[u8]) -> u32 {
        data.chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0))).sum()
    }

    pub fn fold(mut s: u32) -> u16 {
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    /// A TCP segment (header with `options`, checksum filled) for the given pseudo header sum.
    fn segment(pseudo: u32, sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, options: &[u8]) -> Vec<u8> {
        let hlen = 20 + options.len();
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&seq.to_be_bytes());
        t.extend_from_slice(&ack.to_be_bytes());
        t.push(((hlen / 4) as u8) << 4);
        t.push(flags);
        t.extend_from_slice(&64240u16.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
        t.extend_from_slice(options);
        let c = !fold(pseudo + sum(&t) + hlen as u32);
        t[16..18].copy_from_slice(&c.to_be_bytes());
        t
    }

    pub fn tcp4(sport: u16, seq: u32, ack: u32, flags: u8, options: &[u8]) -> Vec<u8> {
        let seg = segment(sum(&CLIENT) + sum(&SERVER) + 6, sport, PORT, seq, ack, flags, options);
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = (20 + seg.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&CLIENT);
        ip.extend_from_slice(&SERVER);
        let c = !fold(sum(&ip));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&seg);
        f
    }

    pub fn tcp6(sport: u16, seq: u32, flags: u8, options: &[u8]) -> Vec<u8> {
        let seg = segment(sum(&CLIENT6) + sum(&SERVER6) + 6, sport, PORT, seq, 0, flags, options);
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd, 0x60, 0, 0, 0];
        f.extend_from_slice(&(seg.len() as u16).to_be_bytes());
        f.extend_from_slice(&[6, 64]);
        f.extend_from_slice(&CLIENT6);
        f.extend_from_slice(&SERVER6);
        f.extend_from_slice(&seg);
        f
    }

    /// Checks the TCP checksum of a reply (`l3` offset of the IP header, IPv4 or IPv6).
    pub fn tcp_checksum_ok(frame: &[u8], v6: bool) -> bool {
        let (pseudo, seg) =
            if v6 { (sum(&frame[22..54]) + 6, &frame[54..]) } else { (sum(&frame[26..34]) + 6, &frame[34..]) };
        fold(pseudo + seg.len() as u32 + sum(seg)) == 0xffff
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[test]
fn syn_gets_a_cookie_syn_ack_and_its_ack_is_checked() {
    use frames::*;
    use picket::xdp::maps::Reason;
    let Some((mut xdp, stats, protect)) = load() else { return };
    let seq = 0x0102_0304;
    let syn = tcp4(40000, seq, 0, 0x02, &linux_options());
    let run = xdp.test_run(&syn).unwrap();
    assert_eq!(run.action, XDP_TX);
    let r = &run.frame;
    // Ethernet and IP addresses swapped; IPv4 header checksum right; ports swapped.
    assert_eq!((&r[0..6], &r[6..12]), (&syn[6..12], &syn[0..6]));
    assert_eq!((&r[26..30], &r[30..34]), (&SERVER[..], &CLIENT[..]));
    assert_eq!(fold(r[14..34].chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(c[1])).sum()), 0xffff);
    assert_eq!(u16::from_be_bytes([r[34], r[35]]), PORT);
    assert_eq!(u16::from_be_bytes([r[36], r[37]]), 40000);
    let cookie = be32(&r[38..42]);
    assert_eq!(be32(&r[42..46]), seq + 1, "ack = client seq + 1");
    assert_eq!(r[47], 0x12, "SYN+ACK");
    assert!(tcp_checksum_ok(r, false), "TCP checksum");
    // Options: MSS 1460, SACK permitted, timestamp echoing the client's and carrying its
    // window scale (9) and SACK bit in the low bits, window scale 7.
    let hlen = usize::from(r[46] >> 4) * 4;
    assert_eq!(r.len(), 34 + hlen);
    let opts = &r[54..34 + hlen];
    assert_eq!(&opts[0..4], &[2, 4, 0x05, 0xb4]);
    assert_eq!(&opts[4..8], &[4, 2, 8, 10]);
    let tsval = be32(&opts[8..12]);
    assert_eq!(tsval & 0x3f, 9 | 0x10);
    assert_eq!(be32(&opts[12..16]), CLIENT_TSVAL);
    assert_eq!(&opts[16..20], &[1, 3, 3, 7]);
    assert_eq!(count(&stats, Reason::CookieSent), 1);

    // The client's ACK with the cookie passes (no socket here, the cookie is valid); one
    // with a wrong acknowledgment number is dropped.
    let mut ts = vec![1, 1, 8, 10];
    ts.extend_from_slice(&(CLIENT_TSVAL + 1).to_be_bytes());
    ts.extend_from_slice(&tsval.to_be_bytes());
    let ack = tcp4(40000, seq + 1, cookie.wrapping_add(1), 0x10, &ts);
    assert_eq!(xdp.test_run(&ack).unwrap().action, XDP_PASS);
    // (A cookie off by a few still decodes to another valid MSS index: change its age bits.)
    let bad = tcp4(40000, seq + 1, cookie.wrapping_add(0x4000_0001), 0x10, &ts);
    assert_eq!(xdp.test_run(&bad).unwrap().action, XDP_DROP);
    assert_eq!((count(&stats, Reason::CookieAckPassed), count(&stats, Reason::CookieAckBad)), (1, 1));
    let entry = protect.entries().into_iter().find(|e| e.0.is_some()).expect("the address entry");
    assert_eq!((entry.2.syns, entry.2.acks_passed, entry.2.acks_bad), (1, 1, 1));
}

#[test]
fn cookie_stage_edges_option_less_syn_ipv6_and_others() {
    use frames::*;
    use picket::xdp::maps::Reason;
    let Some((mut xdp, stats, mut protect)) = load() else { return };
    // A SYN without options (the usual flood packet): a 24-byte SYN-ACK, frame grown.
    let run = xdp.test_run(&tcp4(1, 7, 0, 0x02, &[])).unwrap();
    assert_eq!(run.action, XDP_TX);
    assert_eq!(run.frame.len(), 14 + 20 + 24);
    assert!(tcp_checksum_ok(&run.frame, false));
    // IPv6, protected through the any-address entry.
    let run = xdp.test_run(&tcp6(2, 9, 0x02, &linux_options())).unwrap();
    assert_eq!(run.action, XDP_TX);
    assert_eq!((&run.frame[22..38], &run.frame[38..54]), (&SERVER6[..], &CLIENT6[..]));
    assert!(tcp_checksum_ok(&run.frame, true), "TCP checksum over IPv6");
    assert_eq!(be32(&run.frame[62..66]), 10);
    // MSS 20 less for IPv6.
    assert_eq!(&run.frame[74..78], &[2, 4, 0x05, 0xa0]);
    // SYN+FIN: dropped as an error. RST and SYN-ACK: not the stage's business.
    assert_eq!(xdp.test_run(&tcp4(3, 1, 0, 0x03, &[])).unwrap().action, XDP_DROP);
    assert_eq!(count(&stats, Reason::CookieError), 1);
    assert_eq!(xdp.test_run(&tcp4(4, 1, 0, 0x04, &[])).unwrap().action, XDP_PASS);
    assert_eq!(xdp.test_run(&tcp4(5, 1, 1, 0x12, &[])).unwrap().action, XDP_PASS);
    // A header longer than the frame: an error, not a read past the end.
    let mut short = tcp4(6, 1, 0, 0x02, &[]);
    short[46] = 0xf0;
    assert_eq!(xdp.test_run(&short).unwrap().action, XDP_DROP);
    // Unprotected: the SYN goes to picket as usual.
    protect.unprotect(None, PORT).unwrap();
    protect.unprotect(Some(std::net::IpAddr::V4(SERVER.into())), PORT).unwrap();
    assert!(protect.entries().is_empty());
    assert_eq!(xdp.test_run(&tcp4(7, 1, 0, 0x02, &[])).unwrap().action, XDP_PASS);
    assert_eq!(count(&stats, Reason::CookieSent), 2);
}
