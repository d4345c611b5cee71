//! Hostile segment orders (issue #16): reverse order, many tiny segments inside one large
//! one, out-of-order floods over many flows. Scaled-down cases check the bytes and finish
//! within a generous time bound; `worst_case_bench` (ignored, run by hand with
//! `cargo test --release -p picket-core worst_case_bench -- --ignored --nocapture`)
//! prints the per-segment cost of the full-size cases against in-order delivery.

use std::time::{Duration, Instant};

use super::*;
use crate::flow::tcp::{TcpConfig, TcpSession};
use crate::flow::TcpSegment;

const ISN: u32 = 7_000;
const PEER_ISN: u32 = 9_000;

/// One TCP connection after its handshake, fed through the flow's session as the
/// inspector does.
struct Flow {
    r: TcpReassembly,
    s: TcpSession,
    tcp: TcpConfig,
}

impl Flow {
    fn new(cfg: StreamConfig, mem: &mut ReassemblyMemory) -> Flow {
        let tcp = TcpConfig { midstream: false, async_oneside: false, reassembly_depth: cfg.depth };
        let mut f = Flow { r: TcpReassembly::new(cfg), s: TcpSession::default(), tcp };
        f.pkt(Direction::ToServer, ISN, 0, TcpFlags::SYN, b"", mem);
        f.pkt(Direction::ToClient, PEER_ISN, ISN + 1, TcpFlags::SYN | TcpFlags::ACK, b"", mem);
        f.pkt(Direction::ToServer, ISN + 1, PEER_ISN + 1, TcpFlags::ACK, b"", mem);
        f
    }
    fn pkt(
        &mut self,
        dir: Direction,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
        mem: &mut ReassemblyMemory,
    ) -> SegmentOutcome {
        let flow_seg = TcpSegment { flags, seq, ack, window: 65535 };
        self.s.on_segment(&flow_seg, payload.len() as u32, dir == Direction::ToServer, self.tcp);
        let seg = Segment { seq, ack, flags: TcpFlags(flags), window: 65535, payload };
        self.r.on_segment(dir, &seg, self.s.stream(), mem)
    }
    /// Client data at stream offset `off`.
    fn data(&mut self, off: u64, payload: &[u8], mem: &mut ReassemblyMemory) -> SegmentOutcome {
        self.pkt(Direction::ToServer, ISN + 1 + off as u32, PEER_ISN + 1, TcpFlags::ACK, payload, mem)
    }
    /// Ends the flow and returns every client byte inspected at flow end.
    fn finish(mut self, mem: &mut ReassemblyMemory) -> Vec<u8> {
        self.r.close();
        let mut seen = Vec::new();
        self.r.inspect_raw(Direction::ToServer, mem, |c| seen.extend_from_slice(c.new_data()));
        self.r.release(mem);
        seen
    }
}

fn byte(i: u64) -> u8 {
    (i * 7 + i / 251) as u8
}

/// `n` one-byte segments, in order or in reverse order. Returns the time and the stream.
fn one_byte_segments(n: u64, reverse: bool) -> (Duration, Vec<u8>) {
    let mut mem = ReassemblyMemory::default();
    let mut f = Flow::new(StreamConfig { depth: 0, ..StreamConfig::default() }, &mut mem);
    let t = Instant::now();
    for k in 0..n {
        let i = if reverse { n - 1 - k } else { k };
        f.data(i, &[byte(i)], &mut mem);
    }
    let elapsed = t.elapsed();
    (elapsed, f.finish(&mut mem))
}

/// One `large`-byte segment, then `n` one-byte segments inside it (distinct offsets while
/// they last), all carrying the same bytes. Returns the time of the tiny ones.
fn tiny_inside_large(n: u64, large: u64) -> (Duration, Vec<u8>) {
    let mut mem = ReassemblyMemory::default();
    let mut f = Flow::new(StreamConfig { depth: 0, ..StreamConfig::default() }, &mut mem);
    let big: Vec<u8> = (0..large).map(byte).collect();
    f.data(0, &big, &mut mem);
    let t = Instant::now();
    for k in 0..n {
        let i = (k * 7919) % large;
        f.data(i, &[byte(i)], &mut mem);
    }
    let elapsed = t.elapsed();
    (elapsed, f.finish(&mut mem))
}

/// `flows` flows each receiving `per_flow` 100-byte segments; out of order means every
/// other slot only, so no hole is ever filled. Returns the time per segment.
fn many_flows(flows: usize, per_flow: u64, out_of_order: bool) -> Duration {
    let mut mem = ReassemblyMemory::default();
    let cfg = StreamConfig::default();
    let mut all: Vec<Flow> = (0..flows).map(|_| Flow::new(cfg, &mut mem)).collect();
    let payload = [b'x'; 100];
    let t = Instant::now();
    for k in 0..per_flow {
        let slot = if out_of_order { 2 * k + 1 } else { k };
        for f in &mut all {
            f.data(slot * 100, &payload, &mut mem);
        }
    }
    let elapsed = t.elapsed();
    for f in all {
        f.finish(&mut mem);
    }
    assert_eq!(mem.used(), 0);
    elapsed / (flows as u32 * per_flow as u32)
}

