//! The inspector's contract with its caller: the verdict it returns per packet and the
//! typed events it hands to the sink.

use super::*;
use crate::detect::engine::{DetectConfig, DetectEngine};
use crate::detect::rule::{load_rules_str, RuleVars};
use crate::packet::{LinkType, PacketMeta, PacketRef, Timestamp};
use etherparse::PacketBuilder;

const CLIENT: [u8; 4] = [192, 168, 1, 10];
const SERVER: [u8; 4] = [10, 0, 0, 80];

/// What a sink saw, copied out of the borrowed events.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Seen {
    Alert { sid: u32, pcap_cnt: u64, blocked: bool, in_stream: bool },
    Drop { pcap_cnt: u64, reason: &'static str },
    Flow { alerted: bool, pkts: u64 },
    Tx { id: u64, pcap_cnt: u64, proto: &'static str, detail: String },
    Anomaly { pcap_cnt: u64, events: Vec<&'static str> },
    AppAnomaly { pcap_cnt: u64, tx: u64, event: &'static str },
}

#[derive(Default)]
pub(super) struct Collect(pub(super) Vec<(u64, Seen)>);

impl EventSink for Collect {
    fn event(&mut self, key: u64, event: &Event<'_>) {
        let seen = match event {
            Event::Alert(a) => {
                Seen::Alert { sid: a.alert.sid, pcap_cnt: a.pcap_cnt, blocked: a.blocked, in_stream: a.held.is_some() }
            }
            Event::Drop(d) => Seen::Drop { pcap_cnt: d.wire.meta.pcap_cnt, reason: d.reason },
            Event::Flow(rec) => Seen::Flow { alerted: rec.ext.alerted, pkts: rec.pkts_toserver + rec.pkts_toclient },
            Event::Transaction(t) => Seen::Tx {
                id: t.tx.id(),
                pcap_cnt: t.pcap_cnt,
                proto: t.proto.map_or("?", |p| p.name()),
                detail: match t.tx {
                    AppTx::Http(h) => format!("{} {:?}", String::from_utf8_lossy(&h.uri_raw), h.status_code),
                    AppTx::Dns(d) => format!("dns {}", d.tx_id),
                    AppTx::Tls(_) => "tls".into(),
                    AppTx::Ssh(_) => "ssh".into(),
                    AppTx::Smtp(v) => format!("smtp {}", v.tx.id),
                    AppTx::Http2(t) => format!("http2 {}", t.stream_id),
                },
            },
            Event::Anomaly(a) => {
                Seen::Anomaly { pcap_cnt: a.meta.pcap_cnt, events: a.decoded.events.iter().map(|e| e.name()).collect() }
            }
            Event::AppAnomaly(a) => Seen::AppAnomaly { pcap_cnt: a.pcap_cnt, tx: a.anomaly.tx, event: a.anomaly.event },
        };
        self.0.push((key, seen));
    }
}

pub(super) fn inspector(rules: &str, ips: bool) -> Inspector {
    let load = load_rules_str("t.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    let (engine, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    let mut settings = InspectSettings::from_engine(&EngineSettings { midstream: true, ..Default::default() }, 1, ips);
    settings.detect = Some(Arc::new(engine));
    Inspector::new(&settings)
}

/// A TCP segment between CLIENT and SERVER (flags: SYN, SYN|ACK, ACK|PSH ...).
fn tcp(to_server: bool, seq: u32, ack: u32, syn: bool, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
    let b = if to_server {
        b.ipv4(CLIENT, SERVER, 64).tcp(40000, 80, seq, 64000)
    } else {
        b.ipv4(SERVER, CLIENT, 64).tcp(80, 40000, seq, 64000)
    };
    let b = if syn { b.syn() } else { b };
    let b = if ack != 0 { b.ack(ack) } else { b };
    let b = if payload.is_empty() { b } else { b.psh() };
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("build");
    out
}

pub(super) fn udp(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(CLIENT, SERVER, 64)
        .udp(40000, 9999)
        .write(&mut out, payload)
        .expect("build");
    out
}

/// The (sid, pcap_cnt) of every alert the sink saw, in order.
fn alerts_of(sink: &Collect) -> Vec<(u32, u64)> {
    sink.0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Alert { sid, pcap_cnt, .. } => Some((*sid, *pcap_cnt)),
            _ => None,
        })
        .collect()
}

/// Feeds `frames` (numbered from 1, one second apart) and returns each packet's verdict.
pub(super) fn feed(insp: &mut Inspector, frames: &[Vec<u8>], sink: &mut Collect) -> Vec<Verdict> {
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let n = i as u64 + 1;
            let meta =
                PacketMeta::standalone(n, Timestamp(n * 1_000_000_000), LinkType::Ethernet, f.len() as u32, f.len());
            insp.packet(PacketRef { meta: &meta, data: f }, sink)
        })
        .collect()
}

