//! eve `alert` records, as Suricata writes them.

use super::header::write_vlan;
use super::options::AlertLogOptions;
use super::{proto_name, write_ip, write_timestamp, EventHeader};
use crate::output::json::{base64, JsonObject};
use picket_core::decode::{ip_addr, is_icmp};
use picket_core::decode::{Decoded, FiveTuple};
use picket_core::inspect::{AlertEvent, AppTx, WirePacket};
use picket_core::packet::LinkType;
use picket_core::stream::HeldStream;
use std::net::IpAddr;
use std::sync::Arc;

/// One eve `alert` line for `a`.
pub fn write_alert(buf: &mut Vec<u8>, a: &AlertEvent<'_>, opts: &AlertLogOptions) {
    let xff = match (&opts.xff, a.app.tx) {
        (Some(x), Some(AppTx::Http(tx))) => x.address(tx).map(|ip| (x.overwrite, ip)),
        _ => None,
    };
    let mut o = header(buf, a, xff);
    o.u64("ip_v", if a.tuple.is_v4 { 4 } else { 6 });
    o.str("pkt_src", if a.wire.is_some() { "wire/pcap" } else { "stream (flow timeout)" });
    write_vlan(&mut o, &a.vlan);
    super::common::write_version(&mut o, &super::common::common_options());
    if let Some(w) = a.wire {
        write_link(&mut o, w, opts);
    }
    if let (Some(tx), true) = (a.app.tx, a.alert.app_tx) {
        o.u64("tx_id", tx.id());
    }
    write_alert_object(&mut o, a, opts, xff);
    if let Some(f) = a.flow {
        o.str("direction", if f.info.to_server { "to_server" } else { "to_client" });
    }
    if opts.flow {
        write_flow_object(&mut o, a);
    }
    write_app_layer(&mut o, a, opts);
    if let (Some(bits), true) = (a.flowbits, opts.flow_vars) {
        super::common::write_flowbits(&mut o, bits);
    }
    write_payload(&mut o, a, opts);
    if opts.verdict {
        super::verdict::write_verdict(&mut o, a.verdict, a.passed);
    }
    o.finish();
}

/// The event header; with `xff` in overwrite mode the proxy's client replaces the event's
/// client side: the source of a request packet, the destination of a response packet.
fn header<'b>(buf: &'b mut Vec<u8>, a: &AlertEvent<'_>, xff: Option<(bool, IpAddr)>) -> JsonObject<'b> {
    let tuple = &a.tuple;
    let (mut src_ip, mut dest_ip) = (tuple.src_ip(), tuple.dst_ip());
    if let Some((true, ip)) = xff {
        if a.flow.is_none_or(|f| f.info.to_server) {
            src_ip = ip;
        } else {
            dest_ip = ip;
        }
    }
    EventHeader {
        ts: a.ts,
        flow_id: a.flow.map(|f| f.info.flow_id),
        pcap_cnt: (a.pcap_cnt > 0).then_some(a.pcap_cnt),
        event_type: "alert",
        src_ip,
        src_port: tuple.src_port,
        dest_ip,
        dest_port: tuple.dst_port,
        proto: tuple.proto,
        icmp: icmp_type_code(tuple),
    }
    .write(buf)
}

/// ICMP carries type and code where other protocols have ports.
pub(super) fn icmp_type_code(tuple: &FiveTuple) -> Option<(u8, u8)> {
    is_icmp(tuple.proto).then_some((tuple.src_port as u8, tuple.dst_port as u8))
}

/// The outer header of a tunnelled packet, and the MAC addresses when asked for.
fn write_link(o: &mut JsonObject<'_>, w: &WirePacket<'_>, opts: &AlertLogOptions) {
    if let Decoded { tunnel: Some(t), .. } = w.decoded {
        let outer = &t.outer;
        o.open("tunnel")
            .str("src_ip", &outer.src_ip().to_string())
            .u64("src_port", outer.src_port.into())
            .str("dest_ip", &outer.dst_ip().to_string())
            .u64("dest_port", outer.dst_port.into())
            .str("proto", &proto_name(outer.proto))
            .u64("depth", t.depth.into())
            .u64("pcap_cnt", w.meta.pcap_cnt)
            .str("pkt_src", "wire/pcap")
            .close();
    }
    if opts.ethernet && w.meta.link == LinkType::Ethernet && w.frame.len() >= 14 {
        o.open("ether").str("src_mac", &mac(&w.frame[6..12])).str("dest_mac", &mac(&w.frame[0..6])).close();
    }
}

fn write_alert_object(o: &mut JsonObject<'_>, a: &AlertEvent<'_>, opts: &AlertLogOptions, xff: Option<(bool, IpAddr)>) {
    let alert = a.alert;
    o.open("alert")
        .str("action", if a.blocked { "blocked" } else { "allowed" })
        .u64("gid", alert.gid.into())
        .u64("signature_id", alert.sid.into())
        .u64("rev", alert.rev.into())
        .str("signature", &alert.msg)
        .str("category", &alert.category)
        .u64("severity", alert.severity.into());
    if opts.rule_metadata && !alert.rule_log.metadata.is_empty() {
        write_rule_metadata(o, &alert.rule_log.metadata);
    }
    if opts.rule_raw {
        o.str("rule", &alert.rule_log.text);
    }
    if let Some((false, ip)) = xff {
        o.str("xff", &ip.to_string());
    }
    o.close();
}

