//! The fuzz loop: deterministic inputs from a seed, a time budget per target, panics caught
//! per input, failing inputs saved under `target/fuzz-failures/` for replay.
//!
//! Environment:
//! - `PICKET_FUZZ_SECS`: seconds per target (default 3; CI uses more).
//! - `PICKET_FUZZ_SEED`: base seed (default fixed, so every run tries the same inputs first).
//! - `PICKET_FUZZ_REPLAY=FILE`: run only that saved input, on the target its name starts
//!   with, without catching the panic (so `RUST_BACKTRACE=1` shows where).
//! - `PICKET_FUZZ_INPUT=HEX`: regenerate and run the one input with that per-input seed.
//!
//! Besides the flat [`SLOW_INPUT`] limit, a target can hold its work to a [`CostBudget`]
//! that grows with the input (a base plus so much per byte, per rule, ...), so a path that
//! is quadratic in the input fails as "over budget" long before it costs seconds.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

/// Small, fast, reproducible generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// Small numbers much more often than large ones (lengths, counts).
    pub fn small(&mut self, max: usize) -> usize {
        let bits = self.below(usize::BITS as usize - max.leading_zeros() as usize + 1);
        self.below(1usize.checked_shl(bits as u32).unwrap_or(usize::MAX).min(max.saturating_add(1)))
    }
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

pub fn budget() -> Duration {
    let secs = std::env::var("PICKET_FUZZ_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(3.0);
    Duration::from_secs_f64(secs.max(0.0))
}

pub fn base_seed() -> u64 {
    match std::env::var("PICKET_FUZZ_SEED") {
        Ok(s) => parse_seed(&s).unwrap_or_else(|| panic!("PICKET_FUZZ_SEED={s}: not a number")),
        Err(_) => 0x0070_6963_6b65_7421,
    }
}

fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok().or_else(|| u64::from_str_radix(s, 16).ok()),
    }
}

pub fn failures_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("fuzz-failures")
}

thread_local! {
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics inside a fuzz input are recorded (message and location) instead of printed: a run
/// may see many of them. Panics elsewhere go to the default hook.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-string panic)".into());
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("panic at {at}: {msg}")));
            } else {
                default(info);
            }
        }));
    });
}

/// Runs `check` on one input; a panic becomes `Err` with its location.
fn run_caught(check: &dyn Fn(&[u8]) -> Result<(), String>, input: &[u8]) -> Result<(), String> {
    CATCHING.with(|c| c.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| check(input)));
    CATCHING.with(|c| c.set(false));
    match result {
        Ok(r) => r,
        Err(_) => Err(LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "panic".into())),
    }
}

/// Makes an input from the seeds.
pub type Mutator = dyn Fn(&mut Rng, &[Vec<u8>]) -> Vec<u8>;
/// Runs an input; `Err` describes a broken invariant.
pub type Checker = dyn Fn(&[u8]) -> Result<(), String>;

/// A fuzz target: the seeds, how to derive a new input from them, and the check (which
/// must not panic and returns `Err` when an invariant does not hold).
pub struct Target<'a> {
    pub name: &'static str,
    pub seeds: Vec<Vec<u8>>,
    pub mutate: &'a Mutator,
    pub check: &'a Checker,
}

struct Failure {
    reason: String,
    file: PathBuf,
    input_seed: Option<u64>,
}

/// Distinct failures reported per target before it stops.
const MAX_FAILURES: usize = 3;
/// An input slower than this (release build) is a failure of its own: hostile input must
/// not buy much CPU. Debug builds get 20 times as long. Generous, so a loaded CI machine
/// does not fail on an input that is merely slowish (the slowest is printed per target).
const SLOW_INPUT: Duration = Duration::from_secs(10);

/// A per-input cost budget relative to input size: `base + per_unit * units`, where a
/// target chooses what a unit is (a payload byte, a payload byte per rule). Generous by
/// design (benign inputs stay far below it on a loaded 2-core machine); what it catches is
/// work that grows faster than the input. Debug builds get 20 times as long.
#[derive(Clone, Copy, Debug)]
pub struct CostBudget {
    pub base: Duration,
    pub per_unit: Duration,
}

impl CostBudget {
    /// The time `units` of input may take.
    pub fn limit(&self, units: u64) -> Duration {
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        let limit = self.base.saturating_add(self.per_unit.saturating_mul(units));
        if cfg!(debug_assertions) {
            limit.saturating_mul(20)
        } else {
            limit
        }
    }

    /// Fails when `took` is over the budget for `units`; `what` names the work and its size
    /// in the failure (e.g. "inspection of 3 rules x 812 payload bytes").
    pub fn check(&self, what: &str, units: u64, took: Duration) -> Result<(), String> {
        let limit = self.limit(units);
        if took > limit {
            return Err(format!("over cost budget: {what} took {took:?}, budget {limit:?} for {units} units"));
        }
        Ok(())
    }

