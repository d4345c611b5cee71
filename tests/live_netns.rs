//! End to end live capture: the `picket` binary captures on a veth in namespace B with
//! two workers while namespace A sends a known set of UDP flows and one TCP connection
//! whose payload a rule matches; SIGTERM ends the run and the logs are checked.
//!
//! Needs root and iproute2 (`ip netns`) and python3; prints SKIPPED and returns
//! otherwise. Namespaces are deleted by a guard, also when the test panics; every wait
//! has a deadline.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const UDP_FLOWS: u16 = 40;
const UDP_PER_FLOW: u32 = 5;
const FIRST_UDP_PORT: u16 = 31000;
const UDP_SERVER_PORT: u16 = 9999;
const TCP_PORT: u16 = 8080;
const PLANTED: &str = "PICKET-PLANTED-c0ffee";

fn skip_reason() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref() != Some("0") {
        return Some("not running as root".into());
    }
    match Command::new("ip").args(["netns", "list"]).stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => {}
        _ => return Some("`ip netns` not available".into()),
    }
    match Command::new("python3").arg("-c").arg("pass").status() {
        Ok(s) if s.success() => None,
        _ => Some("python3 not available".into()),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// Namespaces A (10.98.0.1 on veth-a) and B (10.98.0.2 on veth-b); deleted on drop,
/// which kills what still runs in them only if it was started by us (see `Picket`).
struct Lab {
    a: String,
    b: String,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let pid = std::process::id();
        let lab = Lab { a: format!("pkl-a-{pid}-{tag}"), b: format!("pkl-b-{pid}-{tag}") };
        for ns in [&lab.a, &lab.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
        }
        ip(&["netns", "add", &lab.a]);
        ip(&["netns", "add", &lab.b]);
        ip(&["-n", &lab.a, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", &lab.b]);
        ip(&["-n", &lab.a, "addr", "add", "10.98.0.1/24", "dev", "veth-a"]);
        ip(&["-n", &lab.b, "addr", "add", "10.98.0.2/24", "dev", "veth-b"]);
        for (ns, dev) in [(&lab.a, "veth-a"), (&lab.b, "veth-b"), (&lab.a, "lo"), (&lab.b, "lo")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        lab
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// A child process killed (by its own pid) if the test ends before it does.
struct Guarded(Child);

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < limit, "process did not exit within {limit:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

fn python_in(ns: &str, script: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "python3", "-c", script]);
    c
}

fn read_eve(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l}: {e}")))
        .collect()
}

#[test]
fn live_capture_two_workers_flows_alert_and_clean_stop() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED: live capture test needs root, `ip netns` and python3: {reason}");
        return;
    }
    let lab = Lab::new("run");
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("live.rules");
    std::fs::write(
        &rules,
        format!("alert tcp any any -> any {TCP_PORT} (msg:\"planted string\"; content:\"{PLANTED}\"; sid:4200001; rev:1;)\n"),
    )
    .unwrap();
    let logs = dir.path().join("logs");

    // Servers in B: a UDP sink and a TCP server that reads until the client closes.
    let servers = format!(
        "import socket,threading,time\n\
         u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.bind(('10.98.0.2',{UDP_SERVER_PORT}))\n\
         t=socket.socket(); t.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); t.bind(('10.98.0.2',{TCP_PORT})); t.listen(1)\n\
         def sink():\n  while True: u.recv(2048)\n\
         threading.Thread(target=sink,daemon=True).start()\n\
         t.settimeout(20); c,_=t.accept(); c.settimeout(5)\n\
         while c.recv(4096): pass\n\
         c.close()\n"
    );
    let mut server = Guarded(python_in(&lab.b, &servers).stdout(Stdio::null()).spawn().unwrap());

    let picket_bin = env!("CARGO_BIN_EXE_picket");
    // Per-worker counters in eve `stats` (`stats: threads: yes`), as the checks below read them.
    let threads_yaml = dir.path().join("threads.yaml");
    std::fs::write(
        &threads_yaml,
        "outputs:\n  - fast:\n      enabled: yes\n  - eve-log:\n      enabled: yes\n      types:\n        - alert\n        \
         - drop\n        - flow\n        - stats:\n            threads: yes\n  - stats:\n      enabled: yes\n",
    )
    .unwrap();
    let mut picket = Guarded(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &lab.b,
                picket_bin,
                "-i",
                "veth-b",
                "--workers",
                "2",
                "--set",
                "stats.interval=1",
                "-c",
                threads_yaml.to_str().unwrap(),
                "-S",
            ])
            .arg(&rules)
            .arg("-l")
            .arg(&logs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // `ip netns exec` execs picket in place, so this pid is picket's. The snapshot file
    // appears once the sockets are open and the workers run.
    let snapshot = logs.join("picket-stats.json");
    wait_for("picket to start capturing", Duration::from_secs(10), || {
        if let Ok(Some(status)) = picket.0.try_wait() {
            panic!("picket exited early: {status}");
        }
        snapshot.exists()
    });

    let client = format!(
        "import socket,time\n\
         for i in range({UDP_FLOWS}):\n\
         \x20 s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('10.98.0.1',{FIRST_UDP_PORT}+i))\n\
         \x20 for k in range({UDP_PER_FLOW}): s.sendto(b'udp flow %d packet %d' % (i,k), ('10.98.0.2',{UDP_SERVER_PORT}))\n\
         \x20 s.close()\n\
         t=socket.create_connection(('10.98.0.2',{TCP_PORT}),timeout=5)\n\
         t.sendall(b'GET / HTTP/1.0\\r\\nX-Test: {PLANTED}\\r\\n\\r\\n'); time.sleep(0.2); t.close()\n"
    );
    let status = python_in(&lab.a, &client).status().unwrap();
    assert!(status.success(), "client failed");
    assert!(wait_exit(&mut server.0, Duration::from_secs(10)).success(), "TCP server failed");
    // The retire timeout hands over the last partly filled blocks.
    thread::sleep(Duration::from_millis(500));

    // At least one periodic stats event (interval 1 s) before stopping.
    let eve_path = logs.join("eve.json");
    wait_for("a periodic stats event", Duration::from_secs(5), || {
        std::fs::read_to_string(&eve_path).is_ok_and(|t| t.contains("\"event_type\":\"stats\""))
    });
    let pid = picket.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let exit = wait_exit(&mut picket.0, Duration::from_secs(10));
    let mut stdout = String::new();
    let mut stderr = String::new();
    use std::io::Read;
    picket.0.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    picket.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    drop(lab);
    assert!(exit.success(), "picket exit {exit}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("kernel drops"), "load table missing:\n{stdout}");

    let eve = read_eve(&logs.join("eve.json"));
    let of_type = |t: &'static str| eve.iter().filter(move |e| e["event_type"] == t);

    // The planted payload raised its alert.
    let alerts: Vec<_> = of_type("alert").filter(|e| e["alert"]["signature_id"] == 4200001).collect();
    assert!(!alerts.is_empty(), "no alert for the planted payload; stderr:\n{stderr}");
    assert!(std::fs::read_to_string(logs.join("fast.log")).unwrap().contains("planted string"));

    // Each UDP flow was seen whole by exactly one worker: a flow split over two workers
    // would be two flow records with part of the packets each.
    let mut records: HashMap<u64, Vec<u64>> = HashMap::new();
    for e in of_type("flow").filter(|e| e["proto"] == "UDP" && e["dest_port"] == UDP_SERVER_PORT) {
        records.entry(e["src_port"].as_u64().unwrap()).or_default().push(e["flow"]["pkts_toserver"].as_u64().unwrap());
    }
    assert_eq!(records.len(), UDP_FLOWS as usize, "flow records: {records:?}");
    for (port, pkts) in &records {
        assert_eq!(pkts, &vec![UDP_PER_FLOW as u64], "flow from port {port} split or short");
    }

    // Final stats: nothing lost in the kernel, both workers got traffic, and the
    // per-worker UDP flow counts add up to the flows sent (plus none twice).
    let stats = eve.iter().rev().find(|e| e["event_type"] == "stats").expect("final stats event");
    let s = &stats["stats"];
    assert_eq!(s["capture"]["kernel_drops"], 0, "{s}");
    let sent = (UDP_FLOWS as u64) * UDP_PER_FLOW as u64;
    assert!(s["decoder"]["pkts"].as_u64().unwrap() >= sent, "{}", s["decoder"]);
    assert!(s["capture"]["kernel_packets"].as_u64().unwrap() >= sent);
    let threads = s["threads"].as_object().unwrap();
    assert_eq!(threads.len(), 2, "{threads:?}");
    let mut udp_flows = 0;
    for (name, t) in threads {
        assert!(t["decoder"]["pkts"].as_u64().unwrap() > 0, "worker {name} got no traffic");
        assert_eq!(t["capture"]["kernel_drops"], 0);
        udp_flows += t["flow"]["udp"].as_u64().unwrap();
    }
    assert!(udp_flows >= UDP_FLOWS as u64, "udp flows per worker sum to {udp_flows}");
    // Periodic stats were written too (interval 1 s), and stats.log has worker blocks.
    assert!(of_type("stats").count() >= 2, "no periodic stats event");
    let stats_log = std::fs::read_to_string(logs.join("stats.log")).unwrap();
    // stats.log lists the counters that are not zero (as Suricata's), per worker too.
    assert!(stats_log.lines().any(|l| l.starts_with("decoder.pkts") && l.contains("W#02")));

    let snap: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    let snap_packets: u64 = snap["workers"].as_array().unwrap().iter().map(|w| w["packets"].as_u64().unwrap()).sum();
    assert_eq!(snap_packets, s["decoder"]["pkts"].as_u64().unwrap(), "final snapshot disagrees with stats");
}

#[test]
fn live_capture_errors_are_one_line() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED: live capture test needs root, `ip netns` and python3: {reason}");
        return;
    }
    let lab = Lab::new("err");
    ip(&["-n", &lab.b, "link", "add", "down-a", "type", "veth", "peer", "name", "down-b"]);
    let dir = tempfile::tempdir().unwrap();
    let run_with = |iface: &str, extra: &[&str]| {
        let out = Command::new("ip")
            .args(["netns", "exec", &lab.b, env!("CARGO_BIN_EXE_picket"), "-i", iface])
            .args(extra)
            .arg("-l")
            .arg(dir.path())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).trim().to_string())
    };
    let run = |iface: &str| run_with(iface, &[]);
    // A passive interface sees copies: claiming blocks there would be a lie.
    let (code, err) = run_with("veth-b", &["--simulate-ips"]);
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("picket: error: --simulate-ips applies to reading a capture") && !err.contains('\n'),
        "{err}"
    );
    let (code, err) = run("nosuch0");
    assert_eq!(code, Some(1));
    assert_eq!(err, "picket: error: no such interface nosuch0");
    let (code, err) = run("down-a");
    assert_eq!(code, Some(1));
    assert!(err.starts_with("picket: error: interface down-a is down") && !err.contains('\n'), "{err}");
}

