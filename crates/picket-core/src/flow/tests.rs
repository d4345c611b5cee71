//! Flow table behaviour, driven through the public API with crafted packets.

use super::tcp_flags::{ACK, FIN, PSH, RST, SYN};
use super::*;
use crate::packet::Timestamp;
use proptest::prelude::*;

fn v4(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[10] = 0xff;
    a[11] = 0xff;
    a[12] = 10;
    a[15] = last;
    a
}

const CLIENT: u8 = 1;
const SERVER: u8 = 2;

fn at(secs: u64) -> Timestamp {
    Timestamp::from_parts(1_700_000_000 + secs, 0)
}

/// Builds packets with increasing pcap_cnt.
struct Gen {
    cnt: u64,
}

impl Gen {
    fn new() -> Self {
        Gen { cnt: 0 }
    }

    fn udp(&mut self, src: u8, sport: u16, dst: u8, dport: u16, secs: u64) -> FlowPacket {
        self.cnt += 1;
        FlowPacket {
            tuple: FiveTuple {
                src: v4(src),
                dst: v4(dst),
                src_port: sport,
                dst_port: dport,
                proto: PROTO_UDP,
                is_v4: true,
            },
            vlan: [0, 0, 0],
            ts: at(secs),
            pcap_cnt: self.cnt,
            wire_len: 100,
            payload_len: 58,
            tcp: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tcp(&mut self, from_client: bool, flags: u8, seq: u32, ack: u32, payload: u32, secs: u64) -> FlowPacket {
        let (src, sport, dst, dport) =
            if from_client { (CLIENT, 40000, SERVER, 80) } else { (SERVER, 80, CLIENT, 40000) };
        let mut p = self.udp(src, sport, dst, dport, secs);
        p.tuple.proto = PROTO_TCP;
        p.payload_len = payload;
        p.wire_len = 54 + payload;
        p.tcp = Some(TcpSegment { flags, seq, ack, window: 65535 });
        p
    }
}

type Records = Vec<FlowRecord<u32>>;

fn table(config: FlowConfig) -> FlowTable<u32> {
    FlowTable::new(config)
}

fn run(t: &mut FlowTable<u32>, pkt: &FlowPacket, ended: &mut Records) -> PacketVerdict {
    t.process(pkt, &mut |r| ended.push(r)).expect("flow created")
}

fn flush(t: &mut FlowTable<u32>) -> Records {
    let mut out = Vec::new();
    t.flush_all(&mut |r| out.push(r));
    out
}

#[test]
fn flushing_shows_each_flow_ahead_of_its_end_once_per_stage() {
    let mut t = table(FlowConfig::default());
    let mut g = Gen::new();
    let mut ended = Vec::new();
    let ports: Vec<u16> = (0..20).map(|i| 5000 + i * 7).collect();
    for &port in &ports {
        let v = run(&mut t, &g.udp(CLIENT, port, SERVER, 53, 1), &mut ended);
        *t.ext_mut(v.handle).unwrap() = u32::from(port);
    }
    let (mut slots, mut states, mut inners, mut records) = (0, Vec::new(), Vec::new(), Vec::new());
    t.flush_all_ahead(&mut |r| records.push(r), &mut |up| match up {
        Upcoming::Slot(start, len) => {
            assert!(!start.is_null() && len > 0);
            slots += 1;
        }
        Upcoming::State(ext) => states.push(*ext),
        Upcoming::Inner(ext) => inners.push(*ext),
    });
    let want: Vec<u32> = ports.iter().map(|&p| u32::from(p)).collect();
    assert_eq!(records.iter().map(|r| r.ext).collect::<Vec<_>>(), want, "first-packet order");
    // Each stage names every flow but the first few, in the order they end.
    assert_eq!(slots, ports.len() - Upcoming::<u32>::SLOT);
    assert_eq!(states, want[Upcoming::<u32>::STATE..]);
    assert_eq!(inners, want[Upcoming::<u32>::INNER..]);
    assert!(t.is_empty() && ended.is_empty());
}

#[test]
fn both_directions_share_one_flow_and_the_first_sender_is_the_client() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    // The client has the higher address, so normalization must flip the key.
    let first = run(&mut t, &g.udp(9, 5353, 3, 53, 0), &mut ended);
    let reply = run(&mut t, &g.udp(3, 53, 9, 5353, 0), &mut ended);
    assert!(first.created && first.to_server && !first.established);
    assert!(!reply.created && !reply.to_server && reply.established);
    assert_eq!(first.handle, reply.handle);
    assert_eq!(t.len(), 1);

    let rec = flush(&mut t).pop().unwrap();
    assert_eq!((rec.tuple.src, rec.tuple.src_port, rec.tuple.dst, rec.tuple.dst_port), (v4(9), 5353, v4(3), 53));
    assert_eq!((rec.pkts_toserver, rec.pkts_toclient, rec.bytes_toserver, rec.bytes_toclient), (1, 1, 100, 100));
    assert_eq!(rec.state, FlowState::Established);
    assert_eq!(rec.reason.as_str(), "shutdown");
    assert!(rec.tcp.is_none());
}

#[test]
fn different_ports_or_vlans_are_different_flows() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let a = run(&mut t, &g.udp(1, 1000, 2, 53, 0), &mut ended);
    let b = run(&mut t, &g.udp(1, 1001, 2, 53, 0), &mut ended);
    let mut tagged = g.udp(1, 1000, 2, 53, 0);
    tagged.vlan = [10, 0, 0];
    let c = run(&mut t, &tagged, &mut ended);
    assert!(a.created && b.created && c.created);
    assert_eq!(t.len(), 3);
    assert_eq!(t.counters().udp, 3);
}

