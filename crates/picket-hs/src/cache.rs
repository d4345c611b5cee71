//! On-disk cache of compiled Hyperscan databases: Suricata 8's `detect.sgh-mpm-caching`.
//!
//! Compiling the prefilter databases is most of the start-up time with a large rule set, and
//! a restart usually compiles exactly the sets it compiled last time. [`CachedHsBuilder`]
//! stores each compiled set in a file named after a SHA-256 of everything the database
//! depends on (the literals in order with their `nocase`, the compile flags and mode, the
//! libhs version and this host's platform), and loads it instead of compiling when the same
//! set comes again.
//!
//! A cache file is only trusted whole: its header names the format and the key, and a
//! CRC-32 of the payload must match (it guards against damage, as the SHA-256 key guards
//! against a wrong set; SHA-256 over the 6-7 MB of payload was 7% of a warm start); libhs
//! then checks the database's own version, platform and CRC when deserializing. A file that
//! fails any check (truncated, damaged, written by another Hyperscan) counts as `rejected`,
//! and the set is compiled and the file written again. Files are written to a temporary
//! name and renamed, so a reader (another picket starting at the same time) sees a complete
//! file or none.
//!
//! A file's modification time is its last use: loading it touches it. [`prune`] removes the
//! cache files (and leftover temporary files) not used for a given age, as Suricata 8's
//! `sgh-mpm-caching-max-age`, so a directory does not keep every rule set ever compiled.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use picket_core::detect::mpm::{MatcherBuilder, MpmAlgo, MpmError, MultiPatternMatcher, Pattern};
use sha2::{Digest, Sha256};

use crate::{ffi, CodePath, HsMatcher, MAX_FALLBACK_PATTERNS};

/// First bytes of every cache file.
const MAGIC: &[u8; 8] = b"PICKETHS";
/// Layout of the file and of the payload; a change makes every older file a miss.
const FORMAT: u32 = 2;
/// Magic, format, key, payload CRC-32, payload length.
const HEADER_LEN: usize = 8 + 4 + 32 + 4 + 8;

/// What the cache did during one engine build.
#[derive(Debug, Default)]
pub struct CacheStats {
    /// Sets loaded from a cache file instead of compiled.
    pub loaded: AtomicU64,
    /// Sets compiled (no usable cache file).
    pub compiled: AtomicU64,
    /// Cache files written.
    pub stored: AtomicU64,
    /// Cache files found but unusable (damaged, truncated, other Hyperscan): recompiled and
    /// rewritten.
    pub rejected: AtomicU64,
    /// Cache files that could not be written (the set was compiled and is used anyway).
    pub store_failed: AtomicU64,
    /// Cache files removed by [`prune`] (unused for longer than the maximum age).
    pub pruned: AtomicU64,
}

impl CacheStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The log line start-up prints.
    pub fn summary(&self, dir: &Path) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut line = format!(
            "mpm cache {}: {} loaded, {} compiled, {} stored",
            dir.display(),
            get(&self.loaded),
            get(&self.compiled),
            get(&self.stored)
        );
        if get(&self.rejected) > 0 {
            line.push_str(&format!(", {} unusable file(s) replaced", get(&self.rejected)));
        }
        if get(&self.store_failed) > 0 {
            line.push_str(&format!(", {} could not be written", get(&self.store_failed)));
        }
        if get(&self.pruned) > 0 {
            line.push_str(&format!(", {} unused file(s) removed", get(&self.pruned)));
        }
        line
    }
}

/// A Hyperscan [`MatcherBuilder`] that loads compiled databases from `dir` and stores the
/// ones it had to compile there.
#[derive(Debug, Clone)]
pub struct CachedHsBuilder {
    dir: PathBuf,
    stats: Arc<CacheStats>,
    path: CodePath,
}

impl CachedHsBuilder {
    /// A builder caching in `dir`, which must exist (see [`prepare_dir`]), for libhs's own
    /// code path.
    pub fn new(dir: PathBuf) -> Self {
        CachedHsBuilder { dir, stats: Arc::default(), path: CodePath::Native }
    }

