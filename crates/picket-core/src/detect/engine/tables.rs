//! Host and ip-pair state tables (Suricata's `host:` and `ippair:` sections): the rows that
//! hold host-tracked thresholds and detection_filters, xbits and hostbits.
//!
//! Why this shape:
//! - **Shared, lock-striped.** With flow-hash dispatch one source's flows land on several
//!   workers, so `by_src` counts and `ip_src` bits must be one state for all of them. The
//!   table is split into `hash-size` shards (rounded up to a power of two), each behind its
//!   own mutex, like Suricata's per-bucket locks: two workers only wait for each other when
//!   their keys fall into the same shard, never on one global lock for every new key.
//!   Shards are chosen by a keyed (randomly seeded) hash, so an attacker cannot aim all his
//!   sources at one shard.
//! - **Incremental expiry, no scans.** Each shard keeps its keys in a ring in insertion
//!   order. Every access to a shard looks at [`SWEEP_PER_ACCESS`] keys at the ring's front:
//!   an expired row is removed, a live one goes to the back (a clock sweep), and every
//!   access also sweeps one other shard round-robin, so expired rows are reclaimed even in
//!   shards nobody touches. That is O(1) per packet; nothing ever walks the whole table.
//! - **A new row costs about what a known one does.** Profiling a flood of new sources
//!   showed half its time in the sweep's map lookups (a cache miss each, several per
//!   packet). So each ring entry carries the row's expiry as it was when the entry was
//!   last pushed: the sweep looks a row up only once that hint has passed, and a live
//!   row's entry just moves to the back. A row whose expiry moved later is found live at
//!   its old hint and re-queued with the new one; one whose expiry moved earlier (an
//!   `unset`) is reclaimed at its old hint, or evicted first at the memcap. The maps hash
//!   with a per-table seeded multiply-rotate hash (as the flow table does) instead of
//!   SipHash; the shard is still chosen by the randomly keyed SipHash.
//! - **Never fail-open at the memcap.** A new row that would exceed `memcap` first frees
//!   expired rows of its shard, then evicts the shard's oldest live row (Suricata likewise
//!   recycles a used host when its host memcap is reached); a shard with nothing to give
//!   passes the request to the next free shards. Evictions are counted
//!   (`<table>.memcap_evicted`); a row that still finds no room (only with a memcap far
//!   too small for the number of shards) is not stored and counted
//!   (`<table>.memcap_refused`), and its caller then treats the match as the first one of
//!   a fresh tracker: a `limit` rule alerts, a `threshold` rule keeps counting from 1.
//!
//! Rows grow by one small entry per rule that tracks the key; that growth is bounded by
//! the rule set, so only the creation of a row is checked against the memcap.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

