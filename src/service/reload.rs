//! Rule reload without loss (`SIGUSR2`, `picket ctl reload-rules`, the unit's `ExecReload=`).
//!
//! The live run's main thread answers [`Request::ReloadRules`](super::Request) with
//! [`Reloader::reload`]: it reads the `-c` YAML again (with the same `--set`s), loads the
//! same `-S`/`-s` files or the configured `rule-files`, classification and threshold files,
//! and builds a new engine while the workers keep inspecting with the running one. Then it
//! publishes the engine in the [`EngineSlot`]; each worker sees the slot's generation move
//! (one relaxed atomic load per loop iteration, between two batches, no lock on the data
//! path), takes the new engine under the slot's lock, and carries its flows' state over
//! (`Inspector::swap_engine`, `picket_core::detect::engine::carry`). The old engine comes
//! back to the main thread, which releases it once the last worker switched, and hands the
//! freed memory back to the system (`sys::trim`). So no packet goes uninspected and the
//! capture rings are read throughout.
//!
//! A reload is refused (the running engine stays, the reply is the reason, stderr gets one
//! line) when: the YAML cannot be read; a rule file the running rules were loaded from is
//! gone (or a `-S`/`-s` file); a rule failed (malformed, a keyword Suricata does not know,
//! a regex that does not compile, a line that is not UTF-8, or a rule the engine cannot
//! compile; each failure is also printed with file and line: at start-up picket loads around
//! bad rules, but a reload has a working rule set to keep, so it takes only a clean one); the
//! engine cannot be built; or no rule would load. Rules skipped for a Suricata keyword picket
//! does not implement do not refuse a reload (Suricata would load them); they are counted
//! (`rules_skipped`, apart from `rules_failed`).
//!
//! Memory (measured with ET Open, numbers in the README): each rule is compiled as soon as
//! it is parsed (the parsed set is never held whole), rules that did not change share their
//! logged text and metadata with the running engine, the pattern sets compile one at a time
//! on the main thread, the old engine is released on the main thread as soon as the last
//! worker switched, and freed heap goes back to the system (jemalloc's purge and glibc's
//! `malloc_trim`) before and after the build.

