//! Typed rule options. Each keyword's value is parsed into its own struct; content modifiers
//! (`nocase`, `depth`, `http_uri`...) are folded into the content they follow.
//!
//! [`OptionParser`] dispatches each keyword to its family; the value parsers of the larger
//! families live in `payload_keywords`, `packet_keywords`, `bits`, `threshold` and `buffers`.

use super::bits::{parse_flowbits, parse_flowint, parse_hostbits, parse_xbits};
use super::buffers::{buffer_by_name, content_modifier_buffer, sticky_buffer, AppNumber, Buffer, Transform};
use super::error::OptionError;
use super::header::app_protocol;
use super::keywords::is_known_keyword;
use super::lexer::{unescape_text, unquote_lenient, RawOption};
use super::packet_keywords::{self, ChecksumLayer, PacketKeyword, Tag, VlanId};
use super::payload_keywords::{
    parse_base64_decode, parse_byte_extract, parse_byte_jump, parse_byte_math, parse_byte_test, parse_content,
    parse_isdataat, parse_pcre,
};
use super::threshold::{parse_threshold, parse_threshold_fields};
use super::values::{
    bad_part, bad_value, parse_num_or_var, parse_u16, parse_u32, parse_u64_any_base, parse_uint_cmp, strip_bang,
    NumberIndex,
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
    /// `pcre_limit:MATCH[,DEPTH]` (picket's own): limits of the pcre before it instead of
    /// `pcre.match-limit` / `pcre.match-limit-recursion`.
    PcreLimit {
        match_limit: u32,
        recursion: Option<u32>,
    },
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
    /// `entropy`: the current buffer's Shannon entropy compared with a float.
    Entropy(super::entropy::Entropy),
    /// `absent`: the sticky buffer must not exist; with `or_else`, a missing buffer
    /// matches and a present one is inspected by the keywords that follow.
    Absent {
        or_else: bool,
    },
    /// A numeric app-layer keyword (`dns.opcode`, `dns.rrtype`, `tls.version`, ...).
    AppNumber {
        field: AppNumber,
        cmp: UintCmp<u64>,
        /// Which of the field's values (`dns.rrtype:1,all;`); `Any` for single-valued fields.
        index: NumberIndex,
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
    /// `alert`: a `pass` rule's matches are logged as alerts too (Suricata 8).
    Alert,
    /// `bypass`: a match ends the inspection of the flow (Suricata's post-match bypass).
    Bypass,
    AppLayerProtocol {
        negated: bool,
        name: &'static str,
        /// `,exact`: the flow's protocol itself, without Suricata's equivalences.
        exact: bool,
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
    /// `flow.age`: whole seconds from the flow's first packet to its latest one.
    FlowAge(UintCmp<u32>),
    /// `app-layer-event:<proto>.<event>`: the flow's parser raised this event on the
    /// transaction inspected (Suricata's app-layer events, e.g. `dns.z_flag_set`). `proto`
    /// is `None` for the generic `applayer_*` events of protocol detection; `event` is
    /// lower case.
    AppLayerEvent {
        proto: Option<&'static str>,
        event: String,
    },
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

/// `dns.z_flag_set` (protocol, then the event) or a generic `applayer_*` event name.
fn parse_app_layer_event(value: &str) -> Result<RuleOption, OptionError> {
    let value = value.trim();
    let valid = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let (proto, event) = match value.split_once('.') {
        Some((proto, event)) => {
            let name = crate::detect::rule::header::app_protocol(proto)
                .ok_or_else(|| OptionError::UnknownAppProtocol { name: proto.to_string() })?;
            (Some(name), event)
        }
        None => (None, value),
    };
    if !valid(event) {
        return Err(bad_part("app-layer-event", "event", event));
    }
    Ok(RuleOption::AppLayerEvent { proto, event: event.to_ascii_lowercase() })
}

type OptResult<T> = Result<T, OptionError>;

/// One option as written, with the checks every keyword family needs.
struct Arg<'a> {
    kw: &'a str,
    value: Option<&'a str>,
}

impl<'a> Arg<'a> {
    /// The value, which this keyword requires.
    fn need(&self) -> OptResult<&'a str> {
        self.value.ok_or_else(|| OptionError::MissingValue { keyword: self.kw.to_string() })
    }

    /// This keyword takes no value.
    fn none(&self) -> OptResult<()> {
        match self.value {
            None => Ok(()),
            Some(v) => Err(OptionError::UnexpectedValue { keyword: self.kw.to_string(), value: v.to_string() }),
        }
    }
}

/// Parses options in order. Content modifiers update the last content in `out`.
pub struct OptionParser {
    pub options: Vec<RuleOption>,
    last_content: Option<usize>,
}

impl OptionParser {
    pub fn new() -> Self {
        OptionParser { options: Vec::with_capacity(16), last_content: None }
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

    /// Parses one option: a modifier of the last content, or an option of its own.
    /// [`OptionError::UnknownKeyword`] for a keyword of no family.
    pub fn parse(&mut self, raw: &RawOption<'_>) -> OptResult<()> {
        // The keyword table is the gate: what `--list-keywords` shows is what loads.
        if !is_known_keyword(raw.keyword) {
            return Err(OptionError::UnknownKeyword);
        }
        let arg = Arg { kw: raw.keyword, value: raw.value };
        if let Some(done) = self.content_modifier(&arg) {
            return done;
        }
        let parsed = meta_keyword(&arg)
            .or_else(|| payload_keyword(&arg))
            .or_else(|| packet_keyword(&arg))
            .or_else(|| app_keyword(&arg))
            .or_else(|| state_keyword(&arg))
            .or_else(|| buffer_keyword(&arg));
        match parsed {
            Some(option) => {
                self.push(option?);
                Ok(())
            }
            None => self.legacy_buffer_modifier(&arg).unwrap_or(Err(OptionError::UnknownKeyword)),
        }
    }

    /// The keywords that modify the content before them: `nocase`, `depth`, `fast_pattern`...;
    /// `None` for other keywords.
    fn content_modifier(&mut self, arg: &Arg<'_>) -> Option<OptResult<()>> {
        let kw = arg.kw;
        let done = match kw {
            "nocase" => arg.none().and_then(|()| set_flag(&mut self.last_content_mut(kw)?.nocase, kw)),
            "rawbytes" => arg.none().and_then(|()| set_flag(&mut self.last_content_mut(kw)?.rawbytes, kw)),
            "startswith" => arg.none().and_then(|()| {
                let c = self.last_content_mut(kw)?;
                if c.depth.is_some() || c.offset.is_some() || c.is_relative() {
                    return Err(OptionError::StartswithWithPosition);
                }
                set_flag(&mut c.startswith, kw)
            }),
            "endswith" => arg.none().and_then(|()| set_flag(&mut self.last_content_mut(kw)?.endswith, kw)),
            "depth" | "offset" | "distance" | "within" => self.content_position(arg),
            "fast_pattern" => self.fast_pattern(arg),
            "prefilter" => arg.none().map(|()| match self.options.last_mut() {
                Some(RuleOption::Content(c)) => c.prefilter = true,
                _ => self.push(RuleOption::Prefilter),
            }),
            _ => return None,
        };
        Some(done)
    }

    /// A legacy buffer modifier (`content:"x"; http_uri;`) puts the content before it in that
    /// buffer; `None` for other keywords.
    fn legacy_buffer_modifier(&mut self, arg: &Arg<'_>) -> Option<OptResult<()>> {
        let kw = arg.kw;
        let buffer = content_modifier_buffer(kw)?;
        Some(arg.none().and_then(|()| {
            let c = self.last_content_mut(kw)?;
            if c.legacy_buffer.is_some() {
                return Err(OptionError::DuplicateBuffer { keyword: kw.to_string() });
            }
            c.legacy_buffer = Some(buffer);
            Ok(())
        }))
    }

    /// `depth`, `offset`, `distance`, `within`.
    fn content_position(&mut self, arg: &Arg<'_>) -> OptResult<()> {
        let kw = arg.kw;
        let v = parse_num_or_var(arg.need()?, kw)?;
        let c = self.last_content_mut(kw)?;
        if c.startswith {
            return Err(OptionError::PositionWithStartswith { keyword: kw.to_string() });
        }
        let relative_kw = kw == "distance" || kw == "within";
        if relative_kw && (c.depth.is_some() || c.offset.is_some()) || !relative_kw && c.is_relative() {
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
        Ok(())
    }

    fn fast_pattern(&mut self, arg: &Arg<'_>) -> OptResult<()> {
        let kw = arg.kw;
        let fp = match arg.value.map(str::trim) {
            None => FastPattern::Whole,
            Some("only") => FastPattern::Only,
            Some(v) => {
                let (o, l) = v.split_once(',').ok_or_else(|| bad_value("fast_pattern", v))?;
                FastPattern::Chop { offset: parse_u16(o, kw)?, length: parse_u16(l, kw)? }
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
        Ok(())
    }
}

impl Default for OptionParser {
    fn default() -> Self {
        Self::new()
    }
}

/// `msg`, `sid`, `rev`, `gid`, `classtype`, `priority`, `reference`, `metadata`, `target`.
fn meta_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let kw = arg.kw;
    let value = || arg.need();
    let parsed = match kw {
        "msg" => value().map(|v| RuleOption::Msg(unescape_text(unquote_lenient(v)))),
        "sid" => value().and_then(|v| match parse_u32(v, kw)? {
            0 => Err(OptionError::SidZero),
            sid => Ok(RuleOption::Sid(sid)),
        }),
        "rev" => value().and_then(|v| parse_u32(v, kw)).map(RuleOption::Rev),
        "gid" => value().and_then(|v| parse_u32(v, kw)).map(RuleOption::Gid),
        "classtype" => value().and_then(|v| {
            let v = v.trim();
            if !v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
                return Err(bad_value("classtype", v));
            }
            Ok(RuleOption::Classtype(v.to_string()))
        }),
        "priority" => value().and_then(|v| match parse_u32(v, kw)? {
            p @ 1..=255 => Ok(RuleOption::Priority(p as u8)),
            p => Err(OptionError::PriorityRange { priority: p }),
        }),
        "reference" => value().and_then(|v| {
            let (system, id) = v.split_once(',').ok_or(OptionError::BadReference)?;
            Ok(RuleOption::Reference { system: system.trim().to_string(), id: id.trim().to_string() })
        }),
        "metadata" => value().map(|v| RuleOption::Metadata(parse_metadata(v))),
        "target" => value().and_then(|v| match v.trim() {
            "src_ip" => Ok(RuleOption::Target(Target::SrcIp)),
            "dest_ip" => Ok(RuleOption::Target(Target::DestIp)),
            other => Err(bad_value("target", other)),
        }),
        _ => return None,
    };
    Some(parsed)
}

/// `pcre_limit:MATCH[,DEPTH]`, each 1..=10000000 (PCRE2's own ceiling).
fn parse_pcre_limit(value: &str) -> OptResult<RuleOption> {
    const KW: &str = "pcre_limit";
    let limit = |text: &str| -> OptResult<u32> {
        let n = parse_u32(text.trim(), KW)?;
        if (1..=10_000_000).contains(&n) {
            Ok(n)
        } else {
            Err(bad_value(KW, text.trim()))
        }
    };
    let (match_limit, recursion) = match value.split_once(',') {
        Some((m, r)) => (limit(m)?, Some(limit(r)?)),
        None => (limit(value)?, None),
    };
    Ok(RuleOption::PcreLimit { match_limit, recursion })
}

/// `metadata:key value, key value`; a key may come without a value.
fn parse_metadata(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once(char::is_whitespace) {
            Some((k, v)) => (k.to_string(), v.trim().to_string()),
            None => (item.to_string(), String::new()),
        })
        .collect()
}

/// `content` (`uricontent`), `pcre`, `isdataat`, the `byte_*` keywords and `base64_decode`.
fn payload_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let kw = arg.kw;
    let parsed = match kw {
        "content" | "uricontent" => arg.need().and_then(parse_content).map(|mut content| {
            if kw == "uricontent" {
                content.legacy_buffer = buffer_by_name("http.uri");
            }
            RuleOption::Content(content)
        }),
        "pcre" => arg.need().and_then(parse_pcre).map(RuleOption::Pcre),
        "pcre_limit" => arg.need().and_then(parse_pcre_limit),
        "isdataat" => arg.need().and_then(parse_isdataat).map(RuleOption::Isdataat),
        "byte_test" => arg.need().and_then(parse_byte_test).map(RuleOption::ByteTest),
        "byte_jump" => arg.need().and_then(parse_byte_jump).map(RuleOption::ByteJump),
        "byte_extract" => arg.need().and_then(parse_byte_extract).map(RuleOption::ByteExtract),
        "byte_math" => arg.need().and_then(parse_byte_math).map(RuleOption::ByteMath),
        "base64_decode" => parse_base64_decode(arg.value).map(RuleOption::Base64Decode),
        _ => return None,
    };
    Some(parsed)
}

/// Keywords on the packet's IP, TCP and ICMP headers, its size and its flow.
fn packet_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let kw = arg.kw;
    let value = || arg.need();
    let parsed = match kw {
        "flow" => value().and_then(parse_flow).map(RuleOption::Flow),
        // `tcp.flags` is Suricata 8's name for `flags`.
        "flags" | "tcp.flags" => value().and_then(parse_flags).map(RuleOption::Flags),
        "window" => value().and_then(|v| {
            let (negated, v) = strip_bang(v);
            Ok(RuleOption::Window { negated, size: parse_u16(v, kw)? })
        }),
        "seq" => value().and_then(|v| parse_u32(v, kw)).map(RuleOption::Seq),
        "ack" => value().and_then(|v| parse_u32(v, kw)).map(RuleOption::Ack),
        "ttl" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Ttl),
        "tos" => value().and_then(|v| {
            let (negated, v) = strip_bang(v);
            let tos = parse_u64_any_base(v).filter(|n| *n <= 255).ok_or_else(|| bad_value("tos", v))?;
            Ok(RuleOption::Tos { negated, tos: tos as u8 })
        }),
        "ipopts" => value().and_then(parse_ipopts).map(RuleOption::Ipopts),
        "fragbits" => value().and_then(parse_fragbits).map(RuleOption::Fragbits),
        "fragoffset" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Fragoffset),
        "id" => value().and_then(|v| parse_u16(v, kw)).map(RuleOption::IpId),
        "ip_proto" => value().and_then(parse_ip_proto).map(RuleOption::IpProto),
        "itype" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Itype),
        "icode" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Icode),
        "icmp_id" => value().and_then(|v| parse_u16(v, kw)).map(RuleOption::IcmpId),
        "icmp_seq" => value().and_then(|v| parse_u16(v, kw)).map(RuleOption::IcmpSeq),
        "dsize" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Dsize),
        "stream_size" => value().and_then(parse_stream_size),
        "flow.pkts"
        | "flow.bytes"
        | "flow.pkts_toserver"
        | "flow.pkts_toclient"
        | "flow.bytes_toserver"
        | "flow.bytes_toclient" => value().and_then(|v| parse_flow_count(kw, v)).map(RuleOption::FlowCount),
        "flow.age" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::FlowAge),
        "app-layer-event" => value().and_then(parse_app_layer_event),
        _ => return packet_keywords::parse(kw, arg.value).map(|parsed| parsed.map(RuleOption::from)),
    };
    Some(parsed)
}

