//! eve records of an HTTP/2 transaction: Suricata logs HTTP/2 in `http` records (an
//! `http` object with `version` "2" and an `http2` object, see
//! [`picket_core::applayer::http2::Http2Tx::write_record`]) and its DATA bodies in
//! `fileinfo` records with `app_proto` "http2".

use super::header::{write_tx_header, write_tx_header_toward};
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
