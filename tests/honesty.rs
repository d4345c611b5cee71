//! Nothing skipped in silence, no hang on a fault (issue #16): a worker that panics ends
//! the run with an error and the stats so far; every readable file of `-r DIR` is read and
//! every unreadable one reported and counted; eve.json holds only whole lines.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn picket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_picket"))
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap")
}

/// Waits for `child` at most `limit`; a run still going then is killed and fails the test
/// (a hang is the bug these tests look for).
fn wait_bounded(mut child: Child, limit: Duration) -> (ExitStatus, String, String) {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
            return (out.status, text(&out.stdout), text(&out.stderr));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("picket did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn picket")
}

/// Every line of eve.json, each of which must be a whole JSON object.
fn eve_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("eve.json")).expect("eve.json written");
    assert!(text.is_empty() || text.ends_with('\n'), "eve.json ends in a partial line");
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad eve line {l:?}: {e}"))).collect()
}

fn last_stats(events: &[Value]) -> &Value {
    events.iter().rev().find(|e| e["event_type"] == "stats").expect("an eve stats event")
}

/// Packets a clean run inspects in the sample.
fn sample_packets() -> u64 {
    let logs = tempfile::tempdir().unwrap();
    let out = picket().args(["-r", sample().to_str().unwrap(), "-l", logs.path().to_str().unwrap()]).output();
    assert!(out.unwrap().status.success());
    last_stats(&eve_lines(logs.path()))["stats"]["decoder"]["pkts"].as_u64().unwrap()
}

