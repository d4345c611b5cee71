//! Rule reload without loss, end to end: `picket -i` captures on a veth in namespace
//! `ids` with two workers while namespace `snd` sends a bounded, paced stream of UDP
//! packets on a few long-lived flows; meanwhile the rules file changes and picket gets
//! `SIGUSR2` (what the systemd unit's `ExecReload=` sends).
//!
//! - `new_rules_apply_and_nothing_is_lost`: the reloaded set adds a rule that matches
//!   packets already flowing; its alerts appear. Every packet sent is counted by picket,
//!   none dropped by the kernel, and every packet the old rule matches alerts (none went
//!   uninspected across the swap). A flowbit set on a flow before the reload is seen by a
//!   rule of the new set after it (state carried over).
//! - `broken_rules_keep_the_running_engine`: the file becomes unparsable; the reload is
//!   refused with a line on stderr naming the file, and the old rule keeps alerting on every
//!   packet.
//!
//! Needs root, iproute2 and python3; prints SKIPPED and returns otherwise.

mod netlab;

use netlab::{events_of, read_eve, Guarded, Lab};
use std::process::Stdio;
use std::time::Duration;

const PORT: u16 = 9999;
/// Packets the sender sends (bounded), and how fast.
const PACKETS: u32 = 1600;
const PER_SECOND: u32 = 250;

/// Sends PACKETS UDP packets to PORT over 8 flows, alternating OLD-MARK and NEW-MARK
/// payloads; one more flow sends LOGIN first and CMD every 20th packet. Prints
/// `sent old new cmd`.
const SENDER: &str = r#"
import socket, sys, time
dst, port, total, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# Resolve the neighbour first (a port the capture filter leaves out).
w = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
w.sendto(b"warm-up", (dst, port + 1))
time.sleep(0.5)
flows = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(8)]
auth = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
auth.sendto(b"LOGIN user", (dst, port))
sent, old, new, cmd = 1, 0, 0, 0
start = time.time()
for i in range(total - 1):
    if i % 20 == 19:
        auth.sendto(b"CMD %d" % i, (dst, port)); cmd += 1
    elif i % 2 == 0:
        flows[i % 8].sendto(b"OLD-MARK %d" % i, (dst, port)); old += 1
    else:
        flows[i % 8].sendto(b"NEW-MARK %d" % i, (dst, port)); new += 1
    sent += 1
    delay = start + (i + 1) / rate - time.time()
    if delay > 0:
        time.sleep(delay)
print(sent, old, new, cmd)
"#;

const OLD_RULES: &str = r#"alert udp any any -> any 9999 (msg:"old mark"; content:"OLD-MARK"; sid:1; rev:1;)
alert udp any any -> any 9999 (msg:"login"; content:"LOGIN"; flowbits:set,auth; flowbits:noalert; sid:3; rev:1;)
"#;

/// The reloaded set: the old rules, a rule on packets already flowing, and one that needs
/// the flowbit set before the reload (after another flowbit, so that ids shift).
const NEW_RULES: &str = r#"alert udp any any -> any 9999 (msg:"shift"; content:"NEVER-SENT"; flowbits:set,aaa; sid:5; rev:1;)
alert udp any any -> any 9999 (msg:"old mark"; content:"OLD-MARK"; sid:1; rev:1;)
alert udp any any -> any 9999 (msg:"login"; content:"LOGIN"; flowbits:set,auth; flowbits:noalert; sid:3; rev:1;)
alert udp any any -> any 9999 (msg:"new mark"; content:"NEW-MARK"; sid:2; rev:1;)
alert udp any any -> any 9999 (msg:"cmd after login"; content:"CMD"; flowbits:isset,auth; sid:4; rev:1;)
"#;

const BROKEN_RULES: &str = r#"alert udp any any -> any 9999 (msg:"old mark"; content:"OLD-MARK"; sid:1; rev:1;)
alert udp any any -> any 9999 (msg:"broken"; content:"NEW-MARK"; sid:abc;)
"#;

/// The two namespaces, picket capturing in `ids` and its files.
struct Run {
    lab: Lab,
    snd: String,
    ids: String,
    dir: tempfile::TempDir,
    picket: Guarded,
}

impl Run {
    fn start(tag: &str, rules: &str) -> Run {
        let mut lab = Lab::new(tag);
        let (snd, ids) = lab.hosts(["snd", "ids"], ["veth-s", "veth-i"], ["10.96.0.1/24", "10.96.0.2/24"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("local.rules"), rules).unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
        let rules_path = dir.path().join("local.rules");
        let filter = format!("udp and dst port {PORT}");
        let args = [
            "-i",
            "veth-i",
            "-S",
            rules_path.to_str().unwrap(),
            "-l",
            logs.to_str().unwrap(),
            "--workers",
            "2",
            "-k",
            "none",
            &filter,
        ];
        let mut command = lab.command(&ids, env!("CARGO_BIN_EXE_picket"), &args);
        command.stdout(Stdio::null()).stderr(stderr);
        let mut picket = lab.spawn(command);
        picket.wait_started(&logs.join("picket-stats.json"), Duration::from_secs(20));
        Run { lab, snd, ids, dir, picket }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.path("stderr")).unwrap_or_default()
    }

