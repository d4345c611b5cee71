use super::*;
use crate::flow::tcp::{TcpConfig, TcpSession, TcpState};
use crate::flow::TcpSegment;
use proptest::prelude::*;

const SYN: u8 = TcpFlags::SYN;
const ACK: u8 = TcpFlags::ACK;
const FIN: u8 = TcpFlags::FIN;
const RST: u8 = TcpFlags::RST;
const TS: Direction = Direction::ToServer;
const TC: Direction = Direction::ToClient;

/// Feeds one segment to the flow's TCP session and then to reassembly, as the inspector
/// does (`dir` is the session's role; these tests never make the session swap roles).
fn feed(
    r: &mut TcpReassembly,
    session: &mut TcpSession,
    tcp: TcpConfig,
    dir: Direction,
    seg: &Segment<'_>,
    mem: &mut ReassemblyMemory,
) -> SegmentOutcome {
    let flow_seg = TcpSegment { flags: seg.flags.0, seq: seg.seq, ack: seg.ack, window: seg.window };
    session.on_segment(&flow_seg, seg.payload.len() as u32, dir == TS, tcp);
    r.on_segment(dir, seg, session.stream(), mem)
}

/// The session settings matching `cfg` (no midstream pickup unless asked).
fn tcp_config(cfg: &StreamConfig, midstream: bool) -> TcpConfig {
    TcpConfig { midstream, async_oneside: cfg.async_oneside, reassembly_depth: cfg.depth }
}

/// A test connection: sequence numbers are given as stream offsets from each side's ISN.
struct Conn {
    r: TcpReassembly,
    s: TcpSession,
    tcp: TcpConfig,
    mem: ReassemblyMemory,
    client_isn: u32,
    server_isn: u32,
}

#[derive(Debug, PartialEq, Eq)]
struct Seen {
    offset: u64,
    data: Vec<u8>,
    new_start: u64,
    new_end: u64,
    gap_before: u64,
}

