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

pub mod cache;
mod ffi;

pub use self::ffi::CodePath;
use self::ffi::{Database, HsScratch, Literal};
use picket_core::detect::mpm::{
    empty_matcher, overlapping_windows, validate_patterns, AcBuilder, BackendScratch, IdTable, MatcherBuilder, MpmAlgo,
    MpmError, MultiPatternMatcher, Pattern, Scratch, SeenSlots,
};

/// Whether this CPU can run Hyperscan (SSSE3 at least).
pub fn platform_supported() -> bool {
    ffi::platform_supported()
}

/// A pattern's literal: what Hyperscan compiles one entry for.
fn literal_key(pattern: &Pattern) -> (Vec<u8>, bool) {
    (pattern.bytes.clone(), pattern.nocase)
}

fn same_literal(a: &Pattern, b: &Pattern) -> bool {
    a.nocase == b.nocase && a.bytes == b.bytes
}

fn compile_error(message: String) -> MpmError {
    MpmError::Compile { algo: MpmAlgo::Hyperscan, message }
}

/// A little-endian u32 off the front of `bytes`, and the rest.
fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    Some((u32::from_le_bytes(*head), rest))
}

/// `MatcherBuilder::build` of the Hyperscan builders: validates `patterns`, gives an empty
/// set the matcher that never matches, and hands the rest to `make`.
fn build_checked(
    patterns: &[Pattern],
    make: impl FnOnce(&[Pattern]) -> Result<HsMatcher, MpmError>,
) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
    validate_patterns(patterns)?;
    if patterns.is_empty() {
        return Ok(empty_matcher(MpmAlgo::Hyperscan));
    }
    Ok(Box::new(make(patterns)?))
}

/// Compiles pattern sets into Hyperscan literal databases scanned on `path`
/// (`HsBuilder::default()`: libhs's own pick).
#[derive(Clone, Copy, Debug, Default)]
pub struct HsBuilder {
    pub path: CodePath,
}

impl MatcherBuilder for HsBuilder {
    fn algo(&self) -> MpmAlgo {
        MpmAlgo::Hyperscan
    }

    fn build(&self, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
        build_checked(patterns, |patterns| HsMatcher::build_on(patterns, self.path))
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
    /// Positions in the built set of the patterns in `fallback` (what the cache stores).
    fallback_positions: Vec<u32>,
    pattern_count: usize,
    /// `hs_scan` takes a 32-bit length; longer haystacks are scanned in overlapping windows.
    max_window: usize,
}

impl HsMatcher {
    /// Compiles `patterns` (non-empty, no empty pattern: see [`HsBuilder`]) for libhs's own
    /// code path.
    pub fn build(patterns: &[Pattern]) -> Result<HsMatcher, MpmError> {
        Self::build_on(patterns, CodePath::Native)
    }

    /// [`HsMatcher::build`], scanned on `path`.
    pub fn build_on(patterns: &[Pattern], path: CodePath) -> Result<HsMatcher, MpmError> {
        let (database, fallback) = Self::compile(patterns, path)?;
        Self::assemble(patterns, database, fallback, u32::MAX as usize)
    }

    /// `max_window` is a parameter so tests can exercise the >4 GiB windowing with small inputs.
    pub fn build_with_window(patterns: &[Pattern], max_window: usize) -> Result<HsMatcher, MpmError> {
        let (database, fallback) = Self::compile(patterns, CodePath::Native)?;
        Self::assemble(patterns, database, fallback, max_window)
    }

