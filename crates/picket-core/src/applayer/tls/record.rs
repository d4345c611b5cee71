//! The `tls` object of eve records, as Suricata writes it.

use super::{format_time, version_name, TlsState};
use crate::record::RecordWriter;

impl TlsState {
    /// Writes the fields of the `tls` object of an eve record, in Suricata's order, into the
    /// open object of `w`; fields with no data are left out.
    pub fn write_record(&self, w: &mut dyn RecordWriter, with_ja3: bool) {
        let leaf = self.certs[1].first();
        if let Some(info) = leaf.and_then(|c| c.info.as_ref()) {
            w.str("subject", &info.subject);
            w.str("issuerdn", &info.issuer);
            w.str("serial", &info.serial);
        }
        if let Some(cert) = leaf {
            w.str("fingerprint", &cert.fingerprint);
        }
        if let Some(sni) = self.sni() {
            w.bytes("sni", sni);
        }
        w.str("version", &version_name(self.version().unwrap_or(0)));
        if let Some(info) = leaf.and_then(|c| c.info.as_ref()) {
            if let Some(t) = info.not_before {
                w.str("notbefore", &format_time(t));
            }
            if let Some(t) = info.not_after {
                w.str("notafter", &format_time(t));
            }
        }
        if with_ja3 {
            for (key, fingerprint) in [("ja3", self.ja3()), ("ja3s", self.ja3s())] {
                if let Some((string, hash)) = fingerprint {
                    w.open(key);
                    w.str("hash", hash);
                    w.str("string", string);
                    w.close();
                }
            }
        }
        if !self.client_alpns().is_empty() {
            w.open_list("client_alpns");
            for alpn in self.client_alpns() {
                w.item_bytes(alpn);
            }
            w.close_list();
        }
        if let Some(alpn) = self.server_alpn() {
            w.open_list("server_alpns");
            w.item_bytes(alpn);
            w.close_list();
        }
    }
}
