//! Daemon hygiene end to end, with the `picket` binary capturing on a veth in a
//! namespace: `--pidfile` refuses a live picket's file (live and offline runs) and
//! replaces a stale one; `-D` detaches once capturing (the parent prints the pid and
//! exits 0), keeps capturing, and SIGTERM stops it with final stats; `--user nobody`
//! runs with uid 65534 and only CAP_NET_ADMIN, and still captures and
//! alerts; inline NFQUEUE verdicts still flow after the drop (CAP_NET_ADMIN kept: without it
//! this test fails, every packet held) and a reject rule still answers (raw socket opened
//! before the drop, no CAP_NET_RAW); a `-D` start that fails reports its error and status
//! in the terminal.
//!
//! Needs root and iproute2 (`ip netns`); prints SKIPPED and returns otherwise.

mod netlab;

use netlab::{events_of, read_eve, wait_for, Lab};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const PICKET: &str = env!("CARGO_BIN_EXE_picket");
const RULE: &str =
    "alert udp any any -> any 9999 (msg:\"daemon test datagram\"; content:\"PICKET-DMN\"; sid:1502; rev:1;)\n";
/// Inline only: a datagram to port 9998 is blocked and answered (ICMP port unreachable).
const REJECT_RULE: &str =
    "reject udp any any -> any 9998 (msg:\"daemon test reject\"; content:\"PICKET-REJECT\"; sid:1503; rev:1;)\n";
/// Datagrams sent from A to B, each matching the rule once.
const DATAGRAMS: u64 = 5;
/// Larger than any pid_max: never a live process.
const DEAD_PID: &str = "4194305";
/// `nobody` on Debian.
const NOBODY_UID: u32 = 65534;
/// CAP_NET_ADMIN (12): what `--user` keeps.
const KEPT_CAPS: u64 = 1 << 12;
/// A small capture shipped with the tests, for the offline pidfile check.
const OFFLINE_PCAP: &str = "tests/fuzz-corpus/udp-trailing.pcap";

/// Namespace A (10.78.0.1, veth-a) sends to namespace B (10.78.0.2, veth-b), where picket runs.
struct Setup {
    lab: Lab,
    a: String,
    b: String,
}

fn setup(tag: &str) -> Setup {
    let mut lab = Lab::new(tag);
    let (a, b) = lab.hosts(["da", "db"], ["veth-a", "veth-b"], ["10.78.0.1/24", "10.78.0.2/24"]);
    Setup { lab, a, b }
}

impl Setup {
    /// [`DATAGRAMS`] UDP datagrams from A to B port 9999, 50 ms apart.
    fn send_datagrams(&self) {
        self.lab.send_datagrams(&self.a, "10.78.0.2", 9999, "PICKET-DMN", DATAGRAMS, 50);
    }
}

/// A process we did not start as a child (a daemon): SIGKILLed by pid on drop if alive.
struct PidGuard(u32);

impl PidGuard {
    fn alive(&self) -> bool {
        // A zombie is not alive: /proc/PID/stat's state is Z.
        std::fs::read_to_string(format!("/proc/{}/stat", self.0))
            .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
    }
}

impl Drop for PidGuard {
    fn drop(&mut self) {
        if self.alive() {
            let _ = Command::new("kill").args(["-KILL", &self.0.to_string()]).status();
        }
    }
}

