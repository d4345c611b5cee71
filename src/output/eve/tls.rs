//! eve `tls` records: one per TLS session, when its handshake is done as Suricata sees it
//! (the server certificate parsed, or both sides encrypting), or when its flow ends.

use super::header::write_tx_header;
use crate::output::json::base64;
use picket_core::applayer::tls::record::TlsFields;
use picket_core::applayer::tls::TlsState;
use picket_core::inspect::TxEvent;

/// The `tls:` entry of eve-log `types:` (Suricata's keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsLogOptions {
    /// JA3/JA3S fingerprints are computed (`app-layer.protocols.tls.ja3-fingerprints`).
    pub ja3: bool,
    /// The fields written: Suricata's basic set, `extended: yes`, or a `custom:` list.
    pub fields: TlsFields,
    /// `session-resumption:` a resumed session without a certificate gets a record.
    pub session_resumption: bool,
}

impl Default for TlsLogOptions {
    /// What Suricata's default configuration gives (`- tls: extended: yes`), which is
    /// what picket writes without an `outputs:` section.
    fn default() -> Self {
        TlsLogOptions {
            ja3: false,
            fields: TlsFields::EXTENDED.with(TlsFields::SESSION_RESUMED),
            session_resumption: true,
        }
    }
}

impl TlsLogOptions {
    /// A `- tls` entry without options: Suricata's basic fields, no resumed sessions.
    pub fn basic(ja3: bool) -> Self {
        TlsLogOptions { ja3, fields: TlsFields::BASIC, session_resumption: false }
    }
}

/// One eve `tls` line for the session `st` of `t`, unless Suricata would not log it.
pub fn write_tls(buf: &mut Vec<u8>, t: &TxEvent<'_>, st: &TlsState, opts: &TlsLogOptions) {
    if !st.logs_record(opts.session_resumption) {
        return;
    }
    let mut fields = opts.fields;
    if !opts.ja3 {
        fields = fields.without(TlsFields::JA3).without(TlsFields::JA3S);
    }
    let mut o = write_tx_header(buf, t, "tls");
    o.open("tls");
    st.write_fields(&mut o, fields, base64);
    o.close();
    o.finish();
}
