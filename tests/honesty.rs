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
    let capture = &stats["capture"];
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
    assert_eq!(last_stats(&events)["stats"]["capture"]["files_damaged"].as_u64(), Some(1));
}
