//! A small network lab for end-to-end tests: network namespaces joined by veth pairs,
//! processes started inside them and killed when the test ends, and bounded waits.
//!
//! Use from a test file with `mod netlab;`. Everything needs root and iproute2; call
//! [`skip_reason`] first and return early (printing SKIPPED) when it gives a reason.
//! Namespace names carry the test process id and a tag, so tests running in parallel
//! never share one; dropping the [`Lab`] deletes its namespaces, which removes their veth
//! ends and routes with them. Traffic only ever flows between the lab's namespaces.

#![allow(dead_code)] // each test file uses its own part of the lab

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Why the lab cannot run here (not root, no `ip netns`, a missing program), if it cannot.
pub fn skip_reason(programs: &[&str]) -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref() != Some("0") {
        return Some("not running as root".into());
    }
    match Command::new("ip").args(["netns", "list"]).stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => {}
        _ => return Some("`ip netns` not available".into()),
    }
    for program in programs {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{program} not installed"));
        }
    }
    None
}

/// Runs `program args...` and panics with its stderr if it fails.
pub fn run(program: &str, args: &[&str]) -> Output {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Namespaces created by one test; deleted on drop.
pub struct Lab {
    tag: String,
    namespaces: Vec<String>,
}

impl Lab {
    /// An empty lab; `tag` names the test (short: interface and namespace names are
    /// limited in length).
    pub fn new(tag: &str) -> Lab {
        Lab { tag: format!("{}-{tag}", std::process::id()), namespaces: Vec::new() }
    }

    /// Creates namespace `role` (its loopback up) and returns its full name.
    pub fn namespace(&mut self, role: &str) -> String {
        let name = format!("pk-{role}-{}", self.tag);
        let _ = Command::new("ip").args(["netns", "del", &name]).stderr(Stdio::null()).status();
        run("ip", &["netns", "add", &name]);
        run("ip", &["-n", &name, "link", "set", "lo", "up"]);
        self.namespaces.push(name.clone());
        name
    }

    /// A veth pair: `dev_a` in `ns_a`, `dev_b` in `ns_b`, both up.
    pub fn link(&self, ns_a: &str, dev_a: &str, ns_b: &str, dev_b: &str) {
        run("ip", &["-n", ns_a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b]);
        run("ip", &["-n", ns_a, "link", "set", dev_a, "up"]);
        run("ip", &["-n", ns_b, "link", "set", dev_b, "up"]);
    }

    /// Two new namespaces joined by a veth pair, each end up with its address:
    /// `hosts(["snd", "ids"], ["veth-s", "veth-i"], ["10.96.0.1/24", "10.96.0.2/24"])`.
    /// Returns the two namespace names.
    pub fn hosts(&mut self, roles: [&str; 2], devs: [&str; 2], cidrs: [&str; 2]) -> (String, String) {
        let a = self.namespace(roles[0]);
        let b = self.namespace(roles[1]);
        self.link(&a, devs[0], &b, devs[1]);
        self.address(&a, devs[0], cidrs[0]);
        self.address(&b, devs[1], cidrs[1]);
        (a, b)
    }

    /// From namespace `ns`, `count` UDP datagrams `PREFIX-0`, `PREFIX-1`, ... to `dst:port`,
    /// `gap_ms` apart (python3 in the namespace); panics if the sender fails.
    pub fn send_datagrams(&self, ns: &str, dst: &str, port: u16, prefix: &str, count: u64, gap_ms: u64) {
        let script = format!(
            "import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor i in range({count}):\n    \
             s.sendto(b'{prefix}-%d' % i, ('{dst}', {port}))\n    time.sleep({gap_ms} / 1000)\n"
        );
        let out = self.output(ns, "python3", &["-c", &script]);
        assert!(out.status.success(), "python3: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// `ip -n NS addr add CIDR dev DEV`.
    pub fn address(&self, ns: &str, dev: &str, cidr: &str) {
        run("ip", &["-n", ns, "addr", "add", cidr, "dev", dev]);
    }

    /// `ip -n NS route add ...`, e.g. `route(ns, &["default", "via", "10.0.0.254"])`.
    pub fn route(&self, ns: &str, route: &[&str]) {
        let mut args = vec!["-n", ns, "route", "add"];
        args.extend_from_slice(route);
        run("ip", &args);
    }

    /// Runs a command in `ns` to completion and returns its output (not checked).
    pub fn output(&self, ns: &str, program: &str, args: &[&str]) -> Output {
        self.command(ns, program, args).output().unwrap_or_else(|e| panic!("cannot run {program} in {ns}: {e}"))
    }

    /// Runs a command in `ns` and panics if it fails.
    pub fn run(&self, ns: &str, program: &str, args: &[&str]) -> Output {
        let mut all = vec!["netns", "exec", ns, program];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// A command to run in `ns` (for custom stdio or environment).
    pub fn command(&self, ns: &str, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]).args(args);
        c
    }

    /// Starts `command` in the background; it is killed when the guard drops.
    pub fn spawn(&self, mut command: Command) -> Guarded {
        Guarded(command.spawn().expect("spawn a lab process"))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Where each thread of a process that hangs is: the innermost frames of `gdb`'s
/// backtraces (one line per frame that names a function), or each thread's kernel wait
/// channel when gdb is not installed.
fn stacks(pid: u32) -> String {
    let gdb = Command::new("gdb").args(["-p", &pid.to_string(), "-batch", "-ex", "thread apply all bt 12"]).output();
    if let Some(out) = gdb.ok().filter(|o| o.status.success()) {
        let text = String::from_utf8_lossy(&out.stdout);
        return text.lines().filter(|l| l.starts_with("Thread ") || l.starts_with('#')).collect::<Vec<_>>().join("\n");
    }
    let tasks =
        std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().collect::<Vec<_>>()).unwrap_or_default();
    let mut out = String::new();
    for task in tasks {
        let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default().trim().to_string();
        out.push_str(&format!("{} wchan={}\n", read("comm"), read("wchan")));
    }
    out
}

/// A child process killed (by its own pid) if the test ends before it does.
pub struct Guarded(pub Child);

impl Guarded {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Sends `signal` (e.g. "TERM", "KILL") to the process.
    pub fn signal(&self, signal: &str) {
        run("kill", &[&format!("-{signal}"), &self.0.id().to_string()]);
    }

    /// Waits for the process to exit, at most `limit`.
    pub fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().expect("wait for a lab process") {
                return status;
            }
            if started.elapsed() >= limit {
                panic!("process {} did not exit within {limit:?}; its threads:\n{}", self.0.id(), stacks(self.0.id()));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }

    /// Waits, at most `limit`, until a picket run has written its first stats snapshot
    /// (`LOGDIR/picket-stats.json`: its ports are open and capturing); panics with its
    /// stderr (when piped) if it exits first.
    pub fn wait_started(&mut self, snapshot: &Path, limit: Duration) {
        wait_for("picket to start capturing", limit, || {
            if let Ok(Some(status)) = self.0.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.0.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("picket exited early ({status}): {err}");
            }
            snapshot.exists()
        });
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Polls `done` every 20 ms; panics naming `what` after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Every line of an eve.json as JSON (panics on a line that is not).
pub fn read_eve(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l}: {e}")))
        .collect()
}

/// The eve events of one `event_type`.
pub fn events_of<'a>(events: &'a [serde_json::Value], event_type: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event_type"] == event_type).collect()
}

/// A configuration that writes what picket writes without one (fast.log, eve.json with
/// every type, stats.log) and adds the per-worker `threads` object to eve `stats`
/// (`stats: threads: yes`; off by default, as in Suricata). Written to `path`.
#[allow(dead_code)]
pub fn threads_yaml(path: &Path) -> &Path {
    std::fs::write(
        path,
        "outputs:\n  - fast:\n      enabled: yes\n  - eve-log:\n      enabled: yes\n      types:\n        - alert\n        \
         - drop\n        - flow\n        - http\n        - dns\n        - tls\n        - stats:\n            threads: yes\n  \
         - stats:\n      enabled: yes\n",
    )
    .unwrap();
    path
}