#[test]
fn icmp_echo_request_and_reply_share_a_flow() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let mut req = g.udp(1, 8, 2, 0, 0); // type 8 code 0
    req.tuple.proto = PROTO_ICMP;
    let mut rep = g.udp(2, 0, 1, 0, 0); // type 0 code 0
    rep.tuple.proto = PROTO_ICMP;
    let a = run(&mut t, &req, &mut ended);
    let b = run(&mut t, &rep, &mut ended);
    assert_eq!(a.handle, b.handle);
    assert!(b.established && !b.to_server);
    let rec = flush(&mut t).pop().unwrap();
    assert_eq!((rec.icmp_toserver, rec.icmp_toclient), (Some((8, 0)), Some((0, 0))));
    assert_eq!((rec.tuple.src_port, rec.tuple.dst_port), (0, 0));
    assert_eq!(t.counters().icmpv4, 1);
}

/// SYN, SYN/ACK, ACK; returns the verdicts.
fn handshake(g: &mut Gen, t: &mut FlowTable<u32>, ended: &mut Records) -> [PacketVerdict; 3] {
    [
        run(t, &g.tcp(true, SYN, 100, 0, 0, 0), ended),
        run(t, &g.tcp(false, SYN | ACK, 500, 101, 0, 0), ended),
        run(t, &g.tcp(true, ACK, 101, 501, 0, 0), ended),
    ]
}

#[test]
fn three_way_handshake_then_fin_fin_ack_closes() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let [syn, synack, ack] = handshake(&mut g, &mut t, &mut ended);
    assert_eq!((syn.tcp_state, syn.state, syn.established), (TcpState::SynSent, FlowState::New, false));
    assert_eq!((synack.tcp_state, synack.to_server), (TcpState::SynRecv, false));
    // The handshake-completing ACK itself is not yet `flow:established` (Suricata decides
    // from the state before the packet); the packets after it are.
    assert_eq!((ack.tcp_state, ack.state, ack.established), (TcpState::Established, FlowState::Established, false));

    let data = run(&mut t, &g.tcp(true, PSH | ACK, 101, 501, 20, 1), &mut ended);
    assert!(data.established);
    // Suricata's names: the client closing first is CLOSE_WAIT.
    let fin1 = run(&mut t, &g.tcp(true, FIN | ACK, 121, 501, 0, 2), &mut ended);
    assert_eq!(fin1.tcp_state, TcpState::CloseWait);
    let fin2 = run(&mut t, &g.tcp(false, FIN | ACK, 501, 122, 0, 2), &mut ended);
    assert_eq!(fin2.tcp_state, TcpState::LastAck);
    let last = run(&mut t, &g.tcp(true, ACK, 122, 502, 0, 2), &mut ended);
    assert_eq!((last.tcp_state, last.state, last.established), (TcpState::Closed, FlowState::Closed, true));
    assert!(ended.is_empty());

    let rec = flush(&mut t).pop().unwrap();
    let tcp = rec.tcp.unwrap();
    assert_eq!(tcp.state.as_str(), "closed");
    assert_eq!(tcp.tcp_flags_ts, SYN | ACK | PSH | FIN);
    assert_eq!(tcp.tcp_flags_tc, SYN | ACK | FIN);
    assert_eq!(tcp.tcp_flags, SYN | ACK | PSH | FIN);
    assert_eq!((rec.pkts_toserver, rec.pkts_toclient), (5, 2));
    assert_eq!(rec.state.as_str(), "closed");
    assert_eq!((rec.start, rec.end), (at(0), at(2)));
    let c = t.counters();
    assert_eq!((c.tcp_syn, c.tcp_synack, c.tcp_sessions, c.tcp_rst), (1, 1, 1, 0));
}

