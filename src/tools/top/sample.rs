//! One reading of every source `picket top` shows. Paths are built from injectable roots so
//! tests (and containers with a bind-mounted host /proc) can point elsewhere.

use crate::tools::procfs::{self, NetSoftirqs, ProcStat};
use crate::tools::snapshot::{self, StatsSnapshot};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// At most this many interfaces are listed (hosts with thousands of veths exist).
pub const MAX_IFACES: usize = 1024;

#[derive(Clone, Debug)]
pub struct Sources {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    pub stats_file: Option<PathBuf>,
    /// Only these interfaces; empty: all but `lo`.
    pub ifaces: Vec<String>,
}

/// Cumulative counters of one interface; `None` where the file is missing or unreadable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetDevCounters {
    pub rx_packets: Option<u64>,
    pub tx_packets: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub tx_bytes: Option<u64>,
    pub rx_dropped: Option<u64>,
    pub tx_dropped: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub stat: ProcStat,
    pub softirqs: NetSoftirqs,
    pub ifaces: BTreeMap<String, NetDevCounters>,
    pub ifaces_not_shown: u64,
    pub stats_file: Option<PathBuf>,
    pub snapshot: Option<StatsSnapshot>,
    pub snapshot_error: Option<String>,
    /// Unparsable lines, unreadable counter files.
    pub anomalies: u64,
}

/// Reads every source once. Fails only when /proc/stat itself is unreadable: without it
/// there is no per-core table; every other source degrades to an empty section.
pub fn read_sample(sources: &Sources) -> Result<Sample, String> {
    let stat_path = sources.proc_root.join("stat");
    let stat_text = fs::read_to_string(&stat_path).map_err(|e| format!("{}: {e}", stat_path.display()))?;
    let mut sample = Sample { stat: procfs::parse_proc_stat(&stat_text), ..Sample::default() };
    sample.anomalies += sample.stat.skipped_lines;

    match fs::read_to_string(sources.proc_root.join("softirqs")) {
        Ok(text) => sample.softirqs = procfs::parse_softirqs(&text),
        Err(_) => sample.anomalies += 1,
    }
    sample.anomalies += sample.softirqs.skipped_lines;

    read_interfaces(sources, &mut sample);

    if let Some(path) = &sources.stats_file {
        sample.stats_file = Some(path.clone());
        match snapshot::read_snapshot(path) {
            Ok(s) => sample.snapshot = s,
            Err(e) => sample.snapshot_error = Some(e),
        }
    }
    Ok(sample)
}

fn read_interfaces(sources: &Sources, sample: &mut Sample) {
    let class_net = sources.sys_root.join("class/net");
    let mut names: Vec<String> = if sources.ifaces.is_empty() {
        match fs::read_dir(&class_net) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name != "lo")
                .collect(),
            Err(_) => {
                sample.anomalies += 1;
                Vec::new()
            }
        }
    } else {
        sources.ifaces.clone()
    };
    names.sort();
    if names.len() > MAX_IFACES {
        sample.ifaces_not_shown = (names.len() - MAX_IFACES) as u64;
        names.truncate(MAX_IFACES);
    }
    for name in names {
        // A name from the command line must not walk out of class/net.
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            sample.anomalies += 1;
            continue;
        }
        let stats_dir = class_net.join(&name).join("statistics");
        if !stats_dir.is_dir() {
            sample.anomalies += 1;
            continue;
        }
        let mut missing = 0;
        let mut read = |file: &str| {
            let value = read_u64(&stats_dir.join(file));
            if value.is_none() {
                missing += 1;
            }
            value
        };
        let counters = NetDevCounters {
            rx_packets: read("rx_packets"),
            tx_packets: read("tx_packets"),
            rx_bytes: read("rx_bytes"),
            tx_bytes: read("tx_bytes"),
            rx_dropped: read("rx_dropped"),
            tx_dropped: read("tx_dropped"),
        };
        sample.anomalies += missing;
        sample.ifaces.insert(name, counters);
    }
}

pub(crate) fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}
