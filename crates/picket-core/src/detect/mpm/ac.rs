//! Pure-Rust backend: one double-array Aho-Corasick automaton (`daachorse`) over all patterns.
//!
//! daachorse has no case-insensitive mode, so when any pattern is `nocase` the automaton holds
//! ASCII-lowercased patterns and scans a lowercased copy of the haystack (made window by window
//! in the scratch, so memory stays bounded for any haystack). Case-sensitive patterns containing
//! letters are then confirmed against the original bytes. When no pattern is `nocase`, the
//! haystack is scanned as is.

use std::collections::HashMap;

use daachorse::{DoubleArrayAhoCorasick, DoubleArrayAhoCorasickBuilder, MatchKind};

use super::slots::{IdTable, SeenSlots};
use super::{overlapping_windows, MpmAlgo, MpmError, MultiPatternMatcher, Pattern, Scratch};

/// Bytes lowercased per window. Small enough to stay in L1 with the haystack, large enough that
/// the `longest - 1` bytes rescanned between windows are negligible.
const FOLD_WINDOW: usize = 8 * 1024;

/// One pattern variant behind an automaton entry: e.g. entry "abc" may stand for `nocase "abc"`
/// and for case-sensitive "aBc".
#[derive(Clone, Copy)]
struct Variant {
    group: u32,
    /// Range of `exact_bytes` the match must equal; `None` when folding cannot change the answer.
    exact: Option<(usize, usize)>,
}

pub(super) struct AcMatcher {
    automaton: DoubleArrayAhoCorasick<u32>,
    /// Automaton value -> range of `variants`.
    entries: Vec<(u32, u32)>,
    variants: Vec<Variant>,
    exact_bytes: Vec<u8>,
    ids: IdTable,
    /// Whether the automaton and the scanned bytes are ASCII-lowercased.
    fold: bool,
    longest: usize,
    pattern_count: usize,
    window: usize,
}

impl AcMatcher {
    pub(super) fn build(patterns: &[Pattern]) -> Result<AcMatcher, MpmError> {
        Self::build_with_window(patterns, FOLD_WINDOW)
    }

    /// `window` is a parameter so tests can exercise window boundaries with small inputs.
    pub(super) fn build_with_window(patterns: &[Pattern], window: usize) -> Result<AcMatcher, MpmError> {
        let (ids, groups) = IdTable::group_by(patterns, |p| (p.bytes.clone(), p.nocase));
        let fold = groups.iter().any(|(_, nocase)| *nocase);

        let mut entry_of_key: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut variants_per_entry: Vec<Vec<Variant>> = Vec::new();
        let mut exact_bytes = Vec::new();
        for (group, (bytes, nocase)) in groups.iter().enumerate() {
            let key = if fold { bytes.to_ascii_lowercase() } else { bytes.clone() };
            let entry = *entry_of_key.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                variants_per_entry.push(Vec::new());
                variants_per_entry.len() - 1
            });
            let needs_exact_check = fold && !nocase && bytes.iter().any(u8::is_ascii_alphabetic);
            let exact = needs_exact_check.then(|| {
                exact_bytes.extend_from_slice(bytes);
                (exact_bytes.len() - bytes.len(), bytes.len())
            });
            if let Some(variants) = variants_per_entry.get_mut(entry) {
                variants.push(Variant { group: group as u32, exact });
            }
        }

        let mut entries = Vec::with_capacity(variants_per_entry.len());
        let mut variants = Vec::with_capacity(groups.len());
        for entry_variants in variants_per_entry {
            entries.push((variants.len() as u32, entry_variants.len() as u32));
            variants.extend(entry_variants);
        }

        let automaton = DoubleArrayAhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build_with_values(keys.iter().enumerate().map(|(value, key)| (key, value as u32)))
            .map_err(|error| MpmError::Compile { algo: MpmAlgo::AhoCorasick, message: error.to_string() })?;

        Ok(AcMatcher {
            automaton,
            entries,
            variants,
            exact_bytes,
            ids,
            fold,
            longest: keys.iter().map(Vec::len).max().unwrap_or(1),
            pattern_count: patterns.len(),
            window: window.max(1),
        })
    }

    /// Reports the ids behind automaton entry `entry`, matched at `start..end` of `original`.
    #[inline]
    fn report_entry(
        &self,
        entry: u32,
        original: &[u8],
        start: usize,
        end: usize,
        seen: &mut SeenSlots,
        on_match: &mut dyn FnMut(u32),
    ) {
        let Some(&(first, count)) = self.entries.get(entry as usize) else {
            return;
        };
        let Some(variants) = self.variants.get(first as usize..(first + count) as usize) else {
            return;
        };
        for variant in variants {
            if let Some((offset, len)) = variant.exact {
                if original.get(start..end) != self.exact_bytes.get(offset..offset + len) {
                    continue;
                }
            }
            self.ids.report(variant.group as usize, seen, on_match);
        }
    }
}

impl MultiPatternMatcher for AcMatcher {
    fn scan(&self, haystack: &[u8], scratch: &mut Scratch, on_match: &mut dyn FnMut(u32)) -> Result<(), MpmError> {
        let Scratch { seen, folded, .. } = scratch;
        seen.reset_for(self.ids.slot_count());
        if !self.fold {
            for found in self.automaton.find_overlapping_iter(haystack) {
                self.report_entry(found.value(), haystack, found.start(), found.end(), seen, on_match);
            }
            return Ok(());
        }
        for window in overlapping_windows(haystack.len(), self.window, self.longest.saturating_sub(1)) {
            let Some(original) = haystack.get(window) else {
                continue;
            };
            folded.clear();
            folded.extend(original.iter().map(u8::to_ascii_lowercase));
            for found in self.automaton.find_overlapping_iter(&folded[..]) {
                self.report_entry(found.value(), original, found.start(), found.end(), seen, on_match);
            }
        }
        Ok(())
    }

    fn prepare_scratch(&self, scratch: &mut Scratch) -> Result<(), MpmError> {
        scratch.seen.reset_for(self.ids.slot_count());
        if self.fold {
            scratch.folded.clear();
            scratch.folded.reserve(self.window.saturating_add(self.longest));
        }
        Ok(())
    }

    fn pattern_count(&self) -> usize {
        self.pattern_count
    }

    fn memory_bytes(&self) -> usize {
        self.automaton.heap_bytes()
            + self.entries.capacity() * 8
            + self.variants.capacity() * std::mem::size_of::<Variant>()
            + self.exact_bytes.capacity()
            + self.ids.memory_bytes()
    }

    fn algo(&self) -> MpmAlgo {
        MpmAlgo::AhoCorasick
    }
}
