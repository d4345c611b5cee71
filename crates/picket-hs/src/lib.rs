//! Hyperscan backend over the system libhs (literal mode), through the wrapper in `ffi`.
//!
//! Each distinct (bytes, nocase) pattern becomes one literal whose Hyperscan id is its group in
//! the [`IdTable`]. `HS_FLAG_CASELESS` folds ASCII letters only because `HS_FLAG_UTF8` is never
//! set, which is Suricata's `nocase`.
//!
//! A crate of its own so that picket-core stays free of `unsafe`: it implements picket-core's
//! [`MatcherBuilder`] / [`MultiPatternMatcher`] on that crate's public API only, and the
//! `picket` binary picks it (`mpm-algo: hs`, or `auto` on a CPU that can run it).

// All FFI lives in ffi.rs, which alone opts back in.
#![deny(unsafe_code)]

mod ffi;

use self::ffi::{Database, HsScratch, Literal};
use picket_core::detect::mpm::{
    empty_matcher, overlapping_windows, validate_patterns, AcBuilder, BackendScratch, IdTable, MatcherBuilder, MpmAlgo,
    MpmError, MultiPatternMatcher, Pattern, Scratch, SeenSlots,
};

/// Whether this CPU can run Hyperscan (SSSE3 at least).
pub fn platform_supported() -> bool {
    ffi::platform_supported()
}

/// Compiles pattern sets into Hyperscan literal databases.
#[derive(Clone, Copy, Debug, Default)]
pub struct HsBuilder;

impl MatcherBuilder for HsBuilder {
    fn algo(&self) -> MpmAlgo {
        MpmAlgo::Hyperscan
    }

    fn build(&self, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
        validate_patterns(patterns)?;
        if patterns.is_empty() {
            return Ok(empty_matcher(MpmAlgo::Hyperscan));
        }
        Ok(Box::new(HsMatcher::build(patterns)?))
    }
}

/// This backend's part of a worker's [`Scratch`]: one Hyperscan scratch, grown for every
/// database it is used with (`ffi::HsScratch` remembers which, and a scan checks it).
#[derive(Default)]
struct HsScratchState {
    raw: Option<HsScratch>,
}

impl BackendScratch for HsScratchState {
    fn memory_bytes(&self) -> usize {
        self.raw.as_ref().map_or(0, HsScratch::size)
    }
}

impl HsScratchState {
    /// The scratch, sized for `database` if it was not yet.
    #[inline]
    fn fit(&mut self, database: &Database) -> Result<&mut HsScratch, &'static str> {
        HsScratch::fit(&mut self.raw, database)?;
        self.raw.as_mut().ok_or("scratch missing after preparation")
    }
}

/// Most patterns of one set that may fall back to Aho-Corasick; past that the set fails as a
/// whole (each fallback costs one more Hyperscan compile of the set).
const MAX_FALLBACK_PATTERNS: usize = 64;

/// The Hyperscan part of a matcher: a compiled database and the ids its literals report.
struct HsDatabase {
    database: Database,
    ids: IdTable,
    longest: usize,
}

/// A compiled Hyperscan database and the ids its literals report; patterns Hyperscan refuses
/// (a 16 KiB literal, say) go to a small Aho-Corasick matcher scanned after it, so one odd
/// rule costs a second scan of its group instead of the whole start-up.
pub struct HsMatcher {
    hs: Option<HsDatabase>,
    fallback: Option<Box<dyn MultiPatternMatcher>>,
    fallback_ids: Vec<u32>,
    pattern_count: usize,
    /// `hs_scan` takes a 32-bit length; longer haystacks are scanned in overlapping windows.
    max_window: usize,
}

impl HsMatcher {
    /// Compiles `patterns` (non-empty, no empty pattern: see [`HsBuilder`]).
    pub fn build(patterns: &[Pattern]) -> Result<HsMatcher, MpmError> {
        Self::build_with_window(patterns, u32::MAX as usize)
    }

