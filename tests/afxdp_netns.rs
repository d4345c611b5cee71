//! AF_XDP capture end to end: a sender namespace and a capture namespace joined by a
//! veth pair with two RX/TX queues per end, `picket --af-xdp=IF --workers 2` on the
//! capture end, bounded UDP traffic from the sender.
//!
//! AF_XDP takes the redirected packets away from the kernel stack, so the capture end is
//! a sink (like a tap): the sender gets a static neighbour entry (ARP would go to picket
//! too) and IPv6 is off on both ends so that the only packets on the link are the test's.
//! veth picks the receiving queue from the sender's transmit queue, which the sender's
//! kernel chooses per flow (socket), so many flows spread over both queues.
//!
//! Needs root, iproute2 and python3; prints SKIPPED and returns otherwise. Namespaces and
//! processes are removed by guards, also when a test panics; every wait has a deadline.

mod netlab;

use netlab::{wait_for, Guarded, Lab};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const CAPTURE_IP: &str = "10.78.0.1";
const SENDER_IP: &str = "10.78.0.2";
const CAPTURE_DEV: &str = "axcap0";
const SENDER_DEV: &str = "axsnd0";
/// Flows (UDP sockets) and datagrams per flow: 320 packets in all, at a low rate.
const FLOWS: u32 = 32;
const PER_FLOW: u32 = 10;
const RULES: &str = "alert udp any any -> any any (msg:\"af-xdp marker\"; content:\"picket-afxdp\"; sid:9100001;)\n";

macro_rules! skip_unless_possible {
    () => {
        if let Some(reason) = netlab::skip_reason(&["python3"]) {
            eprintln!("SKIPPED: AF_XDP namespace test: {reason}");
            return;
        }
    };
}

struct Topology {
    lab: Lab,
    capture: String,
    sender: String,
    dir: tempfile::TempDir,
}

