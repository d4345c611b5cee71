//! IPS semantics of the inspector (`simulate_ips`, which the inline capture modes set too):
//! which packet a `drop`, `reject*` or `pass` rule acts on, what it does to the rest of the
//! flow, and the events that say so. Packets are built with etherparse and fed in order.

use super::tests::{feed, inspector, udp, Collect, Seen};
use super::*;
use crate::detect::engine::{ActionOrder, DetectConfig, DetectEngine};
use crate::detect::rule::{load_rules_str, RuleVars};
use etherparse::PacketBuilder;

const CLIENT: [u8; 4] = [192, 168, 1, 10];
const SERVER: [u8; 4] = [10, 0, 0, 80];
const CLIENT_ISN: u32 = 1000;
const SERVER_ISN: u32 = 5000;

const REQUEST: &[u8] = b"GET /evil/path HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n";

fn segment(to_server: bool, seq: u32, ack: u32, flags: &str, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
    let mut b = if to_server {
        b.ipv4(CLIENT, SERVER, 64).tcp(40000, 80, seq, 64000)
    } else {
        b.ipv4(SERVER, CLIENT, 64).tcp(80, 40000, seq, 64000)
    };
    for f in flags.chars() {
        b = match f {
            'S' => b.syn(),
            'A' => b.ack(ack),
            'P' => b.psh(),
            'F' => b.fin(),
            other => panic!("flag {other}"),
        };
    }
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("build");
    out
}

/// Handshake, the request (packet 4), the server's ACK of it and its response, the
/// client's ACK: what reaches picket if nothing is blocked.
fn http_exchange(request: &[u8]) -> Vec<Vec<u8>> {
    let (c, s) = (CLIENT_ISN + 1, SERVER_ISN + 1);
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let c2 = c + request.len() as u32;
    vec![
        segment(true, CLIENT_ISN, 0, "S", b""),
        segment(false, SERVER_ISN, c, "SA", b""),
        segment(true, c, s, "A", b""),
        segment(true, c, s, "PA", request),
        segment(false, s, c2, "A", b""),
        segment(false, s, c2, "PA", response),
        segment(true, c2, s + response.len() as u32, "A", b""),
    ]
}

const REQUEST_PACKET: usize = 3;

fn udp_reply(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2; 6], [1; 6])
        .ipv4(SERVER, CLIENT, 64)
        .udp(9999, 40000)
        .write(&mut out, payload)
        .expect("build");
    out
}

fn seen(sink: &Collect) -> Vec<&Seen> {
    sink.0.iter().map(|(_, s)| s).collect()
}

fn drops(sink: &Collect) -> Vec<(u64, &'static str)> {
    sink.0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Drop { pcap_cnt, reason } => Some((*pcap_cnt, *reason)),
            _ => None,
        })
        .collect()
}

fn alerts(sink: &Collect) -> Vec<(u32, u64, bool)> {
    sink.0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Alert { sid, pcap_cnt, blocked, .. } => Some((*sid, *pcap_cnt, *blocked)),
            _ => None,
        })
        .collect()
}

const PASS: Verdict = Verdict::Pass;
const DROP: Verdict = Verdict::Drop;

/// The rules that must stop the request on its own segment, before the server can ack it.
const REQUEST_RULES: [&str; 4] = [
    "drop tcp any any -> any 80 (flow:to_server; content:\"/evil/\"; sid:1;)",
    "drop http any any -> any any (http.uri; content:\"/evil/\"; sid:1;)",
    "drop http any any -> any any (http.method; content:\"GET\"; http.uri; content:\"evil\"; sid:1;)",
    "drop http any any -> any any (http.host; content:\"example.com\"; sid:1;)",
];

#[test]
fn inline_stream_drops_the_matching_segment_itself() {
    for rule in REQUEST_RULES {
        let mut insp = inspector(&format!("{rule}\n"), true);
        let mut sink = Collect::default();
        let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut sink);
        assert_eq!(verdicts[..REQUEST_PACKET], [PASS; 3], "{rule}: the handshake passes");
        assert_eq!(verdicts[REQUEST_PACKET], DROP, "{rule}: the request segment is dropped");
        assert_eq!(verdicts[REQUEST_PACKET + 1..], [DROP; 3], "{rule}: so is the rest of the flow");
        assert_eq!(alerts(&sink), [(1, 4, true)], "{rule}: one alert, on the request, blocked");
        assert_eq!(
            drops(&sink),
            [(4, "rules"), (5, "flow drop"), (6, "flow drop"), (7, "flow drop")],
            "{rule}: one drop event per blocked packet"
        );
    }
}

