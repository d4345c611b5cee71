//! TCP sessions picked up midstream whose first data came from the server.
//!
//! With `stream.midstream: true` a session is taken up from whatever packet arrives first,
//! and its sender becomes the client. When that packet is the server's (the capture began
//! after the request), Suricata's protocol detection notices that the bytes "to server"
//! are really a response and turns the flow round (`app-layer.c`: `reverse_flow`, then
//! `FlowSwap` and `StreamTcpReverseSession`). [`server_spoke_first`] is that check, made
//! on the session's first payload before any reassembly or app-layer state exists, so
//! that turning round moves nothing but the flow's and the session's per-side fields.

use crate::applayer::dns;
use crate::applayer::probe::{DetectionPorts, Transport};
use crate::decode::{Decoded, L4};
use crate::flow::Flow;

/// The packet, sent "to server" on a session picked up midstream and carrying its first
/// payload (`no_state`: the flow has no reassembly or app-layer state yet), holds bytes
/// only a server sends: an HTTP response, a DNS answer on a DNS port, a TLS ServerHello.
pub(super) fn server_spoke_first(d: &Decoded<'_>, flow: &Flow, no_state: bool, ports: &DetectionPorts) -> bool {
    if !no_state || !flow.tcp.midstream || !matches!(d.l4, L4::Tcp(_)) || d.payload.is_empty() {
        return false;
    }
    let p = d.payload;
    let flow_ports = (flow.client().1, flow.server().1);
    http_response(p)
        || tls_server_hello(p)
        || smb_response(p)
        || (ports.dns(Transport::Tcp, flow_ports) && dns_tcp_answer(p))
}

/// A NetBIOS session message carrying an SMB1 reply (flags bit 0x80) or an SMB2/3
/// response (flags bit SERVER_TO_REDIR), as Suricata's SMB probe tells the direction.
fn smb_response(p: &[u8]) -> bool {
    const NBSS_HEADER: usize = 4;
    if p.first() != Some(&0) {
        return false;
    }
    match p.get(NBSS_HEADER..NBSS_HEADER + 4) {
        // SMB1 header: protocol(4) command(1) status(4) flags(1).
        Some(b"\xffSMB") => p.get(NBSS_HEADER + 9).is_some_and(|flags| flags & 0x80 != 0),
        // SMB2 header: protocol(4) structure size(2) credit charge(2) status(4) command(2)
        // credits(2) flags(4, little-endian).
        Some(b"\xfeSMB") => p.get(NBSS_HEADER + 16).is_some_and(|flags| flags & 0x01 != 0),
        _ => false,
    }
}

/// A status line: "HTTP/1." then a version digit (Suricata's toclient pattern; requests
/// start with a method, never with the protocol name).
fn http_response(p: &[u8]) -> bool {
    p.len() >= 8 && p.starts_with(b"HTTP/1.") && p[7].is_ascii_digit()
}

/// A TLS handshake record (SSL 3.0 to TLS 1.3 record versions) whose first message is a
/// ServerHello (type 2).
fn tls_server_hello(p: &[u8]) -> bool {
    p.len() >= 6 && p[0] == 0x16 && p[1] == 3 && p[2] <= 4 && p[5] == 2
}

