//! Which multi-pattern matcher backend the engine compiles with (`mpm-algo`), and compiling
//! the rule groups' pattern sets on all cores.
//!
//! Kept out of the sans-IO library (`detect`): it knows which backends this binary was built
//! with (the Hyperscan FFI in `hs`, cargo feature `hyperscan`) and it spawns threads. The
//! engine only sees the [`MatcherBuilder`] returned by [`builder`], through
//! `DetectConfig::matchers`.

use std::cmp::Reverse;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::detect::mpm::{AcBuilder, MatcherBuilder, MpmAlgo, MpmError, MultiPatternMatcher, Pattern};

/// Hyperscan backend: the `picket-hs` crate, on `detect::mpm`'s public API.
#[cfg(feature = "hyperscan")]
pub use picket_hs as hs;

/// One set's outcome.
type Built = Result<Box<dyn MultiPatternMatcher>, MpmError>;

/// Whether this binary was built with the Hyperscan backend.
pub const HYPERSCAN_BUILT_IN: bool = cfg!(feature = "hyperscan");

/// Hyperscan is built in and this CPU can run it.
pub fn hyperscan_usable() -> bool {
    #[cfg(feature = "hyperscan")]
    {
        hs::platform_supported()
    }
    #[cfg(not(feature = "hyperscan"))]
    {
        false
    }
}

/// Resolves [`MpmAlgo::Auto`] to the backend [`builder`] uses: Hyperscan if usable, otherwise
/// Aho-Corasick.
pub fn resolve(algo: MpmAlgo) -> MpmAlgo {
    match algo {
        MpmAlgo::Auto if hyperscan_usable() => MpmAlgo::Hyperscan,
        MpmAlgo::Auto => MpmAlgo::AhoCorasick,
        other => other,
    }
}

/// The builder for `algo`, compiling on all cores, with Hyperscan's AVX-512 code refused
/// (the default of `mpm-hs-avx512`, see [`HsCodePath`]). `hs` in a build without Hyperscan
/// is an error; `hs` on a CPU that cannot run it fails when the first set is compiled.
pub fn builder(algo: MpmAlgo) -> Result<Arc<dyn MatcherBuilder>, MpmError> {
    builder_with_threads(algo, None, HsCodePath::choose(false))
}

/// Which of libhs's code paths Hyperscan databases are compiled for and scanned with
/// (`mpm-hs-avx512`): [`HsCodePath::choose`] gives libhs's AVX2 path on a CPU with AVX-512
/// unless AVX-512 is allowed, and libhs's own pick otherwise.
#[cfg(feature = "hyperscan")]
pub use hs::CodePath as HsCodePath;

/// Without Hyperscan there is no code path to choose.
#[cfg(not(feature = "hyperscan"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsCodePath;

#[cfg(not(feature = "hyperscan"))]
impl HsCodePath {
    pub fn choose(_allow_avx512: bool) -> HsCodePath {
        HsCodePath
    }

    pub fn name(self) -> &'static str {
        "none"
    }
}

/// [`builder`] compiling on at most `threads` threads (`None`: every core), Hyperscan sets
/// for `hs_path`. A rule reload compiles on one, one set at a time, beside the running
/// workers.
pub fn builder_with_threads(
    algo: MpmAlgo,
    threads: Option<usize>,
    hs_path: HsCodePath,
) -> Result<Arc<dyn MatcherBuilder>, MpmError> {
    match resolve(algo) {
        MpmAlgo::Hyperscan => hyperscan_builder(threads, hs_path),
        // `resolve` never returns Auto.
        MpmAlgo::AhoCorasick | MpmAlgo::Auto => Ok(Arc::new(parallel(AcBuilder, threads))),
    }
}

/// Where compiled Hyperscan databases are cached (`detect.sgh-mpm-caching-path`), and what
/// the cache did during a build.
#[derive(Clone, Debug)]
pub struct MpmCache {
    pub dir: std::path::PathBuf,
    #[cfg(feature = "hyperscan")]
    stats: Arc<hs::cache::CacheStats>,
}

impl MpmCache {
    /// Removes the cache files no build used for longer than `max_age`; returns how many.
    pub fn prune(&self, max_age: std::time::Duration) -> std::io::Result<u64> {
        #[cfg(feature = "hyperscan")]
        {
            hs::cache::prune(&self.dir, max_age, std::time::SystemTime::now(), &self.stats)
        }
        #[cfg(not(feature = "hyperscan"))]
        {
            let _ = max_age;
            Ok(0)
        }
    }

