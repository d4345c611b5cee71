//! The detectors as the controller drives them: facts fed on two workers, tallies
//! merged, windows evaluated.

use super::*;
use std::net::IpAddr;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn facts(src: &str, dst: &str, sport: u16, dport: u16, proto: u8, flags: u8) -> PacketFacts {
    PacketFacts {
        src: ip(src),
        dst: ip(dst),
        sport,
        dport,
        proto,
        tcp_flags: flags,
        len: 60,
        to_server: None,
        ts: Timestamp(0),
    }
}

fn settings() -> DetectorSettings {
    let mut s = DetectorSettings::default();
    s.common.block_time = 3;
    s.syn_flood.rate = 100;
    s.syn_flood.hold = 2;
    s.port_scan.ports = 20;
    s.port_scan.window = 1;
    s.udp_reflection.rate = 100;
    s.icmp_flood.rate = 100;
    s
}

/// Two workers, each given `per_worker(worker)` packets, merged and evaluated once.
fn run_window(
    eval: &mut Evaluator,
    s: &DetectorSettings,
    now: u64,
    never: &NeverBlock,
    feed: impl Fn(usize, &mut Detectors),
) -> Vec<Finding> {
    for w in 0..2 {
        let mut d = s.worker_set();
        feed(w, &mut d);
        eval.add(&d.take_tallies());
    }
    eval.second(now, never, &HashMap::new())
}

#[test]
fn syn_flood_spread_over_workers_fires_and_withdraws_on_kernel_counts() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock::default();
    // 60 SYNs on each worker: neither alone reaches 100/s, together they do.
    let found = run_window(&mut eval, &s, 1, &never, |w, d| {
        for i in 0..60u16 {
            d.packet(&facts(
                &format!("198.51.100.{}", w * 100 + i as usize % 50),
                "10.0.0.2",
                1000 + i,
                80,
                6,
                TCP_SYN,
            ));
        }
    });
    let syn: Vec<_> = found.iter().filter(|f| f.kind == Kind::SynFlood).collect();
    assert_eq!(syn.len(), 1, "{found:?}");
    assert_eq!(syn[0].signature, "picket SYN flood to 10.0.0.2:80");
    assert_eq!(syn[0].actions, vec![Action::Protect { addr: ip("10.0.0.2"), port: 80 }]);
    assert_eq!(eval.protected(), 1);
    // Cookies on: user space sees nothing, but the kernel answered 500 SYNs: still on.
    let busy: HashMap<_, _> = [((ip("10.0.0.2"), 80), 500)].into();
    for now in 2..6 {
        let f = eval.second(now, &never, &busy);
        assert!(f.iter().all(|f| f.kind != Kind::SynFlood), "{f:?}");
    }
    // The kernel counts fall: off after `hold` quiet seconds.
    assert!(eval.second(6, &never, &HashMap::new()).is_empty());
    let off = eval.second(7, &never, &HashMap::new());
    assert_eq!(off.len(), 1);
    assert_eq!(off[0].actions, vec![Action::Unprotect { addr: ip("10.0.0.2"), port: 80 }]);
    assert!(off[0].signature.is_empty(), "a withdrawal is no alert");
    assert_eq!(eval.protected(), 0);
    assert_eq!(eval.findings[Kind::SynFlood.index()], 1);
}

