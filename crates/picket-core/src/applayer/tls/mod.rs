//! TLS/SSL handshake parser, sans-IO: each direction of a TCP stream is fed in order, in any
//! split, with [`TlsState::parse`]. It follows the records (SSLv3 to TLS 1.3, plus an SSLv2
//! ClientHello at the start of the client's stream), reassembles handshake messages across
//! records, and keeps what detection and logging need:
//!
//! - ClientHello: version, ciphers, extensions, SNI, supported groups, EC point formats,
//!   ALPN, supported_versions, signature algorithms; JA3 string and MD5 hash.
//! - ServerHello: version, cipher, extensions, selected version (TLS 1.3), ALPN; JA3S.
//! - Certificate (TLS ≤ 1.2, cleartext): each DER certificate, and for each one subject,
//!   issuer, serial, SHA-1 fingerprint, validity and subjectAltName as Suricata prints them.
//!
//! After a ChangeCipherSpec the direction's records are encrypted: they are counted, not
//! parsed. In TLS 1.3 the server's certificate travels encrypted, so there is none to read.
//!
//! Memory: one partial record header and one handshake message (≤ `max_handshake_len`) per
//! direction, plus stored certificates (≤ `max_cert_bytes` per direction). Everything past a
//! limit is skipped and counted.

pub(crate) mod buffers;
pub(crate) mod flow;
pub mod record;

use md5::{Digest as _, Md5};
use sha1::Sha1;

use crate::bytes::{self, Cursor};
use crate::stream::Direction;

pub const CONTENT_CHANGE_CIPHER_SPEC: u8 = 20;
pub const CONTENT_ALERT: u8 = 21;
pub const CONTENT_HANDSHAKE: u8 = 22;
pub const CONTENT_APPLICATION_DATA: u8 = 23;
pub const CONTENT_HEARTBEAT: u8 = 24;

pub const HANDSHAKE_CLIENT_HELLO: u8 = 1;
pub const HANDSHAKE_SERVER_HELLO: u8 = 2;
pub const HANDSHAKE_CERTIFICATE: u8 = 11;
/// The server asks for a client certificate: the handshake then ends with the client's.
pub const HANDSHAKE_CERTIFICATE_REQUEST: u8 = 13;

pub const VERSION_SSL2: u16 = 0x0002;
pub const VERSION_SSL3: u16 = 0x0300;
pub const VERSION_TLS10: u16 = 0x0301;
pub const VERSION_TLS11: u16 = 0x0302;
pub const VERSION_TLS12: u16 = 0x0303;
pub const VERSION_TLS13: u16 = 0x0304;

const EXT_SERVER_NAME: u16 = 0;
const EXT_SUPPORTED_GROUPS: u16 = 10;
const EXT_EC_POINT_FORMATS: u16 = 11;
const EXT_SIGNATURE_ALGORITHMS: u16 = 13;
const EXT_ALPN: u16 = 16;
const EXT_SUPPORTED_VERSIONS: u16 = 43;
/// RFC 5077 session ticket: a client offering one may resume without a certificate.
const EXT_SESSION_TICKET: u16 = 35;

/// Largest record body TLS allows (2^14 plus expansion for compression and encryption).
const MAX_RECORD_LEN: usize = 16384 + 2048;

#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// Largest handshake message reassembled; larger ones are skipped (`tls.handshake_too_large`).
    /// Certificate chains are the big ones (tens of KiB).
    pub max_handshake_len: usize,
    /// DER bytes of certificates kept per direction; later ones are not stored.
    pub max_cert_bytes: usize,
    /// Certificates kept per direction.
    pub max_certs: usize,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig { max_handshake_len: 256 * 1024, max_cert_bytes: 128 * 1024, max_certs: 16 }
    }
}

/// Worker-wide counters; parse calls add to them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsCounters {
    pub records: u64,
    pub handshake_messages: u64,
    /// Records after ChangeCipherSpec and application data records, skipped unparsed.
    pub encrypted_records: u64,
    pub sslv2_records: u64,
    /// Record header that is neither TLS nor SSLv2: the direction stops being parsed.
    pub invalid_records: u64,
    /// Record longer than TLS allows (still skipped over by its length).
    pub record_overflows: u64,
    pub handshake_too_large: u64,
    /// ClientHello/ServerHello/Certificate whose body did not parse.
    pub invalid_handshake: u64,
    pub certs_not_stored: u64,
    pub cert_parse_errors: u64,
    /// Bytes lost in the TCP stream: the direction stops being parsed.
    pub gaps: u64,
}

impl TlsCounters {
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("tls.records", self.records),
            ("tls.handshake_messages", self.handshake_messages),
            ("tls.encrypted_records", self.encrypted_records),
            ("tls.sslv2_records", self.sslv2_records),
            ("tls.invalid_records", self.invalid_records),
            ("tls.record_overflows", self.record_overflows),
            ("tls.handshake_too_large", self.handshake_too_large),
            ("tls.invalid_handshake", self.invalid_handshake),
            ("tls.certs_not_stored", self.certs_not_stored),
            ("tls.cert_parse_errors", self.cert_parse_errors),
            ("tls.gaps", self.gaps),
        ]
        .into_iter()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `legacy_version` of the hello body (the version JA3 uses).
    pub version: u16,
    pub ciphers: Vec<u16>,
    /// Extension types in wire order.
    pub extensions: Vec<u16>,
    /// First host_name of the server_name extension.
    pub sni: Option<Vec<u8>>,
    pub groups: Vec<u16>,
    pub ec_point_formats: Vec<u8>,
    pub alpn: Vec<Vec<u8>>,
    pub supported_versions: Vec<u16>,
    pub signature_algorithms: Vec<u16>,
    /// Sent as an SSLv2-format ClientHello (no extensions, no JA3).
    pub sslv2: bool,
    /// The legacy session id (at most 32 bytes), to recognise a resumed session.
    pub session_id: Vec<u8>,
    /// The hello offers a session ticket (extension 35).
    pub session_ticket: bool,
    pub ja3_string: String,
    /// Lowercase hex MD5 of `ja3_string`.
    pub ja3_hash: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHello {
    pub version: u16,
    pub cipher: u16,
    pub extensions: Vec<u16>,
    /// supported_versions extension (TLS 1.3 negotiation).
    pub selected_version: Option<u16>,
    /// The legacy session id the server answered with (at most 32 bytes).
    pub session_id: Vec<u8>,
    pub alpn: Option<Vec<u8>>,
    pub ja3s_string: String,
    pub ja3s_hash: String,
}

/// The fields of one X.509 certificate, formatted as Suricata prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertInfo {
    /// e.g. "C=US, O=Let's Encrypt, CN=R3" (RDNs in certificate order).
    pub subject: String,
    pub issuer: String,
    /// Uppercase hex bytes joined with ':' (e.g. "5C:19:B7").
    pub serial: String,
    /// Unix seconds.
    pub not_before: Option<i64>,
    pub not_after: Option<i64>,
    /// subjectAltName entries (DNS names, addresses, e-mail, URIs) as text.
    pub subject_alt_names: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    pub der: Vec<u8>,
    /// Lowercase hex SHA-1 of the DER, bytes joined with ':'.
    pub fingerprint: String,
    /// None when the DER did not parse.
    pub info: Option<CertInfo>,
}

/// Parse progress of one direction.
#[derive(Clone, Debug, Default)]
struct DirectionParser {
    /// Partial record header (5 bytes for TLS, 2 for SSLv2).
    header: [u8; 5],
    header_len: usize,
    /// Body bytes of the current record still to come.
    record_remaining: usize,
    record_type: u8,
    /// Current record is SSLv2 (its body goes to `sslv2_record`).
    record_is_sslv2: bool,
    sslv2_record: Vec<u8>,
    /// Handshake bytes collected across records (one message at most, plus the next header).
    handshake: Vec<u8>,
    /// Bytes of an oversized handshake message still to skip.
    handshake_skip: usize,
    /// Seen ChangeCipherSpec: handshake records are encrypted from here on.
    encrypted: bool,
    records_seen: u64,
    /// Unrecoverable (invalid record or gap): ignore further data.
    stopped: bool,
    cert_bytes_stored: usize,
}

