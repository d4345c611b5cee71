//! The worker loop: pop a batch, inspect its packets, pass events on, recycle the batch.
//!
//! A panic while inspecting is caught per batch: the worker stops taking batches (its ring
//! is dropped, which the dispatcher notices), hands the merger what it logged so far with
//! a final watermark (so the merge never waits on it), and returns its report with the
//! panic's message, so that the run ends with an error and the stats gathered so far.

use super::fault::{self, WorkerFailure};
use super::handover::WorkerHandover;
use super::RunProgress;
use crate::capture::{prefetch, AHEAD};
use crate::inspect::{Event, EventSink, Inspector};
use crate::output::merge::{clock_key, EventBuf, Order, OutputChunk, END_WATERMARK, SHUTDOWN_KEY};
use crate::output::sink::LogSink;
use crate::output::stats::{worker_name, WorkerReport};
use crate::packet::{PacketBatch, PacketRef};
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
/// Packets held back until the flows of their (newly received) bucket arrived.
pub const HANDOVER_STASHED: &str = "dispatch.stash_packets";

/// A worker sends its output to the merger at least every this many batches...
const CHUNK_BATCHES: usize = 16;
/// ...or once it holds this many lines, or when its ring is empty.
pub(super) const CHUNK_LINES: usize = 512;

/// The sink of the end of input: the flows still open end in first-packet order, each
/// one's lines under (SHUTDOWN_KEY, its first packet). Every [`CHUNK_LINES`] lines, at the
/// start of the next flow, what was formatted goes to `flush` with that flow's order as the
/// watermark (every line before it is then formatted), so that the lines are written as
/// they come: held until the end, the ~60,000 flow records of the reference capture were
/// ~35 MB at the peak of the run. Workers hand the chunks to the merger; the single-thread
/// run writes them out.
pub(super) struct ShutdownSink<'a, F: FnMut(EventBuf, Order)> {
    pub events: &'a mut LogSink,
    pub flush: F,
}

impl<F: FnMut(EventBuf, Order)> EventSink for ShutdownSink<'_, F> {
    fn event(&mut self, key: u64, event: &Event<'_>) {
        self.event_sub(key, 0, event)
    }

    fn event_sub(&mut self, key: u64, sub: u64, event: &Event<'_>) {
        let flow_starts = self.events.events.last_order().is_some_and(|last| last < (key, sub));
        if key == SHUTDOWN_KEY && flow_starts && self.events.events.len() >= CHUNK_LINES {
            (self.flush)(self.events.take(), (key, sub));
        }
        self.events.event_sub(key, sub, event);
    }
}

/// What inspecting one packet touches.
struct Cx<'a> {
    inspector: &'a mut Inspector,
    events: &'a mut LogSink,
    report: &'a mut WorkerReport,
    /// When the previous packet was done (per-bucket cost).
    last: Instant,
}

impl Cx<'_> {
    fn inspect(&mut self, pkt: PacketRef<'_>, handover: &mut Option<WorkerHandover>) {
        fault::check(pkt.meta.pcap_cnt);
        self.report.packets += 1;
        self.report.bytes += pkt.meta.wire_len as u64;
        self.inspector.packet(pkt, self.events);
        if let Some(h) = handover {
            // What each bucket costs, for the adaptive controller's choice.
            let now = Instant::now();
            h.charge(pkt.meta.bucket, (now - self.last).as_nanos() as u64);
            self.last = now;
        }
    }
}

