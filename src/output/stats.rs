//! stats.log (Suricata's layout, totals then one block per worker), the eve `stats`
//! event, and the per-worker load table printed at exit.

use crate::counters::CounterSet;
use crate::output::json::JsonObject;
use crate::packet::Timestamp;
use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::OnceLock;
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

/// Appends one stats.log record: the totals, then every worker's own counters. As in
/// Suricata, only counters that are not zero are written.
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
    for (name, value) in total.iter().filter(|&(_, v)| v != 0) {
        writeln!(out, "{name:<45} | {:<25} | {value}", "Total")?;
    }
    for w in workers {
        writeln!(out, "{RULE}")?;
        for (name, value) in w.counters.iter().filter(|&(_, v)| v != 0) {
            writeln!(out, "{name:<45} | {:<25} | {value}", w.name)?;
        }
    }
    Ok(())
}

/// The final eve `stats` event: totals nested as Suricata writes them, plus a `threads`
/// object with each worker's counters.
pub fn stats_event(ts: Timestamp, uptime_secs: u64, workers: &[WorkerReport]) -> Vec<u8> {
    stats_event_with_global(ts, uptime_secs, workers, &CounterSet::new(), true)
}

/// [`stats_event`] with process-wide counters (the XDP layer's `picket.xdp.*`, the DDoS
/// controller's `picket.ddos.*`) added to the totals; they belong to no thread.
pub fn stats_event_with_global(
    ts: Timestamp,
    uptime_secs: u64,
    workers: &[WorkerReport],
    global: &CounterSet,
    threads: bool,
) -> Vec<u8> {
    stats_event_with_engines(ts, uptime_secs, workers, global, None, threads)
}

/// [`stats_event_with_global`] with `stats.detect.engines` (Suricata's per-engine rule
/// counts and last reload, `crate::service::RuleReloader::ruleset_stats`) when given.
///
/// Shaped for Suricata's EVE schema: counters Suricata has keep its names, picket's own go
/// under `picket` (`picket.detect.candidates`, ...), `flow.active` is the number of active
/// flows (its split by protocol is `picket.flow.active.*`), and the per-worker `threads`
/// object is there only with `threads` (eve-log `stats: threads: yes`, off by default as
/// in Suricata; `picket ctl stats` always has it).
pub fn stats_event_with_engines(
    ts: Timestamp,
    uptime_secs: u64,
    workers: &[WorkerReport],
    global: &CounterSet,
    engines: Option<serde_json::Value>,
    threads: bool,
) -> Vec<u8> {
    let total = CounterSet::sum(workers.iter().map(|w| &w.counters).chain(std::iter::once(global)));
    let mut stats = match eve_json(&total) {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("nested json is an object"),
    };
    if let Some(engines) = engines {
        let detect = stats.entry("detect").or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let serde_json::Value::Object(detect) = detect {
            detect.insert("engines".into(), engines);
        }
    }
    let mut with_uptime = serde_json::Map::new();
    with_uptime.insert("uptime".into(), uptime_secs.into());
    with_uptime.append(&mut stats);
    if threads {
        let per_worker: serde_json::Map<_, _> =
            workers.iter().map(|w| (w.name.clone(), eve_json(&w.counters))).collect();
        with_uptime.insert("threads".into(), per_worker.into());
    }
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

/// Suricata's counter names: the leaves of `stats` in its EVE JSON schema, one per line,
/// sorted.
const SURICATA_COUNTERS: &str = include_str!("suricata_counters.txt");

/// Whether Suricata has a counter called `name` (eve `stats` keeps it where it is).
fn is_suricata_counter(name: &str) -> bool {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| SURICATA_COUNTERS.lines().collect());
    names.binary_search(&name).is_ok()
}

