//! The Suricata-verify conformance suites, run Suricata-style by their own runner:
//!
//! - `../shared/conformance`: alert checks; tests listed in tests/conformance-passing.txt
//!   must keep passing (ratchet);
//! - `../shared/conformance-eve`: checks on the other eve records (`flow`, `http`, `dns`,
//!   `tls`, `fileinfo`, `anomaly`, `drop`, `ssh`); ratchet tests/conformance-eve-passing.txt.
//!
//! Every event written on every capture of both suites must also validate against
//! Suricata's EVE JSON schema (`../shared/eve-schema/check.py`), as must the bundled
//! sample's. The per-class pass counts are printed. Set PICKET_WRITE_RATCHET=1 to rewrite
//! the lists from this run. Skips with a message when the suites are not beside the
//! repository.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The schema checker, or `None` (with a message) when it is not beside the repository.
fn schema_checker() -> Option<PathBuf> {
    let check = root().join("../shared/eve-schema/check.py");
    if check.exists() {
        Some(check)
    } else {
        eprintln!("schema check skipped: {} not found", check.display());
        None
    }
}

/// Validates every event of the eve files against the EVE schema, in one run of the
/// checker over their concatenation; panics with the checker's summary when one fails.
fn assert_schema_valid(what: &str, eves: &[PathBuf]) {
    let Some(check) = schema_checker() else { return };
    let all = tempfile::NamedTempFile::new().expect("temp file");
    let mut out = std::io::BufWriter::new(all.as_file());
    let mut files = 0;
    for eve in eves {
        if let Ok(bytes) = std::fs::read(eve) {
            out.write_all(&bytes).expect("write");
            files += 1;
        }
    }
    out.flush().expect("flush");
    drop(out);
    let res = Command::new("python3").arg(&check).arg(all.path()).output().expect("python3 runs check.py");
    let text = format!("{}{}", String::from_utf8_lossy(&res.stdout), String::from_utf8_lossy(&res.stderr));
    eprintln!("schema ({what}, {files} eve files): {}", text.lines().next().unwrap_or(""));
    assert!(res.status.success(), "events of {what} fail Suricata's EVE schema:\n{text}");
}

/// Runs one suite against its ratchet file, then the schema check over the eve.json of
/// every test it ran.
fn ratchet(suite: &str, class: &str, ratchet_file: &str) {
    let runner = root().join("../shared/conformance/run.py");
    let suite_dir = root().join("..").join("shared").join(suite);
    if !runner.exists() || !suite_dir.exists() {
        eprintln!("skipped: {} or {} not found", runner.display(), suite_dir.display());
        return;
    }
    let ratchet = root().join(ratchet_file);
    let mode = if std::env::var_os("PICKET_WRITE_RATCHET").is_some() { "--write-ratchet" } else { "--ratchet" };
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let out = Command::new("python3")
        .arg(&runner)
        .args(["--engine", env!("CARGO_BIN_EXE_picket"), "--jobs", "2", "--keep", "--class", class])
        .arg("--suite")
        .arg(&suite_dir)
        .arg("--report")
        .arg(report.path())
        .arg(mode)
        .arg(&ratchet)
        .output()
        .expect("python3 runs the conformance suite");
    // The kept output directories: removed whatever the outcome.
    let results: Vec<serde_json::Value> =
        std::fs::read(report.path()).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let dirs: Vec<PathBuf> = results.iter().filter_map(|r| r["outdir"].as_str()).map(PathBuf::from).collect();
    let eves: Vec<PathBuf> = dirs.iter().map(|d| d.join("eve.json")).collect();
    let cleanup = Cleanup(dirs);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = stdout.lines().filter(|l| l.starts_with("class ") || l.contains(" passed, ")).collect();
    eprintln!("{suite}:\n  {}", summary.join("\n  "));
    let crashes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("CRASH") || l.starts_with("TIMEOUT")).collect();
    assert!(crashes.is_empty(), "crashes or timeouts:\n{}", crashes.join("\n"));
    assert!(
        out.status.success(),
        "a test in {} no longer passes:\n{}\n{}",
        ratchet.display(),
        stdout.lines().filter(|l| !l.starts_with("FAIL")).collect::<Vec<_>>().join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!results.is_empty(), "the runner wrote no report");
    assert_schema_valid(suite, &eves);
    drop(cleanup);
}

/// Removes the runner's kept output directories.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[test]
fn conformance_ratchet() {
    ratchet("conformance", "a,a+,b", "tests/conformance-passing.txt");
}

#[test]
fn eve_conformance_ratchet() {
    ratchet("conformance-eve", "eve", "tests/conformance-eve-passing.txt");
}

/// The bundled sample, run as the README's first command runs it, writes only events
/// the EVE schema accepts.
#[test]
fn bundled_sample_eve_is_schema_valid() {
    if schema_checker().is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let status = Command::new(env!("CARGO_BIN_EXE_picket"))
        .arg("-r")
        .arg(root().join("data/sample.pcap"))
        .arg("-S")
        .arg(root().join("rules/default.rules"))
        .arg("-l")
        .arg(dir.path())
        .output()
        .expect("picket runs");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let eve = dir.path().join("eve.json");
    let text = std::fs::read_to_string(&eve).expect("eve.json written");
    for t in ["\"event_type\":\"alert\"", "\"event_type\":\"flow\"", "\"event_type\":\"stats\""] {
        assert!(text.contains(t), "the sample's eve.json has no {t} event");
    }
    assert_schema_valid("the bundled sample", &[eve]);
}