    /// The same builder compiling for `path` (a key of its own: files of the other path are
    /// neither loaded nor replaced).
    pub fn on(self, path: CodePath) -> Self {
        CachedHsBuilder { path, ..self }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The counters, shared with every clone of this builder.
    pub fn stats(&self) -> Arc<CacheStats> {
        Arc::clone(&self.stats)
    }

    /// The cache file of `patterns`.
    pub fn path_for(&self, patterns: &[Pattern]) -> PathBuf {
        self.dir.join(file_name(&cache_key(patterns, self.path)))
    }

    /// The matcher of a non-empty, valid `patterns`: from its cache file, or compiled and
    /// stored.
    fn load_or_compile(&self, patterns: &[Pattern]) -> Result<HsMatcher, MpmError> {
        let key = cache_key(patterns, self.path);
        let path = self.dir.join(file_name(&key));
        match self.load(&path, &key, patterns) {
            Ok(Some(matcher)) => {
                CacheStats::bump(&self.stats.loaded);
                return Ok(matcher);
            }
            Ok(None) => {}
            Err(_) => CacheStats::bump(&self.stats.rejected),
        }
        let matcher = HsMatcher::build_on(patterns, self.path)?;
        CacheStats::bump(&self.stats.compiled);
        match self.store(&path, &key, &matcher) {
            Ok(()) => CacheStats::bump(&self.stats.stored),
            Err(_) => CacheStats::bump(&self.stats.store_failed),
        }
        Ok(matcher)
    }

    /// The cached matcher of `patterns`, if its file is there and sound. `Err` when a file is
    /// there but unusable.
    fn load(&self, path: &Path, key: &[u8; 32], patterns: &[Pattern]) -> Result<Option<HsMatcher>, String> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let payload = check_file(&bytes, key)?;
        let matcher = HsMatcher::from_cache_payload(patterns, payload, self.path)?;
        // Used now: [`prune`] keeps it. A file that cannot be touched is still used.
        let _ = std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(SystemTime::now()));
        Ok(Some(matcher))
    }

    /// Writes `matcher`'s cache file: a temporary file in the same directory, renamed over
    /// the final name.
    fn store(&self, path: &Path, key: &[u8; 32], matcher: &HsMatcher) -> Result<(), String> {
        let payload = matcher.cache_payload()?;
        let mut file = Vec::with_capacity(HEADER_LEN + payload.len());
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&FORMAT.to_le_bytes());
        file.extend_from_slice(key);
        file.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        file.extend_from_slice(&payload);
        static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
        let temp =
            path.with_extension(format!("tmp.{}.{}", std::process::id(), NEXT_TEMP.fetch_add(1, Ordering::Relaxed)));
        let written = std::fs::write(&temp, &file).and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(|e| e.to_string())
    }
}

impl MatcherBuilder for CachedHsBuilder {
    fn algo(&self) -> MpmAlgo {
        MpmAlgo::Hyperscan
    }

    fn build(&self, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
        crate::build_checked(patterns, |patterns| self.load_or_compile(patterns))
    }
}

/// Removes from `dir` the cache files, and the temporary files of interrupted writes, last
/// used (modified) more than `max_age` before `now`; other files are never touched. Returns
/// how many were removed; counts them in `stats` too.
pub fn prune(dir: &Path, max_age: Duration, now: SystemTime, stats: &CacheStats) -> std::io::Result<u64> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| is_cache_file_name(n)) else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        let Ok(modified) = meta.modified() else { continue };
        let idle = now.duration_since(modified).unwrap_or_default();
        if meta.is_file() && idle > max_age && std::fs::remove_file(dir.join(name)).is_ok() {
            removed += 1;
            CacheStats::bump(&stats.pruned);
        }
    }
    Ok(removed)
}