    /// `mpm cache DIR: N loaded, M compiled, K stored`.
    pub fn summary(&self) -> String {
        #[cfg(feature = "hyperscan")]
        {
            self.stats.summary(&self.dir)
        }
        #[cfg(not(feature = "hyperscan"))]
        {
            format!("mpm cache {}: unused", self.dir.display())
        }
    }
}

/// [`builder_with_threads`], with Hyperscan databases cached in `cache_dir` (an existing,
/// writable directory) when the backend is Hyperscan. The cache is `None` for other backends.
pub fn builder_with_cache(
    algo: MpmAlgo,
    threads: Option<usize>,
    cache_dir: Option<std::path::PathBuf>,
    hs_path: HsCodePath,
) -> Result<(Arc<dyn MatcherBuilder>, Option<MpmCache>), MpmError> {
    match (resolve(algo), cache_dir) {
        #[cfg(feature = "hyperscan")]
        (MpmAlgo::Hyperscan, Some(dir)) if hyperscan_usable() => {
            let cached = hs::cache::CachedHsBuilder::new(dir.clone()).on(hs_path);
            let cache = MpmCache { dir, stats: cached.stats() };
            Ok((Arc::new(parallel(cached, threads)), Some(cache)))
        }
        _ => Ok((builder_with_threads(algo, threads, hs_path)?, None)),
    }
}

fn parallel<B: MatcherBuilder>(inner: B, threads: Option<usize>) -> Parallel<B> {
    match threads {
        Some(n) => Parallel::with_threads(inner, n),
        None => Parallel::new(inner),
    }
}

#[cfg(feature = "hyperscan")]
fn hyperscan_builder(threads: Option<usize>, path: HsCodePath) -> Result<Arc<dyn MatcherBuilder>, MpmError> {
    Ok(Arc::new(parallel(hs::HsBuilder { path }, threads)))
}

#[cfg(not(feature = "hyperscan"))]
fn hyperscan_builder(_threads: Option<usize>, _path: HsCodePath) -> Result<Arc<dyn MatcherBuilder>, MpmError> {
    Err(MpmError::HyperscanNotBuiltIn)
}

/// Runs [`MatcherBuilder::build_all`] of `B` on several threads (Hyperscan compilation is most
/// of the start-up time with a large ruleset). Largest sets are started first so the long
/// compilations do not end up last on one core.
#[derive(Clone, Debug)]
pub struct Parallel<B> {
    inner: B,
    /// `None`: the machine's available parallelism.
    threads: Option<usize>,
}

impl<B> Parallel<B> {
    pub fn new(inner: B) -> Self {
        Parallel { inner, threads: None }
    }

    /// At most `threads` threads (at least one).
    pub fn with_threads(inner: B, threads: usize) -> Self {
        Parallel { inner, threads: Some(threads.max(1)) }
    }
}

impl<B: MatcherBuilder> MatcherBuilder for Parallel<B> {
    fn algo(&self) -> MpmAlgo {
        self.inner.algo()
    }

    fn build(&self, patterns: &[Pattern]) -> Built {
        self.inner.build(patterns)
    }

