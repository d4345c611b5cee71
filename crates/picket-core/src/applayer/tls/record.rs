//! The `tls` object of eve records, as Suricata writes it: which fields ([`TlsFields`]:
//! the basic set, `extended: yes`, or a `custom:` list) and when a session gets a record.

use super::{format_time, version_name, CertInfo, Certificate, TlsState};
use crate::record::RecordWriter;

/// The fields of a `tls` record, as the names of Suricata's `custom:` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsFields(u32);

impl TlsFields {
    pub const VERSION: TlsFields = TlsFields(1);
    pub const SUBJECT: TlsFields = TlsFields(1 << 1);
    pub const ISSUER: TlsFields = TlsFields(1 << 2);
    pub const SERIAL: TlsFields = TlsFields(1 << 3);
    pub const FINGERPRINT: TlsFields = TlsFields(1 << 4);
    pub const NOT_BEFORE: TlsFields = TlsFields(1 << 5);
    pub const NOT_AFTER: TlsFields = TlsFields(1 << 6);
    pub const SNI: TlsFields = TlsFields(1 << 7);
    pub const CERTIFICATE: TlsFields = TlsFields(1 << 8);
    pub const CHAIN: TlsFields = TlsFields(1 << 9);
    pub const SESSION_RESUMED: TlsFields = TlsFields(1 << 10);
    pub const JA3: TlsFields = TlsFields(1 << 11);
    pub const JA3S: TlsFields = TlsFields(1 << 12);
    pub const CLIENT: TlsFields = TlsFields(1 << 13);
    pub const CLIENT_CERTIFICATE: TlsFields = TlsFields(1 << 14);
    pub const CLIENT_CHAIN: TlsFields = TlsFields(1 << 15);
    pub const JA4: TlsFields = TlsFields(1 << 16);
    pub const SUBJECTALTNAME: TlsFields = TlsFields(1 << 17);
    pub const CLIENT_ALPNS: TlsFields = TlsFields(1 << 18);
    pub const SERVER_ALPNS: TlsFields = TlsFields(1 << 19);
    pub const NONE: TlsFields = TlsFields(0);

    /// Suricata's default set: the server certificate's subject, issuer and names.
    pub const BASIC: TlsFields = TlsFields(Self::SUBJECT.0 | Self::ISSUER.0 | Self::SUBJECTALTNAME.0);

    /// `extended: yes` (and what alerts carry).
    pub const EXTENDED: TlsFields = TlsFields(
        Self::BASIC.0
            | Self::VERSION.0
            | Self::SERIAL.0
            | Self::FINGERPRINT.0
            | Self::NOT_BEFORE.0
            | Self::NOT_AFTER.0
            | Self::JA3.0
            | Self::JA3S.0
            | Self::JA4.0
            | Self::CLIENT.0
            | Self::CLIENT_ALPNS.0
            | Self::SERVER_ALPNS.0
            | Self::SNI.0,
    );

    /// A `custom:` entry by name (any case); `client_handshake` and `server_handshake`
    /// (not written by picket) and unknown names give `None`.
    pub fn by_name(name: &str) -> Option<TlsFields> {
        const NAMES: [(&str, TlsFields); 20] = [
            ("version", TlsFields::VERSION),
            ("subject", TlsFields::SUBJECT),
            ("issuer", TlsFields::ISSUER),
            ("serial", TlsFields::SERIAL),
            ("fingerprint", TlsFields::FINGERPRINT),
            ("not_before", TlsFields::NOT_BEFORE),
            ("not_after", TlsFields::NOT_AFTER),
            ("sni", TlsFields::SNI),
            ("certificate", TlsFields::CERTIFICATE),
            ("chain", TlsFields::CHAIN),
            ("session_resumed", TlsFields::SESSION_RESUMED),
            ("ja3", TlsFields::JA3),
            ("ja3s", TlsFields::JA3S),
            ("client", TlsFields::CLIENT),
            ("client_certificate", TlsFields::CLIENT_CERTIFICATE),
            ("client_chain", TlsFields::CLIENT_CHAIN),
            ("ja4", TlsFields::JA4),
            ("subjectaltname", TlsFields::SUBJECTALTNAME),
            ("client_alpns", TlsFields::CLIENT_ALPNS),
            ("server_alpns", TlsFields::SERVER_ALPNS),
        ];
        NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, f)| f)
    }

    pub fn has(self, f: TlsFields) -> bool {
        self.0 & f.0 == f.0
    }

    #[must_use]
    pub fn with(self, f: TlsFields) -> TlsFields {
        TlsFields(self.0 | f.0)
    }

    #[must_use]
    pub fn without(self, f: TlsFields) -> TlsFields {
        TlsFields(self.0 & !f.0)
    }
}

impl TlsState {
    /// The fields of an alert's `tls` object (Suricata's extended set); JA3/JA3S only when
    /// they are computed (`with_ja3`).
    pub fn write_record(&self, w: &mut dyn RecordWriter, with_ja3: bool, base64: fn(&[u8]) -> String) {
        let mut fields = TlsFields::EXTENDED;
        if !with_ja3 {
            fields = fields.without(TlsFields::JA3).without(TlsFields::JA3S);
        }
        self.write_fields(w, fields, base64);
    }

