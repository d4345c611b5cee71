//! Typed rule options. Each keyword's value is parsed into its own struct; content modifiers
//! (`nocase`, `depth`, `http_uri`...) are folded into the content they follow.

use super::bits::{parse_flowbits, parse_flowint, parse_hostbits, parse_xbits};
use super::error::OptionError;
use super::buffers::{buffer_by_name, content_modifier_buffer, sticky_buffer, AppNumber, Buffer, Transform};
use super::header::app_protocol;
use super::lexer::{unescape_text, unquote_lenient, RawOption};
use super::packet_keywords::{self, ChecksumLayer, PacketKeyword, Tag, VlanId};
use super::payload_keywords::{
    parse_base64_decode, parse_byte_extract, parse_byte_jump, parse_byte_math, parse_byte_test, parse_content,
    parse_isdataat, parse_pcre,
};
use super::threshold::{parse_threshold, parse_threshold_fields};
use super::values::{
    bad_part, bad_value, parse_num_or_var, parse_u16, parse_u32, parse_u64_any_base, parse_uint_cmp, strip_bang,
};

// The option AST is spread over the files of its keyword families; `options` is where users
// find all of it.
pub use super::bits::{BitsGroup, Flowbits, FlowbitsCmd, Flowint, FlowintOp, Xbits, XbitsTrack};
pub use super::payload_keywords::{
    decode_content_pattern, Base64Decode, ByteExtract, ByteJump, ByteMath, ByteMathOp, ByteTest, ByteTestOp, Content,
    Endian, FastPattern, Isdataat, NumBase, Pcre, PcreFlags,
};
pub use super::threshold::{DetectionFilter, Threshold, ThresholdType, Track, UniqueOn};
pub use super::values::{decode_hex, NumOrVar, UintCmp};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flow {
    pub established: bool,
    pub not_established: bool,
    pub stateless: bool,
    pub to_server: bool,
    pub to_client: bool,
    pub only_stream: bool,
    pub no_stream: bool,
    pub only_frag: bool,
    pub no_frag: bool,
}

