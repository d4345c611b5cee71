//! Flow bypass in the inspector: what triggers it (the `bypass` keyword, `stream.bypass`
//! at the reassembly depth, TLS past its handshake), local and capture modes, the
//! `bypassed` timeout and the `flow_bypassed.*` counters; and the encrypted payload that
//! `track-only` no longer inspects.

use super::tests::{feed, udp, Collect, Seen};
use super::*;
use crate::applayer::tls::tests::{client_stream, server_stream};
use crate::detect::engine::{DetectConfig, DetectEngine};
use crate::detect::rule::{load_rules_str, RuleVars};
use crate::packet::{LinkType, PacketMeta, Timestamp};
use etherparse::PacketBuilder;

const CLIENT: [u8; 4] = [192, 168, 1, 10];
const SERVER: [u8; 4] = [10, 0, 0, 80];

fn inspector_with(rules: &str, engine: EngineSettings, capture: bool) -> Inspector {
    let load = load_rules_str("t.rules", rules, &RuleVars::default());
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    let (detect, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
    let mut settings = InspectSettings::from_engine(&engine, 1, false);
    settings.detect = Some(Arc::new(detect));
    settings.bypass.capture = capture;
    Inspector::new(&settings)
}

/// The flow records a sink got: (bypass mode, kernel counts, packets user space saw).
#[derive(Default)]
struct Flows(Vec<(BypassMode, BypassCounts, u64, &'static str)>, Vec<u32>);

impl EventSink for Flows {
    fn event(&mut self, _key: u64, event: &Event<'_>) {
        match event {
            Event::Flow(rec) => self.0.push((
                rec.ext.bypass.mode,
                rec.ext.bypass.kernel,
                rec.pkts_toserver + rec.pkts_toclient,
                rec.reason.as_str(),
            )),
            Event::Alert(a) => self.1.push(a.alert.sid),
            _ => {}
        }
    }
}

fn feed_at(insp: &mut Inspector, frames: &[Vec<u8>], sink: &mut dyn EventSink) {
    for (i, f) in frames.iter().enumerate() {
        let n = i as u64 + 1;
        let meta = PacketMeta::standalone(n, Timestamp(n * 1_000_000_000), LinkType::Ethernet, f.len() as u32, f.len());
        insp.packet(PacketRef { meta: &meta, data: f }, sink);
    }
}

const KEYWORD_RULES: &str = "alert udp any any -> any any (msg:\"big download\"; content:\"start\"; bypass; sid:1;)\n\
                             alert udp any any -> any any (msg:\"evil\"; content:\"evil\"; sid:2;)\n";

#[test]
fn bypass_keyword_ends_inspection_locally_and_counts_what_it_skips() {
    let mut insp = inspector_with(KEYWORD_RULES, EngineSettings::default(), false);
    let mut sink = Flows::default();
    let frames = [udp(b"start"), udp(b"evil"), udp(b"evil again")];
    feed_at(&mut insp, &frames, &mut sink);
    assert_eq!(sink.1, vec![1], "the bypass rule alerts; nothing after it is inspected");
    assert!(!insp.has_bypass_requests(), "no capture bypass without the XDP layer");
    let c = insp.counters();
    assert_eq!(c.get("picket.bypass.rule"), Some(1));
    assert_eq!(c.get("flow_bypassed.local_pkts"), Some(2));
    assert_eq!(c.get("flow_bypassed.local_bytes"), Some((frames[1].len() + frames[2].len()) as u64));
    insp.finish(&mut sink);
    assert_eq!(sink.0, vec![(BypassMode::Local, BypassCounts::default(), 3, "shutdown")]);
}

#[test]
fn capture_bypass_is_requested_updated_and_reported_at_flow_end() {
    let mut insp = inspector_with(KEYWORD_RULES, EngineSettings::default(), true);
    let mut sink = Flows::default();
    feed_at(&mut insp, &[udp(b"start")], &mut sink);
    let requests: Vec<BypassRequest> = insp.take_bypass_requests().collect();
    assert_eq!(requests.len(), 1);
    let r = requests[0];
    assert!(r.is_v4 && r.proto == 17);
    assert_eq!((&r.client.0[12..], r.client.1, &r.server.0[12..], r.server.1), (&CLIENT[..], 40000, &SERVER[..], 9999));
    let kernel =
        BypassCounts { pkts_toserver: 1000, pkts_toclient: 10, bytes_toserver: 1_500_000, bytes_toclient: 600 };
    insp.bypass_update(r.handle, kernel, Some(Timestamp(1_500_000_000)));
    // A packet that still reaches user space (before the kernel took the flow).
    feed_at(&mut insp, &[udp(b"start"), udp(b"evil")], &mut sink);
    assert_eq!(sink.1, vec![1], "packets of a capture-bypassed flow are not inspected");
    assert_eq!(insp.counters().get("flow_bypassed.local_capture_pkts"), Some(2));
    insp.finish(&mut sink);
    assert_eq!(sink.0, vec![(BypassMode::Capture, kernel, 3, "shutdown")]);
    let ended: Vec<u64> = insp.take_bypass_ended().collect();
    assert_eq!(ended, vec![r.flow_id], "the caller removes the kernel entries");
    let c = insp.counters();
    assert_eq!((c.get("flow_bypassed.closed"), c.get("flow_bypassed.pkts")), (Some(1), Some(1010)));
    assert_eq!(c.get("flow_bypassed.bytes"), Some(1_500_600));
}

#[test]
fn a_refused_capture_bypass_leaves_the_flow_inspected() {
    let mut insp = inspector_with(KEYWORD_RULES, EngineSettings::default(), true);
    let mut sink = Flows::default();
    feed_at(&mut insp, &[udp(b"start")], &mut sink);
    let r = insp.take_bypass_requests().next().expect("a request");
    insp.bypass_refused(r.handle);
    feed_at(&mut insp, &[udp(b"start"), udp(b"evil")], &mut sink);
    assert_eq!(sink.1, vec![1, 1, 2], "still inspected");
    assert!(!insp.has_bypass_requests(), "not offered to the capture again");
    assert!(!insp.has_bypass_requests());
    assert_eq!(insp.counters().get("picket.bypass.refused"), Some(1));
    insp.finish(&mut sink);
    assert_eq!(sink.0[0].0, BypassMode::Refused);
}

#[test]
fn bypassed_flows_end_after_the_bypassed_timeout_unless_the_kernel_sees_packets() {
    let mut insp = inspector_with(KEYWORD_RULES, EngineSettings::default(), true);
    let mut sink = Flows::default();
    feed_at(&mut insp, &[udp(b"start")], &mut sink);
    let r = insp.take_bypass_requests().next().expect("a request");
    let tick = |insp: &mut Inspector, sink: &mut Flows, secs: u64| {
        insp.clock(ClockTick { ts: Timestamp(secs * 1_000_000_000), pcap_cnt: 1 }, sink)
    };
    // UDP: established 300 s, bypassed 100 s. The kernel reports packets at 90 s...
    let active = Some(Timestamp(90_000_000_000));
    insp.bypass_update(r.handle, BypassCounts { pkts_toserver: 5, ..Default::default() }, active);
    tick(&mut insp, &mut sink, 90);
    tick(&mut insp, &mut sink, 150);
    assert!(sink.0.is_empty(), "alive: the kernel saw packets 60 s ago");
    // ...and then nothing.
    insp.bypass_update(r.handle, BypassCounts { pkts_toserver: 5, ..Default::default() }, None);
    tick(&mut insp, &mut sink, 192);
    let kernel = BypassCounts { pkts_toserver: 5, ..Default::default() };
    assert_eq!(sink.0, vec![(BypassMode::Capture, kernel, 1, "timeout")], "ended 100 s after the last activity");
}

/// A TCP segment between CLIENT:40000 and SERVER:443.
fn tcp(to_server: bool, seq: u32, ack: u32, syn: bool, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
    let b = if to_server {
        b.ipv4(CLIENT, SERVER, 64).tcp(40000, 443, seq, 64000)
    } else {
        b.ipv4(SERVER, CLIENT, 64).tcp(443, 40000, seq, 64000)
    };
    let b = if syn { b.syn() } else { b };
    let b = if ack != 0 { b.ack(ack) } else { b };
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("build");
    out
}

/// Handshake, `to_server` bytes from the client, `to_client` from the server, each acked,
/// then one more data segment each way.
fn session(to_server: &[u8], to_client: &[u8]) -> Vec<Vec<u8>> {
    let (c, s) = (101u32, 501u32);
    let (c2, s2) = (c + to_server.len() as u32, s + to_client.len() as u32);
    vec![
        tcp(true, 100, 0, true, b""),
        tcp(false, 500, 101, true, b""),
        tcp(true, c, s, false, b""),
        tcp(true, c, s, false, to_server),
        tcp(false, s, c2, false, to_client),
        tcp(true, c2, s2, false, b""),
        tcp(true, c2, s2, false, b"later client data"),
        tcp(false, s2, c2 + 17, false, b"later server data"),
    ]
}

#[test]
fn stream_bypass_at_the_reassembly_depth() {
    let rules = "alert tcp any any -> any any (msg:\"never\"; content:\"nothing-like-this\"; sid:9;)\n";
    let engine = EngineSettings { stream_bypass: true, stream_reassembly_depth: 100, ..Default::default() };
    let frames = session(&[b'a'; 50], &[b'b'; 300]);
    let mut insp = inspector_with(rules, engine.clone(), false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    let c = insp.counters();
    assert_eq!(c.get("picket.bypass.stream_depth"), Some(1));
    assert!(c.get("flow_bypassed.local_pkts").unwrap_or(0) >= 2, "{c:?}");
    // Without stream.bypass the same session is inspected to its end.
    let mut insp = inspector_with(rules, EngineSettings { stream_bypass: false, ..engine }, false);
    feed_at(&mut insp, &frames, &mut Flows::default());
    assert_eq!(insp.counters().get("picket.bypass.stream_depth"), Some(0));
    assert_eq!(insp.counters().get("flow_bypassed.local_pkts"), Some(0));
}

#[test]
fn tls_bypass_once_both_sides_encrypt() {
    let rules = "alert tls any any -> any any (msg:\"sni\"; tls.sni; content:\"nothing\"; sid:9;)\n";
    let frames = session(&client_stream(), &server_stream());
    let engine = EngineSettings { tls_encryption: EncryptionHandling::Bypass, ..Default::default() };
    let mut insp = inspector_with(rules, engine, false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    let c = insp.counters();
    assert_eq!(c.get("picket.bypass.tls"), Some(1), "{c:?}");
    assert!(c.get("flow_bypassed.local_pkts").unwrap_or(0) >= 1);
    let mut insp = inspector_with(rules, EngineSettings::default(), false);
    feed_at(&mut insp, &frames, &mut Flows::default());
    assert_eq!(insp.counters().get("picket.bypass.tls"), Some(0), "encryption-handling default: inspected");
}

/// ssh-hassh (suricata-verify): `app-layer.protocols.ssh.encryption-handling: bypass`.
#[test]
fn ssh_bypass_once_both_sides_sent_newkeys() {
    use crate::applayer::ssh::tests::side_stream;
    let rules = "alert ssh any any -> any any (msg:\"sw\"; ssh.software; content:\"nothing\"; sid:9;)\n";
    let frames = session(&side_stream("SSH-2.0-OpenSSH_7.4\r\n"), &side_stream("SSH-2.0-OpenSSH_8.0\r\n"));
    let engine = EngineSettings { ssh_encryption: EncryptionHandling::Bypass, ..Default::default() };
    let mut insp = inspector_with(rules, engine, false);
    feed_at(&mut insp, &frames, &mut Flows::default());
    let c = insp.counters();
    assert_eq!(c.get("picket.bypass.ssh"), Some(1), "{c:?}");
    assert!(c.get("flow_bypassed.local_pkts").unwrap_or(0) >= 1, "{c:?}");
    let mut insp = inspector_with(rules, EngineSettings::default(), false);
    feed_at(&mut insp, &frames, &mut Flows::default());
    assert_eq!(insp.counters().get("picket.bypass.ssh"), Some(0), "track-only: inspected");
}

/// Rules on the payload of the packets after the handshake (`later ... data`, 17 bytes
/// each): by content and by `dsize`.
const PAYLOAD_RULES: &str = "alert tcp any any -> any any (msg:\"later\"; content:\"later\"; sid:1;)\n\
                             alert tcp any any -> any any (msg:\"size\"; dsize:17; sid:2;)\n";

/// Suricata's default `encryption-handling: track-only` (see `encrypted`): once TLS
/// application data flowed, neither later packets nor the stream are inspected for
/// content, not at flow end either; `full` inspects them as before.
#[test]
fn tls_payload_is_not_inspected_once_application_data_flowed() {
    let frames = session(&client_stream(), &server_stream());
    let mut insp = inspector_with(PAYLOAD_RULES, EngineSettings::default(), false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    insp.finish(&mut sink);
    assert_eq!(sink.1, Vec::<u32>::new(), "track-only: no payload alerts");
    let c = insp.counters();
    assert_eq!(c.get("picket.encrypted.tls_flows"), Some(1), "{c:?}");
    assert_eq!(c.get("picket.encrypted.packets_without_payload"), Some(2), "{c:?}");
    assert_eq!(c.get("picket.bypass.tls"), Some(0), "tracked, not bypassed");

    let full = EngineSettings { tls_encryption: EncryptionHandling::Full, ..Default::default() };
    let mut insp = inspector_with(PAYLOAD_RULES, full, false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    insp.finish(&mut sink);
    let mut sids = sink.1.clone();
    sids.sort();
    assert_eq!(sids, vec![1, 1, 2, 2], "full: both later packets alert on content and size");
    assert_eq!(insp.counters().get("picket.encrypted.tls_flows"), Some(0));
}

/// SSH under `track-only`: once both sides sent NEWKEYS the payload is not inspected.
#[test]
fn ssh_payload_is_not_inspected_after_newkeys() {
    use crate::applayer::ssh::tests::side_stream;
    let frames = session(&side_stream("SSH-2.0-OpenSSH_7.4\r\n"), &side_stream("SSH-2.0-OpenSSH_8.0\r\n"));
    let mut insp = inspector_with(PAYLOAD_RULES, EngineSettings::default(), false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    insp.finish(&mut sink);
    assert_eq!(sink.1, Vec::<u32>::new());
    assert_eq!(insp.counters().get("picket.encrypted.ssh_flows"), Some(1));
    let full = EngineSettings { ssh_encryption: EncryptionHandling::Full, ..Default::default() };
    let mut insp = inspector_with(PAYLOAD_RULES, full, false);
    let mut sink = Flows::default();
    feed_at(&mut insp, &frames, &mut sink);
    insp.finish(&mut sink);
    assert!(sink.1.contains(&1) && sink.1.contains(&2), "{:?}", sink.1);
}

/// Under `track-only` the stream does not keep what the TLS parser passes over unseen
/// (encrypted record bodies, once it read their header): the records are counted as with
/// `full`, and parsing goes on with the next record.
#[test]
fn encrypted_record_bodies_are_not_stored_under_track_only() {
    use crate::applayer::tls::tests::record;
    use crate::applayer::tls::CONTENT_APPLICATION_DATA;
    let (to_server, to_client) = (client_stream(), server_stream());
    let mut frames = session(&to_server, &to_client);
    frames.truncate(6);
    let (c2, s2) = (101 + to_server.len() as u32, 501 + to_client.len() as u32);
    let big = record(CONTENT_APPLICATION_DATA, &[0xcd; 3000]);
    let next = record(CONTENT_APPLICATION_DATA, &[0xee; 10]);
    frames.extend([
        tcp(false, s2, c2, false, &big[..1000]),
        tcp(true, c2, s2 + 1000, false, b""),
        tcp(false, s2 + 1000, c2, false, &big[1000..2000]),
        tcp(false, s2 + 2000, c2, false, &big[2000..]),
        tcp(true, c2, s2 + 3005, false, b""),
        tcp(false, s2 + 3005, c2, false, &next),
        tcp(true, c2, s2 + 3020, false, b""),
    ]);
    let counters = |handling: EncryptionHandling| {
        let engine = EngineSettings { tls_encryption: handling, ..Default::default() };
        let mut insp = inspector_with(PAYLOAD_RULES, engine, false);
        feed_at(&mut insp, &frames, &mut Flows::default());
        insp.counters()
    };
    let (tracked, full) = (counters(EncryptionHandling::TrackOnly), counters(EncryptionHandling::Full));
    let get = |c: &CounterSet, k: &str| c.get(k).unwrap_or_else(|| panic!("{k} in {c:?}"));
    assert_eq!(get(&tracked, "tcp.reassembly_skipped_segments"), 1, "{tracked:?}");
    assert_eq!(get(&full, "tcp.reassembly_skipped_segments"), 0);
    for key in ["app_layer.tls.encrypted_records", "app_layer.tls.invalid_records", "tcp.reassembly_gap"] {
        assert_eq!(get(&tracked, key), get(&full, key), "{key}");
    }
    assert_eq!(get(&tracked, "app_layer.tls.encrypted_records"), 5, "Finished x2, three application data");
}

#[test]
fn the_collecting_sink_still_sees_bypassed_flows_end() {
    let mut insp = inspector_with(KEYWORD_RULES, EngineSettings::default(), false);
    let mut sink = Collect::default();
    feed(&mut insp, &[udp(b"start"), udp(b"x")], &mut sink);
    insp.finish(&mut sink);
    assert!(matches!(sink.0.last(), Some((_, Seen::Flow { alerted: true, pkts: 2 }))), "{:?}", sink.0);
}
