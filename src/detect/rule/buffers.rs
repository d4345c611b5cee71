//! Inspection buffers ("sticky buffers") and transforms.
//!
//! A sticky buffer keyword (`http.uri;`) makes the following payload keywords inspect that buffer.
//! Older rules instead put a modifier after the content (`content:"x"; http_uri;`), which moves
//! only that content. Both spellings map to the same [`BufferDef`].

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
    buf!("dns.queries.rrname", [], None, DNS),
    buf!("dns.answers.rrname", [], None, DNS),
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

/// Looks up a sticky buffer keyword (canonical name or sticky alias).
pub fn sticky_buffer(keyword: &str) -> Option<Buffer> {
    BUFFERS
        .iter()
        .find(|b| b.name == keyword || b.sticky_aliases.contains(&keyword))
}

/// Looks up a legacy content modifier (`http_uri` ...).
pub fn content_modifier_buffer(keyword: &str) -> Option<Buffer> {
    BUFFERS.iter().find(|b| b.content_modifier == Some(keyword))
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
    /// `pcrexform:"regex"`: the buffer becomes the first capture.
    Pcrexform(String),
    /// `xor:"hexkey"`.
    Xor(Vec<u8>),
    /// `from_base64` with its raw options (`bytes N, offset N, mode rfc4648`).
    FromBase64(String),
}

impl Transform {
    /// Parses a transform keyword; `Ok(None)` when `keyword` is not a transform.
    pub fn parse(keyword: &str, value: Option<&str>) -> Result<Option<Transform>, String> {
        let no_value = |t: Transform| -> Result<Option<Transform>, String> {
            match value {
                None => Ok(Some(t)),
                Some(_) => Err(format!("{keyword} takes no value")),
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
            "from_base64" => Ok(Some(Transform::FromBase64(
                value.unwrap_or("").trim().to_string(),
            ))),
            "pcrexform" => {
                let v = value.ok_or("pcrexform needs a quoted regex")?;
                let re = super::lexer::strip_quotes(v).ok_or("pcrexform value must be quoted")?;
                if re.is_empty() {
                    return Err("pcrexform regex is empty".into());
                }
                Ok(Some(Transform::Pcrexform(re.to_string())))
            }
            "xor" => {
                let v = value.ok_or("xor needs a quoted hex key")?;
                let hex = super::lexer::strip_quotes(v).ok_or("xor key must be quoted")?;
                let key = super::options::decode_hex(hex)
                    .ok_or_else(|| format!("invalid xor key '{hex}'"))?;
                if key.is_empty() {
                    return Err("xor key is empty".into());
                }
                Ok(Some(Transform::Xor(key)))
            }
            _ => Ok(None),
        }
    }
}