#[test]
fn syn_flood_below_rate_or_with_handshakes_is_quiet() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock::default();
    // 90/s: below the rate.
    let found = run_window(&mut eval, &s, 1, &never, |_, d| {
        for i in 0..45u16 {
            d.packet(&facts("198.51.100.1", "10.0.0.2", 1000 + i, 80, 6, TCP_SYN));
        }
    });
    assert!(found.is_empty(), "{found:?}");
    // 200/s, but legitimate: every SYN completes its handshake.
    let found = run_window(&mut eval, &s, 2, &never, |_, d| {
        for i in 0..100u16 {
            d.packet(&facts("198.51.100.1", "10.0.0.2", 1000 + i, 80, 6, TCP_SYN));
            d.flow_event(&FlowEvent::HandshakeDone {
                client: (ip("198.51.100.1"), 1000 + i),
                server: (ip("10.0.0.2"), 80),
            });
        }
    });
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn port_scan_blocks_the_source_once_and_not_below_threshold() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock::default();
    // 10 distinct ports on each worker (20 together) from the scanner; 19 from another.
    let found = run_window(&mut eval, &s, 1, &never, |w, d| {
        for p in 0..10u16 {
            d.packet(&facts("192.0.2.66", "10.0.0.2", 40000, 1 + p + 10 * w as u16, 6, TCP_SYN));
        }
        for p in 0..10u16 {
            if w == 0 || p < 9 {
                d.packet(&facts("192.0.2.7", "10.0.0.2", 40000, 1 + p + 10 * w as u16, 6, TCP_SYN));
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.signature, "picket port scan from 192.0.2.66 to 10.0.0.2 (20 ports)");
    assert_eq!(f.actions, vec![Action::Block { prefix: Prefix::parse("192.0.2.66/32").unwrap(), ttl_secs: 3 }]);
    // The same scan in the next window, within the block time: no second alert.
    let again = run_window(&mut eval, &s, 2, &never, |w, d| {
        for p in 0..20u16 {
            d.packet(&facts("192.0.2.66", "10.0.0.2", 40000, 100 + p + 20 * w as u16, 6, TCP_SYN));
        }
    });
    assert!(again.is_empty(), "{again:?}");
    // After the block time, it is alerted again.
    let later = run_window(&mut eval, &s, 5, &never, |_, d| {
        for p in 0..20u16 {
            d.packet(&facts("192.0.2.66", "10.0.0.2", 40000, 300 + p, 6, TCP_SYN));
        }
    });
    assert_eq!(later.len(), 1);
}

#[test]
fn a_server_answering_many_clients_is_no_scanner_and_allowed_sources_are_spared() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock { prefixes: vec![Prefix::parse("10.0.0.0/24").unwrap()] };
    let found = run_window(&mut eval, &s, 1, &never, |_, d| {
        for p in 0..50u16 {
            // DNS replies and SYN/ACKs to many client ports: not probes.
            d.packet(&facts("10.0.0.53", "192.0.2.1", 53, 30000 + p, 17, 0));
            d.packet(&facts("10.0.0.80", "192.0.2.1", 80, 30000 + p, 6, TCP_SYN | TCP_ACK));
            // A scan from an allowed address: alerted, not blocked.
            d.packet(&facts("10.0.0.9", "192.0.2.1", 40000, 1 + p, 6, TCP_SYN));
        }
    });
    let scans: Vec<_> = found.iter().filter(|f| f.kind == Kind::PortScan).collect();
    assert_eq!(scans.len(), 1, "{found:?}");
    assert!(scans[0].signature.contains("from 10.0.0.9"));
    // Every finding (the DNS replies also look like a reflection) alerts without acting.
    assert!(found.iter().all(|f| f.actions.is_empty() && f.spared), "{found:?}");
}

#[test]
fn udp_reflection_blocks_heavy_reflectors_only() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock::default();
    let found = run_window(&mut eval, &s, 1, &never, |w, d| {
        for i in 0..60 {
            d.packet(&facts(&format!("203.0.113.{}", 1 + w), "10.0.0.2", 123, 40000, 17, 0));
            // A light reflector (1 packet): under a tenth of the flood.
            if i == 0 && w == 0 {
                d.packet(&facts("203.0.113.99", "10.0.0.2", 53, 40000, 17, 0));
            }
            // Not from an amplifier port: not counted.
            d.packet(&facts("203.0.113.50", "10.0.0.2", 5000, 40000, 17, 0));
        }
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].signature.starts_with("picket UDP reflection from port 123 to 10.0.0.2"));
    let mut blocked: Vec<String> = found[0]
        .actions
        .iter()
        .map(|a| match a {
            Action::Block { prefix, .. } => prefix.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    blocked.sort();
    assert_eq!(blocked, ["203.0.113.1/32", "203.0.113.2/32"]);
}

#[test]
fn icmp_flood_fires_above_rate_and_respects_the_allow_set() {
    let s = settings();
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock { prefixes: vec![Prefix::parse("2001:db8:1::/48").unwrap()] };
    let found = run_window(&mut eval, &s, 1, &never, |_, d| {
        for _ in 0..60 {
            d.packet(&facts("192.0.2.9", "10.0.0.2", 8, 0, 1, 0));
            d.packet(&facts("2001:db8:1::9", "2001:db8:2::2", 128, 0, 58, 0));
            // Neighbour discovery and echo replies never count.
            d.packet(&facts("2001:db8:3::9", "2001:db8:2::3", 135, 0, 58, 0));
            d.packet(&facts("10.0.0.2", "192.0.2.9", 0, 0, 1, 0));
            d.packet(&facts("10.0.0.2", "192.0.2.9", 0, 0, 1, 0));
        }
        for _ in 0..20 {
            d.packet(&facts("192.0.2.10", "10.0.0.3", 8, 0, 1, 0));
        }
    });
    assert_eq!(found.len(), 2, "{found:?}");
    let v4 = found.iter().find(|f| f.signature == "picket ICMP flood to 10.0.0.2").unwrap();
    assert_eq!(v4.actions, vec![Action::Block { prefix: Prefix::parse("192.0.2.9").unwrap(), ttl_secs: 3 }]);
    let v6 = found.iter().find(|f| f.signature == "picket ICMP flood to 2001:db8:2::2").unwrap();
    assert!(v6.actions.is_empty() && v6.spared);
}

#[test]
fn tables_are_capped_and_refusals_counted() {
    let mut s = settings();
    s.common.max_keys = 4;
    let mut eval = Evaluator::new(&s);
    let never = NeverBlock::default();
    let _ = run_window(&mut eval, &s, 1, &never, |w, d| {
        // 10 destinations per worker, different on each: 4 kept per worker, 4 merged.
        for i in 0..10 {
            d.packet(&facts("192.0.2.1", &format!("10.0.{w}.{i}"), 8, 0, 1, 0));
        }
    });
    assert!(eval.keys_refused[Kind::IcmpFlood.index()] >= 12, "{:?}", eval.keys_refused);
    let mut row = Row::default();
    for p in 0..10 {
        row.add_member(ip("10.0.0.1"), p, 1, 3);
    }
    assert_eq!((row.members.len(), row.members_refused), (3, 7));
}

#[test]
fn prefixes_parse_and_match() {
    let p = Prefix::parse("198.51.100.7/24").unwrap();
    assert_eq!(p.to_string(), "198.51.100.0/24");
    assert!(p.contains(ip("198.51.100.200")) && !p.contains(ip("198.51.101.1")));
    assert!(p.contains(ip("::ffff:198.51.100.1")));
    assert!(Prefix::parse("2001:db8::/32").unwrap().contains(ip("2001:db8:ffff::1")));
    assert!(Prefix::parse("10.0.0.0/33").unwrap_err().contains("0-32"));
    assert!(Prefix::parse("nonsense").unwrap_err().contains("'nonsense'"));
    assert!(Prefix::parse("0.0.0.0/0").unwrap().contains(ip("1.2.3.4")));
}
