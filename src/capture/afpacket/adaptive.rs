//! Adaptive fanout (`--fanout adaptive`, `cluster-type: cluster_adaptive`): picket's own
//! eBPF fanout program (`bpf/fanout.c`) picks the worker of every packet through an
//! indirection table of [`FANOUT_BUCKETS`] buckets that picket rewrites while it runs.
//!
//! - [`FanoutProgram`]: the loaded program (its descriptor goes to every socket of the
//!   fanout group with PACKET_FANOUT_DATA, [`super::AfPacketConfig::fanout_program`]).
//! - [`FanoutTable`]: the user-space handle on the program's bucket → worker map; the
//!   live controller (`crate::pipeline::live`) moves buckets by writing it.
//!
//! The program hashes the packet the same way as
//! [`picket_core::flow::fanout_hash::fanout_bucket`], which the workers use to know the
//! bucket of what they receive; [`FanoutProgram::test_run`] runs the real program on a
//! frame so that a test can check the two agree.

use crate::flow::fanout_hash::FANOUT_BUCKETS;
use aya::maps::{Array, MapData};
use aya::programs::SocketFilter;
use aya::{Ebpf, EbpfLoader};
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

/// The object built by build.rs from bpf/fanout.c (empty without clang at build time).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/picket_fanout.o"));

/// The program's name in the object and in `bpftool prog` listings.
pub const PROGRAM: &str = "picket_fanout";
const TABLE: &str = "picket_fanout_table";
const CONFIG: &str = "picket_fanout_config";

#[derive(Debug)]
pub struct FanoutError(pub String);

impl fmt::Display for FanoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FanoutError {}

/// The loaded fanout program. The fanout groups hold their own reference once joined;
/// this keeps the object (and its maps) alive for the run.
pub struct FanoutProgram {
    _ebpf: Ebpf,
    fd: Arc<OwnedFd>,
}

/// The bucket → worker map of a loaded [`FanoutProgram`], and this side's copy of it.
pub struct FanoutTable {
    map: Array<MapData, u32>,
    owners: Vec<u16>,
    workers: usize,
}

impl FanoutProgram {
    /// Whether this build carries the program (clang was found at build time).
    pub fn available() -> bool {
        !OBJECT.is_empty()
    }

    /// Loads the program for `workers` workers; the table starts as `bucket % workers`.
    pub fn load(workers: usize) -> Result<(FanoutProgram, FanoutTable), FanoutError> {
        if !Self::available() {
            return Err(FanoutError(
                "this picket was built without its eBPF fanout program (clang was missing at build time), so \
                 --fanout adaptive / cluster_adaptive is not available: apt install clang libbpf-dev, then rebuild"
                    .into(),
            ));
        }
        let workers = workers.clamp(1, u16::MAX as usize);
        let mut ebpf = EbpfLoader::new()
            .load(OBJECT)
            .map_err(|e| FanoutError(format!("cannot load the eBPF fanout program: {e}")))?;
        let mut config: Array<MapData, u32> = take_array(&mut ebpf, CONFIG)?;
        config.set(0, workers as u32, 0).map_err(|e| FanoutError(format!("{CONFIG}: {e}")))?;
        let map: Array<MapData, u32> = take_array(&mut ebpf, TABLE)?;
        if map.len() as usize != FANOUT_BUCKETS {
            return Err(FanoutError(format!(
                "{TABLE} has {} buckets, picket expects {FANOUT_BUCKETS} (stale build?)",
                map.len()
            )));
        }
        let mut table = FanoutTable { map, owners: vec![0; FANOUT_BUCKETS], workers };
        for bucket in 0..FANOUT_BUCKETS {
            table.assign(bucket, (bucket % workers) as u16)?;
        }
        let program: &mut SocketFilter = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| FanoutError(format!("the fanout object has no program {PROGRAM}")))?
            .try_into()
            .map_err(|e| FanoutError(format!("{PROGRAM}: {e}")))?;
        program.load().map_err(|e| FanoutError(format!("the kernel refused the eBPF fanout program: {e}")))?;
        let fd = program
            .fd()
            .and_then(|fd| fd.as_fd().try_clone_to_owned().map_err(Into::into))
            .map_err(|e| FanoutError(format!("{PROGRAM}: {e}")))?;
        Ok((FanoutProgram { _ebpf: ebpf, fd: Arc::new(fd) }, table))
    }

    /// The program's descriptor, for [`super::AfPacketConfig::fanout_program`].
    pub fn fd(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.fd)
    }

    /// Runs the program once on an Ethernet `frame` in the kernel (`BPF_PROG_TEST_RUN`:
    /// the kernel pulls the Ethernet header, so the program sees the network header as in
    /// a fanout group) and returns what it returned: the worker.
    pub fn test_run(&self, frame: &[u8]) -> Result<u32, FanoutError> {
        crate::xdp::sys::test_run(self.fd.as_fd(), frame)
            .map(|run| run.action)
            .map_err(|e| FanoutError(format!("BPF_PROG_TEST_RUN: {e}")))
    }
}

impl FanoutTable {
    /// The worker that receives `bucket` now.
    pub fn owner(&self, bucket: usize) -> u16 {
        self.owners.get(bucket).copied().unwrap_or(0)
    }