impl Conn {
    fn new(cfg: StreamConfig, client_isn: u32, server_isn: u32) -> Self {
        Conn {
            r: TcpReassembly::new(cfg),
            s: TcpSession::default(),
            tcp: tcp_config(&cfg, false),
            mem: ReassemblyMemory::default(),
            client_isn,
            server_isn,
        }
    }
    /// SYN, SYN/ACK, ACK.
    fn handshake(cfg: StreamConfig, client_isn: u32, server_isn: u32) -> Self {
        let mut c = Conn::new(cfg, client_isn, server_isn);
        c.raw_pkt(TS, client_isn, 0, SYN, b"");
        c.raw_pkt(TC, server_isn, client_isn.wrapping_add(1), SYN | ACK, b"");
        c.raw_pkt(TS, client_isn.wrapping_add(1), server_isn.wrapping_add(1), ACK, b"");
        assert_eq!(c.s.stream().state(), TcpState::Established);
        c
    }
    fn raw_pkt(&mut self, dir: Direction, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> SegmentOutcome {
        let seg = Segment { seq, ack, flags: TcpFlags(flags), window: 65535, payload };
        feed(&mut self.r, &mut self.s, self.tcp, dir, &seg, &mut self.mem)
    }
    /// Sends `payload` at stream offset `off` of `dir`, acking `peer_ack` of the other side.
    fn send(&mut self, dir: Direction, off: u32, peer_ack: u32, flags: u8, payload: &[u8]) -> SegmentOutcome {
        let (isn, peer_isn) = match dir {
            TS => (self.client_isn, self.server_isn),
            TC => (self.server_isn, self.client_isn),
        };
        self.raw_pkt(
            dir,
            isn.wrapping_add(1).wrapping_add(off),
            peer_isn.wrapping_add(1).wrapping_add(peer_ack),
            flags,
            payload,
        )
    }
    fn inspect(&mut self, dir: Direction) -> Vec<Seen> {
        let mut seen = Vec::new();
        self.r.inspect_raw(dir, &mut self.mem, |c| {
            assert!(c.offset <= c.new_start && c.new_start <= c.new_end);
            assert_eq!(c.offset + c.data.len() as u64, c.new_end.max(c.offset + c.data.len() as u64));
            seen.push(Seen {
                offset: c.offset,
                data: c.data.to_vec(),
                new_start: c.new_start,
                new_end: c.new_end,
                gap_before: c.gap_before,
            })
        });
        seen
    }
    fn inspected_bytes(&mut self, dir: Direction) -> Vec<Vec<u8>> {
        self.inspect(dir).into_iter().map(|s| s.data).collect()
    }
    /// The retained stream of `dir`, which must be one contiguous run.
    fn stream(&self, dir: Direction) -> Vec<u8> {
        let runs: Vec<_> = self.r.retained(dir).collect();
        assert!(runs.len() <= 1, "expected one run, got {}", runs.len());
        runs.first().map(|r| r.1.to_vec()).unwrap_or_default()
    }
}

fn cfg() -> StreamConfig {
    StreamConfig::default()
}

#[test]
fn in_order_segments_reassemble_and_flush_at_flow_end() {
    let mut c = Conn::handshake(cfg(), 1000, 5000);
    c.send(TS, 0, 0, ACK, b"GET /ind");
    c.send(TS, 8, 0, ACK, b"ex.html HT");
    c.send(TS, 18, 0, ACK, b"TP/1.0\r\n\r\n");
    assert_eq!(c.stream(TS), b"GET /index.html HTTP/1.0\r\n\r\n");
    // 28 bytes < chunk size: nothing inspected before the flow ends.
    c.send(TC, 0, 28, ACK, b"");
    assert!(c.inspect(TC).is_empty());
    c.send(TS, 28, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty());
    c.r.close();
    let seen = c.inspect(TS);
    assert_eq!(
        seen,
        vec![Seen {
            offset: 0,
            data: b"GET /index.html HTTP/1.0\r\n\r\n".to_vec(),
            new_start: 0,
            new_end: 28,
            gap_before: 0
        }]
    );
    assert!(c.inspect(TS).is_empty(), "inspected data is not handed out twice");
    assert_eq!(c.mem.stats().overlap, 0);
    c.r.release(&mut c.mem);
    assert_eq!(c.mem.used(), 0);
}

#[test]
fn every_order_of_four_segments_yields_the_same_stream() {
    let parts: [(u32, &[u8]); 4] = [(0, b"abcd"), (4, b"efghij"), (10, b"k"), (11, b"lmnopq")];
    let mut order = [0usize, 1, 2, 3];
    let mut permutations = 0;
    // Heap's algorithm, iterative.
    let mut counters = [0usize; 4];
    let mut check = |order: &[usize; 4]| {
        let mut c = Conn::handshake(cfg(), 77, 99);
        for &i in order {
            let (off, data) = parts[i];
            c.send(TS, off, 0, ACK, data);
        }
        assert_eq!(c.stream(TS), b"abcdefghijklmnopq", "order {order:?}");
        c.send(TC, 0, 17, ACK, b"");
        assert_eq!(c.mem.stats().reassembly_gap, 0);
        c.r.close();
        assert_eq!(c.inspected_bytes(TS), vec![b"abcdefghijklmnopq".to_vec()]);
        permutations += 1;
    };
    check(&order);
    let mut i = 1;
    while i < 4 {
        if counters[i] < i {
            if i % 2 == 0 {
                order.swap(0, i);
            } else {
                order.swap(counters[i], i);
            }
            check(&order);
            counters[i] += 1;
            i = 1;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
    assert_eq!(permutations, 24);
}

#[test]
fn identical_retransmission_is_ignored_but_counted_as_overlap() {
    let mut c = Conn::handshake(cfg(), 1, 1000);
    c.send(TS, 0, 0, ACK, b"GOOD");
    let used = c.mem.used();
    let out = c.send(TS, 0, 0, ACK, b"GOOD");
    assert_eq!(out.data, Some(InsertResult::NothingNew));
    assert!(out.overlap && !out.overlap_different_data);
    assert_eq!(c.stream(TS), b"GOOD");
    assert_eq!(c.mem.used(), used, "a duplicate adds no memory");
    assert_eq!((c.mem.stats().overlap, c.mem.stats().overlap_diff_data), (1, 0));
}

/// Segments appended in order take a shortcut past the overlap checks; what they leave
/// behind must still be found by later retransmissions: an identical copy of the second
/// segment adds nothing (no memory, no new record), and a changed copy spanning both
/// segments counts as an overlap with different data.
#[test]
fn in_order_segments_are_still_seen_by_later_retransmissions() {
    let mut c = Conn::handshake(cfg(), 1, 1000);
    assert_eq!(c.send(TS, 0, 0, ACK, b"GOOD").data, Some(InsertResult::Inserted));
    assert_eq!(c.send(TS, 4, 0, ACK, b"MORE").data, Some(InsertResult::Inserted));
    assert_eq!(c.mem.stats().overlap, 0, "in-order data overlaps nothing");
    let used = c.mem.used();
    let out = c.send(TS, 4, 0, ACK, b"MORE");
    assert_eq!(out.data, Some(InsertResult::NothingNew));
    assert!(out.overlap && !out.overlap_different_data);
    assert_eq!(c.mem.used(), used, "the duplicate record is not charged twice");
    let out = c.send(TS, 2, 0, ACK, b"XXXX");
    assert_eq!(out.data, Some(InsertResult::NothingNew));
    assert!(out.overlap && out.overlap_different_data);
    assert_eq!(c.stream(TS).len(), 8);
    assert_eq!((c.mem.stats().overlap, c.mem.stats().overlap_diff_data), (2, 1));
}

/// Replays the segments of a scenario under `policy` and returns the stream bytes.
fn overlap_result(policy: OverlapPolicy, held: &[(u32, &[u8])], new: (u32, &[u8])) -> Vec<u8> {
    let mut c = Conn::handshake(StreamConfig { policy, ..cfg() }, 100, 200);
    for &(off, data) in held {
        c.send(TS, off, 0, ACK, data);
    }
    let out = c.send(TS, new.0, 0, ACK, new.1);
    assert!(out.overlap_different_data, "{policy:?}: scenario must conflict");
    assert_eq!(c.mem.stats().ev_overlap_different_data, 1);
    c.stream(TS)
}

const ALL_POLICIES: [OverlapPolicy; 13] = [
    OverlapPolicy::First,
    OverlapPolicy::Last,
    OverlapPolicy::Bsd,
    OverlapPolicy::Linux,
    OverlapPolicy::OldLinux,
    OverlapPolicy::Windows,
    OverlapPolicy::Windows2k3,
    OverlapPolicy::Vista,
    OverlapPolicy::Solaris,
    OverlapPolicy::Hpux10,
    OverlapPolicy::Hpux11,
    OverlapPolicy::Irix,
    OverlapPolicy::Macos,
];

/// For each scenario: the policies whose result is the "new data wins" string.
fn assert_scenario(held: &[(u32, &[u8])], new: (u32, &[u8]), new_wins: &[&str], if_new: &[u8], if_old: &[u8]) {
    for p in ALL_POLICIES {
        let want = if new_wins.contains(&p.name()) { if_new } else { if_old };
        let got = overlap_result(p, held, new);
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want), "policy {}", p.name());
    }
}

#[test]
fn overlap_same_start_new_segment_longer() {
    assert_scenario(
        &[(0, b"AAAA")],
        (0, b"BBBBBB"),
        &["last", "linux", "old-linux", "solaris", "hpux11"],
        b"BBBBBB",
        b"AAAABB",
    );
}

#[test]
fn overlap_same_start_same_end() {
    // Linux differs from old-linux here: it keeps the first copy of an exact overlap.
    assert_scenario(&[(0, b"AAAA")], (0, b"BBBB"), &["last", "old-linux", "solaris", "hpux11"], b"BBBB", b"AAAA");
}

#[test]
fn overlap_same_start_new_segment_shorter() {
    assert_scenario(&[(0, b"AAAA")], (0, b"BB"), &["last"], b"BBAA", b"AAAA");
}

#[test]
fn overlap_new_starts_before_and_ends_inside() {
    assert_scenario(
        &[(2, b"AAAA")],
        (0, b"BBBB"),
        &["last", "bsd", "linux", "old-linux", "windows", "windows2k3", "hpux10", "irix", "macos"],
        b"BBBBAA",
        b"BBAAAA",
    );
}

#[test]
fn overlap_new_starts_before_and_covers() {
    assert_scenario(
        &[(2, b"AA")],
        (0, b"BBBBBB"),
        &["last", "bsd", "linux", "old-linux", "windows", "windows2k3", "hpux10", "irix", "macos", "solaris", "hpux11"],
        b"BBBBBB",
        b"BBAABB",
    );
}

#[test]
fn overlap_new_starts_inside_and_runs_past() {
    assert_scenario(&[(0, b"AAAA")], (2, b"BBBB"), &["last", "solaris", "hpux11"], b"AABBBB", b"AAAABB");
}

#[test]
fn overlap_new_segment_inside_held_one() {
    assert_scenario(&[(0, b"AAAAAA")], (2, b"BB"), &["last"], b"AABBAA", b"AAAAAA");
}

#[test]
fn overlap_spanning_two_held_segments_applies_policy_per_segment() {
    // bsd: the new segment starts after the first held one (held wins there) and before
    // the second (new wins there).
    let got = overlap_result(OverlapPolicy::Bsd, &[(0, b"AAAA"), (4, b"CCCC")], (2, b"BBBB"));
    assert_eq!(got, b"AAAABBCC");
    let got = overlap_result(OverlapPolicy::Solaris, &[(0, b"AAAA"), (4, b"CCCC")], (2, b"BBBB"));
    assert_eq!(got, b"AABBCCCC", "solaris: runs past the first (new wins), ends inside the second (held wins)");
}

#[test]
fn policy_names_round_trip_and_aliases_fold() {
    for p in ALL_POLICIES {
        assert_eq!(OverlapPolicy::from_name(p.name()), Some(p));
    }
    assert_eq!(OverlapPolicy::from_name("bsd-right"), Some(OverlapPolicy::Bsd));
    assert_eq!(OverlapPolicy::from_name("old-solaris"), Some(OverlapPolicy::Solaris));
    assert_eq!(OverlapPolicy::from_name("plan9"), None);
}

/// The conformance pcap behind eve-overlap-payload-01/02: GOOD then EVIL at the same
/// sequence number, acked by the server, flow ends. Stream alerts come from the flow-end
/// flush; bsd (default) keeps GOOD, old-linux (host-os-policy for 2.2.2.2) takes EVIL.
#[test]
fn conformance_exact_overlap_resolves_per_receiver_policy() {
    for (policy, want) in [(OverlapPolicy::Bsd, b"GOOD"), (OverlapPolicy::OldLinux, b"EVIL")] {
        let mut c = Conn::new(cfg(), 1, 1000);
        c.r.set_policy(TS, policy);
        c.raw_pkt(TS, 1, 0, SYN, b"");
        c.raw_pkt(TC, 1000, 2, SYN | ACK, b"");
        c.raw_pkt(TS, 2, 1001, ACK, b"");
        c.raw_pkt(TC, 1001, 2, ACK, b"");
        c.raw_pkt(TS, 2, 1001, ACK, b"GOOD");
        assert!(c.inspect(TS).is_empty());
        c.raw_pkt(TS, 2, 1001, ACK, b"EVIL");
        assert!(c.inspect(TS).is_empty());
        c.raw_pkt(TC, 1001, 6, ACK, b"");
        assert!(c.inspect(TC).is_empty());
        c.r.close();
        assert_eq!(c.inspected_bytes(TS), vec![want.to_vec()], "{policy:?}");
        assert_eq!(c.mem.stats().overlap_diff_data, 1);
    }
}

/// eve-overlap-payload-04: GOOD at seq 2, XXX at seq 3 (starts after, same end): held wins.
#[test]
fn conformance_partial_overlap_keeps_first_under_bsd() {
    let mut c = Conn::handshake(cfg(), 1, 1000);
    c.send(TS, 0, 0, ACK, b"GOOD");
    c.send(TS, 1, 0, ACK, b"XXX");
    c.send(TC, 0, 4, ACK, b"");
    c.r.close();
    assert_eq!(c.inspected_bytes(TS), vec![b"GOOD".to_vec()]);
}

/// eve-payload-05: VERY, (4 bytes never seen), DATA, then the server acks all 12 bytes.
/// The hole is a gap; the flow-end flush inspects the two runs separately, so
/// "VERYGOODDATA" can never match while "VERY" and "DATA" do.
#[test]
fn acked_hole_is_a_gap_and_inspection_skips_it() {
    let mut c = Conn::handshake(cfg(), 1, 1000);
    c.send(TS, 0, 0, ACK, b"VERY");
    c.send(TS, 8, 0, ACK, b"DATA");
    assert_eq!(c.mem.stats().reassembly_gap, 0, "not a gap until acknowledged");
    let out = c.send(TC, 0, 12, ACK, b"");
    assert!(out.gap);
    assert_eq!(c.mem.stats().reassembly_gap, 1);
    c.send(TC, 0, 12, ACK, b"");
    assert_eq!(c.mem.stats().reassembly_gap, 1, "each hole is counted once");
    c.r.close();
    let seen = c.inspect(TS);
    assert_eq!(seen.len(), 2);
    assert_eq!((seen[0].offset, &seen[0].data[..], seen[0].gap_before), (0, &b"VERY"[..], 0));
    assert_eq!((seen[1].offset, &seen[1].data[..], seen[1].gap_before), (8, &b"DATA"[..], 4));
}

/// Gap accounting skips the block walk when nothing new is acknowledged or one block
/// starts at the examined edge: piecewise acknowledgements of in-order data count no gap,
/// a lone block after a leading hole still does once acknowledged past, and so does a
/// hole behind the in-order run.
#[test]
fn gap_shortcuts_count_each_hole_once() {
    let mut c = Conn::handshake(cfg(), 7, 70);
    c.send(TS, 4, 0, ACK, b"AAAA");
    assert!(!c.send(TC, 0, 2, ACK, b"").gap, "acknowledged into the hole only");
    assert!(c.send(TC, 0, 6, ACK, b"").gap, "the lone block starts past the examined edge");
    assert!(!c.send(TC, 0, 8, ACK, b"").gap);
    c.send(TS, 8, 0, ACK, b"BBBB");
    for ack in [9, 12, 12] {
        assert!(!c.send(TC, 0, ack, ACK, b"").gap, "in-order data acknowledged up to {ack}");
    }
    c.send(TS, 16, 0, ACK, b"CCCC");
    assert!(!c.send(TC, 0, 14, ACK, b"").gap);
    assert!(c.send(TC, 0, 20, ACK, b"").gap, "the hole 12..16 is acknowledged past");
    assert!(!c.send(TC, 0, 20, ACK, b"").gap);
    assert_eq!(c.mem.stats().reassembly_gap, 2);
}

/// eve-payload-06: the first 4 bytes are never seen (leading gap).
#[test]
fn leading_gap_is_skipped() {
    let mut c = Conn::handshake(cfg(), 1, 1000);
    c.send(TS, 4, 0, ACK, b"GOOD");
    c.send(TS, 8, 0, ACK, b"DATA");
    c.send(TC, 0, 12, ACK, b"");
    assert_eq!(c.mem.stats().reassembly_gap, 1);
    c.r.close();
    let seen = c.inspect(TS);
    assert_eq!(seen, vec![Seen { offset: 4, data: b"GOODDATA".to_vec(), new_start: 4, new_end: 12, gap_before: 4 }]);
}

#[test]
fn gap_inspection_before_flow_end_continues_after_the_hole() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 4, ..cfg() }, 9, 9);
    c.send(TS, 0, 0, ACK, b"VERY");
    c.send(TS, 8, 0, ACK, b"DATA");
    c.send(TC, 0, 12, ACK, b"");
    c.send(TS, 12, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"VERY".to_vec(), b"DATA".to_vec()]);
    assert_eq!(c.r.inspected(TS), 12);
    c.send(TS, 12, 0, ACK, b"MORE");
    c.send(TC, 0, 16, ACK, b"");
    let seen = c.inspect(TS);
    assert_eq!(seen, vec![Seen { offset: 12, data: b"MORE".to_vec(), new_start: 12, new_end: 16, gap_before: 0 }]);
}

