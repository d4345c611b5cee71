//! The XDP program's decisions, frame by frame, run in the kernel with
//! `BPF_PROG_TEST_RUN` (no interface, no traffic): what the verifier accepted, with the
//! real maps and helpers. Each test loads its own copy of the program, steers its maps
//! as picket does, and checks the action and the per-reason counters.
//!
//! Needs root (loading BPF programs); prints SKIPPED otherwise. CI runs as root, and
//! there a build without the program (no clang) fails these tests instead of skipping.

mod netlab;

use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, HashMap, MapData};
use etherparse::PacketBuilder;
use picket::xdp::maps::{
    BlockVal, BypassVal, FlowV4, Reason, CFG_AFXDP, CFG_BYPASS_DROP, CFG_INSPECT_ICMP, CFG_PASSTHROUGH,
};
use picket::xdp::stats::XdpStats;
use picket::xdp::{monotonic_ns, XdpLayer, XdpOptions};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const TCP: u8 = 6;
/// `picket_ports` slots: TCP ports first, then UDP ports.
const UDP_SLOTS: u32 = 65536;

fn load(flags: u32) -> Option<(XdpLayer, XdpStats)> {
    if let Some(why) = netlab::skip_reason(&[]) {
        eprintln!("SKIPPED: {why}");
        return None;
    }
    assert!(XdpLayer::available(), "this build has no XDP program (clang missing at build time)");
    let mut xdp = XdpLayer::load(&XdpOptions { flags, ..XdpOptions::default() }).expect("load the XDP program");
    let stats = XdpStats::take(&mut xdp).expect("picket_stats");
    Some((xdp, stats))
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src, dst, 64)
        .udp(sport, dport)
        .write(&mut frame, b"hello")
        .unwrap();
    frame
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut frame = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src, dst, 64)
        .tcp(sport, dport, 1000, 64240)
        .ack(1)
        .write(&mut frame, b"GET / HTTP/1.1\r\n\r\n")
        .unwrap();
    frame
}

fn count(stats: &XdpStats, reason: Reason) -> u64 {
    stats.read().into_iter().find(|(r, _)| *r == reason).map_or(0, |(_, c)| c.packets)
}

fn block(xdp: &mut XdpLayer, prefix: [u8; 4], len: u32, expires_ns: u64) {
    let map = xdp.ebpf_mut().map_mut("picket_block_v4").unwrap();
    let mut trie: LpmTrie<&mut MapData, [u8; 4], BlockVal> = LpmTrie::try_from(map).unwrap();
    trie.insert(&Key::new(len, prefix), BlockVal { expires_ns, ..BlockVal::default() }, 0).unwrap();
}

#[test]
fn an_ordinary_packet_is_handed_to_picket() {
    let Some((mut xdp, stats)) = load(0) else { return };
    let run = xdp.test_run(&udp([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53)).unwrap();
    assert_eq!(run.action, XDP_PASS);
    assert_eq!((count(&stats, Reason::Seen), count(&stats, Reason::Inspect)), (1, 1));
}

#[test]
fn blocklisted_sources_are_dropped_until_the_entry_expires() {
    let Some((mut xdp, stats)) = load(0) else { return };
    block(&mut xdp, [10, 1, 0, 0], 16, 0);
    block(&mut xdp, [10, 9, 9, 9], 32, monotonic_ns() - 1); // already expired
    assert_eq!(xdp.test_run(&udp([10, 1, 2, 3], [10, 0, 0, 2], 5000, 53)).unwrap().action, XDP_DROP);
    assert_eq!(xdp.test_run(&tcp([10, 1, 200, 1], [10, 0, 0, 2], 40000, 80)).unwrap().action, XDP_DROP);
    assert_eq!(xdp.test_run(&udp([10, 2, 0, 1], [10, 0, 0, 2], 5000, 53)).unwrap().action, XDP_PASS);
    assert_eq!(xdp.test_run(&udp([10, 9, 9, 9], [10, 0, 0, 2], 5000, 53)).unwrap().action, XDP_PASS);
    // The destination is not what the blocklist looks at.
    assert_eq!(xdp.test_run(&udp([10, 0, 0, 2], [10, 1, 2, 3], 53, 5000)).unwrap().action, XDP_PASS);
    assert_eq!(count(&stats, Reason::Blocklisted), 2);
    assert_eq!(count(&stats, Reason::Inspect), 3);
    // The entry counts what it dropped.
    let map = xdp.ebpf_mut().map_mut("picket_block_v4").unwrap();
    let trie: LpmTrie<&mut MapData, [u8; 4], BlockVal> = LpmTrie::try_from(map).unwrap();
    let entry = trie.get(&Key::new(16, [10, 1, 0, 0]), 0).unwrap();
    assert_eq!(entry.packets, 2);
    assert!(entry.bytes > 100);
}

#[test]
fn bypassed_flows_are_counted_and_passed_or_dropped() {
    for (flags, action) in [(0, XDP_PASS), (CFG_BYPASS_DROP, XDP_DROP)] {
        let Some((mut xdp, stats)) = load(flags) else { return };
        let key = FlowV4 { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], sport: 40000, dport: 443, proto: TCP, pad: [0; 3] };
        {
            let map = xdp.ebpf_mut().map_mut("picket_bypass_v4").unwrap();
            let mut table: HashMap<&mut MapData, FlowV4, BypassVal> = HashMap::try_from(map).unwrap();
            table.insert(key, BypassVal::default(), 0).unwrap();
        }
        let frame = tcp([10, 0, 0, 1], [10, 0, 0, 2], 40000, 443);
        for _ in 0..3 {
            assert_eq!(xdp.test_run(&frame).unwrap().action, action);
        }
        // The other direction has no entry of its own here: inspected.
        assert_eq!(xdp.test_run(&tcp([10, 0, 0, 2], [10, 0, 0, 1], 443, 40000)).unwrap().action, XDP_PASS);
        assert_eq!((count(&stats, Reason::Bypassed), count(&stats, Reason::Inspect)), (3, 1));
        let map = xdp.ebpf_mut().map_mut("picket_bypass_v4").unwrap();
        let table: HashMap<&mut MapData, FlowV4, BypassVal> = HashMap::try_from(map).unwrap();
        let value = table.get(&key, 0).unwrap();
        assert_eq!(value.packets, 3);
        assert_eq!(value.bytes, 3 * frame.len() as u64);
        assert!(value.last_ns > 0 && value.last_ns <= monotonic_ns());
    }
}

