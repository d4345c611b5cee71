//! Progress of long offline runs: on a terminal, a bar on stderr with the bytes of the
//! capture read out of its size, packets per second, alerts so far and the time left.
//! Nothing at all (no thread, no escape codes) when stderr is not a terminal, so logs and
//! pipes stay clean.
//!
//! The run publishes its position in a [`RunProgress`] (relaxed atomics the reader and
//! the workers update once per batch); a display thread samples it [`REDRAW_PER_SECOND`]
//! times a second and draws through `indicatif`.

use crate::pipeline::RunProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Redraws per second.
const REDRAW_PER_SECOND: u8 = 5;
/// Runs shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_millis(300);
/// Setting this variable (to anything) turns the bar off on a terminal too.
const DISABLE_ENV: &str = "PICKET_NO_PROGRESS";

/// The bar's layout: bytes read / total, throughput, then `msg` (packets/s, alerts).
const TEMPLATE: &str =
    "{spinner} {elapsed_precise} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}) {msg}, ETA {eta}";
/// Without a known size (a pipe): no bar and no ETA.
const TEMPLATE_NO_SIZE: &str = "{spinner} {elapsed_precise} {msg}";

/// The progress bar of one run; finished (and erased) on drop.
pub struct ProgressDisplay {
    state: Arc<RunProgress>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressDisplay {
    /// A display when stderr is a terminal (and `PICKET_NO_PROGRESS` is unset), else `None`.
    pub fn start() -> Option<ProgressDisplay> {
        if !std::io::stderr().is_terminal() || std::env::var_os(DISABLE_ENV).is_some() {
            return None;
        }
        let state = Arc::new(RunProgress::default());
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, done) = (Arc::clone(&state), Arc::clone(&done));
            std::thread::Builder::new().name("picket-progress".into()).spawn(move || draw(&state, &done)).ok()?
        };
        Some(ProgressDisplay { state, done, thread: Some(thread) })
    }

    /// What the run updates.
    pub fn state(&self) -> Arc<RunProgress> {
        Arc::clone(&self.state)
    }
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The display thread: waits [`SHOW_AFTER`], then redraws until `done`, then erases the bar
/// (the run's summary on stdout follows).
fn draw(state: &RunProgress, done: &AtomicBool) {
    let tick = Duration::from_millis(1000 / u64::from(REDRAW_PER_SECOND));
    let started = Instant::now();
    while started.elapsed() < SHOW_AFTER {
        if done.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(tick.min(SHOW_AFTER));
    }
    let total = state.total_bytes.load(Ordering::Relaxed);
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(REDRAW_PER_SECOND));
    let template = if total > 0 { TEMPLATE } else { TEMPLATE_NO_SIZE };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    let (mut last_packets, mut last_at) = (0u64, Instant::now());
    let mut rate = 0.0f64;
    while !done.load(Ordering::Relaxed) {
        let packets = state.packets.load(Ordering::Relaxed);
        let now = Instant::now();
        let dt = now.duration_since(last_at).as_secs_f64();
        if dt >= 1.0 {
            rate = packets.saturating_sub(last_packets) as f64 / dt;
            (last_packets, last_at) = (packets, now);
        }
        bar.set_length(state.total_bytes.load(Ordering::Relaxed));
        bar.set_position(state.bytes_read.load(Ordering::Relaxed));
        bar.set_message(format!(
            "{packets} packets, {:.0} pkt/s, {} alerts",
            rate,
            state.alerts.load(Ordering::Relaxed)
        ));
        std::thread::sleep(tick);
    }
    bar.finish_and_clear();
}
