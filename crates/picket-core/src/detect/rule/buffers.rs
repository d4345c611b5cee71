//! Inspection buffers ("sticky buffers") and transforms.
//!
//! A sticky buffer keyword (`http.uri;`) makes the following payload keywords inspect that buffer.
//! Older rules instead put a modifier after the content (`content:"x"; http_uri;`), which moves
//! only that content. Both spellings map to the same [`BufferDef`].

use std::collections::HashMap;
use std::sync::LazyLock;

use super::error::OptionError;
use super::lexer::strip_quotes;
use super::values::{bad_value, decode_hex};
use crate::flow::hash::FxBuildHasher;

/// One inspection buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct BufferDef {
    /// Canonical (dotted) name, e.g. `http.uri`.
    pub name: &'static str,
    /// Other names that act as sticky buffer keywords, e.g. `file_data` for `file.data`.
    pub sticky_aliases: &'static [&'static str],
    /// Legacy content modifier (placed after a content), e.g. `http_uri`.
    pub content_modifier: Option<&'static str>,
    /// Application protocol the buffer belongs to, if any (`None`: packet/stream level).
    pub app_proto: Option<&'static str>,
}

/// A reference to an entry of [`BUFFERS`]; cheap to copy and compare.
pub type Buffer = &'static BufferDef;

macro_rules! buf {
    ($name:expr, [$($alias:expr),*], $modifier:expr, $proto:expr) => {
        BufferDef { name: $name, sticky_aliases: &[$($alias),*], content_modifier: $modifier, app_proto: $proto }
    };
}

const HTTP: Option<&str> = Some("http");
const DNS: Option<&str> = Some("dns");
const TLS: Option<&str> = Some("tls");
const SSH: Option<&str> = Some("ssh");