#[test]
fn rst_closes_an_established_session() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    handshake(&mut g, &mut t, &mut ended);
    let rst = run(&mut t, &g.tcp(false, RST | ACK, 501, 101, 0, 1), &mut ended);
    assert_eq!((rst.tcp_state, rst.state), (TcpState::Closed, FlowState::Closed));
    let after = run(&mut t, &g.tcp(true, ACK, 101, 501, 0, 1), &mut ended);
    assert_eq!(after.tcp_state, TcpState::Closed);
    assert_eq!((t.counters().tcp_rst, t.counters().tcp_pkt_after_close), (1, 1));
}

#[test]
fn midstream_off_creates_a_new_flow_without_a_session() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig { midstream: false, ..FlowConfig::default() });
    let mut ended = Vec::new();
    let a = run(&mut t, &g.tcp(true, PSH | ACK, 1000, 2000, 100, 0), &mut ended);
    let b = run(&mut t, &g.tcp(false, ACK, 2000, 1100, 0, 0), &mut ended);
    assert!(a.created);
    for v in [a, b] {
        assert_eq!((v.tcp_state, v.state, v.established), (TcpState::None, FlowState::New, false));
    }
    assert_eq!((t.counters().tcp_midstream_pickups, t.counters().tcp_no_session), (0, 2));
    assert_eq!(flush(&mut t)[0].state.as_str(), "new");
}

#[test]
fn midstream_on_picks_up_the_session_as_established() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig { midstream: true, ..FlowConfig::default() });
    let mut ended = Vec::new();
    let a = run(&mut t, &g.tcp(true, PSH | ACK, 1000, 2000, 100, 0), &mut ended);
    // Picked up on this packet: established from the next one on.
    assert_eq!((a.tcp_state, a.state, a.established), (TcpState::Established, FlowState::Established, false));
    let b = run(&mut t, &g.tcp(true, PSH | ACK, 1100, 2000, 100, 0), &mut ended);
    assert!(b.established);
    assert_eq!((t.counters().tcp_midstream_pickups, t.counters().tcp_sessions), (1, 1));
}

#[test]
fn midstream_synack_makes_its_sender_the_server() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig { midstream: true, ..FlowConfig::default() });
    let mut ended = Vec::new();
    let synack = run(&mut t, &g.tcp(false, SYN | ACK, 500, 101, 0, 0), &mut ended);
    assert!(!synack.to_server);
    let ack = run(&mut t, &g.tcp(true, ACK, 101, 501, 0, 0), &mut ended);
    assert!(ack.to_server && !ack.established, "established only after the completing ACK");
    let rec = flush(&mut t).pop().unwrap();
    assert_eq!((rec.tuple.src, rec.tuple.src_port), (v4(CLIENT), 40000));
    assert_eq!((rec.pkts_toserver, rec.pkts_toclient), (1, 1));
    assert_eq!(rec.tcp.unwrap().tcp_flags_tc, SYN | ACK);
}

#[test]
fn syn_from_the_other_side_of_an_unpicked_flow_swaps_roles() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    // A stray server packet first, then the real handshake.
    let stray = run(&mut t, &g.tcp(false, ACK, 7, 7, 0, 0), &mut ended);
    assert!(stray.to_server, "the first packet's sender is provisionally the client");
    let [syn, _, ack] = handshake(&mut g, &mut t, &mut ended);
    assert!(syn.to_server && ack.to_server && !ack.established);
    let rec = flush(&mut t).pop().unwrap();
    assert_eq!((rec.tuple.src, rec.tuple.src_port), (v4(CLIENT), 40000));
    assert_eq!((rec.pkts_toserver, rec.pkts_toclient), (2, 2));
}

#[test]
fn syn_after_close_starts_a_new_flow_with_a_new_id() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let [first, ..] = handshake(&mut g, &mut t, &mut ended);
    run(&mut t, &g.tcp(true, RST, 101, 0, 0, 1), &mut ended);
    let again = run(&mut t, &g.tcp(true, SYN, 9000, 0, 0, 2), &mut ended);
    assert!(again.created);
    assert_ne!(again.flow_id, first.flow_id);
    assert_eq!(again.tcp_state, TcpState::SynSent);
    assert_eq!(ended.len(), 1);
    assert_eq!((ended[0].reason, ended[0].reason.as_str()), (FlowEndReason::TcpReuse, "timeout"));
    assert_eq!(ended[0].pkts_toserver + ended[0].pkts_toclient, 4);
    assert!(t.flow(first.handle).is_none(), "handle of the ended flow must not resolve");
    assert_eq!(t.counters().tcp_reuse, 1);
}