/// A handshake and then two data segments to the server.
fn session(payload: &[u8]) -> Vec<Vec<u8>> {
    vec![
        tcp(true, 100, 0, true, b""),
        tcp(false, 500, 101, true, b""),
        tcp(true, 101, 501, false, b""),
        tcp(true, 101, 501, false, payload),
        tcp(true, 101 + payload.len() as u32, 501, false, b"more"),
    ]
}

#[test]
fn ids_mode_passes_everything_and_reports_alerts() {
    let mut insp = inspector("drop udp any any -> any any (content:\"evil\"; sid:1;)\n", false);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"an evil datagram"), udp(b"fine")], &mut sink);
    assert_eq!(verdicts, [Verdict::Pass, Verdict::Pass]);
    insp.finish(&mut sink);
    let seen: Vec<&Seen> = sink.0.iter().map(|(_, s)| s).collect();
    assert_eq!(
        seen,
        [
            &Seen::Alert { sid: 1, pcap_cnt: 1, blocked: false, in_stream: false },
            &Seen::Flow { alerted: true, pkts: 2 }
        ]
    );
    assert_eq!(sink.0[0].0, packet_key(1), "keyed by the packet that raised it");
    assert_eq!(sink.0[1].0, SHUTDOWN_KEY);
}

#[test]
fn drop_rule_on_a_datagram_drops_that_datagram() {
    // A rule on packet data acts on its packet only (Suricata's action scope; what drops
    // whole flows is in ips_tests.rs).
    let mut insp = inspector("drop udp any any -> any any (content:\"evil\"; sid:1;)\n", true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"fine"), udp(b"an evil datagram"), udp(b"fine again")], &mut sink);
    assert_eq!(verdicts, [Verdict::Pass, Verdict::Drop, Verdict::Pass]);
    let seen: Vec<&Seen> = sink.0.iter().map(|(_, s)| s).collect();
    assert_eq!(
        seen,
        [
            &Seen::Alert { sid: 1, pcap_cnt: 2, blocked: true, in_stream: false },
            &Seen::Drop { pcap_cnt: 2, reason: "rules" },
        ]
    );
    assert_eq!(insp.counters().get("ips.blocked"), Some(1));
}

#[test]
fn reject_rule_asks_for_a_tcp_reset_to_the_source() {
    let mut insp = inspector("reject tcp any any -> any 80 (content:\"evil\"; sid:7;)\n", true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &session(b"GET /evil HTTP/1.0\r\n\r\n"), &mut sink);
    let reset = Verdict::Reject(Reject { reply: RejectReply::TcpReset, to: RejectTarget::Source });
    assert_eq!(verdicts[..3], [Verdict::Pass; 3], "the handshake passes");
    assert_eq!(verdicts[3], reset, "the matching segment is rejected");
    assert_eq!(verdicts[4], Verdict::Drop, "the rest of the flow is dropped without another reply");
}

#[test]
fn rejectboth_on_udp_asks_for_icmp_both_ways() {
    let mut insp = inspector("rejectboth udp any any -> any any (content:\"evil\"; sid:8;)\n", true);
    let verdicts = feed(&mut insp, &[udp(b"evil")], &mut Collect::default());
    assert_eq!(verdicts, [Verdict::Reject(Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Both })]);
}

#[test]
fn stream_matches_carry_the_held_stream_and_flow_end_is_reported() {
    let mut insp = inspector("alert tcp any any -> any 80 (flow:to_server; content:\"GET /x\"; sid:2;)\n", false);
    let mut sink = Collect::default();
    feed(&mut insp, &session(b"GET /x HTTP/1.0\r\n\r\n"), &mut sink);
    insp.finish(&mut sink);
    let alerts: Vec<&Seen> = sink.0.iter().map(|(_, s)| s).filter(|s| matches!(s, Seen::Alert { .. })).collect();
    assert_eq!(alerts.len(), 1, "{:?}", sink.0);
    assert!(matches!(alerts[0], Seen::Alert { sid: 2, in_stream: true, blocked: false, .. }), "{:?}", alerts[0]);
    assert!(
        matches!(sink.0.last(), Some((SHUTDOWN_KEY, Seen::Flow { alerted: true, pkts: 5 }))),
        "{:?}",
        sink.0.last()
    );
}

