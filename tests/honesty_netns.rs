//! Live runs that must stay truthful (issue #16): a worker that panics ends the run with
//! an error naming it and the stats so far; every stats output keeps kernel packets at
//! least the packets inspected, per worker, with totals equal to the sum of the workers.
//!
//! Needs root, iproute2 and python3; prints SKIPPED and returns otherwise.

mod netlab;

use netlab::{read_eve, skip_reason, Lab};
use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn sensor(lab: &mut Lab) -> (String, String) {
    lab.hosts(["snd", "ids"], ["v-snd", "v-ids"], ["10.95.0.1/24", "10.95.0.2/24"])
}

#[test]
fn honesty_live_worker_panic_ends_the_run_with_an_error_and_the_stats() {
    if let Some(reason) = skip_reason(&["ip", "python3"]) {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let mut lab = Lab::new("hpanic");
    let (snd, ids) = sensor(&mut lab);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let picket = env!("CARGO_BIN_EXE_picket");
    let mut command = lab.command(&ids, picket, &["-i", "v-ids", "--workers", "1", "--no-pin", "-l"]);
    command.arg(&logs).env("PICKET_FAULT", "worker-panic@5").env("RUST_BACKTRACE", "0");
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut run = lab.spawn(command);
    run.wait_started(&logs.join("picket-stats.json"), LIMIT);
    lab.send_datagrams(&snd, "10.95.0.2", 9999, "PANIC", 20, 20);
    // No SIGTERM: the dead worker alone must end the run.
    let status = run.wait(LIMIT);
    let mut stderr = String::new();
    run.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("picket: error:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(error.contains("worker W#01 panicked") && error.contains("worker panic at packet 5"), "{error}");
    let events = read_eve(&logs.join("eve.json"));
    let stats = events.iter().rev().find(|e| e["event_type"] == "stats").expect("final stats event");
    assert!(stats["stats"]["capture"]["kernel_packets"].as_u64().unwrap() >= 4, "{stats}");
    assert!(std::fs::read_to_string(logs.join("stats.log")).unwrap().contains("capture.kernel_packets"));
}

/// kernel_packets >= packets for every worker and the totals, totals = sum of workers.
fn check_counters(where_: &str, totals: (u64, u64), workers: &[(u64, u64)]) {
    for (i, &(kernel, inspected)) in workers.iter().enumerate() {
        assert!(kernel >= inspected, "{where_}: worker {i}: kernel_packets {kernel} < packets {inspected}");
    }
    let sum = workers.iter().fold((0, 0), |acc, w| (acc.0 + w.0, acc.1 + w.1));
    assert_eq!(totals, sum, "{where_}: totals are the sum of the workers");
    assert!(totals.0 >= totals.1, "{where_}: total kernel_packets < packets");
}

#[test]
fn honesty_live_stats_never_show_more_packets_than_the_kernel_delivered() {
    if let Some(reason) = skip_reason(&["ip", "python3"]) {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let mut lab = Lab::new("hcount");
    let (snd, ids) = sensor(&mut lab);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let picket = env!("CARGO_BIN_EXE_picket");
    let yaml = dir.path().join("threads.yaml");
    let yaml = netlab::threads_yaml(&yaml).to_str().unwrap();
    let args = ["-i", "v-ids", "--workers", "2", "--no-pin", "--set", "stats.interval=1", "-c", yaml, "-l"];
    let mut command = lab.command(&ids, picket, &args);
    command.arg(&logs).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut run = lab.spawn(command);
    let snapshot = logs.join("picket-stats.json");
    run.wait_started(&snapshot, LIMIT);
    // Snapshots read while traffic flows, then the final ones.
    let mut seen = 0;
    let sender = std::thread::scope(|s| {
        let sending = s.spawn(|| lab.send_datagrams(&snd, "10.95.0.2", 9999, "COUNT", 400, 5));
        while !sending.is_finished() {
            if let Ok(text) = std::fs::read_to_string(&snapshot) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                    seen += check_snapshot(&v);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        sending.join()
    });
    sender.unwrap();
    run.signal("TERM");
    assert!(run.wait(LIMIT).success());
    let events = read_eve(&logs.join("eve.json"));
    let stats: Vec<_> = events.iter().filter(|e| e["event_type"] == "stats").collect();
    assert!(stats.len() >= 2, "periodic and final stats events");
    for event in &stats {
        let s = &event["stats"];
        let workers: Vec<(u64, u64)> = s["threads"]
            .as_object()
            .unwrap()
            .values()
            .filter(|t| t["capture"]["kernel_packets"].is_u64())
            .map(|t| (t["capture"]["kernel_packets"].as_u64().unwrap(), t["decoder"]["pkts"].as_u64().unwrap()))
            .collect();
        assert_eq!(workers.len(), 2, "{s}");
        let totals = (s["capture"]["kernel_packets"].as_u64().unwrap(), s["decoder"]["pkts"].as_u64().unwrap());
        check_counters("eve stats", totals, &workers);
    }
    let stats_log = std::fs::read_to_string(logs.join("stats.log")).unwrap();
    let value = |name: &str, thread: &str| -> Option<u64> {
        stats_log.lines().rev().find_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            (cols.len() == 3 && cols[0] == name && cols[1] == thread).then(|| cols[2].parse().unwrap())
        })
    };
    let worker = |t: &str| (value("capture.kernel_packets", t).unwrap(), value("decoder.pkts", t).unwrap());
    let totals = (value("capture.kernel_packets", "Total").unwrap(), value("decoder.pkts", "Total").unwrap());
    check_counters("stats.log", totals, &[worker("W#01"), worker("W#02")]);
    assert!(totals.1 >= 400, "every datagram inspected: {totals:?}");
    eprintln!("checked {seen} live snapshots");
}

/// picket-stats.json: per worker packets and kernel drops; where a worker carries kernel
/// packets, at least the packets. Returns 1 when it held workers.
fn check_snapshot(v: &serde_json::Value) -> usize {
    let Some(workers) = v["workers"].as_array() else { return 0 };
    for w in workers {
        assert!(w["packets"].is_u64() && w["drops"].is_u64(), "picket-stats.json: {w}");
        if let (Some(kernel), Some(packets)) = (w["kernel_packets"].as_u64(), w["packets"].as_u64()) {
            assert!(kernel >= packets, "picket-stats.json: {w}");
        }
    }
    1
}