/// Keywords on application-layer facts: `bsize`, `urilen`, `app-layer-protocol`, the numeric
/// DNS and TLS keywords, and the legacy TLS string keywords.
fn app_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let kw = arg.kw;
    let value = || arg.need();
    let number = |field: AppNumber, cmp: UintCmp<u64>| RuleOption::AppNumber { field, cmp, index: NumberIndex::Any };
    let parsed = match kw {
        "bsize" => value().and_then(|v| parse_uint_cmp(v, kw)).map(RuleOption::Bsize),
        "entropy" => value().and_then(super::entropy::parse_entropy).map(RuleOption::Entropy),
        "absent" => match arg.value.map(str::trim) {
            None | Some("") => Ok(RuleOption::Absent { or_else: false }),
            Some("or_else") => Ok(RuleOption::Absent { or_else: true }),
            Some(other) => {
                Err(OptionError::UnknownPart { keyword: kw.to_string(), part: "option", value: other.to_string() })
            }
        },
        "urilen" => value().and_then(|v| parse_urilen(v, kw)),
        "app-layer-protocol" => value().and_then(|v| {
            let (negated, v) = strip_bang(v);
            let (v, exact) = match v.split_once(',') {
                Some((v, m)) if m.trim() == "exact" => (v, true),
                _ => (v, false),
            };
            let name =
                app_protocol(v.trim()).ok_or_else(|| OptionError::UnknownAppProtocol { name: v.trim().to_string() })?;
            Ok(RuleOption::AppLayerProtocol { negated, name, exact })
        }),
        "dns.opcode" => value().and_then(|v| parse_dns_number(v, kw)).map(|cmp| number(AppNumber::DnsOpcode, cmp)),
        "dns.rcode" => value().and_then(|v| parse_dns_number(v, kw)).map(|cmp| number(AppNumber::DnsRcode, cmp)),
        "dns.rrtype" => value().and_then(|v| {
            // One value per question or answer: an optional index part says which.
            let (value, index) = match v.split_once(',') {
                Some((value, index)) => (
                    value,
                    NumberIndex::parse(index).ok_or_else(|| OptionError::UnknownPart {
                        keyword: kw.to_string(),
                        part: "index",
                        value: index.trim().to_string(),
                    })?,
                ),
                None => (v, NumberIndex::Any),
            };
            let cmp = parse_dns_number(value, kw)?;
            Ok(RuleOption::AppNumber { field: AppNumber::DnsRrtype, cmp, index })
        }),
        "tls.version" => value().and_then(parse_tls_version).map(|v| number(AppNumber::TlsVersion, UintCmp::Eq(v))),
        "tls.cert_chain_len" => {
            value().and_then(|v| parse_uint_cmp(v, kw)).map(|cmp| number(AppNumber::TlsCertChainLen, cmp))
        }
        "tls_cert_notbefore" => {
            value().and_then(parse_cert_validity).map(|cmp| number(AppNumber::TlsCertNotBefore, cmp))
        }
        "tls_cert_notafter" => value().and_then(parse_cert_validity).map(|cmp| number(AppNumber::TlsCertNotAfter, cmp)),
        "tls.subject" | "tls.issuerdn" | "tls.fingerprint" => value().and_then(|v| parse_tls_string(v, kw)),
        _ => return None,
    };
    Some(parsed)
}