/// Adopts the flows handed to this worker (waiting for them if they are not in yet) and
/// inspects the packets held back for them.
fn settle(handover: &mut Option<WorkerHandover>, cx: &mut Cx<'_>) {
    let Some(stash) = handover.as_mut().and_then(|h| h.settle(cx.inspector, cx.events)) else { return };
    // Waiting is not this packet's cost.
    cx.last = Instant::now();
    for pkt in stash.iter() {
        cx.inspect(pkt, handover);
    }
    if let Some(h) = handover {
        h.return_stash(stash);
    }
}

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
    // The latest clock watermark not yet sent (output is held while packets are).
    let mut held_watermark = (0u64, 0u64);
    let mut unsent_batches = 0usize;
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
        let mut watermark = (0, 0);
        let waited_before = handover.as_ref().map_or(Duration::ZERO, |h| h.waited);
        let inspected = catch_unwind(AssertUnwindSafe(|| {
            let mut cx = Cx { inspector: &mut inspector, events: &mut events, report: &mut report, last: started };
            let mut flows_ahead = super::FlowsAhead::default();
            for (i, pkt) in batch.iter().enumerate() {
                let ahead = (i + AHEAD < batch.len()).then(|| batch.get(i + AHEAD)).map(|p| (p.meta.link, p.data));
                if i + AHEAD + 1 < batch.len() {
                    prefetch::headers(batch.get(i + AHEAD + 1).data);
                }
                flows_ahead.step(cx.inspector, ahead);
                if let Some(h) = handover.as_mut().filter(|h| h.pending()) {
                    if h.holds(pkt.meta.bucket) && !h.stash_full() {
                        h.stash(pkt);
                        continue;
                    }
                    if h.holds(pkt.meta.bucket) || cx.inspector.expires_at(pkt.meta.ts) {
                        settle(&mut handover, &mut cx);
                    }
                }
                cx.inspect(pkt, &mut handover);
            }
            if let Some(tick) = batch.clock {
                // Flows handed over must be here before the clock can expire them.
                if cx.inspector.expires_at(tick.ts) {
                    settle(&mut handover, &mut cx);
                }
                cx.inspector.clock(tick, cx.events);
                watermark = (clock_key(tick.pcap_cnt), 0);
            }
            if let (Some(h), Some(moves)) = (&mut handover, &batch.moves) {
                h.give(moves, cx.inspector);
                settle(&mut handover, &mut cx);
                if let Some(h) = &mut handover {
                    h.expect(moves);
                }
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
        // Output waits while packets are held back: theirs must come first, and the
        // clock's promise (nothing later below its key) holds only once they are done.
        held_watermark = held_watermark.max(watermark);
        unsent_batches += 1;
        let holding = handover.as_ref().is_some_and(WorkerHandover::pending);
        // Chunks go out every few batches, not every one: a wake-up of the merger per
        // batch cost as much CPU as the merge itself. Caught up with its ring, the worker
        // sends what it has, so an idle worker never holds the merge back.
        let due = unsent_batches >= CHUNK_BATCHES || events.events.len() >= CHUNK_LINES || input.is_empty();
        if (!events.events.is_empty() || held_watermark != (0, 0)) && !holding && due {
            unsent_batches = 0;
            let watermark = std::mem::take(&mut held_watermark);
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
        let finished = catch_unwind(AssertUnwindSafe(|| {
            let mut cx = Cx { inspector: &mut inspector, events: &mut events, report: &mut report, last: started };
            settle(&mut handover, &mut cx);
            // A closed output means the merger failed; the error surfaces from it.
            let flush = |events, watermark| {
                let _ = output.send(OutputChunk { events, watermark });
            };
            inspector.finish_loading(&mut ShutdownSink { events: &mut events, flush }, &mut prefetch::lines)
        }));
        if let Err(payload) = finished {
            failure = Some(WorkerFailure { worker: report.name.clone(), message: fault::panic_message(&*payload) });
        }
        report.busy += started.elapsed();
    }
    // After a panic the inspector's state may be half-updated: its counters are still
    // numbers worth reporting, but its open flows are not logged.
    let _ = output.send(OutputChunk { events: events.take(), watermark: END_WATERMARK });
    report.counters = catch_unwind(AssertUnwindSafe(|| inspector.counters())).unwrap_or_default();
    if let Some(h) = &handover {
        report.counters.add(FLOWS_HANDED_OVER, h.flows_given);
        report.counters.add(FLOWS_TAKEN_OVER, h.flows_taken);
        report.counters.add(HANDOVER_WAIT_US, h.waited.as_micros() as u64);
        report.counters.add(HANDOVER_STASHED, h.stashed);
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
