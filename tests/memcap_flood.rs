//! Offline runs of the `picket` binary on generated floods with tiny memcaps: the run
//! completes and the counters show each cap holding (`flow.memcap` with emergency mode,
//! `app-layer.protocols.http.memcap`). No timing or RSS in pass/fail: that is
//! `scripts/flood_rss.py`'s job.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const SERVER: [u8; 4] = [10, 0, 0, 1];

/// Pcap with one microsecond between packets, so nothing times out during the flood.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    // Magic, version 2.4 (two little-endian u16), zone, sigfigs, snaplen, Ethernet.
    let header = [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1];
    let mut out: Vec<u8> = header.iter().flat_map(|w| w.to_le_bytes()).collect();
    for (i, frame) in frames.iter().enumerate() {
        for word in
            [1_700_000_000 + (i / 1_000_000) as u32, (i % 1_000_000) as u32, frame.len() as u32, frame.len() as u32]
        {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(frame);
    }
    std::fs::write(path, out).unwrap();
}

fn client(i: u32) -> [u8; 4] {
    [172, 16, (i >> 8) as u8, i as u8]
}

/// One TCP segment; `to_server` picks the direction between `client(i)`:`sport` and the server.
fn tcp(i: u32, sport: u16, to_server: bool, seq: u32, ack: Option<u32>, syn: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst, sp, dp) = if to_server { (client(i), SERVER, sport, 80) } else { (SERVER, client(i), 80, sport) };
    let mut b = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src, dst, 64)
        .tcp(sp, dp, seq, 65535);
    if syn {
        b = b.syn();
    }
    if let Some(a) = ack {
        b = b.ack(a);
    }
    if !payload.is_empty() {
        b = b.psh();
    }
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

/// `flows` HTTP uploads of `body` bytes each: handshake, POST, data acked by the server,
/// no response; then a UDP flood of `udp` distinct tuples.
fn flood(flows: u32, body: usize, udp: u32) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for i in 0..flows {
        let sport = 20000 + i as u16;
        let (c, s) = (1000u32, 5000u32);
        frames.push(tcp(i, sport, true, c, None, true, b""));
        frames.push(tcp(i, sport, false, s, Some(c + 1), true, b""));
        frames.push(tcp(i, sport, true, c + 1, Some(s + 1), false, b""));
        let head = format!("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: {body}\r\n\r\n");
        let mut seq = c + 1;
        frames.push(tcp(i, sport, true, seq, Some(s + 1), false, head.as_bytes()));
        seq += head.len() as u32;
        for chunk in vec![b'B'; body].chunks(1400) {
            frames.push(tcp(i, sport, true, seq, Some(s + 1), false, chunk));
            seq += chunk.len() as u32;
            frames.push(tcp(i, sport, false, s + 1, Some(seq), false, b""));
        }
    }
    for i in 0..udp {
        let mut out = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([192, 168, (i >> 8) as u8, i as u8], SERVER, 64)
            .udp(1024 + (i % 50000) as u16, 9999)
            .write(&mut out, b"flood")
            .unwrap();
        frames.push(out);
    }
    frames
}

fn stats_after(frames: &[Vec<u8>], sets: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("flood.pcap");
    write_pcap(&pcap, frames);
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/default.rules");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_picket"));
    cmd.arg("-r").arg(&pcap).arg("-S").arg(&rules).arg("-l").arg(dir.path());
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("spawn picket");
    assert!(out.status.success(), "picket failed: {}", String::from_utf8_lossy(&out.stderr));
    let eve = std::fs::read_to_string(dir.path().join("eve.json")).unwrap();
    let last = eve.lines().last().expect("events");
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["event_type"], "stats", "stats come last");
    v["stats"].clone()
}

#[test]
fn memcap_flood_with_tiny_caps_completes_and_counts_each_cap() {
    let frames = flood(300, 30_000, 4000);
    let stats = stats_after(
        &frames,
        &["runmode=single", "flow.memcap=400kb", "app-layer.protocols.http.memcap=1mb", "flow.emergency-recovery=30"],
    );
    let n = |path: &[&str]| path.iter().fold(&stats, |v, k| &v[*k]).as_u64().unwrap_or_else(|| panic!("{path:?}"));
    // 300 bodies of 30 000 bytes do not fit 1 MiB: what is over it is not buffered, counted.
    assert!(n(&["http", "memcap"]) > 0, "{}", stats["http"]);
    assert!(n(&["picket", "http", "memcap_bytes_refused"]) > 0, "{}", stats["http"]);
    // Flows that ended gave their bodies back.
    assert_eq!(n(&["http", "memuse"]), 0);
    // 4300 flows do not fit 400 KiB: emergency mode, flows refused room and evicted.
    assert!(n(&["flow", "memcap"]) > 0, "{}", stats["flow"]);
    assert!(n(&["flow", "emerg_mode_entered"]) >= 1);
    assert!(n(&["flow", "get_used"]) > 0);
    assert_eq!(n(&["flow", "total"]), 4300);
    // Every packet was processed.
    assert_eq!(n(&["decoder", "pkts"]), frames.len() as u64);
}