/// Per-flow TLS state.
#[derive(Clone, Debug, Default)]
pub struct TlsState {
    config: TlsConfig,
    dirs: [DirectionParser; 2],
    client_hello: Option<ClientHello>,
    server_hello: Option<ServerHello>,
    /// SSLv2 ServerHello version, for the rare pure-SSLv2 session.
    sslv2_server_version: Option<u16>,
    /// Certificate chains: index 0 the client's (to server), 1 the server's (to client).
    certs: [Vec<Certificate>; 2],
    /// Number of the first Certificate message per direction already taken.
    chain_seen: [bool; 2],
    encrypted_records: [u64; 2],
    /// Application data records seen per direction (Suricata's "handshake done" signal).
    app_data: [bool; 2],
    /// The server sent a CertificateRequest.
    client_cert_requested: bool,
}

impl TlsState {
    pub fn new(config: TlsConfig) -> Self {
        TlsState { config, ..Default::default() }
    }

    /// Feeds the next in-order stream bytes of one direction.
    pub fn parse(&mut self, direction: Direction, mut data: &[u8], counters: &mut TlsCounters) {
        let d = direction.index();
        while !data.is_empty() && !self.dirs[d].stopped {
            let p = &mut self.dirs[d];
            if p.record_remaining == 0 && !p.record_is_sslv2 || p.header_len > 0 {
                // Collecting a record header.
                if p.header_len == 0 {
                    // First byte decides the header size: SSLv2 has the high bit set.
                    p.header[0] = data[0];
                    p.header_len = 1;
                    data = &data[1..];
                    continue;
                }
                let sslv2 = p.header[0] & 0x80 != 0;
                let want = if sslv2 { 2 } else { 5 };
                let n = (want - p.header_len).min(data.len());
                p.header[p.header_len..p.header_len + n].copy_from_slice(&data[..n]);
                p.header_len += n;
                data = &data[n..];
                if p.header_len < want {
                    continue;
                }
                p.header_len = 0;
                counters.records += 1;
                p.records_seen += 1;
                if sslv2 {
                    let len = usize::from(p.header[0] & 0x7f) << 8 | usize::from(p.header[1]);
                    counters.sslv2_records += 1;
                    p.record_is_sslv2 = true;
                    p.record_remaining = len;
                    p.sslv2_record.clear();
                    if len == 0 {
                        self.finish_sslv2_record(d, counters);
                    }
                    continue;
                }
                let content_type = p.header[0];
                let valid_type = (CONTENT_CHANGE_CIPHER_SPEC..=CONTENT_HEARTBEAT).contains(&content_type);
                if !valid_type || p.header[1] != 3 {
                    counters.invalid_records += 1;
                    p.stopped = true;
                    return;
                }
                let len = usize::from(u16::from_be_bytes([p.header[3], p.header[4]]));
                if len > MAX_RECORD_LEN {
                    counters.record_overflows += 1;
                }
                p.record_type = content_type;
                p.record_remaining = len;
                if len == 0 {
                    self.finish_record(d, counters);
                }
                continue;
            }
            // Record body.
            let n = p.record_remaining.min(data.len());
            let (body, rest) = data.split_at(n);
            data = rest;
            p.record_remaining -= n;
            if p.record_is_sslv2 {
                // Only the first SSLv2 record (the hello) matters; it is at most 32 KiB.
                if p.records_seen == 1 {
                    p.sslv2_record.extend_from_slice(body);
                }
                if p.record_remaining == 0 {
                    self.finish_sslv2_record(d, counters);
                }
                continue;
            }
            if p.record_type == CONTENT_HANDSHAKE && !p.encrypted {
                self.handshake_bytes(d, body, counters);
            }
            if self.dirs[d].record_remaining == 0 {
                self.finish_record(d, counters);
            }
        }
    }

    /// Bytes of the current record's body in `dir` that parsing would pass over unseen
    /// (anything but a plaintext handshake record), less its last byte: that one still
    /// arrives through [`TlsState::parse`] and completes the record on the same packet as
    /// when every byte is read, so what follows a record (counters, raw triggers, the
    /// session's progress) happens at the same point.
    pub fn skippable_body(&self, direction: Direction) -> u64 {
        let p = &self.dirs[direction.index()];
        let plaintext_handshake = p.record_type == CONTENT_HANDSHAKE && !p.encrypted;
        if p.stopped || p.record_is_sslv2 || plaintext_handshake {
            return 0;
        }
        (p.record_remaining as u64).saturating_sub(1)
    }

    /// Passes over `len` bytes (at most [`TlsState::skippable_body`]) of the current
    /// record's body in `direction`.
    pub fn skip_body(&mut self, direction: Direction, len: u64) {
        let len = len.min(self.skippable_body(direction)) as usize;
        self.dirs[direction.index()].record_remaining -= len;
    }

    /// Bytes were lost in this direction: record boundaries are unknown, so stop parsing it.
    pub fn on_gap(&mut self, direction: Direction, counters: &mut TlsCounters) {
        counters.gaps += 1;
        self.dirs[direction.index()].stopped = true;
    }

    fn finish_record(&mut self, d: usize, counters: &mut TlsCounters) {
        let p = &mut self.dirs[d];
        match p.record_type {
            CONTENT_CHANGE_CIPHER_SPEC => p.encrypted = true,
            CONTENT_APPLICATION_DATA => {
                self.app_data[d] = true;
                counters.encrypted_records += 1;
                self.encrypted_records[d] += 1;
            }
            CONTENT_HANDSHAKE if p.encrypted => {
                counters.encrypted_records += 1;
                self.encrypted_records[d] += 1;
            }
            _ => {}
        }
    }

    fn finish_sslv2_record(&mut self, d: usize, counters: &mut TlsCounters) {
        let p = &mut self.dirs[d];
        p.record_is_sslv2 = false;
        let record = std::mem::take(&mut p.sslv2_record);
        match (record.first(), d) {
            (Some(&1), 0) if self.client_hello.is_none() => match parse_sslv2_client_hello(&record) {
                Some(hello) => self.client_hello = Some(hello),
                None => counters.invalid_handshake += 1,
            },
            // SSLv2 ServerHello: type, session-id-hit, certificate type, version.
            (Some(&4), 1) => {
                if let Some(version) = bytes::be_u16(&record, 3) {
                    self.sslv2_server_version = Some(version);
                }
            }
            _ => {}
        }
    }

    /// Appends handshake record bytes and handles every complete message.
    fn handshake_bytes(&mut self, d: usize, mut body: &[u8], counters: &mut TlsCounters) {
        let max = self.config.max_handshake_len;
        while !body.is_empty() {
            let p = &mut self.dirs[d];
            if p.handshake_skip > 0 {
                let n = p.handshake_skip.min(body.len());
                p.handshake_skip -= n;
                body = &body[n..];
                continue;
            }
            // Fast path: whole messages straight from the record when nothing is pending.
            // An oversized one takes the slow path, which skips it: how the stream was cut
            // must not decide whether it is parsed.
            if p.handshake.is_empty() {
                if let Some(len) = bytes::be_u24(body, 1) {
                    let len = len as usize;
                    if body.len() >= 4 + len && len <= max {
                        let (msg, rest) = body.split_at(4 + len);
                        body = rest;
                        self.handshake_message(d, msg[0], &msg[4..], counters);
                        continue;
                    }
                }
            }
            let p = &mut self.dirs[d];
            let have = p.handshake.len();
            // Type and 3-byte length first.
            let Some(len) = bytes::be_u24(&p.handshake, 1) else {
                let n = (4 - have).min(body.len());
                p.handshake.extend_from_slice(&body[..n]);
                body = &body[n..];
                continue;
            };
            let len = len as usize;
            if len > max {
                counters.handshake_too_large += 1;
                p.handshake_skip = len;
                p.handshake.clear();
                continue;
            }
            let n = (4 + len - have).min(body.len());
            p.handshake.extend_from_slice(&body[..n]);
            body = &body[n..];
            if p.handshake.len() == 4 + len {
                let msg = std::mem::take(&mut p.handshake);
                self.handshake_message(d, msg[0], &msg[4..], counters);
                let mut msg = msg;
                msg.clear();
                if self.dirs[d].handshake.capacity() == 0 && msg.capacity() <= 64 * 1024 {
                    self.dirs[d].handshake = msg;
                }
            }
        }
    }