#[test]
fn ids_inspects_acked_data_on_the_next_packet_of_the_same_direction() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 10, ..cfg() }, 4_000, 8_000);
    c.send(TS, 0, 0, ACK, b"hello ");
    assert!(c.inspect(TS).is_empty(), "not acknowledged yet");
    c.send(TS, 6, 0, ACK, b"world!");
    assert!(c.inspect(TS).is_empty(), "12 bytes buffered but none acknowledged");
    // The server acknowledges 8 bytes: below the chunk size, nothing yet.
    c.send(TC, 0, 8, ACK, b"");
    assert!(c.inspect(TC).is_empty(), "the ACK packet inspects the server's stream only");
    c.send(TS, 12, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty(), "8 acked < chunk size 10");
    // Now all 12 are acknowledged; the trigger is the client's next packet.
    c.send(TC, 0, 12, ACK, b"");
    assert!(c.inspect(TC).is_empty());
    c.send(TS, 12, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"hello world!".to_vec()]);
    assert_eq!(c.r.retained(TS).count(), 0, "inspected bytes are freed without lookback");
}

#[test]
fn inspection_never_passes_the_acknowledged_edge() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 4, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"0123456789");
    c.send(TC, 0, 6, ACK, b"");
    c.send(TS, 10, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"012345".to_vec()]);
    c.send(TC, 0, 8, ACK, b"");
    c.send(TS, 10, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty(), "2 newly acked bytes < chunk size 4");
    c.send(TC, 0, 10, ACK, b"");
    c.send(TS, 10, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"6789".to_vec()]);
}

