//! Compiling a literal set must not leave the compiler's working memory with the process.
//! libhs's compiler allocates from glibc's heap and frees it before returning; glibc keeps
//! freed pages unless told otherwise, so a cold start (dozens of sets, one arena per compile
//! thread) used to hold the largest compile's high-water mark in every arena.
//!
//! Its own test binary: the figures are the process's resident memory, which tests running
//! beside it in one process would disturb.

use picket_core::detect::mpm::{MatcherBuilder, Pattern};
use picket_hs::HsBuilder;

/// A `kB` field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in status"));
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

/// `n` distinct literals of 6 to 17 bytes from a fixed xorshift sequence, every other one
/// caseless: a set of the kind ET Open's larger prefilter sets are (thousands of short literals).
fn literals(n: u32) -> Vec<Pattern> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|id| {
            let len = 6 + (next() % 12) as usize;
            let mut bytes: Vec<u8> =
                (0..len).map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789/._-"[(next() % 40) as usize]).collect();
            bytes.extend_from_slice(&id.to_le_bytes()[..2]);
            Pattern::new(id, bytes, id % 2 == 1)
        })
        .collect()
}

#[test]
fn compiling_a_set_gives_the_compilers_memory_back() {
    if !picket_hs::platform_supported() {
        eprintln!("skipped: this CPU cannot run Hyperscan");
        return;
    }
    let patterns = literals(4000);
    // Warm up once, so that libhs's one-time tables and the arena itself are in place.
    let warm = HsBuilder::default().build(&patterns[..50]).expect("compile");
    drop(warm);

    // Reset the high-water mark (VmHWM) to the current resident size.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM (needs a Linux /proc)");
    let before = status_kib("VmRSS:");
    let matcher = HsBuilder::default().build(&patterns).expect("compile");
    let peak_rise = status_kib("VmHWM:").saturating_sub(before);
    let kept = status_kib("VmRSS:").saturating_sub(before);
    eprintln!("compile of {} literals: resident peak +{peak_rise} KiB, kept +{kept} KiB", patterns.len());

    // The compile must have been big enough to tell the two apart.
    assert!(peak_rise >= 8 * 1024, "the compile rose by only {peak_rise} KiB; the set is too small to judge");
    // Kept: the database and the matcher's tables, a small part of what compiling took.
    assert!(kept * 3 < peak_rise, "compiling rose by {peak_rise} KiB and {kept} KiB stayed resident");
    drop(matcher);
}