#[test]
fn extension_slot_travels_with_the_flow_into_its_record() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let v = run(&mut t, &g.udp(1, 1, 2, 2, 0), &mut ended);
    *t.ext_mut(v.handle).unwrap() = 42;
    let (flow, ext) = t.flow_and_ext_mut(v.handle).unwrap();
    assert_eq!((flow.pkts_toserver, *ext), (1, 42));
    let rec = flush(&mut t).pop().unwrap();
    assert_eq!(rec.ext, 42);
    // The slot is reused for the next flow with a fresh extension.
    let w = run(&mut t, &g.udp(3, 3, 4, 4, 0), &mut ended);
    assert_eq!(*t.ext_mut(w.handle).unwrap(), 0);
    assert!(t.ext_mut(v.handle).is_none());
}

fn expire(t: &mut FlowTable<u32>, secs: u64) -> Records {
    let mut out = Vec::new();
    t.expire(at(secs), &mut |r| out.push(r));
    out
}

#[test]
fn idle_flows_time_out_by_state_and_active_ones_stay() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    // UDP "new" (30 s) that stays idle, and one kept alive every 10 s.
    run(&mut t, &g.udp(1, 1000, 2, 53, 0), &mut ended);
    for s in (0..=60).step_by(10) {
        run(&mut t, &g.udp(1, 2000, 2, 53, s), &mut ended);
        let out = expire(&mut t, s);
        assert!(out.iter().all(|r| r.tuple.src_port == 1000), "the active flow must not expire");
    }
    let c = t.counters();
    assert_eq!((c.end_timeout, c.active), (1, 1));
    // The active flow goes once idle past 30 s after its last packet (at 60 s).
    assert!(expire(&mut t, 90).is_empty());
    let out = expire(&mut t, 91);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].tuple.src_port, out[0].reason.as_str(), out[0].state), (2000, "timeout", FlowState::New));
    assert!(t.is_empty());
}

#[test]
fn established_udp_uses_the_longer_timeout() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    run(&mut t, &g.udp(1, 1000, 2, 53, 0), &mut ended);
    run(&mut t, &g.udp(2, 53, 1, 1000, 0), &mut ended);
    assert!(expire(&mut t, 200).is_empty());
    assert!(expire(&mut t, 300).is_empty());
    let out = expire(&mut t, 301);
    assert_eq!((out.len(), out[0].state), (1, FlowState::Established));
}

#[test]
fn closing_a_session_shortens_its_timeout() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    handshake(&mut g, &mut t, &mut ended);
    assert!(expire(&mut t, 100).is_empty(), "established lasts 600 s");
    run(&mut t, &g.tcp(true, RST, 101, 0, 0, 100), &mut ended);
    assert!(expire(&mut t, 160).is_empty());
    let out = expire(&mut t, 161);
    assert_eq!(out.len(), 1, "closed TCP times out after 60 s");
    assert_eq!(out[0].tcp.unwrap().state, TcpState::Closed);
}

#[test]
fn tcp_new_times_out_after_60s() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    run(&mut t, &g.tcp(true, SYN, 1, 0, 0, 0), &mut ended);
    assert!(expire(&mut t, 60).is_empty());
    assert_eq!(expire(&mut t, 61).len(), 1);
}

#[test]
fn a_large_time_jump_expires_everything_due() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    for port in 0..50 {
        run(&mut t, &g.udp(1, port, 2, 53, port as u64), &mut ended);
    }
    expire(&mut t, 0);
    assert_eq!(expire(&mut t, 100_000).len(), 50);
    assert!(t.is_empty());
    // Calling again within the same second is a no-op.
    run(&mut t, &g.udp(1, 1, 2, 53, 100_000), &mut ended);
    assert!(expire(&mut t, 100_000).is_empty());
    assert_eq!(t.len(), 1);
}

#[test]
fn timeouts_longer_than_the_wheel_still_expire_on_time() {
    let mut config = FlowConfig::default();
    config.timeouts.udp.new = 3000;
    let mut t = table(config);
    let mut g = Gen::new();
    let mut ended = Vec::new();
    run(&mut t, &g.udp(1, 1, 2, 2, 0), &mut ended);
    for s in (0..=3000).step_by(7) {
        assert!(expire(&mut t, s).is_empty(), "expired early at {s}");
    }
    assert_eq!(expire(&mut t, 3001).len(), 1);
}

