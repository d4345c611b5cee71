//! Typed rule options. Each keyword's value is parsed into its own struct; content modifiers
//! (`nocase`, `depth`, `http_uri`...) are folded into the content they follow.

use super::buffers::{content_modifier_buffer, sticky_buffer, AppNumber, Buffer, Transform};
use super::header::app_protocol;
use super::lexer::{strip_quotes, unescape_text, unquote_lenient, RawOption};

/// A number written in the rule, or the name of a `byte_extract`/`byte_math` variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumOrVar {
    Num(i64),
    Var(String),
}

/// Comparison forms shared by dsize, bsize, ttl, itype, icode, urilen, stream_size...
/// Ranges are exclusive on both ends, as in Suricata (`2<>5` matches 3 and 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UintCmp<T> {
    Eq(T),
    Ne(T),
    Lt(T),
    Le(T),
    Gt(T),
    Ge(T),
    Range(T, T),
    NotRange(T, T),
}

impl<T: Copy + PartialOrd> UintCmp<T> {
    pub fn matches(&self, v: T) -> bool {
        match *self {
            UintCmp::Eq(a) => v == a,
            UintCmp::Ne(a) => v != a,
            UintCmp::Lt(a) => v < a,
            UintCmp::Le(a) => v <= a,
            UintCmp::Gt(a) => v > a,
            UintCmp::Ge(a) => v >= a,
            UintCmp::Range(lo, hi) => v > lo && v < hi,
            UintCmp::NotRange(lo, hi) => !(v > lo && v < hi),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPattern {
    /// `fast_pattern;`
    Whole,
    /// `fast_pattern:only;` (legacy; Suricata treats it like `fast_pattern`).
    Only,
    /// `fast_pattern:offset,length;` uses only that slice of the pattern for prefiltering.
    Chop { offset: u16, length: u16 },
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Content {
    pub pattern: Vec<u8>,
    pub negated: bool,
    pub nocase: bool,
    pub rawbytes: bool,
    pub depth: Option<NumOrVar>,
    pub offset: Option<NumOrVar>,
    pub distance: Option<NumOrVar>,
    pub within: Option<NumOrVar>,
    pub startswith: bool,
    pub endswith: bool,
    pub fast_pattern: Option<FastPattern>,
    pub prefilter: bool,
    /// Buffer set by a legacy modifier after this content (`http_uri`); overrides the sticky
    /// buffer in effect. `uricontent` sets it to `http.uri`.
    pub legacy_buffer: Option<Buffer>,
}

impl Content {
    pub fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PcreFlags {
    pub caseless: bool,       // i
    pub dotall: bool,         // s
    pub multiline: bool,      // m
    pub extended: bool,       // x
    pub anchored: bool,       // A
    pub dollar_endonly: bool, // E
    pub ungreedy: bool,       // G
    pub relative: bool,       // R
    pub rawbytes: bool,       // B
    pub no_match_limit: bool, // O
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pcre {
    /// The regex between the slashes, as written.
    pub pattern: String,
    pub negated: bool,
    pub flags: PcreFlags,
    /// Buffer selected by an HTTP flag (U, I, P, Q, H, D, M, C, S, Y, V, W, Z).
    pub buffer: Option<Buffer>,
    /// Capture variables (`pcre:"/(.*)/, flow:name"`), stored as written.
    pub captures: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Isdataat {
    pub negated: bool,
    pub offset: NumOrVar,
    pub relative: bool,
    pub rawbytes: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
    /// Endianness taken from the DCE/RPC header.
    Dce,
}

/// `string` mode of the byte_* keywords: the bytes are ASCII digits in this base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumBase {
    Hex,
    Dec,
    Oct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteTestOp {
    Lt,
    Gt,
    Eq,
    Le,
    Ge,
    And,
    Xor,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteTest {
    /// Number of bytes, or a byte_extract variable holding it.
    pub bytes: NumOrVar,
    pub negated: bool,
    pub op: ByteTestOp,
    pub value: NumOrVar,
    pub offset: NumOrVar,
    pub relative: bool,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteJump {
    pub bytes: NumOrVar,
    pub offset: NumOrVar,
    pub relative: bool,
    pub multiplier: Option<u32>,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub align: bool,
    pub from_beginning: bool,
    pub from_end: bool,
    pub post_offset: Option<i64>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteExtract {
    pub bytes: u8,
    pub offset: i64,
    pub name: String,
    pub relative: bool,
    pub multiplier: Option<u32>,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub align: Option<u8>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteMathOp {
    Add,
    Sub,
    Mul,
    Div,
    Shl,
    Shr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteMath {
    pub bytes: NumOrVar,
    pub offset: i64,
    pub op: ByteMathOp,
    pub rvalue: NumOrVar,
    pub result: String,
    pub relative: bool,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Base64Decode {
    pub bytes: Option<u32>,
    pub offset: Option<u32>,
    pub relative: bool,
}

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
pub enum FlowbitsCmd {
    Set,
    Unset,
    Toggle,
    IsSet,
    IsNotSet,
    NoAlert,
}

/// How several names in one flowbits option combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitsGroup {
    Single,
    /// `a|b`: any of them.
    Any,
    /// `a&b`: all of them.
    All,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flowbits {
    pub cmd: FlowbitsCmd,
    pub names: Vec<String>,
    pub group: BitsGroup,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowintOp {
    Set,
    Add,
    Sub,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    IsSet,
    NotSet,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flowint {
    pub name: String,
    pub op: FlowintOp,
    pub value: Option<NumOrVar>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XbitsTrack {
    IpSrc,
    IpDst,
    IpPair,
    Tx,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xbits {
    pub cmd: FlowbitsCmd,
    pub name: String,
    pub track: Option<XbitsTrack>,
    pub expire: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdType {
    Limit,
    Threshold,
    Both,
    Backoff,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    BySrc,
    ByDst,
    ByRule,
    ByBoth,
    ByFlow,
    /// `by_either`, suppress only.
    ByEither,
}

impl Track {
    pub fn parse(text: &str) -> Option<Track> {
        Some(match text {
            "by_src" => Track::BySrc,
            "by_dst" => Track::ByDst,
            "by_rule" => Track::ByRule,
            "by_both" => Track::ByBoth,
            "by_flow" => Track::ByFlow,
            "by_either" => Track::ByEither,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    pub kind: ThresholdType,
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    /// `backoff` only.
    pub multiplier: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetectionFilter {
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    /// `unique_on src_port|dst_port`: count distinct ports instead of matches.
    pub unique_on: Option<UniqueOn>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueOn {
    SrcPort,
    DstPort,
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
    VlanId(super::packet_keywords::VlanId),
    /// `vlan.layers`: number of VLAN tags.
    VlanLayers(UintCmp<u8>),
    /// `tcpv4-csum:valid|invalid` and the other checksum keywords.
    Checksum {
        layer: super::packet_keywords::ChecksumLayer,
        valid: bool,
    },
    /// `decode-event:<name>`: the decoder raised this event on the packet.
    DecodeEvent(crate::decode::events::DecodeEvent),
    Tag(super::packet_keywords::Tag),
    /// `flow.pkts` / `flow.bytes` (and the older `flow.pkts_toserver:N` forms).
    FlowCount(FlowCount),
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
fn parse_flow_count(kw: &str, value: &str) -> Result<FlowCount, String> {
    let (kind, fixed_dir) = match kw {
        "flow.pkts" => (FlowCountKind::Packets, None),
        "flow.bytes" => (FlowCountKind::Bytes, None),
        "flow.pkts_toserver" => (FlowCountKind::Packets, Some(FlowCountDir::ToServer)),
        "flow.pkts_toclient" => (FlowCountKind::Packets, Some(FlowCountDir::ToClient)),
        "flow.bytes_toserver" => (FlowCountKind::Bytes, Some(FlowCountDir::ToServer)),
        "flow.bytes_toclient" => (FlowCountKind::Bytes, Some(FlowCountDir::ToClient)),
        _ => return Err(format!("unknown flow counter keyword '{kw}'")),
    };
    let (dir, cmp_text) = match fixed_dir {
        Some(d) => (d, value),
        None => {
            let (d, rest) = value.split_once(',').ok_or_else(|| format!("{kw}: needs direction,value"))?;
            let d = match d.trim() {
                "toserver" | "to_server" => FlowCountDir::ToServer,
                "toclient" | "to_client" => FlowCountDir::ToClient,
                "either" => FlowCountDir::Either,
                other => return Err(format!("{kw}: invalid direction '{other}'")),
            };
            (d, rest)
        }
    };
    Ok(FlowCount { kind, dir, cmp: parse_uint_cmp(cmp_text, kw)? })
}

/// Outcome of one option: an error in its value, or a keyword we do not know.
#[derive(Debug)]
pub enum OptionError {
    Invalid(String),
    Unknown,
}

impl From<String> for OptionError {
    fn from(s: String) -> Self {
        OptionError::Invalid(s)
    }
}

impl From<&str> for OptionError {
    fn from(s: &str) -> Self {
        OptionError::Invalid(s.to_string())
    }
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
            _ => Err(OptionError::Invalid(format!(
                "'{keyword}' needs a preceding content"
            ))),
        }
    }

    pub fn parse(&mut self, raw: &RawOption<'_>) -> OptResult<()> {
        let kw = raw.keyword;
        let value = raw.value;
        let need = || -> OptResult<&str> {
            value.ok_or_else(|| OptionError::Invalid(format!("'{kw}' needs a value")))
        };
        let none = || -> OptResult<()> {
            match value {
                None => Ok(()),
                Some(v) => Err(OptionError::Invalid(format!(
                    "'{kw}' takes no value, got '{v}'"
                ))),
            }
        };
        match kw {
            "msg" => self.push(RuleOption::Msg(unescape_text(unquote_lenient(need()?)))),
            "sid" => {
                let sid = parse_u32(need()?, kw)?;
                if sid == 0 {
                    return Err("sid must be greater than 0".into());
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
                    return Err(format!("invalid classtype '{v}'").into());
                }
                self.push(RuleOption::Classtype(v.to_string()))
            }
            "priority" => {
                let p = parse_u32(need()?, kw)?;
                if p == 0 || p > 255 {
                    return Err(format!("priority {p} out of range 1-255").into());
                }
                self.push(RuleOption::Priority(p as u8))
            }
            "reference" => {
                let v = need()?;
                let (system, id) = v.split_once(',').ok_or("reference must be 'system,id'")?;
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
                    other => return Err(format!("invalid target '{other}'").into()),
                };
                self.push(RuleOption::Target(t))
            }
            "content" | "uricontent" => {
                let mut content = parse_content(need()?)?;
                if kw == "uricontent" {
                    content.legacy_buffer = super::buffers::buffer_by_name("http.uri");
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
                    return Err(
                        "startswith cannot be combined with depth, offset, distance or within"
                            .into(),
                    );
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
                    return Err(format!("'{kw}' cannot be combined with startswith").into());
                }
                let relative_kw = kw == "distance" || kw == "within";
                if relative_kw && (c.depth.is_some() || c.offset.is_some())
                    || !relative_kw && c.is_relative()
                {
                    return Err(format!(
                        "'{kw}' mixes relative (distance/within) and absolute (depth/offset) positions"
                    )
                    .into());
                }
                if let NumOrVar::Num(n) = v {
                    let negative_ok = kw == "distance" || kw == "offset";
                    if n < 0 && !negative_ok {
                        return Err(format!("'{kw}' must not be negative").into());
                    }
                    if (kw == "depth" || kw == "within") && (n as usize) < c.pattern.len() {
                        return Err(format!(
                            "'{kw}' {n} is smaller than the content length {}",
                            c.pattern.len()
                        )
                        .into());
                    }
                }
                let slot = match kw {
                    "depth" => &mut c.depth,
                    "offset" => &mut c.offset,
                    "distance" => &mut c.distance,
                    _ => &mut c.within,
                };
                if slot.is_some() {
                    return Err(format!("'{kw}' given twice for one content").into());
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
                            .ok_or_else(|| format!("invalid fast_pattern '{v}'"))?;
                        FastPattern::Chop {
                            offset: parse_u16(o, kw)?,
                            length: parse_u16(l, kw)?,
                        }
                    }
                };
                let c = self.last_content_mut(kw)?;
                if let FastPattern::Chop { offset, length } = fp {
                    if usize::from(offset) + usize::from(length) > c.pattern.len() || length == 0 {
                        return Err("fast_pattern offset,length exceeds the content".into());
                    }
                }
                if c.fast_pattern.is_some() {
                    return Err("fast_pattern given twice for one content".into());
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
                    .ok_or_else(|| format!("invalid tos '{v}'"))?;
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
                        _ => return Err(format!("{kw}: '!' only negates a single value").into()),
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
                    return Err(format!("'{kw}' needs a value").into());
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
                    legacy_buffer: super::buffers::buffer_by_name(buffer),
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
                        return Err(format!("invalid urilen modifier '{}'", m.trim()).into())
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
                    .ok_or_else(|| format!("unknown app-layer protocol '{}'", v.trim()))?;
                self.push(RuleOption::AppLayerProtocol { negated, name })
            }
            "pkt_data" => {
                none()?;
                self.push(RuleOption::PktData)
            }
            _ => {
                if let Some(parsed) = super::packet_keywords::parse(kw, value) {
                    self.push(parsed?);
                } else if let Some(buffer) = sticky_buffer(kw) {
                    let direction = match value {
                        None => None,
                        Some("to_server") => Some(BufferDirection::ToServer),
                        Some("to_client") => Some(BufferDirection::ToClient),
                        Some(other) => {
                            return Err(format!("'{kw}': invalid direction '{other}'").into())
                        }
                    };
                    self.push(RuleOption::StickyBuffer { buffer, direction });
                } else if let Some(buffer) = content_modifier_buffer(kw) {
                    none()?;
                    let c = self.last_content_mut(kw)?;
                    if c.legacy_buffer.is_some() {
                        return Err(format!("'{kw}': content already has a buffer modifier").into());
                    }
                    c.legacy_buffer = Some(buffer);
                } else if let Some(t) = Transform::parse(kw, value)? {
                    self.push(RuleOption::Transform(t));
                } else {
                    return Err(OptionError::Unknown);
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
        return Err(format!("'{kw}' given twice for one content").into());
    }
    *flag = true;
    Ok(())
}

fn strip_bang(v: &str) -> (bool, &str) {
    let v = v.trim();
    match v.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, v),
    }
}

pub fn parse_u32(v: &str, kw: &str) -> Result<u32, String> {
    v.trim()
        .parse::<u32>()
        .map_err(|_| format!("invalid {kw} '{}'", v.trim()))
}

fn parse_u16(v: &str, kw: &str) -> Result<u16, String> {
    v.trim()
        .parse::<u16>()
        .map_err(|_| format!("invalid {kw} '{}'", v.trim()))
}

/// Decimal, or hex with a `0x` prefix (a leading `0` does not mean octal).
fn parse_u64_any_base(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

fn is_var_name(v: &str) -> bool {
    let mut chars = v.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

fn parse_num_or_var(v: &str, kw: &str) -> Result<NumOrVar, String> {
    let v = v.trim();
    if let Ok(n) = v.parse::<i64>() {
        if n.unsigned_abs() > u64::from(u32::MAX) {
            return Err(format!("{kw} value {n} out of range"));
        }
        return Ok(NumOrVar::Num(n));
    }
    if let Some(n) = parse_u64_any_base(v) {
        if n > u64::from(u32::MAX) {
            return Err(format!("{kw} value {n} out of range"));
        }
        return Ok(NumOrVar::Num(n as i64));
    }
    if is_var_name(v) {
        return Ok(NumOrVar::Var(v.to_string()));
    }
    Err(format!("invalid {kw} value '{v}'"))
}

/// Numeric comparison: `N`, `!N`, `<N`, `<=N`, `>N`, `>=N`, `=N`, `N<>M`, `N-M`, `!N-M`.
pub fn parse_uint_cmp<T>(v: &str, kw: &str) -> Result<UintCmp<T>, String>
where
    T: TryFrom<u64> + Copy + PartialOrd,
{
    let text = v.trim();
    let bad = || format!("invalid {kw} value '{text}'");
    let num = |s: &str| -> Result<T, String> {
        let n = parse_u64_any_base(s).ok_or_else(bad)?;
        T::try_from(n).map_err(|_| format!("{kw} value '{}' out of range", s.trim()))
    };
    let range = |lo: &str, hi: &str| -> Result<(T, T), String> {
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo >= hi {
            return Err(format!("{kw} range '{text}': start must be below end"));
        }
        Ok((lo, hi))
    };
    if let Some(rest) = text.strip_prefix("<=") {
        return Ok(UintCmp::Le(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix(">=") {
        return Ok(UintCmp::Ge(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix("!=") {
        return Ok(UintCmp::Ne(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('<') {
        return Ok(UintCmp::Lt(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('>') {
        return Ok(UintCmp::Gt(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('=') {
        return Ok(UintCmp::Eq(num(rest)?));
    }
    let (negated, body) = match text.strip_prefix('!') {
        Some(r) => (true, r.trim()),
        None => (false, text),
    };
    let bounds = match body.split_once("<>") {
        Some((lo, hi)) => Some(range(lo, hi)?),
        None => match body.split_once('-') {
            Some((lo, hi)) => Some(range(lo, hi)?),
            None => None,
        },
    };
    Ok(match (negated, bounds) {
        (false, Some((lo, hi))) => UintCmp::Range(lo, hi),
        (true, Some((lo, hi))) => UintCmp::NotRange(lo, hi),
        (false, None) => UintCmp::Eq(num(body)?),
        (true, None) => UintCmp::Ne(num(body)?),
    })
}

/// `tls.version` value as Suricata reads it: `1.0` to `1.3`, `ssl3`, or a wire value in hex.
fn parse_tls_version(value: &str) -> Result<u64, String> {
    let v = unquote_lenient(value);
    Ok(match v {
        "1.0" => 0x0301,
        "1.1" => 0x0302,
        "1.2" => 0x0303,
        "1.3" => 0x0304,
        "ssl3" | "sslv3" | "3.0" => 0x0300,
        _ => match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u16::from_str_radix(hex, 16).map_err(|_| format!("invalid tls.version '{v}'"))?.into(),
            None => return Err(format!("invalid tls.version '{v}'")),
        },
    })
}

/// `tls_cert_notbefore`/`tls_cert_notafter`: `[<|>]DATE` or `DATE<>DATE`, where DATE is
/// `YYYY[-MM[-DD[THH[:MM[:SS]]]]]` (UTC) or Unix seconds. `<` and `>` include the date,
/// as in Suricata; so does a range.
fn parse_cert_validity(value: &str) -> Result<UintCmp<u64>, String> {
    let v = unquote_lenient(value);
    if let Some((lo, hi)) = v.split_once("<>") {
        let (lo, hi) = (parse_cert_date(lo)?, parse_cert_date(hi)?);
        if lo >= hi {
            return Err(format!("invalid certificate date range '{v}'"));
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
fn parse_cert_date(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || format!("invalid certificate date '{t}'");
    if !t.is_empty() && t.len() > 4 && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    let (date, time) = t.split_once('T').unwrap_or((t, ""));
    let mut d = date.split('-');
    let field = |s: Option<&str>, len: usize, default: i64| -> Result<i64, String> {
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

/// Decodes hex digit pairs, spaces allowed between pairs.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

/// `content:[!]"text|41 42|text"`.
fn parse_content(value: &str) -> Result<Content, String> {
    let (negated, rest) = strip_bang(value);
    let inner = strip_quotes(rest).ok_or_else(|| format!("content must be quoted: {}", rest))?;
    let pattern = decode_content_pattern(inner)?;
    if pattern.is_empty() {
        return Err("content is empty".into());
    }
    Ok(Content {
        pattern,
        negated,
        ..Content::default()
    })
}

pub fn decode_content_pattern(inner: &str) -> Result<Vec<u8>, String> {
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_hex = false;
    let mut hex_start = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_hex {
            if c == b'|' {
                let decoded = decode_hex(&inner[hex_start..i])
                    .ok_or_else(|| format!("invalid hex in content: |{}|", &inner[hex_start..i]))?;
                out.extend_from_slice(&decoded);
                in_hex = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'|' => {
                in_hex = true;
                hex_start = i + 1;
            }
            b'\\' => {
                let next = *bytes
                    .get(i + 1)
                    .ok_or("content ends with a lone backslash")?;
                if !matches!(next, b'"' | b';' | b'\\' | b':' | b'|') {
                    return Err(format!("invalid escape '\\{}' in content", next as char));
                }
                out.push(next);
                i += 1;
            }
            b'"' => return Err("unescaped '\"' inside content".into()),
            _ => out.push(c),
        }
        i += 1;
    }
    if in_hex {
        return Err("unterminated hex block in content".into());
    }
    Ok(out)
}

fn parse_pcre(value: &str) -> Result<Pcre, String> {
    let (negated, rest) = strip_bang(value);
    let rest = rest.trim();
    // Optional capture spec after the closing quote: `"/re/", flow:var`.
    let (quoted, captures) = match rest.rfind('"') {
        Some(end) if end > 0 && rest.starts_with('"') => {
            let tail = rest[end + 1..].trim();
            let captures = match tail.strip_prefix(',') {
                Some(c) => Some(c.trim().to_string()),
                None if tail.is_empty() => None,
                None => return Err(format!("unexpected '{tail}' after pcre")),
            };
            (&rest[1..end], captures)
        }
        // Suricata also takes the regex unquoted (`pcre:/one/U;`).
        _ if rest.starts_with('/') => (rest, None),
        _ => return Err("pcre must be a quoted \"/regex/flags\"".into()),
    };
    let body = quoted.strip_prefix('/').ok_or("pcre must start with '/'")?;
    let close = body.rfind('/').ok_or("pcre is missing its closing '/'")?;
    // Capture variables may also sit inside the quotes: `"/re/flags, pkt:a, flow:b"`.
    let (flag_text, inner_captures) = match body[close + 1..].split_once(',') {
        Some((f, c)) => (f.trim_end(), Some(c.trim().to_string())),
        None => (&body[close + 1..], None),
    };
    if inner_captures.is_some() && captures.is_some() {
        return Err("pcre capture variables given twice".into());
    }
    let captures = captures.or(inner_captures);
    let pattern = &body[..close];
    if pattern.is_empty() {
        return Err("pcre regex is empty".into());
    }
    let mut flags = PcreFlags::default();
    let mut buffer: Option<Buffer> = None;
    for f in flag_text.chars() {
        let buf_name = match f {
            'i' => {
                flags.caseless = true;
                None
            }
            's' => {
                flags.dotall = true;
                None
            }
            'm' => {
                flags.multiline = true;
                None
            }
            'x' => {
                flags.extended = true;
                None
            }
            'A' => {
                flags.anchored = true;
                None
            }
            'E' => {
                flags.dollar_endonly = true;
                None
            }
            'G' => {
                flags.ungreedy = true;
                None
            }
            'R' => {
                flags.relative = true;
                None
            }
            'B' => {
                flags.rawbytes = true;
                None
            }
            'O' => {
                flags.no_match_limit = true;
                None
            }
            'U' => Some("http.uri"),
            'I' => Some("http.uri.raw"),
            'P' => Some("http.request_body"),
            'Q' => Some("http.response_body"),
            'H' => Some("http.header"),
            'D' => Some("http.header.raw"),
            'M' => Some("http.method"),
            'C' => Some("http.cookie"),
            'S' => Some("http.stat_code"),
            'Y' => Some("http.stat_msg"),
            'V' => Some("http.user_agent"),
            'W' => Some("http.host"),
            'Z' => Some("http.host.raw"),
            other => return Err(format!("unknown pcre modifier '{other}'")),
        };
        if let Some(name) = buf_name {
            if buffer.is_some() {
                return Err("pcre has more than one buffer modifier".into());
            }
            buffer = super::buffers::buffer_by_name(name);
        }
    }
    Ok(Pcre {
        pattern: pattern.to_string(),
        negated,
        flags,
        buffer,
        captures,
    })
}

fn parse_isdataat(value: &str) -> Result<Isdataat, String> {
    let mut parts = value.split(',').map(str::trim);
    let (negated, first) = strip_bang(parts.next().unwrap_or(""));
    let offset = parse_num_or_var(first, "isdataat")?;
    let mut r = Isdataat {
        negated,
        offset,
        relative: false,
        rawbytes: false,
    };
    for p in parts {
        match p {
            "relative" => r.relative = true,
            "rawbytes" => r.rawbytes = true,
            other => return Err(format!("invalid isdataat option '{other}'")),
        }
    }
    Ok(r)
}

/// Number of bytes to read. In string mode Suricata accepts 0 (ET Open uses `byte_test:0,...,string,dec`),
/// which the engine reads as "as many digits as are there, up to the maximum".
fn parse_nbytes(v: &str, kw: &str, max: u8) -> Result<u8, String> {
    let n = parse_u32(v, kw)?;
    let min = if max > 8 { 0 } else { 1 };
    if n < min || n > u32::from(max) {
        return Err(format!(
            "{kw}: number of bytes {n} out of range {min}-{max}"
        ));
    }
    Ok(n as u8)
}

/// Like [`parse_nbytes`], but a byte_extract variable name is also accepted.
fn parse_nbytes_or_var(v: &str, kw: &str, max: u8) -> Result<NumOrVar, String> {
    let v = v.trim();
    if is_var_name(v) {
        return Ok(NumOrVar::Var(v.to_string()));
    }
    Ok(NumOrVar::Num(i64::from(parse_nbytes(v, kw, max)?)))
}

fn parse_base(v: &str) -> Option<NumBase> {
    Some(match v {
        "hex" => NumBase::Hex,
        "dec" => NumBase::Dec,
        "oct" => NumBase::Oct,
        _ => return None,
    })
}

/// Options shared by byte_test/byte_jump/byte_extract: `relative`, endianness, `string[,base]`
/// (also the separate `string, hex` spelling), `dce`, `bitmask N`.
#[derive(Default)]
struct ByteCommon {
    relative: bool,
    endian: Option<Endian>,
    string: Option<NumBase>,
    bitmask: Option<u32>,
}

impl ByteCommon {
    /// Returns Ok(true) when the item was one of the common options.
    fn take(&mut self, item: &str, kw: &str) -> Result<bool, String> {
        let set_endian = |slot: &mut Option<Endian>, e: Endian| -> Result<bool, String> {
            if slot.is_some() {
                return Err(format!("{kw}: endianness given twice"));
            }
            *slot = Some(e);
            Ok(true)
        };
        match item {
            "relative" => self.relative = true,
            "big" => return set_endian(&mut self.endian, Endian::Big),
            "little" => return set_endian(&mut self.endian, Endian::Little),
            "dce" => return set_endian(&mut self.endian, Endian::Dce),
            "string" => {
                if self.string.is_none() {
                    self.string = Some(NumBase::Dec);
                }
            }
            "hex" | "dec" | "oct" => {
                let base = parse_base(item).ok_or_else(|| format!("{kw}: bad base"))?;
                self.string = Some(base);
            }
            _ => {
                if let Some(mask) = item.strip_prefix("bitmask") {
                    let m = parse_u64_any_base(mask)
                        .filter(|m| *m <= u64::from(u32::MAX) && *m != 0)
                        .ok_or_else(|| format!("{kw}: invalid bitmask '{}'", mask.trim()))?;
                    self.bitmask = Some(m as u32);
                } else if let Some(rest) = item.strip_prefix("string") {
                    let base = parse_base(rest.trim())
                        .ok_or_else(|| format!("{kw}: invalid string base '{}'", rest.trim()))?;
                    self.string = Some(base);
                } else {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn max_bytes(&self) -> u8 {
        // ASCII numbers can be longer than binary ones.
        if self.string.is_some() {
            23
        } else {
            8
        }
    }
}

fn parse_byte_test(value: &str) -> Result<ByteTest, String> {
    const KW: &str = "byte_test";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 4 {
        return Err("byte_test needs bytes, operator, value, offset".into());
    }
    let (negated, op_text) = strip_bang(parts[1]);
    let op = match op_text {
        "<" => ByteTestOp::Lt,
        ">" => ByteTestOp::Gt,
        "=" => ByteTestOp::Eq,
        "<=" => ByteTestOp::Le,
        ">=" => ByteTestOp::Ge,
        "&" => ByteTestOp::And,
        "^" => ByteTestOp::Xor,
        // `!` alone is "not equal".
        "" if negated => ByteTestOp::Eq,
        other => return Err(format!("byte_test: invalid operator '{other}'")),
    };
    let value = parse_num_or_var(parts[2], KW)?;
    let offset = parse_num_or_var(parts[3], KW)?;
    let mut common = ByteCommon::default();
    for item in &parts[4..] {
        if !common.take(item, KW)? {
            return Err(format!("byte_test: unknown option '{item}'"));
        }
    }
    let bytes = parse_nbytes_or_var(parts[0], KW, common.max_bytes())?;
    Ok(ByteTest {
        bytes,
        negated,
        op,
        value,
        offset,
        relative: common.relative,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        bitmask: common.bitmask,
    })
}

fn parse_byte_jump(value: &str) -> Result<ByteJump, String> {
    const KW: &str = "byte_jump";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 2 {
        return Err("byte_jump needs bytes, offset".into());
    }
    let offset = parse_num_or_var(parts[1], KW)?;
    let mut common = ByteCommon::default();
    let mut jump = ByteJump {
        bytes: NumOrVar::Num(0),
        offset,
        relative: false,
        multiplier: None,
        endian: Endian::Big,
        string: None,
        align: false,
        from_beginning: false,
        from_end: false,
        post_offset: None,
        bitmask: None,
    };
    for item in &parts[2..] {
        if common.take(item, KW)? {
            continue;
        }
        match *item {
            "align" => jump.align = true,
            "from_beginning" => jump.from_beginning = true,
            "from_end" => jump.from_end = true,
            _ => {
                if let Some(m) = item.strip_prefix("multiplier") {
                    jump.multiplier = Some(parse_u32(m, "byte_jump multiplier")?);
                } else if let Some(p) = item.strip_prefix("post_offset") {
                    let p = p.trim();
                    jump.post_offset = Some(
                        p.parse::<i64>()
                            .map_err(|_| format!("byte_jump: invalid post_offset '{p}'"))?,
                    );
                } else {
                    return Err(format!("byte_jump: unknown option '{item}'"));
                }
            }
        }
    }
    if jump.from_beginning && jump.from_end {
        return Err("byte_jump: from_beginning and from_end are exclusive".into());
    }
    jump.bytes = parse_nbytes_or_var(parts[0], KW, common.max_bytes())?;
    jump.relative = common.relative;
    jump.endian = common.endian.unwrap_or(Endian::Big);
    jump.string = common.string;
    jump.bitmask = common.bitmask;
    Ok(jump)
}

fn parse_i64(v: &str, kw: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| format!("{kw}: invalid number '{}'", v.trim()))
}

fn parse_byte_extract(value: &str) -> Result<ByteExtract, String> {
    const KW: &str = "byte_extract";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 3 {
        return Err("byte_extract needs bytes, offset, name".into());
    }
    let offset = parse_i64(parts[1], KW)?;
    let name = parts[2];
    if !is_var_name(name) {
        return Err(format!("byte_extract: invalid variable name '{name}'"));
    }
    let mut common = ByteCommon::default();
    let mut multiplier = None;
    let mut align = None;
    for item in &parts[3..] {
        if common.take(item, KW)? {
            continue;
        }
        if let Some(m) = item.strip_prefix("multiplier") {
            multiplier = Some(parse_u32(m, "byte_extract multiplier")?);
        } else if let Some(a) = item.strip_prefix("align") {
            let a = parse_u32(a, "byte_extract align")?;
            if a != 2 && a != 4 {
                return Err("byte_extract: align must be 2 or 4".into());
            }
            align = Some(a as u8);
        } else {
            return Err(format!("byte_extract: unknown option '{item}'"));
        }
    }
    Ok(ByteExtract {
        bytes: parse_nbytes(parts[0], KW, common.max_bytes())?,
        offset,
        name: name.to_string(),
        relative: common.relative,
        multiplier,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        align,
        bitmask: common.bitmask,
    })
}

/// `byte_math: bytes N, offset N, oper +, rvalue N|var, result name[, relative][, endian big]...`
fn parse_byte_math(value: &str) -> Result<ByteMath, String> {
    const KW: &str = "byte_math";
    let mut bytes = None;
    let mut offset = None;
    let mut op = None;
    let mut rvalue = None;
    let mut result = None;
    let mut common = ByteCommon::default();
    for item in value.split(',').map(str::trim) {
        let (key, arg) = match item.split_once(char::is_whitespace) {
            Some((k, a)) => (k, a.trim()),
            None => (item, ""),
        };
        match key {
            "bytes" => bytes = Some(arg),
            "offset" => offset = Some(parse_i64(arg, KW)?),
            "oper" => {
                op = Some(match arg {
                    "+" => ByteMathOp::Add,
                    "-" => ByteMathOp::Sub,
                    "*" => ByteMathOp::Mul,
                    "/" => ByteMathOp::Div,
                    "<<" => ByteMathOp::Shl,
                    ">>" => ByteMathOp::Shr,
                    other => return Err(format!("byte_math: invalid oper '{other}'")),
                })
            }
            "rvalue" => rvalue = Some(parse_num_or_var(arg, KW)?),
            "result" => {
                if !is_var_name(arg) {
                    return Err(format!("byte_math: invalid result name '{arg}'"));
                }
                result = Some(arg.to_string())
            }
            "endian" => {
                if !common.take(arg, KW)? || !matches!(arg, "big" | "little" | "dce") {
                    return Err(format!("byte_math: invalid endian '{arg}'"));
                }
            }
            "string" => {
                let base = parse_base(arg)
                    .ok_or_else(|| format!("byte_math: invalid string base '{arg}'"))?;
                common.string = Some(base);
            }
            _ => {
                if !common.take(item, KW)? {
                    return Err(format!("byte_math: unknown option '{item}'"));
                }
            }
        }
    }
    let bytes = parse_nbytes_or_var(
        bytes.ok_or("byte_math: missing bytes")?,
        KW,
        common.max_bytes(),
    )?;
    let op = op.ok_or("byte_math: missing oper")?;
    let rvalue = rvalue.ok_or("byte_math: missing rvalue")?;
    if op == ByteMathOp::Div && rvalue == NumOrVar::Num(0) {
        return Err("byte_math: division by zero".into());
    }
    Ok(ByteMath {
        bytes,
        offset: offset.ok_or("byte_math: missing offset")?,
        op,
        rvalue,
        result: result.ok_or("byte_math: missing result")?,
        relative: common.relative,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        bitmask: common.bitmask,
    })
}

fn parse_base64_decode(value: Option<&str>) -> Result<Base64Decode, String> {
    let mut d = Base64Decode::default();
    let Some(value) = value else { return Ok(d) };
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, arg) = item
            .split_once(char::is_whitespace)
            .map(|(k, a)| (k, a.trim()))
            .unwrap_or((item, ""));
        match key {
            "bytes" => d.bytes = Some(parse_u32(arg, "base64_decode bytes")?),
            "offset" => d.offset = Some(parse_u32(arg, "base64_decode offset")?),
            "relative" => d.relative = true,
            _ => return Err(format!("base64_decode: unknown option '{item}'")),
        }
    }
    Ok(d)
}

fn parse_flow(value: &str) -> Result<Flow, String> {
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
            other => return Err(format!("invalid flow option '{other}'")),
        };
        *slot = true;
    }
    if f.to_server && f.to_client {
        return Err("flow: to_server and to_client are exclusive".into());
    }
    if [f.established, f.not_established, f.stateless]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        return Err("flow: established, not_established and stateless are exclusive".into());
    }
    if f.only_stream && f.no_stream || f.only_frag && f.no_frag {
        return Err("flow: contradictory stream/frag options".into());
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
fn parse_flags(value: &str) -> Result<TcpFlags, String> {
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
                return Err(format!("flags: more than one modifier in '{flag_text}'"));
            }
            continue;
        }
        let bit = tcp_flag_bit(c).ok_or_else(|| format!("flags: invalid flag '{c}'"))?;
        flags |= bit;
        saw_flag = true;
    }
    if !saw_flag {
        return Err(format!("flags: no flags in '{value}'"));
    }
    let mut ignore = 0u8;
    if let Some(mask) = mask_text {
        for c in mask.chars().filter(|c| !c.is_whitespace()) {
            ignore |= tcp_flag_bit(c)
                .filter(|b| *b != 0)
                .ok_or_else(|| format!("flags: invalid mask flag '{c}'"))?;
        }
    }
    Ok(TcpFlags {
        mode: mode.unwrap_or(FlagsMode::Exact),
        flags,
        ignore,
    })
}

fn parse_fragbits(value: &str) -> Result<Fragbits, String> {
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
                    return Err("fragbits: more than one modifier".into());
                }
            }
            'M' | 'm' => bits |= frag_bit::MORE_FRAGMENTS,
            'D' | 'd' => bits |= frag_bit::DONT_FRAGMENT,
            'R' | 'r' => bits |= frag_bit::RESERVED,
            other => return Err(format!("fragbits: invalid bit '{other}'")),
        }
    }
    if bits == 0 {
        return Err("fragbits: no bits given".into());
    }
    Ok(Fragbits {
        mode: mode.unwrap_or(FlagsMode::Exact),
        bits,
    })
}

fn parse_ipopts(value: &str) -> Result<IpOption, String> {
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
        other => return Err(format!("invalid ipopts '{other}'")),
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

fn parse_ip_proto(value: &str) -> Result<UintCmp<u8>, String> {
    let v = value.trim();
    let (prefix, name) = match v.chars().next() {
        Some(c @ ('!' | '<' | '>')) => (Some(c), v[1..].trim()),
        _ => (None, v),
    };
    let n = match name.parse::<u8>() {
        Ok(n) => n,
        Err(_) => ip_proto_number(name).ok_or_else(|| format!("invalid ip_proto '{v}'"))?,
    };
    Ok(match prefix {
        None => UintCmp::Eq(n),
        Some('!') => UintCmp::Ne(n),
        Some('<') => UintCmp::Lt(n),
        _ => UintCmp::Gt(n),
    })
}

fn parse_stream_size(value: &str) -> Result<RuleOption, String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err("stream_size needs side, operator, value".into());
    }
    let side = match parts[0] {
        "server" => StreamSide::Server,
        "client" => StreamSide::Client,
        "both" => StreamSide::Both,
        "either" => StreamSide::Either,
        other => return Err(format!("stream_size: invalid side '{other}'")),
    };
    let n = parse_u32(parts[2], "stream_size")?;
    let cmp = match parts[1] {
        "<" => UintCmp::Lt(n),
        "<=" => UintCmp::Le(n),
        ">" => UintCmp::Gt(n),
        ">=" => UintCmp::Ge(n),
        "=" => UintCmp::Eq(n),
        "!=" => UintCmp::Ne(n),
        other => return Err(format!("stream_size: invalid operator '{other}'")),
    };
    Ok(RuleOption::StreamSize { side, cmp })
}

fn bits_cmd(text: &str) -> Option<FlowbitsCmd> {
    Some(match text {
        "set" => FlowbitsCmd::Set,
        "unset" => FlowbitsCmd::Unset,
        "toggle" => FlowbitsCmd::Toggle,
        "isset" => FlowbitsCmd::IsSet,
        "isnotset" => FlowbitsCmd::IsNotSet,
        "noalert" => FlowbitsCmd::NoAlert,
        _ => None?,
    })
}

fn is_bit_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|c| c.is_ascii_graphic() && !matches!(c, b',' | b'|' | b'&' | b';' | b'"'))
}

fn parse_flowbits(value: &str) -> Result<Flowbits, String> {
    let (cmd_text, names_text) = match value.split_once(',') {
        Some((c, n)) => (c.trim(), Some(n.trim())),
        None => (value.trim(), None),
    };
    let cmd =
        bits_cmd(cmd_text).ok_or_else(|| format!("flowbits: invalid command '{cmd_text}'"))?;
    let Some(names_text) = names_text else {
        if cmd == FlowbitsCmd::NoAlert {
            return Ok(Flowbits {
                cmd,
                names: Vec::new(),
                group: BitsGroup::Single,
            });
        }
        return Err(format!("flowbits: '{cmd_text}' needs a name"));
    };
    if cmd == FlowbitsCmd::NoAlert {
        return Err("flowbits: noalert takes no name".into());
    }
    let (group, sep) = if names_text.contains('|') {
        (BitsGroup::Any, '|')
    } else if names_text.contains('&') {
        (BitsGroup::All, '&')
    } else {
        (BitsGroup::Single, ',')
    };
    if names_text.contains('|') && names_text.contains('&') {
        return Err("flowbits: cannot mix '|' and '&'".into());
    }
    if group == BitsGroup::Any && !matches!(cmd, FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet) {
        return Err("flowbits: '|' groups only work with isset/isnotset".into());
    }
    let names: Vec<String> = if group == BitsGroup::Single {
        vec![names_text.to_string()]
    } else {
        names_text
            .split(sep)
            .map(|n| n.trim().to_string())
            .collect()
    };
    if let Some(bad) = names.iter().find(|n| !is_bit_name(n)) {
        return Err(format!("flowbits: invalid name '{bad}'"));
    }
    Ok(Flowbits { cmd, names, group })
}

fn parse_flowint(value: &str) -> Result<Flowint, String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err("flowint needs name, operator[, value]".into());
    }
    let name = parts[0];
    if !is_bit_name(name) {
        return Err(format!("flowint: invalid name '{name}'"));
    }
    let op = match parts[1] {
        "=" => FlowintOp::Set,
        "+" => FlowintOp::Add,
        "-" => FlowintOp::Sub,
        "==" => FlowintOp::Eq,
        "!=" => FlowintOp::Ne,
        "<" => FlowintOp::Lt,
        "<=" => FlowintOp::Le,
        ">" => FlowintOp::Gt,
        ">=" => FlowintOp::Ge,
        "isset" => FlowintOp::IsSet,
        "notset" | "isnotset" => FlowintOp::NotSet,
        other => return Err(format!("flowint: invalid operator '{other}'")),
    };
    let needs_value = !matches!(op, FlowintOp::IsSet | FlowintOp::NotSet);
    let value = match (needs_value, parts.get(2)) {
        (true, Some(v)) => Some(parse_num_or_var(v, "flowint")?),
        (true, None) => return Err(format!("flowint: operator '{}' needs a value", parts[1])),
        (false, None) => None,
        (false, Some(_)) => return Err("flowint: isset/notset take no value".into()),
    };
    Ok(Flowint {
        name: name.to_string(),
        op,
        value,
    })
}

fn parse_xbits(value: &str) -> Result<Xbits, String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let cmd = bits_cmd(parts[0]).ok_or_else(|| format!("xbits: invalid command '{}'", parts[0]))?;
    if cmd == FlowbitsCmd::NoAlert {
        return Ok(Xbits {
            cmd,
            name: String::new(),
            track: None,
            expire: None,
        });
    }
    let name = parts.get(1).ok_or("xbits: missing name")?;
    if !is_bit_name(name) {
        return Err(format!("xbits: invalid name '{name}'"));
    }
    let mut track = None;
    let mut expire = None;
    for item in &parts[2..] {
        let (key, arg) = item
            .split_once(char::is_whitespace)
            .map(|(k, a)| (k, a.trim()))
            .unwrap_or((item, ""));
        match key {
            "track" => {
                track = Some(match arg {
                    "ip_src" => XbitsTrack::IpSrc,
                    "ip_dst" => XbitsTrack::IpDst,
                    "ip_pair" => XbitsTrack::IpPair,
                    "tx" => XbitsTrack::Tx,
                    other => return Err(format!("xbits: invalid track '{other}'")),
                })
            }
            "expire" => {
                let e = parse_u32(arg, "xbits expire")?;
                if e == 0 {
                    return Err("xbits: expire must be positive".into());
                }
                expire = Some(e)
            }
            _ => return Err(format!("xbits: unknown option '{item}'")),
        }
    }
    if track.is_none() {
        return Err("xbits: missing track".into());
    }
    Ok(Xbits {
        cmd,
        name: name.to_string(),
        track,
        expire,
    })
}

/// Parses `type X, track Y, count N, seconds N[, multiplier N]` in any order.
/// `with_type` is false for detection_filter, which has no type but may have `unique_on`.
pub(crate) fn parse_threshold_fields(
    value: &str,
    with_type: bool,
) -> Result<(Threshold, Option<UniqueOn>), String> {
    let mut unique_on = None;
    let mut kind = None;
    let mut track = None;
    let mut count = None;
    let mut seconds = None;
    let mut multiplier = None;
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, arg) = item
            .split_once(char::is_whitespace)
            .map(|(k, a)| (k, a.trim()))
            .ok_or_else(|| format!("threshold: '{item}' needs a value"))?;
        match key {
            "type" if with_type => {
                kind = Some(match arg {
                    "limit" => ThresholdType::Limit,
                    "threshold" => ThresholdType::Threshold,
                    "both" => ThresholdType::Both,
                    "backoff" => ThresholdType::Backoff,
                    other => return Err(format!("threshold: invalid type '{other}'")),
                })
            }
            "track" => {
                track = Some(
                    Track::parse(arg).ok_or_else(|| format!("threshold: invalid track '{arg}'"))?,
                )
            }
            "count" => count = Some(parse_u32(arg, "threshold count")?),
            "seconds" => seconds = Some(parse_u32(arg, "threshold seconds")?),
            "multiplier" => multiplier = Some(parse_u32(arg, "threshold multiplier")?),
            "unique_on" if !with_type => {
                unique_on = Some(match arg {
                    "src_port" => UniqueOn::SrcPort,
                    "dst_port" => UniqueOn::DstPort,
                    other => return Err(format!("detection_filter: invalid unique_on '{other}'")),
                })
            }
            _ => return Err(format!("threshold: unknown option '{item}'")),
        }
    }
    let kind = if with_type {
        kind.ok_or("threshold: missing type")?
    } else {
        ThresholdType::Threshold
    };
    let track = track.ok_or("threshold: missing track")?;
    let count = count.ok_or("threshold: missing count")?;
    let seconds = if kind == ThresholdType::Backoff {
        if multiplier.is_none() {
            return Err("threshold: backoff needs multiplier".into());
        }
        seconds.unwrap_or(0)
    } else {
        seconds.ok_or("threshold: missing seconds")?
    };
    if track == Track::ByEither {
        return Err("threshold: track by_either is only valid for suppress".into());
    }
    Ok((
        Threshold {
            kind,
            track,
            count,
            seconds,
            multiplier,
        },
        unique_on,
    ))
}

fn parse_threshold(value: &str) -> Result<Threshold, String> {
    parse_threshold_fields(value, true).map(|(t, _)| t)
}
