//! DNS end to end through the inspection core and the eve writer: crafted packets in, eve
//! lines out.

use etherparse::PacketBuilder;
use picket::config::{EngineSettings, StreamInline};
use picket::detect::engine::{DetectConfig, DetectEngine};
use picket::detect::rule::{load_rules_str, RuleVars};
use picket::inspect::{InspectSettings, Inspector};
use picket::output::merge::Sink;
use picket::output::sink::LogSink;
use picket::packet::{LinkType, PacketMeta, PacketRef, Timestamp};
use serde_json::Value;
use std::sync::Arc;

const CLIENT: [u8; 4] = [192, 168, 1, 10];
const SERVER: [u8; 4] = [10, 0, 0, 53];

fn inspector(rules: &str, inline: bool) -> Inspector {
    let load = load_rules_str("t.rules", rules, &RuleVars::default());
    assert!(
        load.errors.is_empty() && load.unsupported_rules.is_empty(),
        "{:?} {:?}",
        load.errors,
        load.unsupported_rules
    );
    let (engine, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    // Inline with midstream pickup: TCP data is released on its own packet.
    let engine_settings = EngineSettings {
        midstream: inline,
        stream_inline: if inline { StreamInline::Yes } else { StreamInline::No },
        ..EngineSettings::default()
    };
    let mut settings = InspectSettings::from_engine(&engine_settings, 1, false);
    settings.detect = Some(Arc::new(engine));
    Inspector::new(&settings)
}

fn udp(to_server: bool, client_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
    let b = if to_server {
        b.ipv4(CLIENT, SERVER, 64).udp(client_port, 53)
    } else {
        b.ipv4(SERVER, CLIENT, 64).udp(53, client_port)
    };
    b.write(&mut out, payload).expect("build");
    out
}

fn run(insp: &mut Inspector, frames: &[Vec<u8>]) -> Vec<Value> {
    let mut out = LogSink::new(Default::default());
    for (i, frame) in frames.iter().enumerate() {
        let meta = PacketMeta::standalone(
            i as u64 + 1,
            Timestamp(1_000_000_000 * (i as u64 + 1)),
            LinkType::Ethernet,
            frame.len() as u32,
            frame.len(),
        );
        insp.packet(PacketRef { meta: &meta, data: frame }, &mut out);
    }
    insp.finish(&mut out);
    out.take()
        .lines()
        .filter(|(_, sink, _)| *sink == Sink::Eve)
        .map(|(_, _, line)| serde_json::from_slice(line).expect("eve json"))
        .collect()
}

fn alerts(events: &[Value]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter(|e| e["event_type"] == "alert")
        .map(|e| (e["pcap_cnt"].as_u64().unwrap_or(0), e["alert"]["signature_id"].as_u64().unwrap_or(0)))
        .collect()
}

const RULES: &str = "alert dns any any -> any any (dns.query; content:\"oisf\"; sid:1;)\n\
    alert dns any any -> any any (dns.response.rrname; content:\"ns1.dns\"; sid:2;)\n\
    alert dns any any -> any any (dns.opcode:4; sid:3;)\n\
    alert dns any any -> any any (dns.rcode:3; flow:to_client; sid:4;)\n\
    alert dns any any -> any any (dns.queries.rrname; content:\"www.oisf\"; sid:5;)\n";

#[test]
fn udp_request_and_response_inspected_on_their_own_packets() {
    let mut insp = inspector(RULES, false);
    let frames = [
        udp(true, 40000, &request(9, 0, &["www.oisf.net"])),
        udp(false, 40000, &response(9, "www.oisf.net", "web.oisf.net", "ns1.dns.example")),
        udp(true, 40000, &request(10, 4, &["example.com"])),
    ];
    let events = run(&mut insp, &frames);
    assert_eq!(alerts(&events), [(1, 1), (1, 5), (2, 2), (2, 4), (2, 5), (3, 3)]);
    let a = events.iter().find(|e| e["alert"]["signature_id"] == 2).expect("sid 2");
    assert_eq!(a["app_proto"], "dns");
    assert_eq!(a["tx_id"], 1);
    assert_eq!(a["direction"], "to_client");
    assert_eq!(a["dns"]["type"], "response");
    assert_eq!(a["dns"]["rcode"], "NXDOMAIN");
    assert_eq!(a["dns"]["answers"][0]["rdata"], "web.oisf.net");
    let flow = events.iter().find(|e| e["event_type"] == "flow").expect("flow event");
    assert_eq!(flow["app_proto"], "dns");
    let counters: std::collections::HashMap<String, u64> =
        insp.counters().iter().map(|(n, v)| (n.to_string(), v)).collect();
    assert_eq!(counters.get("app_layer.flow.dns_udp"), Some(&1));
    assert_eq!(counters.get("app_layer.tx.dns_udp"), Some(&3));
}

#[test]
fn udp_off_the_dns_port_and_garbage_are_not_dns() {
    let mut insp = inspector(RULES, false);
    let mut off_port = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(CLIENT, SERVER, 64)
        .udp(40000, 5300)
        .write(&mut off_port, &request(1, 0, &["www.oisf.net"]))
        .expect("build");
    let events = run(
        &mut insp,
        &[off_port, udp(true, 40001, b"\x00\x01not dns at all"), udp(true, 40001, &request(2, 0, &["www.oisf.net"]))],
    );
    assert!(alerts(&events).is_empty(), "{:?}", alerts(&events));
    // Off every detection port: no protocol; DNS's port with garbage: detection failed.
    let protos: Vec<_> = events.iter().filter(|e| e["event_type"] == "flow").map(|f| f["app_proto"].clone()).collect();
    assert!(protos.iter().all(|p| p.is_null() || p == "failed"), "{protos:?}");
}

#[test]
fn tcp_messages_inspected_when_released_inline() {
    let mut insp = inspector(RULES, true);
    let mut frames = Vec::new();
    let mut seq = 1000u32;
    for id in [1u16, 2] {
        let m = request(id, 0, &["www.oisf.net"]);
        let mut framed = (m.len() as u16).to_be_bytes().to_vec();
        framed.extend(m);
        let mut out = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4(CLIENT, SERVER, 64)
            .tcp(40000, 53, seq, 64000)
            .ack(1)
            .psh()
            .write(&mut out, &framed)
            .expect("build");
        seq += framed.len() as u32;
        frames.push(out);
    }
    let events = run(&mut insp, &frames);
    // Each request is its own transaction and alerts once per rule.
    assert_eq!(alerts(&events), [(1, 1), (1, 5), (2, 1), (2, 5)]);
    let tx_ids: Vec<u64> =
        events.iter().filter(|e| e["alert"]["signature_id"] == 1).map(|e| e["tx_id"].as_u64().unwrap_or(99)).collect();
    assert_eq!(tx_ids, [0, 1]);
    let counters: std::collections::HashMap<String, u64> =
        insp.counters().iter().map(|(n, v)| (n.to_string(), v)).collect();
    assert_eq!(counters.get("app_layer.flow.dns_tcp"), Some(&1));
    assert_eq!(counters.get("app_layer.tx.dns_tcp"), Some(&2));
}

fn header(id: u16, flags: u16, qd: u16, an: u16, ns: u16) -> Vec<u8> {
    [id, flags, qd, an, ns, 0].iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A request for `names` (type A) with opcode `opcode`.
fn request(id: u16, opcode: u16, names: &[&str]) -> Vec<u8> {
    let mut m = header(id, 0x0100 | (opcode << 11), names.len() as u16, 0, 0);
    for n in names {
        m.extend(labels(n));
        m.extend([0, 1, 0, 1]);
    }
    m
}

/// A response to `qname`: a CNAME answer to `cname` and an NS authority `ns`.
fn response(id: u16, qname: &str, cname: &str, ns: &str) -> Vec<u8> {
    let mut m = header(id, 0x8183, 1, 1, 1);
    m.extend(labels(qname));
    m.extend([0, 1, 0, 1]);
    for (rrtype, target) in [(5u8, cname), (2, ns)] {
        m.extend([0xc0, 12, 0, rrtype, 0, 1, 0, 0, 0, 60]);
        let rdata = labels(target);
        m.extend((rdata.len() as u16).to_be_bytes());
        m.extend(rdata);
    }
    m
}

/// A dotted name as uncompressed labels.
fn labels(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}
