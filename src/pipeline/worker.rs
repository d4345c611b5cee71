//! The worker loop: pop a batch, inspect its packets, pass events on, recycle the batch.

use super::RunProgress;
use crate::inspect::Inspector;
use crate::output::merge::{clock_key, OutputChunk};
use crate::output::sink::LogSink;
use crate::output::stats::{worker_name, WorkerReport};
use crate::packet::PacketBatch;
use crossbeam_channel::Sender;
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
) -> WorkerReport {
    let mut report = WorkerReport { name: worker_name(index), ..Default::default() };
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
        for pkt in batch.iter() {
            report.packets += 1;
            report.bytes += pkt.meta.wire_len as u64;
            inspector.packet(pkt, &mut events);
        }
        let mut watermark = 0;
        if let Some(tick) = batch.clock {
            inspector.clock(tick, &mut events);
            watermark = clock_key(tick.pcap_cnt);
        }
        report.busy += started.elapsed();
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
    let started = Instant::now();
    inspector.finish(&mut events);
    report.busy += started.elapsed();
    let _ = output.send(OutputChunk { events: events.take(), watermark: u64::MAX });
    report.counters = inspector.counters();
    report
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