/// `urilen:N[,raw|norm]`.
fn parse_urilen(v: &str, kw: &str) -> OptResult<RuleOption> {
    let (cmp_text, raw) = match v.split_once(',') {
        None => (v, false),
        Some((c, "raw")) | Some((c, " raw")) => (c, true),
        Some((c, m)) if m.trim() == "norm" => (c, false),
        Some((_, m)) => return Err(bad_value("urilen modifier", m.trim())),
    };
    Ok(RuleOption::Urilen { cmp: parse_uint_cmp(cmp_text, kw)?, raw })
}

/// `dns.opcode` and friends; Suricata writes negation as a leading '!' on these keywords.
fn parse_dns_number(v: &str, kw: &str) -> OptResult<UintCmp<u64>> {
    let text = v.trim();
    match text.strip_prefix('!') {
        Some(rest) => match parse_uint_cmp(rest, kw)? {
            UintCmp::Eq(v) => Ok(UintCmp::Ne(v)),
            _ => Err(OptionError::NegatedRange { keyword: kw.to_string() }),
        },
        None => parse_uint_cmp(text, kw),
    }
}

/// Legacy string keywords (`tls.subject`, `tls.issuerdn`, `tls.fingerprint`): a case-sensitive
/// substring of the certificate field, '!' for its absence. They are contents on the
/// matching buffer.
fn parse_tls_string(v: &str, kw: &str) -> OptResult<RuleOption> {
    let (negated, v) = strip_bang(v);
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
    Ok(RuleOption::Content(Content { pattern, negated, legacy_buffer: buffer_by_name(buffer), ..Content::default() }))
}

