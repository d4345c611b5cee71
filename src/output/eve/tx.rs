//! eve records of application-layer transactions (`http`, `dns`, `tls`, ...): the header
//! they share, and which record each protocol's finished transaction becomes.
//!
//! A transaction is reported once, when it is done (`Event::Transaction`), from the worker
//! that holds its flow; its records are formatted there, so logging them costs no extra
//! pass. Addresses are the flow's, client to server, as Suricata writes app-layer records.

use super::alert::write_vlan;
use super::options::AlertLogOptions;
use super::{dns, http, ssh, tls, EventHeader};
use crate::output::json::JsonObject;
use crate::output::merge::{EventBuf, Sink};
use picket_core::inspect::{AppTx, TxEvent};

/// Appends the records `t` is logged as (none when their types are not enabled).
pub fn write_transaction(lines: &mut EventBuf, key: u64, sub: u64, t: &TxEvent<'_>, opts: &AlertLogOptions) {
    match t.tx {
        AppTx::Http(tx) => {
            if opts.types.http {
                lines.push_sub(Sink::Eve, key, sub, |buf| http::write_http(buf, t, tx, &opts.http));
            }
        }
        AppTx::Dns(tx) => {
            if opts.types.dns && opts.dns.logs(tx) {
                lines.push_sub(Sink::Eve, key, sub, |buf| dns::write_dns(buf, t, tx, &opts.dns));
            }
        }
        AppTx::Ssh(st) => {
            if opts.types.ssh && st.has_record() {
                lines.push_sub(Sink::Eve, key, sub, |buf| ssh::write_ssh(buf, t, st, &opts.ssh));
            }
        }
        AppTx::Tls(st) => {
            if opts.types.tls && st.logs_record(opts.tls.session_resumption) {
                lines.push_sub(Sink::Eve, key, sub, |buf| tls::write_tls(buf, t, st, &opts.tls));
            }
        }
    }
}

/// Fingerprints Suricata computes when a rule inspects them, whatever the YAML says: JA3
/// and JA3S for `ja3.*`/`ja3s.*` rules, HASSH for `ssh.hassh*` rules. Their records and
/// alerts then carry them too. `uses` tells whether a rule inspects a buffer.
pub fn enable_rule_fingerprints(opts: &mut AlertLogOptions, uses: impl Fn(&str) -> bool) {
    if ["ja3.hash", "ja3.string", "ja3s.hash", "ja3s.string"].into_iter().any(&uses) {
        opts.tls.ja3 = true;
    }
    if ["ssh.hassh", "ssh.hassh.string", "ssh.hassh.server", "ssh.hassh.server.string"].into_iter().any(&uses) {
        opts.ssh.hassh = true;
    }
}

/// The header of a transaction record up to its protocol object: addresses (client to
/// server), `ip_v`, `pkt_src`, vlan, `tx_id`, and `app_proto` where Suricata writes it.
pub fn write_tx_header<'b>(buf: &'b mut Vec<u8>, t: &TxEvent<'_>, event_type: &'static str) -> JsonObject<'b> {
    write_tx_header_dir(buf, t, event_type, false)
}

/// [`write_tx_header`] with the addresses server to client when `to_client` (records of
/// a server's message that Suricata writes in that direction, such as a DNS response).
pub fn write_tx_header_dir<'b>(
    buf: &'b mut Vec<u8>,
    t: &TxEvent<'_>,
    event_type: &'static str,
    to_client: bool,
) -> JsonObject<'b> {
    let tuple = &t.tuple;
    let (mut src, mut dst) = ((tuple.src_ip(), tuple.src_port), (tuple.dst_ip(), tuple.dst_port));
    if to_client {
        std::mem::swap(&mut src, &mut dst);
    }
    let mut o = EventHeader {
        ts: t.ts,
        flow_id: Some(t.flow.info.flow_id),
        pcap_cnt: (t.pcap_cnt > 0).then_some(t.pcap_cnt),
        event_type,
        src_ip: src.0,
        src_port: src.1,
        dest_ip: dst.0,
        dest_port: dst.1,
        proto: tuple.proto,
        icmp: None,
    }
    .write(buf);
    o.u64("ip_v", if tuple.is_v4 { 4 } else { 6 });
    o.str("pkt_src", if t.pcap_cnt > 0 { "wire/pcap" } else { "stream (flow timeout)" });
    write_vlan(&mut o, &t.vlan);
    o.u64("tx_id", t.tx.id());
    o
}