    fn handshake_message(&mut self, d: usize, msg_type: u8, body: &[u8], counters: &mut TlsCounters) {
        counters.handshake_messages += 1;
        match (msg_type, d) {
            (HANDSHAKE_CLIENT_HELLO, 0) if self.client_hello.is_none() => match parse_client_hello(body) {
                Some(hello) => self.client_hello = Some(hello),
                None => counters.invalid_handshake += 1,
            },
            (HANDSHAKE_SERVER_HELLO, 1) if self.server_hello.is_none() => match parse_server_hello(body) {
                Some(hello) => self.server_hello = Some(hello),
                None => counters.invalid_handshake += 1,
            },
            (HANDSHAKE_CERTIFICATE_REQUEST, 1) => self.client_cert_requested = true,
            (HANDSHAKE_CERTIFICATE, _) if !self.chain_seen[d] => {
                self.chain_seen[d] = true;
                self.store_chain(d, body, counters);
            }
            _ => {}
        }
    }

    fn store_chain(&mut self, d: usize, body: &[u8], counters: &mut TlsCounters) {
        let Some(list) = Cursor::new(body).be_u24_prefixed() else {
            counters.invalid_handshake += 1;
            return;
        };
        let mut certs = Cursor::new(list);
        while certs.remaining() >= 3 {
            let Some(der) = certs.be_u24_prefixed() else {
                counters.invalid_handshake += 1;
                return;
            };
            let len = der.len();
            let p = &mut self.dirs[d];
            if self.certs[d].len() >= self.config.max_certs || p.cert_bytes_stored + len > self.config.max_cert_bytes {
                counters.certs_not_stored += 1;
                continue;
            }
            p.cert_bytes_stored += len;
            let info = parse_certificate(der);
            if info.is_none() {
                counters.cert_parse_errors += 1;
            }
            self.certs[d].push(Certificate { der: der.to_vec(), fingerprint: sha1_fingerprint(der), info });
        }
    }

    pub fn client_hello(&self) -> Option<&ClientHello> {
        self.client_hello.as_ref()
    }

    pub fn server_hello(&self) -> Option<&ServerHello> {
        self.server_hello.as_ref()
    }

    /// `tls.sni`.
    pub fn sni(&self) -> Option<&[u8]> {
        self.client_hello.as_ref()?.sni.as_deref()
    }

    /// `ja3.string` / `ja3.hash` (None for an SSLv2 hello).
    pub fn ja3(&self) -> Option<(&str, &str)> {
        let h = self.client_hello.as_ref().filter(|h| !h.sslv2)?;
        Some((&h.ja3_string, &h.ja3_hash))
    }

    /// `ja3s.string` / `ja3s.hash`.
    pub fn ja3s(&self) -> Option<(&str, &str)> {
        let h = self.server_hello.as_ref()?;
        Some((&h.ja3s_string, &h.ja3s_hash))
    }

    /// `tls.alpn` values offered by the client.
    pub fn client_alpns(&self) -> &[Vec<u8>] {
        self.client_hello.as_ref().map_or(&[], |h| &h.alpn)
    }

    pub fn server_alpn(&self) -> Option<&[u8]> {
        self.server_hello.as_ref()?.alpn.as_deref()
    }

    /// Negotiated version: the server's choice (supported_versions first), else what the
    /// client offered. This is what `tls.version` compares against.
    pub fn version(&self) -> Option<u16> {
        if let Some(s) = &self.server_hello {
            return Some(s.selected_version.unwrap_or(s.version));
        }
        if let Some(v) = self.sslv2_server_version {
            return Some(v);
        }
        self.client_hello.as_ref().map(|c| c.version)
    }

    /// The certificate chain sent in `direction` (server certificates go `ToClient`).
    pub fn certificates(&self, direction: Direction) -> &[Certificate] {
        &self.certs[direction.index()]
    }

    /// The server's leaf certificate, parsed (`tls.cert_subject`, `tls.cert_issuer`, ...).
    pub fn server_cert(&self) -> Option<&CertInfo> {
        self.certs[1].first()?.info.as_ref()
    }

    /// Encrypted records seen in `direction`.
    pub fn encrypted_records(&self, direction: Direction) -> u64 {
        self.encrypted_records[direction.index()]
    }

    /// The session's record is due, as Suricata decides its TLS transaction is complete:
    /// the certificate that ends the handshake parsed (the server's, or the client's when
    /// the server asked for one), or the client switched to encrypted records (or sent
    /// application data) and the server sent application data.
    pub fn log_complete(&self) -> bool {
        let cert = |d: usize| self.certs[d].first().is_some_and(|c| c.info.is_some());
        let by_cert = if self.client_cert_requested { cert(0) } else { cert(1) };
        let client_done = self.dirs[0].encrypted || self.app_data[0];
        by_cert || client_done && self.app_data[1]
    }

    /// The session resumed an earlier one (the server echoed the client's session id, or
    /// the client offered a session ticket), as Suricata flags it.
    pub fn resumed(&self) -> bool {
        let (Some(c), Some(s)) = (&self.client_hello, &self.server_hello) else {
            return self.client_hello.as_ref().is_some_and(|c| c.session_ticket);
        };
        c.session_ticket || !c.session_id.is_empty() && c.session_id == s.session_id
    }

    /// TLS 1.3 (or one of its drafts) was chosen: no certificate is visible, and the
    /// session is logged without one.
    pub fn logs_without_cert(&self) -> bool {
        self.server_hello.as_ref().is_some_and(|s| {
            let v = s.selected_version.unwrap_or(s.version);
            v > VERSION_TLS12 || s.version >> 8 == 0x7f
        })
    }

    /// An application-data record was seen: from the server, or from the client once the
    /// ServerHello was seen (a client's 0-RTT data before it does not count), or in a
    /// session picked up without its ClientHello. Suricata stops payload inspection here.
    pub fn application_data_seen(&self) -> bool {
        self.app_data[1] || self.app_data[0] && (self.server_hello.is_some() || self.client_hello.is_none())
    }

    /// Both directions have switched to encrypted records.
    pub fn handshake_done(&self) -> bool {
        self.dirs.iter().all(|p| p.encrypted) || self.encrypted_records.iter().all(|&n| n > 0)
    }
}

/// Version as Suricata's eve writes it.
pub fn version_name(version: u16) -> String {
    match version {
        0 => "UNDETERMINED".into(),
        VERSION_SSL2 => "SSLv2".into(),
        VERSION_SSL3 => "SSLv3".into(),
        VERSION_TLS10 => "TLSv1".into(),
        VERSION_TLS11 => "TLS 1.1".into(),
        VERSION_TLS12 => "TLS 1.2".into(),
        VERSION_TLS13 => "TLS 1.3".into(),
        v if v & 0xff00 == 0x7f00 => format!("TLS 1.3 draft-{}", v & 0xff),
        v => format!("0x{v:04x}"),
    }
}

/// GREASE values (RFC 8701): 0x0a0a, 0x1a1a, ..., 0xfafa. JA3 leaves them out.
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

fn u16_list(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect()
}