/// Flow and host state (`flowbits`, `flowint`, `xbits`, `hostbits`), alert limits
/// (`threshold`, `detection_filter`) and `noalert`.
fn state_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let value = || arg.need();
    let parsed = match arg.kw {
        "flowbits" => value().and_then(parse_flowbits).map(RuleOption::Flowbits),
        "flowint" => value().and_then(parse_flowint).map(RuleOption::Flowint),
        "xbits" => value().and_then(parse_xbits).map(RuleOption::Xbits),
        "hostbits" => value().and_then(parse_hostbits).map(RuleOption::Xbits),
        "threshold" => value().and_then(parse_threshold).map(RuleOption::Threshold),
        "detection_filter" => value().and_then(|v| {
            let (t, unique_on) = parse_threshold_fields(v, false)?;
            Ok(RuleOption::DetectionFilter(DetectionFilter {
                track: t.track,
                count: t.count,
                seconds: t.seconds,
                unique_on,
            }))
        }),
        "noalert" => arg.none().map(|()| RuleOption::Noalert),
        "alert" => arg.none().map(|()| RuleOption::Alert),
        "bypass" => arg.none().map(|()| RuleOption::Bypass),
        _ => return None,
    };
    Some(parsed)
}

/// What the following payload keywords inspect: `pkt_data`, a sticky buffer (with an optional
/// direction), or a transform of the current buffer.
fn buffer_keyword(arg: &Arg<'_>) -> Option<OptResult<RuleOption>> {
    let kw = arg.kw;
    if kw == "pkt_data" {
        return Some(arg.none().map(|()| RuleOption::PktData));
    }
    if let Some(buffer) = sticky_buffer(kw) {
        let direction = match arg.value {
            None => None,
            Some("to_server") => Some(BufferDirection::ToServer),
            Some("to_client") => Some(BufferDirection::ToClient),
            Some(other) => {
                let error = OptionError::BufferDirection { keyword: kw.to_string(), direction: other.to_string() };
                return Some(Err(error));
            }
        };
        return Some(Ok(RuleOption::StickyBuffer { buffer, direction }));
    }
    Transform::parse(kw, arg.value).transpose().map(|t| t.map(RuleOption::Transform))
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
    if d.next().is_some()
        || tm.next().is_some()
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
        || year < 1970
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
    if [f.established, f.not_established, f.stateless].iter().filter(|b| **b).count() > 1 {
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
            ignore |=
                tcp_flag_bit(c).filter(|b| *b != 0).ok_or_else(|| bad_part("flags", "mask flag", &c.to_string()))?;
        }
    }
    Ok(TcpFlags { mode: mode.unwrap_or(FlagsMode::Exact), flags, ignore })
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
    Ok(Fragbits { mode: mode.unwrap_or(FlagsMode::Exact), bits })
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