/// Feeds one HTTP/1.1 session with two requests, the second never answered.
fn http_session() -> Vec<Vec<u8>> {
    let req1 = b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n";
    let resp1 = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let req2 = b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n";
    let (c, s) = (101u32, 501u32);
    vec![
        tcp(true, 100, 0, true, b""),
        tcp(false, 500, 101, true, b""),
        tcp(true, c, s, false, b""),
        tcp(true, c, s, false, req1),
        tcp(false, s, c + req1.len() as u32, false, resp1),
        tcp(true, c + req1.len() as u32, s + resp1.len() as u32, false, req2),
        tcp(false, s + resp1.len() as u32, c + (req1.len() + req2.len()) as u32, false, b""),
    ]
}

#[test]
fn a_complete_http_message_releases_its_raw_stream_on_the_next_packet() {
    // Both messages are far smaller than a stream chunk: without the parser's trigger they
    // would be inspected only at flow end (pcap_cnt 0).
    let rules = "alert tcp any any -> any any (flow:to_server; content:\"GET /one\"; sid:1;)
alert tcp any any -> any any (flow:to_client; content:\"200 OK\"; sid:2;)\n";
    let mut insp = inspector(rules, false);
    let mut sink = Collect::default();
    feed(&mut insp, &http_session(), &mut sink);
    insp.finish(&mut sink);
    let alerts = alerts_of(&sink);
    // The request is acked by packet 5 and inspected with the client's next packet (6);
    // the response is acked by packet 6 and inspected with the server's next packet (7).
    assert_eq!(alerts, [(1, 6), (2, 7)], "{:?}", sink.0);
}

#[test]
fn transactions_are_reported_once_when_done_and_open_ones_at_flow_end() {
    let mut insp = inspector("alert http any any -> any any (http.uri; content:\"/nothing\"; sid:3;)\n", false);
    let mut sink = Collect::default();
    feed(&mut insp, &http_session(), &mut sink);
    insp.finish(&mut sink);
    let txs: Vec<&Seen> = sink.0.iter().map(|(_, s)| s).filter(|s| matches!(s, Seen::Tx { .. })).collect();
    assert_eq!(txs.len(), 2, "{:?}", sink.0);
    // IDS mode: the response is parsed once the client acks it (packet 6).
    assert!(
        matches!(txs[0], Seen::Tx { id: 0, proto: "http", detail, .. } if detail == "/one Some(200)"),
        "{:?}",
        txs[0]
    );
    assert!(
        matches!(txs[1], Seen::Tx { id: 1, pcap_cnt: 0, proto: "http", detail, .. } if detail == "/two None"),
        "{:?}",
        txs[1]
    );
    let last_two: Vec<&Seen> = sink.0.iter().rev().take(2).map(|(_, s)| s).collect();
    assert!(
        matches!(last_two[0], Seen::Flow { .. }) && matches!(last_two[1], Seen::Tx { id: 1, .. }),
        "open tx reported before its flow ends"
    );
}

/// A TCP flow holds no reassembly state (nothing charged to `stream.memcap`, `tcp.memuse`)
/// while it carries no payload: a SYN flood costs only flow-table slots. The first payload
/// creates it and stream detection works as with state from the first packet.
#[test]
fn tcp_stream_state_is_created_with_the_first_payload() {
    let mut insp = inspector("alert tcp any any -> any any (content:\"evil\"; sid:1;)\n", false);
    let mut sink = Collect::default();
    let mut frames = session(b"an evil payload");
    // The server acknowledges everything, so the data is inspected before the flow ends.
    frames.push(tcp(false, 501, 101 + 15 + 4, false, b""));
    let mut memuse = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let n = i as u64 + 1;
        let meta = PacketMeta::standalone(n, Timestamp(n * 1_000_000_000), LinkType::Ethernet, f.len() as u32, f.len());
        insp.packet(PacketRef { meta: &meta, data: f }, &mut sink);
        memuse.push(insp.counters().get("tcp.memuse").unwrap_or(0));
    }
    assert_eq!(memuse[..3], [0, 0, 0], "handshake packets create no stream state");
    assert!(memuse[3] > 0, "the first payload creates and charges it: {memuse:?}");
    insp.finish(&mut sink);
    assert!(
        sink.0.iter().any(|(_, s)| matches!(s, Seen::Alert { sid: 1, .. })),
        "stream content still matches: {:?}",
        sink.0
    );
}

