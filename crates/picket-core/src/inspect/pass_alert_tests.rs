//! Pass and drop semantics: a `pass` rule with the `alert` keyword (Suricata 8) passes the
//! packet and is logged as an alert ("allowed"), without the keyword a pass is silent; a
//! dropped flow keeps the TCP state it had at the drop.

use super::tests::{feed, inspector, udp, Collect, Seen};
use super::*;
use crate::packet::{LinkType, PacketMeta, PacketRef, Timestamp};

const RULES: &str = "pass udp any any -> any any (content:\"ok\"; alert; sid:2;)\n\
                     drop udp any any -> any any (content:\"ok\"; sid:3;)\n";

fn logged(sink: &Collect) -> Vec<(u32, bool)> {
    sink.0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Alert { sid, blocked, .. } => Some((*sid, *blocked)),
            Seen::Drop { .. } => Some((0, true)),
            _ => None,
        })
        .collect()
}

#[test]
fn pass_with_alert_keyword_is_logged_and_passes() {
    let mut insp = inspector(RULES, true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"ok")], &mut sink);
    assert_eq!(verdicts, [Verdict::Pass], "the pass rule wins over the drop");
    assert_eq!(logged(&sink), [(2, false)], "one alert, of the pass rule, and no drop");

    let mut insp = inspector(&RULES.replace(" alert;", ""), true);
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &[udp(b"ok")], &mut sink), [Verdict::Pass]);
    assert!(logged(&sink).is_empty(), "a plain pass logs nothing: {:?}", logged(&sink));
}

/// Keeps the TCP state of each flow record.
#[derive(Default)]
struct FlowStates(Vec<crate::flow::TcpState>);

impl EventSink for FlowStates {
    fn event(&mut self, _key: u64, event: &Event<'_>) {
        if let Event::Flow(rec) = event {
            self.0.extend(rec.tcp.map(|t| t.state));
        }
    }
}

#[test]
fn a_dropped_flow_keeps_its_tcp_state() {
    use etherparse::PacketBuilder;
    let segment = |to_server: bool, seq: u32, ack: Option<u32>, syn: bool| {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
        let b = if to_server {
            b.ipv4([192, 168, 1, 10], [10, 0, 0, 1], 64).tcp(40000, 443, seq, 64000)
        } else {
            b.ipv4([10, 0, 0, 1], [192, 168, 1, 10], 64).tcp(443, 40000, seq, 64000)
        };
        let b = if syn { b.syn() } else { b };
        let b = match ack {
            Some(a) => b.ack(a),
            None => b,
        };
        let mut out = Vec::new();
        b.write(&mut out, b"").expect("build");
        out
    };
    let handshake =
        [segment(true, 100, None, true), segment(false, 500, Some(101), true), segment(true, 101, Some(501), false)];
    // Suricata: the SYN is dropped by the rule after the stream saw it; the SYN-ACK and ACK
    // are dropped with the flow and no longer move its session: it stays in syn_sent.
    for (rule, state) in [
        ("drop ip 192.168.1.10 any -> any any (sid:1;)\n", crate::flow::TcpState::SynSent),
        ("alert ip 192.168.1.10 any -> any any (sid:1;)\n", crate::flow::TcpState::Established),
    ] {
        let mut insp = inspector(rule, true);
        let mut sink = FlowStates::default();
        let frames: Vec<_> = handshake.to_vec();
        for (i, f) in frames.iter().enumerate() {
            let n = i as u64 + 1;
            let meta =
                PacketMeta::standalone(n, Timestamp(n * 1_000_000_000), LinkType::Ethernet, f.len() as u32, f.len());
            insp.packet(PacketRef { meta: &meta, data: f }, &mut sink);
        }
        insp.finish(&mut sink);
        assert_eq!(sink.0, [state], "{rule}");
    }
}

/// Keeps whether each flow record is of a bypassed flow, and counts alerts.
#[derive(Default)]
struct BypassSeen {
    flows: Vec<bool>,
    alerts: usize,
}

impl EventSink for BypassSeen {
    fn event(&mut self, _key: u64, event: &Event<'_>) {
        match event {
            Event::Flow(rec) => self.flows.push(rec.ext.bypass.mode.skips_inspection()),
            Event::Alert(_) => self.alerts += 1,
            _ => {}
        }
    }
}

#[test]
fn midstream_bypass_policy_bypasses_the_flow() {
    use crate::detect::engine::{DetectConfig, DetectEngine};
    use crate::detect::rule::{load_rules_str, RuleVars};
    use crate::settings::{EngineSettings, ExceptionPolicy};
    for (policy, bypassed, alerts) in [(ExceptionPolicy::Bypass, true, 0), (ExceptionPolicy::PassFlow, false, 0)] {
        let rules = "alert tcp any any -> any any (content:\"data\"; sid:1;)\n";
        let load = load_rules_str("t.rules", rules, &RuleVars::default());
        let (engine, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
        let engine_settings = EngineSettings { midstream: false, midstream_policy: Some(policy), ..Default::default() };
        let mut settings = InspectSettings::from_engine(&engine_settings, 1, false);
        settings.detect = Some(std::sync::Arc::new(engine));
        let mut insp = Inspector::new(&settings);
        let mut sink = BypassSeen::default();
        // Data of a session whose handshake was not seen.
        let mut frame = Vec::new();
        etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([192, 168, 1, 10], [10, 0, 0, 1], 64)
            .tcp(40000, 80, 7000, 64000)
            .ack(9000)
            .psh()
            .write(&mut frame, b"data")
            .expect("build");
        for n in 1..=2u64 {
            let meta = PacketMeta::standalone(
                n,
                Timestamp(n * 1_000_000_000),
                LinkType::Ethernet,
                frame.len() as u32,
                frame.len(),
            );
            assert_eq!(insp.packet(PacketRef { meta: &meta, data: &frame }, &mut sink), Verdict::Pass);
        }
        insp.finish(&mut sink);
        assert_eq!(sink.flows, [bypassed], "{policy:?}");
        assert_eq!(sink.alerts, alerts, "{policy:?}: not inspected");
    }
}
