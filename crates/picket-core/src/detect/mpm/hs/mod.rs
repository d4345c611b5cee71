//! Hyperscan backend over the system libhs (literal mode), through the wrapper in `ffi`.
//!
//! Each distinct (bytes, nocase) pattern becomes one literal whose Hyperscan id is its group in
//! the [`IdTable`]. `HS_FLAG_CASELESS` folds ASCII letters only because `HS_FLAG_UTF8` is never
//! set, which is Suricata's `nocase`.

mod ffi;

use std::sync::atomic::{AtomicU64, Ordering};

use self::ffi::{Database, HsScratch, Literal};
use super::slots::IdTable;
use super::{overlapping_windows, MpmAlgo, MpmError, MultiPatternMatcher, Pattern, Scratch};

pub(super) use self::ffi::HsScratch as RawScratch;

/// Most `Scratch::hyperscan_ready_for` entries kept; beyond that the list restarts (each
/// database then re-checks the scratch once more, which does not reallocate).
const MAX_REMEMBERED_DATABASES: usize = 4096;

/// Source of [`HsMatcher::serial`]: identifies a database for the lifetime of the process.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

pub(super) fn platform_supported() -> bool {
    ffi::platform_supported()
}

pub(super) struct HsMatcher {
    database: Database,
    ids: IdTable,
    longest: usize,
    pattern_count: usize,
    /// `hs_scan` takes a 32-bit length; longer haystacks are scanned in overlapping windows.
    max_window: usize,
    serial: u64,
}

impl HsMatcher {
    pub(super) fn build(patterns: &[Pattern]) -> Result<HsMatcher, MpmError> {
        Self::build_with_window(patterns, u32::MAX as usize)
    }

    /// `max_window` is a parameter so tests can exercise the >4 GiB windowing with small inputs.
    pub(super) fn build_with_window(
        patterns: &[Pattern],
        max_window: usize,
    ) -> Result<HsMatcher, MpmError> {
        let compile_error = |message: String| MpmError::Compile {
            algo: MpmAlgo::Hyperscan,
            message,
        };
        if !platform_supported() {
            return Err(compile_error(
                "this CPU lacks the SSSE3 instructions Hyperscan needs".into(),
            ));
        }
        let (ids, groups) = IdTable::group_by(patterns, |p| (p.bytes.clone(), p.nocase));
        let literals: Vec<Literal<'_>> = groups
            .iter()
            .enumerate()
            .map(|(group, (bytes, nocase))| Literal {
                bytes,
                caseless: *nocase,
                id: group as u32,
            })
            .collect();
        let database = Database::compile_literals(&literals).map_err(compile_error)?;
        Ok(HsMatcher {
            database,
            ids,
            longest: groups
                .iter()
                .map(|(bytes, _)| bytes.len())
                .max()
                .unwrap_or(1),
            pattern_count: patterns.len(),
            max_window: max_window.clamp(1, u32::MAX as usize),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    fn scan_error(message: &str) -> MpmError {
        MpmError::Scan {
            algo: MpmAlgo::Hyperscan,
            message: message.to_string(),
        }
    }
}

impl MultiPatternMatcher for HsMatcher {
    fn scan(
        &self,
        haystack: &[u8],
        scratch: &mut Scratch,
        on_match: &mut dyn FnMut(u32),
    ) -> Result<(), MpmError> {
        self.prepare_scratch(scratch)?;
        let Scratch {
            seen,
            hyperscan: Some(hs_scratch),
            ..
        } = scratch
        else {
            return Err(Self::scan_error("scratch missing after preparation"));
        };
        seen.reset_for(self.ids.slot_count());
        for window in overlapping_windows(
            haystack.len(),
            self.max_window,
            self.longest.saturating_sub(1),
        ) {
            let data = haystack.get(window).unwrap_or_default();
            self.database
                .scan(data, hs_scratch, |group| {
                    self.ids.report(group as usize, seen, on_match)
                })
                .map_err(Self::scan_error)?;
        }
        Ok(())
    }

    /// A Hyperscan scratch must be passed to `hs_alloc_scratch` for *every* database it is used
    /// with (a scratch sized for another database can pass `hs_scan`'s checks and still be too
    /// small), so the scratch remembers which databases it was sized for. The lookup is a binary
    /// search, cheaper than asking libhs on every scan.
    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError> {
        let Err(insert_at) = scratch.hyperscan_ready_for.binary_search(&self.serial) else {
            return Ok(());
        };
        if let Err(message) = HsScratch::fit(&mut scratch.hyperscan, &self.database) {
            // A failed resize may have freed the scratch, so no database is known to fit it.
            if scratch.hyperscan.is_none() {
                scratch.hyperscan_ready_for.clear();
            }
            return Err(Self::scan_error(message));
        }
        let ready = &mut scratch.hyperscan_ready_for;
        if ready.len() >= MAX_REMEMBERED_DATABASES {
            ready.clear();
            ready.push(self.serial);
        } else {
            ready.insert(insert_at, self.serial);
        }
        scratch.seen.reset_for(self.ids.slot_count());
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
