//! Multi-pattern matcher (MPM): the prefilter of the detection engine.
//!
//! Every rule contributes one literal "fast pattern" (a Suricata `content`, possibly binary,
//! possibly `nocase`). Per packet, the engine scans the payload once against all fast patterns of
//! the rule group and only evaluates the rules whose pattern occurred.
//!
//! Backends implement [`MultiPatternMatcher`] and are compiled by a [`MatcherBuilder`], which
//! the engine gets from its caller (`DetectConfig::matchers`):
//! - **Aho-Corasick** ([`AcBuilder`], here, pure Rust): a double-array automaton from
//!   `daachorse`. On ET Open contents it scanned ~2x faster than the `aho-corasick` crate's
//!   contiguous NFA (5k patterns: 204 vs 105 MB/s; 20k: 420 vs 173 MB/s) and needs a fraction
//!   of its DFA's memory (20k: 2.5 MB vs 190 MB), so it is the pure-Rust choice.
//! - **Hyperscan** (`HsBuilder` in the `picket-hs` crate, the `picket` binary's cargo feature
//!   `hyperscan`, default on): the system `libhs` in literal mode (`hs_compile_lit_multi`),
//!   declared by `hyperscan-sys` and wrapped safely in `picket-hs/src/ffi.rs`, the only
//!   `unsafe` of detection. It uses only this module's public API: [`Pattern`], [`MultiPatternMatcher`],
//!   [`MatcherBuilder`], [`Scratch`] with its [`BackendScratch`] slot, [`IdTable`],
//!   [`SeenSlots`], [`overlapping_windows`], [`validate_patterns`] and [`empty_matcher`]. The
//!   `hyperscan` crate was not used: it accepts binary patterns only as `\xNN` regexes, and
//!   regex mode compiles short literals pathologically slowly (256 one-byte patterns: 23 s vs
//!   4 ms in literal mode; ET Open contents incl. short ones: 2.5 s vs 0.8 s for 20k).
//!
//! Hyperscan is 2-10x faster at scanning and compiles 5-10x slower; `benches/mpm.rs` measures both.
//! Which backend `mpm-algo` selects, and compiling on several cores, is the `picket` crate's
//! job (`picket::matchers`).
//!
//! Contract shared by all backends (tested against a naive reference matcher in
//! `crates/picket-hs/tests/contract.rs`, the crate that sees both):
//! - `on_match(id)` is called exactly once per scan for every pattern id that occurs in the
//!   haystack, in no particular order. Ids that are given to several patterns are still reported
//!   once; identical patterns with different ids each report their own id.
//! - `nocase` folds ASCII letters only (like Suricata); other bytes always match exactly.
//! - The database is read-only after [`MatcherBuilder::build`] and shared between workers
//!   (`Send + Sync`); every worker owns one [`Scratch`], which may be used with any number of
//!   matchers.

mod ac;
mod slots;

use std::fmt;
use std::str::FromStr;

pub use slots::{BackendScratch, IdTable, Scratch, SeenSlots};

/// One literal to search for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pattern {
    /// Reported to `on_match` when the pattern occurs. Need not be dense or unique.
    pub id: u32,
    /// The literal bytes; must not be empty.
    pub bytes: Vec<u8>,
    /// Fold ASCII letters when matching (Suricata `nocase`).
    pub nocase: bool,
}

impl Pattern {
    pub fn new(id: u32, bytes: impl Into<Vec<u8>>, nocase: bool) -> Self {
        Pattern { id, bytes: bytes.into(), nocase }
    }
}

/// A compiled pattern set. Build with a [`MatcherBuilder`].
pub trait MultiPatternMatcher: Send + Sync {
    /// Calls `on_match(pattern_id)` once for each distinct id whose pattern occurs in `haystack`.
    ///
    /// `scratch` is the calling worker's own; it is grown on first use with this matcher
    /// (call [`MultiPatternMatcher::prepare_scratch`] at start-up to keep that allocation off
    /// the data path). An error means the scan was incomplete: count it, the packet may have
    /// missed detections. `on_match` must not panic (Hyperscan calls it from C).
    fn scan(&self, haystack: &[u8], scratch: &mut Scratch, on_match: &mut dyn FnMut(u32)) -> Result<(), MpmError>;

