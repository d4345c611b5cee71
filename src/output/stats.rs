//! stats.log (Suricata's layout, totals then one block per worker), the eve `stats`
//! event, and the per-worker load table printed at exit.

use crate::counters::CounterSet;
use crate::output::json::JsonObject;
use crate::packet::Timestamp;
use std::io::{self, Write};
use std::time::Duration;

/// What one worker did over the run.
#[derive(Clone, Debug, Default)]
pub struct WorkerReport {
    /// Suricata-style thread name: "W#01", "W#02", ...
    pub name: String,
    pub packets: u64,
    pub bytes: u64,
    /// Time spent inspecting packets (not waiting for them).
    pub busy: Duration,
    pub counters: CounterSet,
}

pub fn worker_name(index: usize) -> String {
    format!("W#{:02}", index + 1)
}

const RULE: &str = "------------------------------------------------------------------------------------";

/// Appends one stats.log record: the totals, then every worker's own counters.
pub fn write_stats_log(out: &mut dyn Write, wall: Duration, date: &str, workers: &[WorkerReport]) -> io::Result<()> {
    let secs = wall.as_secs();
    writeln!(out, "{RULE}")?;
    writeln!(
        out,
        "Date: {date} (uptime: {}d, {:02}h {:02}m {:02}s)",
        secs / 86_400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )?;
    writeln!(out, "{RULE}")?;
    writeln!(out, "{:<45} | {:<25} | Value", "Counter", "TM Name")?;
    writeln!(out, "{RULE}")?;
    let total = CounterSet::sum(workers.iter().map(|w| &w.counters));
    for (name, value) in total.iter() {
        writeln!(out, "{name:<45} | {:<25} | {value}", "Total")?;
    }
    for w in workers {
        writeln!(out, "{RULE}")?;
        for (name, value) in w.counters.iter() {
            writeln!(out, "{name:<45} | {:<25} | {value}", w.name)?;
        }
    }
    Ok(())
}

/// The final eve `stats` event: totals nested as Suricata writes them, plus a `threads`
/// object with each worker's counters.
pub fn stats_event(ts: Timestamp, uptime_secs: u64, workers: &[WorkerReport]) -> Vec<u8> {
    stats_event_with_global(ts, uptime_secs, workers, &CounterSet::new())
}

/// [`stats_event`] with process-wide counters (the XDP layer's `picket.xdp.*`, the DDoS
/// controller's `picket.ddos.*`) added to the totals; they belong to no thread.
pub fn stats_event_with_global(
    ts: Timestamp,
    uptime_secs: u64,
    workers: &[WorkerReport],
    global: &CounterSet,
) -> Vec<u8> {
    stats_event_with_engines(ts, uptime_secs, workers, global, None)
}

/// [`stats_event_with_global`] with `stats.detect.engines` (Suricata's per-engine rule
/// counts and last reload, `crate::service::RuleReloader::ruleset_stats`) when given.
pub fn stats_event_with_engines(
    ts: Timestamp,
    uptime_secs: u64,
    workers: &[WorkerReport],
    global: &CounterSet,
    engines: Option<serde_json::Value>,
) -> Vec<u8> {
    let total = CounterSet::sum(workers.iter().map(|w| &w.counters).chain(std::iter::once(global)));
    let mut stats = match nested_json(&total) {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("nested json is an object"),
    };
    if let Some(engines) = engines {
        let detect = stats.entry("detect").or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let serde_json::Value::Object(detect) = detect {
            detect.insert("engines".into(), engines);
        }
    }
    let mut threads = serde_json::Map::new();
    for w in workers {
        threads.insert(w.name.clone(), nested_json(&w.counters));
    }
    let mut with_uptime = serde_json::Map::new();
    with_uptime.insert("uptime".into(), uptime_secs.into());
    with_uptime.append(&mut stats);
    with_uptime.insert("threads".into(), threads.into());
    let mut buf = Vec::new();
    let mut o = JsonObject::begin(&mut buf);
    o.str("timestamp", &super::eve::format_timestamp(ts)).str("event_type", "stats");
    o.raw("stats", &serde_json::Value::Object(with_uptime).to_string());
    o.finish();
    buf
}