    /// `max_window` is a parameter so tests can exercise the >4 GiB windowing with small inputs.
    pub fn build_with_window(patterns: &[Pattern], max_window: usize) -> Result<HsMatcher, MpmError> {
        let compile_error = |message: String| MpmError::Compile { algo: MpmAlgo::Hyperscan, message };
        if !platform_supported() {
            return Err(compile_error("this CPU lacks the SSSE3 instructions Hyperscan needs".into()));
        }
        let mut left: Vec<Pattern> = patterns.to_vec();
        let mut fallback: Vec<Pattern> = Vec::new();
        let hs = loop {
            if left.is_empty() {
                break None;
            }
            let (ids, groups) = IdTable::group_by(&left, |p| (p.bytes.clone(), p.nocase));
            let literals: Vec<Literal<'_>> = groups
                .iter()
                .enumerate()
                .map(|(group, (bytes, nocase))| Literal { bytes, caseless: *nocase, id: group as u32 })
                .collect();
            match Database::compile_literals(&literals) {
                Ok(database) => {
                    let longest = groups.iter().map(|(bytes, _)| bytes.len()).max().unwrap_or(1);
                    break Some(HsDatabase { database, ids, longest });
                }
                // libhs names the literal it refuses: that literal (every pattern with its
                // bytes) falls back, the rest is compiled again.
                Err(e) => match e.literal.and_then(|i| groups.get(i)) {
                    Some((bytes, nocase)) if fallback.len() < MAX_FALLBACK_PATTERNS => {
                        let (refused, kept): (Vec<Pattern>, Vec<Pattern>) =
                            left.into_iter().partition(|p| p.bytes == *bytes && p.nocase == *nocase);
                        fallback.extend(refused);
                        left = kept;
                    }
                    _ => return Err(compile_error(e.message)),
                },
            }
        };
        let fallback_ids = fallback.iter().map(|p| p.id).collect();
        let fallback = match fallback.is_empty() {
            true => None,
            false => Some(AcBuilder.build(&fallback)?),
        };
        Ok(HsMatcher {
            hs,
            fallback,
            fallback_ids,
            pattern_count: patterns.len(),
            max_window: max_window.clamp(1, u32::MAX as usize),
        })
    }

    fn scan_error(message: &str) -> MpmError {
        MpmError::Scan { algo: MpmAlgo::Hyperscan, message: message.to_string() }
    }

    #[inline]
    fn scan_with(
        hs: &HsDatabase,
        max_window: usize,
        haystack: &[u8],
        seen: &mut SeenSlots,
        state: &mut HsScratchState,
        on_match: &mut dyn FnMut(u32),
    ) -> Result<(), MpmError> {
        let hs_scratch = state.fit(&hs.database).map_err(Self::scan_error)?;
        seen.reset_for(hs.ids.slot_count());
        for window in overlapping_windows(haystack.len(), max_window, hs.longest.saturating_sub(1)) {
            let data = haystack.get(window).unwrap_or_default();
            hs.database
                .scan(data, hs_scratch, |group| hs.ids.report(group as usize, seen, on_match))
                .map_err(Self::scan_error)?;
        }
        Ok(())
    }

    fn scan_hs(
        &self,
        hs: &HsDatabase,
        haystack: &[u8],
        scratch: &mut Scratch,
        on_match: &mut dyn FnMut(u32),
    ) -> Result<(), MpmError> {
        if scratch.backend_parts::<HsScratchState>().1.is_none() {
            // First Hyperscan scan with this scratch (no `prepare_scratch` at start-up).
            scratch.set_backend(Box::<HsScratchState>::default());
        }
        match scratch.backend_parts::<HsScratchState>() {
            (seen, Some(state)) => Self::scan_with(hs, self.max_window, haystack, seen, state, on_match),
            (_, None) => Err(Self::scan_error("scratch missing after preparation")),
        }
    }
}

impl MultiPatternMatcher for HsMatcher {
    fn scan(&self, haystack: &[u8], scratch: &mut Scratch, on_match: &mut dyn FnMut(u32)) -> Result<(), MpmError> {
        if let Some(hs) = &self.hs {
            self.scan_hs(hs, haystack, scratch, on_match)?;
        }
        if let Some(fallback) = &self.fallback {
            fallback.scan(haystack, scratch, on_match)?;
        }
        Ok(())
    }

    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError> {
        if let Some(hs) = &self.hs {
            if scratch.backend_parts::<HsScratchState>().1.is_none() {
                scratch.set_backend(Box::<HsScratchState>::default());
            }
            let (seen, Some(state)) = scratch.backend_parts::<HsScratchState>() else {
                return Err(Self::scan_error("scratch missing after preparation"));
            };
            state.fit(&hs.database).map_err(Self::scan_error)?;
            seen.reset_for(hs.ids.slot_count());
        }
        if let Some(fallback) = &self.fallback {
            fallback.prepare_scratch(scratch)?;
        }
        Ok(())
    }

    fn fallback_pattern_ids(&self) -> &[u32] {
        &self.fallback_ids
    }

    fn pattern_count(&self) -> usize {
        self.pattern_count
    }

    fn memory_bytes(&self) -> usize {
        self.hs.as_ref().map_or(0, |hs| hs.database.size() + hs.ids.memory_bytes())
            + self.fallback.as_ref().map_or(0, |f| f.memory_bytes())
    }

    fn algo(&self) -> MpmAlgo {
        MpmAlgo::Hyperscan
    }
}