/// Appends `v` in decimal (JA3's number format) without going through `fmt`.
fn push_decimal(out: &mut String, v: u16) {
    let mut digits = [0u8; 5];
    let mut at = digits.len();
    let mut n = v;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Appends `values` joined by '-'.
fn push_dash_list(out: &mut String, values: impl Iterator<Item = u16>) {
    for (i, v) in values.enumerate() {
        if i > 0 {
            out.push('-');
        }
        push_decimal(out, v);
    }
}

/// One comma-separated field of a JA3 / JA3S string.
enum Ja3Field<'a> {
    Number(u16),
    /// 16-bit values joined by '-', GREASE values left out.
    List(&'a [u16]),
    /// 8-bit values (EC point formats) joined by '-', all kept.
    Bytes(&'a [u8]),
}

/// A JA3 / JA3S string: `fields` joined by ','. Written into one buffer of about the right
/// size: formatting value by value through `fmt` was most of a ClientHello's parse cost.
fn ja3_text(fields: &[Ja3Field<'_>]) -> String {
    let numbers: usize = fields
        .iter()
        .map(|f| match f {
            Ja3Field::Number(_) => 1,
            Ja3Field::List(l) => l.len(),
            Ja3Field::Bytes(b) => b.len(),
        })
        .sum();
    let mut out = String::with_capacity(6 * numbers + fields.len());
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match *field {
            Ja3Field::Number(v) => push_decimal(&mut out, v),
            Ja3Field::List(l) => push_dash_list(&mut out, l.iter().copied().filter(|&v| !is_grease(v))),
            Ja3Field::Bytes(b) => push_dash_list(&mut out, b.iter().map(|&v| u16::from(v))),
        }
    }
    out
}

/// Lowercase hex MD5 (JA3, JA3S; SSH's HASSH too).
pub(crate) fn md5_hex(s: impl AsRef<[u8]>) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Md5::digest(s.as_ref());
    let mut out = String::with_capacity(2 * digest.len());
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Parses a ClientHello body (after the 4-byte handshake header).
pub fn parse_client_hello(body: &[u8]) -> Option<ClientHello> {
    let mut c = Cursor::new(body);
    let mut hello = ClientHello { version: c.be_u16()?, ..Default::default() };
    c.take(32)?; // random
    hello.session_id = c.u8_prefixed()?.iter().take(32).copied().collect();
    hello.ciphers = u16_list(c.be_u16_prefixed()?);
    c.u8_prefixed()?; // compression methods
                      // Extensions are optional (SSLv3, old TLS 1.0 clients).
    if !c.is_empty() {
        let mut exts = Cursor::new(c.be_u16_prefixed()?);
        while !exts.is_empty() {
            let ext_type = exts.be_u16()?;
            let data = exts.be_u16_prefixed()?;
            hello.extensions.push(ext_type);
            let mut e = Cursor::new(data);
            // A malformed extension body is tolerated: the type still counts for JA3.
            match ext_type {
                EXT_SERVER_NAME if hello.sni.is_none() => {
                    if let Some(list) = e.be_u16_prefixed() {
                        let mut names = Cursor::new(list);
                        while let (Some(kind), Some(name)) = (names.u8(), names.be_u16_prefixed()) {
                            if kind == 0 {
                                hello.sni = Some(name.to_vec());
                                break;
                            }
                        }
                    }
                }
                EXT_SUPPORTED_GROUPS => hello.groups = e.be_u16_prefixed().map(u16_list).unwrap_or_default(),
                EXT_EC_POINT_FORMATS => {
                    hello.ec_point_formats = e.u8_prefixed().map(<[u8]>::to_vec).unwrap_or_default()
                }
                EXT_SIGNATURE_ALGORITHMS => {
                    hello.signature_algorithms = e.be_u16_prefixed().map(u16_list).unwrap_or_default()
                }
                EXT_ALPN => {
                    if let Some(list) = e.be_u16_prefixed() {
                        let mut protos = Cursor::new(list);
                        while let Some(p) = protos.u8_prefixed() {
                            hello.alpn.push(p.to_vec());
                        }
                    }
                }
                EXT_SUPPORTED_VERSIONS => hello.supported_versions = e.u8_prefixed().map(u16_list).unwrap_or_default(),
                EXT_SESSION_TICKET => hello.session_ticket = true,
                _ => {}
            }
        }
    }
    hello.ja3_string = ja3_text(&[
        Ja3Field::Number(hello.version),
        Ja3Field::List(&hello.ciphers),
        Ja3Field::List(&hello.extensions),
        Ja3Field::List(&hello.groups),
        Ja3Field::Bytes(&hello.ec_point_formats),
    ]);
    hello.ja3_hash = md5_hex(&hello.ja3_string);
    Some(hello)
}

/// Parses a ServerHello body (after the 4-byte handshake header).
pub fn parse_server_hello(body: &[u8]) -> Option<ServerHello> {
    let mut c = Cursor::new(body);
    let mut hello = ServerHello { version: c.be_u16()?, ..Default::default() };
    c.take(32)?;
    // TLS 1.3 drafts up to 21 announce themselves in the version field (0x7fNN) and their
    // ServerHello has neither a session id nor a compression method.
    let draft = hello.version >> 8 == 0x7f;
    if !draft {
        hello.session_id = c.u8_prefixed()?.iter().take(32).copied().collect();
    }
    hello.cipher = c.be_u16()?;
    if !draft {
        c.u8()?; // compression
    }
    if !c.is_empty() {
        let mut exts = Cursor::new(c.be_u16_prefixed()?);
        while !exts.is_empty() {
            let ext_type = exts.be_u16()?;
            let data = exts.be_u16_prefixed()?;
            hello.extensions.push(ext_type);
            let mut e = Cursor::new(data);
            match ext_type {
                EXT_SUPPORTED_VERSIONS => hello.selected_version = e.be_u16(),
                EXT_ALPN => {
                    hello.alpn =
                        e.be_u16_prefixed().and_then(|list| Cursor::new(list).u8_prefixed()).map(<[u8]>::to_vec)
                }
                _ => {}
            }
        }
    }
    hello.ja3s_string =
        ja3_text(&[Ja3Field::Number(hello.version), Ja3Field::Number(hello.cipher), Ja3Field::List(&hello.extensions)]);
    hello.ja3s_hash = md5_hex(&hello.ja3s_string);
    Some(hello)
}

/// Parses an SSLv2 CLIENT-HELLO record body (message type byte included).
pub fn parse_sslv2_client_hello(record: &[u8]) -> Option<ClientHello> {
    let mut c = Cursor::new(record);
    if c.u8()? != 1 {
        return None;
    }
    let version = c.be_u16()?;
    let cipher_len = c.be_u16()? as usize;
    let session_len = c.be_u16()? as usize;
    let challenge_len = c.be_u16()? as usize;
    let specs = c.take(cipher_len)?;
    c.take(session_len)?;
    c.take(challenge_len)?;
    // Cipher specs are 3 bytes; those starting with 0 are TLS suites.
    let ciphers = specs.chunks_exact(3).filter(|s| s[0] == 0).map(|s| u16::from_be_bytes([s[1], s[2]])).collect();
    Some(ClientHello { version, ciphers, sslv2: true, ..Default::default() })
}

fn sha1_fingerprint(der: &[u8]) -> String {
    let digest = Sha1::digest(der);
    hex_join(&digest, false)
}

fn hex_join(bytes: &[u8], upper: bool) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        if upper {
            s.push_str(&format!("{b:02X}"));
        } else {
            s.push_str(&format!("{b:02x}"));
        }
    }
    s
}

// ---------------------------------------------------------------------------------------
// Minimal DER reading for X.509 (RFC 5280): just the fields Suricata exposes.

/// One DER element: its tag byte and content.
#[derive(Clone, Copy, Debug)]
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
}

/// Reads one element; returns it and the bytes after it. Single-byte tags, definite lengths
/// of up to 4 length bytes.
fn read_tlv(buf: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let mut c = Cursor::new(buf);
    let tag = c.u8()?;
    if tag & 0x1f == 0x1f {
        return None;
    }
    let first = c.u8()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        c.take(n)?.iter().fold(0usize, |acc, &b| acc << 8 | usize::from(b))
    };
    let content = c.take(len)?;
    Some((Tlv { tag, content }, c.rest()))
}

fn expect(buf: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (tlv, rest) = read_tlv(buf)?;
    (tlv.tag == tag).then_some((tlv.content, rest))
}

const TAG_INTEGER: u8 = 0x02;
const TAG_OCTET_STRING: u8 = 0x04;
const TAG_OID: u8 = 0x06;
const TAG_UTC_TIME: u8 = 0x17;
const TAG_GENERALIZED_TIME: u8 = 0x18;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;

/// subjectAltName, 2.5.29.17.
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// Parses the fields of a DER certificate Suricata logs and matches on.
pub fn parse_certificate(der: &[u8]) -> Option<CertInfo> {
    let (cert, _) = expect(der, TAG_SEQUENCE)?;
    let (tbs, _) = expect(cert, TAG_SEQUENCE)?;
    let mut rest = tbs;
    // [0] EXPLICIT version, optional.
    let (first, after) = read_tlv(rest)?;
    if first.tag == 0xa0 {
        rest = after;
    }
    let (serial, rest) = expect(rest, TAG_INTEGER)?;
    let (_sig_alg, rest) = expect(rest, TAG_SEQUENCE)?;
    let (issuer, rest) = expect(rest, TAG_SEQUENCE)?;
    let (validity, rest) = expect(rest, TAG_SEQUENCE)?;
    let (subject, rest) = expect(rest, TAG_SEQUENCE)?;
    let (_spki, mut rest) = expect(rest, TAG_SEQUENCE)?;
    let (nb, after) = read_tlv(validity)?;
    let (na, _) = read_tlv(after)?;
    let mut info = CertInfo {
        subject: format_name(subject)?,
        issuer: format_name(issuer)?,
        serial: hex_join(serial, true),
        not_before: parse_time(nb),
        not_after: parse_time(na),
        subject_alt_names: Vec::new(),
    };
    // Optional issuerUniqueID [1], subjectUniqueID [2], extensions [3].
    while let Some((tlv, after)) = read_tlv(rest) {
        rest = after;
        if tlv.tag == 0xa3 {
            if let Some((exts, _)) = expect(tlv.content, TAG_SEQUENCE) {
                info.subject_alt_names = parse_san(exts);
            }
        }
    }
    Some(info)
}

