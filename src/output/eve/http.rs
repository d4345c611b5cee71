//! eve `http` records: one per HTTP transaction, when it is done.

use super::tx::write_tx_header;
use picket_core::applayer::http::HttpTx;
use picket_core::inspect::TxEvent;

/// The `http:` entry of eve-log `types:` (Suricata's keys).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpLogOptions {
    /// `extended: yes`: the extended fields (referer, redirect, content range, ...).
    pub extended: bool,
}

/// One eve `http` line for the transaction `tx` of `t`.
pub fn write_http(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &HttpTx, opts: &HttpLogOptions) {
    let _ = opts;
    let mut o = write_tx_header(buf, t, "http");
    o.open("http");
    tx.write_record(&mut o);
    o.close();
    o.finish();
}