/// The table users read to see whether the cores were evenly loaded.
pub fn write_load_table(out: &mut dyn Write, workers: &[WorkerReport], wall: Duration) -> io::Result<()> {
    let total_pkts: u64 = workers.iter().map(|w| w.packets).sum();
    let total_bytes: u64 = workers.iter().map(|w| w.bytes).sum();
    let wall_s = wall.as_secs_f64().max(1e-9);
    writeln!(
        out,
        "{:<6} {:>12} {:>14} {:>10} {:>7} {:>8} {:>12}",
        "worker", "packets", "bytes", "busy ms", "busy %", "share %", "pkts/busy-s"
    )?;
    for w in workers {
        let busy_s = w.busy.as_secs_f64();
        writeln!(
            out,
            "{:<6} {:>12} {:>14} {:>10.1} {:>7.1} {:>8.1} {:>12.0}",
            w.name,
            w.packets,
            w.bytes,
            busy_s * 1e3,
            100.0 * busy_s / wall_s,
            percent(w.packets, total_pkts),
            if busy_s > 0.0 { w.packets as f64 / busy_s } else { 0.0 }
        )?;
    }
    writeln!(out, "{:<6} {:>12} {:>14} {:>10.1}", "total", total_pkts, total_bytes, wall_s * 1e3)?;
    if workers.len() > 1 {
        let busy: Vec<u64> = workers.iter().map(|w| w.busy.as_nanos() as u64).collect();
        writeln!(
            out,
            "imbalance (busiest worker's busy time / mean): {:.2}",
            crate::dispatch::adaptive::imbalance(&busy)
        )?;
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The counters as a nested JSON object ("decoder.event.ipv4.trunc_pkt" becomes
/// decoder → event → ipv4 → trunc_pkt), as Suricata's eve `stats` event nests them.
pub fn nested_json(counters: &CounterSet) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    for (name, value) in counters.iter() {
        let mut node = &mut root;
        let mut parts = name.split('.').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                node.insert(part.to_string(), value.into());
            } else {
                let child =
                    node.entry(part.to_string()).or_insert_with(|| serde_json::Value::Object(Default::default()));
                if !child.is_object() {
                    // A counter and a group share a name; keep the group.
                    *child = serde_json::Value::Object(Default::default());
                }
                node = child.as_object_mut().expect("object just ensured");
            }
        }
    }
    serde_json::Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_nest_by_dotted_name() {
        let mut c = CounterSet::new();
        c.add("decoder.pkts", 7);
        c.add("decoder.event.ipv4.trunc_pkt", 1);
        let j = nested_json(&c);
        assert_eq!(j["decoder"]["event"]["ipv4"]["trunc_pkt"], 1);
        assert_eq!(j["decoder"]["pkts"], 7);
    }

    fn report(i: usize, pkts: u64) -> WorkerReport {
        let mut counters = CounterSet::new();
        counters.add("decoder.pkts", pkts);
        WorkerReport {
            name: worker_name(i),
            packets: pkts,
            bytes: pkts * 100,
            busy: Duration::from_millis(10),
            counters,
        }
    }

    #[test]
    fn stats_log_has_totals_and_workers() {
        let mut out = Vec::new();
        write_stats_log(&mut out, Duration::from_secs(3725), "11/22/2026 -- 10:00:00", &[report(0, 3), report(1, 4)])
            .unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("(uptime: 0d, 01h 02m 05s)"));
        assert!(s.lines().any(|l| l.starts_with("decoder.pkts") && l.contains("Total") && l.ends_with("| 7")));
        assert!(s.lines().any(|l| l.contains("W#02") && l.ends_with("| 4")));
    }

    #[test]
    fn stats_event_is_suricata_shaped() {
        let line = stats_event(Timestamp::from_parts(5, 0), 2, &[report(0, 3), report(1, 4)]);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["event_type"], "stats");
        assert_eq!(v["stats"]["uptime"], 2);
        assert_eq!(v["stats"]["decoder"]["pkts"], 7);
        assert_eq!(v["stats"]["threads"]["W#01"]["decoder"]["pkts"], 3);
    }

    #[test]
    fn load_table_shares() {
        let mut out = Vec::new();
        write_load_table(&mut out, &[report(0, 1), report(1, 3)], Duration::from_millis(40)).unwrap();
        let s = String::from_utf8(out).unwrap();
        let w2 = s.lines().find(|l| l.starts_with("W#02")).unwrap();
        assert!(w2.contains("75.0"), "{s}");
        let imbalance = s.lines().find(|l| l.starts_with("imbalance")).unwrap();
        assert!(
            imbalance.ends_with(&format!(
                "{:.2}",
                crate::dispatch::adaptive::imbalance(&[
                    report(0, 1).busy.as_nanos() as u64,
                    report(1, 3).busy.as_nanos() as u64
                ])
            )),
            "{s}"
        );
    }
}