    /// Compiles the literals of `patterns` with libhs for `path`. Returns the database (`None`
    /// when every pattern fell back) and the patterns Hyperscan refused, which go to
    /// Aho-Corasick.
    fn compile(patterns: &[Pattern], path: CodePath) -> Result<(Option<Database>, Vec<Pattern>), MpmError> {
        if !platform_supported() {
            return Err(compile_error("this CPU lacks the SSSE3 instructions Hyperscan needs".into()));
        }
        let mut left: Vec<Pattern> = patterns.to_vec();
        let mut fallback: Vec<Pattern> = Vec::new();
        loop {
            if left.is_empty() {
                return Ok((None, fallback));
            }
            let (_, groups) = IdTable::group_by(&left, literal_key);
            let literals: Vec<Literal<'_>> = groups
                .iter()
                .enumerate()
                .map(|(group, (bytes, nocase))| Literal { bytes, caseless: *nocase, id: group as u32 })
                .collect();
            match Database::compile_literals(&literals, path) {
                Ok(database) => return Ok((Some(database), fallback)),
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
        }
    }

    /// The matcher from a compiled (or cached) `database` of the patterns not in `fallback`:
    /// their literal groups are numbered as [`HsMatcher::compile`] numbered them.
    fn assemble(
        patterns: &[Pattern],
        database: Option<Database>,
        fallback: Vec<Pattern>,
        max_window: usize,
    ) -> Result<HsMatcher, MpmError> {
        let hs = database.map(|database| {
            let left: Vec<Pattern> =
                patterns.iter().filter(|p| !fallback.iter().any(|f| same_literal(f, p))).cloned().collect();
            let (ids, groups) = IdTable::group_by(&left, literal_key);
            let longest = groups.iter().map(|(bytes, _)| bytes.len()).max().unwrap_or(1);
            HsDatabase { database, ids, longest }
        });
        let fallback_ids = fallback.iter().map(|p| p.id).collect();
        let fallback_positions = (0..patterns.len())
            .filter(|&i| fallback.iter().any(|f| same_literal(f, &patterns[i])))
            .map(|i| i as u32)
            .collect();
        let fallback = match fallback.is_empty() {
            true => None,
            false => Some(AcBuilder.build(&fallback)?),
        };
        Ok(HsMatcher {
            hs,
            fallback,
            fallback_ids,
            fallback_positions,
            pattern_count: patterns.len(),
            max_window: max_window.clamp(1, u32::MAX as usize),
        })
    }

    /// What the on-disk cache stores of this matcher (see [`cache`]): the positions of the
    /// patterns that fell back in the set it was built from, then the serialized database.
    fn cache_payload(&self) -> Result<Vec<u8>, &'static str> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.fallback_positions.len() as u32).to_le_bytes());
        for i in &self.fallback_positions {
            out.extend_from_slice(&i.to_le_bytes());
        }
        match &self.hs {
            Some(hs) => {
                out.push(1);
                out.extend_from_slice(&hs.database.serialize()?);
            }
            None => out.push(0),
        }
        Ok(out)
    }

    /// The matcher back from [`HsMatcher::cache_payload`] bytes, for the same `patterns`,
    /// compiled for `path`.
    fn from_cache_payload(patterns: &[Pattern], payload: &[u8], path: CodePath) -> Result<HsMatcher, String> {
        let (count, rest) = take_u32(payload).ok_or("truncated")?;
        let mut rest = rest;
        let mut fallback = Vec::new();
        for _ in 0..count {
            let (i, tail) = take_u32(rest).ok_or("truncated")?;
            let pattern = patterns.get(i as usize).ok_or("fallback position out of range")?;
            fallback.push(pattern.clone());
            rest = tail;
        }
        let (&has_db, db_bytes) = rest.split_first().ok_or("truncated")?;
        let database = match has_db {
            0 if db_bytes.is_empty() => None,
            1 => Some(Database::deserialize(db_bytes, path)?),
            _ => return Err("bad database marker".into()),
        };
        Self::assemble(patterns, database, fallback, u32::MAX as usize).map_err(|e| e.to_string())
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
        seen.reset_for(hs.ids.slot_count());
        for window in overlapping_windows(haystack.len(), max_window, hs.longest.saturating_sub(1)) {
            let data = haystack.get(window).unwrap_or_default();
            hs.database
                .scan(data, &mut state.raw, |group| hs.ids.report(group as usize, seen, on_match))
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