use super::{Reply, RuleReloader};
use crate::config::{Config, EngineSettingsExt};
use crate::counters::CounterSet;
use crate::counters::CounterSource;
use crate::detect::engine::DetectEngine;
use crate::rules::{LoadedRules, RuleSources};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Longest a reload waits for every worker to take the new engine before it answers (a
/// worker looks at the slot at least every 100 ms, between two `poll`s).
const SWITCH_WAIT: Duration = Duration::from_secs(5);
/// How often the reload looks whether every worker switched.
const SWITCH_POLL: Duration = Duration::from_millis(5);
/// Parse errors named in a refusal (all of them go to stderr).
const ERRORS_IN_REPLY: usize = 3;
/// Pattern-compiling threads of a reload build: one, so the sets compile one at a time
/// (peak memory) and the workers keep the other cores.
const RELOAD_BUILD_THREADS: usize = 1;

/// `picket.reload.*` counter names.
pub const COUNT: &str = "picket.reload.count";
pub const FAILURES: &str = "picket.reload.failures";
pub const LAST_DURATION_MS: &str = "picket.reload.last_duration_ms";

/// The engine the workers inspect with, and its generation.
///
/// Workers read [`EngineSlot::generation`] once per loop iteration (a relaxed load); only
/// when it moved do they take the lock, clone the `Arc` and report the switch.
pub struct EngineSlot {
    generation: AtomicU64,
    engine: Mutex<(u64, Arc<DetectEngine>)>,
    /// The generation each worker inspects with.
    workers: Vec<AtomicU64>,
    /// Engines workers switched away from, released by the main thread (dropping an engine
    /// frees tens of MB: not a job for a worker between two batches).
    retired: Mutex<Vec<Arc<DetectEngine>>>,
}

impl EngineSlot {
    pub fn new(engine: Arc<DetectEngine>, workers: usize) -> Arc<EngineSlot> {
        Arc::new(EngineSlot {
            generation: AtomicU64::new(0),
            engine: Mutex::new((0, engine)),
            workers: (0..workers.max(1)).map(|_| AtomicU64::new(0)).collect(),
            retired: Mutex::new(Vec::new()),
        })
    }

    /// The run has `running` workers (index 0..running): a reload waits for those only.
    pub fn workers_running(&self, running: usize) {
        for w in self.workers.iter().skip(running) {
            w.store(u64::MAX, Ordering::Release);
        }
    }

    /// Worker `worker` ended: a reload no longer waits for it.
    pub fn worker_ended(&self, worker: usize) {
        if let Some(w) = self.workers.get(worker) {
            w.store(u64::MAX, Ordering::Release);
        }
    }

    /// The generation published last (one relaxed load: the workers' per-iteration check).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The current engine and its generation.
    pub fn current(&self) -> (u64, Arc<DetectEngine>) {
        let slot = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        (slot.0, Arc::clone(&slot.1))
    }

    /// Worker `worker` now inspects with `generation`; `old` is the engine it let go of.
    pub fn switched(&self, worker: usize, generation: u64, old: Option<Arc<DetectEngine>>) {
        if let Some(old) = old {
            self.retired.lock().unwrap_or_else(|e| e.into_inner()).push(old);
        }
        if let Some(w) = self.workers.get(worker) {
            w.store(generation, Ordering::Release);
        }
    }

    /// Makes `engine` current; returns its generation and the engine it replaces.
    fn publish(&self, engine: Arc<DetectEngine>) -> (u64, Arc<DetectEngine>) {
        let mut slot = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        let generation = slot.0 + 1;
        let old = std::mem::replace(&mut *slot, (generation, engine)).1;
        self.generation.store(generation, Ordering::Release);
        (generation, old)
    }

    /// Waits until every worker inspects with `generation` (true) or `deadline` passed.
    fn wait_switched(&self, generation: u64, deadline: Instant) -> bool {
        loop {
            if self.workers.iter().all(|w| w.load(Ordering::Acquire) >= generation) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(SWITCH_POLL);
        }
    }

    /// Drops the engines workers handed back (the last reference frees one).
    fn release_retired(&self) -> usize {
        let retired = std::mem::take(&mut *self.retired.lock().unwrap_or_else(|e| e.into_inner()));
        let n = retired.len();
        drop(retired);
        n
    }
}

/// What is needed to load the rules again as the run loaded them.
#[derive(Clone, Debug)]
pub struct RuleInputs {
    /// `-c`.
    pub config: Option<PathBuf>,
    /// `--set` (they may set `rule-files`, `vars`, `classification-file`, ...).
    pub sets: Vec<String>,
    /// `-S` / `-s`.
    pub sources: RuleSources,
}

/// Rules of the running engine, for `ruleset-stats` and eve `stats.detect.engines`.
#[derive(Clone, Debug, Default)]
struct RulesetStats {
    loaded: u64,
    failed: u64,
    skipped: u64,
    /// Eve timestamp of the last successful load (start-up or reload).
    last_reload: String,
    /// The rule files it was loaded from.
    files: Vec<PathBuf>,
}

impl RulesetStats {
    fn of(loaded: &LoadedRules) -> Self {
        RulesetStats {
            loaded: loaded.build.rules_loaded as u64,
            failed: loaded.failed() as u64,
            skipped: loaded.skipped() as u64,
            last_reload: now_eve(),
            files: loaded.files.clone(),
        }
    }
}

#[derive(Default)]
struct ReloadCounters {
    count: AtomicU64,
    failures: AtomicU64,
    last_duration_ms: AtomicU64,
}

/// The live run's [`RuleReloader`].
pub struct Reloader {
    inputs: RuleInputs,
    slot: Arc<EngineSlot>,
    stats: Mutex<RulesetStats>,
    counters: Arc<ReloadCounters>,
    verbose: bool,
}

impl Reloader {
    /// `initial` is the start-up load (its engine already sits in `slot`).
    pub fn new(inputs: RuleInputs, slot: Arc<EngineSlot>, initial: &LoadedRules, verbose: bool) -> Arc<Reloader> {
        Arc::new(Reloader {
            inputs,
            slot,
            stats: Mutex::new(RulesetStats::of(initial)),
            counters: Arc::default(),
            verbose,
        })
    }

    /// `picket.reload.{count,failures,last_duration_ms}` for `LiveOptions.global_counters`.
    pub fn counter_source(&self) -> CounterSource {
        let counters = Arc::clone(&self.counters);
        Box::new(move |set: &mut CounterSet| {
            set.add(COUNT, counters.count.load(Ordering::Relaxed));
            set.add(FAILURES, counters.failures.load(Ordering::Relaxed));
            set.add(LAST_DURATION_MS, counters.last_duration_ms.load(Ordering::Relaxed));
        })
    }

    /// Loads and builds the new rule set; `Err` is the reason to keep the running one.
    fn load(&self) -> Result<(DetectEngine, LoadedRules), String> {
        let (config, warnings) = Config::load(self.inputs.config.as_deref(), &self.inputs.sets).map_err(|e| {
            format!(
                "cannot read the configuration {}: {e}",
                self.inputs.config.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "(none)".into())
            )
        })?;
        let (settings, more) = crate::config::EngineSettings::from_config(&config).map_err(|e| e.to_string())?;
        for w in warnings.iter().chain(&more) {
            eprintln!("picket: reload: warning: {w}");
        }
        // A file the running rules came from must still be there (one the configuration
        // names but that was missing at start-up too is a warning, as it was then).
        let missing: Vec<String> = self
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .files
            .iter()
            .filter(|p| !p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "rule file(s) the running rules came from are gone: {}; restore them or change rule-files",
                missing.join(", ")
            ));
        }
        let (_, running) = self.slot.current();
        let mut loaded = crate::rules::load_with_threads(
            &config,
            &settings,
            &self.inputs.sources,
            RELOAD_BUILD_THREADS,
            Some(&running),
        )?;
        drop(running);
        for w in &loaded.warnings {
            eprintln!("picket: reload: warning: {w}");
        }
        if loaded.failed() > 0 {
            for e in &loaded.load.errors {
                eprintln!("picket: reload: rule error: {e}");
            }
            let first: Vec<String> = loaded.load.errors.iter().take(ERRORS_IN_REPLY).map(|e| e.to_string()).collect();
            return Err(format!(
                "{} rule(s) failed to load ({}{}); fix them and reload again",
                loaded.failed(),
                first.join("; "),
                if loaded.load.errors.len() > ERRORS_IN_REPLY { "; ..." } else { "" }
            ));
        }
        let engine = loaded.engine.take().filter(|_| loaded.build.rules_loaded > 0).ok_or_else(|| {
            format!("no rules would load (from {} file(s)); the running rules stay", loaded.files.len())
        })?;
        Ok((engine, loaded))
    }
}