    /// Whether the session gets a `tls` record when it is done: the server certificate
    /// parsed, or the session resumed (when `session_resumption` is logged), or TLS 1.3
    /// (whose certificate is encrypted), as Suricata's logger decides.
    pub fn logs_record(&self, session_resumption: bool) -> bool {
        self.server_cert().is_some() || self.resumed() && session_resumption || self.logs_without_cert()
    }

    /// Writes `fields` of the `tls` object in Suricata's order into the open object of
    /// `w`; fields with no data are left out. Certificates go in base64 through `base64`.
    pub fn write_fields(&self, w: &mut dyn RecordWriter, fields: TlsFields, base64: fn(&[u8]) -> String) {
        let chain = self.certificates(crate::stream::Direction::ToClient);
        let leaf = chain.first();
        let info = leaf.and_then(|c| c.info.as_ref());
        if let Some(info) = info {
            if fields.has(TlsFields::SUBJECT) {
                w.str("subject", &info.subject);
            }
            if fields.has(TlsFields::ISSUER) {
                w.str("issuerdn", &info.issuer);
            }
            if fields.has(TlsFields::SUBJECTALTNAME) && !info.subject_alt_names.is_empty() {
                w.open_list("subjectaltname");
                info.subject_alt_names.iter().for_each(|n| w.item_str(n));
                w.close_list();
            }
        }
        // Only a session resumed without a certificate, and not TLS 1.3, says so.
        if fields.has(TlsFields::SESSION_RESUMED)
            && self.resumed()
            && info.is_none()
            && self.server_hello().is_some()
            && !self.logs_without_cert()
        {
            w.bool("session_resumed", true);
        }
        if let Some(info) = info.filter(|_| fields.has(TlsFields::SERIAL)) {
            w.str("serial", &info.serial);
        }
        if let Some(cert) = leaf.filter(|_| fields.has(TlsFields::FINGERPRINT)) {
            w.str("fingerprint", &cert.fingerprint);
        }
        if let Some(sni) = self.sni().filter(|_| fields.has(TlsFields::SNI)) {
            w.bytes("sni", sni);
        }
        if fields.has(TlsFields::VERSION) {
            w.str("version", &version_name(self.version().unwrap_or(0)));
        }
        if let Some(info) = info {
            write_validity(w, info, fields);
        }
        if let Some(cert) = leaf.filter(|_| fields.has(TlsFields::CERTIFICATE)) {
            w.str("certificate", &base64(&cert.der));
        }
        if fields.has(TlsFields::CHAIN) {
            write_chain(w, chain, base64);
        }
        for (key, on, fingerprint) in
            [("ja3", fields.has(TlsFields::JA3), self.ja3()), ("ja3s", fields.has(TlsFields::JA3S), self.ja3s())]
        {
            if let Some((string, hash)) = fingerprint.filter(|_| on) {
                w.open(key);
                w.str("hash", hash);
                w.str("string", string);
                w.close();
            }
        }
        if fields.has(TlsFields::CLIENT_ALPNS) && !self.client_alpns().is_empty() {
            w.open_list("client_alpns");
            self.client_alpns().iter().for_each(|alpn| w.item_bytes(alpn));
            w.close_list();
        }
        if let Some(alpn) = self.server_alpn().filter(|_| fields.has(TlsFields::SERVER_ALPNS)) {
            w.open_list("server_alpns");
            w.item_bytes(alpn);
            w.close_list();
        }
        let client_chain = self.certificates(crate::stream::Direction::ToServer);
        let client_fields = [TlsFields::CLIENT, TlsFields::CLIENT_CERTIFICATE, TlsFields::CLIENT_CHAIN];
        if client_fields.iter().any(|&f| fields.has(f)) {
            if let Some((cert, info)) = client_chain.first().and_then(|c| Some((c, c.info.as_ref()?))) {
                w.open("client");
                w.str("subject", &info.subject);
                w.str("issuerdn", &info.issuer);
                w.str("fingerprint", &cert.fingerprint);
                w.str("serial", &info.serial);
                write_validity(w, info, TlsFields::NOT_BEFORE.with(TlsFields::NOT_AFTER));
                if fields.has(TlsFields::CLIENT_CERTIFICATE) {
                    w.str("certificate", &base64(&cert.der));
                }
                if fields.has(TlsFields::CLIENT_CHAIN) {
                    write_chain(w, client_chain, base64);
                }
                w.close();
            }
        }
    }
}

/// `notbefore` / `notafter` as Suricata's UTC time without zone.
fn write_validity(w: &mut dyn RecordWriter, info: &CertInfo, fields: TlsFields) {
    if let Some(t) = info.not_before.filter(|_| fields.has(TlsFields::NOT_BEFORE)) {
        w.str("notbefore", &format_time(t));
    }
    if let Some(t) = info.not_after.filter(|_| fields.has(TlsFields::NOT_AFTER)) {
        w.str("notafter", &format_time(t));
    }
}

/// `chain`: every certificate of a chain, in base64, in the order sent.
fn write_chain(w: &mut dyn RecordWriter, chain: &[Certificate], base64: fn(&[u8]) -> String) {
    if chain.is_empty() {
        return;
    }
    w.open_list("chain");
    chain.iter().for_each(|c| w.item_str(&base64(&c.der)));
    w.close_list();
}