#[test]
fn pass_through_sends_what_no_rule_can_match_to_the_kernel() {
    let Some((mut xdp, stats)) = load(CFG_PASSTHROUGH | CFG_INSPECT_ICMP) else { return };
    {
        let map = xdp.ebpf_mut().map_mut("picket_ports").unwrap();
        let mut ports: Array<&mut MapData, u8> = Array::try_from(map).unwrap();
        ports.set(80, 1, 0).unwrap();
        ports.set(UDP_SLOTS + 53, 1, 0).unwrap();
    }
    // A rule's port on either side: inspected.
    xdp.test_run(&tcp([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)).unwrap();
    xdp.test_run(&tcp([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)).unwrap();
    xdp.test_run(&udp([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53)).unwrap();
    assert_eq!(count(&stats, Reason::Inspect), 3);
    // TCP port 53 and UDP port 80 are other slots: passed through, as is port 9000.
    for frame in [
        tcp([10, 0, 0, 1], [10, 0, 0, 2], 40000, 53),
        udp([10, 0, 0, 1], [10, 0, 0, 2], 5000, 80),
        tcp([10, 0, 0, 1], [10, 0, 0, 2], 40000, 9000),
    ] {
        assert_eq!(xdp.test_run(&frame).unwrap().action, XDP_PASS);
    }
    assert_eq!(count(&stats, Reason::PassedThrough), 3);
    assert_eq!(count(&stats, Reason::Inspect), 3);
    // ICMP is inspected with CFG_INSPECT_ICMP.
    let mut ping = Vec::new();
    PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .icmpv4_echo_request(1, 1)
        .write(&mut ping, b"ping")
        .unwrap();
    xdp.test_run(&ping).unwrap();
    assert_eq!(count(&stats, Reason::Inspect), 4);
}

#[test]
fn af_xdp_delivery_without_a_socket_falls_back_to_the_kernel() {
    let Some((mut xdp, stats)) = load(CFG_AFXDP) else { return };
    assert_eq!(xdp.test_run(&udp([10, 0, 0, 1], [10, 0, 0, 2], 5000, 53)).unwrap().action, XDP_PASS);
    assert_eq!(count(&stats, Reason::Inspect), 1);
}

#[test]
fn truncated_and_odd_frames_are_inspected_not_misread() {
    let Some((mut xdp, stats)) = load(CFG_PASSTHROUGH) else { return };
    let full = tcp([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80);
    // Ethernet alone (the kernel's test run needs 14 bytes), cut inside the IP header and
    // the TCP header; then an ARP-type frame and an impossible IPv4 header length.
    let mut arp = full.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut bad_ihl = full.clone();
    bad_ihl[14] = 0x43; // IHL 3 (< 5)
    for frame in [&full[..14], &full[..20], &full[..40], &arp[..], &bad_ihl[..]] {
        assert_eq!(xdp.test_run(frame).unwrap().action, XDP_PASS);
    }
    assert_eq!(count(&stats, Reason::NotIp), 5);
    assert_eq!(count(&stats, Reason::Inspect), 5);
    assert_eq!(count(&stats, Reason::PassedThrough), 0);
}
