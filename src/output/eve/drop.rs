//! eve `drop` records for packets blocked in IPS mode, as Suricata's drop logger writes
//! them: the packet's IP and transport header fields, why it was dropped, and, as the
//! eve-log `drop:` options ask, the rule that dropped it and the verdict.

use super::header::write_vlan;
use super::options::DropLogOptions;
use super::verdict::write_verdict;
use super::EventHeader;
use crate::output::json::JsonObject;
use picket_core::decode::{IpLayer, L4};
use picket_core::detect::engine::Alert;
use picket_core::inspect::DropEvent;

/// Whether `d` gets a record under `opts` (`flows: start` or `all`).
pub fn wanted(d: &DropEvent<'_>, opts: &DropLogOptions) -> bool {
    opts.all_packets || d.alert.is_some() || d.first_in_direction
}

/// One eve `drop` line for `d`.
pub fn write_drop(buf: &mut Vec<u8>, d: &DropEvent<'_>, opts: &DropLogOptions) {
    let (wire, t) = (d.wire, &d.wire.tuple);
    let flow_id = (d.flow_id != 0).then_some(d.flow_id);
    let header = EventHeader::of_packet(wire.meta.ts, flow_id, wire.meta.pcap_cnt, "drop", t);
    let mut o = header.write(buf);
    o.u64("ip_v", if t.is_v4 { 4 } else { 6 });
    o.str("pkt_src", "wire/pcap");
    write_vlan(&mut o, &wire.decoded.vlan);
    if let Some(to_server) = d.to_server {
        o.str("direction", if to_server { "to_server" } else { "to_client" });
    }
    o.open("drop");
    // Suricata's `len` is the IP header's length field: total length for IPv4, payload
    // length for IPv6.
    match &wire.decoded.ip {
        Some(IpLayer::V4(ip)) => {
            o.u64("len", ip.total_len().into())
                .u64("tos", ip.tos().into())
                .u64("ttl", ip.ttl().into())
                .u64("ipid", ip.id().into());
        }
        Some(IpLayer::V6(v6)) => {
            let h = &v6.header;
            o.u64("len", h.payload_len().into())
                .u64("tc", h.traffic_class().into())
                .u64("hoplimit", h.hop_limit().into())
                .u64("flowlbl", h.flow_label().into());
        }
        None => {}
    }
    match &wire.decoded.l4 {
        L4::Tcp(tcp) => {
            let f = tcp.flags();
            o.u64("tcpseq", tcp.seq().into()).u64("tcpack", tcp.ack().into()).u64("tcpwin", tcp.window().into());
            for (bit, name) in
                [(0x02, "syn"), (0x10, "ack"), (0x08, "psh"), (0x04, "rst"), (0x20, "urg"), (0x01, "fin")]
            {
                o.bool(name, f & bit != 0);
            }
            // The reserved bits: the low nibble of the data-offset byte.
            let reserved = tcp.segment().get(TCP_DATA_OFFSET).map_or(0, |b| b & 0x0f);
            o.u64("tcpres", reserved.into()).u64("tcpurgp", tcp.urgent_ptr().into());
        }
        L4::Udp(udp) => {
            o.u64("udplen", udp.length().into());
        }
        L4::Icmpv4(icmp) | L4::Icmpv6(icmp) => {
            o.u64("icmp_id", icmp.echo_id().into()).u64("icmp_seq", icmp.echo_seq().into());
        }
        L4::None | L4::Other(_) => {}
    }
    o.str("reason", d.reason).close();
    if opts.verdict {
        write_verdict(&mut o, d.verdict, false);
    }
    if let (Some(alert), true) = (d.alert, opts.alerts) {
        write_drop_alert(&mut o, alert);
    }
    o.finish();
}

/// Offset of the data-offset byte in a TCP header (its low nibble is reserved).
const TCP_DATA_OFFSET: usize = 12;

/// The `alert` object of the rule that dropped the packet (Suricata's alert header, without
/// metadata): a drop record exists only when the packet was blocked.
fn write_drop_alert(o: &mut JsonObject<'_>, alert: &Alert) {
    o.open("alert")
        .str("action", "blocked")
        .u64("gid", alert.gid.into())
        .u64("signature_id", alert.sid.into())
        .u64("rev", alert.rev.into())
        .str("signature", &alert.msg)
        .str("category", &alert.category)
        .u64("severity", alert.severity.into())
        .close();
}