    /// Sizes `scratch` for this matcher so that `scan` does not allocate.
    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError>;

    /// Number of patterns given to [`MatcherBuilder::build`] (duplicates included).
    fn pattern_count(&self) -> usize;

    /// Heap bytes held by the compiled database and its id tables (not the scratch).
    fn memory_bytes(&self) -> usize;

    /// The backend actually used (never [`MpmAlgo::Auto`]).
    fn algo(&self) -> MpmAlgo;

    /// Ids of the patterns the backend could not compile and matches another way (Hyperscan
    /// hands them to Aho-Corasick), so that the engine can name their rules in a warning.
    fn fallback_pattern_ids(&self) -> &[u32] {
        &[]
    }
}

/// Compiles pattern sets with one backend. Injected into the engine by its caller, which
/// chooses the backend (`mpm-algo`) and may compile on several threads (`build_all`).
pub trait MatcherBuilder: Send + Sync {
    /// The backend the matchers are built with (never [`MpmAlgo::Auto`]).
    fn algo(&self) -> MpmAlgo;

    /// Compiles `patterns`. An empty set yields a matcher that never matches; an empty pattern
    /// is [`MpmError::EmptyPattern`] (see [`validate_patterns`] and [`empty_matcher`]).
    fn build(&self, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError>;

    /// Compiles every set, results in the order of `sets`. Sequential here; a caller that can
    /// spawn threads overrides it.
    fn build_all(&self, sets: &[&[Pattern]]) -> Vec<Result<Box<dyn MultiPatternMatcher>, MpmError>> {
        sets.iter().map(|patterns| self.build(patterns)).collect()
    }
}

impl fmt::Debug for dyn MatcherBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MatcherBuilder({})", self.algo())
    }
}

/// The pure-Rust backend: a double-array Aho-Corasick automaton, always available.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcBuilder;

impl MatcherBuilder for AcBuilder {
    fn algo(&self) -> MpmAlgo {
        MpmAlgo::AhoCorasick
    }

    fn build(&self, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
        validate_patterns(patterns)?;
        if patterns.is_empty() {
            return Ok(empty_matcher(MpmAlgo::AhoCorasick));
        }
        Ok(Box::new(ac::AcMatcher::build(patterns)?))
    }
}

impl AcBuilder {
    /// An Aho-Corasick matcher that folds case over windows of `window` bytes instead of the
    /// default: for tests of window boundaries with small inputs.
    pub fn build_with_window(patterns: &[Pattern], window: usize) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
        validate_patterns(patterns)?;
        Ok(Box::new(ac::AcMatcher::build_with_window(patterns, window)?))
    }
}

/// Backend selection, parsed from Suricata's `mpm-algo` values. Which backends exist in this
/// build, and what `Auto` resolves to, is decided outside this module (`picket::matchers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MpmAlgo {
    /// Hyperscan if built in and supported by this CPU, otherwise Aho-Corasick.
    #[default]
    Auto,
    Hyperscan,
    AhoCorasick,
}

/// The `mpm-algo` value was not recognised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMpmAlgo(pub String);

impl fmt::Display for UnknownMpmAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown mpm-algo {:?} (expected auto, hs or ac)", self.0)
    }
}

impl std::error::Error for UnknownMpmAlgo {}

impl FromStr for MpmAlgo {
    type Err = UnknownMpmAlgo;

