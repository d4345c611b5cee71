//! The byte-level checks of the detection-only protocols, one function per protocol and
//! direction where they differ, after Suricata's probing parsers and detection patterns.
//!
//! Each looks at the first bytes of one direction (a TCP stream's start or one UDP datagram)
//! and answers [`Probe`]: the bytes are the protocol's, they may become so with more bytes,
//! or they are not. They read only what they need and never allocate.

use crate::applayer::dns;
use crate::bytes;
use crate::stream::Direction;

/// What one protocol's check makes of a direction's first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Match,
    /// A prefix of something the protocol could start with.
    NeedMore,
    NoMatch,
}

impl Probe {
    fn from_bool(b: bool) -> Probe {
        if b {
            Probe::Match
        } else {
            Probe::NoMatch
        }
    }
}

/// `data` starts with `pattern` (ASCII case-insensitively with `nocase`), or is a prefix of it.
pub(crate) fn starts(data: &[u8], pattern: &[u8], nocase: bool) -> Probe {
    let n = data.len().min(pattern.len());
    let same = if nocase { data[..n].eq_ignore_ascii_case(&pattern[..n]) } else { data[..n] == pattern[..n] };
    match (same, data.len() >= pattern.len()) {
        (false, _) => Probe::NoMatch,
        (true, true) => Probe::Match,
        (true, false) => Probe::NeedMore,
    }
}

/// The first of `patterns` that matches, else whether one still could.
pub(crate) fn starts_any(data: &[u8], patterns: &[&[u8]], nocase: bool) -> Probe {
    let mut result = Probe::NoMatch;
    for p in patterns {
        match starts(data, p, nocase) {
            Probe::Match => return Probe::Match,
            Probe::NeedMore => result = Probe::NeedMore,
            Probe::NoMatch => {}
        }
    }
    result
}

/// RFB (VNC): the "RFB " version string both sides send first, on any port.
pub fn rfb(_dir: Direction, data: &[u8]) -> Probe {
    starts(data, b"RFB ", true)
}

/// The HTTP/2 client connection preface (prior knowledge, on any port).
pub const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub fn http2_preface(dir: Direction, data: &[u8]) -> Probe {
    match dir {
        Direction::ToServer => starts(data, HTTP2_PREFACE, false),
        Direction::ToClient => Probe::NoMatch,
    }
}

/// A server's first HTTP/2 frame on an HTTP/2 port: a SETTINGS frame header.
pub fn http2_settings(dir: Direction, data: &[u8]) -> Probe {
    if dir == Direction::ToServer {
        return Probe::NoMatch;
    }
    let (Some(len), Some(&kind), Some(&flags), Some(stream)) =
        (bytes::be_u24(data, 0), data.get(3), data.get(4), bytes::be_u32(data, 5))
    else {
        return Probe::NeedMore;
    };
    Probe::from_bool(kind == 4 && flags & 0xfe == 0 && stream & 0x8000_0000 == 0 && len <= 16384)
}

/// A NetBIOS session message carrying SMB1, SMB2/3 or an SMB3 transform header.
fn nbss_smb(data: &[u8]) -> Probe {
    if data.first().is_some_and(|&t| t != 0) {
        return Probe::NoMatch;
    }
    match data.get(4..8) {
        None => match data.get(4) {
            Some(b) if ![0xff, 0xfe, 0xfd].contains(b) => Probe::NoMatch,
            _ => Probe::NeedMore,
        },
        Some(magic) => Probe::from_bool(matches!(magic, [0xfd..=0xff, b'S', b'M', b'B'])),
    }
}

/// SMB's pattern (`|ff|SMB`, `|fe|SMB`, `|fd|SMB` at offset 4 of a session message), any port.
pub fn smb_pattern(_dir: Direction, data: &[u8]) -> Probe {
    nbss_smb(data)
}

