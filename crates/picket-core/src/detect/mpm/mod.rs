//! Multi-pattern matcher (MPM): the prefilter of the detection engine.
//!
//! Every rule contributes one literal "fast pattern" (a Suricata `content`, possibly binary,
//! possibly `nocase`). Per packet, the engine scans the payload once against all fast patterns of
//! the rule group and only evaluates the rules whose pattern occurred.
//!
//! Two backends sit behind [`MultiPatternMatcher`]:
//! - **Hyperscan** (cargo feature `hyperscan`, default on): the system `libhs` in literal mode
//!   (`hs_compile_lit_multi`), declared by `hyperscan-sys` and wrapped safely in `hs/ffi.rs`, the
//!   only `unsafe` of this module. The `hyperscan` crate was not used: it accepts binary
//!   patterns only as `\xNN` regexes, and regex mode compiles short literals pathologically
//!   slowly (256 one-byte patterns: 23 s vs 4 ms in literal mode; ET Open contents incl. short
//!   ones: 2.5 s vs 0.8 s for 20k).
//! - **Aho-Corasick** (always built): a double-array automaton from `daachorse`. On ET Open
//!   contents it scanned ~2x faster than the `aho-corasick` crate's contiguous NFA (5k patterns:
//!   204 vs 105 MB/s; 20k: 420 vs 173 MB/s) and needs a fraction of its DFA's memory (20k: 2.5 MB
//!   vs 190 MB), so it is the pure-Rust choice.
//!
//! Hyperscan is 2-10x faster at scanning and compiles 5-10x slower; `benches/mpm.rs` measures both.
//!
//! Contract shared by both backends (tested against a naive reference matcher):
//! - `on_match(id)` is called exactly once per scan for every pattern id that occurs in the
//!   haystack, in no particular order. Ids that are given to several patterns are still reported
//!   once; identical patterns with different ids each report their own id.
//! - `nocase` folds ASCII letters only (like Suricata); other bytes always match exactly.
//! - The database is read-only after [`build`] and shared between workers (`Send + Sync`);
//!   every worker owns one [`Scratch`], which may be used with any number of matchers.

// All FFI lives in hs/ffi.rs, which alone opts back in.
#![deny(unsafe_code)]

mod ac;
#[cfg(feature = "hyperscan")]
mod hs;
mod slots;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

pub use slots::Scratch;

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
        Pattern {
            id,
            bytes: bytes.into(),
            nocase,
        }
    }
}

/// A compiled pattern set. Build with [`build`].
pub trait MultiPatternMatcher: Send + Sync {
    /// Calls `on_match(pattern_id)` once for each distinct id whose pattern occurs in `haystack`.
    ///
    /// `scratch` is the calling worker's own; it is grown on first use with this matcher
    /// (call [`MultiPatternMatcher::prepare_scratch`] at start-up to keep that allocation off
    /// the data path). An error means the scan was incomplete: count it, the packet may have
    /// missed detections. `on_match` must not panic (Hyperscan calls it from C).
    fn scan(
        &self,
        haystack: &[u8],
        scratch: &mut Scratch,
        on_match: &mut dyn FnMut(u32),
    ) -> Result<(), MpmError>;

    /// Sizes `scratch` for this matcher so that `scan` does not allocate.
    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError>;

    /// Number of patterns given to [`build`] (duplicates included).
    fn pattern_count(&self) -> usize;

    /// Heap bytes held by the compiled database and its id tables (not the scratch).
    fn memory_bytes(&self) -> usize;

    /// The backend actually used (never [`MpmAlgo::Auto`]).
    fn algo(&self) -> MpmAlgo;
}

/// Backend selection, parsed from Suricata's `mpm-algo` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MpmAlgo {
    /// Hyperscan if built in and supported by this CPU, otherwise Aho-Corasick.
    #[default]
    Auto,
    Hyperscan,
    AhoCorasick,
}

impl MpmAlgo {
    /// Whether this binary was built with the Hyperscan backend.
    pub const HYPERSCAN_BUILT_IN: bool = cfg!(feature = "hyperscan");

    /// Resolves [`MpmAlgo::Auto`] to the backend [`build`] would use.
    pub fn resolve(self) -> MpmAlgo {
        match self {
            MpmAlgo::Auto if hyperscan_usable() => MpmAlgo::Hyperscan,
            MpmAlgo::Auto => MpmAlgo::AhoCorasick,
            other => other,
        }
    }
}

#[cfg(feature = "hyperscan")]
fn hyperscan_usable() -> bool {
    hs::platform_supported()
}

#[cfg(not(feature = "hyperscan"))]
fn hyperscan_usable() -> bool {
    false
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
    /// `mpm-algo: hs` was requested but this binary was built without the `hyperscan` feature.
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

/// Compiles `patterns` with the chosen backend. An empty set yields a matcher that never matches.
pub fn build(
    algo: MpmAlgo,
    patterns: &[Pattern],
) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
    if let Some(empty) = patterns.iter().find(|pattern| pattern.bytes.is_empty()) {
        return Err(MpmError::EmptyPattern { id: empty.id });
    }
    let algo = algo.resolve();
    if patterns.is_empty() {
        return Ok(Box::new(EmptyMatcher { algo }));
    }
    match algo {
        MpmAlgo::Hyperscan => build_hyperscan(patterns),
        // `resolve` never returns Auto; treat it like the fallback rather than panic.
        MpmAlgo::AhoCorasick | MpmAlgo::Auto => Ok(Box::new(ac::AcMatcher::build(patterns)?)),
    }
}

#[cfg(feature = "hyperscan")]
fn build_hyperscan(patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
    Ok(Box::new(hs::HsMatcher::build(patterns)?))
}

#[cfg(not(feature = "hyperscan"))]
fn build_hyperscan(_patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
    Err(MpmError::HyperscanNotBuiltIn)
}

/// Matcher for a rule group without fast patterns. Hyperscan cannot compile an empty set.
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
fn overlapping_windows(
    len: usize,
    step: usize,
    overlap: usize,
) -> impl Iterator<Item = std::ops::Range<usize>> {
    let step = step.max(1);
    let window_at =
        move |start: usize| start..start.saturating_add(step).saturating_add(overlap).min(len);
    std::iter::successors(Some(window_at(0)), move |previous| {
        (previous.end < len).then(|| window_at(previous.start + step))
    })
}
