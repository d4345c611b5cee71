//! eve records of application-layer transactions (`http`, `dns`, `tls`, ...): the header
//! they share, and which record each protocol's finished transaction becomes.
//!
//! A transaction is reported once, when it is done (`Event::Transaction`), from the worker
//! that holds its flow; its records are formatted there, so logging them costs no extra
//! pass. Addresses are the flow's, client to server, as Suricata writes app-layer records.

use super::alert::write_vlan;
use super::options::AlertLogOptions;
use super::{dns, fileinfo, http, tls, EventHeader};
use crate::output::json::JsonObject;
use crate::output::merge::{EventBuf, Sink};
use picket_core::inspect::{AppTx, TxEvent};
use picket_core::stream::Direction;

/// Appends the records `t` is logged as (none when their types are not enabled).
pub fn write_transaction(lines: &mut EventBuf, key: u64, sub: u64, t: &TxEvent<'_>, opts: &AlertLogOptions) {
    match t.tx {
        AppTx::Http(tx) => {
            if opts.types.http {
                // eve-log's `xff:` in extra-data mode adds the proxied client's address.
                let xff = opts.xff.as_ref().filter(|x| !x.overwrite).and_then(|x| x.address(tx));
                lines.push_sub(Sink::Eve, key, sub, |buf| http::write_http(buf, t, tx, &opts.http, xff));
            }
            if opts.types.files {
                for (dir, file) in tx.files() {
                    lines.push_sub(Sink::Eve, key, sub, |buf| fileinfo::write_fileinfo(buf, t, tx, dir, file));
                }
            }
        }
        AppTx::Dns(tx) => {
            if opts.types.dns {
                lines.push_sub(Sink::Eve, key, sub, |buf| dns::write_dns(buf, t, tx, &opts.dns));
            }
        }
        AppTx::Tls(st) => {
            if opts.types.tls {
                lines.push_sub(Sink::Eve, key, sub, |buf| tls::write_tls(buf, t, st, &opts.tls));
            }
        }
    }
}

/// The header of a transaction record up to its protocol object: addresses (client to
/// server), `ip_v`, `pkt_src`, vlan, `tx_id`, and `app_proto` where Suricata writes it.
pub fn write_tx_header<'b>(buf: &'b mut Vec<u8>, t: &TxEvent<'_>, event_type: &'static str) -> JsonObject<'b> {
    let mut o = write_tx_header_toward(buf, t, event_type, Direction::ToServer);
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
    o
}