/// SMB on its ports (139, 445): also after a first small NetBIOS message (session request,
/// positive response, keep-alive) as Suricata accepts.
pub fn smb_port(_dir: Direction, data: &[u8]) -> Probe {
    match nbss_smb(data) {
        Probe::NoMatch => {}
        other => return other,
    }
    let (Some(&kind), Some(len)) = (data.first(), bytes::be_u24(data, 1)) else {
        return Probe::NeedMore;
    };
    let len = (len & 0x1_ffff) as usize;
    if !matches!(kind, 0x81..=0x85) {
        return Probe::NoMatch;
    }
    match data.get(4 + len..) {
        Some(next) if next.len() >= 8 => match nbss_smb(next) {
            Probe::Match => Probe::Match,
            _ => Probe::NoMatch,
        },
        // A first message this small is worth waiting past (Suricata's bound).
        _ if len < 256 => Probe::NeedMore,
        _ => Probe::NoMatch,
    }
}

/// DCE/RPC over TCP: version 5.0, a valid data representation, on any port (Suricata's
/// `|05 00|` pattern confirmed by its header check).
pub fn dcerpc(_dir: Direction, data: &[u8]) -> Probe {
    match starts(data, &[5, 0], false) {
        Probe::Match => {}
        other => return other,
    }
    // rpc_vers, rpc_vers_minor, ptype, flags, drep[4], frag_len, auth_len, call_id.
    let Some(drep) = data.get(4..6) else { return Probe::NeedMore };
    if data.len() < 16 {
        return if drep[0] & 0xee == 0 && drep[1] <= 3 { Probe::NeedMore } else { Probe::NoMatch };
    }
    Probe::from_bool(drep[0] & 0xee == 0 && drep[1] <= 3)
}

/// DNP3 link layer: start bytes 0x05 0x64 and a length field of at least 5.
pub fn dnp3(_dir: Direction, data: &[u8]) -> Probe {
    if data.len() < 10 {
        return match starts(data, &[0x05, 0x64], false) {
            Probe::NoMatch => Probe::NoMatch,
            _ => Probe::NeedMore,
        };
    }
    Probe::from_bool(data[0] == 0x05 && data[1] == 0x64 && data[2] >= 5)
}

/// PostgreSQL protocol versions and the "dummy" major of the special startup requests.
const PGSQL_DUMMY_MAJOR: u16 = 1234;
/// CancelRequest, SSLRequest and GSSENCRequest minors.
const PGSQL_DUMMY_MINORS: [u16; 3] = [5678, 5679, 5680];

/// A PostgreSQL startup packet (a length, then a protocol version or a special request code).
fn pgsql_startup(data: &[u8]) -> Probe {
    let (Some(len), Some(major), Some(minor)) =
        (bytes::be_u32(data, 0), bytes::be_u16(data, 4), bytes::be_u16(data, 6))
    else {
        return Probe::NeedMore;
    };
    let known = match major {
        1..=3 => true,
        PGSQL_DUMMY_MAJOR => PGSQL_DUMMY_MINORS.contains(&minor),
        _ => false,
    };
    if len < 8 || !known {
        return Probe::NoMatch;
    }
    if data.len() < len as usize {
        Probe::NeedMore
    } else {
        Probe::Match
    }
}

/// One typed PostgreSQL message: an identifier byte, a length of at least 4 counting itself,
/// and the whole message there.
fn pgsql_message(data: &[u8]) -> Probe {
    let Some(len) = bytes::be_u32(data, 1) else { return Probe::NeedMore };
    if len < 4 {
        return Probe::NoMatch;
    }
    if data.len() < 1 + len as usize {
        Probe::NeedMore
    } else {
        Probe::Match
    }
}

/// PostgreSQL from the client: a startup packet (with a zero first byte) or a message.
pub fn pgsql_ts(_dir: Direction, data: &[u8]) -> Probe {
    match data.first() {
        None => Probe::NeedMore,
        Some(0) => pgsql_startup(data),
        Some(_) => pgsql_message(data),
    }
}

/// PostgreSQL from the server: the one-byte answer to an SSLRequest ('S' or 'N'), or a
/// message.
pub fn pgsql_tc(_dir: Direction, data: &[u8]) -> Probe {
    match data.first() {
        None => Probe::NeedMore,
        Some(b'S' | b'N') if data.len() == 1 => Probe::Match,
        Some(_) => pgsql_message(data),
    }
}