/// The alert's `flow` object: counters so far and the flow's own orientation.
fn write_flow_object(o: &mut JsonObject<'_>, a: &AlertEvent<'_>) {
    let Some(f) = a.flow else { return };
    let v4 = a.tuple.is_v4;
    o.open("flow")
        .u64("pkts_toserver", f.info.pkts_toserver)
        .u64("pkts_toclient", f.info.pkts_toclient)
        .u64("bytes_toserver", f.info.bytes_toserver)
        .u64("bytes_toclient", f.info.bytes_toclient)
        .str_plain("start", |out| write_timestamp(out, f.start))
        .str_plain("src_ip", |out| write_ip(out, ip_addr(&f.client.0, v4)))
        .str_plain("dest_ip", |out| write_ip(out, ip_addr(&f.server.0, v4)));
    if icmp_type_code(&a.tuple).is_none() {
        o.u64("src_port", f.client.1.into()).u64("dest_port", f.server.1.into());
    }
    o.close();
}

/// `app_proto`, and the transaction's (and the flow's TLS session's) objects.
fn write_app_layer(o: &mut JsonObject<'_>, a: &AlertEvent<'_>, opts: &AlertLogOptions) {
    if let Some(p) = a.app.proto {
        o.str("app_proto", p.name());
    }
    if !opts.app_layer {
        return;
    }
    match a.app.tx {
        Some(AppTx::Http(tx)) => {
            o.open("http");
            tx.write_record(o);
            o.close();
        }
        Some(AppTx::Dns(tx)) => {
            o.open("dns");
            tx.write_record(o);
            o.close();
        }
        Some(AppTx::Ssh(st)) => {
            o.open("ssh");
            st.write_record(o, opts.ssh.hassh);
            o.close();
        }
        Some(AppTx::Smtp(v)) => super::smtp::write_smtp_objects(o, &v, &Default::default()),
        Some(AppTx::Http2(tx)) => {
            o.open("http");
            tx.write_record(o);
            o.close();
        }
        Some(AppTx::Tls(_)) | None => {}
    }
    if let Some(st) = a.app.tls {
        o.open("tls");
        st.write_record(o, a.app.log_ja3, base64);
        o.close();
    }
}

/// `alert.metadata`: each key of the rule's `metadata:` with its values in rule order.
fn write_rule_metadata(o: &mut JsonObject<'_>, pairs: &[(Arc<str>, Arc<str>)]) {
    o.open("metadata");
    let mut done: Vec<&str> = Vec::new();
    for (key, _) in pairs {
        if done.contains(&&**key) {
            continue;
        }
        done.push(key);
        o.open_list(key);
        for (_, v) in pairs.iter().filter(|(k, _)| k == key) {
            o.item_str(v);
        }
        o.close_list();
    }
    o.close();
}

/// `payload`, `payload_printable` and `packet`, when the eve-log options ask for them.
fn write_payload(o: &mut JsonObject<'_>, a: &AlertEvent<'_>, opts: &AlertLogOptions) {
    if opts.payload || opts.payload_printable {
        let stream_log;
        let payload: &[u8] = match a.held {
            Some(held) => {
                stream_log = stream_payload(held, opts.payload_buffer_size);
                &stream_log
            }
            None => a.payload,
        };
        if opts.payload {
            o.str("payload", &base64(payload));
        }
        if opts.payload_printable {
            o.str("payload_printable", &printable(payload));
        }
        o.u64("payload_length", payload.len() as u64);
        o.u64("stream", a.alert.in_stream as u64);
    }
    if let (true, Some(w)) = (opts.packet, a.wire) {
        // A tunnelled packet is logged from its inner IP header on, as raw IP.
        let (frame, link) = match &w.decoded.tunnel {
            Some(t) => (w.frame.get(t.inner_offset as usize..).unwrap_or(&[]), LinkType::RawIp),
            None => (w.frame, w.meta.link),
        };
        o.str("packet", &base64(frame));
        o.open("packet_info")
            .u64("linktype", link.suricata_number().into())
            .str("linktype_name", link.suricata_name())
            .close();
    }
}

/// The stream data of an alert's direction as Suricata logs it: every byte still held,
/// holes written as `[N bytes missing]`, cut at `limit` bytes.
fn stream_payload(held: &HeldStream<'_>, limit: usize) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = Vec::new();
    let mut at = held.start();
    for (offset, bytes) in held.runs() {
        if out.len() >= limit {
            break;
        }
        if offset > at {
            let _ = write!(out, "[{} bytes missing]", offset - at);
        }
        out.extend_from_slice(bytes);
        at = offset + bytes.len() as u64;
    }
    out.truncate(limit);
    out
}

fn mac(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

/// Suricata's lossy printable form: printable ASCII kept, everything else as '.'.
fn printable(data: &[u8]) -> String {
    data.iter()
        .map(|&b| if (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\r' || b == b'\t' { b as char } else { '.' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_masks_binary() {
        assert_eq!(printable(b"GET /\x00\xff"), "GET /..");
    }

    use crate::output::json::object_text as json;

    #[test]
    fn rule_metadata_groups_values_by_key() {
        let pairs =
            [("tag", "a"), ("created_at", "2018-01-30"), ("tag", "b\"q")].map(|(k, v)| (Arc::from(k), Arc::from(v)));
        let got = json(|o| write_rule_metadata(o, &pairs));
        assert_eq!(got, r#"{"metadata":{"tag":["a","b\"q"],"created_at":["2018-01-30"]}}"#);
    }
}