pub static BUFFERS: &[BufferDef] = &[
    buf!("http.uri", [], Some("http_uri"), HTTP),
    buf!("http.uri.raw", [], Some("http_raw_uri"), HTTP),
    buf!("http.method", [], Some("http_method"), HTTP),
    buf!("http.header", [], Some("http_header"), HTTP),
    buf!("http.header.raw", [], Some("http_raw_header"), HTTP),
    buf!("http.cookie", [], Some("http_cookie"), HTTP),
    buf!("http.user_agent", [], Some("http_user_agent"), HTTP),
    buf!("http.host", [], Some("http_host"), HTTP),
    buf!("http.host.raw", [], Some("http_raw_host"), HTTP),
    buf!("http.request_body", [], Some("http_client_body"), HTTP),
    buf!("http.response_body", [], Some("http_server_body"), HTTP),
    buf!("http.stat_code", [], Some("http_stat_code"), HTTP),
    buf!("http.stat_msg", [], Some("http_stat_msg"), HTTP),
    buf!("http.start", ["http_start"], None, HTTP),
    buf!("http.request_line", ["http_request_line"], None, HTTP),
    buf!("http.response_line", ["http_response_line"], None, HTTP),
    buf!("http.protocol", ["http_protocol"], None, HTTP),
    buf!("http.header_names", ["http_header_names"], None, HTTP),
    buf!("http.accept", ["http_accept"], None, HTTP),
    buf!("http.accept_enc", ["http_accept_enc"], None, HTTP),
    buf!("http.accept_lang", ["http_accept_lang"], None, HTTP),
    buf!("http.connection", ["http_connection"], None, HTTP),
    buf!("http.content_len", ["http_content_len"], None, HTTP),
    buf!("http.content_type", ["http_content_type"], None, HTTP),
    buf!("http.location", ["http_location"], None, HTTP),
    buf!("http.referer", ["http_referer"], None, HTTP),
    buf!("http.server", ["http_server"], None, HTTP),
    buf!("http.request_header", [], None, HTTP),
    buf!("http.response_header", [], None, HTTP),
    buf!("http2.header_name", [], None, Some("http2")),
    buf!("file.data", ["file_data"], None, None),
    buf!("file.name", ["filename"], None, None),
    buf!("file.magic", [], None, None),
    buf!("dns.query", ["dns_query"], None, DNS),
    buf!("dns.queries.rrname", ["dns.query.name"], None, DNS),
    buf!("dns.answers.rrname", ["dns.answer.name"], None, DNS),
    buf!("dns.response.rrname", [], None, DNS),
    buf!("tls.sni", ["tls_sni"], None, TLS),
    buf!("tls.cert_subject", ["tls_cert_subject"], None, TLS),
    buf!("tls.cert_issuer", ["tls_cert_issuer"], None, TLS),
    buf!("tls.cert_serial", ["tls_cert_serial"], None, TLS),
    buf!("tls.cert_fingerprint", ["tls_cert_fingerprint"], None, TLS),
    buf!("tls.certs", [], None, TLS),
    buf!("tls.subjectaltname", [], None, TLS),
    buf!("tls.alpn", [], None, TLS),
    buf!("ja3.hash", ["ja3_hash"], None, TLS),
    buf!("ja3.string", ["ja3_string"], None, TLS),
    buf!("ja3s.hash", ["ja3s_hash"], None, TLS),
    buf!("ja3s.string", ["ja3s_string"], None, TLS),
    buf!("ja4.hash", [], None, TLS),
    buf!("quic.sni", [], None, Some("quic")),
    buf!("ssh.proto", ["ssh_proto"], None, SSH),
    buf!("ssh.software", ["ssh_software"], None, SSH),
    buf!("ssh.hassh", [], None, SSH),
    buf!("ssh.hassh.string", [], None, SSH),
    buf!("ssh.hassh.server", [], None, SSH),
    buf!("ssh.hassh.server.string", [], None, SSH),
    buf!("smb.named_pipe", [], None, Some("smb")),
    buf!("smb.share", [], None, Some("smb")),
    buf!("krb5.cname", ["krb5_cname"], None, Some("krb5")),
    buf!("krb5.sname", ["krb5_sname"], None, Some("krb5")),
    buf!("sip.method", [], None, Some("sip")),
    buf!("sip.uri", [], None, Some("sip")),
    buf!("smtp.helo", [], None, Some("smtp")),
    buf!("smtp.mail_from", [], None, Some("smtp")),
    buf!("smtp.rcpt_to", [], None, Some("smtp")),
    buf!("ftp.command", [], None, Some("ftp")),
    buf!("ftp.command_data", [], None, Some("ftp")),
    buf!("base64_data", [], None, None),
    buf!("tcp.hdr", [], None, None),
    buf!("udp.hdr", [], None, None),
    buf!("ipv4.hdr", [], None, None),
    buf!("ipv6.hdr", [], None, None),
    buf!("icmpv4.hdr", [], None, None),
    buf!("icmpv6.hdr", [], None, None),
];

/// [`BUFFERS`] by the keywords that name them. The rule parser looks up every option's
/// keyword as a sticky buffer and as a content modifier (ET Open: about 690k lookups at
/// start-up); a scan of the table per lookup was 10% of a warm start's instructions.
struct KeywordIndex {
    /// Canonical names and sticky aliases.
    sticky: HashMap<&'static str, Buffer, FxBuildHasher>,
    /// Legacy content modifiers.
    modifier: HashMap<&'static str, Buffer, FxBuildHasher>,
}

static KEYWORD_INDEX: LazyLock<KeywordIndex> = LazyLock::new(|| {
    let mut index = KeywordIndex { sticky: HashMap::default(), modifier: HashMap::default() };
    // The first buffer naming a keyword wins, as a scan of the table in order would find.
    for b in BUFFERS {
        for &name in std::iter::once(&b.name).chain(b.sticky_aliases) {
            index.sticky.entry(name).or_insert(b);
        }
        if let Some(modifier) = b.content_modifier {
            index.modifier.entry(modifier).or_insert(b);
        }
    }
    index
});

/// Looks up a sticky buffer keyword (canonical name or sticky alias).
pub fn sticky_buffer(keyword: &str) -> Option<Buffer> {
    KEYWORD_INDEX.sticky.get(keyword).copied()
}