pub fn pgsql(dir: Direction, data: &[u8]) -> Probe {
    match dir {
        Direction::ToServer => pgsql_ts(dir, data),
        Direction::ToClient => pgsql_tc(dir, data),
    }
}

/// RDP: every message is in a TPKT (T.123) header, version 3.
pub fn rdp(_dir: Direction, data: &[u8]) -> Probe {
    match data.first() {
        None => Probe::NeedMore,
        Some(&b) => Probe::from_bool(b == 3),
    }
}

/// Modbus/TCP: an MBAP header with protocol id 0 and a length of 2..=254.
pub fn modbus(_dir: Direction, data: &[u8]) -> Probe {
    let (Some(proto), Some(len)) = (bytes::be_u16(data, 2), bytes::be_u16(data, 4)) else {
        return Probe::NeedMore;
    };
    if data.len() < 8 {
        return if proto == 0 && (2..=254).contains(&len) { Probe::NeedMore } else { Probe::NoMatch };
    }
    Probe::from_bool(proto == 0 && (2..=254).contains(&len))
}

/// EtherNet/IP encapsulation header (24 bytes, little-endian): a known command and status,
/// with the command's own constraints.
pub fn enip(_dir: Direction, data: &[u8]) -> Probe {
    if data.len() < 24 {
        return Probe::NeedMore;
    }
    let (Some(cmd), Some(pdulen), Some(status), Some(options)) =
        (bytes::le_u16(data, 0), bytes::le_u16(data, 2), bytes::le_u32(data, 8), bytes::le_u32(data, 20))
    else {
        return Probe::NeedMore;
    };
    if !matches!(status, 0..=3 | 0x64 | 0x65 | 0x69 | 0x6a) {
        return Probe::NoMatch;
    }
    Probe::from_bool(match cmd {
        0 => options == 0,
        0x65 => pdulen == 4,
        0x66 => pdulen == 4 || pdulen == 0,
        4 | 0x63 | 0x64 | 0x6f | 0x70 | 0x72 | 0x73 => true,
        _ => false,
    })
}

/// MQTT fixed header: an assigned message type, a QoS of at most 2, a complete remaining
/// length.
pub fn mqtt(_dir: Direction, data: &[u8]) -> Probe {
    let Some(&first) = data.first() else { return Probe::NeedMore };
    if first >> 4 == 0 || (first >> 1) & 3 > 2 {
        return Probe::NoMatch;
    }
    // Remaining length: up to 4 bytes of 7 bits, the high bit saying another follows.
    for i in 1..=4 {
        match data.get(i) {
            None => return Probe::NeedMore,
            Some(b) if b & 0x80 == 0 => return Probe::Match,
            Some(_) => {}
        }
    }
    Probe::NoMatch
}

/// A BER/DER tag-length header at the start of `data`: (tag, content length, header length).
/// `None` when incomplete; content lengths of more than 4 bytes are refused.
fn ber_header(data: &[u8]) -> Option<Result<(u8, usize, usize), ()>> {
    let tag = *data.first()?;
    let first = *data.get(1)?;
    if first & 0x80 == 0 {
        return Some(Ok((tag, first as usize, 2)));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > 4 {
        return Some(Err(()));
    }
    let len_bytes = data.get(2..2 + n)?;
    let len = len_bytes.iter().fold(0usize, |acc, &b| (acc << 8) | b as usize);
    Some(Ok((tag, len, 2 + n)))
}

/// A small non-negative BER INTEGER at the start of `data`.
fn ber_small_int(data: &[u8]) -> Option<u32> {
    let (tag, len, hl) = ber_header(data)?.ok()?;
    if tag != 0x02 || len == 0 || len > 4 {
        return None;
    }
    let v = data.get(hl..hl + len)?;
    Some(v.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32))
}