/// The counters as eve's `stats` object (see [`stats_event_with_engines`]): Suricata's
/// names as they are, picket's own under `picket.`, `flow.active` summed.
fn eve_json(counters: &CounterSet) -> serde_json::Value {
    let mut shaped: Vec<(Cow<'_, str>, u64)> = Vec::with_capacity(counters.iter().count() + 1);
    let mut active = None;
    for (name, value) in counters.iter() {
        if name.starts_with("flow.active.") {
            *active.get_or_insert(0) += value;
        }
        if name.starts_with("picket.") || (is_suricata_counter(name) && name != "flow.active") {
            shaped.push((name.into(), value));
        } else {
            shaped.push((format!("picket.{name}").into(), value));
        }
    }
    if let Some(active) = active {
        shaped.push(("flow.active".into(), active));
    }
    nested(shaped.iter().map(|(n, v)| (n.as_ref(), *v)))
}

/// The counters as a nested JSON object ("decoder.event.ipv4.trunc_pkt" becomes
/// decoder → event → ipv4 → trunc_pkt), as Suricata's eve `stats` event nests them.
pub fn nested_json(counters: &CounterSet) -> serde_json::Value {
    nested(counters.iter())
}

fn nested<'n>(counters: impl Iterator<Item = (&'n str, u64)>) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    for (name, value) in counters {
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
        // Zero counters are left out, as Suricata does.
        let mut zero = report(0, 3);
        zero.counters.add("tcp.rst", 0);
        let mut out = Vec::new();
        write_stats_log(&mut out, Duration::from_secs(1), "d", &[zero]).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("decoder.pkts") && !s.contains("tcp.rst"), "{s}");
    }

    #[test]
    fn stats_event_is_suricata_shaped() {
        let line = stats_event(Timestamp::from_parts(5, 0), 2, &[report(0, 3), report(1, 4)]);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["event_type"], "stats");
        assert_eq!(v["stats"]["uptime"], 2);
        assert_eq!(v["stats"]["decoder"]["pkts"], 7);
        assert_eq!(v["stats"]["threads"]["W#01"]["decoder"]["pkts"], 3);
        let line = stats_event_with_global(Timestamp::from_parts(5, 0), 2, &[report(0, 3)], &CounterSet::new(), false);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert!(v["stats"].get("threads").is_none(), "threads only when configured");
    }

    /// Suricata's counters stay where its schema has them; picket's own move under
    /// `picket`; `flow.active` is one number.
    #[test]
    fn stats_event_follows_suricatas_schema() {
        let mut c = CounterSet::new();
        for (name, v) in [
            ("decoder.pkts", 9),
            ("decoder.event.ipv4.trunc_pkt", 1),
            ("detect.candidates", 4),
            ("flow.active.tcp", 2),
            ("flow.active.udp", 3),
            ("capture.kernel_packets", 9),
            ("picket.xdp.passed", 5),
        ] {
            c.add(name, v);
        }
        let w = WorkerReport { name: worker_name(0), counters: c, ..Default::default() };
        let line = stats_event_with_global(Timestamp::from_parts(5, 0), 2, &[w], &CounterSet::new(), true);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        let s = &v["stats"];
        assert_eq!(
            (s["decoder"]["pkts"].as_u64(), s["decoder"]["event"]["ipv4"]["trunc_pkt"].as_u64()),
            (Some(9), Some(1))
        );
        assert_eq!(s["capture"]["kernel_packets"], 9);
        assert_eq!(s["flow"]["active"], 5);
        assert_eq!(s["picket"]["flow"]["active"]["udp"], 3);
        assert_eq!(s["picket"]["detect"]["candidates"], 4);
        assert!(s["detect"].get("candidates").is_none());
        assert_eq!(s["picket"]["xdp"]["passed"], 5);
        assert_eq!(s["threads"]["W#01"]["flow"]["active"], 5);
    }

    #[test]
    fn suricata_counter_list_is_sorted_and_known() {
        let names: Vec<&str> = SURICATA_COUNTERS.lines().collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates (binary search)");
        assert!(is_suricata_counter("tcp.syn") && is_suricata_counter("flow.active"));
        assert!(!is_suricata_counter("detect.candidates") && !is_suricata_counter("decoder"));
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
