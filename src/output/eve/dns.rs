//! eve `dns` records: one per DNS message (a request, a response), when it is parsed.
//!
//! Suricata 8's default "version 3" record holds the whole message; the older "version 2"
//! (`version: 2`) writes one record per question of a request and one per response. A
//! request's record goes client to server, a response's server to client (version 2 writes
//! both client to server, as Suricata's).

use super::header::write_tx_header_dir;
use picket_core::applayer::dns::record::DnsRecordFilter;
use picket_core::applayer::dns::DnsTransaction;
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;

/// The `dns:` entry of eve-log `types:` (Suricata's keys and defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsLogOptions {
    /// `version:` 3 (default) or 2 (Suricata's deprecated layout).
    pub version: u8,
    /// `requests:` requests are logged (default yes).
    pub requests: bool,
    /// `responses:` responses are logged (default yes).
    pub responses: bool,
    /// `types:` and `formats:`.
    pub filter: DnsRecordFilter,
}

impl Default for DnsLogOptions {
    fn default() -> Self {
        DnsLogOptions { version: 3, requests: true, responses: true, filter: DnsRecordFilter::default() }
    }
}

impl DnsLogOptions {
    /// Whether `tx` gets any record at all (so that nothing is queued for it otherwise).
    pub fn logs(&self, tx: &DnsTransaction) -> bool {
        let wanted = if tx.is_request() { self.requests } else { self.responses };
        wanted && tx.is_logged(&self.filter)
    }
}

/// The eve `dns` lines of the transaction `tx` of `t` (none unless [`DnsLogOptions::logs`]).
pub fn write_dns(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &DnsTransaction, opts: &DnsLogOptions) {
    if !opts.logs(tx) {
        return;
    }
    if opts.version == 2 {
        return write_dns_v2(buf, t, tx, opts);
    }
    let mut o =
        write_tx_header_dir(buf, t, "dns", if tx.is_request() { Direction::ToServer } else { Direction::ToClient });
    o.open("dns");
    tx.write_record_with(&mut o, &opts.filter);
    o.close();
    o.finish();
}

/// Version 2: a line per logged question of a request, one line for a response.
fn write_dns_v2(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &DnsTransaction, opts: &DnsLogOptions) {
    if !tx.is_request() {
        let mut o = write_tx_header_dir(buf, t, "dns", Direction::ToServer);
        o.open("dns");
        tx.write_v2_answer(&mut o, &opts.filter);
        o.close();
        o.finish();
        return;
    }
    for index in 0..tx.message.questions.len() {
        let start = buf.len();
        let mut o = write_tx_header_dir(buf, t, "dns", Direction::ToServer);
        o.open("dns");
        if !tx.write_v2_query(&mut o, index, &opts.filter) {
            drop(o);
            buf.truncate(start);
            continue;
        }
        o.close();
        o.finish();
    }
}
