//! The Suricata-verify conformance suite (../shared/conformance), run Suricata-style by its
//! own runner. Tests listed in tests/conformance-passing.txt must keep passing (ratchet);
//! the per-class pass counts are printed. Set PICKET_WRITE_RATCHET=1 to rewrite the list
//! from this run. Skips with a message when the suite is not beside the repository.

use std::path::Path;
use std::process::Command;

#[test]
fn conformance_ratchet() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runner = root.join("../shared/conformance/run.py");
    if !runner.exists() {
        eprintln!("skipped: {} not found", runner.display());
        return;
    }
    let ratchet = root.join("tests/conformance-passing.txt");
    let mode = if std::env::var_os("PICKET_WRITE_RATCHET").is_some() { "--write-ratchet" } else { "--ratchet" };
    let out = Command::new("python3")
        .arg(&runner)
        .args(["--engine", env!("CARGO_BIN_EXE_picket"), "--jobs", "2", mode])
        .arg(&ratchet)
        .output()
        .expect("python3 runs the conformance suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = stdout.lines().filter(|l| l.starts_with("class ") || l.contains(" passed, ")).collect();
    eprintln!("conformance:\n  {}", summary.join("\n  "));
    let crashes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("CRASH") || l.starts_with("TIMEOUT")).collect();
    assert!(crashes.is_empty(), "crashes or timeouts:\n{}", crashes.join("\n"));
    assert!(
        out.status.success(),
        "a test in {} no longer passes:\n{}\n{}",
        ratchet.display(),
        stdout.lines().filter(|l| !l.starts_with("FAIL")).collect::<Vec<_>>().join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}
