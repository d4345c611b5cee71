//! Log rotation of a live run, as logrotate does it: `mv eve.json eve.json.1`, then
//! SIGHUP. picket captures on a veth in a namespace while the other end sends UDP
//! datagrams a rule alerts on, each from its own source port; the rotations happen while
//! traffic flows and while the link is idle. Every datagram's alert must be in exactly
//! one of the rotated files or the new eve.json, and the idle rotation must create the
//! new file promptly without any event to write.
//!
//! Needs root, `ip netns` and python3; prints SKIPPED and returns otherwise. Traffic is
//! bounded (400 datagrams, a few seconds); the lab's guards remove the namespaces and
//! kill picket on every exit.

mod netlab;

use netlab::{events_of, read_eve, wait_for, Lab};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const SENDER_IP: &str = "10.77.0.1";
const SENSOR_IP: &str = "10.77.0.2";
const PORT: u16 = 9999;
const FIRST_SOURCE_PORT: u16 = 20000;
/// Datagrams sent while the first rotation happens, and after the idle one.
const DURING_ROTATION: u16 = 300;
const AFTER_IDLE: u16 = 100;
/// Gap between datagrams: 300 take about 3 s.
const GAP_SECONDS: f64 = 0.01;
/// Generous deadlines (not measurements).
const START_LIMIT: Duration = Duration::from_secs(20);
const EVENTS_LIMIT: Duration = Duration::from_secs(20);
/// The writer flushes at least every second, even idle: the new file comes well within this.
const REOPEN_LIMIT: Duration = Duration::from_secs(3);

/// `python3 -c SENDER FIRST COUNT GAP FROM TO PORT`: one datagram from each source port.
const SENDER: &str = "import socket,sys,time\n\
first,count,gap=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3])\n\
for port in range(first,first+count): s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); \
s.bind((sys.argv[4],port)); s.sendto(b'ROTATE-ME',(sys.argv[5],int(sys.argv[6]))); s.close(); time.sleep(gap)\n";

fn send(lab: &Lab, ns: &str, first: u16, count: u16) -> netlab::Guarded {
    let args = [
        "-c",
        SENDER,
        &first.to_string(),
        &count.to_string(),
        &GAP_SECONDS.to_string(),
        SENDER_IP,
        SENSOR_IP,
        &PORT.to_string(),
    ];
    lab.spawn(lab.command(ns, "python3", &args))
}

/// Source port → how many alerts name it, over the given eve files.
fn alerts_by_port(files: &[&Path]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for file in files {
        for alert in events_of(&read_eve(file), "alert") {
            *seen.entry(alert["src_port"].as_u64().unwrap_or(0)).or_insert(0) += 1;
        }
    }
    seen
}

fn alerts_in(path: &Path) -> usize {
    events_of(&read_eve(path), "alert").len()
}

#[test]
fn sighup_after_mv_continues_in_a_new_eve_json_and_loses_nothing() {
    if let Some(reason) = netlab::skip_reason(&["python3"]) {
        eprintln!("SKIPPED: log reopen test: {reason}");
        return;
    }
    let mut lab = Lab::new("rot");
    let (snd, cap) =
        lab.hosts(["snd", "cap"], ["v-snd", "v-cap"], [&format!("{SENDER_IP}/24"), &format!("{SENSOR_IP}/24")]);

    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rotate.rules");
    std::fs::write(
        &rules,
        format!("alert udp any any -> any {PORT} (msg:\"rotate\"; content:\"ROTATE-ME\"; sid:7;)\n"),
    )
    .unwrap();
    // The outputs: section of a sensor: eve alerts and stats, fast.log beside it.
    let yaml = dir.path().join("picket.yaml");
    std::fs::write(
        &yaml,
        "outputs:\n  - fast:\n      enabled: yes\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n      \
         types:\n        - alert\n        - stats\n",
    )
    .unwrap();
    let logs = dir.path().join("logs");
    let eve = logs.join("eve.json");
    let (rotated, rotated_idle) = (logs.join("eve.json.1"), logs.join("eve.json.2"));

    let picket = env!("CARGO_BIN_EXE_picket");
    let args = ["-i", "v-cap", "--workers", "1", "--no-pin", "-S", rules.to_str().unwrap(), "-c"];
    let mut command = lab.command(&cap, picket, &args);
    command.arg(&yaml).arg("-l").arg(&logs).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut sensor = lab.spawn(command);
    sensor.wait_started(&logs.join("picket-stats.json"), START_LIMIT);

    // Rotation under traffic: move the file a second into the sending, then SIGHUP.
    let mut sender = send(&lab, &snd, FIRST_SOURCE_PORT, DURING_ROTATION);
    wait_for("the first alerts", EVENTS_LIMIT, || eve.exists() && alerts_in(&eve) > 0);
    std::thread::sleep(Duration::from_secs(1));
    std::fs::rename(&eve, &rotated).unwrap();
    sensor.signal("HUP");
    assert!(sender.wait(EVENTS_LIMIT).success(), "sender");
    wait_for("the new eve.json to receive alerts", EVENTS_LIMIT, || eve.exists() && alerts_in(&eve) > 0);

    // Rotation while idle: every sent datagram is logged first, then the new file must
    // come without any event to write.
    wait_for("every alert of the first batch", EVENTS_LIMIT, || {
        alerts_by_port(&[&rotated, &eve]).len() == DURING_ROTATION as usize
    });
    std::fs::rename(&eve, &rotated_idle).unwrap();
    sensor.signal("HUP");
    let hup = Instant::now();
    wait_for("eve.json created again after SIGHUP on an idle link", REOPEN_LIMIT, || eve.exists());
    eprintln!("idle reopen: new eve.json after {:?}", hup.elapsed());
    let mut sender = send(&lab, &snd, FIRST_SOURCE_PORT + DURING_ROTATION, AFTER_IDLE);
    assert!(sender.wait(EVENTS_LIMIT).success(), "sender");
    wait_for("the alerts after the idle rotation", EVENTS_LIMIT, || alerts_in(&eve) == AFTER_IDLE as usize);

    sensor.signal("TERM");
    assert!(sensor.wait(EVENTS_LIMIT).success(), "picket exits cleanly");

    // None lost, none twice: each source port's alert is in exactly one file.
    let files = [rotated.as_path(), rotated_idle.as_path(), eve.as_path()];
    let seen = alerts_by_port(&files);
    let sent = (DURING_ROTATION + AFTER_IDLE) as usize;
    let expected: BTreeMap<u64, usize> =
        (FIRST_SOURCE_PORT..FIRST_SOURCE_PORT + sent as u16).map(|p| (p as u64, 1)).collect();
    let counts: Vec<usize> = files.iter().map(|f| alerts_in(f)).collect();
    assert_eq!(seen, expected, "alerts per file: {counts:?}");
    assert!(counts[0] > 0 && counts[1] > 0, "the rotation under traffic split the alerts: {counts:?}");
    // The final stats went to the newest file; the sensor saw no kernel drop.
    let stats = events_of(&read_eve(&eve), "stats").last().map(|s| (*s).clone()).expect("final stats in eve.json");
    assert_eq!(stats["stats"]["capture"]["kernel_drops"], 0, "{stats}");
    assert_eq!(stats["stats"]["picket"]["output"]["file_reopens"], 4, "eve and fast, twice: {stats}");
    // fast.log was reopened (not rotated) twice: one line per alert, nothing truncated.
    let fast = std::fs::read_to_string(logs.join("fast.log")).unwrap();
    assert_eq!(fast.lines().count(), sent, "fast.log");
}