/// Decoder anomalies are reported only when asked for (eve `anomaly` with `decode: yes`),
/// once per packet, with every event of the packet.
#[test]
fn decoder_anomalies_are_reported_when_asked_for() {
    // A UDP datagram whose IPv4 total length runs past the captured bytes.
    let mut broken = udp(b"hello");
    broken[16..18].copy_from_slice(&500u16.to_be_bytes());
    let frames = vec![udp(b"fine"), broken];
    for on in [false, true] {
        let mut settings = InspectSettings::from_engine(&EngineSettings::default(), 1, false);
        settings.log_decode_anomalies = on;
        let mut insp = Inspector::new(&settings);
        let mut sink = Collect::default();
        feed(&mut insp, &frames, &mut sink);
        let anomalies: Vec<_> = sink
            .0
            .iter()
            .filter_map(|(_, s)| match s {
                Seen::Anomaly { pcap_cnt, events } => Some((*pcap_cnt, events.clone())),
                _ => None,
            })
            .collect();
        if on {
            assert_eq!(anomalies, vec![(2, vec!["ipv4.trunc_pkt"])]);
        } else {
            assert!(anomalies.is_empty());
        }
    }
}

/// A DNS query for "a." (type A) from CLIENT to SERVER port 53 with header `flags`.
fn dns_query(flags: u16) -> Vec<u8> {
    let mut msg = vec![0x12, 0x34];
    msg.extend_from_slice(&flags.to_be_bytes());
    msg.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1]);
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(CLIENT, SERVER, 64)
        .udp(40001, 53)
        .write(&mut out, &msg)
        .expect("build");
    out
}

#[test]
fn app_layer_event_matches_the_transaction_that_raised_it() {
    let rules = "alert dns any any -> any any (app-layer-event:dns.z_flag_set; sid:1;)
alert dns any any -> any any (app-layer-event:dns.invalid_opcode; sid:2;)
alert http any any -> any any (app-layer-event:http.request_line_missing_protocol; sid:3;)\n";
    let mut insp = inspector(rules, false);
    let mut sink = Collect::default();
    // A plain query, one with the reserved Z bit (0x0040) set, one with opcode 9.
    feed(&mut insp, &[dns_query(0x0100), dns_query(0x0140), dns_query(0x4900)], &mut sink);
    insp.finish(&mut sink);
    let alerts = alerts_of(&sink);
    assert_eq!(alerts, [(1, 2), (2, 3)], "{:?}", sink.0);
}

/// TCP Fast Open: the SYN carries the request and the SYN/ACK acknowledges it. As in
/// Suricata (whose SYN_SENT state accepts a SYN/ACK without reassembly) the request
/// reaches the app layer with the server's next packet, not with the SYN/ACK, so an
/// `alert http` rule without payload first sees HTTP on the client's packet after that.
#[test]
fn syn_ack_does_not_hand_fast_open_data_to_the_app_layer() {
    let mut insp = inspector("alert http any any -> any any (flow:to_server; sid:4;)\n", false);
    let mut sink = Collect::default();
    let req = b"GET / HTTP/1.0\r\n\r\n";
    let c = 101 + req.len() as u32;
    let frames = vec![
        tcp(true, 100, 0, true, req),
        tcp(false, 500, c, true, b""),
        tcp(true, c, 501, false, b""),
        tcp(false, 501, c, false, b""),
        tcp(true, c, 501, false, b""),
    ];
    feed(&mut insp, &frames, &mut sink);
    let alerts: Vec<u64> = sink
        .0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Alert { sid: 4, pcap_cnt, .. } => Some(*pcap_cnt),
            _ => None,
        })
        .collect();
    assert_eq!(alerts, [5], "{:?}", sink.0);
}

/// At flow end a rule with payload and transaction keywords reads the stream with every
/// transaction, not only the first: the second request's URI and the stream that holds it
/// match together (Suricata's detect-pcre-03: one segment with two requests).
#[test]
fn flow_end_gives_the_stream_to_every_transaction() {
    let rules = "alert tcp any any -> any any (content:\"GET /two/\"; http.uri; content:\"/two/\"; sid:9;)\n\
                 alert tcp any any -> any any (content:\"GET /one/\"; http.uri; content:\"/nope/\"; sid:10;)\n";
    let mut insp = inspector(rules, false);
    let mut sink = Collect::default();
    let reqs = b"GET /one/ HTTP/1.1\r\nHost: a\r\n\r\nGET /two/ HTTP/1.1\r\nHost: b\r\n\r\n";
    feed(&mut insp, &[tcp(true, 1000, 2000, false, reqs)], &mut sink);
    insp.finish(&mut sink);
    let alerts = alerts_of(&sink);
    assert_eq!(alerts, [(9, 0)], "{:?}", sink.0);
}
