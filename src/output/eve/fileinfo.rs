//! eve `fileinfo` records (Suricata's `files` type): one per HTTP body tracked as a file,
//! written when its transaction is done (the file is closed or truncated by then).
//!
//! Addresses follow the file's direction, as Suricata writes them: a response body's
//! record goes from the server to the client. The record carries the transaction's `http`
//! object (basic and extended fields, as in Suricata), `app_proto` and the `fileinfo`
//! object ([`picket_core::applayer::http::HttpFile::write_record`]).

use super::header::write_tx_header_toward;
use picket_core::applayer::http::{HttpFile, HttpTx};
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;

/// One eve `fileinfo` line for `file`, the body of `dir` of `tx`.
pub fn write_fileinfo(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &HttpTx, dir: Direction, file: &HttpFile) {
    let mut o = write_tx_header_toward(buf, t, "fileinfo", dir);
    o.open("http");
    tx.write_record(&mut o);
    o.close();
    o.str("app_proto", "http");
    o.open("fileinfo");
    file.write_record(&mut o, tx.id);
    o.close();
    o.finish();
}
