//! The Hyperscan database cache (`detect.sgh-mpm-caching`): a warm start loads what a cold
//! start compiled and alerts the same; a changed rule set compiles what changed; damaged
//! cache files are ignored and written again; `sgh-mpm-caching: no` leaves the directory
//! alone.

#![cfg(feature = "hyperscan")]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One run on the sample capture: the alerts (sid, pcap_cnt) and the start-up cache line.
fn run(rules: &Path, cache: &Path, extra: &[&str]) -> (Vec<(u64, u64)>, String) {
    let logs = tempfile::tempdir().expect("logs");
    let cache_path = format!("detect.sgh-mpm-caching-path={}", cache.display());
    let mut command = Command::new(env!("CARGO_BIN_EXE_picket"));
    command
        .arg("-r")
        .arg(repo().join("data/sample.pcap"))
        .arg("-S")
        .arg(rules)
        .arg("-l")
        .arg(logs.path())
        .args(["-k", "none", "--set", "mpm-algo=hs", "--set", &cache_path])
        .args(extra);
    let output = command.output().expect("picket runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "picket failed: {stderr}");
    let mut alerts: Vec<(u64, u64)> = std::fs::read_to_string(logs.path().join("eve.json"))
        .expect("eve.json")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("eve line"))
        .filter(|e| e["event_type"] == "alert")
        .map(|e| (e["alert"]["signature_id"].as_u64().unwrap_or(0), e["pcap_cnt"].as_u64().unwrap_or(0)))
        .collect();
    alerts.sort_unstable();
    let line = stderr.lines().find(|l| l.contains("mpm cache")).unwrap_or_default().to_string();
    (alerts, line)
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|entries| entries.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
}

/// `N loaded, M compiled` of the cache line.
fn loaded_compiled(line: &str) -> (u64, u64) {
    let number_before = |word: &str| -> u64 {
        let at = line.find(word).unwrap_or_else(|| panic!("no '{word}' in {line:?}"));
        line[..at].split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(u64::MAX)
    };
    (number_before(" loaded"), number_before(" compiled"))
}

/// The cache holds Hyperscan databases: without a CPU that runs Hyperscan there is nothing to
/// test (says so and returns `true`).
fn skip_without_hyperscan() -> bool {
    let skip = !picket::matchers::hyperscan_usable();
    if skip {
        eprintln!("skipping: Hyperscan cannot run on this CPU");
    }
    skip
}

#[test]
fn warm_start_loads_the_databases_and_alerts_the_same() {
    if skip_without_hyperscan() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("cache/hs");
    let rules = repo().join("rules/default.rules");

    let (cold, line) = run(&rules, &cache, &[]);
    assert!(!cold.is_empty(), "the sample alerts with the default rules");
    let (loaded, compiled) = loaded_compiled(&line);
    assert_eq!(loaded, 0, "{line}");
    assert!(compiled > 0, "{line}");
    let files = cache_files(&cache);
    assert_eq!(files.len() as u64, compiled, "one file per compiled set: {files:?}");

    let (warm, line) = run(&rules, &cache, &[]);
    assert_eq!(warm, cold);
    assert_eq!(loaded_compiled(&line), (compiled, 0), "{line}");

    // One more rule with a new content: its groups compile, the others load.
    let changed = dir.path().join("changed.rules");
    let mut text = std::fs::read_to_string(&rules).expect("rules");
    text.push_str("alert tcp any any -> any any (msg:\"new\"; content:\"zz-not-in-sample-zz\"; sid:9900001;)\n");
    std::fs::write(&changed, text).expect("write rules");
    let (with_new, line) = run(&changed, &cache, &[]);
    assert_eq!(with_new, cold);
    let (loaded, recompiled) = loaded_compiled(&line);
    assert!(recompiled > 0 && loaded > 0, "{line}");

    // Every file damaged: all ignored, compiled and written again, same alerts.
    for file in cache_files(&cache) {
        let mut bytes = std::fs::read(&file).expect("read");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xa5;
        std::fs::write(&file, &bytes).expect("damage");
    }
    let (repaired, line) = run(&rules, &cache, &[]);
    assert_eq!(repaired, cold);
    assert_eq!(loaded_compiled(&line), (0, compiled), "{line}");
    assert!(line.contains("replaced"), "{line}");
    let (warm_again, line) = run(&rules, &cache, &[]);
    assert_eq!(warm_again, cold);
    assert_eq!(loaded_compiled(&line), (compiled, 0), "{line}");
}