/// SNMP: a SEQUENCE of version (0: v1, 1: v2c), community and PDU; or of four elements
/// starting with version 3.
pub fn snmp(_dir: Direction, data: &[u8]) -> Probe {
    if data.len() < 4 {
        return Probe::NeedMore;
    }
    let (tag, len, hl) = match ber_header(data) {
        None => return Probe::NeedMore,
        Some(Err(())) => return Probe::NoMatch,
        Some(Ok(h)) => h,
    };
    if tag != 0x30 {
        return Probe::NoMatch;
    }
    let Some(content) = data.get(hl..hl + len) else { return Probe::NeedMore };
    let mut elements = 0;
    let mut rest = content;
    let version = ber_small_int(content);
    while !rest.is_empty() {
        match ber_header(rest) {
            Some(Ok((_, l, h))) if h + l <= rest.len() => {
                rest = &rest[h + l..];
                elements += 1;
            }
            _ => return Probe::NoMatch,
        }
    }
    Probe::from_bool(matches!((elements, version), (3, Some(0 | 1)) | (4, Some(3))))
}

/// LDAP: a SEQUENCE holding a message id INTEGER then an application-tagged protocol op.
pub fn ldap(_dir: Direction, data: &[u8]) -> Probe {
    let (tag, _, hl) = match ber_header(data) {
        None => return Probe::NeedMore,
        Some(Err(())) => return Probe::NoMatch,
        Some(Ok(h)) => h,
    };
    if tag != 0x30 {
        return Probe::NoMatch;
    }
    let body = &data[hl..];
    let (id_tag, id_len, id_hl) = match ber_header(body) {
        None => return Probe::NeedMore,
        Some(Err(())) => return Probe::NoMatch,
        Some(Ok(h)) => h,
    };
    if id_tag != 0x02 || id_len == 0 || id_len > 4 {
        return Probe::NoMatch;
    }
    match body.get(id_hl + id_len) {
        None => Probe::NeedMore,
        // Application class; protocol ops 0..=25 (constructed or primitive).
        Some(&op) => Probe::from_bool(op & 0xc0 == 0x40 && op & 0x1f <= 25),
    }
}

/// Kerberos 5 message tags (application class, constructed): AS-REQ, AS-REP, TGS-REQ,
/// TGS-REP, AP-REQ, AP-REP, KRB-ERROR.
const KRB5_TAGS: [u8; 7] = [0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x7e];

/// Kerberos 5 over UDP: one message, tagged as a Kerberos message and complete.
pub fn krb5_udp(_dir: Direction, data: &[u8]) -> Probe {
    match ber_header(data) {
        None => Probe::NeedMore,
        Some(Err(())) => Probe::NoMatch,
        Some(Ok((tag, len, hl))) => Probe::from_bool(KRB5_TAGS.contains(&tag) && hl + len <= data.len()),
    }
}

/// Kerberos 5 over TCP: a 4-byte record length, then a message.
pub fn krb5_tcp(_dir: Direction, data: &[u8]) -> Probe {
    let Some(record) = bytes::be_u32(data, 0) else { return Probe::NeedMore };
    if record == 0 || record & 0x8000_0000 != 0 {
        return Probe::NoMatch;
    }
    match data.get(4..) {
        Some(msg) if msg.len() >= 2 => match ber_header(msg) {
            Some(Ok((tag, _, _))) => Probe::from_bool(KRB5_TAGS.contains(&tag)),
            Some(Err(())) => Probe::NoMatch,
            None => Probe::NeedMore,
        },
        _ => Probe::NeedMore,
    }
}

/// ONC RPC program number of NFS.
const NFS_PROGRAM: u32 = 100003;

/// An RPC call to NFS, or a reply, starting at `msg` (after any record marker).
fn rpc_nfs(dir: Direction, msg: &[u8]) -> Probe {
    let Some(kind) = bytes::be_u32(msg, 4) else { return Probe::NeedMore };
    match (dir, kind) {
        (Direction::ToServer, 0) => {
            let (Some(version), Some(program)) = (bytes::be_u32(msg, 8), bytes::be_u32(msg, 12)) else {
                return Probe::NeedMore;
            };
            Probe::from_bool(version == 2 && program == NFS_PROGRAM)
        }
        (Direction::ToClient, 1) => match bytes::be_u32(msg, 8) {
            None => Probe::NeedMore,
            // MSG_ACCEPTED or MSG_DENIED.
            Some(state) => Probe::from_bool(state <= 1),
        },
        _ => Probe::NoMatch,
    }
}