    /// Every bucket's worker.
    pub fn owners(&self) -> &[u16] {
        &self.owners
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Sends `bucket` to `worker` from the next packet on (one map write; the kernel
    /// reads the entry per packet).
    pub fn assign(&mut self, bucket: usize, worker: u16) -> Result<(), FanoutError> {
        if bucket >= FANOUT_BUCKETS || worker as usize >= self.workers {
            return Err(FanoutError(format!("bucket {bucket} -> worker {worker}: out of range")));
        }
        self.map.set(bucket as u32, worker as u32, 0).map_err(|e| FanoutError(format!("{TABLE}: {e}")))?;
        self.owners[bucket] = worker;
        Ok(())
    }
}

fn take_array(ebpf: &mut Ebpf, name: &str) -> Result<Array<MapData, u32>, FanoutError> {
    let map = ebpf.take_map(name).ok_or_else(|| FanoutError(format!("the fanout object has no map {name}")))?;
    Array::try_from(map).map_err(|e| FanoutError(format!("{name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::fanout_hash::fanout_bucket;

    /// Packets for the parity test: IPv4 and IPv6, TCP/UDP/SCTP/ICMP, both directions,
    /// fragments, VLAN tags, extension headers, and cut-short frames.
    fn packets() -> Vec<Vec<u8>> {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut out = Vec::new();
        for i in 0..400 {
            let r = next();
            let proto = [6u8, 17, 132, 1, 58, 47][(r % 6) as usize];
            let v6 = i % 2 == 1;
            let (sport, dport) = ((r >> 8) as u16, (r >> 24) as u16);
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            src.iter_mut().chain(dst.iter_mut()).enumerate().for_each(|(k, b)| *b = (next() >> (k % 8)) as u8);
            let frag = match i % 10 {
                7 => 0x2000u16,
                8 => 0x00b9,
                _ => 0,
            };
            for (s, d, sp, dp) in [(&src, &dst, sport, dport), (&dst, &src, dport, sport)] {
                let mut l3 = Vec::new();
                let mut l4 = sp.to_be_bytes().to_vec();
                l4.extend_from_slice(&dp.to_be_bytes());
                l4.extend_from_slice(&[0u8; 28]);
                let ethertype: u16 = if v6 {
                    l3.extend_from_slice(&[0x60, 0, 0, 0]);
                    let mut next_header = proto;
                    let mut ext = Vec::new();
                    if i % 5 == 3 {
                        ext.extend_from_slice(&[proto, 0, 0, 0, 0, 0, 0, 0]); // destination options
                        next_header = 60;
                    }
                    if frag != 0 {
                        let inner = if ext.is_empty() { proto } else { 60 };
                        let mut f = vec![inner, 0];
                        f.extend_from_slice(&frag.to_be_bytes());
                        f.extend_from_slice(&[0, 0, 0, 1]);
                        ext.splice(0..0, f);
                        next_header = 44;
                    }
                    l3.extend_from_slice(&((ext.len() + l4.len()) as u16).to_be_bytes());
                    l3.push(next_header);
                    l3.push(64);
                    l3.extend_from_slice(s);
                    l3.extend_from_slice(d);
                    l3.extend_from_slice(&ext);
                    0x86dd
                } else {
                    l3.extend_from_slice(&[0x45, 0]);
                    l3.extend_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
                    l3.extend_from_slice(&[0, 1]);
                    l3.extend_from_slice(&frag.to_be_bytes());
                    l3.extend_from_slice(&[64, proto, 0, 0]);
                    l3.extend_from_slice(&s[..4]);
                    l3.extend_from_slice(&d[..4]);
                    0x0800
                };
                let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
                if i % 7 == 2 {
                    frame.extend_from_slice(&[0x81, 0x00, 0x00, (i % 100) as u8]);
                }
                frame.extend_from_slice(&ethertype.to_be_bytes());
                frame.extend_from_slice(&l3);
                frame.extend_from_slice(&l4);
                if i % 13 == 5 {
                    // Cut inside the extension headers or the transport header (the kernel
                    // refuses to test-run a frame without a whole fixed IP header).
                    let fixed = frame.len() - l3.len() - l4.len() + if v6 { 40 } else { 20 };
                    frame.truncate(fixed + r as usize % (frame.len() - fixed));
                }
                out.push(frame);
            }
        }
        out
    }

    /// The kernel's program and the Rust twin agree on every packet. Needs root (loading
    /// a program) and a build with clang; says SKIPPED otherwise.
    #[test]
    fn program_and_twin_agree_on_buckets() {
        if !FanoutProgram::available() {
            eprintln!("SKIPPED: built without the eBPF fanout program");
            return;
        }
        // One worker per bucket, bucket b -> worker b: the program returns the bucket.
        let (program, mut table) = match FanoutProgram::load(FANOUT_BUCKETS) {
            Ok(loaded) => loaded,
            Err(e) => {
                eprintln!("SKIPPED: {e}");
                return;
            }
        };
        for bucket in 0..FANOUT_BUCKETS {
            table.assign(bucket, bucket as u16).unwrap();
        }
        let frames = packets();
        let mut seen = std::collections::HashSet::new();
        for (n, frame) in frames.iter().enumerate() {
            let kernel = program.test_run(frame).unwrap_or_else(|e| panic!("packet {n} ({} bytes): {e}", frame.len()));
            let twin = fanout_bucket(frame) as u32;
            assert_eq!(kernel, twin, "packet {n}: program {kernel}, twin {twin}: {frame:02x?}");
            seen.insert(twin);
        }
        // Both directions of every pair were generated next to each other.
        for pair in frames.chunks(2) {
            assert_eq!(fanout_bucket(&pair[0]), fanout_bucket(&pair[1]), "{:02x?}", pair[0]);
        }
        assert!(seen.len() > 100, "only {} buckets used", seen.len());

        // The table steers: every bucket to worker 3 of 4, then an out-of-range entry
        // falls back to bucket % workers.
        let (program, mut table) = FanoutProgram::load(4).unwrap();
        for bucket in 0..FANOUT_BUCKETS {
            table.assign(bucket, 3).unwrap();
        }
        assert!(frames.iter().all(|f| program.test_run(f).unwrap() == 3));
        assert!(table.assign(0, 4).is_err());
    }
}