    /// Runs `work` and checks the time it took against the budget.
    pub fn run<T>(&self, what: &str, units: u64, work: impl FnOnce() -> T) -> Result<T, String> {
        let started = Instant::now();
        let out = work();
        self.check(what, units, started.elapsed())?;
        Ok(out)
    }
}

pub fn fuzz(t: Target<'_>) {
    install_panic_hook();
    if let Ok(file) = std::env::var("PICKET_FUZZ_REPLAY") {
        return replay(&t, Path::new(&file));
    }
    let base = base_seed();
    let target_seed = base ^ fnv(t.name);
    if let Ok(s) = std::env::var("PICKET_FUZZ_INPUT") {
        let input_seed = parse_seed(&s).unwrap_or_else(|| panic!("PICKET_FUZZ_INPUT={s}: not a number"));
        let input = (t.mutate)(&mut Rng::new(input_seed), &t.seeds);
        eprintln!("fuzz {}: input {input_seed:016x} is {} bytes", t.name, input.len());
        if let Err(reason) = (t.check)(&input) {
            panic!("fuzz {}: {reason}", t.name);
        }
        return;
    }
    let budget = budget();
    let slow = if cfg!(debug_assertions) { SLOW_INPUT * 20 } else { SLOW_INPUT };
    let started = Instant::now();
    let mut failures: Vec<Failure> = Vec::new();
    let mut runs = 0u64;
    let mut slowest = (Duration::ZERO, 0u64);
    let record = |reason: String, input: &[u8], input_seed: Option<u64>, failures: &mut Vec<Failure>| {
        // One report per distinct reason (a panic site usually fails over and over).
        let key = reason.lines().next().unwrap_or("").to_string();
        if failures.iter().any(|f| f.reason.lines().next() == Some(key.as_str())) {
            return;
        }
        let dir = failures_dir();
        let _ = std::fs::create_dir_all(&dir);
        let tag = input_seed.map_or_else(|| format!("seed{}", failures.len()), |s| format!("{s:016x}"));
        let file = dir.join(format!("{}-{tag}.bin", t.name));
        let _ = std::fs::write(&file, input);
        failures.push(Failure { reason, file, input_seed });
    };

    // The seeds themselves first: real inputs must never fail.
    for seed in &t.seeds {
        if let Err(reason) = run_caught(t.check, seed) {
            record(reason, seed, None, &mut failures);
        }
        runs += 1;
    }
    let mut iteration = 0u64;
    while started.elapsed() < budget && failures.len() < MAX_FAILURES {
        let input_seed = Rng::new(target_seed ^ iteration.wrapping_mul(0xd6e8_feb8_6659_fd93)).next_u64();
        iteration += 1;
        let input = (t.mutate)(&mut Rng::new(input_seed), &t.seeds);
        let one = Instant::now();
        let result = run_caught(t.check, &input);
        let took = one.elapsed();
        if took > slowest.0 {
            slowest = (took, input_seed);
        }
        runs += 1;
        match result {
            Err(reason) => record(reason, &input, Some(input_seed), &mut failures),
            Ok(()) if took > slow => {
                record(format!("slow input: {took:?} (limit {slow:?})"), &input, Some(input_seed), &mut failures)
            }
            Ok(()) => {}
        }
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {:<14} {runs:>9} inputs in {secs:5.1} s = {:>8.0}/s ({} seeds, slowest {:.1?} = input {:016x}, base seed {base:#x})",
        t.name,
        runs as f64 / secs.max(1e-9),
        t.seeds.len(),
        slowest.0,
        slowest.1
    );
    if !failures.is_empty() {
        let mut report = format!("fuzz target {} failed (base seed {base:#x}):\n", t.name);
        for f in &failures {
            report.push_str(&format!("- {}\n  input saved to {}\n", f.reason, f.file.display()));
            report.push_str(&format!(
                "  replay: PICKET_FUZZ_REPLAY={} cargo test --test fuzz {}\n",
                f.file.display(),
                t.name
            ));
            if let Some(s) = f.input_seed {
                report.push_str(&format!(
                    "  or regenerate (same corpus only): PICKET_FUZZ_INPUT={s:016x} cargo test --test fuzz {}\n",
                    t.name
                ));
            }
        }
        panic!("{report}");
    }
}

fn replay(t: &Target<'_>, file: &Path) {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    // Saved files are named `<target>-<seed>.bin`; other targets skip.
    if name.rsplit_once('-').map(|(target, _)| target) != Some(t.name) {
        return;
    }
    let input = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    eprintln!("fuzz {}: replaying {} ({} bytes)", t.name, file.display(), input.len());
    if let Err(reason) = (t.check)(&input) {
        panic!("fuzz {}: {reason}", t.name);
    }
}
