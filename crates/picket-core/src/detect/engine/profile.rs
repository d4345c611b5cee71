//! Prefilter profiling (`profiling.prefilter.enabled`, Suricata's prefilter profiling):
//! each worker counts the scans, bytes and time of every prefilter it runs, so that a
//! user sees which buffer's pattern set the multi-pattern matcher spends its time on.
//!
//! Off by default: timing costs two clock reads per scan (about 1.2 million scans per
//! million packets of mixed traffic). The counters are named
//! `detect.prefilter.<transport>.<direction>.<what>.{scans,bytes,usec}`, where `<what>` is
//! `stream`, `payload`, `payload_packet_only` (TCP payloads that also went into the stream,
//! scanned with the packet-only rules' set) or an app-layer buffer (`file_data`,
//! `http_uri`, ...); see [`label_slots`].

use std::time::Instant;

use super::{DetectCounters, Group, TRANSPORT_NAMES};
use crate::detect::mpm::{MultiPatternMatcher, Scratch};

/// Scans, bytes and nanoseconds of one prefilter, in one worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotCounts {
    pub scans: u64,
    pub bytes: u64,
    pub nanos: u64,
}

/// The scan sites a packet's prefilter can take within one port group of a
/// (transport, direction) group.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PortSlots {
    pub stream: u32,
    pub payload: u32,
    pub payload_packet_only: u32,
}

/// Gives every prefilter scan site of `groups` a slot and returns the slots' names, in slot
/// order. Names are unique: a second port group or a second prefilter over the same buffer
/// (other transforms) gets a suffix.
pub(super) fn label_slots(groups: &mut [[Group; 2]]) -> Vec<String> {
    fn add(labels: &mut Vec<String>, name: String) -> u32 {
        let mut unique = name.clone();
        let mut n = 2;
        while labels.contains(&unique) {
            unique = format!("{name}_{n}");
            n += 1;
        }
        labels.push(unique);
        (labels.len() - 1) as u32
    }
    let mut labels: Vec<String> = Vec::new();
    for (t, pair) in groups.iter_mut().enumerate() {
        let transport = TRANSPORT_NAMES.get(t).copied().unwrap_or("other");
        for (d, group) in pair.iter_mut().enumerate() {
            let dir = if d == 0 { "toserver" } else { "toclient" };
            let several = group.port_groups.len() > 1;
            for (i, port_group) in group.port_groups.iter_mut().enumerate() {
                let suffix = if several { format!("_pg{}", i + 1) } else { String::new() };
                port_group.profile = PortSlots {
                    stream: add(&mut labels, format!("{transport}.{dir}.stream{suffix}")),
                    payload: add(&mut labels, format!("{transport}.{dir}.payload{suffix}")),
                    payload_packet_only: add(&mut labels, format!("{transport}.{dir}.payload_packet_only{suffix}")),
                };
            }
            for prefilter in &mut group.app_mpm {
                // A shared prefilter (file.data with the HTTP body buffers) is named by its first.
                let buffer = prefilter.buffers.first().map_or("app", |b| b.name).replace('.', "_");
                let transformed = if prefilter.transforms.is_empty() { "" } else { "_transformed" };
                prefilter.profile = add(&mut labels, format!("{transport}.{dir}.{buffer}{transformed}"));
            }
        }
    }
    labels
}

/// One prefilter scan of `data` with `mpm`, counted in the worker's `counters` (scans,
/// errors: an error means the scan was incomplete) and, when profiling is on (`slots` not
/// empty), timed into `slots[slot]`.
#[inline]
pub(super) fn counted_scan(
    mpm: &dyn MultiPatternMatcher,
    slot: u32,
    data: &[u8],
    scratch: &mut Scratch,
    on_match: &mut dyn FnMut(u32),
    counters: &mut DetectCounters,
    slots: &mut [SlotCounts],
) {
    counters.prefilter_scans += 1;
    let result = if slots.is_empty() {
        mpm.scan(data, scratch, on_match)
    } else {
        let started = Instant::now();
        let result = mpm.scan(data, scratch, on_match);
        let nanos = started.elapsed().as_nanos() as u64;
        if let Some(c) = slots.get_mut(slot as usize) {
            c.scans += 1;
            c.bytes += data.len() as u64;
            c.nanos += nanos;
        }
        result
    };
    if result.is_err() {
        counters.prefilter_errors += 1;
    }
}

/// The counters of the slots that scanned anything: `(name, value)` with the names above.
pub(super) fn counters(labels: &[String], counts: &[SlotCounts]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (label, c) in labels.iter().zip(counts).filter(|(_, c)| c.scans > 0) {
        out.push((format!("detect.prefilter.{label}.scans"), c.scans));
        out.push((format!("detect.prefilter.{label}.bytes"), c.bytes));
        out.push((format!("detect.prefilter.{label}.usec"), c.nanos / 1000));
    }
    out
}