impl Topology {
    fn new(tag: &str) -> Topology {
        let mut lab = Lab::new(tag);
        let capture = lab.namespace("axc");
        let sender = lab.namespace("axs");
        netlab::run(
            "ip",
            &[
                "-n",
                &capture,
                "link",
                "add",
                CAPTURE_DEV,
                "numtxqueues",
                "2",
                "numrxqueues",
                "2",
                "type",
                "veth",
                "peer",
                "name",
                SENDER_DEV,
                "numtxqueues",
                "2",
                "numrxqueues",
                "2",
                "netns",
                &sender,
            ],
        );
        for (ns, dev) in [(&capture, CAPTURE_DEV), (&sender, SENDER_DEV)] {
            lab.run(ns, "sysctl", &["-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
            lab.run(ns, "sysctl", &["-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"]);
            lab.run(ns, "ip", &["link", "set", dev, "up"]);
        }
        lab.address(&capture, CAPTURE_DEV, &format!("{CAPTURE_IP}/24"));
        lab.address(&sender, SENDER_DEV, &format!("{SENDER_IP}/24"));
        let out = lab.run(&capture, "cat", &[&format!("/sys/class/net/{CAPTURE_DEV}/address")]);
        let mac = String::from_utf8_lossy(&out.stdout).to_string();
        lab.run(
            &sender,
            "ip",
            &["neigh", "replace", CAPTURE_IP, "lladdr", mac.trim(), "dev", SENDER_DEV, "nud", "permanent"],
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules"), RULES).unwrap();
        Topology { lab, capture, sender, dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Starts picket in the capture namespace with `args` and waits for its start-up line.
    fn start_picket(&self, args: &[&str], log_dir: &Path) -> Guarded {
        std::fs::create_dir_all(log_dir).unwrap();
        let stderr_path = log_dir.join("stderr");
        let rules = self.path("rules");
        let mut all: Vec<&str> = args.to_vec();
        all.extend_from_slice(&["-S", rules.to_str().unwrap(), "-l", log_dir.to_str().unwrap(), "-k", "none"]);
        let mut command = self.lab.command(&self.capture, env!("CARGO_BIN_EXE_picket"), &all);
        command.stdout(std::fs::File::create(log_dir.join("stdout")).unwrap());
        command.stderr(std::fs::File::create(&stderr_path).unwrap());
        let mut process = self.lab.spawn(command);
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            if text.contains("capturing on") {
                return process;
            }
            assert!(process.running(), "picket exited at start: {text}");
            assert!(started.elapsed() < Duration::from_secs(20), "picket did not start: {text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `FLOWS` x `PER_FLOW` marked datagrams, each flow from its own socket, about
    /// 1000 packets per second.
    fn send_udp(&self) {
        let script = format!(
            "import socket, time\n\
             for f in range({FLOWS}):\n\
             \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             \x20   for i in range({PER_FLOW}):\n\
             \x20       s.sendto(b'picket-afxdp flow %d datagram %d' % (f, i), ('{CAPTURE_IP}', 7000 + f))\n\
             \x20       time.sleep(0.001)\n\
             \x20   s.close()\n"
        );
        let out = self.lab.output(&self.sender, "python3", &["-c", &script]);
        assert!(out.status.success(), "sender failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Whether an XDP program is attached to the capture interface.
    fn xdp_attached(&self) -> bool {
        let out = self.lab.run(&self.capture, "ip", &["-d", "link", "show", "dev", CAPTURE_DEV]);
        String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
    }

    /// UDP datagrams the capture namespace's kernel stack received (delivered or not).
    fn stack_udp_datagrams(&self) -> u64 {
        let out = self.lab.run(&self.capture, "cat", &["/proc/net/snmp"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
        let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
        let field = |name: &str| -> u64 {
            let i = names.split_whitespace().position(|n| n == name).unwrap();
            values.split_whitespace().nth(i).unwrap().parse().unwrap()
        };
        field("InDatagrams") + field("NoPorts") + field("InErrors")
    }
}

/// The last eve `stats` event's `stats` object.
fn last_stats(events: &[serde_json::Value]) -> serde_json::Value {
    netlab::events_of(events, "stats").last().map(|e| e["stats"].clone()).expect("a stats event")
}

#[test]
fn af_xdp_captures_every_packet_over_both_queues_and_detaches() {
    skip_unless_possible!();
    let topo = Topology::new("axq");
    let logs = topo.path("logs");
    let stack_before = topo.stack_udp_datagrams();
    let yaml = topo.path("threads.yaml");
    let yaml = netlab::threads_yaml(&yaml).to_str().unwrap();
    let mut picket = topo.start_picket(&["--af-xdp=axcap0", "--workers", "2", "-c", yaml], &logs);
    let stderr = std::fs::read_to_string(logs.join("stderr")).unwrap();
    assert!(stderr.contains("af-xdp, 2 RX queues; passive"), "{stderr}");
    assert!(topo.xdp_attached(), "XDP program attached while capturing");
    topo.send_udp();
    let sent = (FLOWS * PER_FLOW) as u64;
    wait_for("the alerts of every datagram", Duration::from_secs(15), || {
        netlab::events_of(&netlab::read_eve(&logs.join("eve.json")), "alert").len() as u64 >= sent
    });
    // The redirected packets never reached the capture namespace's stack.
    assert_eq!(topo.stack_udp_datagrams(), stack_before, "AF_XDP must take the packets from the stack");
    picket.signal("TERM");
    let status = picket.wait(Duration::from_secs(20));
    assert!(status.success(), "picket exit status {status}");
    assert!(!topo.xdp_attached(), "XDP program left attached after SIGTERM");

    let events = netlab::read_eve(&logs.join("eve.json"));
    let alerts = netlab::events_of(&events, "alert");
    assert_eq!(alerts.len() as u64, sent, "one alert per datagram");
    assert!(alerts.iter().all(|a| a["alert"]["signature_id"] == 9100001));
    let stats = last_stats(&events);
    assert_eq!(stats["capture"]["kernel_packets"], sent, "kernel packets: {}", stats["capture"]);
    assert_eq!(stats["capture"]["kernel_drops"], 0, "{}", stats["capture"]);
    assert_eq!(stats["decoder"]["pkts"], sent, "picket decoded exactly what was sent");
    assert_eq!(stats["picket"]["capture"]["afxdp"]["rx_ring_full"], 0);
    // Both queues, hence both workers, carried packets.
    let threads = stats["threads"].as_object().expect("per-worker stats");
    let per_worker: Vec<u64> =
        threads.values().map(|t| t["decoder"]["pkts"].as_u64().unwrap_or(0)).filter(|n| *n > 0).collect();
    assert_eq!(per_worker.len(), 2, "packets per worker: {per_worker:?}");
    assert_eq!(per_worker.iter().sum::<u64>(), sent);
}

#[test]
fn af_xdp_restarts_after_kill_9_in_generic_mode() {
    skip_unless_possible!();
    let topo = Topology::new("axk");
    let mut first = topo.start_picket(&["--af-xdp=axcap0", "--workers", "2"], &topo.path("logs1"));
    first.signal("KILL");
    first.wait(Duration::from_secs(10));
    // The BPF link and the sockets died with the process.
    wait_for("XDP detached after kill -9", Duration::from_secs(5), || !topo.xdp_attached());
    // The second run attaches in generic mode (`force-xdp-mode: skb`): AF_XDP copy mode
    // works behind generic XDP too.
    let yaml = topo.path("picket.yaml");
    std::fs::write(&yaml, "af-xdp:\n  - interface: axcap0\n    force-xdp-mode: skb\n    threads: 1\n").unwrap();
    let logs = topo.path("logs2");
    let mut second = topo.start_picket(&["--af-xdp", "-c", yaml.to_str().unwrap()], &logs);
    let out = topo.lab.run(&topo.capture, "ip", &["link", "show", "dev", CAPTURE_DEV]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("xdpgeneric"), "generic XDP while capturing");
    topo.send_udp();
    let sent = (FLOWS * PER_FLOW) as usize;
    wait_for("alerts after the restart", Duration::from_secs(15), || {
        netlab::events_of(&netlab::read_eve(&logs.join("eve.json")), "alert").len() >= sent
    });
    second.signal("TERM");
    assert!(second.wait(Duration::from_secs(20)).success());
    assert!(!topo.xdp_attached());
}

#[test]
fn af_xdp_start_errors_are_one_line() {
    skip_unless_possible!();
    let mut lab = Lab::new("axe");
    let ns = lab.namespace("axe");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules"), RULES).unwrap();
    let rules = dir.path().join("rules");
    let logs = dir.path().join("logs");
    let picket = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend_from_slice(&["-S", rules.to_str().unwrap(), "-l", logs.to_str().unwrap()]);
        let out = lab.command(&ns, env!("CARGO_BIN_EXE_picket"), &all).stdin(Stdio::null()).output().unwrap();
        assert!(!out.status.success(), "picket {args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "one error line: {stderr}");
        errors[0].to_string()
    };
    let missing = picket(&["--af-xdp=axnosuch0"]);
    assert!(missing.contains("no interface axnosuch0"), "{missing}");

    // A bridge has no XDP in its driver: forcing driver mode is refused, and the
    // generic-mode attach made on the way is undone.
    lab.run(&ns, "ip", &["link", "add", "axdum0", "type", "bridge"]);
    lab.run(&ns, "ip", &["link", "set", "axdum0", "up"]);
    let yaml = dir.path().join("picket.yaml");
    std::fs::write(&yaml, "af-xdp:\n  - interface: axdum0\n    force-xdp-mode: drv\n").unwrap();
    let native = picket(&["--af-xdp", "-c", yaml.to_str().unwrap()]);
    assert!(native.contains("force-xdp-mode") && native.contains("axdum0 has no native XDP"), "{native}");
    let out = lab.run(&ns, "ip", &["-d", "link", "show", "dev", "axdum0"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("prog/xdp"), "nothing left attached");

    let simulate = picket(&["--af-xdp=axdum0", "--simulate-ips"]);
    assert!(simulate.contains("--simulate-ips"), "{simulate}");
}