fn read_pidfile(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A `/proc/PID/status` line's value ("Uid:\t0\t0\t0\t0" → "0\t0\t0\t0").
fn status_field(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .trim()
        .to_string()
}

#[test]
fn pidfile_refuses_a_live_picket_and_replaces_a_stale_file() {
    if let Some(reason) = netlab::skip_reason(&["python3"]) {
        println!("SKIPPED: {reason}");
        return;
    }
    let s = setup("pid");
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let pidfile = dir.path().join("picket.pid");
    std::fs::write(&pidfile, format!("{DEAD_PID}\n")).unwrap();
    let pidfile_arg = pidfile.to_str().unwrap();

    let mut command =
        s.lab.command(&s.b, PICKET, &["-i", "veth-b", "-l", logs.to_str().unwrap(), "--pidfile", pidfile_arg]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut picket = s.lab.spawn(command);
    picket.wait_started(&logs.join("picket-stats.json"), Duration::from_secs(30));
    // `ip netns exec` execs picket: the child's pid is picket's.
    assert_eq!(read_pidfile(&pidfile), Some(picket.pid()), "the stale pidfile is replaced with ours");
    assert_eq!(std::fs::metadata(&pidfile).unwrap().permissions().mode() & 0o777, 0o644);

    // A second live run and an offline run over the same pidfile are refused.
    let second = dir.path().join("logs2");
    let out = s.lab.output(&s.b, PICKET, &["-i", "veth-b", "-l", second.to_str().unwrap(), "--pidfile", pidfile_arg]);
    assert_eq!(out.status.code(), Some(1), "a second live run must refuse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("already running as pid {}", picket.pid())), "{err}");
    let pcap = Path::new(env!("CARGO_MANIFEST_DIR")).join(OFFLINE_PCAP);
    let out = Command::new(PICKET)
        .args(["-r", pcap.to_str().unwrap(), "-l", second.to_str().unwrap(), "--pidfile", pidfile_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "an offline run must refuse too");
    assert_eq!(read_pidfile(&pidfile), Some(picket.pid()), "the refusals leave the pidfile alone");

    picket.signal("TERM");
    assert!(picket.wait(Duration::from_secs(20)).success());
    assert!(!pidfile.exists(), "the pidfile is removed at exit");

    // An offline run writes and removes its pidfile as well.
    let out = Command::new(PICKET)
        .args(["-r", pcap.to_str().unwrap(), "-l", second.to_str().unwrap(), "--pidfile", pidfile_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!pidfile.exists());
}

#[test]
fn daemon_detaches_drops_to_nobody_and_keeps_capturing() {
    if let Some(reason) = netlab::skip_reason(&["python3"]) {
        println!("SKIPPED: {reason}");
        return;
    }
    let s = setup("dmn");
    let dir = tempfile::tempdir().unwrap();
    // The run's directory belongs to the user it becomes, as systemd's RuntimeDirectory=
    // would make it: the pidfile and the socket can be removed after the drop.
    std::os::unix::fs::chown(dir.path(), Some(NOBODY_UID), Some(NOBODY_UID)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let logs = dir.path().join("logs");
    let rules = dir.path().join("d.rules");
    std::fs::write(&rules, RULE).unwrap();
    let pidfile = dir.path().join("picket.pid");
    let socket = dir.path().join("ctl.sock");
    let socket_flag = format!("--unix-socket={}", socket.display());
    let args = [
        "-D",
        "-i",
        "veth-b",
        "-l",
        logs.to_str().unwrap(),
        "-S",
        rules.to_str().unwrap(),
        "--pidfile",
        pidfile.to_str().unwrap(),
        "--user",
        "nobody",
        &socket_flag,
    ];
    // The parent returns once the child captures; its output names the child.
    let out = s.lab.command(&s.b, PICKET, &args).stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "picket -D: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    let pid: u32 = stdout
        .split("running in the background as pid ")
        .nth(1)
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in: {stdout}"));
    let daemon = PidGuard(pid);
    assert!(daemon.alive(), "the daemon runs after its parent exited");
    assert_eq!(read_pidfile(&pidfile), Some(pid), "the pidfile holds the daemon's pid");
    // Detached: its own session, not our child.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    assert_eq!(fields[3], pid.to_string(), "session id is the daemon's own pid: {stat}");
    assert_ne!(fields[1], std::process::id().to_string(), "not our child");

    // Dropped to nobody with only the capture capabilities.
    assert_eq!(status_field(pid, "Uid"), format!("{NOBODY_UID}\t{NOBODY_UID}\t{NOBODY_UID}\t{NOBODY_UID}"));
    let cap_eff = u64::from_str_radix(&status_field(pid, "CapEff"), 16).unwrap();
    let cap_prm = u64::from_str_radix(&status_field(pid, "CapPrm"), 16).unwrap();
    assert_eq!(cap_eff, KEPT_CAPS, "CapEff {cap_eff:#x}");
    assert_eq!(cap_prm, KEPT_CAPS, "CapPrm {cap_prm:#x}");
    let socket_meta = std::fs::metadata(&socket).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&socket_meta), NOBODY_UID, "the socket is the user's");

    // It still captures and alerts: the ctl counters grow and eve.json gets the alerts.
    s.send_datagrams();
    wait_for("the daemon to count the datagrams", Duration::from_secs(10), || {
        let out = Command::new(PICKET)
            .args(["ctl", "--socket", socket.to_str().unwrap(), "iface-stat", "veth-b"])
            .output()
            .unwrap();
        let stat: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        stat["pkts"].as_u64().unwrap_or(0) >= DATAGRAMS
    });

    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    wait_for("the daemon to stop on SIGTERM", Duration::from_secs(20), || !daemon.alive());
    assert!(!pidfile.exists(), "the pidfile is removed at exit");
    assert!(!socket.exists(), "the socket is removed at exit");
    let events = read_eve(&logs.join("eve.json"));
    assert_eq!(events_of(&events, "alert").len() as u64, DATAGRAMS, "one alert per datagram");
    let last = events.last().unwrap();
    assert_eq!(last["event_type"], "stats", "final stats written by the unprivileged run");
    assert!(last["stats"]["decoder"]["pkts"].as_u64().unwrap_or(0) >= DATAGRAMS);
    let log_meta = std::fs::metadata(logs.join("eve.json")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&log_meta), NOBODY_UID, "eve.json is the user's (SIGHUP reopen)");
}

#[test]
fn a_failed_daemon_start_reaches_the_terminal() {
    if let Some(reason) = netlab::skip_reason(&[]) {
        println!("SKIPPED: {reason}");
        return;
    }
    let s = setup("dfl");
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let pidfile = dir.path().join("picket.pid");
    // The interface does not exist: the child fails after the fork.
    let out = s
        .lab
        .command(
            &s.b,
            PICKET,
            &["-D", "-i", "nosuch0", "-l", logs.to_str().unwrap(), "--pidfile", pidfile.to_str().unwrap()],
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the parent exits with the child's status");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nosuch0"), "the child's error reaches the terminal: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("background"));
    assert!(!pidfile.exists(), "a failed start leaves no pidfile");
    // An unknown user fails before anything starts.
    let out = s
        .lab
        .command(&s.b, PICKET, &["-D", "-i", "veth-b", "-l", logs.to_str().unwrap(), "--user", "no-such-user-pk"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such user"));
}

/// NFQUEUE verdicts go through nfnetlink, which checks CAP_NET_ADMIN on every message:
/// after `--user nobody` the kept capability must let every queued datagram through
/// (no `--queue-bypass`: a failed verdict would hold the packets).
#[test]
fn nfqueue_verdicts_flow_after_dropping_to_nobody() {
    if let Some(reason) = netlab::skip_reason(&["python3", "iptables"]) {
        println!("SKIPPED: {reason}");
        return;
    }
    let s = setup("dnq");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let logs = dir.path().join("logs");
    let rules = dir.path().join("q.rules");
    std::fs::write(&rules, format!("{RULE}{REJECT_RULE}")).unwrap();
    s.lab.run(&s.b, "iptables", &["-A", "INPUT", "-p", "udp", "-j", "NFQUEUE", "--queue-num", "0"]);
    let bound = dir.path().join("bound");
    let receiver_script = format!(
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('10.78.0.2', 9999))\n\
         open('{}', 'w').close()\ns.settimeout(10)\nn = 0\ntry:\n    while n < {DATAGRAMS}:\n        s.recv(100)\n        \
         n += 1\nexcept Exception:\n    pass\nprint(n)\n",
        bound.display()
    );
    let mut receiver_command = s.lab.command(&s.b, "python3", &["-c", &receiver_script]);
    receiver_command.stdout(Stdio::piped());
    let mut receiver = s.lab.spawn(receiver_command);
    wait_for("the receiver to bind", Duration::from_secs(10), || bound.exists());

    let args = ["-q", "0", "-l", logs.to_str().unwrap(), "-S", rules.to_str().unwrap(), "--user", "nobody"];
    let mut command = s.lab.command(&s.b, PICKET, &args);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut picket = s.lab.spawn(command);
    picket.wait_started(&logs.join("picket-stats.json"), Duration::from_secs(30));
    let pid = picket.pid();
    assert_eq!(status_field(pid, "Uid"), format!("{NOBODY_UID}\t{NOBODY_UID}\t{NOBODY_UID}\t{NOBODY_UID}"));
    assert_eq!(u64::from_str_radix(&status_field(pid, "CapEff"), 16).unwrap(), KEPT_CAPS);

    s.send_datagrams();
    receiver.wait(Duration::from_secs(20));
    let mut received = String::new();
    std::io::Read::read_to_string(receiver.0.stdout.as_mut().unwrap(), &mut received).unwrap();
    assert_eq!(received.trim(), DATAGRAMS.to_string(), "every queued datagram got its accept verdict");

    // A rejected datagram: picket drops it (the kernel never sees it, so cannot answer) and
    // answers with ICMP port unreachable through the raw socket opened before the drop.
    let probe = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.connect(('10.78.0.2', 9998))\n\
                 s.settimeout(5)\ns.send(b'PICKET-REJECT')\ntry:\n    s.recv(100)\n    print('answered')\n\
                 except ConnectionRefusedError:\n    print('refused')\nexcept socket.timeout:\n    print('timeout')\n";
    let out = s.lab.output(&s.a, "python3", &["-c", probe]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "refused", "picket's ICMP reply arrived");

    picket.signal("TERM");
    assert!(picket.wait(Duration::from_secs(20)).success());
    let events = read_eve(&logs.join("eve.json"));
    let alerts = events_of(&events, "alert");
    assert_eq!(alerts.iter().filter(|a| a["alert"]["signature_id"] == 1502).count() as u64, DATAGRAMS);
    let rejected: Vec<_> = alerts.iter().filter(|a| a["alert"]["signature_id"] == 1503).collect();
    assert_eq!(rejected.len(), 1, "the rejected datagram alerted once");
    assert_eq!(rejected[0]["alert"]["action"], "blocked", "{}", rejected[0]);
}
