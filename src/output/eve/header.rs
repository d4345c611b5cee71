//! Header pieces shared by eve records: the vlan list, and the header of transaction
//! records (`http`, `dns`, `tls`, `ssh`, `fileinfo`) up to their protocol object. A leaf
//! of the eve writers: every record module may use it, it uses none of them.

use super::EventHeader;
use crate::output::json::JsonObject;
use picket_core::decode::VlanIds;
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;

/// `vlan`: the packet's VLAN ids, outermost first; absent without tags.
pub fn write_vlan(o: &mut JsonObject<'_>, vlan: &VlanIds) {
    if vlan.iter().any(|&v| v != 0) {
        o.open_list("vlan");
        for v in vlan.iter().filter(|&&v| v != 0) {
            o.item_u64((*v).into());
        }
        o.close_list();
    }
}

/// The header of a transaction record up to its protocol object: addresses (client to
/// server), `ip_v`, `pkt_src`, vlan and `tx_id`.
pub fn write_tx_header<'b>(buf: &'b mut Vec<u8>, t: &TxEvent<'_>, event_type: &'static str) -> JsonObject<'b> {
    write_tx_header_dir(buf, t, event_type, Direction::ToServer)
}

/// [`write_tx_header`] with the addresses from the sender of `dir` to its receiver
/// (records of a server's message that Suricata writes server to client, such as a DNS
/// response).
pub fn write_tx_header_dir<'b>(
    buf: &'b mut Vec<u8>,
    t: &TxEvent<'_>,
    event_type: &'static str,
    dir: Direction,
) -> JsonObject<'b> {
    let mut o = write_tx_header_toward(buf, t, event_type, dir);
    o.u64("tx_id", t.tx.id());
    o
}

/// The header of a record about one direction of a transaction (a file): addresses from
/// the sender of that direction to its receiver, no `tx_id` (the record has its own).
pub fn write_tx_header_toward<'b>(
    buf: &'b mut Vec<u8>,
    t: &TxEvent<'_>,
    event_type: &'static str,
    dir: Direction,
) -> JsonObject<'b> {
    let tuple = &t.tuple;
    let (src_ip, src_port, dest_ip, dest_port) = match dir {
        Direction::ToServer => (tuple.src_ip(), tuple.src_port, tuple.dst_ip(), tuple.dst_port),
        Direction::ToClient => (tuple.dst_ip(), tuple.dst_port, tuple.src_ip(), tuple.src_port),
    };
    let mut o = EventHeader {
        ts: t.ts,
        flow_id: Some(t.flow.info.flow_id),
        pcap_cnt: (t.pcap_cnt > 0).then_some(t.pcap_cnt),
        event_type,
        src_ip,
        src_port,
        dest_ip,
        dest_port,
        proto: tuple.proto,
        icmp: None,
    }
    .write(buf);
    o.u64("ip_v", if tuple.is_v4 { 4 } else { 6 });
    o.str("pkt_src", if t.pcap_cnt > 0 { "wire/pcap" } else { "stream (flow timeout)" });
    write_vlan(&mut o, &t.vlan);
    super::common::write_tx_common(&mut o, t, &super::common::common_options(), dir);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::output::json::object_text as json;

    #[test]
    fn vlan_list_skips_unset_ids() {
        assert_eq!(json(|o| write_vlan(o, &[0, 0, 0])), "{}");
        assert_eq!(json(|o| write_vlan(o, &[10, 0, 0])), r#"{"vlan":[10]}"#);
        assert_eq!(json(|o| write_vlan(o, &[10, 20, 0])), r#"{"vlan":[10,20]}"#);
        assert_eq!(json(|o| write_vlan(o, &[10, 20, 30])), r#"{"vlan":[10,20,30]}"#);
    }
}