/// Lookups try a direct-mapped hint before the index. With 4 hints for hundreds of flows
/// most hints are overwritten by another flow, go stale when their flow ends, and are
/// rebuilt when the slab grows; every packet must still find its own flow, and a packet
/// of an ended flow a new one.
#[test]
fn hinted_lookups_never_give_another_flow() {
    let mut t = table(FlowConfig { prealloc_flows: 4, ..FlowConfig::default() });
    let mut g = Gen::new();
    let mut ended = Vec::new();
    let mut handles = Vec::new();
    for port in 0..600u16 {
        let v = run(&mut t, &g.udp(1, 1000 + port, 2, 53, 0), &mut ended);
        assert!(v.created);
        handles.push(v.handle);
        // The flow just inserted owns its hint.
        let pkt = g.udp(1, 1000 + port, 2, 53, 0);
        assert_ne!(*t.hint_entry(t.hash_of(&pkt.tuple, pkt.vlan)), 0);
        assert!(t.hinted_slot(t.hash_of(&pkt.tuple, pkt.vlan)).is_some());
    }
    let check = |t: &mut FlowTable<u32>, g: &mut Gen, ended: &mut Records, ports: &mut dyn Iterator<Item = u16>| {
        for port in ports {
            // Both directions, so the reply's tuple (the canonical key's other side) too.
            for v in [run(t, &g.udp(1, 1000 + port, 2, 53, 1), ended), run(t, &g.udp(2, 53, 1, 1000 + port, 1), ended)]
            {
                assert!(!v.created, "port {port}");
                assert_eq!(v.handle, handles[port as usize], "port {port}");
                let f = t.flow(v.handle).expect("live");
                assert_eq!(f.tuple().src_port.min(f.tuple().dst_port), 53);
                assert_eq!(f.tuple().src_port.max(f.tuple().dst_port), 1000 + port);
            }
        }
    };
    check(&mut t, &mut g, &mut ended, &mut (0..600u16).rev());
    // All flows end; new flows take their slots (and hints).
    let expired = expire(&mut t, 10_000);
    assert_eq!(expired.len(), 600, "every flow idles out after a long jump");
    for port in 0..600u16 {
        let v = run(&mut t, &g.udp(3, 2000 + port, 4, 53, 10_001), &mut ended);
        assert!(v.created);
        handles[port as usize] = v.handle;
    }
    // The ended flows' packets start flows of their own, never land in a reused slot.
    for port in 0..50u16 {
        let v = run(&mut t, &g.udp(1, 1000 + port, 2, 53, 10_001), &mut ended);
        assert!(v.created, "port {port}");
        assert!(!handles.contains(&v.handle));
    }
    for port in 0..600u16 {
        let v = run(&mut t, &g.udp(3, 2000 + port, 4, 53, 10_002), &mut ended);
        assert!(!v.created);
        assert_eq!(v.handle, handles[port as usize]);
    }
    assert!(ended.is_empty() || ended.iter().all(|r| r.reason != FlowEndReason::Forced));
}

#[test]
fn tiny_memcap_evicts_and_stays_bounded() {
    let per_flow = FlowTable::<u32>::bytes_per_flow();
    let mut t = table(FlowConfig { memcap_bytes: per_flow * 10, ..FlowConfig::default() });
    assert_eq!(t.max_flows(), 10);
    let mut g = Gen::new();
    let mut ended = Vec::new();
    for port in 0..1000u16 {
        let v = run(&mut t, &g.udp(1, port, 2, 53, port as u64 / 100), &mut ended);
        assert!(v.created);
        assert!(t.len() <= 10);
    }
    assert_eq!(ended.len(), 990);
    assert!(ended.iter().all(|r| r.reason == FlowEndReason::Forced));
    let c = t.counters();
    assert_eq!((c.memcap, c.get_used, c.end_forced, c.active), (990, 990, 990, 10));
    assert!(c.emerg_mode_entered >= 1);
    assert!(t.in_emergency());
    // The table's real allocation (slab, index, lists) fits the memcap.
    assert!(c.memuse >= 10 * std::mem::size_of::<Flow>() as u64 && c.memuse <= 10 * per_flow, "{}", c.memuse);
    // The survivors are recent flows: eviction prefers the least recently seen.
    let rest = flush(&mut t);
    assert!(
        rest.iter().all(|r| r.tuple.src_port >= 900),
        "{:?}",
        rest.iter().map(|r| r.tuple.src_port).collect::<Vec<_>>()
    );
    assert!(!t.in_emergency());
    assert_eq!(t.counters().emerg_mode_over, 1);
}

