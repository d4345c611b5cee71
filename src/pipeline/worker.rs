//! The worker loop: pop a batch, inspect its packets, pass events on, recycle the batch.
//!
//! A panic while inspecting is caught per batch: the worker stops taking batches (its ring
//! is dropped, which the dispatcher notices), hands the merger what it logged so far with
//! a final watermark (so the merge never waits on it), and returns its report with the
//! panic's message, so that the run ends with an error and the stats gathered so far.

use super::fault::{self, WorkerFailure};
use super::handover::WorkerHandover;
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

/// Flows this worker gave to another with their bucket (adaptive dispatch).
pub const FLOWS_HANDED_OVER: &str = "dispatch.flows_handed_over";
/// Flows this worker took over from another.
pub const FLOWS_TAKEN_OVER: &str = "dispatch.flows_taken_over";
/// Time this worker waited for flows handed to it, in microseconds (not counted busy).
pub const HANDOVER_WAIT_US: &str = "dispatch.handover_wait_us";

#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    index: usize,
    mut inspector: Inspector,
    mut events: LogSink,
    mut input: rtrb::Consumer<PacketBatch>,
    mut pool: rtrb::Producer<PacketBatch>,
    output: Sender<OutputChunk>,
    progress: Option<Arc<RunProgress>>,
    mut handover: Option<WorkerHandover>,
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
        let waited_before = handover.as_ref().map_or(Duration::ZERO, |h| h.waited);
        let inspected = catch_unwind(AssertUnwindSafe(|| {
            let mut last = started;
            for pkt in batch.iter() {
                fault::check(pkt.meta.pcap_cnt);
                report.packets += 1;
                report.bytes += pkt.meta.wire_len as u64;
                inspector.packet(pkt, &mut events);
                if let Some(h) = &mut handover {
                    // What each bucket costs, for the adaptive controller's choice.
                    let now = Instant::now();
                    h.charge(pkt.meta.bucket, (now - last).as_nanos() as u64);
                    last = now;
                }
            }
            if let Some(tick) = batch.clock {
                inspector.clock(tick, &mut events);
                watermark = clock_key(tick.pcap_cnt);
            }
            if let (Some(h), Some(moves)) = (&mut handover, &batch.moves) {
                h.apply(moves, &mut inspector, &mut events);
            }
        }));
        // Waiting for another worker's flows is not work.
        let waited = handover.as_ref().map_or(Duration::ZERO, |h| h.waited) - waited_before;
        report.busy += started.elapsed().saturating_sub(waited);
        if let Some(h) = &mut handover {
            h.publish();
        }
        if let Err(payload) = inspected {
            failure = Some(WorkerFailure { worker: report.name.clone(), message: fault::panic_message(&*payload) });
            if let Some(h) = &handover {
                h.fail();
            }
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
    if let Some(h) = &handover {
        report.counters.add(FLOWS_HANDED_OVER, h.flows_given);
        report.counters.add(FLOWS_TAKEN_OVER, h.flows_taken);
        report.counters.add(HANDOVER_WAIT_US, h.waited.as_micros() as u64);
    }
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