#[test]
fn ids_mode_never_blocks() {
    for rule in REQUEST_RULES {
        let mut insp = inspector(&format!("{rule}\n"), false);
        let mut sink = Collect::default();
        let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut sink);
        assert_eq!(verdicts, [PASS; 7], "{rule}");
        // IDS mode inspects stream data once acked, or at flow end.
        insp.finish(&mut sink);
        let a = alerts(&sink);
        assert!(a.len() == 1 && !a[0].2, "{rule}: an alert, not blocked: {a:?}");
        assert!(drops(&sink).is_empty());
    }
}

#[test]
fn reject_variants_answer_on_the_matching_segment() {
    let cases = [
        ("reject", RejectTarget::Source),
        ("rejectsrc", RejectTarget::Source),
        ("rejectdst", RejectTarget::Destination),
        ("rejectboth", RejectTarget::Both),
    ];
    for (action, to) in cases {
        for body in
            ["tcp any any -> any 80 (content:\"/evil/\";", "http any any -> any any (http.uri; content:\"/evil/\";"]
        {
            let rules = format!("{action} {body} sid:9;)\n");
            let mut insp = inspector(&rules, true);
            let mut sink = Collect::default();
            let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut sink);
            let reset = Verdict::Reject(Reject { reply: RejectReply::TcpReset, to });
            assert_eq!(verdicts[REQUEST_PACKET], reset, "{rules}");
            assert_eq!(verdicts[REQUEST_PACKET + 1..], [DROP; 3], "{rules}: the rest is dropped, not answered again");
            assert_eq!(alerts(&sink), [(9, 4, true)], "{rules}");
        }
    }
}

#[test]
fn udp_reject_asks_for_icmp_unreachable_on_the_datagram() {
    let mut insp = inspector("reject udp any any -> any 9999 (content:\"evil\"; sid:3;)\n", true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"fine"), udp(b"evil query")], &mut sink);
    let icmp = Verdict::Reject(Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Source });
    assert_eq!(verdicts, [PASS, icmp]);
    assert_eq!(drops(&sink), [(2, "rules")]);
}

#[test]
fn a_packet_rule_drops_its_packet_a_stateful_or_ip_rule_the_flow() {
    // Suricata's action scope by rule type: a rule on packet data alone (UDP payload,
    // dsize) drops the packet; a rule that matched stream data or an app-layer
    // transaction, and an IP-only rule, drop the flow.
    let datagrams = [udp(b"fine"), udp(b"evil"), udp(b"fine again"), udp_reply(b"answer")];
    let mut insp = inspector("drop udp any any -> any any (content:\"evil\"; sid:1;)\n", true);
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &datagrams, &mut sink), [PASS, DROP, PASS, PASS], "packet scope");
    assert_eq!(drops(&sink), [(2, "rules")]);

    let mut insp = inspector("drop ip 192.168.1.10 any -> any any (sid:2;)\n", true);
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &datagrams, &mut sink), [DROP; 4], "IP-only: the flow, both directions");
    assert_eq!(drops(&sink), [(1, "rules"), (2, "flow drop"), (3, "flow drop"), (4, "flow drop")]);

    let mut insp = inspector("drop tcp any any -> any 80 (dsize:0; flags:A; sid:3;)\n", true);
    let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut Collect::default());
    assert_eq!(verdicts, [PASS, PASS, DROP, PASS, PASS, PASS, DROP], "each bare client ACK, nothing else");
}

#[test]
fn pass_wins_over_drop_on_its_packet() {
    // Suricata's default action order: pass, drop, reject, alert. A pass match ends the
    // packet's inspection: no alert and no drop for it.
    let rules = "drop udp any any -> any any (content:\"evil\"; sid:1;)\n\
                 pass udp any any -> any any (content:\"evil but allowed\"; sid:2;)\n\
                 alert udp any any -> any any (content:\"evil\"; sid:3;)\n";
    let mut insp = inspector(rules, true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"evil but allowed"), udp(b"evil")], &mut sink);
    assert_eq!(verdicts, [PASS, DROP]);
    assert_eq!(alerts(&sink), [(1, 2, true), (3, 2, false)], "nothing on the passed packet");
}