/// `<64 hex>.hs`, or a temporary `<64 hex>.tmp.<pid>.<n>` of [`CachedHsBuilder::store`].
fn is_cache_file_name(name: &str) -> bool {
    let Some((key, rest)) = name.split_at_checked(64) else { return false };
    key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && (rest == ".hs" || rest.starts_with(".tmp."))
}

/// Creates `dir` (and its parents) and checks that a file can be written in it.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".probe.{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// The payload of a cache file, if its header and CRC hold for `key`.
fn check_file<'a>(bytes: &'a [u8], key: &[u8; 32]) -> Result<&'a [u8], String> {
    let (header, payload) = bytes.split_at_checked(HEADER_LEN).ok_or("truncated header")?;
    let (magic, rest) = header.split_at(8);
    let (format, rest) = rest.split_at(4);
    let (file_key, rest) = rest.split_at(32);
    let (crc, length) = rest.split_at(4);
    if magic != MAGIC || format != FORMAT.to_le_bytes() {
        return Err("not a cache file of this picket".into());
    }
    if file_key != key {
        return Err("cache file of another pattern set".into());
    }
    let length: [u8; 8] = length.try_into().map_err(|_| "bad length")?;
    if u64::from_le_bytes(length) != payload.len() as u64 {
        return Err("truncated payload".into());
    }
    if crc32fast::hash(payload).to_le_bytes() != crc {
        return Err("payload CRC mismatch".into());
    }
    Ok(payload)
}

/// SHA-256 of everything a compiled set depends on.
fn cache_key(patterns: &[Pattern], path: CodePath) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"picket hyperscan literal cache\0");
    hash.update(FORMAT.to_le_bytes());
    hash.update(ffi::version_and_platform(path).as_bytes());
    // Compile mode and flags (`ffi::Database::compile_literals`) and the fallback policy.
    hash.update(b"\0block singlematch caseless-ascii literal\0");
    hash.update((MAX_FALLBACK_PATTERNS as u64).to_le_bytes());
    hash.update((patterns.len() as u64).to_le_bytes());
    for pattern in patterns {
        hash.update((pattern.bytes.len() as u64).to_le_bytes());
        hash.update(&pattern.bytes);
        hash.update([u8::from(pattern.nocase)]);
    }
    hash.finalize().into()
}

/// `<key in hex>.hs`.
fn file_name(key: &[u8; 32]) -> String {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.hs")
}

#[cfg(test)]
mod tests {
    use super::*;
    use picket_core::detect::mpm::Scratch;

    fn set(words: &[&str]) -> Vec<Pattern> {
        words.iter().enumerate().map(|(i, w)| Pattern::new(i as u32 * 3, w.as_bytes(), i % 2 == 1)).collect()
    }

    fn matches(matcher: &dyn MultiPatternMatcher, haystack: &[u8]) -> Vec<u32> {
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        matcher.scan(haystack, &mut scratch, &mut |id| out.push(id)).expect("scan");
        out.sort_unstable();
        out
    }

    fn count(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    const HAYSTACK: &[u8] = b"GET /index.html HTTP/1.1\r\nUser-Agent: CURL\r\nHost: example\r\n\r\nevil payload";

    #[test]
    fn warm_build_matches_as_the_cold_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let patterns = set(&["GET ", "curl", "Host:", "evil", "HTTP/1.", "nothing here"]);
        let cold = CachedHsBuilder::new(dir.path().to_path_buf());
        let cold_matcher = cold.build(&patterns).expect("cold build");
        assert_eq!((count(&cold.stats.compiled), count(&cold.stats.stored), count(&cold.stats.loaded)), (1, 1, 0));
        assert!(cold.path_for(&patterns).is_file());
        let warm = CachedHsBuilder::new(dir.path().to_path_buf());
        let warm_matcher = warm.build(&patterns).expect("warm build");
        assert_eq!((count(&warm.stats.loaded), count(&warm.stats.compiled)), (1, 0));
        let expected = matches(cold_matcher.as_ref(), HAYSTACK);
        assert_eq!(expected, vec![0, 3, 6, 9, 12]);
        assert_eq!(matches(warm_matcher.as_ref(), HAYSTACK), expected);
        assert_eq!(warm_matcher.pattern_count(), patterns.len());
    }

