//! eve `anomaly` records, as Suricata's anomaly logger writes them: one record per decoder
//! event of a packet (`type: "decode"`, `event: "decoder.ipv4.trunc_pkt"`), with the
//! packet's addresses when it got as far as an IP header, and with `packethdr: yes` the
//! first 32 bytes of the packet.
//!
//! What is logged follows the `anomaly:` entry of eve-log `types:`: `types: {decode,
//! stream, applayer}` (Suricata's defaults: applayer only) and `packethdr`. Decoder events
//! reach the sink only when `decode` is on (`InspectSettings::log_decode_anomalies`), so
//! the packet path pays nothing otherwise. App-layer anomalies (`type: "applayer"`,
//! `layer: "proto_parser"`, with the parser's event name, `app_proto` and `tx_id`) come
//! from the parsers (`Event::AppAnomaly`) and are written when `applayer` is on. picket
//! reports no stream anomalies as records yet (they are counters: `stream.*`).

use super::options::AnomalyLogOptions;
use super::EventHeader;
use crate::output::json::base64;
use picket_core::inspect::{AnomalyEvent, AppAnomalyEvent};
use picket_core::stream::Direction;

/// Bytes of the packet a record carries with `packethdr: yes` (Suricata's 32).
const PACKET_HEADER_BYTES: usize = 32;

/// Appends one eve `anomaly` line per Suricata decoder event of `a`'s packet to `buf`.
pub fn write_anomalies(buf: &mut Vec<u8>, a: &AnomalyEvent<'_>, opts: &AnomalyLogOptions) {
    for event in a.decoded.events.iter().filter(|e| e.in_suricata()) {
        let mut o = match &a.tuple {
            Some(t) => {
                let mut o = EventHeader::of_packet(a.meta.ts, None, a.meta.pcap_cnt, "anomaly", t).write(buf);
                o.u64("ip_v", if t.is_v4 { 4 } else { 6 });
                o
            }
            None => {
                let mut o = crate::output::json::JsonObject::begin(buf);
                o.str_plain("timestamp", |out| super::write_timestamp(out, a.meta.ts))
                    .u64("pcap_cnt", a.meta.pcap_cnt)
                    .str("event_type", "anomaly");
                o
            }
        };
        o.str("pkt_src", "wire/pcap");
        super::header::write_vlan(&mut o, &a.decoded.vlan);
        o.open("anomaly")
            .str("type", "decode")
            .str_plain("event", |out| {
                out.extend_from_slice(b"decoder.");
                out.extend_from_slice(event.name().as_bytes());
            })
            .close();
        if opts.packethdr {
            let head = &a.frame[..a.frame.len().min(PACKET_HEADER_BYTES)];
            o.str("packet", &base64(head));
            o.open("packet_info").u64("linktype", a.meta.link.suricata_number().into()).close();
        }
        o.finish();
    }
}