/// Looks up a legacy content modifier (`http_uri` ...).
pub fn content_modifier_buffer(keyword: &str) -> Option<Buffer> {
    KEYWORD_INDEX.modifier.get(keyword).copied()
}

/// Looks up a buffer by canonical name (for engine code and tests).
pub fn buffer_by_name(name: &str) -> Option<Buffer> {
    BUFFERS.iter().find(|b| b.name == name)
}

/// Numeric facts of an application-layer transaction that keywords compare
/// (`dns.opcode:0;`, `dns.rrtype:1;`, `tls.version:1.2;`). A fact may have several
/// instances (one rrtype per query): the keyword matches when any instance does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppNumber {
    DnsOpcode,
    DnsRcode,
    DnsRrtype,
    /// TLS version as on the wire (0x0303 = TLS 1.2).
    TlsVersion,
    /// Certificates in the server's chain (`tls.cert_chain_len`).
    TlsCertChainLen,
    /// Validity of the server's certificate, Unix seconds (`tls_cert_notbefore`/`notafter`).
    TlsCertNotBefore,
    TlsCertNotAfter,
}

/// A transform applied to the current sticky buffer before matching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transform {
    Dotprefix,
    ToLowercase,
    ToUppercase,
    StripWhitespace,
    CompressWhitespace,
    UrlDecode,
    ToMd5,
    ToSha1,
    ToSha256,
    HeaderLowercase,
    StripPseudoHeaders,
    /// `pcrexform:"regex"`: the buffer becomes the last capture that took part in the match.
    Pcrexform(String),
    /// `xor:"hexkey"` (static key) or `xor:offset N, extract NBYTES AT` (key read from the buffer).
    Xor(XorSpec),
    /// `from_base64:bytes N, offset N, mode rfc4648|rfc2045|strict`.
    FromBase64(FromBase64),
    /// `gunzip` / `gunzip:max-size N`: the buffer is decompressed, output capped at `max_size`.
    Gunzip {
        max_size: u32,
    },
    /// `zlib_deflate` / `zlib_deflate:max-size N`: zlib-wrapped deflate, output capped.
    ZlibDeflate {
        max_size: u32,
    },
    /// `subslice:offset[, nbytes][, truncate]`: a window of the buffer (negative = from the end).
    Subslice(Subslice),
}

/// Options of the `xor` transform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorSpec {
    pub key: XorKey,
    /// Bytes before this offset are copied unchanged (room for an embedded key).
    pub offset: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XorKey {
    Static(Vec<u8>),
    /// `nbytes` bytes at `at` of the buffer itself (`extract 1 0`, also spelled `var 1 0`).
    InBuffer {
        nbytes: u8,
        at: u16,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base64Mode {
    /// Stops at the first byte outside the alphabet (Suricata's default).
    Rfc4648,
    /// Skips bytes outside the alphabet (MIME).
    Rfc2045,
    /// Any byte outside the alphabet, or bad padding, fails the transform.
    Strict,
}

/// Options of the `from_base64` transform; 0 means "not given".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FromBase64 {
    pub bytes: u32,
    pub offset: u32,
    pub mode: Base64Mode,
}

/// Options of the `subslice` transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subslice {
    pub offset: i64,
    pub nbytes: Option<i64>,
    /// Clamp out-of-range bounds instead of producing an empty buffer.
    pub truncate: bool,
}

/// Suricata's default output cap of gunzip / zlib_deflate.
pub const DECOMPRESS_DEFAULT_MAX: u32 = 1024;
/// Largest output cap accepted for gunzip / zlib_deflate (16 MiB).
const DECOMPRESS_MAX: u64 = 16 << 20;