/// Time bound for a scaled-down case: far above what it takes (tens of milliseconds in a
/// release build), far below the quadratic behaviour it guards against.
const GENEROUS: Duration = Duration::from_secs(3);

#[test]
fn reverse_order_one_byte_segments_reassemble_in_linear_time() {
    let n = 50_000;
    let (t, seen) = one_byte_segments(n, true);
    assert_eq!(seen, (0..n).map(byte).collect::<Vec<_>>());
    assert!(t < GENEROUS, "50k reverse-order segments took {t:?}");
}

#[test]
fn tiny_segments_inside_a_large_one_cost_log_time() {
    let (t, seen) = tiny_inside_large(20_000, 60_000);
    assert_eq!(seen, (0..60_000).map(byte).collect::<Vec<_>>());
    assert!(t < GENEROUS, "20k overlapping segments took {t:?}");
}

#[test]
fn region_limit_refuses_and_counts_further_holes() {
    let mut mem = ReassemblyMemory::default();
    let mut f = Flow::new(StreamConfig { max_regions: 4, ..StreamConfig::default() }, &mut mem);
    for k in 0..6u64 {
        let out = f.data(10 * k + 5, b"ab", &mut mem);
        let expect = if k < 4 { InsertResult::Inserted } else { InsertResult::RegionLimit };
        assert_eq!(out.data, Some(expect), "segment {k}");
    }
    assert_eq!(mem.stats().region_limit_drop, 2);
    // Growing a held region is always allowed.
    assert_eq!(f.data(7, b"cd", &mut mem).data, Some(InsertResult::Inserted));
    let named: std::collections::HashMap<_, _> = mem.counters().collect();
    assert_eq!(named["tcp.reassembly_region_limit_drop"], 2);
    // The refused bytes are not in the stream: only the four regions are inspected.
    assert_eq!(f.finish(&mut mem), b"abcdababab".to_vec());
}

#[test]
fn session_memcap_refuses_new_sessions_and_counts_them() {
    let mut mem = ReassemblyMemory::with_session_memcap(1 << 20, 2 * SESSION_COST);
    let mut flows: Vec<Flow> = (0..3).map(|_| Flow::new(StreamConfig::default(), &mut mem)).collect();
    assert_eq!(mem.stats().ssn_memcap_drop, 1, "the third session is refused, once");
    assert_eq!(mem.session_used(), 2 * SESSION_COST);
    let stored: Vec<_> = flows.iter_mut().map(|f| f.data(0, b"abc", &mut mem).data).collect();
    assert_eq!(stored, [Some(InsertResult::Inserted), Some(InsertResult::Inserted), None]);
    let named: std::collections::HashMap<_, _> = mem.counters().collect();
    assert_eq!((named["tcp.memuse"], named["tcp.ssn_memcap_drop"]), (2 * SESSION_COST, 1));
    let seen: Vec<_> = flows.into_iter().map(|f| f.finish(&mut mem)).collect();
    assert_eq!(seen, [b"abc".to_vec(), b"abc".to_vec(), Vec::new()]);
    assert_eq!((mem.session_used(), mem.used()), (0, 0), "released sessions give their budget back");
}

/// Prints one worst case's per-segment cost next to the benign one it is compared with.
fn report(case: &str, worst: Duration, benign: Duration, segments: u64) {
    let per = |t: Duration| t.as_nanos() as f64 / segments as f64;
    let ratio = worst.as_secs_f64() / benign.as_secs_f64();
    println!("{case}: {:.0} ns/seg vs in order {:.0} ns/seg ({ratio:.2}x)", per(worst), per(benign));
}

#[test]
#[ignore = "benchmark: run by hand with --ignored --nocapture"]
fn worst_case_bench() {
    let n = 1_000_000;
    let (fwd, _) = one_byte_segments(n, false);
    let (rev, _) = one_byte_segments(n, true);
    report("1M one-byte segments in reverse order", rev, fwd, n);
    let n = 200_000;
    let (ovl, _) = tiny_inside_large(n, 65_000);
    let (fwd, _) = one_byte_segments(n, false);
    report("200k tiny segments inside a 65000-byte one", ovl, fwd, n);
    // `many_flows` returns the time per segment already.
    let ooo = many_flows(1000, 500, true);
    let ino = many_flows(1000, 500, false);
    report("1000 flows x 500 segments out of order", ooo, ino, 1);
}