/// Appends the eve `anomaly` record of an app-layer parser anomaly to `buf`, addressed
/// from the sender of the data it was found in, as Suricata writes it.
pub fn write_app_anomaly(buf: &mut Vec<u8>, a: &AppAnomalyEvent) {
    // The tuple is the flow's, client to server: turned round for data the server sent.
    let t = if a.anomaly.dir == Direction::ToServer { a.tuple } else { a.tuple.reversed() };
    let mut o = EventHeader {
        ts: a.ts,
        flow_id: Some(a.flow.info.flow_id),
        pcap_cnt: (a.pcap_cnt > 0).then_some(a.pcap_cnt),
        event_type: "anomaly",
        src_ip: t.src_ip(),
        src_port: t.src_port,
        dest_ip: t.dst_ip(),
        dest_port: t.dst_port,
        proto: t.proto,
        icmp: None,
    }
    .write(buf);
    o.u64("ip_v", if t.is_v4 { 4 } else { 6 });
    o.str("pkt_src", if a.pcap_cnt > 0 { "wire/pcap" } else { "stream (flow timeout)" });
    super::header::write_vlan(&mut o, &a.vlan);
    o.u64("tx_id", a.anomaly.tx);
    let an = o.open("anomaly");
    if let Some(p) = a.proto {
        an.str("app_proto", p.name());
    }
    an.str("type", "applayer").str("event", a.anomaly.event).str("layer", "proto_parser").close();
    o.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use picket_core::decode::{decode, DecodeOptions};
    use picket_core::packet::{LinkType, PacketMeta, Timestamp};

    fn records(frame: &[u8], opts: &AnomalyLogOptions) -> Vec<serde_json::Value> {
        let decoded = decode(LinkType::Ethernet, frame, &DecodeOptions::default());
        let meta =
            PacketMeta::standalone(7, Timestamp(1_000_000_000), LinkType::Ethernet, frame.len() as u32, frame.len());
        let event = AnomalyEvent { meta: &meta, frame, decoded: &decoded, tuple: decoded.tuple() };
        let mut buf = Vec::new();
        write_anomalies(&mut buf, &event, opts);
        buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("json")).collect()
    }

    /// A UDP datagram whose IPv4 total length runs past the capture.
    fn truncated_udp() -> Vec<u8> {
        let mut frame = Vec::new();
        etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(5000, 53)
            .write(&mut frame, b"payload")
            .expect("build");
        frame[16..18].copy_from_slice(&600u16.to_be_bytes());
        frame
    }

    #[test]
    fn decoder_events_in_suricata_shape() {
        let recs = records(&truncated_udp(), &AnomalyLogOptions { decode: true, ..Default::default() });
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!((r["event_type"].as_str(), r["pcap_cnt"].as_u64()), (Some("anomaly"), Some(7)));
        assert_eq!(
            (r["anomaly"]["type"].as_str(), r["anomaly"]["event"].as_str()),
            (Some("decode"), Some("decoder.ipv4.trunc_pkt"))
        );
        assert_eq!((r["src_ip"].as_str(), r["ip_v"].as_u64()), (Some("10.0.0.1"), Some(4)));
        assert!(r.get("packet").is_none());
    }

    #[test]
    fn packethdr_carries_the_first_32_bytes() {
        let frame = truncated_udp();
        let recs = records(&frame, &AnomalyLogOptions { decode: true, packethdr: true, ..Default::default() });
        assert_eq!(recs[0]["packet"].as_str(), Some(crate::output::json::base64(&frame[..32]).as_str()));
        assert_eq!(recs[0]["packet_info"]["linktype"].as_u64(), Some(1));
    }

    /// Events Suricata does not have are counted, never logged.
    #[test]
    fn picket_only_events_are_not_logged() {
        // An IEEE 802.3 frame: a length where the EtherType goes.
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&46u16.to_be_bytes());
        assert!(records(&frame, &AnomalyLogOptions { decode: true, ..Default::default() }).is_empty());
    }

    /// An app-layer anomaly found in a response is written server to client, with the
    /// parser's event, `app_proto`, `layer` and `tx_id` as Suricata writes them.
    #[test]
    fn app_layer_anomaly_in_suricata_shape() {
        use picket_core::applayer::{AppAnomaly, AppProto};
        use picket_core::decode::{FiveTuple, PROTO_UDP};
        let frame = truncated_udp();
        let decoded = decode(LinkType::Ethernet, &frame, &DecodeOptions::default());
        let tuple: FiveTuple = decoded.tuple().expect("tuple");
        assert_eq!(tuple.proto, PROTO_UDP);
        let flow = picket_core::inspect::FlowFacts {
            info: picket_core::detect::engine::FlowInfo { flow_id: 42, ..Default::default() },
            client: ([0; 16], 5000),
            server: ([0; 16], 53),
            start: Timestamp(0),
        };
        let event = AppAnomalyEvent {
            ts: Timestamp(1_000_000_000),
            pcap_cnt: 2,
            flow,
            tuple,
            vlan: Default::default(),
            proto: Some(AppProto::Dns),
            anomaly: AppAnomaly { dir: Direction::ToClient, tx: 1, event: "invalid_opcode" },
        };
        let mut buf = Vec::new();
        write_app_anomaly(&mut buf, &event);
        let r: serde_json::Value = serde_json::from_slice(buf.trim_ascii_end()).expect("json");
        assert_eq!(
            (r["event_type"].as_str(), r["pcap_cnt"].as_u64(), r["tx_id"].as_u64()),
            (Some("anomaly"), Some(2), Some(1))
        );
        assert_eq!((r["src_ip"].as_str(), r["src_port"].as_u64()), (Some("10.0.0.2"), Some(53)));
        assert_eq!(
            r["anomaly"],
            serde_json::json!({"app_proto": "dns", "type": "applayer", "event": "invalid_opcode", "layer": "proto_parser"})
        );
    }
}