/// `mpm-hs-avx512`: both settings alert the same. On a CPU with AVX-512 (where the default
/// scans with libhs's AVX2 code, see `picket_hs::CodePath`) each setting has its own cache
/// files: switching compiles the other's once and then loads it, and never replaces it.
#[test]
fn hyperscan_code_paths_alert_the_same_and_cache_apart() {
    if skip_without_hyperscan() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("hs");
    let rules = repo().join("rules/default.rules");
    let yes = ["--set", "mpm-hs-avx512=yes"];
    let (default_alerts, line) = run(&rules, &cache, &[]);
    let (_, compiled) = loaded_compiled(&line);
    assert!(!default_alerts.is_empty() && compiled > 0, "{line}");
    let (avx512_alerts, line) = run(&rules, &cache, &yes);
    assert_eq!(avx512_alerts, default_alerts);
    let two_paths = picket::matchers::HsCodePath::choose(false) != picket::matchers::HsCodePath::choose(true);
    let expected = if two_paths { (0, compiled) } else { (compiled, 0) };
    assert_eq!(loaded_compiled(&line), expected, "{line}");
    let files = cache_files(&cache).len() as u64;
    assert_eq!(files, if two_paths { 2 * compiled } else { compiled });
    for extra in [&[][..], &yes[..]] {
        let (alerts, line) = run(&rules, &cache, extra);
        assert_eq!(alerts, default_alerts);
        assert_eq!(loaded_compiled(&line), (compiled, 0), "{extra:?}: {line}");
    }
    assert_eq!(cache_files(&cache).len() as u64, files);
}

#[test]
fn caching_off_writes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("hs");
    let (_, line) = run(&repo().join("rules/default.rules"), &cache, &["--set", "detect.sgh-mpm-caching=no"]);
    assert!(line.is_empty(), "{line}");
    assert!(!cache.exists());
}

/// Sets `path`'s modification time (a cache file's last use) `days` back.
fn age_days(path: &Path, days: u64) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(then)).expect("age");
}

#[test]
fn files_unused_for_the_max_age_are_removed_and_used_ones_kept() {
    if skip_without_hyperscan() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("hs");
    let rules = repo().join("rules/default.rules");
    let (cold, line) = run(&rules, &cache, &[]);
    let (_, compiled) = loaded_compiled(&line);
    let used = cache_files(&cache);
    // A set of a rule set long gone, a file that is not the cache's, everything 30 days old.
    let gone = cache.join(format!("{}.hs", "ab".repeat(32)));
    let foreign = cache.join("README");
    std::fs::write(&gone, b"an old database").expect("gone");
    std::fs::write(&foreign, b"not a cache file").expect("foreign");
    for file in cache_files(&cache) {
        age_days(&file, 30);
    }

    // `0`: nothing is removed.
    let (_, line) = run(&rules, &cache, &["--set", "detect.sgh-mpm-caching-max-age=0"]);
    assert!(!line.contains("removed"), "{line}");
    assert!(gone.exists());
    for file in cache_files(&cache) {
        age_days(&file, 30);
    }

    // The default (7 days): the warm start loads (and so keeps) every file it uses.
    let (warm, line) = run(&rules, &cache, &[]);
    assert_eq!(warm, cold);
    assert_eq!(loaded_compiled(&line), (compiled, 0), "{line}");
    assert!(line.ends_with(", 1 unused file(s) removed"), "{line}");
    assert!(!gone.exists());
    assert!(foreign.exists(), "only cache files are removed");
    for file in &used {
        assert!(file.exists(), "{} was used", file.display());
    }

    // A value that is not a duration stops the start with the key named.
    let output = Command::new(env!("CARGO_BIN_EXE_picket"))
        .args(["-T", "-S"])
        .arg(&rules)
        .args(["--set", "mpm-algo=hs", "--set", &format!("detect.sgh-mpm-caching-path={}", cache.display())])
        .args(["--set", "detect.sgh-mpm-caching-max-age=7 weeks"])
        .output()
        .expect("picket runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("detect.sgh-mpm-caching-max-age: '7 weeks'"), "{stderr}");
}