#[test]
fn app_layer_trigger_flushes_below_chunk_size() {
    let mut c = Conn::handshake(cfg(), 1, 1);
    c.send(TS, 0, 0, ACK, b"GET / HTTP/1.0\r\n\r\n");
    c.send(TC, 0, 18, ACK, b"");
    c.send(TS, 18, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty());
    c.r.trigger_raw(TS);
    assert_eq!(c.inspected_bytes(TS), vec![b"GET / HTTP/1.0\r\n\r\n".to_vec()]);
}

#[test]
fn client_fin_moves_to_close_wait_which_flushes_acked_data() {
    // Suricata names a session whose client closed first CLOSE_WAIT, a state past
    // TIME_WAIT: acknowledged data is inspected without waiting for a full chunk.
    let mut c = Conn::handshake(cfg(), 1, 1);
    c.send(TC, 0, 0, ACK, b"response");
    c.send(TS, 0, 8, ACK | FIN, b"");
    assert_eq!(c.s.stream().state(), TcpState::CloseWait);
    c.send(TC, 8, 1, ACK, b"");
    assert_eq!(c.inspected_bytes(TC), vec![b"response".to_vec()]);
}

#[test]
fn server_close_flushes_only_when_closed() {
    let mut c = Conn::handshake(cfg(), 1, 1);
    c.send(TC, 0, 0, ACK, b"abc");
    c.send(TC, 3, 0, ACK | FIN, b"");
    assert_eq!(c.s.stream().state(), TcpState::FinWait1);
    c.send(TS, 0, 4, ACK, b"");
    assert_eq!(c.s.stream().state(), TcpState::FinWait2);
    c.send(TS, 0, 4, ACK | FIN, b"");
    assert_eq!(c.s.stream().state(), TcpState::TimeWait);
    assert!(c.inspect(TS).is_empty());
    c.send(TC, 4, 1, ACK, b"");
    assert_eq!(c.s.stream().state(), TcpState::Closed);
    assert_eq!(c.inspected_bytes(TC), vec![b"abc".to_vec()]);
}

#[test]
fn rst_closes_and_flushes() {
    let mut c = Conn::handshake(cfg(), 1, 1);
    c.send(TS, 0, 0, ACK, b"abc");
    c.send(TC, 0, 3, ACK | RST, b"");
    assert_eq!(c.s.stream().state(), TcpState::Closed);
    c.send(TS, 3, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"abc".to_vec()]);
}