use crate::flow::hash::{random_seed, FxHasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Keys looked at per access of a shard by the clock sweep (>1: expiry keeps ahead of
/// creation).
pub(crate) const SWEEP_PER_ACCESS: usize = 2;
/// Keys of a shard looked at for expired rows before its oldest live row is evicted.
const EVICTION_SWEEP: usize = 4;
/// Shards tried for room when a new row's own shard has none to give.
const EVICTION_SHARDS: usize = 16;
/// Most shards a table is split into, whatever `hash-size` says.
const MAX_SHARDS: usize = 1 << 16;

/// `hash-size`, `prealloc` and `memcap` of one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableConfig {
    /// Shards (Suricata: hash buckets); rounded up to a power of two, at most 65536.
    pub hash_size: u32,
    /// Rows reserved at start-up (spread over the shards).
    pub prealloc: u32,
    /// Bytes all rows may take.
    pub memcap: u64,
}

impl TableConfig {
    /// Suricata's `host:` defaults: hash-size 4096, prealloc 1000, memcap 32 MiB.
    pub const HOST: TableConfig = TableConfig { hash_size: 4096, prealloc: 1000, memcap: 32 * 1024 * 1024 };
    /// Suricata's `ippair:` defaults: hash-size 4096, prealloc 1000, memcap 16 MiB.
    pub const IPPAIR: TableConfig = TableConfig { hash_size: 4096, prealloc: 1000, memcap: 16 * 1024 * 1024 };
}

/// One threshold / detection_filter tracker (per rule, per tracked key).
#[derive(Clone, Debug)]
pub(crate) struct Tracker {
    pub window_start: u64,
    pub count: u32,
    /// backoff: count at which the next alert fires.
    pub next: u32,
    /// `unique_on`: distinct ports seen in the window, at most `count + 1` of them (enough
    /// to know that the filter is exceeded), so memory stays bounded by the rule.
    pub ports: Vec<u16>,
    /// Packet time (ns) after which the tracker would restart anyway (u64::MAX: never).
    pub expires: u64,
    /// rate_filter: packet time (ns) at which the new action took over (u64::MAX: not
    /// active); it holds for the filter's `timeout`.
    pub rate_since: u64,
}

/// The state kept for one host, ip pair or flow.
#[derive(Default, Debug)]
pub(crate) struct Row {
    /// xbits / hostbits: (stable name hash, expiry in ns; u64::MAX never).
    pub bits: Vec<(u64, u64)>,
    /// Trackers by rule key (`CompiledRule::key`).
    pub trackers: Vec<(u64, Tracker)>,
    /// Latest expiry of anything in the row.
    expires: u64,
    /// Bytes accounted for this row.
    cost: u64,
}

impl Row {
    /// Drops expired bits and trackers; updates the row's expiry.
    fn refresh(&mut self, now: u64) {
        self.bits.retain(|&(_, exp)| exp > now);
        self.trackers.retain(|(_, t)| t.expires > now);
        let bits = self.bits.iter().map(|&(_, e)| e).max().unwrap_or(0);
        let trackers = self.trackers.iter().map(|(_, t)| t.expires).max().unwrap_or(0);
        self.expires = bits.max(trackers);
    }

    fn bytes<K>(&self) -> u64 {
        let ports: usize = self.trackers.iter().map(|(_, t)| t.ports.capacity() * 2).sum();
        (row_base::<K>()
            + self.bits.capacity() * std::mem::size_of::<(u64, u64)>()
            + self.trackers.capacity() * std::mem::size_of::<(u64, Tracker)>()
            + ports) as u64
    }
}

/// Fixed bytes of a row: key and row in the map (plus its control byte and spare
/// capacity, roughly), key and expiry hint in the ring.
fn row_base<K>() -> usize {
    (std::mem::size_of::<K>() + std::mem::size_of::<Row>()) * 8 / 7 + 1 + std::mem::size_of::<(K, u64)>()
}

/// The shard maps' hasher: FxHash from a per-table secret seed (see
/// `flow::hash::key_hash_seeded` for why seeded).
#[derive(Clone, Copy)]
struct SeededFx(u64);

impl BuildHasher for SeededFx {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher::with_seed(self.0)
    }
}

struct Shard<K> {
    rows: HashMap<K, Row, SeededFx>,
    /// Every key of `rows` once, oldest first (the clock sweep's hand is the front), with
    /// the row's expiry when the entry was pushed (a hint, see the module doc).
    ring: VecDeque<(K, u64)>,
}

/// Event counters of a table (it is shared; one worker reports them, see `DetectCtx`).
#[derive(Default)]
pub(crate) struct TableStats {
    pub expired: AtomicU64,
    pub evicted: AtomicU64,
    pub refused: AtomicU64,
}

pub(crate) struct StateTable<K> {
    shards: Box<[Mutex<Shard<K>>]>,
    mask: usize,
    hasher: RandomState,
    memcap: u64,
    memuse: AtomicU64,
    rows: AtomicU64,
    cursor: AtomicUsize,
    pub stats: TableStats,
}

impl<K: Copy + Eq + Hash> StateTable<K> {
    pub(crate) fn new(cfg: TableConfig) -> Self {
        let n = (cfg.hash_size.max(1) as usize).next_power_of_two().min(MAX_SHARDS);
        let per_shard = (cfg.prealloc as usize).div_ceil(n);
        let map_hasher = SeededFx(random_seed());
        let shards = (0..n)
            .map(|_| {
                Mutex::new(Shard {
                    rows: HashMap::with_capacity_and_hasher(per_shard, map_hasher),
                    ring: VecDeque::with_capacity(per_shard),
                })
            })
            .collect();
        StateTable {
            shards,
            mask: n - 1,
            hasher: RandomState::new(),
            memcap: cfg.memcap,
            memuse: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            cursor: AtomicUsize::new(0),
            stats: TableStats::default(),
        }
    }