    /// Starts the sender; its output is `sent old new cmd`.
    fn send(&self) -> Guarded {
        let mut command = self.lab.command(
            &self.snd,
            "python3",
            &["-c", SENDER, "10.96.0.2", &PORT.to_string(), &PACKETS.to_string(), &PER_SECOND.to_string()],
        );
        command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        self.lab.spawn(command)
    }

    /// Replaces the rules file and sends SIGUSR2; waits for picket's answer on stderr.
    fn reload(&self, rules: &str, answer: &str) {
        std::fs::write(self.path("local.rules"), rules).unwrap();
        self.picket.signal("USR2");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !self.stderr().contains(answer) {
            assert!(std::time::Instant::now() < deadline, "no '{answer}' from picket in 30 s: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the sender and ends picket; returns the sender's counts and eve.json.
    fn finish(mut self, mut sender: Guarded) -> ([u32; 4], Vec<serde_json::Value>, String) {
        sender.wait(Duration::from_secs(60));
        let mut out = String::new();
        use std::io::Read;
        sender.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let counts: Vec<u32> = out.split_whitespace().map(|n| n.parse().unwrap()).collect();
        assert_eq!(counts.len(), 4, "sender output: {out}");
        // Let the last packets reach the rings before stopping.
        std::thread::sleep(Duration::from_millis(500));
        self.picket.signal("TERM");
        let status = self.picket.wait(Duration::from_secs(30));
        let stderr = self.stderr();
        assert!(status.success(), "picket failed: {stderr}");
        let eve = read_eve(&self.dir.path().join("logs/eve.json"));
        let _ = &self.ids;
        ([counts[0], counts[1], counts[2], counts[3]], eve, stderr)
    }
}

fn alerts_of(eve: &[serde_json::Value], sid: u64) -> usize {
    events_of(eve, "alert").iter().filter(|e| e["alert"]["signature_id"] == sid).count()
}

/// The last eve `stats` event's `stats` (the final one, written at exit).
fn final_stats(eve: &[serde_json::Value]) -> serde_json::Value {
    events_of(eve, "stats").last().map(|e| e["stats"].clone()).expect("a stats event")
}

fn skipped() -> bool {
    match netlab::skip_reason(&["python3"]) {
        Some(reason) => {
            println!("SKIPPED: {reason}");
            true
        }
        None => false,
    }
}

#[test]
fn new_rules_apply_and_nothing_is_lost() {
    if skipped() {
        return;
    }
    let run = Run::start("rld", OLD_RULES);
    let sender = run.send();
    // Reload while the sender is about a third through.
    std::thread::sleep(Duration::from_secs(2));
    run.reload(NEW_RULES, "rules reloaded");
    let ([sent, old, new, cmd], eve, stderr) = run.finish(sender);

    let stats = final_stats(&eve);
    assert_eq!(stats["capture"]["kernel_drops"], 0, "{stats}");
    assert_eq!(stats["decoder"]["pkts"], u64::from(sent), "picket counted every packet sent: {stats}");
    assert_eq!(alerts_of(&eve, 1), old as usize, "every OLD-MARK packet alerted, across the swap\n{stderr}");
    let new_alerts = alerts_of(&eve, 2);
    assert!(new_alerts > 0 && new_alerts < new as usize, "the new rule alerts after the reload: {new_alerts}");
    let cmd_alerts = alerts_of(&eve, 4);
    assert!(
        cmd_alerts > 0 && cmd_alerts < cmd as usize,
        "the flowbit set before the reload carried over: {cmd_alerts}"
    );
    assert_eq!(alerts_of(&eve, 5), 0);
    assert_eq!(stats["picket"]["reload"]["count"], 1, "{stats}");
    assert_eq!(stats["picket"]["reload"]["failures"], 0, "{stats}");
    let engines = &stats["detect"]["engines"];
    assert_eq!(engines[0]["rules_loaded"], 5, "{engines}");
    assert_eq!(engines[0]["rules_failed"], 0, "{engines}");
    assert!(engines[0]["last_reload"].as_str().is_some_and(|t| t.len() > 10), "{engines}");
}

#[test]
fn broken_rules_keep_the_running_engine() {
    if skipped() {
        return;
    }
    let run = Run::start("rlb", OLD_RULES);
    let sender = run.send();
    std::thread::sleep(Duration::from_secs(2));
    run.reload(BROKEN_RULES, "rule reload failed");
    let ([_, old, _, _], eve, stderr) = run.finish(sender);

    let failure = stderr.lines().find(|l| l.contains("rule reload failed")).unwrap();
    assert!(failure.contains("local.rules:2"), "the failure names file and line: {failure}");
    assert!(stderr.contains("reload: rule error"), "{stderr}");
    assert_eq!(alerts_of(&eve, 1), old as usize, "the running rules kept alerting on every packet");
    assert_eq!(alerts_of(&eve, 2), 0);
    let stats = final_stats(&eve);
    assert_eq!(stats["capture"]["kernel_drops"], 0, "{stats}");
    assert_eq!(stats["picket"]["reload"]["count"], 0, "{stats}");
    assert_eq!(stats["picket"]["reload"]["failures"], 1, "{stats}");
    assert_eq!(stats["detect"]["engines"][0]["rules_loaded"], 2, "the running rules: {stats}");
}
