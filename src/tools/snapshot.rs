//! The live stats snapshot a running picket leaves for `picket top`: a small JSON file,
//! `LOGDIR/picket-stats.json`, rewritten periodically by atomic rename so a reader never
//! sees half a file:
//!
//! ```json
//! {"version":1,"timestamp":1767225600123456789,
//!  "workers":[{"name":"W#01","packets":10,"bytes":6400,"drops":0,"busy_ns":120000,
//!               "ips":{"accepted":9,"blocked":1,"rejected":0,"fail_open":0,"tx_errors":0}}]}
//! ```
//!
//! `ips` is there only for inline runs (NFQUEUE, bridge).
//!
//! `timestamp` is nanoseconds since the Unix epoch when the counters were read; readers
//! compute rates against it rather than against their own clock, so sampling the file at
//! the same period as it is written does not alias. Counters are cumulative since start.
//! Unknown fields are ignored, so fields can be added without breaking older readers.

use crate::counters::CounterSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// File name of the snapshot inside the log directory.
pub const SNAPSHOT_FILE_NAME: &str = "picket-stats.json";
pub const SNAPSHOT_VERSION: u32 = 1;
/// A reader refuses larger files: the snapshot is a few hundred bytes per worker.
pub const MAX_SNAPSHOT_BYTES: u64 = 4 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerSnapshot {
    /// Suricata-style thread name, "W#01".
    pub name: String,
    pub packets: u64,
    pub bytes: u64,
    /// Packets this worker lost: ring full, capture drops attributed to it.
    pub drops: u64,
    /// Time spent inspecting packets (not waiting for them).
    pub busy_ns: u64,
    /// Inline runs: what the worker's verdicts did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<IpsSnapshot>,
}

/// One inline worker's verdict counters (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsSnapshot {
    pub accepted: u64,
    /// Dropped or rejected.
    pub blocked: u64,
    /// Blocked and answered with a TCP RST or ICMP error.
    pub rejected: u64,
    /// NFQUEUE: accepted by the kernel without asking, the queue being full.
    pub fail_open: u64,
    /// Packets or replies that could not be sent.
    pub tx_errors: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    #[serde(default)]
    pub version: u32,
    /// Nanoseconds since the Unix epoch.
    pub timestamp: u64,
    #[serde(default)]
    pub workers: Vec<WorkerSnapshot>,
    /// Process-wide counters (`picket.xdp.*`, `picket.ddos.*`, ...), cumulative.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub global: BTreeMap<String, u64>,
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Writes the snapshot stamped with the current time; see [`write_snapshot_at`].
pub fn write_snapshot(path: &Path, workers: &[WorkerSnapshot]) -> io::Result<()> {
    write_snapshot_at(path, now_ns(), workers)
}

/// Writes the snapshot with process-wide counters beside the workers'.
pub fn write_snapshot_with_global(path: &Path, workers: &[WorkerSnapshot], global: &CounterSet) -> io::Result<()> {
    let global = global.iter().map(|(name, value)| (name.to_string(), value)).collect();
    write_snapshot_file(
        path,
        StatsSnapshot { version: SNAPSHOT_VERSION, timestamp: now_ns(), workers: workers.to_vec(), global },
    )
}

/// Writes `path` atomically: the JSON goes to a temporary file in the same directory,
/// which is then renamed over `path`.
pub fn write_snapshot_at(path: &Path, timestamp_ns: u64, workers: &[WorkerSnapshot]) -> io::Result<()> {
    let snapshot = StatsSnapshot {
        version: SNAPSHOT_VERSION,
        timestamp: timestamp_ns,
        workers: workers.to_vec(),
        global: BTreeMap::new(),
    };
    write_snapshot_file(path, snapshot)
}

fn write_snapshot_file(path: &Path, snapshot: StatsSnapshot) -> io::Result<()> {
    let json = serde_json::to_vec(&snapshot).map_err(io::Error::other)?;
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "snapshot path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp_path = path.with_file_name(tmp_name);
    let result = (|| {
        let mut file = File::create(&tmp_path)?;
        file.write_all(&json)?;
        file.write_all(b"\n")?;
        fs::rename(&tmp_path, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result
}

/// Reads a snapshot. `Ok(None)` when the file does not exist (picket not running or
/// not writing one); an error for an unreadable or malformed file.
pub fn read_snapshot(path: &Path) -> Result<Option<StatsSnapshot>, String> {
    let metadata = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if metadata.len() > MAX_SNAPSHOT_BYTES {
        return Err(format!(
            "{}: {} bytes, larger than the {} allowed",
            path.display(),
            metadata.len(),
            MAX_SNAPSHOT_BYTES
        ));
    }
    let bytes = match fs::read(path) {
        Ok(b) => b,
        // Renamed away between metadata and read.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_counters_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SNAPSHOT_FILE_NAME);
        let mut global = CounterSet::new();
        global.add("picket.xdp.blocklisted", 5);
        write_snapshot_with_global(&path, &[], &global).unwrap();
        let read = read_snapshot(&path).unwrap().unwrap();
        assert_eq!(read.global.get("picket.xdp.blocklisted"), Some(&5));
        // Without global counters the key is left out, and old files read back empty.
        write_snapshot(&path, &[]).unwrap();
        assert!(!fs::read_to_string(&path).unwrap().contains("global"));
        assert!(read_snapshot(&path).unwrap().unwrap().global.is_empty());
    }

    #[test]
    fn write_then_read_round_trips_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SNAPSHOT_FILE_NAME);
        let workers = vec![
            WorkerSnapshot { name: "W#01".into(), packets: 10, bytes: 6400, drops: 1, busy_ns: 5, ips: None },
            WorkerSnapshot {
                name: "W#02".into(),
                packets: 20,
                bytes: 12800,
                drops: 0,
                busy_ns: 7,
                ips: Some(IpsSnapshot { accepted: 3, blocked: 2, ..Default::default() }),
            },
        ];
        write_snapshot_at(&path, 42, &workers).unwrap();
        write_snapshot_at(&path, 43, &workers).unwrap();
        let read = read_snapshot(&path).unwrap().unwrap();
        assert_eq!(read, StatsSnapshot { version: 1, timestamp: 43, workers, ..Default::default() });
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(SNAPSHOT_FILE_NAME)]);
    }

    #[test]
    fn reader_tolerates_unknown_fields_and_reports_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        assert_eq!(read_snapshot(&path).unwrap(), None);
        fs::write(&path, r#"{"timestamp":5,"future":true,"workers":[{"name":"W#01","packets":1,"bytes":2,"drops":3,"busy_ns":4,"x":[]}]}"#).unwrap();
        let s = read_snapshot(&path).unwrap().unwrap();
        assert_eq!(s.version, 0);
        assert_eq!(s.workers[0].drops, 3);
        fs::write(&path, b"{\"timestamp\":").unwrap();
        assert!(read_snapshot(&path).is_err());
    }
}