impl Transform {
    /// Parses a transform keyword; `Ok(None)` when `keyword` is not a transform.
    pub fn parse(keyword: &str, value: Option<&str>) -> Result<Option<Transform>, OptionError> {
        let no_value = |t: Transform| -> Result<Option<Transform>, OptionError> {
            match value {
                None => Ok(Some(t)),
                Some(_) => Err(OptionError::TakesNoValue { keyword: keyword.to_string() }),
            }
        };
        match keyword {
            "dotprefix" => no_value(Transform::Dotprefix),
            "to_lowercase" => no_value(Transform::ToLowercase),
            "to_uppercase" => no_value(Transform::ToUppercase),
            "strip_whitespace" => no_value(Transform::StripWhitespace),
            "compress_whitespace" => no_value(Transform::CompressWhitespace),
            "url_decode" => no_value(Transform::UrlDecode),
            "to_md5" => no_value(Transform::ToMd5),
            "to_sha1" => no_value(Transform::ToSha1),
            "to_sha256" => no_value(Transform::ToSha256),
            "header_lowercase" => no_value(Transform::HeaderLowercase),
            "strip_pseudo_headers" => no_value(Transform::StripPseudoHeaders),
            "from_base64" => Ok(Some(Transform::FromBase64(parse_from_base64(value.unwrap_or(""))?))),
            "gunzip" => Ok(Some(Transform::Gunzip { max_size: parse_max_size(keyword, value)? })),
            "zlib_deflate" => Ok(Some(Transform::ZlibDeflate { max_size: parse_max_size(keyword, value)? })),
            "subslice" => {
                let v = value.ok_or(OptionError::Usage { keyword: "subslice", usage: "an offset" })?;
                Ok(Some(Transform::Subslice(parse_subslice(v)?)))
            }
            "pcrexform" => {
                let v = value.ok_or(OptionError::Usage { keyword: "pcrexform", usage: "a quoted regex" })?;
                let re = strip_quotes(v).ok_or(OptionError::PcrexformUnquoted)?;
                if re.is_empty() {
                    return Err(OptionError::EmptyRegex { keyword: "pcrexform" });
                }
                Ok(Some(Transform::Pcrexform(re.to_string())))
            }
            "xor" => {
                let v = value.ok_or(OptionError::Usage { keyword: "xor", usage: "a key" })?;
                Ok(Some(Transform::Xor(parse_xor(v)?)))
            }
            _ => Ok(None),
        }
    }
}

fn xor_error(part: &'static str, value: &str) -> OptionError {
    OptionError::BadPart { keyword: "xor".into(), part, value: value.to_string() }
}

fn parse_xor(value: &str) -> Result<XorSpec, OptionError> {
    let v = value.trim();
    let v = strip_quotes(v).unwrap_or(v).trim();
    let (offset, key_part) = match v.strip_prefix("offset") {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_whitespace()) => {
            let (n, key) = rest
                .split_once(',')
                .ok_or(OptionError::Constraint { keyword: "xor", rule: "'offset N' must be followed by ',<key>'" })?;
            let n: u32 = n.trim().parse().map_err(|_| xor_error("offset", n.trim()))?;
            (n, key.trim())
        }
        _ => (0, v),
    };
    let in_buffer = key_part.strip_prefix("extract").or_else(|| key_part.strip_prefix("var"));
    let key = match in_buffer {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_whitespace()) => {
            let mut it = rest.split_whitespace();
            let (Some(n), Some(at), None) = (it.next(), it.next(), it.next()) else {
                return Err(OptionError::Constraint {
                    keyword: "xor",
                    rule: "key location must be 'extract <nbytes> <offset>'",
                });
            };
            let nbytes: u8 = n.parse().map_err(|_| xor_error("key length", n))?;
            let at: u16 = at.parse().map_err(|_| xor_error("key offset", at))?;
            if nbytes == 0 {
                return Err(OptionError::Constraint { keyword: "xor", rule: "key length must be at least 1" });
            }
            XorKey::InBuffer { nbytes, at }
        }
        _ => {
            let hex = strip_quotes(key_part).unwrap_or(key_part);
            let key = decode_hex(hex).ok_or_else(|| bad_value("xor key", hex))?;
            if key.is_empty() || key.len() > 255 {
                return Err(OptionError::XorKeySize);
            }
            XorKey::Static(key)
        }
    };
    Ok(XorSpec { key, offset })
}

