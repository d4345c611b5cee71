//! eve `drop` records for packets blocked in IPS mode.

use super::alert::icmp_type_code;
use super::EventHeader;
use picket_core::decode::{IpLayer, L4};
use picket_core::inspect::DropEvent;

/// One eve `drop` line for `d`.
pub fn write_drop(buf: &mut Vec<u8>, d: &DropEvent<'_>) {
    let (wire, t) = (d.wire, &d.wire.tuple);
    let header = EventHeader {
        ts: wire.meta.ts,
        flow_id: (d.flow_id != 0).then_some(d.flow_id),
        pcap_cnt: Some(wire.meta.pcap_cnt),
        event_type: "drop",
        src_ip: t.src_ip(),
        src_port: t.src_port,
        dest_ip: t.dst_ip(),
        dest_port: t.dst_port,
        proto: t.proto,
        icmp: icmp_type_code(t),
    };
    let mut o = header.write(buf);
    o.open("drop").u64("len", wire.meta.wire_len.into());
    match &wire.decoded.ip {
        Some(IpLayer::V4(ip)) => {
            o.u64("tos", ip.tos().into()).u64("ttl", ip.ttl().into()).u64("ipid", ip.id().into());
        }
        Some(IpLayer::V6(v6)) => {
            let h = &v6.header;
            o.u64("tc", h.traffic_class().into())
                .u64("hoplimit", h.hop_limit().into())
                .u64("flowlbl", h.flow_label().into());
        }
        None => {}
    }
    if let L4::Tcp(tcp) = &wire.decoded.l4 {
        let f = tcp.flags();
        o.u64("tcpseq", tcp.seq().into()).u64("tcpack", tcp.ack().into()).u64("tcpwin", tcp.window().into());
        for (bit, name) in [(0x02, "syn"), (0x10, "ack"), (0x08, "psh"), (0x04, "rst"), (0x20, "urg"), (0x01, "fin")] {
            o.bool(name, f & bit != 0);
        }
        o.u64("tcpres", 0).u64("tcpurgp", tcp.urgent_ptr().into());
    }
    o.str("reason", d.reason).close();
    o.finish();
}