#[test]
fn flow_end_flushes_unacknowledged_data() {
    let mut c = Conn::handshake(cfg(), 1, 1);
    c.send(TC, 0, 0, ACK, b"never acked");
    assert!(c.inspect(TC).is_empty());
    c.r.close();
    assert_eq!(c.inspected_bytes(TC), vec![b"never acked".to_vec()]);
    let out = c.send(TC, 11, 0, ACK, b"late");
    assert_eq!(out.data, None, "no data accepted after flow end");
}

#[test]
fn inline_mode_inspects_each_packet_with_preceding_context() {
    let mut c = Conn::handshake(StreamConfig { inline: true, toserver_chunk_size: 12, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"GET /ev");
    let seen = c.inspect(TS);
    assert_eq!(seen, vec![Seen { offset: 0, data: b"GET /ev".to_vec(), new_start: 0, new_end: 7, gap_before: 0 }]);
    c.send(TS, 7, 0, ACK, b"il.exe");
    let seen = c.inspect(TS);
    assert_eq!(
        seen,
        vec![Seen { offset: 1, data: b"ET /evil.exe".to_vec(), new_start: 7, new_end: 13, gap_before: 0 }]
    );
    assert!(c.inspect(TS).is_empty(), "one inspection per packet");
    c.send(TS, 13, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty(), "a packet without data inspects nothing");
}

#[test]
fn inline_mode_keeps_accepted_bytes_and_reports_rewrite() {
    let mut c = Conn::handshake(StreamConfig { inline: true, policy: OverlapPolicy::Last, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"GOOD");
    let out = c.send(TS, 0, 0, ACK, b"EVIL");
    assert!(out.payload_differs_from_stream);
    assert_eq!(c.stream(TS), b"GOOD");
    assert_eq!(c.inspected_bytes(TS), vec![b"GOOD".to_vec()]);
}

#[test]
fn inline_large_packet_gets_window_around_it() {
    let mut c = Conn::handshake(StreamConfig { inline: true, toserver_chunk_size: 30, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, &[b'a'; 40]);
    c.inspect(TS);
    c.send(TS, 40, 0, ACK, &[b'b'; 25]);
    let seen = c.inspect(TS);
    // 25 > 2/3 of 30: window = 25 + 10, i.e. 10 bytes of context before the packet.
    assert_eq!(seen[0].offset, 30);
    assert_eq!(seen[0].data.len(), 35);
    assert_eq!((seen[0].new_start, seen[0].new_end), (40, 65));
}

#[test]
fn lookback_repeats_inspected_bytes_before_new_ones() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 1, lookback: 3, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"abcdef");
    c.send(TC, 0, 6, ACK, b"");
    c.send(TS, 6, 0, ACK, b"ghi");
    assert_eq!(c.inspected_bytes(TS), vec![b"abcdef".to_vec()]);
    c.send(TC, 0, 9, ACK, b"");
    c.send(TS, 9, 0, ACK, b"");
    let seen = c.inspect(TS);
    assert_eq!(seen, vec![Seen { offset: 3, data: b"defghi".to_vec(), new_start: 6, new_end: 9, gap_before: 0 }]);
    assert_eq!(c.r.retained_from(TS), 6, "only the lookback is kept");
}

#[test]
fn sequence_wraparound_across_2_pow_32() {
    let isn = u32::MAX - 5;
    let mut c = Conn::handshake(cfg(), isn, 10);
    // Offsets 0..24 cover sequence numbers 0xFFFF_FFFB ..= 0x0000_0012, crossing zero.
    c.send(TS, 8, 0, ACK, b"89abcdef");
    c.send(TS, 0, 0, ACK, b"01234567");
    c.send(TS, 16, 0, ACK, b"ghijklmn");
    assert_eq!(c.stream(TS), b"0123456789abcdefghijklmn");
    c.send(TC, 0, 24, ACK, b"");
    assert_eq!(c.r.acked(TS), Some(24));
    c.r.close();
    assert_eq!(c.inspected_bytes(TS), vec![b"0123456789abcdefghijklmn".to_vec()]);
}

#[test]
fn long_stream_passes_4_gib_of_sequence_space() {
    // Offsets keep growing past 2^32 while sequence numbers wrap.
    let mut c = Conn::handshake(StreamConfig { depth: 0, toserver_chunk_size: 1, ..cfg() }, 123, 1);
    let chunk = vec![7u8; 60_000];
    let mut off: u64 = 0;
    while off < (1u64 << 32) + 200_000 {
        c.send(TS, off as u32, 0, ACK, &chunk);
        off += chunk.len() as u64;
        c.send(TC, 0, off as u32, ACK, b"");
        c.send(TS, off as u32, 0, ACK, b"");
        c.inspect(TS);
    }
    assert_eq!(c.r.inspected(TS), off);
    assert!(c.mem.used() < 200_000, "inspected data is freed as it goes");
}

#[test]
fn depth_limits_reassembly_and_counts() {
    let mut c = Conn::handshake(StreamConfig { depth: 10, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"0123456");
    let out = c.send(TS, 7, 0, ACK, b"789abcdef");
    assert_eq!(out.data, Some(InsertResult::Inserted));
    let out = c.send(TS, 16, 0, ACK, b"ghij");
    assert_eq!(out.data, Some(InsertResult::BeyondDepth));
    assert_eq!(c.stream(TS), b"0123456789");
    assert_eq!(c.mem.stats().stream_depth_reached, 1);
    assert_eq!(c.mem.stats().depth_bytes_dropped, 6 + 4);
    // Depth reached flushes without waiting for a full chunk, but still only acked data.
    c.send(TS, 20, 0, ACK, b"");
    assert!(c.inspect(TS).is_empty());
    c.send(TC, 0, 20, ACK, b"");
    c.send(TS, 20, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"0123456789".to_vec()]);
}

#[test]
fn memcap_bounds_memory_across_flows_and_counts_drops() {
    let mut mem = ReassemblyMemory::new(4096);
    let mut flows: Vec<(TcpReassembly, TcpSession)> =
        (0..4).map(|_| (TcpReassembly::new(cfg()), TcpSession::default())).collect();
    for (i, (r, s)) in flows.iter_mut().enumerate() {
        let isn = 1000 * i as u32;
        feed(
            r,
            s,
            tcp_config(&cfg(), false),
            TS,
            &Segment { seq: isn, ack: 0, flags: TcpFlags(SYN), window: 0, payload: b"" },
            &mut mem,
        );
        feed(
            r,
            s,
            tcp_config(&cfg(), false),
            TC,
            &Segment { seq: 9, ack: isn + 1, flags: TcpFlags(SYN | ACK), window: 0, payload: b"" },
            &mut mem,
        );
        // Unacknowledged, never inspected: all of it stays buffered.
        for k in 0..20u32 {
            let payload = [k as u8; 100];
            feed(
                r,
                s,
                tcp_config(&cfg(), false),
                TS,
                &Segment { seq: isn + 1 + k * 100, ack: 10, flags: TcpFlags(ACK), window: 0, payload: &payload },
                &mut mem,
            );
            assert!(mem.used() <= mem.memcap());
        }
    }
    assert!(mem.stats().segment_memcap_drop > 0);
    // A 100-byte segment opening a region really costs 272 bytes (buffer, block, record).
    assert!(mem.used() > 4096 - 272, "budget is used up to the cap");
    let named: std::collections::HashMap<_, _> = mem.counters().collect();
    assert_eq!(named["tcp.segment_memcap_drop"], mem.stats().segment_memcap_drop);
    assert_eq!(named["tcp.reassembly_memuse"], mem.used());
    for (r, _) in &mut flows {
        r.release(&mut mem);
    }
    assert_eq!(mem.used(), 0);
}

#[test]
fn memcap_dropped_segment_becomes_a_gap_for_the_app_layer() {
    let mut c = Conn::handshake(StreamConfig { app_layer: true, ..cfg() }, 1, 1);
    // Room for the first segment (buffer, block and record) but not a second record.
    c.mem = ReassemblyMemory::new(32 + super::half::BLOCK_COST + super::half::SEGMENT_RECORD_COST + 10);
    c.send(TS, 0, 0, ACK, b"abcd");
    let out = c.send(TS, 4, 0, ACK, b"0123456789");
    assert_eq!(out.data, Some(InsertResult::MemcapDrop));
    c.send(TC, 0, 14, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 0, data: b"abcd" }));
    c.r.app_consume(TS, 4, &mut c.mem);
    assert_eq!(c.r.app_data(TS), Some(AppData::Gap { offset: 4, len: 10 }));
}

