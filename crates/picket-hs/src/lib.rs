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

use std::sync::atomic::{AtomicU64, Ordering};

use self::ffi::{Database, HsScratch, Literal};
use picket_core::detect::mpm::{
    empty_matcher, overlapping_windows, validate_patterns, BackendScratch, IdTable, MatcherBuilder, MpmAlgo, MpmError,
    MultiPatternMatcher, Pattern, Scratch, SeenSlots,
};

/// Most `HsScratchState::ready_for` entries kept; beyond that the list restarts (each
/// database then re-checks the scratch once more, which does not reallocate).
const MAX_REMEMBERED_DATABASES: usize = 4096;

/// Source of [`HsMatcher::serial`]: identifies a database for the lifetime of the process.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

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

/// This backend's part of a worker's [`Scratch`].
#[derive(Default)]
struct HsScratchState {
    /// Hyperscan scratch, sized for every database in `ready_for`.
    raw: Option<HsScratch>,
    /// Serials of the databases `raw` has been sized for, sorted.
    ready_for: Vec<u64>,
}

impl BackendScratch for HsScratchState {
    fn memory_bytes(&self) -> usize {
        self.ready_for.capacity() * 8 + self.raw.as_ref().map_or(0, HsScratch::size)
    }
}

impl HsScratchState {
    /// The scratch, sized for `database` (identified by `serial`) if it was not yet.
    ///
    /// A Hyperscan scratch must be passed to `hs_alloc_scratch` for *every* database it is used
    /// with (a scratch sized for another database can pass `hs_scan`'s checks and still be too
    /// small), so the state remembers which databases it was sized for. The lookup is a binary
    /// search, cheaper than asking libhs on every scan.
    #[inline]
    fn fit(&mut self, serial: u64, database: &Database) -> Result<&mut HsScratch, &'static str> {
        if let Err(insert_at) = self.ready_for.binary_search(&serial) {
            if let Err(message) = HsScratch::fit(&mut self.raw, database) {
                // A failed resize may have freed the scratch, so no database is known to fit it.
                if self.raw.is_none() {
                    self.ready_for.clear();
                }
                return Err(message);
            }
            if self.ready_for.len() >= MAX_REMEMBERED_DATABASES {
                self.ready_for.clear();
                self.ready_for.push(serial);
            } else {
                self.ready_for.insert(insert_at, serial);
            }
        }
        self.raw.as_mut().ok_or("scratch missing after preparation")
    }
}

/// A compiled Hyperscan database and the ids its literals report.
pub struct HsMatcher {
    database: Database,
    ids: IdTable,
    longest: usize,
    pattern_count: usize,
    /// `hs_scan` takes a 32-bit length; longer haystacks are scanned in overlapping windows.
    max_window: usize,
    serial: u64,
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
        let (ids, groups) = IdTable::group_by(patterns, |p| (p.bytes.clone(), p.nocase));
        let literals: Vec<Literal<'_>> = groups
            .iter()
            .enumerate()
            .map(|(group, (bytes, nocase))| Literal { bytes, caseless: *nocase, id: group as u32 })
            .collect();
        let database = Database::compile_literals(&literals).map_err(compile_error)?;
        Ok(HsMatcher {
            database,
            ids,
            longest: groups.iter().map(|(bytes, _)| bytes.len()).max().unwrap_or(1),
            pattern_count: patterns.len(),
            max_window: max_window.clamp(1, u32::MAX as usize),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    fn scan_error(message: &str) -> MpmError {
        MpmError::Scan { algo: MpmAlgo::Hyperscan, message: message.to_string() }
    }

    #[inline]
    fn scan_with(
        &self,
        haystack: &[u8],
        seen: &mut SeenSlots,
        state: &mut HsScratchState,
        on_match: &mut dyn FnMut(u32),
    ) -> Result<(), MpmError> {
        let hs_scratch = state.fit(self.serial, &self.database).map_err(Self::scan_error)?;
        seen.reset_for(self.ids.slot_count());
        for window in overlapping_windows(haystack.len(), self.max_window, self.longest.saturating_sub(1)) {
            let data = haystack.get(window).unwrap_or_default();
            self.database
                .scan(data, hs_scratch, |group| self.ids.report(group as usize, seen, on_match))
                .map_err(Self::scan_error)?;
        }
        Ok(())
    }
}

impl MultiPatternMatcher for HsMatcher {
    fn scan(&self, haystack: &[u8], scratch: &mut Scratch, on_match: &mut dyn FnMut(u32)) -> Result<(), MpmError> {
        if let (seen, Some(state)) = scratch.backend_parts::<HsScratchState>() {
            return self.scan_with(haystack, seen, state, on_match);
        }
        // First Hyperscan scan with this scratch (no `prepare_scratch` at start-up).
        self.prepare_scratch(scratch)?;
        match scratch.backend_parts::<HsScratchState>() {
            (seen, Some(state)) => self.scan_with(haystack, seen, state, on_match),
            (_, None) => Err(Self::scan_error("scratch missing after preparation")),
        }
    }

    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError> {
        if scratch.backend_parts::<HsScratchState>().1.is_none() {
            scratch.set_backend(Box::<HsScratchState>::default());
        }
        let (seen, Some(state)) = scratch.backend_parts::<HsScratchState>() else {
            return Err(Self::scan_error("scratch missing after preparation"));
        };
        state.fit(self.serial, &self.database).map_err(Self::scan_error)?;
        seen.reset_for(self.ids.slot_count());
        Ok(())
    }

    fn pattern_count(&self) -> usize {
        self.pattern_count
    }

    fn memory_bytes(&self) -> usize {
        self.database.size() + self.ids.memory_bytes()
    }

    fn algo(&self) -> MpmAlgo {
        MpmAlgo::Hyperscan
    }
}
