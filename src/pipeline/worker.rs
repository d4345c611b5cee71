//! The worker loop: pop a batch, inspect its packets, pass events on, recycle the batch.
//!
//! A panic while inspecting is caught per batch: the worker stops taking batches (its ring
//! is dropped, which the dispatcher notices), hands the merger what it logged so far with
//! a final watermark (so the merge never waits on it), and returns its report with the
//! panic's message, so that the run ends with an error and the stats gathered so far.

use super::fault::{self, WorkerFailure};
use super::RunProgress;
use crate::inspect::Inspector;
use crate::output::merge::{clock_key, OutputChunk};
use crate::output::sink::LogSink;
use crate::output::stats::{worker_name, WorkerReport};
use crate::packet::PacketBatch;
use crossbeam_channel::Sender;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) fn run(
    index: usize,
    mut inspector: Inspector,
    mut events: LogSink,
    mut input: rtrb::Consumer<PacketBatch>,
    mut pool: rtrb::Producer<PacketBatch>,
    output: Sender<OutputChunk>,
    progress: Option<Arc<RunProgress>>,
) -> (WorkerReport, Option<WorkerFailure>) {
    let mut report = WorkerReport { name: worker_name(index), ..Default::default() };
    let mut failure = None;
    let mut idle_spins = 0u32;
    // Alerts already added to `progress`.
    let mut alerts_reported = 0u64;
    loop {
        let mut batch = match input.pop() {
            Ok(b) => b,
            Err(_) if input.is_abandoned() && input.is_empty() => break,
            Err(_) => {
                idle_spins += 1;
                backoff(idle_spins);
                continue;
            }
        };
        idle_spins = 0;
        let started = Instant::now();
        let mut watermark = 0;
        let inspected = catch_unwind(AssertUnwindSafe(|| {
            for pkt in batch.iter() {
                fault::check(pkt.meta.pcap_cnt);
                report.packets += 1;
                report.bytes += pkt.meta.wire_len as u64;
                inspector.packet(pkt, &mut events);
            }
            if let Some(tick) = batch.clock {
                inspector.clock(tick, &mut events);
                watermark = clock_key(tick.pcap_cnt);
            }
        }));
        report.busy += started.elapsed();
        if let Err(payload) = inspected {
            failure = Some(WorkerFailure { worker: report.name.clone(), message: fault::panic_message(&*payload) });
            break;
        }
        if let Some(p) = &progress {
            if events.alerts != alerts_reported {
                p.alerts.fetch_add(events.alerts - alerts_reported, Ordering::Relaxed);
                alerts_reported = events.alerts;
            }
        }
        if !events.events.is_empty() || watermark != 0 {
            // A closed output means the merger failed; keep consuming so the
            // dispatcher is never blocked, the error surfaces from the merger.
            let _ = output.send(OutputChunk { events: events.take(), watermark });
        }
        batch.clear();
        let _ = pool.push(batch);
    }
    // Dropping the ring tells the dispatcher this worker takes no more batches.
    drop(input);
    if failure.is_none() {
        let started = Instant::now();
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| inspector.finish(&mut events))) {
            failure = Some(WorkerFailure { worker: report.name.clone(), message: fault::panic_message(&*payload) });
        }
        report.busy += started.elapsed();
    }
    // After a panic the inspector's state may be half-updated: its counters are still
    // numbers worth reporting, but its open flows are not logged.
    let _ = output.send(OutputChunk { events: events.take(), watermark: u64::MAX });
    report.counters = catch_unwind(AssertUnwindSafe(|| inspector.counters())).unwrap_or_default();
    (report, failure)
}

/// Waiting for a ring: spin briefly, then yield, then sleep, so an idle worker costs
/// little CPU while a busy one reacts within microseconds.
pub(super) fn backoff(spins: u32) {
    if spins < 64 {
        std::hint::spin_loop();
    } else if spins < 256 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}