/// The sample's records `copies` times over: a capture large enough that the reader is
/// still reading (and a dead worker's ring fills up) when a worker panics.
fn repeated_sample(path: &Path, copies: usize) {
    let bytes = std::fs::read(sample()).unwrap();
    let mut out = bytes.clone();
    for _ in 1..copies {
        out.extend_from_slice(&bytes[24..]);
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn honesty_worker_panic_ends_the_run_with_an_error_and_the_stats_so_far() {
    let input = tempfile::tempdir().unwrap();
    let sample = input.path().join("big.pcap");
    repeated_sample(&sample, 200);
    let all = sample_packets() * 200;
    for mode in [&["--workers", "2"][..], &["--runmode", "single"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let child = spawn(
            picket()
                .args(["-r", sample.to_str().unwrap(), "-l", dir.path().to_str().unwrap(), "-k", "none"])
                .args(mode)
                .env("PICKET_FAULT", "worker-panic@50")
                .env("RUST_BACKTRACE", "0"),
        );
        // The sample takes well under a second; a hang would run into the bound.
        let (status, stdout, stderr) = wait_bounded(child, Duration::from_secs(60));
        assert_eq!(status.code(), Some(1), "{mode:?}: {stderr}");
        let error = stderr.lines().find(|l| l.starts_with("picket: error:")).unwrap_or_else(|| panic!("{stderr}"));
        assert!(
            error.contains("worker W#0") && error.contains("worker panic at packet 50"),
            "{mode:?}: the error names the worker and the panic: {error}"
        );
        // The stats gathered so far: eve stats event, stats.log, the exit table.
        let events = eve_lines(dir.path());
        let pkts = last_stats(&events)["stats"]["decoder"]["pkts"].as_u64().unwrap();
        // Single: the packets before the 50th. Workers: the other worker may finish its
        // share, the dead one's packets from the 50th on are missing.
        assert!(pkts > 0 && pkts < all, "{mode:?}: packets inspected before the panic: {pkts} of {all}");
        let stats_log = std::fs::read_to_string(dir.path().join("stats.log")).unwrap();
        assert!(stats_log.contains("decoder.pkts"), "{stats_log}");
        assert!(stdout.contains("W#01") && stdout.contains("total"), "{stdout}");
    }
}

/// A directory of good captures, a text file, a dangling symlink, a capture damaged in the
/// middle and one cut short at its end.
fn mixed_directory(dir: &Path) -> u64 {
    let bytes = std::fs::read(sample()).unwrap();
    std::fs::write(dir.join("a-good.pcap"), &bytes).unwrap();
    std::fs::write(dir.join("b-notes.txt"), "not a capture").unwrap();
    std::os::unix::fs::symlink("/nonexistent/capture.pcap", dir.join("c-dangling.pcap")).unwrap();
    // The third record's caplen made absurd: two packets, then damage.
    let mut damaged = bytes.clone();
    let mut offset = 24;
    for _ in 0..2 {
        let caplen = u32::from_le_bytes(damaged[offset + 8..offset + 12].try_into().unwrap()) as usize;
        offset += 16 + caplen;
    }
    damaged[offset + 8..offset + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(dir.join("d-damaged.pcap"), &damaged).unwrap();
    std::fs::write(dir.join("e-cut.pcap"), &bytes[..bytes.len() - 100]).unwrap();
    std::fs::write(dir.join("f-good.pcap"), &bytes).unwrap();
    offset as u64
}

#[test]
fn honesty_directory_reads_every_capture_and_reports_every_skipped_file() {
    let input = tempfile::tempdir().unwrap();
    let damaged_at = mixed_directory(input.path());
    let logs = tempfile::tempdir().unwrap();
    let child = spawn(picket().args(["-r", input.path().to_str().unwrap(), "-l", logs.path().to_str().unwrap()]));
    let (status, _, stderr) = wait_bounded(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(3), "skipped input has its own exit status: {stderr}");
    for (file, what) in [
        ("b-notes.txt", "not a pcap or pcapng file".to_string()),
        ("c-dangling.pcap", "cannot open".to_string()),
        ("d-damaged.pcap", format!("corrupt capture at byte {damaged_at} after 2 packets")),
        ("e-cut.pcap", "truncated capture at byte".to_string()),
    ] {
        assert!(
            stderr.lines().any(|l| l.starts_with("picket: warning:") && l.contains(file) && l.contains(&what)),
            "{file}: {what} reported: {stderr}"
        );
    }
    assert!(stderr.lines().any(|l| l.contains("d-damaged.pcap") && l.ends_with("read up to the break")), "{stderr}");
    // Both good files, the two damaged ones up to the damage: nothing readable skipped.
    let one = sample_packets();
    let events = eve_lines(logs.path());
    let stats = &last_stats(&events)["stats"];
    let pkts = stats["decoder"]["pkts"].as_u64().unwrap();
    assert!(pkts > 2 * one + 2 && pkts < 3 * one + 2, "{pkts} packets, {one} per good file");
    // picket's own counters: under `picket` in eve (outside Suricata's schema).
    let capture = &stats["picket"]["capture"];
    assert_eq!(
        (capture["files_read"].as_u64(), capture["files_damaged"].as_u64(), capture["files_failed"].as_u64()),
        (Some(4), Some(2), Some(2)),
        "{capture}"
    );
    let stats_log = std::fs::read_to_string(logs.path().join("stats.log")).unwrap();
    assert!(stats_log.lines().any(|l| l.starts_with("capture.files_failed") && l.ends_with("| 2")), "{stats_log}");
}

#[test]
fn honesty_a_capture_cut_short_or_damaged_keeps_exit_status_zero() {
    let input = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample()).unwrap();
    std::fs::write(input.path().join("cut.pcap"), &bytes[..bytes.len() - 100]).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out =
        picket().args(["-r", input.path().to_str().unwrap(), "-l", logs.path().to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cut.pcap: truncated capture at byte"), "{stderr}");
    let events = eve_lines(logs.path());
    assert_eq!(last_stats(&events)["stats"]["picket"]["capture"]["files_damaged"].as_u64(), Some(1));
}

/// A named pipe under `dir` fed with `copies` times the sample by a thread, 256 KiB every
/// 20 ms: an offline run that lasts seconds whatever the machine's speed. The feeder
/// stops when the reader goes away.
fn paced_capture(dir: &Path, copies: usize) -> PathBuf {
    let fifo = dir.join("paced.pcap");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let big = dir.join("source.pcap");
    repeated_sample(&big, copies);
    let path = fifo.clone();
    std::thread::spawn(move || {
        use std::io::Write;
        let bytes = std::fs::read(&big).unwrap();
        let Ok(mut out) = std::fs::OpenOptions::new().write(true).open(&path) else { return };
        for chunk in bytes.chunks(256 << 10) {
            if out.write_all(chunk).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    fifo
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -{name}");
}

/// Waits until `path` holds something (at most `limit`).
fn wait_non_empty(path: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    while std::fs::metadata(path).map_or(0, |m| m.len()) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Item 7: SIGTERM stops an offline run cleanly: reading stops, the workers drain, the
/// stats of what was read are written (eve stats event, stats.log, exit table), eve.json
/// ends on a whole line, and the exit status is 0 (as a live run's, and Suricata's).
#[test]
fn honesty_sigterm_stops_an_offline_run_with_final_stats() {
    let input = tempfile::tempdir().unwrap();
    let all = sample_packets() * 1000;
    let fifo = paced_capture(input.path(), 1000);
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(picket().args(["-r", fifo.to_str().unwrap(), "-l", dir.path().to_str().unwrap(), "-k", "none"]));
    wait_non_empty(&dir.path().join("eve.json"), Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "TERM");
    let (status, stdout, stderr) = wait_bounded(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stopped by signal after"), "{stderr}");
    let events = eve_lines(dir.path());
    let stats = &last_stats(&events)["stats"];
    let pkts = stats["decoder"]["pkts"].as_u64().unwrap();
    assert!(pkts > 0 && pkts < all, "packets inspected before the signal: {pkts} of {all}");
    let stats_log = std::fs::read_to_string(dir.path().join("stats.log")).unwrap();
    let total = stats_log.lines().find(|l| l.starts_with("decoder.pkts") && l.contains("Total")).unwrap();
    let in_log: u64 = total.rsplit('|').next().unwrap().trim().parse().unwrap();
    assert_eq!(in_log, pkts, "stats.log and the eve stats event agree");
    assert!(stdout.contains("total"), "the exit table: {stdout}");
}

/// Item 6: eve.json is written a whole line at a time, so a run killed at any moment
/// leaves only whole lines.
#[test]
fn honesty_sigkill_leaves_only_whole_eve_lines() {
    let mut seen = 0;
    for delay_ms in [150, 600, 1300] {
        let input = tempfile::tempdir().unwrap();
        let fifo = paced_capture(input.path(), 1000);
        let dir = tempfile::tempdir().unwrap();
        let mut child =
            spawn(picket().args(["-r", fifo.to_str().unwrap(), "-l", dir.path().to_str().unwrap(), "-k", "none"]));
        wait_non_empty(&dir.path().join("eve.json"), Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        let _ = child.wait();
        seen += eve_lines(dir.path()).len();
    }
    assert!(seen > 0, "the killed runs had written events");
}

/// A small tmpfs mounted on a temporary directory (root only), unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("skipped: cannot mount a tmpfs");
            return None;
        }
        Some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Item 6: a full disk under eve.json is reported once with the file and the OS error,
/// the lost events are counted, writing goes on once there is room again (whole lines
/// only), and the run ends with exit status 4.
#[test]
fn honesty_full_disk_is_reported_counted_and_writing_resumes() {
    let Some(disk) = SmallDisk::mount("16m") else { return };
    let logs = disk.dir.path();
    // Leaves about 300 KiB for the logs.
    let fill = logs.join("fill");
    std::fs::write(&fill, vec![0u8; 16 * 1024 * 1024 - 300 * 1024]).ok();
    assert!(fill.exists());
    let input = tempfile::tempdir().unwrap();
    let fifo = paced_capture(input.path(), 1000);
    // The event types this test was sized for (alerts, flows, stats): the app-layer records
    // of the default output would fill the small disk again after the room came back.
    let yaml = input.path().join("picket.yaml");
    std::fs::write(
        &yaml,
        "outputs:\n  - eve-log:\n      enabled: yes\n      types: [alert, flow, stats]\n  - fast:\n      enabled: yes\n  \
         - stats:\n      enabled: yes\n",
    )
    .unwrap();
    let mut child = spawn(picket().args([
        "-r",
        fifo.to_str().unwrap(),
        "-l",
        logs.to_str().unwrap(),
        "-k",
        "none",
        "-c",
        yaml.to_str().unwrap(),
    ]));
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Room again once the first failure was reported.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("cannot write") => break,
            _ => {}
        }
    }
    std::fs::remove_file(&fill).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "picket did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.wait();
    let stderr = reader.join().unwrap();
    assert_eq!(status.code(), Some(4), "{stderr}");
    let eve = logs.join("eve.json");
    let report = format!("picket: error: cannot write {}: No space left on device", eve.display());
    assert_eq!(stderr.matches(&report).count(), 1, "reported once, naming the file and the error: {stderr}");
    assert!(stderr.contains("writing again after"), "{stderr}");
    let events = eve_lines(logs);
    // Written after the room came back: the final stats, with the loss counted.
    let dropped = last_stats(&events)["stats"]["picket"]["output"]["events_dropped"].as_u64().unwrap();
    assert!(dropped > 0, "events_dropped in the stats event");
    let stats_log = std::fs::read_to_string(logs.join("stats.log")).unwrap();
    let line = stats_log.lines().find(|l| l.starts_with("picket.output.events_dropped")).expect("counter");
    assert_eq!(line.rsplit('|').next().unwrap().trim().parse::<u64>().unwrap(), dropped, "{line}");
    let errors = stats_log.lines().find(|l| l.starts_with("picket.output.write_errors")).expect("counter");
    assert!(errors.rsplit('|').next().unwrap().trim().parse::<u64>().unwrap() > 0, "{errors}");
}