// ---------------------------------------------------------------------------------
// CPU per packet of `picket -i` at a fixed rate (trafgen), 1 and 2 workers. Ignored:
// `cargo test --release --test live_netns -- --ignored --nocapture measure`
// (PICKET_BENCH_RATES=100000,200000 PICKET_BENCH_SECONDS=3 to change the defaults).

/// UDP 10.98.0.1 -> 10.98.0.2 port 9 from 256 source ports, to a MAC that is not
/// veth-b's: B's IP stack drops it at once, so only capture and inspection are measured.
const TRAFGEN_PACKET: &str = "{ 0x02,0x00,0x00,0x00,0x00,0x99, 0x02,0x00,0x00,0x00,0x00,0x01, c16(0x0800),
  0x45, 0x00, c16(46), drnd(2), c16(0), 64, 17, csumip(14, 33),
  10, 98, 0, 1, 10, 98, 0, 2,
  0x4e, drnd(1), c16(9), c16(26), c16(0),
  fill(0x41, 18) }";

/// CPU time of every thread of `pid`, from /proc/PID/task/*/schedstat (nanoseconds).
fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[test]
#[ignore = "measurement: run in release with --ignored --nocapture"]
fn measure_live_cpu_per_packet() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    if Command::new("trafgen").arg("-v").stdout(Stdio::null()).status().is_err() {
        eprintln!("SKIPPED: trafgen (netsniff-ng) not installed");
        return;
    }
    let lab = Lab::new("bench");
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("trafgen.cfg");
    std::fs::write(&conf, TRAFGEN_PACKET).unwrap();
    let empty_rules = dir.path().join("empty.rules");
    std::fs::write(&empty_rules, "").unwrap();
    let seconds: u64 = std::env::var("PICKET_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let rates: Vec<u64> = std::env::var("PICKET_BENCH_RATES")
        .ok()
        .map(|s| s.split(',').filter_map(|r| r.parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 200_000, 300_000]);
    eprintln!(
        "{:<10} {:>8} {:>9} {:>10} {:>8} {:>10} {:>7}",
        "workers", "rate", "sent/s", "inspected", "drops", "ns/packet", "cpu %"
    );
    for &rate in &rates {
        for workers in [1usize, 2] {
            let logs = dir.path().join(format!("logs-{rate}-{workers}"));
            let mut picket = Guarded(
                Command::new("ip")
                    .args(["netns", "exec", &lab.b, env!("CARGO_BIN_EXE_picket"), "-i", "veth-b"])
                    .args(["--workers", &workers.to_string(), "--set", "stats.interval=0", "-S"])
                    .arg(&empty_rules)
                    .arg("-l")
                    .arg(&logs)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            let snapshot = logs.join("picket-stats.json");
            wait_for("picket to start", Duration::from_secs(10), || snapshot.exists());
            let pid = picket.0.id();
            let cpu_before = process_cpu_ns(pid);
            let count = rate * seconds;
            let started = Instant::now();
            let status = Command::new("ip")
                .args(["netns", "exec", &lab.a, "trafgen", "--dev", "veth-a", "--conf"])
                .arg(&conf)
                .args(["-P", "1", "-C", "-b", &format!("{rate}pps"), "-n", &count.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            let sending = started.elapsed();
            assert!(status.success(), "trafgen failed");
            thread::sleep(Duration::from_millis(300));
            let cpu = process_cpu_ns(pid) - cpu_before;
            let wall = started.elapsed();
            assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
            assert!(wait_exit(&mut picket.0, Duration::from_secs(10)).success());
            let eve = read_eve(&logs.join("eve.json"));
            let stats = &eve.iter().rev().find(|e| e["event_type"] == "stats").unwrap()["stats"];
            let inspected = stats["decoder"]["udp"].as_u64().unwrap();
            let drops = stats["capture"]["kernel_drops"].as_u64().unwrap();
            eprintln!(
                "{workers:<10} {rate:>8} {:>9.0} {inspected:>10} {drops:>8} {:>10.0} {:>6.1}%",
                count as f64 / sending.as_secs_f64(),
                cpu as f64 / inspected.max(1) as f64,
                100.0 * cpu as f64 / 1e9 / wall.as_secs_f64()
            );
        }
    }
}