    fn lock(&self, i: usize) -> std::sync::MutexGuard<'_, Shard<K>> {
        // A poisoned lock only means another worker panicked mid-update; the rows are
        // still consistent enough to use.
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the row of `key`. With `create`, a missing row is made (room permitting,
    /// see the module doc); `f` gets `None` when there is no row. Expired contents are
    /// dropped before `f` sees the row.
    pub(crate) fn with_row<R>(&self, key: K, now: u64, create: bool, f: impl FnOnce(Option<&mut Row>) -> R) -> R {
        self.sweep_other(now);
        let i = self.hasher.hash_one(key) as usize & self.mask;
        let mut guard = self.lock(i);
        let shard = &mut *guard;
        self.sweep(shard, now, SWEEP_PER_ACCESS);
        let created = !shard.rows.contains_key(&key);
        if created {
            if !create {
                return f(None);
            }
            if !self.make_room(i, shard, now) {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                return f(None);
            }
            self.memuse.fetch_add(row_base::<K>() as u64, Ordering::Relaxed);
            self.rows.fetch_add(1, Ordering::Relaxed);
        }
        let row = shard.rows.entry(key).or_insert_with(|| Row { cost: row_base::<K>() as u64, ..Row::default() });
        row.refresh(now);
        let out = f(Some(row));
        row.refresh(now);
        if created {
            // Queued after `f`, so the hint is the expiry of what `f` stored.
            shard.ring.push_back((key, row.expires));
        }
        let cost = row.bytes::<K>();
        if cost >= row.cost {
            self.memuse.fetch_add(cost - row.cost, Ordering::Relaxed);
        } else {
            self.memuse.fetch_sub(row.cost - cost, Ordering::Relaxed);
        }
        row.cost = cost;
        out
    }

    /// Frees room for one new row in shard `i` (locked, `shard`): expired rows first, then
    /// the oldest live one; when this shard has nothing left, the next shards that are
    /// free right now (at most [`EVICTION_SHARDS`] of them; never waiting for a lock while
    /// holding one). False when none of them had anything to give.
    fn make_room(&self, i: usize, shard: &mut Shard<K>, now: u64) -> bool {
        if self.has_room() {
            return true;
        }
        if self.free_in(shard, now) {
            return true;
        }
        for step in 1..EVICTION_SHARDS.min(self.shards.len()) {
            let Ok(mut other) = self.shards[(i + step) & self.mask].try_lock() else { continue };
            if self.free_in(&mut other, now) {
                return true;
            }
        }
        false
    }

    /// Room for a new row and its first entry (the largest kind), so that a table of
    /// one-entry rows stays within the memcap.
    fn has_room(&self) -> bool {
        let need = row_base::<K>() + std::mem::size_of::<(u64, Tracker)>();
        self.memuse.load(Ordering::Relaxed) + need as u64 <= self.memcap
    }

    /// Frees what `shard` can give until a row fits: expired rows (a bounded look at its
    /// ring, whose length is the table's rows / shards, not the table), then the oldest.
    fn free_in(&self, shard: &mut Shard<K>, now: u64) -> bool {
        self.sweep(shard, now, shard.ring.len().min(EVICTION_SWEEP));
        while !self.has_room() {
            let Some((key, _)) = shard.ring.pop_front() else { return false };
            if let Some(row) = shard.rows.remove(&key) {
                self.release(&row);
                self.stats.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    }

    fn release(&self, row: &Row) {
        self.memuse.fetch_sub(row.cost, Ordering::Relaxed);
        self.rows.fetch_sub(1, Ordering::Relaxed);
    }

    /// The clock sweep: looks at up to `n` keys from the front of the ring. A key whose
    /// hint has not passed goes to the back without a map lookup.
    fn sweep(&self, shard: &mut Shard<K>, now: u64, n: usize) {
        for _ in 0..n.min(shard.ring.len()) {
            let Some((key, hint)) = shard.ring.pop_front() else { return };
            if hint > now {
                shard.ring.push_back((key, hint));
                continue;
            }
            match shard.rows.get(&key).map(|r| r.expires) {
                Some(expires) if expires > now => shard.ring.push_back((key, expires)),
                Some(_) => {
                    if let Some(row) = shard.rows.remove(&key) {
                        self.release(&row);
                        self.stats.expired.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => {}
            }
        }
    }

    /// Sweeps the next shard round-robin, if nobody holds it right now.
    fn sweep_other(&self, now: u64) {
        let i = self.cursor.fetch_add(1, Ordering::Relaxed) & self.mask;
        if let Ok(mut shard) = self.shards[i].try_lock() {
            self.sweep(&mut shard, now, SWEEP_PER_ACCESS);
        }
    }

    /// Runs `f` on every row (rule reload: renaming and dropping entries), dropping rows
    /// left empty. O(table), so never on the packet path.
    pub(crate) fn for_each_row(&self, mut f: impl FnMut(&mut Row)) {
        for i in 0..self.shards.len() {
            let mut guard = self.lock(i);
            let shard = &mut *guard;
            let mut gone = Vec::new();
            for (key, row) in shard.rows.iter_mut() {
                f(row);
                if row.bits.is_empty() && row.trackers.is_empty() {
                    gone.push(*key);
                }
            }
            for key in gone {
                if let Some(row) = shard.rows.remove(&key) {
                    self.release(&row);
                }
            }
            let rows = &shard.rows;
            shard.ring.retain(|(k, _)| rows.contains_key(k));
        }
    }

    pub(crate) fn memuse(&self) -> u64 {
        self.memuse.load(Ordering::Relaxed)
    }

    pub(crate) fn memcap(&self) -> u64 {
        self.memcap
    }

    /// Rows held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.load(Ordering::Relaxed) as usize
    }

    /// Entries (bits and trackers) held, for tests and reload reports. O(table).
    pub(crate) fn entries(&self) -> (usize, usize) {
        let mut n = (0, 0);
        for i in 0..self.shards.len() {
            for row in self.lock(i).rows.values() {
                n.0 += row.bits.len();
                n.1 += row.trackers.len();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_bit(t: &StateTable<u32>, key: u32, now: u64, expires: u64) -> bool {
        t.with_row(key, now, true, |row| match row {
            Some(row) => {
                row.bits.reserve_exact(1);
                row.bits.push((1, expires));
                true
            }
            None => false,
        })
    }

    fn has_bit(t: &StateTable<u32>, key: u32, now: u64) -> bool {
        t.with_row(key, now, false, |row| row.is_some_and(|r| !r.bits.is_empty()))
    }

    #[test]
    fn expired_rows_are_reclaimed_without_a_scan() {
        let t = StateTable::<u32>::new(TableConfig { hash_size: 4, prealloc: 0, memcap: u64::MAX });
        for k in 0..1000 {
            assert!(set_bit(&t, k, 0, 10));
        }
        assert_eq!(t.len(), 1000);
        // Later accesses sweep a few rows each: the expired ones are gone after enough of
        // them, though no access walked the table.
        for k in 1000..3000 {
            set_bit(&t, k, 20, 30);
        }
        assert_eq!(t.stats.expired.load(Ordering::Relaxed), 1000);
        assert_eq!(t.len(), 2000);
        assert!(!has_bit(&t, 5, 20));
        assert!(has_bit(&t, 2500, 25));
    }

    #[test]
    fn at_the_memcap_the_oldest_row_is_evicted_and_counted() {
        let cap = row_base::<u32>() as u64 * 100 + 4096;
        let t = StateTable::<u32>::new(TableConfig { hash_size: 1, prealloc: 0, memcap: cap });
        for k in 0..1000 {
            assert!(set_bit(&t, k, 0, u64::MAX), "a new row always finds room");
            assert!(t.memuse() <= cap, "memuse {} over the cap {cap}", t.memuse());
        }
        let evicted = t.stats.evicted.load(Ordering::Relaxed);
        assert!(evicted >= 850, "{evicted} evicted");
        assert_eq!(t.len() as u64, 1000 - evicted);
        assert!(has_bit(&t, 999, 1), "the newest row stays");
        assert!(!has_bit(&t, 0, 1), "the oldest row went first");
        // Expired rows go before live ones.
        let t = StateTable::<u32>::new(TableConfig { hash_size: 1, prealloc: 0, memcap: cap });
        set_bit(&t, 0, 0, u64::MAX);
        for k in 1..1000 {
            set_bit(&t, k, k as u64, k as u64 + 1);
        }
        assert!(has_bit(&t, 0, 2000), "the live row outlived the expired ones");
    }

    #[test]
    fn a_row_whose_expiry_moved_later_outlives_its_first_hint() {
        let t = StateTable::<u32>::new(TableConfig { hash_size: 1, prealloc: 0, memcap: u64::MAX });
        assert!(set_bit(&t, 7, 0, 10));
        // A later bit moves the row's expiry past its ring hint (10).
        assert!(set_bit(&t, 7, 5, 100));
        // Accesses after the hint passed look the row up, find it live and requeue it.
        for k in 100..110 {
            set_bit(&t, k, 20, 200);
        }
        assert_eq!(t.stats.expired.load(Ordering::Relaxed), 0);
        assert!(has_bit(&t, 7, 50));
        // Past its real expiry it goes.
        for k in 200..230 {
            set_bit(&t, k, 150, 300);
        }
        assert!(!has_bit(&t, 7, 150));
        assert_eq!(t.stats.expired.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_memcap_too_small_for_a_row_refuses_and_counts() {
        let t = StateTable::<u32>::new(TableConfig { hash_size: 1, prealloc: 0, memcap: 8 });
        assert!(!set_bit(&t, 1, 0, 10));
        assert_eq!(t.stats.refused.load(Ordering::Relaxed), 1);
        assert_eq!((t.len(), t.memuse()), (0, 0));
    }
}