fn parse_san(mut exts: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    while let Some((ext, after)) = read_tlv(exts) {
        exts = after;
        let Some((oid, mut fields)) = expect(ext.content, TAG_OID) else { continue };
        if oid != OID_SUBJECT_ALT_NAME {
            continue;
        }
        // Skip the optional `critical` BOOLEAN.
        if let Some((tlv, after)) = read_tlv(fields) {
            if tlv.tag == 0x01 {
                fields = after;
            }
        }
        let Some((value, _)) = expect(fields, TAG_OCTET_STRING) else { continue };
        let Some((mut list, _)) = expect(value, TAG_SEQUENCE) else { continue };
        while let Some((gn, after)) = read_tlv(list) {
            list = after;
            match gn.tag {
                // rfc822Name, dNSName, URI: IA5String content.
                0x81 | 0x82 | 0x86 => names.push(String::from_utf8_lossy(gn.content).into_owned()),
                0x87 => match gn.content.len() {
                    4 => {
                        let a: [u8; 4] = gn.content.try_into().unwrap_or_default();
                        names.push(std::net::Ipv4Addr::from(a).to_string());
                    }
                    16 => {
                        let a: [u8; 16] = gn.content.try_into().unwrap_or_default();
                        names.push(std::net::Ipv6Addr::from(a).to_string());
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
    names
}

/// Formats a Name the way Suricata (x509-parser) does: RDNs in order joined by ", ",
/// attributes of one RDN joined by " + ", each "ABBREV=value".
fn format_name(mut rdns: &[u8]) -> Option<String> {
    let mut out = String::new();
    while !rdns.is_empty() {
        let (set, after) = expect(rdns, TAG_SET)?;
        rdns = after;
        if !out.is_empty() {
            out.push_str(", ");
        }
        let mut attrs = set;
        let mut first = true;
        while !attrs.is_empty() {
            let (attr, after) = expect(attrs, TAG_SEQUENCE)?;
            attrs = after;
            let (oid, value) = expect(attr, TAG_OID)?;
            let (value, _) = read_tlv(value)?;
            if !first {
                out.push_str(" + ");
            }
            first = false;
            match attribute_abbreviation(oid) {
                Some(abbrev) => out.push_str(abbrev),
                None => out.push_str(&oid_to_string(oid)),
            }
            out.push('=');
            out.push_str(&attribute_value(value));
        }
    }
    Some(out)
}

fn attribute_abbreviation(oid: &[u8]) -> Option<&'static str> {
    const X520: &[u8] = &[0x55, 0x04];
    if let Some(&[n]) = oid.strip_prefix(X520) {
        return Some(match n {
            3 => "CN",
            4 => "surname",
            5 => "serialNumber",
            6 => "C",
            7 => "L",
            8 => "ST",
            9 => "street",
            10 => "O",
            11 => "OU",
            12 => "title",
            13 => "description",
            15 => "businessCategory",
            17 => "postalCode",
            41 => "name",
            42 => "givenName",
            43 => "initials",
            46 => "dnQualifier",
            _ => return None,
        });
    }
    match oid {
        // 1.2.840.113549.1.9.1
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => Some("Email"),
        // 0.9.2342.19200300.100.1.25
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => Some("DC"),
        // 0.9.2342.19200300.100.1.1
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01] => Some("UID"),
        _ => None,
    }
}

fn oid_to_string(oid: &[u8]) -> String {
    let mut parts: Vec<u64> = Vec::new();
    let mut acc: u64 = 0;
    for &b in oid {
        acc = (acc << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if parts.is_empty() {
                let first = (acc / 40).min(2);
                parts.push(first);
                parts.push(acc - first * 40);
            } else {
                parts.push(acc);
            }
            acc = 0;
        }
        if acc > u64::MAX >> 8 {
            break;
        }
    }
    parts.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

fn attribute_value(value: Tlv<'_>) -> String {
    match value.tag {
        // BMPString: UTF-16BE.
        0x1e => {
            let units: Vec<u16> = value.content.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            String::from_utf16_lossy(&units)
        }
        // UTF8, Numeric, Printable, T61, Videotex, IA5, Graphic, Visible, General, ObjectDescriptor.
        0x0c | 0x12 | 0x13 | 0x14 | 0x15 | 0x16 | 0x19 | 0x1a | 0x1b | 0x07 => {
            String::from_utf8_lossy(value.content).into_owned()
        }
        _ => value.content.iter().map(|b| format!("{b:02X}")).collect(),
    }
}

/// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ) to Unix seconds.
fn parse_time(tlv: Tlv<'_>) -> Option<i64> {
    let s = tlv.content;
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(range)?;
        part.iter().try_fold(0i64, |acc, &b| b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0')))
    };
    let (year, rest) = match tlv.tag {
        TAG_UTC_TIME => {
            let yy = digits(0..2)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, 2)
        }
        TAG_GENERALIZED_TIME => (digits(0..4)?, 4),
        _ => return None,
    };
    let month = digits(rest..rest + 2)?;
    let day = digits(rest + 2..rest + 4)?;
    let hour = digits(rest + 4..rest + 6)?;
    let minute = digits(rest + 6..rest + 8)?;
    // Seconds may be missing in old UTCTime encodings.
    let second = digits(rest + 8..rest + 10).unwrap_or(0);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (era-based day counting).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let shifted_month = (month + 9) % 12; // March = 0
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146097 + day_of_era - 719468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let day_of_era = z - era * 146097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Unix seconds as Suricata's eve prints certificate times: "2016-08-08T00:00:00".
pub fn format_time(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(86400));
    let s = t.rem_euclid(86400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ja3_text_writes_every_number_width_and_leaves_grease_out() {
        let text = ja3_text(&[
            Ja3Field::Number(0),
            Ja3Field::List(&[9, 0x0a0a, 10, 99, 100, 65535, 0xfafa]),
            Ja3Field::List(&[0x1a1a]),
            Ja3Field::Bytes(&[0, 255]),
            Ja3Field::List(&[]),
        ]);
        assert_eq!(text, "0,9-10-99-100-65535,,0-255,");
    }

    fn u16b(v: u16) -> [u8; 2] {
        v.to_be_bytes()
    }

    fn ext(t: u16, data: &[u8]) -> Vec<u8> {
        let mut e = u16b(t).to_vec();
        e.extend(u16b(data.len() as u16));
        e.extend(data);
        e
    }

    fn handshake(msg_type: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![msg_type];
        m.extend(&(body.len() as u32).to_be_bytes()[1..]);
        m.extend(body);
        m
    }

    pub(crate) fn record(content_type: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![content_type, 3, 1];
        r.extend(u16b(body.len() as u16));
        r.extend(body);
        r
    }

    /// A ClientHello with GREASE values, SNI, groups, point formats, ALPN, versions.
    fn client_hello_body() -> Vec<u8> {
        let mut b = u16b(0x0303).to_vec();
        b.extend([7u8; 32]);
        b.push(0);
        let ciphers = [0x0a0a, 0x1301, 0xc02b, 0x002f];
        b.extend(u16b(ciphers.len() as u16 * 2));
        ciphers.iter().for_each(|c| b.extend(u16b(*c)));
        b.extend([1, 0]);
        let mut exts = Vec::new();
        exts.extend(ext(0x2a2a, &[]));
        let mut sni = u16b(14).to_vec();
        sni.push(0);
        sni.extend(u16b(11));
        sni.extend(b"example.com");
        exts.extend(ext(0, &sni));
        exts.extend(ext(10, &[0, 6, 0x3a, 0x3a, 0, 29, 0, 23]));
        exts.extend(ext(11, &[1, 0]));
        exts.extend(ext(16, &[0, 12, 2, b'h', b'2', 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1']));
        exts.extend(ext(43, &[4, 0x03, 0x04, 0x03, 0x03]));
        b.extend(u16b(exts.len() as u16));
        b.extend(exts);
        b
    }

    fn server_hello_body(exts: &[u8]) -> Vec<u8> {
        let mut b = u16b(0x0303).to_vec();
        b.extend([9u8; 32]);
        b.push(0);
        b.extend(u16b(0xc02f));
        b.push(0);
        b.extend(u16b(exts.len() as u16));
        b.extend(exts);
        b
    }

    // --- A small DER certificate builder for tests ---
    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let n = content.len();
        if n < 0x80 {
            out.push(n as u8);
        } else if n < 0x100 {
            out.extend([0x81, n as u8]);
        } else {
            out.extend([0x82, (n >> 8) as u8, n as u8]);
        }
        out.extend(content);
        out
    }

    fn name(attrs: &[(&[u8], u8, &str)]) -> Vec<u8> {
        let mut rdns = Vec::new();
        for (oid, tag, value) in attrs {
            let attr = [tlv(TAG_OID, oid), tlv(*tag, value.as_bytes())].concat();
            rdns.extend(tlv(TAG_SET, &tlv(TAG_SEQUENCE, &attr)));
        }
        tlv(TAG_SEQUENCE, &rdns)
    }

    fn test_cert() -> Vec<u8> {
        let c: &[u8] = &[0x55, 4, 6];
        let o: &[u8] = &[0x55, 4, 10];
        let cn: &[u8] = &[0x55, 4, 3];
        let issuer = name(&[(c, 0x13, "US"), (o, 0x13, "Let's Encrypt"), (cn, 0x13, "R3")]);
        let subject = name(&[(cn, 0x0c, "www.example.org")]);
        let validity = [tlv(TAG_UTC_TIME, b"160808000000Z"), tlv(TAG_GENERALIZED_TIME, b"20500101123456Z")].concat();
        let san_list = [tlv(0x82, b"www.example.org"), tlv(0x82, b"example.org"), tlv(0x87, &[10, 0, 0, 1])].concat();
        let san_ext = tlv(
            TAG_SEQUENCE,
            &[tlv(TAG_OID, OID_SUBJECT_ALT_NAME), tlv(TAG_OCTET_STRING, &tlv(TAG_SEQUENCE, &san_list))].concat(),
        );
        let tbs = [
            tlv(0xa0, &tlv(TAG_INTEGER, &[2])),
            tlv(TAG_INTEGER, &[0x00, 0x5c, 0x19, 0xb7]),
            tlv(TAG_SEQUENCE, &tlv(TAG_OID, &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 11])),
            issuer,
            tlv(TAG_SEQUENCE, &validity),
            subject,
            tlv(TAG_SEQUENCE, &[0x05, 0x00]),
            tlv(0xa3, &tlv(TAG_SEQUENCE, &san_ext)),
        ]
        .concat();
        tlv(TAG_SEQUENCE, &[tlv(TAG_SEQUENCE, &tbs), tlv(TAG_SEQUENCE, &[0x05, 0x00]), tlv(0x03, &[0, 1, 2])].concat())
    }

    fn certificate_msg(certs: &[Vec<u8>]) -> Vec<u8> {
        let mut list: Vec<u8> = Vec::new();
        for c in certs {
            list.extend(&(c.len() as u32).to_be_bytes()[1..]);
            list.extend(c);
        }
        let mut body = (list.len() as u32).to_be_bytes()[1..].to_vec();
        body.extend(list);
        handshake(HANDSHAKE_CERTIFICATE, &body)
    }

    pub(crate) fn client_stream() -> Vec<u8> {
        let mut s = record(CONTENT_HANDSHAKE, &handshake(1, &client_hello_body()));
        s.extend(record(CONTENT_CHANGE_CIPHER_SPEC, &[1]));
        s.extend(record(CONTENT_HANDSHAKE, &[0xde; 40])); // encrypted Finished
        s.extend(record(CONTENT_APPLICATION_DATA, &[0xab; 100]));
        s
    }

    pub(crate) fn server_stream() -> Vec<u8> {
        let alpn = ext(16, &[0, 9, 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1']);
        let exts = [ext(0xff01, &[0]), ext(11, &[1, 0]), alpn].concat();
        let mut hs = handshake(2, &server_hello_body(&exts));
        hs.extend(certificate_msg(&[test_cert(), test_cert()]));
        hs.extend(handshake(14, &[]));
        // The handshake messages spread over records of 50 bytes each.
        let mut s = Vec::new();
        for chunk in hs.chunks(50) {
            s.extend(record(CONTENT_HANDSHAKE, chunk));
        }
        s.extend(record(CONTENT_CHANGE_CIPHER_SPEC, &[1]));
        s.extend(record(CONTENT_HANDSHAKE, &[0xee; 40]));
        s
    }

    fn parsed(client: &[u8], server: &[u8]) -> (TlsState, TlsCounters) {
        let mut st = TlsState::default();
        let mut c = TlsCounters::default();
        st.parse(Direction::ToServer, client, &mut c);
        st.parse(Direction::ToClient, server, &mut c);
        (st, c)
    }

    #[test]
    fn grease_detection() {
        assert!(is_grease(0x0a0a) && is_grease(0xfafa) && is_grease(0x3a3a));
        assert!(!is_grease(0x0a1a) && !is_grease(0x1301) && !is_grease(0x0a0b));
    }

    #[test]
    fn client_hello_fields_and_ja3_without_grease() {
        let (st, c) = parsed(&client_stream(), &[]);
        let h = st.client_hello().unwrap();
        assert_eq!(st.sni(), Some(b"example.com".as_slice()));
        assert_eq!(h.ciphers, vec![0x0a0a, 0x1301, 0xc02b, 0x002f]);
        assert_eq!(h.alpn, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert_eq!(h.supported_versions, vec![0x0304, 0x0303]);
        assert_eq!(h.ja3_string, "771,4865-49195-47,0-10-11-16-43,29-23,0");
        assert_eq!(h.ja3_hash, md5_hex("771,4865-49195-47,0-10-11-16-43,29-23,0"));
        assert_eq!(c.encrypted_records, 2, "Finished after CCS and application data");
        assert_eq!(st.encrypted_records(Direction::ToServer), 2);
    }

    #[test]
    fn md5_known_answer() {
        // RFC 1321 test suite.
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn ja3_of_conformance_client_hello() {
        // ClientHello from the detect-bidir-ja3 capture: the rule expects "771,49196-49200"
        // at the start of ja3.string. Built here with its cipher order and no extensions.
        let mut b = u16b(0x0303).to_vec();
        b.extend([0u8; 32]);
        b.push(0);
        b.extend(u16b(4));
        b.extend(u16b(49196));
        b.extend(u16b(49200));
        b.extend([1, 0]);
        let h = parse_client_hello(&b).unwrap();
        assert_eq!(h.ja3_string, "771,49196-49200,,,");
    }

    #[test]
    fn server_hello_certificates_and_ja3s() {
        let (st, c) = parsed(&client_stream(), &server_stream());
        let s = st.server_hello().unwrap();
        assert_eq!(s.cipher, 0xc02f);
        assert_eq!(s.ja3s_string, "771,49199,65281-11-16");
        assert_eq!(st.ja3s().unwrap().1, md5_hex("771,49199,65281-11-16"));
        assert_eq!(st.server_alpn(), Some(b"http/1.1".as_slice()));
        assert_eq!(st.version(), Some(VERSION_TLS12));
        assert_eq!(st.certificates(Direction::ToClient).len(), 2);
        assert_eq!(st.certificates(Direction::ToClient)[0].der, test_cert());
        let info = st.server_cert().unwrap();
        assert_eq!(info.subject, "CN=www.example.org");
        assert_eq!(info.issuer, "C=US, O=Let's Encrypt, CN=R3");
        assert_eq!(info.serial, "00:5C:19:B7");
        assert_eq!(format_time(info.not_before.unwrap()), "2016-08-08T00:00:00");
        assert_eq!(format_time(info.not_after.unwrap()), "2050-01-01T12:34:56");
        assert_eq!(info.subject_alt_names, vec!["www.example.org", "example.org", "10.0.0.1"]);
        let fp = &st.certificates(Direction::ToClient)[0].fingerprint;
        assert_eq!(fp.len(), 59);
        assert!(fp.bytes().all(|b| b == b':' || b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(c.invalid_handshake, 0);
        assert!(st.handshake_done());
    }

    #[test]
    fn sha1_known_answer() {
        // FIPS 180 example "abc".
        assert_eq!(sha1_fingerprint(b"abc").replace(':', ""), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn eve_object() {
        let (st, _) = parsed(&client_stream(), &server_stream());
        let v = crate::record::value::record(|w| st.write_record(w, true, |_| String::new()));
        assert_eq!(v["subject"], "CN=www.example.org");
        assert_eq!(v["issuerdn"], "C=US, O=Let's Encrypt, CN=R3");
        assert_eq!(v["serial"], "00:5C:19:B7");
        assert_eq!(v["sni"], "example.com");
        assert_eq!(v["version"], "TLS 1.2");
        assert_eq!(v["notbefore"], "2016-08-08T00:00:00");
        assert_eq!(v["ja3"]["string"], "771,4865-49195-47,0-10-11-16-43,29-23,0");
        assert_eq!(v["client_alpns"], serde_json::json!(["h2", "http/1.1"]));
        assert_eq!(v["server_alpns"], serde_json::json!(["http/1.1"]));
        let v = crate::record::value::record(|w| st.write_record(w, false, |_| String::new()));
        assert!(v.get("ja3").is_none());
        // Nothing seen: only the version.
        let v = crate::record::value::record(|w| TlsState::default().write_record(w, true, |_| String::new()));
        assert_eq!(v, serde_json::json!({"version": "UNDETERMINED"}));
    }

    #[test]
    fn tls13_draft_server_hello_without_session_id() {
        // Layout of the tls13-draft18 capture's ServerHello: version 7f12, random, cipher,
        // extensions (key_share omitted here).
        let mut body = vec![0x7f, 0x12];
        body.extend([7u8; 32]);
        body.extend([0x13, 0x01, 0x00, 0x00]);
        let hello = parse_server_hello(&body).expect("draft ServerHello parses");
        assert_eq!((hello.version, hello.cipher), (0x7f12, 0x1301));
        assert_eq!(version_name(hello.version), "TLS 1.3 draft-18");
    }

    #[test]
    fn eve_field_sets_and_when_a_record_is_due() {
        use super::record::TlsFields;
        let (st, _) = parsed(&client_stream(), &server_stream());
        // The server certificate ends the handshake as Suricata sees it.
        assert!(st.log_complete() && st.logs_record(false));
        let fields =
            |f: TlsFields| crate::record::value::record(|w| st.write_fields(w, f, |der| der.len().to_string()));
        let basic = fields(TlsFields::BASIC);
        assert_eq!(basic["subject"], "CN=www.example.org");
        assert!(basic.get("version").is_none() && basic.get("serial").is_none() && basic.get("sni").is_none());
        let custom = fields(TlsFields::SERIAL.with(TlsFields::CERTIFICATE).with(TlsFields::CHAIN));
        let der_len = st.certificates(Direction::ToClient)[0].der.len().to_string();
        assert_eq!(custom["certificate"], der_len.as_str());
        assert_eq!(custom["chain"][0], der_len.as_str());
        assert!(custom.get("subject").is_none());
        assert_eq!(TlsFields::by_name("Not_After"), Some(TlsFields::NOT_AFTER));
        assert_eq!(TlsFields::by_name("client_handshake"), None);
        // A hello alone is not done, and without a certificate or TLS 1.3 not logged.
        let (hello_only, _) = parsed(&client_stream(), &[]);
        assert!(!hello_only.log_complete() && !hello_only.logs_record(true));
    }

    #[test]
    fn tls13_selected_version_and_encrypted_server_handshake() {
        let exts = ext(43, &[0x03, 0x04]);
        let mut server = record(CONTENT_HANDSHAKE, &handshake(2, &server_hello_body(&exts)));
        server.extend(record(CONTENT_CHANGE_CIPHER_SPEC, &[1]));
        server.extend(record(CONTENT_APPLICATION_DATA, &[0x55; 300]));
        let (st, _) = parsed(&client_stream(), &server);
        assert_eq!(st.version(), Some(VERSION_TLS13));
        assert!(st.certificates(Direction::ToClient).is_empty());
        assert_eq!(version_name(st.version().unwrap()), "TLS 1.3");
    }

    #[test]
    fn sslv2_client_hello_then_tls_server() {
        // Start of the sslv2-tls-upgrade-01 capture: SSLv2 CLIENT-HELLO offering TLS 1.0.
        let mut hello = vec![1, 0x03, 0x01, 0, 9, 0, 0, 0, 16];
        hello.extend([0x01, 0x00, 0x80, 0x00, 0x00, 0x39, 0x00, 0x00, 0x35]);
        hello.extend([0xcc; 16]);
        let mut client = vec![0x80 | (hello.len() >> 8) as u8, hello.len() as u8];
        client.extend(&hello);
        let mut c = TlsCounters::default();
        let mut st = TlsState::default();
        st.parse(Direction::ToServer, &client, &mut c);
        let h = st.client_hello().unwrap();
        assert!(h.sslv2);
        assert_eq!(h.version, VERSION_TLS10);
        assert_eq!(h.ciphers, vec![0x39, 0x35]);
        assert!(st.ja3().is_none());
        assert_eq!(c.sslv2_records, 1);
        // The client continues with TLS records after the upgrade.
        st.parse(Direction::ToServer, &record(CONTENT_HANDSHAKE, &handshake(16, &[0; 10])), &mut c);
        assert_eq!(c.invalid_records, 0);
        let mut sh = server_hello_body(&[]);
        sh.truncate(sh.len() - 2); // no extensions block at all
        let mut server = record(CONTENT_HANDSHAKE, &handshake(2, &sh));
        server.extend(record(CONTENT_HANDSHAKE, &certificate_msg(&[test_cert()])));
        st.parse(Direction::ToClient, &server, &mut c);
        assert_eq!(st.server_hello().unwrap().ja3s_string, "771,49199,");
        assert_eq!(st.server_cert().unwrap().serial, "00:5C:19:B7");
    }

    #[test]
    fn invalid_record_stops_direction() {
        let mut c = TlsCounters::default();
        let mut st = TlsState::default();
        st.parse(Direction::ToServer, b"GET / HTTP/1.1\r\n\r\n", &mut c);
        assert_eq!(c.invalid_records, 1);
        st.parse(Direction::ToServer, &client_stream(), &mut c);
        assert!(st.client_hello().is_none(), "a stopped direction stays stopped");
    }

    #[test]
    fn oversized_handshake_is_skipped_and_counted() {
        let mut st = TlsState::new(TlsConfig { max_handshake_len: 100, ..Default::default() });
        let mut c = TlsCounters::default();
        let big = handshake(11, &[0u8; 300]);
        let mut s = Vec::new();
        for chunk in big.chunks(64) {
            s.extend(record(CONTENT_HANDSHAKE, chunk));
        }
        s.extend(record(CONTENT_HANDSHAKE, &handshake(2, &server_hello_body(&[]))));
        st.parse(Direction::ToClient, &s, &mut c);
        assert_eq!(c.handshake_too_large, 1);
        assert!(st.server_hello().is_some(), "parsing resumes after the skipped message");
    }

    /// Found by the fuzz target `tls`: a message over `max_handshake_len` was parsed when it
    /// arrived whole and skipped when it arrived in pieces.
    #[test]
    fn oversized_handshake_is_skipped_however_it_arrives() {
        let cfg = TlsConfig { max_handshake_len: 50, ..Default::default() };
        let stream = record(CONTENT_HANDSHAKE, &handshake(HANDSHAKE_CLIENT_HELLO, &client_hello_body()));
        for piece in [stream.len(), 7, 1] {
            let mut st = TlsState::new(cfg.clone());
            let mut c = TlsCounters::default();
            for p in stream.chunks(piece) {
                st.parse(Direction::ToServer, p, &mut c);
            }
            assert!(st.client_hello().is_none(), "pieces of {piece}");
            assert_eq!(c.handshake_too_large, 1, "pieces of {piece}");
        }
    }

    #[test]
    fn cert_limits_hold() {
        let mut st = TlsState::new(TlsConfig { max_certs: 1, ..Default::default() });
        let mut c = TlsCounters::default();
        let msg = certificate_msg(&[test_cert(), test_cert(), test_cert()]);
        st.parse(Direction::ToClient, &record(CONTENT_HANDSHAKE, &msg), &mut c);
        assert_eq!(st.certificates(Direction::ToClient).len(), 1);
        assert_eq!(c.certs_not_stored, 2);
        let mut st = TlsState::new(TlsConfig { max_cert_bytes: 10, ..Default::default() });
        st.parse(Direction::ToClient, &record(CONTENT_HANDSHAKE, &msg), &mut c);
        assert!(st.certificates(Direction::ToClient).is_empty());
    }

    #[test]
    fn gap_stops_direction() {
        let mut st = TlsState::default();
        let mut c = TlsCounters::default();
        let s = client_stream();
        st.parse(Direction::ToServer, &s[..20], &mut c);
        st.on_gap(Direction::ToServer, &mut c);
        st.parse(Direction::ToServer, &s[40..], &mut c);
        assert!(st.client_hello().is_none());
        assert_eq!(c.gaps, 1);
    }

    #[test]
    fn time_round_trip() {
        for t in [0i64, 951782400, 1470614400, 2524608000, -86400] {
            let (y, m, d) = civil_from_days(t.div_euclid(86400));
            assert_eq!(days_from_civil(y, m, d) * 86400, t - t.rem_euclid(86400));
        }
        assert_eq!(format_time(951782400), "2000-02-29T00:00:00");
    }

    #[test]
    fn name_formatting_multi_valued_rdn_and_unknown_oid() {
        let attr1 = [tlv(TAG_OID, &[0x55, 4, 3]), tlv(0x13, b"a")].concat();
        let attr2 = [tlv(TAG_OID, &[0x2b, 6, 1, 4, 1, 0x82, 0x37, 1]), tlv(0x1e, &[0, b'x', 0, b'y'])].concat();
        let set = tlv(TAG_SET, &[tlv(TAG_SEQUENCE, &attr1), tlv(TAG_SEQUENCE, &attr2)].concat());
        assert_eq!(format_name(&set).unwrap(), "CN=a + 1.3.6.1.4.1.311.1=xy");
        assert_eq!(oid_to_string(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d]), "1.2.840.113549");
    }

    /// First record of each direction of the bug-8336 conformance capture (a TLS 1.3 session
    /// to docs.suricata.io); its rules expect these JA3/JA3S hashes.
    const CAPTURED_CLIENT_HELLO: &[&str] = &[
        "16030101ca010001c6030372dedefc93a13edcac521b7e0a16e9a120bd5237cf8b7835dca507ec35945d6a2029aff982",
        "174217c3b1dbc2c6b262dd49e4df9784cd56142d6d6105e637274054002813021301c02cc02bc030c02fc024c023c028",
        "c027c00ac009c014c013009d009c003d003c0035002f01000155000000150013000010646f63732e7375726963617461",
        "2e696f000500050100000000002b00050403040303000d001a0018080408050806040105010201040305030203020206",
        "01060300230000000a00080006001d00170018000b000201000010000b000908687474702f312e31003300d000ce001d",
        "00204fedfaf1375f0eaa35e0dd46d38006ebd817965c9f3cfd252053da1e0ce88b4e00170041045c2c51a8406214865a",
        "f7e9c8a7014a0f7bc54db06ac064ea9dcdc4ee9d3a5a3d51e832060aecb2c130af098ec1c4c7e63eab4793ab7b75a2c1",
        "66684b728412ec001800610428abc3b78589b51a5f55e972493974bc90960936a136481208b96b5194ebd95c9e53ab73",
        "784b7bece92eceabbbb2480d6c1f6ef35dad350e3e9ea416d0148390a5cbefbe5197244095354b9730f494fc2c3c2b46",
        "16c641b7887b608855130c400031000000170000ff01000100002d00020101",
    ];
    const CAPTURED_SERVER_HELLO: &[&str] = &[
        "160303007a0200007603030603c1bb5be648b3d8c4276e19e67c27a2fa847da818476764f31cee402e4cc02029aff982",
        "174217c3b1dbc2c6b262dd49e4df9784cd56142d6d6105e637274054130200002e00330024001d00207f8d7ae4fef285",
        "ab4c3180d212a3b3d0f7d34ad2c86786ad7f698e05cda00b2c002b00020304",
    ];

    fn unhex(parts: &[&str]) -> Vec<u8> {
        let s: String = parts.concat();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn captured_hellos_give_suricata_ja3_hashes() {
        let client = unhex(CAPTURED_CLIENT_HELLO);
        let server = unhex(CAPTURED_SERVER_HELLO);
        let mut whole = TlsState::default();
        let mut c = TlsCounters::default();
        whole.parse(Direction::ToServer, &client, &mut c);
        whole.parse(Direction::ToClient, &server, &mut c);
        assert_eq!(whole.ja3().unwrap().1, "fae0e5d973c96ae1888b99538efa0363");
        assert_eq!(whole.ja3s().unwrap().1, "907bf3ecef1c987c889946b737b43de8");
        assert_eq!(whole.ja3s().unwrap().0, "771,4866,51-43");
        assert_eq!(whole.sni(), Some(b"docs.suricata.io".as_slice()));
        assert_eq!(whole.version(), Some(VERSION_TLS13));
        let mut bytewise = TlsState::default();
        feed_in_pieces(&client, &[1], Direction::ToServer, &mut bytewise);
        feed_in_pieces(&server, &[1], Direction::ToClient, &mut bytewise);
        assert_eq!(summary(&whole), summary(&bytewise));
    }

    fn feed_in_pieces(stream: &[u8], cuts: &[usize], dir: Direction, st: &mut TlsState) {
        let mut c = TlsCounters::default();
        let mut rest = stream;
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].clamp(1, rest.len());
            st.parse(dir, &rest[..n], &mut c);
            rest = &rest[n..];
            i += 1;
        }
    }

    fn summary(st: &TlsState) -> (Option<ClientHello>, Option<ServerHello>, Vec<Certificate>, u64, u64) {
        (
            st.client_hello().cloned(),
            st.server_hello().cloned(),
            st.certificates(Direction::ToClient).to_vec(),
            st.encrypted_records(Direction::ToServer),
            st.encrypted_records(Direction::ToClient),
        )
    }

    #[test]
    fn one_byte_at_a_time_equals_whole() {
        let (whole, _) = parsed(&client_stream(), &server_stream());
        let mut bytewise = TlsState::default();
        feed_in_pieces(&client_stream(), &[1], Direction::ToServer, &mut bytewise);
        feed_in_pieces(&server_stream(), &[1], Direction::ToClient, &mut bytewise);
        assert_eq!(summary(&whole), summary(&bytewise));
        assert!(whole.server_cert().is_some());
    }

    proptest! {
        #[test]
        fn any_split_equals_whole(cuts in proptest::collection::vec(1usize..200, 1..30)) {
            let (whole, _) = parsed(&client_stream(), &server_stream());
            let mut split = TlsState::default();
            feed_in_pieces(&client_stream(), &cuts, Direction::ToServer, &mut split);
            feed_in_pieces(&server_stream(), &cuts, Direction::ToClient, &mut split);
            prop_assert_eq!(summary(&whole), summary(&split));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..800)) {
            let mut st = TlsState::default();
            let mut c = TlsCounters::default();
            st.parse(Direction::ToServer, &data, &mut c);
            st.parse(Direction::ToClient, &data, &mut c);
            let _ = parse_client_hello(&data);
            let _ = parse_server_hello(&data);
            let _ = parse_certificate(&data);
            let _ = parse_sslv2_client_hello(&data);
            // Every open object or list is closed again (the test writer checks).
            let _ = crate::record::value::record(|w| st.write_record(w, true, |_| String::new()));
        }

        #[test]
        fn mutated_handshakes_never_panic(pos in 0usize..2000, byte in any::<u8>()) {
            let mut server = server_stream();
            let i = pos % server.len();
            server[i] = byte;
            let mut client = client_stream();
            let j = pos % client.len();
            client[j] = byte;
            let (st, _) = parsed(&client, &server);
            // Every open object or list is closed again (the test writer checks).
            let _ = crate::record::value::record(|w| st.write_record(w, true, |_| String::new()));
        }

        #[test]
        fn mutated_certificates_never_panic(pos in 0usize..400, byte in any::<u8>()) {
            let mut der = test_cert();
            let i = pos % der.len();
            der[i] = byte;
            let _ = parse_certificate(&der);
        }
    }
}