fn parse_from_base64(value: &str) -> Result<FromBase64, OptionError> {
    const KW: &str = "from_base64";
    let mut out = FromBase64 { bytes: 0, offset: 0, mode: Base64Mode::Rfc4648 };
    let (mut seen_bytes, mut seen_offset, mut seen_mode) = (false, false, false);
    let value = value.trim();
    if value.is_empty() {
        return Ok(out);
    }
    for item in value.split(',') {
        let mut it = item.split_whitespace();
        let (Some(name), Some(arg), None) = (it.next(), it.next(), it.next()) else {
            return Err(OptionError::BadPart { keyword: KW.into(), part: "option", value: item.trim().to_string() });
        };
        let number = |seen: &mut bool| -> Result<u32, OptionError> {
            if std::mem::replace(seen, true) {
                return Err(OptionError::GivenTwice { keyword: KW, part: name.to_string() });
            }
            arg.parse::<u16>()
                .map(u32::from)
                .map_err(|_| OptionError::Base64Number { part: name.to_string(), value: arg.to_string() })
        };
        match name {
            "bytes" => out.bytes = number(&mut seen_bytes)?,
            "offset" => out.offset = number(&mut seen_offset)?,
            "mode" => {
                if std::mem::replace(&mut seen_mode, true) {
                    return Err(OptionError::GivenTwice { keyword: KW, part: "mode".into() });
                }
                out.mode = match arg {
                    "rfc4648" => Base64Mode::Rfc4648,
                    "rfc2045" => Base64Mode::Rfc2045,
                    "strict" => Base64Mode::Strict,
                    _ => {
                        return Err(OptionError::UnknownPart {
                            keyword: KW.into(),
                            part: "mode",
                            value: arg.to_string(),
                        })
                    }
                };
            }
            _ => return Err(OptionError::UnknownPart { keyword: KW.into(), part: "option", value: name.to_string() }),
        }
    }
    Ok(out)
}

/// `max-size N` (also `max-size=N`), N with an optional kb/mb/kib/mib unit.
fn parse_max_size(keyword: &str, value: Option<&str>) -> Result<u32, OptionError> {
    let error = |part: &'static str, value: &str| OptionError::BadPart {
        keyword: keyword.to_string(),
        part,
        value: value.to_string(),
    };
    let unknown = |part: &'static str, value: &str| OptionError::UnknownPart {
        keyword: keyword.to_string(),
        part,
        value: value.to_string(),
    };
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(DECOMPRESS_DEFAULT_MAX);
    };
    let rest = value
        .strip_prefix("max-size")
        .ok_or_else(|| unknown("option", value))?
        .trim_start()
        .trim_start_matches('=')
        .trim();
    let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (digits, unit) = rest.split_at(digits_end);
    let n: u64 = digits.parse().map_err(|_| error("max-size", rest))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" => 1,
        "kb" => 1000,
        "mb" => 1000 * 1000,
        "kib" => 1024,
        "mib" => 1024 * 1024,
        other => return Err(unknown("unit", other)),
    };
    let size = n.saturating_mul(scale);
    if size == 0 || size > DECOMPRESS_MAX {
        return Err(OptionError::MaxSizeRange { keyword: keyword.to_string(), max: DECOMPRESS_MAX });
    }
    Ok(size as u32)
}

fn parse_subslice(value: &str) -> Result<Subslice, OptionError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let num = |s: &str| {
        s.parse::<i64>().map_err(|_| OptionError::BadPart {
            keyword: "subslice".into(),
            part: "number",
            value: s.to_string(),
        })
    };
    let is_truncate = |s: &str| s.eq_ignore_ascii_case("truncate");
    let (offset, nbytes, truncate) = match parts.as_slice() {
        [o] => (num(o)?, None, false),
        [o, t] if is_truncate(t) => (num(o)?, None, true),
        [o, n] => (num(o)?, Some(num(n)?), false),
        [o, n, t] if is_truncate(t) => (num(o)?, Some(num(n)?), true),
        _ => {
            return Err(OptionError::Constraint {
                keyword: "subslice",
                rule: "expected 'offset[, nbytes][, truncate]'",
            })
        }
    };
    if nbytes == Some(0) {
        return Err(OptionError::Constraint { keyword: "subslice", rule: "nbytes must not be 0" });
    }
    Ok(Subslice { offset, nbytes, truncate })
}
