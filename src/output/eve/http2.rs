//! eve records of an HTTP/2 transaction: Suricata logs HTTP/2 in `http` records (an
//! `http` object with `version` "2" and an `http2` object, see
//! [`picket_core::applayer::http2::Http2Tx::write_record`]) and its DATA bodies in
//! `fileinfo` records with `app_proto` "http2"; a stream carrying DNS (DoH) is a `dns`
//! record with both objects.

use super::dns::DnsLogOptions;
use super::header::{write_tx_header, write_tx_header_toward};
use picket_core::applayer::dns::DnsTransaction;
use picket_core::applayer::http::HttpFile;
use picket_core::applayer::http2::Http2Tx;
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;

/// One eve `http` line for the HTTP/2 transaction `tx` of `t`.
pub fn write_http2(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &Http2Tx) {
    let mut o = write_tx_header(buf, t, "http");
    o.open("http");
    tx.write_record(&mut o);
    o.close();
    o.finish();
}

/// One eve `dns` line for a DNS-over-HTTP/2 transaction: the HTTP/2 `http` object and the
/// `dns` object of its DNS response (else request), in the flow's direction (Suricata's
/// eve-log.doh2).
pub fn write_doh2(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &Http2Tx, dns: &DnsTransaction, opts: &DnsLogOptions) {
    let mut o = write_tx_header(buf, t, "dns");
    if tx.has_record() {
        o.open("http");
        tx.write_record(&mut o);
        o.close();
    }
    o.open("dns");
    dns.write_record_with(&mut o, &opts.filter);
    o.close();
    o.finish();
}

/// One eve `fileinfo` line for `file`, the DATA body of `dir` of `tx`.
pub fn write_fileinfo2(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &Http2Tx, dir: Direction, file: &HttpFile) {
    let mut o = write_tx_header_toward(buf, t, "fileinfo", dir);
    o.open("http");
    tx.write_record(&mut o);
    o.close();
    o.str("app_proto", "http2");
    o.open("fileinfo");
    file.write_record(&mut o, tx.id);
    o.close();
    o.finish();
}