impl RuleReloader for Reloader {
    fn reload(&self) -> Reply {
        let started = Instant::now();
        // What the run freed since the last trim goes back first: the build then grows from
        // the real baseline.
        crate::heap::release_free_memory();
        let (mut engine, loaded) = match self.load() {
            Ok(built) => built,
            Err(reason) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                eprintln!("picket: rule reload failed, the running rules stay: {reason}");
                return Err(format!("rule reload failed, the running rules stay: {reason}"));
            }
        };
        let stats = RulesetStats::of(&loaded);
        if self.verbose {
            eprintln!("picket: reload: {}", loaded.summary());
        }
        drop(loaded);
        // The host- and rule-tracked thresholds carry over before any worker switches.
        let (_, running) = self.slot.current();
        engine.adopt_shared_state(&running);
        drop(running);
        // No packet of the new rules waits for a pcre JIT build.
        engine.jit_compile_pcre();
        let (generation, replaced) = self.slot.publish(Arc::new(engine));
        drop(replaced);
        let all_switched = self.slot.wait_switched(generation, Instant::now() + SWITCH_WAIT);
        // The old engine is gone once the last worker switched: its memory goes back.
        self.slot.release_retired();
        crate::heap::release_free_memory();
        let elapsed = started.elapsed();
        eprintln!(
            "picket: rules reloaded: {} loaded, {} skipped, in {:.2} s{}",
            stats.loaded,
            stats.skipped,
            elapsed.as_secs_f64(),
            if all_switched { "" } else { " (some workers had not switched yet)" }
        );
        self.counters.count.fetch_add(1, Ordering::Relaxed);
        self.counters.last_duration_ms.store(elapsed.as_millis() as u64, Ordering::Relaxed);
        let reply = serde_json::json!({
            "rules_loaded": stats.loaded,
            "rules_failed": stats.failed,
            "rules_skipped": stats.skipped,
            "duration_ms": elapsed.as_millis() as u64,
            "workers_switched": all_switched,
        });
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = stats;
        Ok(reply)
    }

    fn ruleset_stats(&self) -> serde_json::Value {
        let s = self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
        serde_json::json!({
            "id": 0,
            "last_reload": s.last_reload,
            "rules_loaded": s.loaded,
            "rules_failed": s.failed,
            "rules_skipped": s.skipped,
        })
    }
}

/// Now, as eve writes timestamps.
fn now_eve() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    crate::output::eve::format_timestamp(crate::packet::Timestamp::from_parts(now.as_secs(), now.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(rules: &str) -> Arc<DetectEngine> {
        let load = crate::detect::rule::load_rules_str("t.rules", rules, &Default::default());
        Arc::new(DetectEngine::build(load.rules, &Default::default()).unwrap().0)
    }

    #[test]
    fn slot_switches_workers_and_hands_back_the_old_engine() {
        let first = engine("alert udp any any -> any any (content:\"A\"; sid:1;)");
        let slot = EngineSlot::new(Arc::clone(&first), 2);
        assert_eq!(slot.generation(), 0);
        let (generation, replaced) = slot.publish(engine("alert udp any any -> any any (content:\"B\"; sid:2;)"));
        assert_eq!((generation, slot.generation()), (1, 1));
        drop(replaced);
        assert!(!slot.wait_switched(1, Instant::now()), "no worker switched yet");
        for worker in 0..2 {
            let (g, _new) = slot.current();
            slot.switched(worker, g, Some(Arc::clone(&first)));
        }
        assert!(slot.wait_switched(1, Instant::now()));
        assert_eq!(slot.release_retired(), 2);
        assert_eq!(Arc::strong_count(&first), 1, "only the test holds the old engine now");
    }
}