#[test]
fn app_data_is_acked_data_in_ids_mode() {
    let mut c = Conn::handshake(StreamConfig { app_layer: true, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"GET / HTTP/1.1\r\n");
    assert_eq!(c.r.app_data(TS), None);
    c.send(TC, 0, 4, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 0, data: b"GET " }));
    c.r.app_consume(TS, 4, &mut c.mem);
    c.send(TC, 0, 16, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 4, data: b"/ HTTP/1.1\r\n" }));
    // Raw inspection alone does not free data the parser has not read.
    c.r.close();
    c.inspect(TS);
    assert_eq!(c.r.retained_from(TS), 4);
}

/// tcp-rst-unacked-stream-09 (suricata-verify): at the flow's end, data beyond a hole the
/// receiver never acknowledged past is not handed to the parser (the hole is no gap:
/// nobody got what follows it).
#[test]
fn at_flow_end_data_past_an_unacknowledged_hole_is_not_handed_on() {
    let mut c = Conn::handshake(StreamConfig { app_layer: true, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"GET ");
    c.send(TS, 8, 0, ACK, b"late");
    c.send(TC, 0, 6, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 0, data: b"GET " }));
    c.r.app_consume(TS, 4, &mut c.mem);
    c.r.close();
    assert_eq!(c.r.app_data(TS), None, "acknowledged to 6 only: the hole 4..8 is not a gap");

    // Acknowledged past the hole: a gap, then the data.
    let mut c = Conn::handshake(StreamConfig { app_layer: true, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"GET ");
    c.send(TS, 8, 0, ACK, b"late");
    c.send(TC, 0, 12, ACK, b"");
    c.r.app_consume(TS, 4, &mut c.mem);
    c.r.close();
    assert_eq!(c.r.app_data(TS), Some(AppData::Gap { offset: 4, len: 4 }));
}

/// Found by the fuzz target `stream_reorder`: in inline mode an out-of-order segment made
/// `app_data` report the unfilled hole before it as a gap, so the parser skipped bytes that
/// arrived a moment later.
#[test]
fn inline_app_data_waits_for_an_unacknowledged_hole() {
    let mut c = Conn::handshake(StreamConfig { app_layer: true, inline: true, ..cfg() }, 1, 1);
    c.send(TS, 4, 0, ACK, b"/ HTTP/1.1\r\n");
    assert_eq!(c.r.app_data(TS), None);
    c.send(TS, 0, 0, ACK, b"GET ");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 0, data: b"GET / HTTP/1.1\r\n" }));
    // Once acknowledged (or at flow end) a hole is a gap to skip.
    let mut c = Conn::handshake(StreamConfig { app_layer: true, inline: true, ..cfg() }, 1, 1);
    c.send(TS, 4, 0, ACK, b"rest");
    c.send(TC, 0, 4, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Gap { offset: 0, len: 4 }));
}

#[test]
fn midstream_pickup_only_when_enabled() {
    let seg = Segment { seq: 5_000, ack: 9_000, flags: TcpFlags(ACK), window: 100, payload: b"uid=0(root)" };
    let mut mem = ReassemblyMemory::default();
    let mut off = TcpReassembly::new(cfg());
    let mut s = TcpSession::default();
    let no_pickup = tcp_config(&cfg(), false);
    assert!(!feed(&mut off, &mut s, no_pickup, TC, &seg, &mut mem).tracked);
    assert_eq!(off.retained(TC).count(), 0);

    // Pickup is the session's decision (the flow counts it as `tcp.midstream_pickups`).
    let midstream = tcp_config(&cfg(), true);
    let mut on = TcpReassembly::new(cfg());
    let mut s = TcpSession::default();
    assert!(feed(&mut on, &mut s, midstream, TC, &seg, &mut mem).tracked);
    assert!(s.midstream);
    assert_eq!(on.retained(TC).next(), Some((0, &b"uid=0(root)"[..])));
    // The peer's ISN came from the ACK field: its first byte is offset 0.
    feed(
        &mut on,
        &mut s,
        midstream,
        TS,
        &Segment { seq: 9_000, ack: 5_011, flags: TcpFlags(ACK), window: 100, payload: b"id\n" },
        &mut mem,
    );
    assert_eq!(on.retained(TS).next(), Some((0, &b"id\n"[..])));
    assert_eq!(on.acked(TC), Some(11));
    on.release(&mut mem);
}