#[test]
fn emergency_mode_expires_with_emergency_timeouts() {
    let per_flow = FlowTable::<u32>::bytes_per_flow();
    let mut t = table(FlowConfig { memcap_bytes: per_flow * 10, ..FlowConfig::default() });
    let mut g = Gen::new();
    let mut ended = Vec::new();
    for port in 0..11u16 {
        run(&mut t, &g.udp(1, port, 2, 53, 0), &mut ended);
    }
    assert!(t.in_emergency());
    // UDP emergency-new is 10 s instead of 30 s; emergency expiry runs until the table
    // is back at 70% of its limit, then normal timeouts apply again.
    let out = expire(&mut t, 11);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|r| r.reason == FlowEndReason::Timeout));
    assert!(!t.in_emergency());
    assert_eq!(t.counters().emerg_mode_over, 1);
    assert!(expire(&mut t, 30).is_empty());
    assert_eq!(expire(&mut t, 31).len(), 7);
}

#[test]
fn memuse_follows_the_slab_capacity_and_the_reported_heap() {
    let per_flow = FlowTable::<u32>::bytes_per_flow();
    // No preallocation: the slab grows with the flows, in steps of at most 1/8 of the limit.
    let mut t = table(FlowConfig { memcap_bytes: per_flow * 4000, prealloc_flows: 0, ..FlowConfig::default() });
    let mut g = Gen::new();
    let mut ended = Vec::new();
    let mut handles = Vec::new();
    let mut last = 0;
    for port in 0..1000u16 {
        handles.push(run(&mut t, &g.udp(1, port, 2, 53, 0), &mut ended).handle);
        let memuse = t.counters().memuse;
        // Never charged less than the flows' own size; a growth step adds at most 1/8 of the memcap.
        assert!(memuse >= (port as u64 + 1) * std::mem::size_of::<Flow>() as u64);
        assert!(memuse <= last.max(per_flow * 64) + per_flow * 4000 / 8 + per_flow * 64, "{memuse} after {last}");
        last = memuse;
    }
    let structural = t.counters().memuse;
    // Each flow reports 1000 bytes of heap (its app-layer state): all of it is charged.
    for &h in &handles {
        t.set_ext_bytes(h, 1000);
    }
    assert_eq!(t.counters().memuse, structural + 1000 * 1000);
    assert_eq!(t.memory_in_use(), 1000 * per_flow + 1000 * 1000);
    // A report replaces the flow's previous one.
    t.set_ext_bytes(handles[0], 10);
    assert_eq!(t.counters().memuse, structural + 999 * 1000 + 10);
    // Flows that end give their heap back; the slab stays allocated for the next flows.
    // (The free list now holds the 1000 slots: a few KiB more.)
    flush(&mut t);
    let after = t.counters().memuse;
    assert!(after >= structural - 4000 && after <= structural + 8 * 1024, "{after} vs {structural}");
    assert_eq!(t.memory_in_use(), 0);
}

#[test]
fn reported_heap_fills_the_memcap_evicts_and_emergency_mode_ends_on_recovery() {
    let per_flow = FlowTable::<u32>::bytes_per_flow();
    let memcap = per_flow * 10 + 50_000;
    let mut t = table(FlowConfig { memcap_bytes: memcap, ..FlowConfig::default() });
    let mut g = Gen::new();
    let mut ended = Vec::new();
    // Ten flows of 5000 heap bytes each fill what their entries leave of the memcap.
    for port in 0..10u16 {
        let v = run(&mut t, &g.udp(1, port, 2, 53, 0), &mut ended);
        t.set_ext_bytes(v.handle, 5000);
    }
    assert!(!t.in_emergency());
    assert!(ended.is_empty());
    // The next flows do not fit: emergency mode, and the least recently seen are evicted
    // although the flow count is far below its limit.
    let v = run(&mut t, &g.udp(1, 100, 2, 53, 1), &mut ended);
    assert!(v.created);
    assert!(t.in_emergency());
    assert_eq!(ended.len(), 1);
    assert_eq!((ended[0].tuple.src_port, ended[0].reason), (0, FlowEndReason::Forced));
    let c = t.counters();
    assert_eq!((c.memcap, c.get_used, c.emerg_mode_entered, c.emerg_mode_over), (1, 1, 1, 0));
    assert!(t.memory_in_use() <= memcap);
    // Emergency timeouts (UDP new: 10 s) end the idle flows; once 30% of the memcap is
    // free again emergency mode is over.
    let out = expire(&mut t, 12);
    assert!(!out.is_empty() && out.iter().all(|r| r.reason == FlowEndReason::Timeout));
    assert!(!t.in_emergency());
    assert!(t.memory_in_use() * 100 <= memcap * 70);
    assert_eq!(t.counters().emerg_mode_over, 1);
}