    /// A set compiled for one code path is a file of its own: the other path neither loads
    /// nor replaces it, and both give the same answers.
    #[test]
    fn code_paths_have_their_own_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let patterns = set(&["GET ", "curl", "Host:", "evil"]);
        let native = CachedHsBuilder::new(dir.path().to_path_buf());
        let native_matcher = native.build(&patterns).expect("native");
        let avx2 = CachedHsBuilder::new(dir.path().to_path_buf()).on(CodePath::Avx2);
        let avx2_matcher = avx2.build(&patterns).expect("avx2");
        assert_eq!((count(&avx2.stats.loaded), count(&avx2.stats.compiled), count(&avx2.stats.stored)), (0, 1, 1));
        assert_ne!(native.path_for(&patterns), avx2.path_for(&patterns));
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 2);
        let warm = CachedHsBuilder::new(dir.path().to_path_buf()).on(CodePath::Avx2);
        let warm_matcher = warm.build(&patterns).expect("warm avx2");
        assert_eq!((count(&warm.stats.loaded), count(&warm.stats.compiled)), (1, 0));
        let expected = matches(native_matcher.as_ref(), HAYSTACK);
        assert_eq!(expected, vec![0, 3, 6, 9]);
        assert_eq!(matches(avx2_matcher.as_ref(), HAYSTACK), expected);
        assert_eq!(matches(warm_matcher.as_ref(), HAYSTACK), expected);
    }

    #[test]
    fn changed_set_misses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let builder = CachedHsBuilder::new(dir.path().to_path_buf());
        builder.build(&set(&["GET ", "curl"])).expect("first");
        // Same literals, one flag changed: another database.
        let mut changed = set(&["GET ", "curl"]);
        changed[1].nocase = false;
        let matcher = builder.build(&changed).expect("changed");
        assert_eq!((count(&builder.stats.compiled), count(&builder.stats.loaded)), (2, 0));
        assert_eq!(matches(matcher.as_ref(), HAYSTACK), vec![0]);
        builder.build(&set(&["GET ", "curl", "evil"])).expect("added");
        assert_eq!(count(&builder.stats.compiled), 3);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 3);
    }

    #[test]
    fn damaged_or_truncated_file_is_ignored_and_rewritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let patterns = set(&["GET ", "curl", "evil"]);
        let builder = CachedHsBuilder::new(dir.path().to_path_buf());
        let reference = matches(builder.build(&patterns).expect("cold").as_ref(), HAYSTACK);
        let path = builder.path_for(&patterns);
        let good = std::fs::read(&path).expect("cache file");
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x55;
        let damaged: Vec<Vec<u8>> =
            vec![flipped, good[..good.len() / 2].to_vec(), good[..10].to_vec(), b"garbage".to_vec(), Vec::new()];
        for (round, bytes) in damaged.into_iter().enumerate() {
            std::fs::write(&path, &bytes).expect("damage");
            let builder = CachedHsBuilder::new(dir.path().to_path_buf());
            let matcher = builder.build(&patterns).expect("rebuild");
            assert_eq!(count(&builder.stats.rejected), 1, "round {round}");
            assert_eq!(count(&builder.stats.compiled), 1, "round {round}");
            assert_eq!(matches(matcher.as_ref(), HAYSTACK), reference, "round {round}");
            assert_eq!(std::fs::read(&path).expect("rewritten"), good, "round {round}");
        }
    }

    #[test]
    fn database_of_another_hyperscan_is_refused_by_libhs() {
        // A sound file whose database bytes were damaged (CRC recomputed, as a file from
        // another libhs would carry a valid CRC): libhs refuses it, the set is recompiled.
        let dir = tempfile::tempdir().expect("tempdir");
        let patterns = set(&["GET ", "curl"]);
        let builder = CachedHsBuilder::new(dir.path().to_path_buf());
        builder.build(&patterns).expect("cold");
        let path = builder.path_for(&patterns);
        let file = std::fs::read(&path).expect("file");
        let mut payload = file[HEADER_LEN..].to_vec();
        // Past the fallback count and the database marker: the database's version field.
        payload[4 + 1 + 4] ^= 0xff;
        let mut forged = file[..HEADER_LEN - 12].to_vec();
        forged.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        forged.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        forged.extend_from_slice(&payload);
        std::fs::write(&path, &forged).expect("forge");
        let again = CachedHsBuilder::new(dir.path().to_path_buf());
        let matcher = again.build(&patterns).expect("rebuild");
        assert_eq!((count(&again.stats.rejected), count(&again.stats.compiled)), (1, 1));
        assert_eq!(matches(matcher.as_ref(), HAYSTACK), vec![0, 3]);
    }

    #[test]
    fn prune_removes_only_cache_files_unused_for_longer_than_the_age() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (used, stale) = (set(&["GET "]), set(&["curl"]));
        let builder = CachedHsBuilder::new(dir.path().to_path_buf());
        builder.build(&used).expect("used");
        builder.build(&stale).expect("stale");
        let week = Duration::from_secs(7 * 86_400);
        let two_weeks_ago = SystemTime::now() - 2 * week;
        let age = |p: &Path| {
            std::fs::File::options().write(true).open(p).and_then(|f| f.set_modified(two_weeks_ago)).expect("age")
        };
        let (used_path, stale_path) = (builder.path_for(&used), builder.path_for(&stale));
        let temp = dir.path().join(format!("{}.tmp.1.0", "a".repeat(64)));
        let other = dir.path().join("notes.txt");
        std::fs::write(&temp, b"interrupted write").expect("temp");
        std::fs::write(&other, b"not ours").expect("other");
        for path in [&used_path, &stale_path, &temp, &other] {
            age(path);
        }
        // Loading the used set marks its file as used now.
        let warm = CachedHsBuilder::new(dir.path().to_path_buf());
        warm.build(&used).expect("warm");
        assert_eq!(count(&warm.stats.loaded), 1);

        let stats = CacheStats::default();
        assert_eq!(prune(dir.path(), week, SystemTime::now(), &stats).expect("prune"), 2);
        assert_eq!(count(&stats.pruned), 2);
        assert!(stats.summary(dir.path()).ends_with(", 2 unused file(s) removed"), "{}", stats.summary(dir.path()));
        assert!(used_path.exists(), "used within the age");
        assert!(!stale_path.exists() && !temp.exists(), "unused for two weeks");
        assert!(other.exists(), "not a cache file");
        // With a longer age nothing goes; the pruned set compiles (and is stored) again.
        assert_eq!(prune(dir.path(), 3 * week, SystemTime::now(), &stats).expect("prune"), 0);
        let again = CachedHsBuilder::new(dir.path().to_path_buf());
        again.build(&stale).expect("rebuild");
        assert_eq!((count(&again.stats.compiled), count(&again.stats.stored)), (1, 1));
        assert!(stale_path.exists());
    }

    #[test]
    fn cache_file_names_are_recognised_exactly() {
        let key = "0123456789abcdef".repeat(4);
        assert!(is_cache_file_name(&format!("{key}.hs")));
        assert!(is_cache_file_name(&format!("{key}.tmp.42.7")));
        assert!(!is_cache_file_name(&format!("{}.hs", key.to_uppercase())));
        assert!(!is_cache_file_name(&format!("{}.hs", &key[1..])));
        assert!(!is_cache_file_name(&format!("{key}.hs.bak")));
        assert!(!is_cache_file_name("rules.hs"));
    }

    #[test]
    fn unwritable_directory_still_builds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("not-created");
        let builder = CachedHsBuilder::new(missing);
        let matcher = builder.build(&set(&["GET "])).expect("build");
        assert_eq!((count(&builder.stats.compiled), count(&builder.stats.store_failed)), (1, 1));
        assert_eq!(matches(matcher.as_ref(), HAYSTACK), vec![0]);
    }
}
