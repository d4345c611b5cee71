//! NFQUEUE inline prevention end to end: a client namespace, a router namespace where
//! iptables sends every forwarded packet to NFQUEUE (`--queue-balance 0:1
//! --queue-bypass`) and the `picket` binary answers them, and a server namespace running
//! `python3 -m http.server` (its access log is a file) and a UDP echo responder.
//!
//! Needs root, iproute2, iptables (Debian's iptables-nft queues on this kernel through
//! the xt compatibility layer; iptables-legacy is used when it is the only one), curl and
//! python3 (and tcpdump for the `--simulate-ips` cross-check); prints SKIPPED and returns
//! otherwise. Namespaces and processes are removed by
//! guards, also when a test panics; traffic is bounded and every wait has a deadline.

mod netlab;

use netlab::{wait_for, Guarded, Lab};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const HTTP_PORT: u16 = 8080;
const UDP_PORT: u16 = 9999;
const SERVER: &str = "10.77.2.1";
/// Client addresses 10.77.1.1 ... : `--queue-balance` hashes the address pair, so
/// flows from many addresses spread over both queues.
const CLIENT_ADDRESSES: u8 = 16;
const RULES: &str = "\
drop http any any -> any any (msg:\"blocked uri\"; http.uri; content:\"/blocked\"; sid:1;)
reject http any any -> any any (msg:\"rejected uri\"; http.uri; content:\"/rejectme\"; sid:2;)
reject udp any any -> any 9999 (msg:\"rejected datagram\"; content:\"rejectme\"; sid:3;)
";

/// The iptables front end to use, or why there is none.
fn iptables() -> Result<&'static str, String> {
    for program in ["iptables", "iptables-legacy"] {
        if netlab::skip_reason(&[program]).is_none() {
            return Ok(program);
        }
    }
    Err("iptables not installed".into())
}

macro_rules! skip_unless_possible {
    () => {
        if let Some(reason) = netlab::skip_reason(&["curl", "python3"]).or_else(|| iptables().err()) {
            eprintln!("SKIPPED: NFQUEUE namespace test: {reason}");
            return;
        }
    };
}

/// client (10.77.1.x) -- router (10.77.1.254 | 10.77.2.254) -- server (10.77.2.1), with
/// the server's HTTP and UDP responders running.
struct Topology {
    lab: Lab,
    client: String,
    router: String,
    dir: tempfile::TempDir,
    _servers: Vec<Guarded>,
}

/// The bytes `payload.bin` holds: varied, so that a corrupted transfer cannot match.
fn payload() -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

const UDP_ECHO: &str = "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, peer = s.recvfrom(65535)
    s.sendto(data, peer)
";

impl Topology {
    fn new(tag: &str) -> Topology {
        let mut lab = Lab::new(tag);
        let client = lab.namespace("c");
        let router = lab.namespace("r");
        let server = lab.namespace("s");
        lab.link(&client, "vc", &router, "vrc");
        lab.link(&router, "vrs", &server, "vs");
        for n in 1..=CLIENT_ADDRESSES {
            lab.address(&client, "vc", &format!("10.77.1.{n}/24"));
        }
        lab.address(&router, "vrc", "10.77.1.254/24");
        lab.address(&router, "vrs", "10.77.2.254/24");
        lab.address(&server, "vs", &format!("{SERVER}/24"));
        lab.route(&client, &["default", "via", "10.77.1.254"]);
        lab.route(&server, &["default", "via", "10.77.2.254"]);
        lab.run(&router, "sh", &["-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]);
        let ipt = iptables().expect("checked by skip_unless_possible");
        lab.run(&router, ipt, &["-A", "FORWARD", "-j", "NFQUEUE", "--queue-balance", "0:1", "--queue-bypass"]);

        let dir = tempfile::tempdir().expect("temporary directory");
        let www = dir.path().join("www");
        fs::create_dir(&www).unwrap();
        fs::write(www.join("payload.bin"), payload()).unwrap();
        fs::write(www.join("small.txt"), b"small\n").unwrap();
        let access_log = fs::File::create(dir.path().join("access.log")).unwrap();
        let mut http = lab.command(
            &server,
            "python3",
            &["-m", "http.server", &HTTP_PORT.to_string(), "--bind", SERVER, "--directory", www.to_str().unwrap()],
        );
        http.stdout(Stdio::null()).stderr(access_log);
        let mut echo = lab.command(&server, "python3", &["-c", UDP_ECHO, SERVER, &UDP_PORT.to_string()]);
        echo.stdout(Stdio::null()).stderr(Stdio::null());
        let servers = vec![lab.spawn(http), lab.spawn(echo)];
        let topology = Topology { lab, client, router, dir, _servers: servers };
        // Ready when the router (whose own traffic is not queued) gets an answer.
        wait_for("the HTTP server", Duration::from_secs(10), || {
            let out = topology.lab.output(
                &topology.router,
                "curl",
                &["-s", "-o", "/dev/null", "-m", "1", &format!("http://{SERVER}:{HTTP_PORT}/small.txt")],
            );
            out.status.success()
        });
        topology
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn access_log(&self) -> String {
        fs::read_to_string(self.path("access.log")).unwrap_or_default()
    }

    /// `curl` from the client namespace (from address 10.77.1.`from`): exit code, body,
    /// and how long it took.
    fn curl(&self, from: u8, path: &str, max_time: &str) -> (Option<i32>, Vec<u8>, Duration) {
        let started = Instant::now();
        let url = format!("http://{SERVER}:{HTTP_PORT}{path}");
        let out = self.lab.output(
            &self.client,
            "curl",
            &["-s", "-m", max_time, "--interface", &format!("10.77.1.{from}"), "-o", "-", &url],
        );
        (out.status.code(), out.stdout, started.elapsed())
    }

    /// Starts picket in the router namespace on `queues` with [`RULES`]; returns once
    /// its queues are bound.
    fn picket(&self, queues: &[&str], extra: &[&str]) -> Picket {
        let rules = self.path("rules.rules");
        fs::write(&rules, RULES).unwrap();
        let logs = self.path("logs");
        let stderr_path = self.path("picket.stderr");
        let stdout_path = self.path("picket.stdout");
        let mut args: Vec<String> = Vec::new();
        for q in queues {
            args.extend(["-q".to_string(), q.to_string()]);
        }
        for a in ["-S", rules.to_str().unwrap(), "-l", logs.to_str().unwrap(), "-k", "none"] {
            args.push(a.to_string());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = self.lab.command(&self.router, env!("CARGO_BIN_EXE_picket"), &args);
        command.stdout(fs::File::create(&stdout_path).unwrap()).stderr(fs::File::create(&stderr_path).unwrap());
        let mut process = self.lab.spawn(command);
        wait_for("picket to bind its queues", Duration::from_secs(20), || {
            assert!(process.running(), "picket exited: {}", fs::read_to_string(&stderr_path).unwrap_or_default());
            fs::read_to_string(&stderr_path).unwrap_or_default().contains("inline on NFQUEUE")
        });
        Picket { process, stdout: stdout_path, stderr: stderr_path, eve: logs.join("eve.json") }
    }
}

struct Picket {
    process: Guarded,
    stdout: PathBuf,
    stderr: PathBuf,
    eve: PathBuf,
}

impl Picket {
    /// SIGTERM, then the exit (checked) within a deadline.
    fn stop(&mut self) {
        self.process.signal("TERM");
        let status = self.process.wait(Duration::from_secs(15));
        assert!(status.success(), "picket: {status}: {}", fs::read_to_string(&self.stderr).unwrap_or_default());
    }

    /// Packets per worker, from the exit table.
    fn worker_packets(&self) -> Vec<u64> {
        fs::read_to_string(&self.stdout)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("W#"))
            .map(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("packets column"))
            .collect()
    }

    fn events(&self) -> Vec<serde_json::Value> {
        netlab::read_eve(&self.eve)
    }
}

/// One line of a python UDP client run in `ns`: sends `count` datagrams of `text`
/// (numbered) `gap_ms` apart and prints how many echoes came back.
const UDP_CLIENT: &str = "
import socket, sys, time
server, port, text, count, gap = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((server, port))
s.setblocking(False)
seen = set()
def drain():
    while True:
        try:
            seen.add(s.recv(2048))
        except BlockingIOError:
            return
        except ConnectionRefusedError:
            print('refused', flush=True)
            sys.exit(0)
for i in range(count):
    s.send(('%s %d' % (text, i)).encode())
    time.sleep(gap / 1000)
    drain()
deadline = time.time() + 2
while len(seen) < count and time.time() < deadline:
    time.sleep(0.01)
    drain()
print('echoed', len(seen), 'of', count, flush=True)
";

fn udp_client(t: &Topology, text: &str, count: u32, gap_ms: f64) -> Command {
    let args = [UDP_CLIENT, SERVER, &UDP_PORT.to_string(), text, &count.to_string(), &gap_ms.to_string()]
        .map(|s| s.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut all = vec!["-c"];
    all.extend(args);
    let mut c = t.lab.command(&t.client, "python3", &all);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

#[test]
fn http_pass_and_drop_on_two_queues() {
    skip_unless_possible!();
    let t = Topology::new("nfq-http");
    let mut picket = t.picket(&["0", "1"], &[]);

    // A benign transfer passes byte for byte.
    let (code, body, _) = t.curl(1, "/payload.bin", "10");
    assert_eq!(code, Some(0), "benign request failed");
    assert!(body == payload(), "payload differs: {} bytes of {}", body.len(), payload().len());

    // Flows from many addresses: both queues get some.
    for from in 1..=CLIENT_ADDRESSES {
        let (code, body, _) = t.curl(from, "/small.txt", "5");
        assert_eq!((code, body.as_slice()), (Some(0), &b"small\n"[..]), "request from 10.77.1.{from}");
    }

    // A request matching the drop rule never reaches the server; the client times out.
    let (code, _, took) = t.curl(2, "/blocked", "3");
    assert_eq!(code, Some(28), "curl should time out (exit 28), took {took:?}");
    assert!(!t.access_log().contains("/blocked"), "the server saw the dropped request:\n{}", t.access_log());
    // Passing traffic still flows after the drop.
    assert_eq!(t.curl(3, "/small.txt", "5").0, Some(0));

    picket.stop();
    let workers = picket.worker_packets();
    assert_eq!(workers.len(), 2, "{}", fs::read_to_string(&picket.stdout).unwrap());
    assert!(workers.iter().all(|&p| p > 0), "flows should land on both queues: {workers:?}");

    let events = picket.events();
    let alerts = netlab::events_of(&events, "alert");
    assert!(!alerts.is_empty(), "no alert for the dropped request");
    for a in &alerts {
        assert_eq!(a["alert"]["signature_id"], 1, "{a}");
        assert_eq!(a["alert"]["action"], "blocked", "{a}");
    }
    let drops = netlab::events_of(&events, "drop");
    assert!(!drops.is_empty(), "no drop events");
    assert!(drops.iter().all(|d| d["src_ip"] == "10.77.1.2" || d["dest_ip"] == "10.77.1.2"), "{drops:?}");

    // Each flow was seen by one worker, in both directions: a flow split over the
    // workers would show as two flow records for its 5-tuple, each one-sided.
    let flows = netlab::events_of(&events, "flow");
    let tcp: Vec<_> = flows.iter().filter(|f| f["proto"] == "TCP" && f["dest_port"] == HTTP_PORT).collect();
    assert!(tcp.len() >= CLIENT_ADDRESSES as usize + 2, "{} TCP flows", tcp.len());
    let mut tuples = std::collections::HashSet::new();
    for f in &tcp {
        let tuple = (f["src_ip"].to_string(), f["src_port"].to_string(), f["dest_ip"].to_string());
        assert!(tuples.insert(tuple), "flow reported twice (split over workers): {f}");
        if f["src_ip"] != "10.77.1.2" {
            assert!(f["flow"]["pkts_toserver"].as_u64() >= Some(4), "{f}");
            assert!(f["flow"]["pkts_toclient"].as_u64() >= Some(4), "{f}");
        }
    }
}

#[test]
fn sigterm_drains_and_kill_9_bypasses() {
    skip_unless_possible!();
    let t = Topology::new("nfq-stop");
    let mut picket = t.picket(&["0", "1"], &[]);

    // Datagrams every 2 ms for 1.2 s; SIGTERM in the middle. Every one must come back:
    // held packets are answered before picket exits, and later ones pass the kernel.
    let mut client = t.lab.spawn(udp_client(&t, "ping", 600, 2.0));
    thread::sleep(Duration::from_millis(500));
    picket.stop();
    client.wait(Duration::from_secs(10));
    let out = read_stdout(&mut client);
    assert_eq!(out.trim(), "echoed 600 of 600", "datagrams lost around the stop");

    // Crash: with --queue-bypass the kernel lets traffic through once the queue's
    // socket is gone. While picket runs, the drop rule holds.
    let mut picket = t.picket(&["0", "1"], &[]);
    assert_eq!(t.curl(4, "/blocked", "2").0, Some(28), "the drop rule should hold while picket runs");
    picket.process.signal("KILL");
    picket.process.wait(Duration::from_secs(5));
    let (code, _, _) = t.curl(4, "/blocked", "5");
    assert_eq!(code, Some(0), "traffic should bypass the queue after kill -9");
    assert!(t.access_log().contains("GET /blocked"), "{}", t.access_log());
    let (code, body, _) = t.curl(5, "/small.txt", "5");
    assert_eq!((code, body.as_slice()), (Some(0), &b"small\n"[..]));
}

fn read_stdout(process: &mut Guarded) -> String {
    use std::io::Read;
    let mut out = String::new();
    if let Some(stdout) = process.0.stdout.as_mut() {
        let _ = stdout.read_to_string(&mut out);
    }
    out
}

#[test]
fn start_up_errors_are_one_line_before_any_packet_is_held() {
    skip_unless_possible!();
    let t = Topology::new("nfq-err");
    let mut first = t.picket(&["0"], &[]);
    // The unprivileged run must get as far as the queue: its files must be reachable.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(t.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir(t.path("logs-nobody")).unwrap();
    fs::set_permissions(t.path("logs-nobody"), fs::Permissions::from_mode(0o777)).unwrap();
    let run = |args: &[&str], prefix: &[&str]| {
        let rules = t.path("rules.rules");
        let logs = t.path(if prefix.is_empty() { "logs2" } else { "logs-nobody" });
        let mut all: Vec<&str> = prefix.to_vec();
        all.push(env!("CARGO_BIN_EXE_picket"));
        all.extend_from_slice(args);
        all.extend_from_slice(&["-S", rules.to_str().unwrap(), "-l", logs.to_str().unwrap()]);
        let out = t.lab.output(&t.router, all[0], &all[1..]);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let error_line = |stderr: &str| {
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        errors[0].to_string()
    };

    let (code, stderr) = run(&["-q", "0"], &[]);
    assert_eq!(code, Some(1));
    let line = error_line(&stderr);
    assert!(line.contains("queue 0 is already bound by another program"), "{line}");

    let (code, stderr) = run(&["-q", "1"], &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    assert_eq!(code, Some(1));
    assert!(error_line(&stderr).contains("needs root"), "{stderr}");

    let (code, stderr) = run(&["-q", "1", "--set", "nfq.mode=repeat"], &[]);
    assert_eq!(code, Some(1));
    assert!(error_line(&stderr).contains("nfq.mode"), "{stderr}");

    // Nothing was held: the first instance still answers, queue 1 is free (bypassed).
    assert_eq!(t.curl(1, "/small.txt", "5").0, Some(0));
    first.stop();
}

#[test]
fn reject_resets_tcp_and_answers_udp_with_port_unreachable() {
    skip_unless_possible!();
    let t = Topology::new("nfq-rej");
    let mut picket = t.picket(&["0", "1"], &[]);

    // TCP: the connection is reset; curl fails at once (exit 56: connection reset).
    let (code, _, took) = t.curl(6, "/rejectme", "3");
    assert_eq!(code, Some(56), "curl should fail with a reset, took {took:?}");
    assert!(took < Duration::from_secs(1), "the reset took {took:?}");
    assert!(!t.access_log().contains("/rejectme"), "the server saw the rejected request");

    // UDP: the datagram is answered with ICMP port unreachable, which Linux reports to
    // the connected socket as ECONNREFUSED.
    let mut client = t.lab.spawn(udp_client(&t, "rejectme", 1, 0.0));
    client.wait(Duration::from_secs(10));
    assert_eq!(read_stdout(&mut client).trim(), "refused");
    // Other datagrams still pass.
    let mut client = t.lab.spawn(udp_client(&t, "hello", 5, 1.0));
    client.wait(Duration::from_secs(10));
    assert_eq!(read_stdout(&mut client).trim(), "echoed 5 of 5");

    picket.stop();
    let events = picket.events();
    let alerts = netlab::events_of(&events, "alert");
    for sid in [2, 3] {
        assert!(
            alerts.iter().any(|a| a["alert"]["signature_id"] == sid && a["alert"]["action"] == "blocked"),
            "no blocked alert for sid {sid}: {alerts:?}"
        );
    }
    let stats = netlab::events_of(&events, "stats");
    let last = stats.last().expect("a final stats event");
    let replies = last["stats"]["picket"]["nfq"]["replies"].as_u64().unwrap_or(0);
    // `reject` answers the sender only: one RST, one ICMP port unreachable.
    assert_eq!(replies, 2, "reject replies sent (picket.nfq.replies)");
}

/// What a run decided, comparable between a live run and a replay: the alerts (sid,
/// action, addresses and ports) and the drop events (addresses, ports, reason), sorted.
fn decisions(events: &[serde_json::Value]) -> (Vec<String>, Vec<String>) {
    let key = |e: &serde_json::Value| {
        format!("{} {}:{} > {}:{}", e["proto"], e["src_ip"], e["src_port"], e["dest_ip"], e["dest_port"])
    };
    let mut alerts: Vec<String> = netlab::events_of(events, "alert")
        .iter()
        .map(|a| format!("sid {} {} {}", a["alert"]["signature_id"], a["alert"]["action"], key(a)))
        .collect();
    let mut drops: Vec<String> =
        netlab::events_of(events, "drop").iter().map(|d| format!("{} {}", d["drop"]["reason"], key(d))).collect();
    alerts.sort();
    drops.sort();
    (alerts, drops)
}

#[test]
fn simulate_ips_on_a_capture_agrees_with_the_live_run() {
    skip_unless_possible!();
    if let Some(reason) = netlab::skip_reason(&["tcpdump"]) {
        eprintln!("SKIPPED: NFQUEUE --simulate-ips cross-check: {reason}");
        return;
    }
    let t = Topology::new("nfq-sim");
    // Everything that enters the router, before the FORWARD hook queues it.
    let capture = t.path("router.pcap");
    let dump_log = t.path("tcpdump.stderr");
    let mut dump = t.lab.command(
        &t.router,
        "tcpdump",
        &[
            "-i",
            "any",
            "-Q",
            "in",
            "--immediate-mode",
            "-U",
            "-s",
            "0",
            "-w",
            capture.to_str().unwrap(),
            "tcp port 8080 or udp port 9999",
        ],
    );
    dump.stdout(Stdio::null()).stderr(fs::File::create(&dump_log).unwrap());
    let mut dump = t.lab.spawn(dump);
    wait_for("tcpdump to listen", Duration::from_secs(10), || {
        fs::read_to_string(&dump_log).unwrap_or_default().contains("listening on")
    });
    let mut picket = t.picket(&["0", "1"], &[]);
    assert_eq!(t.curl(1, "/small.txt", "5").0, Some(0));
    assert_eq!(t.curl(2, "/blocked", "2").0, Some(28));
    assert_eq!(t.curl(3, "/rejectme", "3").0, Some(56));
    let mut client = t.lab.spawn(udp_client(&t, "rejectme", 1, 0.0));
    client.wait(Duration::from_secs(10));
    picket.stop();
    thread::sleep(Duration::from_millis(200));
    dump.signal("TERM");
    dump.wait(Duration::from_secs(10));
    let live = decisions(&picket.events());
    assert!(!live.0.is_empty() && !live.1.is_empty(), "the live run blocked nothing: {live:?}");

    let replay_logs = t.path("replay");
    let rules = t.path("rules.rules");
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .args(["-r", capture.to_str().unwrap(), "--simulate-ips", "-k", "none", "-S", rules.to_str().unwrap()])
        .args(["-l", replay_logs.to_str().unwrap()])
        .output()
        .expect("run picket -r");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replay = decisions(&netlab::read_eve(&replay_logs.join("eve.json")));
    assert_eq!(live.0, replay.0, "alerts differ between the live run and --simulate-ips");
    assert_eq!(live.1, replay.1, "drop decisions differ between the live run and --simulate-ips");
}