#[test]
fn a_flow_scoped_pass_passes_the_rest_of_the_flow() {
    // An app-layer pass (Suricata 7+: flow scope) whitelists the flow: the drop rule that
    // would match the response later never acts.
    let rules = "pass http any any -> any any (http.host; content:\"example.com\"; sid:1;)\n\
                 drop tcp any any -> any any (content:\"200 OK\"; sid:2;)\n";
    let mut insp = inspector(rules, true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut sink);
    assert_eq!(verdicts, [PASS; 7]);
    assert!(alerts(&sink).is_empty(), "{:?}", seen(&sink));
    assert!(drops(&sink).is_empty());
    // Without the pass rule the response is dropped.
    let mut insp = inspector("drop tcp any any -> any any (content:\"200 OK\"; sid:2;)\n", true);
    let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut Collect::default());
    assert_eq!(verdicts[5], DROP);
}

#[test]
fn a_packet_scoped_pass_passes_only_its_packet() {
    // `pass` on packet data alone (a flags/flow rule) lets its packet through; the IP-only
    // drop still acts on the next packet it inspects.
    let rules = "pass tcp any any -> any any (flow:not_established; sid:1;)\n\
                 drop tcp any any -> any any (content:\"evil\"; sid:2;)\n";
    let mut insp = inspector(rules, true);
    let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut Collect::default());
    assert_eq!(verdicts[..3], [PASS; 3]);
    assert_eq!(verdicts[REQUEST_PACKET], DROP);
}

#[test]
fn one_drop_event_per_packet_even_when_several_runs_block_it() {
    // The stream run and the transaction run of the request segment both match.
    let rules = "drop tcp any any -> any 80 (content:\"/evil/\"; sid:1;)\n\
                 drop http any any -> any any (http.uri; content:\"/evil/\"; sid:2;)\n";
    let mut insp = inspector(rules, true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &http_exchange(REQUEST), &mut sink);
    assert_eq!(verdicts[REQUEST_PACKET], DROP);
    let on_request: Vec<_> = drops(&sink).into_iter().filter(|(n, _)| *n == 4).collect();
    assert_eq!(on_request, [(4, "rules")]);
    assert_eq!(alerts(&sink).len(), 2);
}

fn inspector_with(rules: &str, cfg: &DetectConfig) -> Inspector {
    let load = load_rules_str("t.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    let (engine, _) = DetectEngine::build(load.rules, cfg).expect("build");
    let mut settings = InspectSettings::from_engine(&EngineSettings { midstream: true, ..Default::default() }, 1, true);
    settings.detect = Some(Arc::new(engine));
    Inspector::new(&settings)
}

#[test]
fn action_order_can_put_drop_before_pass() {
    let rules = "pass udp any any -> any any (content:\"evil\"; sid:1;)\n\
                 drop udp any any -> any any (content:\"evil\"; sid:2;)\n";
    let datagrams = [udp(b"evil")];
    let mut insp = inspector_with(rules, &DetectConfig::default());
    assert_eq!(feed(&mut insp, &datagrams, &mut Collect::default()), [PASS], "default: pass first");
    let order = ActionOrder::parse(&["drop", "pass", "reject", "alert"]).expect("order");
    let mut insp = inspector_with(rules, &DetectConfig { action_order: order, ..DetectConfig::default() });
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &datagrams, &mut sink), [DROP], "drop first");
    assert_eq!(alerts(&sink), [(2, 1, true)]);
    assert!(ActionOrder::parse(&["drop", "pass", "alert"]).is_err(), "all four classes");
    assert!(ActionOrder::parse(&["drop", "pass", "alert", "drop"]).is_err(), "each once");
    assert!(ActionOrder::parse(&["drop", "pass", "alert", "deny"]).is_err(), "known names");
}

#[test]
fn a_drop_past_packet_alert_max_still_drops() {
    let rules = "alert udp any any -> any any (content:\"e\"; sid:1;)\n\
                 alert udp any any -> any any (content:\"v\"; sid:2;)\n\
                 drop udp any any -> any any (content:\"evil\"; sid:3;)\n";
    let order = ActionOrder::parse(&["alert", "drop", "pass", "reject"]).expect("order");
    let cfg = DetectConfig { action_order: order, packet_alert_max: 2, ..DetectConfig::default() };
    let mut insp = inspector_with(rules, &cfg);
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &[udp(b"evil")], &mut sink), [DROP]);
    assert_eq!(alerts(&sink).len(), 2, "the drop is not logged as an alert");
    assert_eq!(drops(&sink), [(1, "rules")]);
}