#[test]
fn async_oneside_treats_contiguous_data_as_acked() {
    let cfg = StreamConfig { async_oneside: true, toclient_chunk_size: 5, ..cfg() };
    let tcp = tcp_config(&cfg, true);
    let mut mem = ReassemblyMemory::default();
    let mut r = TcpReassembly::new(cfg);
    let mut s = TcpSession::default();
    feed(
        &mut r,
        &mut s,
        tcp,
        TC,
        &Segment { seq: 10, ack: 99, flags: TcpFlags(ACK), window: 100, payload: b"uid=0(root)" },
        &mut mem,
    );
    let mut got = Vec::new();
    r.inspect_raw(TC, &mut mem, |c| got.push(c.data.to_vec()));
    assert_eq!(got, vec![b"uid=0(root)".to_vec()]);
    r.release(&mut mem);
}

#[test]
fn data_on_syn_starts_at_offset_zero() {
    let mut c = Conn::new(cfg(), 50, 60);
    c.raw_pkt(TS, 50, 0, SYN, b"fastopen");
    c.raw_pkt(TC, 60, 59, SYN | ACK, b"");
    c.raw_pkt(TS, 59, 61, ACK, b"+more");
    assert_eq!(c.stream(TS), b"fastopen+more");
}

#[test]
fn old_retransmission_before_the_window_is_ignored() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 1, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"abcdef");
    c.send(TC, 0, 6, ACK, b"");
    c.send(TS, 6, 0, ACK, b"");
    c.inspect(TS);
    let out = c.send(TS, 0, 0, ACK, b"XXXXXX");
    assert_eq!(out.data, Some(InsertResult::Old));
    let out = c.send(TS, 4, 0, ACK, b"efgh");
    assert_eq!(out.data, Some(InsertResult::Inserted), "the part past the window is kept");
    assert_eq!(c.stream(TS), b"gh");
}

/// Writes around a lone block (planned without a map search): adjacent on either side
/// merge into it, a write past a hole opens a second block, and the charge stays exact.
#[test]
fn writes_around_a_lone_block_merge_or_open_a_region() {
    let mut c = Conn::handshake(cfg(), 3, 30);
    c.send(TS, 4, 0, ACK, b"efgh");
    c.send(TS, 0, 0, ACK, b"abcd");
    c.send(TS, 8, 0, ACK, b"ijkl");
    c.send(TS, 6, 0, ACK, b"ghij");
    assert_eq!(c.stream(TS), b"abcdefghijkl");
    c.send(TS, 14, 0, ACK, b"op");
    let runs: Vec<_> = c.r.retained(TS).map(|(o, b)| (o, b.to_vec())).collect();
    assert_eq!(runs, vec![(0, b"abcdefghijkl".to_vec()), (14, b"op".to_vec())]);
    assert_eq!(c.r.halves[0].recomputed_charge(), c.mem.used());
}