#[test]
fn memcap_below_one_flow_drops_flow_creation() {
    let mut t = table(FlowConfig { memcap_bytes: 1, ..FlowConfig::default() });
    let mut g = Gen::new();
    let out = t.process(&g.udp(1, 1, 2, 2, 0), &mut |_| panic!("nothing to evict"));
    assert!(out.is_none());
    assert_eq!((t.counters().memcap_drop, t.len()), (1, 0));
}

fn scripted_run(order_reversed: bool) -> Vec<(u64, u16, u64)> {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let mut ports: Vec<u16> = (1..=30).collect();
    if order_reversed {
        ports.reverse();
    }
    for &p in &ports {
        run(&mut t, &g.udp(1, p, 2, 53, 0), &mut ended);
    }
    flush(&mut t).into_iter().map(|r| (r.flow_id, r.tuple.src_port, r.first_pcap_cnt)).collect()
}

#[test]
fn flush_all_is_ordered_by_first_packet_and_flow_ids_are_reproducible() {
    let a = scripted_run(false);
    assert_eq!(a, scripted_run(false));
    assert!(a.windows(2).all(|w| w[0].2 < w[1].2));
    let mut ids: Vec<u64> = a.iter().map(|r| r.0).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), a.len(), "flow ids differ between flows");
    assert!(ids.iter().all(|&id| id != 0 && id < 1 << 53));
    // Same flows, other arrival order: ids follow (key, first pcap_cnt), nothing else.
    let b = scripted_run(true);
    let port1_a = a.iter().find(|r| r.1 == 1).unwrap();
    let port30_b = b.iter().find(|r| r.1 == 30).unwrap();
    assert_eq!(port30_b.2, 1);
    assert_ne!(port1_a.0, b.iter().find(|r| r.1 == 1).unwrap().0);
}

#[test]
fn stale_handles_do_not_resolve_after_timeout() {
    let mut g = Gen::new();
    let mut t = table(FlowConfig::default());
    let mut ended = Vec::new();
    let v = run(&mut t, &g.udp(1, 1, 2, 2, 0), &mut ended);
    assert!(t.flow(v.handle).is_some());
    assert_eq!(expire(&mut t, 100).len(), 1);
    assert!(t.flow(v.handle).is_none());
}

#[derive(Debug, Clone)]
struct RandomPacket {
    client: bool,
    host: u8,
    port: u16,
    proto: u8,
    flags: u8,
    seq: u32,
    ack: u32,
    payload: u32,
    advance_ms: u64,
    expire_now: bool,
}