/// A DNS-over-TCP message (two-byte length prefix) that is a response.
fn dns_tcp_answer(p: &[u8]) -> bool {
    if p.len() < 2 {
        return false;
    }
    let declared = usize::from(u16::from_be_bytes([p[0], p[1]]));
    dns::probe_message(&p[2..], declared) == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_status_line_is_a_response_and_a_request_is_not() {
        assert!(http_response(b"HTTP/1.1 200 OK\r\n"));
        assert!(http_response(b"HTTP/1.0 404 Not Found\r\n"));
        assert!(!http_response(b"GET / HTTP/1.1\r\n"));
        assert!(!http_response(b"HTTP/1"));
    }

    #[test]
    fn tls_server_hello_but_not_client_hello() {
        assert!(tls_server_hello(&[0x16, 3, 3, 0, 0x40, 2, 0, 0]));
        assert!(!tls_server_hello(&[0x16, 3, 1, 0, 0x40, 1, 0, 0]));
        assert!(!tls_server_hello(&[0x17, 3, 3, 0, 0x40, 2]));
        assert!(!tls_server_hello(&[0x16, 3]));
    }

    #[test]
    fn smb_replies_but_not_requests() {
        let smb1 = |flags: u8| [&[0, 0, 0, 0x9f][..], b"\xffSMB", &[0x72, 0, 0, 0, 0, flags]].concat();
        assert!(smb_response(&smb1(0x88)));
        assert!(!smb_response(&smb1(0x08)));
        let smb2 = |flags: u8| {
            let mut m = [&[0, 0, 0, 0x40][..], b"\xfeSMB"].concat();
            m.extend_from_slice(&[64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, flags, 0, 0, 0]);
            m
        };
        assert!(smb_response(&smb2(0x01)));
        assert!(!smb_response(&smb2(0x00)));
        assert!(!smb_response(b"\0\0\0\x10\xffSM"));
    }

    #[test]
    fn dns_answer_over_tcp_but_not_a_query() {
        // id, flags (QR set / clear), 1 question, 0 answers; question "a." type A class IN.
        let msg = |qr: u8| {
            let mut m = vec![0x12, 0x34, qr, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1];
            let len = m.len() as u16;
            m.splice(0..0, len.to_be_bytes());
            m
        };
        assert!(dns_tcp_answer(&msg(0x81)));
        assert!(!dns_tcp_answer(&msg(0x01)));
        assert!(!dns_tcp_answer(&[0]));
    }

    /// Through the inspector: a midstream session whose first packet is the server's
    /// HTTP response is turned round, so its transaction and flow record go client to
    /// server (port 80 is the destination) and the server's packets count "to client".
    #[test]
    fn inspector_turns_a_session_first_seen_from_the_server_round() {
        use crate::detect::engine::{DetectConfig, DetectEngine};
        use crate::detect::rule::{load_rules_str, RuleVars};
        use crate::inspect::event::{Event, EventSink};
        use crate::inspect::{InspectSettings, Inspector};
        use crate::packet::{LinkType, PacketMeta, PacketRef, Timestamp};
        use crate::settings::EngineSettings;
        use etherparse::PacketBuilder;
        use std::sync::Arc;

        #[derive(Default)]
        struct Sides {
            tx_dest_ports: Vec<u16>,
            flows: Vec<(u16, u64, u64)>,
        }
        impl EventSink for Sides {
            fn event(&mut self, _key: u64, event: &Event<'_>) {
                match event {
                    Event::Transaction(t) => self.tx_dest_ports.push(t.tuple.dst_port),
                    Event::Flow(r) => self.flows.push((r.tuple.dst_port, r.pkts_toserver, r.pkts_toclient)),
                    _ => {}
                }
            }
        }
        let seg = |from_server: bool, seq: u32, ack: u32, payload: &[u8]| {
            let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
            let b = if from_server {
                b.ipv4([10, 0, 0, 80], [192, 168, 1, 10], 64).tcp(80, 40000, seq, 64000)
            } else {
                b.ipv4([192, 168, 1, 10], [10, 0, 0, 80], 64).tcp(40000, 80, seq, 64000)
            };
            let mut out = Vec::new();
            b.ack(ack).psh().write(&mut out, payload).expect("build");
            out
        };
        let run = |midstream: bool| {
            let load = load_rules_str(
                "t.rules",
                "alert tcp any any -> any any (content:\"zz\"; sid:1;)\n",
                &RuleVars::default(),
            );
            let (engine, _) = DetectEngine::build(load.rules, &DetectConfig::default()).expect("build");
            let mut settings =
                InspectSettings::from_engine(&EngineSettings { midstream, ..Default::default() }, 1, false);
            settings.detect = Some(Arc::new(engine));
            let mut insp = Inspector::new(&settings);
            let resp: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            let frames = [seg(true, 500, 100, resp), seg(false, 100, 500 + resp.len() as u32, b"")];
            let mut sink = Sides::default();
            for (i, f) in frames.iter().enumerate() {
                let n = i as u64 + 1;
                let meta = PacketMeta::standalone(
                    n,
                    Timestamp(n * 1_000_000_000),
                    LinkType::Ethernet,
                    f.len() as u32,
                    f.len(),
                );
                insp.packet(PacketRef { meta: &meta, data: f }, &mut sink);
            }
            insp.finish(&mut sink);
            sink
        };
        let on = run(true);
        assert_eq!(on.tx_dest_ports, vec![80]);
        assert_eq!(on.flows, vec![(80, 1, 1)]);
        // Without midstream pickup there is no session to turn round: the flow keeps the
        // capture's orientation.
        let off = run(false);
        assert_eq!(off.flows, vec![(40000, 1, 1)]);
    }
}
