//! eve `dns` records: one per DNS transaction (a query, a response), when it is done.

use super::tx::write_tx_header;
use picket_core::applayer::dns::DnsTransaction;
use picket_core::inspect::TxEvent;

/// The `dns:` entry of eve-log `types:` (Suricata's keys).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsLogOptions {}

/// One eve `dns` line for the transaction `tx` of `t`.
pub fn write_dns(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &DnsTransaction, opts: &DnsLogOptions) {
    let _ = opts;
    let mut o = write_tx_header(buf, t, "dns");
    o.open("dns");
    tx.write_record(&mut o);
    o.close();
    o.finish();
}