/// NFS over TCP: a record marker (last-fragment bit and length), then an RPC message.
pub fn nfs_tcp(dir: Direction, data: &[u8]) -> Probe {
    let Some(marker) = bytes::be_u32(data, 0) else { return Probe::NeedMore };
    if marker & 0x7fff_ffff < 8 {
        return Probe::NoMatch;
    }
    rpc_nfs(dir, &data[4..])
}

pub fn nfs_udp(dir: Direction, data: &[u8]) -> Probe {
    rpc_nfs(dir, data)
}

/// ISAKMP (IKEv1, IKEv2): a 28-byte header; for IKEv2 version 2.0, an exchange type of
/// 34..=37 and a length equal to the datagram's.
pub fn ike(_dir: Direction, data: &[u8]) -> Probe {
    if data.len() < 28 {
        return Probe::NoMatch;
    }
    let version = data[17];
    let (major, minor, exchange) = (version >> 4, version & 0x0f, data[18]);
    let length = bytes::be_u32(data, 24).unwrap_or(0) as usize;
    Probe::from_bool(match major {
        1 => true,
        2 => minor == 0 && (34..=37).contains(&exchange) && length == data.len(),
        _ => false,
    })
}

/// DHCP (BOOTP): the fixed 236-byte header plus the magic cookie's 4 bytes.
pub fn dhcp(_dir: Direction, data: &[u8]) -> Probe {
    Probe::from_bool(data.len() >= 240)
}

/// NTP version 3 or 4: at least the 48-byte header.
pub fn ntp(_dir: Direction, data: &[u8]) -> Probe {
    let Some(&first) = data.first() else { return Probe::NeedMore };
    if !matches!((first >> 3) & 7, 3 | 4) {
        return Probe::NoMatch;
    }
    if data.len() < 48 {
        Probe::NeedMore
    } else {
        Probe::Match
    }
}

/// TFTP: at least 4 bytes starting with a zero (the opcode's high byte).
pub fn tftp(_dir: Direction, data: &[u8]) -> Probe {
    Probe::from_bool(data.len() >= 4 && data[0] == 0)
}

/// SIP request methods and the response line, on any port.
const SIP_METHODS: &[&[u8]] = &[
    b"INVITE ",
    b"ACK ",
    b"BYE ",
    b"CANCEL ",
    b"OPTIONS ",
    b"REGISTER ",
    b"PRACK ",
    b"SUBSCRIBE ",
    b"NOTIFY ",
    b"PUBLISH ",
    b"INFO ",
    b"REFER ",
    b"MESSAGE ",
    b"UPDATE ",
];

pub fn sip(dir: Direction, data: &[u8]) -> Probe {
    match dir {
        Direction::ToServer => starts_any(data, SIP_METHODS, false),
        Direction::ToClient => starts(data, b"SIP/2.0 ", false),
    }
}

/// BitTorrent DHT (KRPC over bencoding): a query or a response dictionary, on any port.
pub fn bittorrent_dht(_dir: Direction, data: &[u8]) -> Probe {
    starts_any(data, &[b"d1:ad2:id20:", b"d1:rd2:id20:"], false)
}

/// QUIC versions Suricata parses: v1, v2, the IETF drafts and Google QUIC (Q0xx).
fn quic_version_known(v: u32) -> bool {
    matches!(v, 1 | 0x6b33_43cf | 0xff00_001d..=0xff00_0020) || (v >> 8 == 0x51_3030 || v >> 8 == 0x54_3030)
}

/// QUIC on its ports (443, 80): a long header with a known version.
pub fn quic(_dir: Direction, data: &[u8]) -> Probe {
    let Some(&first) = data.first() else { return Probe::NeedMore };
    if first & 0x80 == 0 {
        return Probe::NoMatch;
    }
    match bytes::be_u32(data, 1) {
        None => Probe::NeedMore,
        Some(v) => Probe::from_bool(quic_version_known(v) && data.len() >= 16),
    }
}

/// mDNS: a DNS message on port 5353.
pub fn mdns(_dir: Direction, data: &[u8]) -> Probe {
    Probe::from_bool(dns::probe_message(data, data.len()).is_some())
}