    fn build_all(&self, sets: &[&[Pattern]]) -> Vec<Built> {
        let threads = self
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
            .min(sets.len());
        if threads <= 1 {
            return self.inner.build_all(sets);
        }
        let mut order: Vec<usize> = (0..sets.len()).collect();
        order.sort_by_key(|&i| Reverse(sets[i].iter().map(|p| p.bytes.len()).sum::<usize>()));
        let next = AtomicUsize::new(0);
        let finished: Vec<Vec<(usize, Built)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let Some(&i) = order.get(k) else { break };
                            out.push((i, self.inner.build(sets[i])));
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        let mut results: Vec<Option<Built>> = (0..sets.len()).map(|_| None).collect();
        for (i, result) in finished.into_iter().flatten() {
            if let Some(slot) = results.get_mut(i) {
                *slot = Some(result);
            }
        }
        results
            .into_iter()
            .map(|result| {
                result.unwrap_or_else(|| {
                    Err(MpmError::Compile { algo: self.algo(), message: "pattern compilation thread failed".into() })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::mpm::Scratch;

    fn lit(id: u32, bytes: &[u8]) -> Pattern {
        Pattern::new(id, bytes, false)
    }

    #[test]
    fn auto_picks_hyperscan_only_when_built_in() {
        let expected = if HYPERSCAN_BUILT_IN && hyperscan_usable() { MpmAlgo::Hyperscan } else { MpmAlgo::AhoCorasick };
        assert_eq!(resolve(MpmAlgo::Auto), expected);
        let auto = builder(MpmAlgo::Auto).expect("builder");
        assert_eq!(auto.algo(), expected);
        assert_eq!(auto.build(&[lit(1, b"x")]).expect("build").algo(), expected);
        assert_eq!(resolve(MpmAlgo::AhoCorasick), MpmAlgo::AhoCorasick);
        assert_eq!(builder(MpmAlgo::AhoCorasick).expect("builder").algo(), MpmAlgo::AhoCorasick);
    }

    /// Every backend built in (the mpm module's own tests cannot spawn threads).
    fn builders() -> Vec<Arc<dyn MatcherBuilder>> {
        vec![
            Arc::new(AcBuilder),
            #[cfg(feature = "hyperscan")]
            Arc::new(hs::HsBuilder::default()),
            #[cfg(feature = "hyperscan")]
            Arc::new(hs::HsBuilder { path: HsCodePath::choose(false) }),
        ]
    }

    /// One compiled matcher scanned by two worker threads at once, each with its own scratch.
    #[test]
    fn matcher_is_shared_across_worker_threads() {
        let patterns: Arc<Vec<Pattern>> =
            Arc::new((0..300u32).map(|id| Pattern::new(id, format!("sig-{id}-").into_bytes(), id % 2 == 1)).collect());
        for builder in builders() {
            let algo = builder.algo();
            let matcher: Arc<dyn MultiPatternMatcher> = Arc::from(builder.build(&patterns).expect("build"));
            let workers: Vec<_> = (0..2u32)
                .map(|worker| {
                    let matcher = Arc::clone(&matcher);
                    std::thread::spawn(move || {
                        let mut scratch = Scratch::new();
                        let mut total_found = 0;
                        for id in (0..300u32).filter(|id| id % 2 == worker) {
                            let haystack = format!("..SIG-{id}-..sig-{}-", 299 - id);
                            let mut found = Vec::new();
                            matcher.scan(haystack.as_bytes(), &mut scratch, &mut |id| found.push(id)).expect("scan");
                            found.sort_unstable();
                            // The lowercase id always; the uppercase one only for odd (nocase) ids.
                            let mut expected = vec![299 - id];
                            if id % 2 == 1 {
                                expected.push(id);
                            }
                            expected.sort_unstable();
                            assert_eq!(found, expected, "{haystack}");
                            total_found += found.len();
                        }
                        total_found
                    })
                })
                .collect();
            let total: usize = workers.into_iter().map(|worker| worker.join().expect("worker panicked")).sum();
            assert_eq!(total, 300 + 150, "{algo}");
        }
    }

    #[cfg(not(feature = "hyperscan"))]
    #[test]
    fn hyperscan_request_fails_when_not_built_in() {
        assert_eq!(builder(MpmAlgo::Hyperscan).err(), Some(MpmError::HyperscanNotBuiltIn));
    }

    /// Results come back in input order whatever order the threads finish in, errors included.
    #[test]
    fn parallel_build_all_keeps_the_order_of_the_sets() {
        let sets: Vec<Vec<Pattern>> = (0..9u32)
            .map(|n| {
                (0..n * 20)
                    .map(|id| Pattern::new(id, format!("set{n}-pattern{id}").into_bytes(), id % 2 == 0))
                    .collect()
            })
            .collect();
        let mut refs: Vec<&[Pattern]> = sets.iter().map(Vec::as_slice).collect();
        let broken = [lit(1, b"ok"), lit(7, b"")];
        refs.insert(4, &broken);
        for threads in [1, 2, 4] {
            let built = Parallel::with_threads(AcBuilder, threads).build_all(&refs);
            assert_eq!(built.len(), refs.len());
            for (patterns, result) in refs.iter().zip(&built) {
                match result {
                    Ok(matcher) => {
                        assert_eq!(matcher.pattern_count(), patterns.len(), "{threads} threads");
                        if let Some(last) = patterns.last() {
                            let mut found = Vec::new();
                            matcher.scan(&last.bytes, &mut Scratch::new(), &mut |id| found.push(id)).expect("scan");
                            assert!(found.contains(&last.id), "{threads} threads");
                        }
                    }
                    Err(e) => assert_eq!(*e, MpmError::EmptyPattern { id: 7 }, "{threads} threads"),
                }
            }
            assert!(built[4].is_err());
        }
    }
}