/// TCP flag bits, as the decoder defines them.
pub use crate::decode::tcp as tcp_flag;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagsMode {
    /// Exactly these flags (after masking).
    Exact,
    /// `+`: at least these flags.
    All,
    /// `*`: any of these flags.
    Any,
    /// `!`: not exactly these flags.
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpFlags {
    pub mode: FlagsMode,
    pub flags: u8,
    /// Flags to ignore before comparing (`flags:S,CE` ignores CWR and ECE).
    pub ignore: u8,
}

impl TcpFlags {
    pub fn matches(&self, packet_flags: u8) -> bool {
        let f = packet_flags & !self.ignore;
        match self.mode {
            FlagsMode::Exact => f == self.flags,
            FlagsMode::All => f & self.flags == self.flags,
            FlagsMode::Any => f & self.flags != 0 || self.flags == 0,
            FlagsMode::Not => f != self.flags,
        }
    }
}

pub mod frag_bit {
    pub const RESERVED: u8 = 0x04;
    pub const DONT_FRAGMENT: u8 = 0x02;
    pub const MORE_FRAGMENTS: u8 = 0x01;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragbits {
    pub mode: FlagsMode,
    pub bits: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpOption {
    RecordRoute,
    EndOfList,
    Nop,
    Timestamp,
    Security,
    ExtendedSecurity,
    LooseSourceRoute,
    StrictSourceRoute,
    StreamId,
    Any,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamSide {
    Server,
    Client,
    Both,
    Either,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferDirection {
    ToServer,
    ToClient,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    SrcIp,
    DestIp,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleOption {
    Msg(String),
    Sid(u32),
    Rev(u32),
    Gid(u32),
    Classtype(String),
    Priority(u8),
    Reference {
        system: String,
        id: String,
    },
    Metadata(Vec<(String, String)>),
    Target(Target),
    Content(Content),
    Pcre(Pcre),
    Isdataat(Isdataat),
    ByteTest(ByteTest),
    ByteJump(ByteJump),
    ByteExtract(ByteExtract),
    ByteMath(ByteMath),
    Base64Decode(Base64Decode),
    Flow(Flow),
    Flags(TcpFlags),
    Window {
        negated: bool,
        size: u16,
    },
    Seq(u32),
    Ack(u32),
    Ttl(UintCmp<u8>),
    Tos {
        negated: bool,
        tos: u8,
    },
    Ipopts(IpOption),
    Fragbits(Fragbits),
    Fragoffset(UintCmp<u16>),
    IpId(u16),
    IpProto(UintCmp<u8>),
    Itype(UintCmp<u8>),
    Icode(UintCmp<u8>),
    IcmpId(u16),
    IcmpSeq(u16),
    Dsize(UintCmp<u16>),
    Bsize(UintCmp<u64>),
    /// A numeric app-layer keyword (`dns.opcode`, `dns.rrtype`, `tls.version`, ...).
    AppNumber {
        field: AppNumber,
        cmp: UintCmp<u64>,
    },
    /// `urilen`; `raw` when `,raw` was given (default: normalized URI).
    Urilen {
        cmp: UintCmp<u32>,
        raw: bool,
    },
    StreamSize {
        side: StreamSide,
        cmp: UintCmp<u32>,
    },
    Flowbits(Flowbits),
    Flowint(Flowint),
    Xbits(Xbits),
    Threshold(Threshold),
    DetectionFilter(DetectionFilter),
    Noalert,
    AppLayerProtocol {
        negated: bool,
        name: &'static str,
    },
    /// Following payload keywords inspect this buffer; `direction` from the optional
    /// `http.header: to_client;` form restricts which side's buffer is meant.
    StickyBuffer {
        buffer: Buffer,
        direction: Option<BufferDirection>,
    },
    /// `pkt_data`: back to the packet/stream payload.
    PktData,
    Transform(Transform),
    /// `prefilter` after something other than a content.
    Prefilter,
    /// `tcp.mss`: the MSS option's value.
    TcpMss(UintCmp<u16>),
    VlanId(VlanId),
    /// `vlan.layers`: number of VLAN tags.
    VlanLayers(UintCmp<u8>),
    /// `tcpv4-csum:valid|invalid` and the other checksum keywords.
    Checksum {
        layer: ChecksumLayer,
        valid: bool,
    },
    /// `decode-event:<name>`: the decoder raised this event on the packet.
    DecodeEvent(crate::decode::events::DecodeEvent),
    Tag(Tag),
    /// `flow.pkts` / `flow.bytes` (and the older `flow.pkts_toserver:N` forms).
    FlowCount(FlowCount),
}

impl From<PacketKeyword> for RuleOption {
    fn from(k: PacketKeyword) -> RuleOption {
        match k {
            PacketKeyword::TcpMss(cmp) => RuleOption::TcpMss(cmp),
            PacketKeyword::VlanId(v) => RuleOption::VlanId(v),
            PacketKeyword::VlanLayers(cmp) => RuleOption::VlanLayers(cmp),
            PacketKeyword::Checksum { layer, valid } => RuleOption::Checksum { layer, valid },
            PacketKeyword::DecodeEvent(e) => RuleOption::DecodeEvent(e),
            PacketKeyword::Tag(t) => RuleOption::Tag(t),
        }
    }
}

/// What `flow.pkts` / `flow.bytes` count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowCountKind {
    Packets,
    Bytes,
}

/// Which direction(s) of the flow `flow.pkts` / `flow.bytes` compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowCountDir {
    ToServer,
    ToClient,
    /// Either direction satisfies the comparison.
    Either,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowCount {
    pub kind: FlowCountKind,
    pub dir: FlowCountDir,
    pub cmp: UintCmp<u64>,
}

/// `flow.pkts:toserver,>10` (direction first), or the old `flow.pkts_toserver:>10`.
fn parse_flow_count(kw: &str, value: &str) -> Result<FlowCount, OptionError> {
    let (kind, fixed_dir) = match kw {
        "flow.pkts" => (FlowCountKind::Packets, None),
        "flow.bytes" => (FlowCountKind::Bytes, None),
        "flow.pkts_toserver" => (FlowCountKind::Packets, Some(FlowCountDir::ToServer)),
        "flow.pkts_toclient" => (FlowCountKind::Packets, Some(FlowCountDir::ToClient)),
        "flow.bytes_toserver" => (FlowCountKind::Bytes, Some(FlowCountDir::ToServer)),
        "flow.bytes_toclient" => (FlowCountKind::Bytes, Some(FlowCountDir::ToClient)),
        _ => return Err(OptionError::UnknownKeyword),
    };
    let (dir, cmp_text) = match fixed_dir {
        Some(d) => (d, value),
        None => {
            let (d, rest) =
                value.split_once(',').ok_or_else(|| OptionError::FlowCountUsage { keyword: kw.to_string() })?;
            let d = match d.trim() {
                "toserver" | "to_server" => FlowCountDir::ToServer,
                "toclient" | "to_client" => FlowCountDir::ToClient,
                "either" => FlowCountDir::Either,
                other => return Err(bad_part(kw, "direction", other)),
            };
            (d, rest)
        }
    };
    Ok(FlowCount { kind, dir, cmp: parse_uint_cmp(cmp_text, kw)? })
}

type OptResult<T> = Result<T, OptionError>;

/// Parses options in order. Content modifiers update the last content in `out`.
pub struct OptionParser {
    pub options: Vec<RuleOption>,
    last_content: Option<usize>,
}

impl OptionParser {
    pub fn new() -> Self {
        OptionParser {
            options: Vec::with_capacity(16),
            last_content: None,
        }
    }

    fn push(&mut self, opt: RuleOption) {
        if matches!(opt, RuleOption::Content(_)) {
            self.last_content = Some(self.options.len());
        }
        self.options.push(opt);
    }

    fn last_content_mut(&mut self, keyword: &str) -> OptResult<&mut Content> {
        match self.last_content.and_then(|i| self.options.get_mut(i)) {
            Some(RuleOption::Content(c)) => Ok(c),
            _ => Err(OptionError::NeedsContent { keyword: keyword.to_string() }),
        }
    }

    pub fn parse(&mut self, raw: &RawOption<'_>) -> OptResult<()> {
        let kw = raw.keyword;
        let value = raw.value;
        let need = || -> OptResult<&str> {
            value.ok_or_else(|| OptionError::MissingValue { keyword: kw.to_string() })
        };
        let none = || -> OptResult<()> {
            match value {
                None => Ok(()),
                Some(v) => Err(OptionError::UnexpectedValue { keyword: kw.to_string(), value: v.to_string() }),
            }
        };
        match kw {
            "msg" => self.push(RuleOption::Msg(unescape_text(unquote_lenient(need()?)))),
            "sid" => {
                let sid = parse_u32(need()?, kw)?;
                if sid == 0 {
                    return Err(OptionError::SidZero);
                }
                self.push(RuleOption::Sid(sid))
            }
            "rev" => self.push(RuleOption::Rev(parse_u32(need()?, kw)?)),
            "gid" => self.push(RuleOption::Gid(parse_u32(need()?, kw)?)),
            "classtype" => {
                let v = need()?.trim();
                if !v
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
                {
                    return Err(bad_value("classtype", v));
                }
                self.push(RuleOption::Classtype(v.to_string()))
            }
            "priority" => {
                let p = parse_u32(need()?, kw)?;
                if p == 0 || p > 255 {
                    return Err(OptionError::PriorityRange { priority: p });
                }
                self.push(RuleOption::Priority(p as u8))
            }
            "reference" => {
                let v = need()?;
                let (system, id) = v.split_once(',').ok_or(OptionError::BadReference)?;
                self.push(RuleOption::Reference {
                    system: system.trim().to_string(),
                    id: id.trim().to_string(),
                })
            }
            "metadata" => {
                let pairs = need()?
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|item| match item.split_once(char::is_whitespace) {
                        Some((k, v)) => (k.to_string(), v.trim().to_string()),
                        None => (item.to_string(), String::new()),
                    })
                    .collect();
                self.push(RuleOption::Metadata(pairs))
            }
            "target" => {
                let t = match need()?.trim() {
                    "src_ip" => Target::SrcIp,
                    "dest_ip" => Target::DestIp,
                    other => return Err(bad_value("target", other)),
                };
                self.push(RuleOption::Target(t))
            }
            "content" | "uricontent" => {
                let mut content = parse_content(need()?)?;
                if kw == "uricontent" {
                    content.legacy_buffer = buffer_by_name("http.uri");
                }
                self.push(RuleOption::Content(content))
            }
            "nocase" => {
                none()?;
                set_flag(&mut self.last_content_mut(kw)?.nocase, kw)?
            }
            "rawbytes" => {
                none()?;
                set_flag(&mut self.last_content_mut(kw)?.rawbytes, kw)?
            }
            "startswith" => {
                none()?;
                let c = self.last_content_mut(kw)?;
                if c.depth.is_some() || c.offset.is_some() || c.is_relative() {
                    return Err(OptionError::StartswithWithPosition);
                }
                set_flag(&mut c.startswith, kw)?
            }
            "endswith" => {
                none()?;
                set_flag(&mut self.last_content_mut(kw)?.endswith, kw)?
            }
            "depth" | "offset" | "distance" | "within" => {
                let v = parse_num_or_var(need()?, kw)?;
                let c = self.last_content_mut(kw)?;
                if c.startswith {
                    return Err(OptionError::PositionWithStartswith { keyword: kw.to_string() });
                }
                let relative_kw = kw == "distance" || kw == "within";
                if relative_kw && (c.depth.is_some() || c.offset.is_some())
                    || !relative_kw && c.is_relative()
                {
                    return Err(OptionError::MixedPositions { keyword: kw.to_string() });
                }
                if let NumOrVar::Num(n) = v {
                    let negative_ok = kw == "distance" || kw == "offset";
                    if n < 0 && !negative_ok {
                        return Err(OptionError::Negative { keyword: kw.to_string() });
                    }
                    if (kw == "depth" || kw == "within") && (n as usize) < c.pattern.len() {
                        return Err(OptionError::ShorterThanContent {
                            keyword: kw.to_string(),
                            value: n,
                            len: c.pattern.len(),
                        });
                    }
                }
                let slot = match kw {
                    "depth" => &mut c.depth,
                    "offset" => &mut c.offset,
                    "distance" => &mut c.distance,
                    _ => &mut c.within,
                };
                if slot.is_some() {
                    return Err(OptionError::DuplicateModifier { keyword: kw.to_string() });
                }
                *slot = Some(v);
            }
            "fast_pattern" => {
                let fp = match value.map(str::trim) {
                    None => FastPattern::Whole,
                    Some("only") => FastPattern::Only,
                    Some(v) => {
                        let (o, l) = v
                            .split_once(',')
                            .ok_or_else(|| bad_value("fast_pattern", v))?;
                        FastPattern::Chop {
                            offset: parse_u16(o, kw)?,
                            length: parse_u16(l, kw)?,
                        }
                    }
                };
                let c = self.last_content_mut(kw)?;
                if let FastPattern::Chop { offset, length } = fp {
                    if usize::from(offset) + usize::from(length) > c.pattern.len() || length == 0 {
                        return Err(OptionError::FastPatternOutOfBounds);
                    }
                }
                if c.fast_pattern.is_some() {
                    return Err(OptionError::DuplicateFastPattern);
                }
                c.fast_pattern = Some(fp);
            }
            "prefilter" => {
                none()?;
                match self.options.last_mut() {
                    Some(RuleOption::Content(c)) => c.prefilter = true,
                    _ => self.push(RuleOption::Prefilter),
                }
            }
            "pcre" => self.push(RuleOption::Pcre(parse_pcre(need()?)?)),
            "isdataat" => self.push(RuleOption::Isdataat(parse_isdataat(need()?)?)),
            "byte_test" => self.push(RuleOption::ByteTest(parse_byte_test(need()?)?)),
            "byte_jump" => self.push(RuleOption::ByteJump(parse_byte_jump(need()?)?)),
            "byte_extract" => self.push(RuleOption::ByteExtract(parse_byte_extract(need()?)?)),
            "byte_math" => self.push(RuleOption::ByteMath(parse_byte_math(need()?)?)),
            "base64_decode" => self.push(RuleOption::Base64Decode(parse_base64_decode(value)?)),
            "flow" => self.push(RuleOption::Flow(parse_flow(need()?)?)),
            // `tcp.flags` is Suricata 8's name for `flags`.
            "flags" | "tcp.flags" => self.push(RuleOption::Flags(parse_flags(need()?)?)),
            "window" => {
                let (negated, v) = strip_bang(need()?);
                self.push(RuleOption::Window {
                    negated,
                    size: parse_u16(v, kw)?,
                })
            }
            "seq" => self.push(RuleOption::Seq(parse_u32(need()?, kw)?)),
            "ack" => self.push(RuleOption::Ack(parse_u32(need()?, kw)?)),
            "ttl" => self.push(RuleOption::Ttl(parse_uint_cmp(need()?, kw)?)),
            "tos" => {
                let (negated, v) = strip_bang(need()?);
                let tos = parse_u64_any_base(v)
                    .filter(|n| *n <= 255)
                    .ok_or_else(|| bad_value("tos", v))?;
                self.push(RuleOption::Tos {
                    negated,
                    tos: tos as u8,
                })
            }
            "ipopts" => self.push(RuleOption::Ipopts(parse_ipopts(need()?)?)),
            "fragbits" => self.push(RuleOption::Fragbits(parse_fragbits(need()?)?)),
            "fragoffset" => self.push(RuleOption::Fragoffset(parse_uint_cmp(need()?, kw)?)),
            "id" => self.push(RuleOption::IpId(parse_u16(need()?, kw)?)),
            "ip_proto" => self.push(RuleOption::IpProto(parse_ip_proto(need()?)?)),
            "itype" => self.push(RuleOption::Itype(parse_uint_cmp(need()?, kw)?)),
            "icode" => self.push(RuleOption::Icode(parse_uint_cmp(need()?, kw)?)),
            "icmp_id" => self.push(RuleOption::IcmpId(parse_u16(need()?, kw)?)),
            "icmp_seq" => self.push(RuleOption::IcmpSeq(parse_u16(need()?, kw)?)),
            "dsize" => self.push(RuleOption::Dsize(parse_uint_cmp(need()?, kw)?)),
            "bsize" => self.push(RuleOption::Bsize(parse_uint_cmp(need()?, kw)?)),
            "dns.opcode" | "dns.rcode" | "dns.rrtype" => {
                let field = match kw {
                    "dns.opcode" => AppNumber::DnsOpcode,
                    "dns.rcode" => AppNumber::DnsRcode,
                    _ => AppNumber::DnsRrtype,
                };
                // Suricata writes negation as a leading '!' on these keywords.
                let text = need()?.trim();
                let cmp = match text.strip_prefix('!') {
                    Some(rest) => match parse_uint_cmp(rest, kw)? {
                        UintCmp::Eq(v) => UintCmp::Ne(v),
                        _ => return Err(OptionError::NegatedRange { keyword: kw.to_string() }),
                    },
                    None => parse_uint_cmp(text, kw)?,
                };
                self.push(RuleOption::AppNumber { field, cmp })
            }
            "tls.version" => {
                let cmp = UintCmp::Eq(parse_tls_version(need()?)?);
                self.push(RuleOption::AppNumber { field: AppNumber::TlsVersion, cmp })
            }
            "tls.cert_chain_len" => {
                let cmp = parse_uint_cmp(need()?, kw)?;
                self.push(RuleOption::AppNumber { field: AppNumber::TlsCertChainLen, cmp })
            }
            "tls_cert_notbefore" | "tls_cert_notafter" => {
                let field = if kw == "tls_cert_notbefore" { AppNumber::TlsCertNotBefore } else { AppNumber::TlsCertNotAfter };
                let cmp = parse_cert_validity(need()?)?;
                self.push(RuleOption::AppNumber { field, cmp })
            }
            // Legacy string keywords: a case-sensitive substring of the certificate field,
            // '!' for its absence. They are contents on the matching buffer.
            "tls.subject" | "tls.issuerdn" | "tls.fingerprint" => {
                let (negated, v) = strip_bang(need()?);
                let text = unquote_lenient(v);
                if text.is_empty() {
                    return Err(OptionError::MissingValue { keyword: kw.to_string() });
                }
                let (buffer, pattern) = match kw {
                    "tls.subject" => ("tls.cert_subject", text.as_bytes().to_vec()),
                    "tls.issuerdn" => ("tls.cert_issuer", text.as_bytes().to_vec()),
                    // Fingerprints are kept in lowercase hex; the keyword ignores case.
                    _ => ("tls.cert_fingerprint", text.to_ascii_lowercase().into_bytes()),
                };
                let content = Content {
                    pattern,
                    negated,
                    legacy_buffer: buffer_by_name(buffer),
                    ..Content::default()
                };
                self.push(RuleOption::Content(content))
            }
            "urilen" => {
                let v = need()?;
                let (cmp_text, raw) = match v.split_once(',') {
                    None => (v, false),
                    Some((c, "raw")) | Some((c, " raw")) => (c, true),
                    Some((c, m)) if m.trim() == "norm" => (c, false),
                    Some((_, m)) => {
                        return Err(bad_value("urilen modifier", m.trim()))
                    }
                };
                self.push(RuleOption::Urilen {
                    cmp: parse_uint_cmp(cmp_text, kw)?,
                    raw,
                })
            }
            "stream_size" => self.push(parse_stream_size(need()?)?),
            "flow.pkts" | "flow.bytes" | "flow.pkts_toserver" | "flow.pkts_toclient" | "flow.bytes_toserver"
            | "flow.bytes_toclient" => self.push(RuleOption::FlowCount(parse_flow_count(kw, need()?)?)),
            "flowbits" => self.push(RuleOption::Flowbits(parse_flowbits(need()?)?)),
            "flowint" => self.push(RuleOption::Flowint(parse_flowint(need()?)?)),
            "xbits" => self.push(RuleOption::Xbits(parse_xbits(need()?)?)),
            "hostbits" => self.push(RuleOption::Xbits(parse_hostbits(need()?)?)),
            "threshold" => self.push(RuleOption::Threshold(parse_threshold(need()?)?)),
            "detection_filter" => {
                let (t, unique_on) = parse_threshold_fields(need()?, false)?;
                self.push(RuleOption::DetectionFilter(DetectionFilter {
                    track: t.track,
                    count: t.count,
                    seconds: t.seconds,
                    unique_on,
                }))
            }
            "noalert" => {
                none()?;
                self.push(RuleOption::Noalert)
            }
            "app-layer-protocol" => {
                let (negated, v) = strip_bang(need()?);
                let name = app_protocol(v.trim())
                    .ok_or_else(|| OptionError::UnknownAppProtocol { name: v.trim().to_string() })?;
                self.push(RuleOption::AppLayerProtocol { negated, name })
            }
            "pkt_data" => {
                none()?;
                self.push(RuleOption::PktData)
            }
            _ => {
                if let Some(parsed) = packet_keywords::parse(kw, value) {
                    self.push(parsed?.into());
                } else if let Some(buffer) = sticky_buffer(kw) {
                    let direction = match value {
                        None => None,
                        Some("to_server") => Some(BufferDirection::ToServer),
                        Some("to_client") => Some(BufferDirection::ToClient),
                        Some(other) => {
                            return Err(OptionError::BufferDirection { keyword: kw.to_string(), direction: other.to_string() })
                        }
                    };
                    self.push(RuleOption::StickyBuffer { buffer, direction });
                } else if let Some(buffer) = content_modifier_buffer(kw) {
                    none()?;
                    let c = self.last_content_mut(kw)?;
                    if c.legacy_buffer.is_some() {
                        return Err(OptionError::DuplicateBuffer { keyword: kw.to_string() });
                    }
                    c.legacy_buffer = Some(buffer);
                } else if let Some(t) = Transform::parse(kw, value)? {
                    self.push(RuleOption::Transform(t));
                } else {
                    return Err(OptionError::UnknownKeyword);
                }
            }
        }
        Ok(())
    }
}

impl Default for OptionParser {
    fn default() -> Self {
        Self::new()
    }
}

fn set_flag(flag: &mut bool, kw: &str) -> OptResult<()> {
    if *flag {
        return Err(OptionError::DuplicateModifier { keyword: kw.to_string() });
    }
    *flag = true;
    Ok(())
}

/// `tls.version` value as Suricata reads it: `1.0` to `1.3`, `ssl3`, or a wire value in hex.
fn parse_tls_version(value: &str) -> Result<u64, OptionError> {
    let v = unquote_lenient(value);
    Ok(match v {
        "1.0" => 0x0301,
        "1.1" => 0x0302,
        "1.2" => 0x0303,
        "1.3" => 0x0304,
        "ssl3" | "sslv3" | "3.0" => 0x0300,
        _ => match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u16::from_str_radix(hex, 16).map_err(|_| bad_value("tls.version", v))?.into(),
            None => return Err(bad_value("tls.version", v)),
        },
    })
}

/// `tls_cert_notbefore`/`tls_cert_notafter`: `[<|>]DATE` or `DATE<>DATE`, where DATE is
/// `YYYY[-MM[-DD[THH[:MM[:SS]]]]]` (UTC) or Unix seconds. `<` and `>` include the date,
/// as in Suricata; so does a range.
fn parse_cert_validity(value: &str) -> Result<UintCmp<u64>, OptionError> {
    let v = unquote_lenient(value);
    if let Some((lo, hi)) = v.split_once("<>") {
        let (lo, hi) = (parse_cert_date(lo)?, parse_cert_date(hi)?);
        if lo >= hi {
            return Err(bad_value("certificate date range", v));
        }
        return Ok(UintCmp::Range(lo.saturating_sub(1), hi.saturating_add(1)));
    }
    if let Some(rest) = v.strip_prefix('<') {
        return Ok(UintCmp::Le(parse_cert_date(rest)?));
    }
    if let Some(rest) = v.strip_prefix('>') {
        return Ok(UintCmp::Ge(parse_cert_date(rest)?));
    }
    Ok(UintCmp::Eq(parse_cert_date(v)?))
}

/// A UTC date as Unix seconds (dates before 1970 are refused).
fn parse_cert_date(text: &str) -> Result<u64, OptionError> {
    let t = text.trim();
    let bad = || bad_value("certificate date", t);
    if !t.is_empty() && t.len() > 4 && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    let (date, time) = t.split_once('T').unwrap_or((t, ""));
    let mut d = date.split('-');
    let field = |s: Option<&str>, len: usize, default: i64| -> Result<i64, OptionError> {
        match s {
            None => Ok(default),
            Some(s) if s.len() == len && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    };
    let year = field(d.next(), 4, 1970)?;
    let month = field(d.next(), 2, 1)?;
    let day = field(d.next(), 2, 1)?;
    let mut tm = time.split(':');
    let first = tm.next().filter(|s| !s.is_empty());
    if first.is_none() && !time.is_empty() {
        return Err(bad());
    }
    let hour = field(first, 2, 0)?;
    let minute = field(tm.next(), 2, 0)?;
    let second = field(tm.next(), 2, 0)?;
    if d.next().is_some() || tm.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day)
        || hour > 23 || minute > 59 || second > 60 || year < 1970
    {
        return Err(bad());
    }
    let days = crate::applayer::tls::days_from_civil(year, month, day);
    Ok((days * 86400 + hour * 3600 + minute * 60 + second) as u64)
}

fn parse_flow(value: &str) -> Result<Flow, OptionError> {
    let mut f = Flow::default();
    for item in value.split(',').map(str::trim) {
        let slot = match item {
            "established" => &mut f.established,
            "not_established" => &mut f.not_established,
            "stateless" => &mut f.stateless,
            "to_server" | "from_client" => &mut f.to_server,
            "to_client" | "from_server" => &mut f.to_client,
            "only_stream" => &mut f.only_stream,
            "no_stream" => &mut f.no_stream,
            "only_frag" => &mut f.only_frag,
            "no_frag" => &mut f.no_frag,
            other => return Err(bad_value("flow option", other)),
        };
        *slot = true;
    }
    if f.to_server && f.to_client {
        return Err(OptionError::Constraint { keyword: "flow", rule: "to_server and to_client are exclusive" });
    }
    if [f.established, f.not_established, f.stateless]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        return Err(OptionError::Constraint {
            keyword: "flow",
            rule: "established, not_established and stateless are exclusive",
        });
    }
    if f.only_stream && f.no_stream || f.only_frag && f.no_frag {
        return Err(OptionError::Constraint { keyword: "flow", rule: "contradictory stream/frag options" });
    }
    Ok(f)
}

fn tcp_flag_bit(c: char) -> Option<u8> {
    use tcp_flag::*;
    Some(match c.to_ascii_uppercase() {
        'F' => FIN,
        'S' => SYN,
        'R' => RST,
        'P' => PSH,
        'A' => ACK,
        'U' => URG,
        'E' | '2' => ECE,
        'C' | '1' => CWR,
        '0' => 0,
        _ => return None,
    })
}

/// `flags:[!+*]FSRPAUCE12 0[,mask]`; the modifier may also follow the flags (`SA+`).
fn parse_flags(value: &str) -> Result<TcpFlags, OptionError> {
    let (flag_text, mask_text) = match value.split_once(',') {
        Some((f, m)) => (f.trim(), Some(m.trim())),
        None => (value.trim(), None),
    };
    let mut mode = None;
    let mut flags = 0u8;
    let mut saw_flag = false;
    for c in flag_text.chars().filter(|c| !c.is_whitespace()) {
        let m = match c {
            '!' => Some(FlagsMode::Not),
            '+' => Some(FlagsMode::All),
            '*' => Some(FlagsMode::Any),
            _ => None,
        };
        if let Some(m) = m {
            if mode.replace(m).is_some() {
                return Err(OptionError::FlagModifiers { value: flag_text.to_string() });
            }
            continue;
        }
        let bit = tcp_flag_bit(c).ok_or_else(|| bad_part("flags", "flag", &c.to_string()))?;
        flags |= bit;
        saw_flag = true;
    }
    if !saw_flag {
        return Err(OptionError::NoFlags { value: value.to_string() });
    }
    let mut ignore = 0u8;
    if let Some(mask) = mask_text {
        for c in mask.chars().filter(|c| !c.is_whitespace()) {
            ignore |= tcp_flag_bit(c)
                .filter(|b| *b != 0)
                .ok_or_else(|| bad_part("flags", "mask flag", &c.to_string()))?;
        }
    }
    Ok(TcpFlags {
        mode: mode.unwrap_or(FlagsMode::Exact),
        flags,
        ignore,
    })
}

fn parse_fragbits(value: &str) -> Result<Fragbits, OptionError> {
    let mut mode = None;
    let mut bits = 0u8;
    for c in value.trim().chars() {
        match c {
            '!' | '+' | '*' => {
                let m = match c {
                    '!' => FlagsMode::Not,
                    '+' => FlagsMode::All,
                    _ => FlagsMode::Any,
                };
                if mode.replace(m).is_some() {
                    return Err(OptionError::Constraint { keyword: "fragbits", rule: "more than one modifier" });
                }
            }
            'M' | 'm' => bits |= frag_bit::MORE_FRAGMENTS,
            'D' | 'd' => bits |= frag_bit::DONT_FRAGMENT,
            'R' | 'r' => bits |= frag_bit::RESERVED,
            other => return Err(bad_part("fragbits", "bit", &other.to_string())),
        }
    }
    if bits == 0 {
        return Err(OptionError::Constraint { keyword: "fragbits", rule: "no bits given" });
    }
    Ok(Fragbits {
        mode: mode.unwrap_or(FlagsMode::Exact),
        bits,
    })
}

fn parse_ipopts(value: &str) -> Result<IpOption, OptionError> {
    Ok(match value.trim() {
        "rr" => IpOption::RecordRoute,
        "eol" => IpOption::EndOfList,
        "nop" => IpOption::Nop,
        "ts" => IpOption::Timestamp,
        "sec" => IpOption::Security,
        "esec" => IpOption::ExtendedSecurity,
        "lsrr" | "lsrre" => IpOption::LooseSourceRoute,
        "ssrr" => IpOption::StrictSourceRoute,
        "satid" => IpOption::StreamId,
        "any" => IpOption::Any,
        other => return Err(bad_value("ipopts", other)),
    })
}

fn ip_proto_number(name: &str) -> Option<u8> {
    Some(match name.to_ascii_lowercase().as_str() {
        "icmp" => 1,
        "igmp" => 2,
        "ipip" | "ipv4" => 4,
        "tcp" => 6,
        "udp" => 17,
        "ipv6" => 41,
        "ipv6-route" => 43,
        "ipv6-frag" => 44,
        "rsvp" => 46,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "ipv6-icmp" | "icmpv6" => 58,
        "ipv6-nonxt" => 59,
        "ipv6-opts" => 60,
        "eigrp" => 88,
        "ospf" => 89,
        "pim" => 103,
        "vrrp" => 112,
        "l2tp" => 115,
        "sctp" => 132,
        _ => return None,
    })
}

fn parse_ip_proto(value: &str) -> Result<UintCmp<u8>, OptionError> {
    let v = value.trim();
    let (prefix, name) = match v.chars().next() {
        Some(c @ ('!' | '<' | '>')) => (Some(c), v[1..].trim()),
        _ => (None, v),
    };
    let n = match name.parse::<u8>() {
        Ok(n) => n,
        Err(_) => ip_proto_number(name).ok_or_else(|| bad_value("ip_proto", v))?,
    };
    Ok(match prefix {
        None => UintCmp::Eq(n),
        Some('!') => UintCmp::Ne(n),
        Some('<') => UintCmp::Lt(n),
        _ => UintCmp::Gt(n),
    })
}

fn parse_stream_size(value: &str) -> Result<RuleOption, OptionError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(OptionError::Usage { keyword: "stream_size", usage: "side, operator, value" });
    }
    let side = match parts[0] {
        "server" => StreamSide::Server,
        "client" => StreamSide::Client,
        "both" => StreamSide::Both,
        "either" => StreamSide::Either,
        other => return Err(bad_part("stream_size", "side", other)),
    };
    let n = parse_u32(parts[2], "stream_size")?;
    let cmp = match parts[1] {
        "<" => UintCmp::Lt(n),
        "<=" => UintCmp::Le(n),
        ">" => UintCmp::Gt(n),
        ">=" => UintCmp::Ge(n),
        "=" => UintCmp::Eq(n),
        "!=" => UintCmp::Ne(n),
        other => return Err(bad_part("stream_size", "operator", other)),
    };
    Ok(RuleOption::StreamSize { side, cmp })
}
