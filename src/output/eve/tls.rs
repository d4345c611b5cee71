//! eve `tls` records: one per TLS session, once its handshake is done (or its flow ended).

use super::tx::write_tx_header;
use picket_core::applayer::tls::TlsState;
use picket_core::inspect::TxEvent;

/// The `tls:` entry of eve-log `types:` (Suricata's keys).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsLogOptions {
    /// JA3/JA3S fingerprints are logged.
    pub ja3: bool,
}

/// One eve `tls` line for the session `st` of `t`.
pub fn write_tls(buf: &mut Vec<u8>, t: &TxEvent<'_>, st: &TlsState, opts: &TlsLogOptions) {
    let mut o = write_tx_header(buf, t, "tls");
    o.open("tls");
    st.write_record(&mut o, opts.ja3);
    o.close();
    o.finish();
}