#[test]
fn memory_accounting_matches_what_is_held() {
    let mut c = Conn::handshake(StreamConfig { toserver_chunk_size: 1, ..cfg() }, 1, 1);
    c.send(TS, 10, 0, ACK, b"later");
    c.send(TS, 0, 0, ACK, b"first");
    let held: u64 = c.r.retained(TS).map(|(_, b)| b.len() as u64).sum();
    let overhead = 2 * (super::half::SEGMENT_RECORD_COST + super::half::BLOCK_COST);
    assert!(c.mem.used() >= held + overhead, "bytes, blocks and records are all charged");
    assert_eq!(c.r.halves[0].accounted(), c.mem.used());
    assert_eq!(c.r.halves[0].recomputed_charge(), c.mem.used());
    c.send(TS, 5, 0, ACK, b"12345");
    c.send(TC, 0, 15, ACK, b"");
    c.send(TS, 15, 0, ACK, b"");
    assert_eq!(c.inspected_bytes(TS), vec![b"first12345later".to_vec()]);
    assert_eq!(c.mem.used(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Any cut of a byte string into segments, delivered in any order with identical
    /// retransmissions and random acknowledgements, reassembles to the original.
    #[test]
    fn random_delivery_reassembles_original(
        data in proptest::collection::vec(any::<u8>(), 1..600),
        cuts in proptest::collection::vec(0usize..600, 0..12),
        order_seed in proptest::collection::vec(any::<u32>(), 40),
        isn in any::<u32>(),
        chunk in 1u32..400,
        inline in any::<bool>(),
    ) {
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c % data.len()).collect();
        bounds.push(0);
        bounds.push(data.len());
        bounds.sort_unstable();
        bounds.dedup();
        let mut segs: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        // Retransmit a few segments identically.
        let extra: Vec<_> = segs.iter().step_by(3).copied().collect();
        segs.extend(extra);
        let mut order: Vec<usize> = (0..segs.len()).collect();
        for (i, s) in order_seed.iter().enumerate().take(order.len()) {
            let j = *s as usize % order.len();
            order.swap(i, j);
        }
        let cfg = StreamConfig { toserver_chunk_size: chunk, depth: 0, inline, ..StreamConfig::default() };
        let mut c = Conn::handshake(cfg, isn, 7);
        let mut collected: Vec<(u64, Vec<u8>)> = Vec::new();
        for (n, &i) in order.iter().enumerate() {
            let (a, b) = segs[i];
            c.send(TS, a as u32, 0, ACK, &data[a..b]);
            c.r.inspect_raw(TS, &mut c.mem, |ch| collected.push((ch.new_start, ch.new_data().to_vec())));
            if order_seed[n % order_seed.len()] % 3 == 0 {
                let edge = c.r.halves[0].contiguous_end(c.r.retained_from(TS));
                c.send(TC, 0, edge as u32, ACK, b"");
            }
        }
        c.send(TC, 0, data.len() as u32, ACK, b"");
        c.r.close();
        c.r.inspect_raw(TS, &mut c.mem, |ch| collected.push((ch.new_start, ch.new_data().to_vec())));
        // Stitch the new bytes of every inspection together by offset.
        let mut stream = vec![None; data.len()];
        for (off, bytes) in collected {
            for (k, byte) in bytes.into_iter().enumerate() {
                let at = off as usize + k;
                prop_assert!(at < data.len());
                if let Some(prev) = stream[at] { prop_assert_eq!(prev, byte); }
                stream[at] = Some(byte);
            }
        }
        let stream: Vec<u8> = stream.into_iter().map(|b| b.expect("every byte inspected")).collect();
        prop_assert_eq!(stream, data);
        prop_assert_eq!(c.mem.stats().overlap_diff_data, 0);
        prop_assert_eq!(c.mem.stats().reassembly_gap, 0);
        c.r.release(&mut c.mem);
        prop_assert_eq!(c.mem.used(), 0);
    }

    /// Arbitrary segments (any sequence numbers, flags, payloads, both directions, any
    /// mode) never panic and never exceed the memcap.
    #[test]
    fn arbitrary_segments_never_panic(
        segs in proptest::collection::vec(
            (any::<bool>(), any::<u32>(), any::<u32>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..64), 0u8..4),
            1..60),
        near in any::<bool>(),
        inline in any::<bool>(),
        midstream in any::<bool>(),
        policy_idx in 0usize..13,
        lookback in 0u32..16,
    ) {
        let cfg = StreamConfig { inline, async_oneside: midstream, lookback, depth: 300,
            toserver_chunk_size: 16, toclient_chunk_size: 16, app_layer: true, policy: ALL_POLICIES[policy_idx],
            max_regions: if near { 3 } else { 0 } };
        let tcp = tcp_config(&cfg, midstream);
        let mut mem = ReassemblyMemory::new(2_000);
        let mut r = TcpReassembly::new(cfg);
        let mut s = TcpSession::default();
        for (to_server, seq, ack, flags, payload, action) in segs {
            let dir = if to_server { TS } else { TC };
            // Keep numbers near each other half of the time so overlaps actually happen.
            let (seq, ack) = if near { (seq % 200, ack % 200) } else { (seq, ack) };
            let out = feed(&mut r, &mut s, tcp, dir, &Segment { seq, ack, flags: TcpFlags(flags), window: 0, payload: &payload }, &mut mem);
            prop_assert!(mem.used() <= mem.memcap());
            let _ = out;
            match action {
                0 => { r.inspect_raw(dir, &mut mem, |c| { assert!(c.new_start <= c.new_end); let _ = c.new_data(); }); }
                1 => if let Some(d) = r.app_data(dir) {
                    let upto = match d { AppData::Data { offset, data } => offset + data.len() as u64, AppData::Gap { offset, len } => offset + len };
                    r.app_consume(dir, upto, &mut mem);
                },
                2 => r.trigger_raw(dir),
                _ => {}
            }
        }
        r.close();
        for dir in [TS, TC] {
            r.inspect_raw(dir, &mut mem, |_| {});
        }
        r.release(&mut mem);
        prop_assert_eq!(mem.used(), 0);
    }
}

/// eve flow's `ts_max_regions`: out-of-order data more than 256 KiB past the held bytes
/// opens another region of Suricata's streaming buffer; closer holes do not.
#[test]
fn max_regions_counts_far_out_of_order_runs() {
    let big = StreamConfig { depth: 0, ..cfg() };
    let mut c = Conn::handshake(big, 1, 1);
    assert_eq!((c.r.max_regions(TS), c.r.max_regions(TC)), (1, 1));
    c.send(TS, 0, 0, ACK, b"start");
    c.send(TS, 1000, 0, ACK, b"near hole");
    assert_eq!(c.r.max_regions(TS), 1, "a small hole stays in the region");
    c.send(TS, 1000 + 300 * 1024, 0, ACK, b"far ahead");
    assert_eq!(c.r.max_regions(TS), 2);
    assert_eq!(c.r.max_regions(TC), 1);
}

/// With raw inspection off, a range the app layer skips is consumed at once: what is held
/// of it is freed, segments inside it are accepted unstored (no gap once acknowledged),
/// and the app layer's data resumes right after it. With raw inspection on, nothing is
/// skipped.
#[test]
fn skipped_app_range_is_not_stored_and_is_no_gap() {
    let mut c = Conn::handshake(StreamConfig { app_layer: true, ..cfg() }, 1, 1);
    c.send(TS, 0, 0, ACK, b"head0123");
    c.send(TC, 0, 8, ACK, b"");
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 0, data: b"head0123" }));
    c.r.app_consume(TS, 4, &mut c.mem);
    assert!(!c.r.app_skip(TS, 100, &mut c.mem), "raw inspection still reads the stream");
    c.r.disable_raw();
    // The parser read "head" and passes over the next 100 bytes (offsets 4..104).
    assert!(c.r.app_skip(TS, 100, &mut c.mem));
    assert_eq!(c.r.retained(TS).count(), 0, "the held part of the range is freed");
    let out = c.send(TS, 8, 0, ACK, &[0xab; 96]);
    assert_eq!(out.data, Some(InsertResult::Skipped));
    assert_eq!(c.r.retained(TS).count(), 0);
    // The next record starts past the range: stored and handed on.
    assert_eq!(c.send(TS, 104, 0, ACK, b"next").data, Some(InsertResult::Inserted));
    let out = c.send(TC, 0, 108, ACK, b"");
    assert!(!out.gap);
    assert_eq!(c.r.app_data(TS), Some(AppData::Data { offset: 104, data: b"next" }));
    assert_eq!(c.mem.stats().reassembly_gap, 0);
    assert_eq!(c.mem.stats().skipped_segments, 1);
    assert_eq!(c.r.seq_space_seen(TS), 109, "the sequence space moved over the skipped bytes");
}