    /// Accepts Suricata's spellings; all of its Aho-Corasick variants (`ac`, `ac-ks`, `ac-bs`,
    /// `ac-cuda`) map to our single pure-Rust automaton.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(MpmAlgo::Auto),
            "hs" | "hyperscan" => Ok(MpmAlgo::Hyperscan),
            "ac" | "ac-ks" | "ac-bs" | "ac-cuda" | "ac-gfbs" | "aho-corasick" | "ahocorasick" => {
                Ok(MpmAlgo::AhoCorasick)
            }
            _ => Err(UnknownMpmAlgo(value.to_string())),
        }
    }
}

impl fmt::Display for MpmAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MpmAlgo::Auto => "auto",
            MpmAlgo::Hyperscan => "hs",
            MpmAlgo::AhoCorasick => "ac",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MpmError {
    /// A pattern had no bytes; it would match everywhere and no backend accepts it.
    EmptyPattern { id: u32 },
    /// `mpm-algo: hs` was requested but this binary has no Hyperscan backend (built without
    /// the `hyperscan` feature).
    HyperscanNotBuiltIn,
    /// The backend refused to compile the pattern set (Hyperscan: unsupported CPU, out of
    /// memory; Aho-Corasick: automaton size limits).
    Compile { algo: MpmAlgo, message: String },
    /// The scan failed part-way (Hyperscan only: scratch allocation or internal error).
    Scan { algo: MpmAlgo, message: String },
}

impl fmt::Display for MpmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MpmError::EmptyPattern { id } => write!(f, "pattern {id} is empty"),
            MpmError::HyperscanNotBuiltIn => {
                f.write_str("mpm-algo hs requested but picket was built without Hyperscan")
            }
            MpmError::Compile { algo, message } => {
                write!(f, "{algo} pattern compilation failed: {message}")
            }
            MpmError::Scan { algo, message } => write!(f, "{algo} scan failed: {message}"),
        }
    }
}

impl std::error::Error for MpmError {}

/// Rejects a set containing an empty pattern (it would match everywhere and no backend accepts
/// it). Every [`MatcherBuilder::build`] calls it first.
pub fn validate_patterns(patterns: &[Pattern]) -> Result<(), MpmError> {
    match patterns.iter().find(|pattern| pattern.bytes.is_empty()) {
        Some(empty) => Err(MpmError::EmptyPattern { id: empty.id }),
        None => Ok(()),
    }
}

/// The matcher for an empty pattern set (a rule group without fast patterns), reporting `algo`:
/// never matches, needs no scratch. Hyperscan cannot compile an empty set.
pub fn empty_matcher(algo: MpmAlgo) -> Box<dyn MultiPatternMatcher> {
    Box::new(EmptyMatcher { algo })
}

/// See [`empty_matcher`].
struct EmptyMatcher {
    algo: MpmAlgo,
}

impl MultiPatternMatcher for EmptyMatcher {
    fn scan(&self, _: &[u8], _: &mut Scratch, _: &mut dyn FnMut(u32)) -> Result<(), MpmError> {
        Ok(())
    }

    fn prepare_scratch(&self, _: &mut Scratch) -> Result<(), MpmError> {
        Ok(())
    }

    fn pattern_count(&self) -> usize {
        0
    }

    fn memory_bytes(&self) -> usize {
        0
    }

    fn algo(&self) -> MpmAlgo {
        self.algo
    }
}

/// Splits `0..len` into windows starting every `step` bytes, each extended by `overlap` bytes
/// (clamped to `len`), so that every occurrence of a pattern of at most `overlap + 1` bytes lies
/// entirely inside at least one window. Stops at the first window that reaches `len`. An empty
/// input yields one empty window, so backends still run.
///
/// Backends use it to bound per-call work: Aho-Corasick folds case window by window, Hyperscan
/// takes at most `u32::MAX` bytes per call; `overlap` is the longest pattern minus one.
pub fn overlapping_windows(len: usize, step: usize, overlap: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let step = step.max(1);
    let window_at = move |start: usize| start..start.saturating_add(step).saturating_add(overlap).min(len);
    std::iter::successors(Some(window_at(0)), move |previous| {
        (previous.end < len).then(|| window_at(previous.start + step))
    })
}
