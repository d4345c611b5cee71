//! Pattern-id bookkeeping shared by the backends, and the per-worker [`Scratch`]. Public so that
//! a backend outside this module (Hyperscan) can use them.
//!
//! Backends only see *groups*: one per distinct pattern text as that backend distinguishes it
//! (Hyperscan: bytes + nocase). A group stands for one or more user ids; ids are mapped to dense
//! *slots* so that a per-scan bitset ([`SeenSlots`]) can report every id exactly once, however
//! many patterns carry it and however often they occur.

use std::any::Any;
use std::collections::HashMap;
use std::hash::Hash;

use super::Pattern;

/// Maps backend groups to the user ids they report.
pub struct IdTable {
    /// Slot -> user id.
    slot_ids: Vec<u32>,
    /// Group -> range of `group_slots`.
    group_spans: Vec<(u32, u32)>,
    group_slots: Vec<u32>,
}

impl IdTable {
    /// Groups `patterns` by `key`; group `i` has key `keys[i]`, in order of first appearance.
    /// A backend compiles one entry per group and reports matches by group number.
    pub fn group_by<K, F>(patterns: &[Pattern], key: F) -> (IdTable, Vec<K>)
    where
        K: Hash + Eq + Clone,
        F: Fn(&Pattern) -> K,
    {
        let mut slot_of_id: HashMap<u32, u32> = HashMap::new();
        let mut slot_ids = Vec::new();
        let mut group_of_key: HashMap<K, usize> = HashMap::new();
        let mut keys = Vec::new();
        let mut slots_per_group: Vec<Vec<u32>> = Vec::new();
        for pattern in patterns {
            let slot = *slot_of_id.entry(pattern.id).or_insert_with(|| {
                slot_ids.push(pattern.id);
                (slot_ids.len() - 1) as u32
            });
            let pattern_key = key(pattern);
            let group = *group_of_key.entry(pattern_key.clone()).or_insert_with(|| {
                keys.push(pattern_key);
                slots_per_group.push(Vec::new());
                slots_per_group.len() - 1
            });
            if let Some(slots) = slots_per_group.get_mut(group) {
                if !slots.contains(&slot) {
                    slots.push(slot);
                }
            }
        }
        let mut group_spans = Vec::with_capacity(slots_per_group.len());
        let mut group_slots = Vec::with_capacity(patterns.len());
        for slots in slots_per_group {
            group_spans.push((group_slots.len() as u32, slots.len() as u32));
            group_slots.extend(slots);
        }
        (IdTable { slot_ids, group_spans, group_slots }, keys)
    }

    /// Number of distinct user ids: the size [`SeenSlots::reset_for`] needs.
    pub fn slot_count(&self) -> usize {
        self.slot_ids.len()
    }

    /// Heap bytes held by the table.
    pub fn memory_bytes(&self) -> usize {
        self.slot_ids.capacity() * 4 + self.group_spans.capacity() * 8 + self.group_slots.capacity() * 4
    }

    /// Reports the ids of `group` not yet reported in this scan (`seen` was reset for
    /// [`IdTable::slot_count`] slots at the start of the scan).
    #[inline]
    pub fn report(&self, group: usize, seen: &mut SeenSlots, on_match: &mut dyn FnMut(u32)) {
        let Some(&(start, len)) = self.group_spans.get(group) else {
            return;
        };
        let (start, len) = (start as usize, len as usize);
        let Some(slots) = self.group_slots.get(start..start + len) else {
            return;
        };
        for &slot in slots {
            if seen.insert(slot) {
                if let Some(&id) = self.slot_ids.get(slot as usize) {
                    on_match(id);
                }
            }
        }
    }
}

/// Bitset of the slots reported in the current scan; lives in the worker's [`Scratch`].
#[derive(Default, Debug)]
pub struct SeenSlots {
    words: Vec<u64>,
    /// Slots set since the last reset: clearing only these keeps a scan O(matches), not
    /// O(patterns).
    touched: Vec<u32>,
}

impl SeenSlots {
    /// Forgets the previous scan and makes room for `slot_count` slots. Allocates only when a
    /// matcher with more slots than ever before is used. Clearing at the *start* of a scan keeps
    /// the set correct even if a previous scan was abandoned half-way.
    pub fn reset_for(&mut self, slot_count: usize) {
        for slot in self.touched.drain(..) {
            if let Some(word) = self.words.get_mut(slot as usize / 64) {
                *word = 0;
            }
        }
        let words_needed = slot_count.div_ceil(64);
        if self.words.len() < words_needed {
            self.words.resize(words_needed, 0);
        }
        // Each slot is pushed at most once per scan, so this capacity means no push reallocates.
        if self.touched.capacity() < slot_count {
            self.touched.reserve(slot_count);
        }
    }

    /// Marks `slot`; true if it was not marked yet in this scan.
    #[inline]
    pub fn insert(&mut self, slot: u32) -> bool {
        let bit = 1u64 << (slot % 64);
        let Some(word) = self.words.get_mut(slot as usize / 64) else {
            // Unreachable after `reset_for`; reporting twice beats missing a match.
            return true;
        };
        if *word & bit != 0 {
            return false;
        }
        *word |= bit;
        self.touched.push(slot);
        true
    }

    /// Heap bytes held by the set.
    pub fn memory_bytes(&self) -> usize {
        self.words.capacity() * 8 + self.touched.capacity() * 4
    }
}

/// A backend's own per-worker state, kept in the [`Scratch`] slot
/// [`Scratch::backend_parts`] hands out (Hyperscan: its scratch space and the databases it was
/// sized for). The backend downcasts it to its concrete type.
pub trait BackendScratch: Any + Send {
    /// Heap bytes held, counted by [`Scratch::memory_bytes`].
    fn memory_bytes(&self) -> usize;
}

/// Per-worker mutable state for scanning. Create one per worker thread (it is `Send`, not
/// shared) and use it with every matcher that worker runs.
#[derive(Default)]
pub struct Scratch {
    pub(super) seen: SeenSlots,
    /// ASCII-lowercased copy of the current window, for the Aho-Corasick backend.
    pub(super) folded: Vec<u8>,
    /// State of a backend outside this module (Hyperscan), of that backend's own type. One slot:
    /// a backend of another type replaces it (only costs re-preparation).
    backend: Option<Box<dyn BackendScratch>>,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch::default()
    }

    /// The per-scan id bitset and the backend state, if it is a `T` (one downcast, no
    /// allocation). `None` until [`Scratch::set_backend`] installed a `T`.
    #[inline]
    pub fn backend_parts<T: BackendScratch>(&mut self) -> (&mut SeenSlots, Option<&mut T>) {
        let backend = self.backend.as_deref_mut().and_then(|backend| (backend as &mut dyn Any).downcast_mut::<T>());
        (&mut self.seen, backend)
    }

    /// Installs a backend's state, dropping the previous one.
    pub fn set_backend(&mut self, backend: Box<dyn BackendScratch>) {
        self.backend = Some(backend);
    }

    /// Heap bytes held by this scratch.
    pub fn memory_bytes(&self) -> usize {
        self.seen.memory_bytes()
            + self.folded.capacity()
            + self.backend.as_ref().map_or(0, |backend| backend.memory_bytes())
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").field("memory_bytes", &self.memory_bytes()).finish()
    }
}