fn random_packet() -> impl Strategy<Value = RandomPacket> {
    (
        any::<bool>(),
        0u8..4,
        0u16..4,
        prop_oneof![Just(PROTO_TCP), Just(PROTO_UDP), Just(PROTO_ICMP), Just(47u8)],
        any::<u8>(),
        0u32..4,
        0u32..4,
        0u32..3,
        prop_oneof![Just(0u64), 0u64..2_000, 0u64..200_000],
        any::<bool>(),
    )
        .prop_map(|(client, host, port, proto, flags, seq, ack, payload, advance_ms, expire_now)| RandomPacket {
            client,
            host,
            port,
            proto,
            flags,
            seq,
            ack,
            payload,
            advance_ms,
            expire_now,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_traffic_never_panics_and_packets_add_up(
        packets in proptest::collection::vec(random_packet(), 1..300),
        tiny_memcap in any::<bool>(),
        midstream in any::<bool>(),
        async_oneside in any::<bool>(),
    ) {
        let memcap = if tiny_memcap { FlowTable::<()>::bytes_per_flow() * 5 } else { 1 << 20 };
        let mut t: FlowTable<()> =
            FlowTable::new(FlowConfig { memcap_bytes: memcap, midstream, async_oneside, ..FlowConfig::default() });
        let mut records: Vec<FlowRecord<()>> = Vec::new();
        let mut now_ns = at(0).0;
        let mut bytes = 0u64;
        for (i, rp) in packets.iter().enumerate() {
            now_ns += rp.advance_ms * 1_000_000;
            let (src, dst, sport, dport) = if rp.client { (10, 20 + rp.host, 1000 + rp.port, 80) } else { (20 + rp.host, 10, 80, 1000 + rp.port) };
            let pkt = FlowPacket {
                tuple: FiveTuple { src: v4(src), dst: v4(dst), src_port: sport, dst_port: dport, proto: rp.proto, is_v4: true },
                vlan: [0, 0, 0], ts: Timestamp(now_ns), pcap_cnt: i as u64 + 1, wire_len: 60 + rp.payload, payload_len: rp.payload,
                tcp: (rp.proto == PROTO_TCP).then_some(TcpSegment { flags: rp.flags, seq: rp.seq.wrapping_mul(0x4000_0001), ack: rp.ack.wrapping_mul(0x4000_0001), window: 0 }),
            };
            bytes += pkt.wire_len as u64;
            let v = t.process(&pkt, &mut |r| records.push(r));
            let v = v.expect("memcap holds several flows");
            let flow = t.flow(v.handle).expect("verdict handle resolves");
            prop_assert_eq!(flow.flow_id, v.flow_id);
            prop_assert!(t.len() <= t.max_flows());
            prop_assert_eq!(t.counters().active, t.len() as u64);
            if rp.expire_now {
                t.expire(Timestamp(now_ns), &mut |r| records.push(r));
            }
        }
        t.flush_all(&mut |r| records.push(r));
        prop_assert!(t.is_empty());
        let pkts: u64 = records.iter().map(|r| r.pkts_toserver + r.pkts_toclient).sum();
        let recorded_bytes: u64 = records.iter().map(|r| r.bytes_toserver + r.bytes_toclient).sum();
        prop_assert_eq!(pkts, packets.len() as u64);
        prop_assert_eq!(recorded_bytes, bytes);
        let c = t.counters();
        prop_assert_eq!(c.total, records.len() as u64);
        prop_assert_eq!(c.end_timeout + c.end_forced + c.end_shutdown + c.end_tcp_reuse, c.total);
        prop_assert_eq!(c.tcp + c.udp + c.icmpv4 + c.icmpv6 + c.other, c.total);
        prop_assert_eq!(c.active_tcp + c.active_udp + c.active_icmpv4 + c.active_icmpv6 + c.active_other, 0);
        prop_assert!(records.iter().all(|r| r.flow_id != 0 && r.start <= r.end && r.first_pcap_cnt <= r.last_pcap_cnt));
    }
}

/// Throughput of lookups on existing flows. Run with
/// `cargo test --release --lib flow::tests::lookup_throughput -- --ignored --nocapture`
/// (`FLOWS=n` sets the number of flows cycled through; the default 10 000).
#[test]
#[ignore]
fn lookup_throughput() {
    let mut t: FlowTable<()> = FlowTable::new(FlowConfig::default());
    let mut g = Gen::new();
    let flows: u16 = std::env::var("FLOWS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let pkts: Vec<FlowPacket> = (0..flows)
        .map(|i| {
            let mut p = g.tcp(i % 2 == 0, ACK | PSH, 1, 1, 100, 0);
            p.tuple.src_port = 1024 + i;
            p
        })
        .collect();
    let mut sink = |_r: FlowRecord<()>| {};
    for p in &pkts {
        t.process(p, &mut sink);
    }
    let rounds = 300;
    let start = std::time::Instant::now();
    let mut established = 0u64;
    for _ in 0..rounds {
        for p in &pkts {
            established += t.process(p, &mut sink).map_or(0, |v| v.to_server as u64);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let n = rounds as f64 * pkts.len() as f64;
    println!("{:.1} M lookups/s over {} flows ({established})", n / elapsed / 1e6, flows);
}

#[test]
fn vlan_tracking_off_makes_one_flow_of_both_vlans_and_keeps_the_first() {
    for (track_vlan, flows) in [(true, 2), (false, 1)] {
        let mut g = Gen::new();
        let mut t = table(FlowConfig { track_vlan, ..FlowConfig::default() });
        let mut ended = Vec::new();
        let mut syn = g.tcp(true, SYN, 100, 0, 0, 0);
        syn.vlan = [3136, 0, 0];
        run(&mut t, &syn, &mut ended);
        run(&mut t, &g.tcp(false, SYN | ACK, 500, 101, 0, 0), &mut ended);
        let records = flush(&mut t);
        assert_eq!(records.len(), flows, "track_vlan {track_vlan}");
        if !track_vlan {
            assert_eq!(records[0].vlan, [3136, 0, 0]);
            assert_eq!((records[0].pkts_toserver, records[0].pkts_toclient), (1, 1));
        }
    }
}
