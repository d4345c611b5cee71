//! Rule -> [`CompiledRule`]: resolves variables, splits keywords into header, packet,
//! payload-program and state parts, and picks the fast pattern.

use std::collections::HashMap;
use std::sync::Arc;

use crate::detect::rule::options::{
    DetectionFilter, Endian, FastPattern, Flow, FlowbitsCmd, FlowintOp, NumBase, Threshold, Track,
    UintCmp, XbitsTrack,
};
use crate::detect::rule::{
    Action, AppNumber, Buffer, ClassificationTable, Direction, NumOrVar, Protocol, Rule, RuleOption,
};
use crate::detect::rule::{AddressSet, PortSet};
use super::headers::{HeaderBuffer, HeaderCheck, HeaderRule};
use super::program::{ByteRead, ContentOp, Needle, PayloadOp, PcreOp, Program, Val, MAX_VARS};
use super::transform::TransformStep;
use crate::detect::rule::Transform;

/// Transforms one buffer may chain (Suricata's DETECT_TRANSFORMS_MAX).
const MAX_TRANSFORMS: usize = 16;
/// `base64_decode` without `bytes` decodes at most this much (Suricata's BASE64_DECODE_MAX).
pub(crate) const BASE64_DECODE_MAX: u32 = 65535;

/// Payload keywords collected for one (buffer, transform chain) while compiling a rule.
struct ListBuild {
    /// `None`: pkt_data.
    buffer: Option<Buffer>,
    transforms: Vec<Transform>,
    ops: Vec<PayloadOp>,
}

fn list_index(lists: &mut Vec<ListBuild>, buffer: Option<Buffer>, transforms: &[Transform]) -> usize {
    if let Some(i) = lists.iter().position(|l| same_buffer(l.buffer, buffer) && l.transforms == transforms) {
        return i;
    }
    lists.push(ListBuild { buffer, transforms: transforms.to_vec(), ops: Vec::new() });
    lists.len() - 1
}

fn cmp_to_u64(c: UintCmp<u32>) -> UintCmp<u64> {
    match c {
        UintCmp::Eq(v) => UintCmp::Eq(v.into()),
        UintCmp::Ne(v) => UintCmp::Ne(v.into()),
        UintCmp::Lt(v) => UintCmp::Lt(v.into()),
        UintCmp::Le(v) => UintCmp::Le(v.into()),
        UintCmp::Gt(v) => UintCmp::Gt(v.into()),
        UintCmp::Ge(v) => UintCmp::Ge(v.into()),
        UintCmp::Range(a, b) => UintCmp::Range(a.into(), b.into()),
        UintCmp::NotRange(a, b) => UintCmp::NotRange(a.into(), b.into()),
    }
}


/// Keywords evaluated on the packet headers and flow, before any payload.
pub(crate) enum PacketCheck {
    Flags(crate::detect::rule::options::TcpFlags),
    Window { negated: bool, size: u16 },
    Seq(u32),
    Ack(u32),
    Ttl(crate::detect::rule::UintCmp<u8>),
    Tos { negated: bool, tos: u8 },
    Ipopts(crate::detect::rule::options::IpOption),
    Fragbits(crate::detect::rule::options::Fragbits),
    Fragoffset(crate::detect::rule::UintCmp<u16>),
    IpId(u16),
    IpProto(crate::detect::rule::UintCmp<u8>),
    Itype(crate::detect::rule::UintCmp<u8>),
    Icode(crate::detect::rule::UintCmp<u8>),
    IcmpId(u16),
    IcmpSeq(u16),
    Dsize(crate::detect::rule::UintCmp<u16>),
    StreamSize { side: crate::detect::rule::options::StreamSide, cmp: crate::detect::rule::UintCmp<u32> },
    AppProto { negated: bool, name: &'static str },
    FlowCount(crate::detect::rule::options::FlowCount),
}

/// Conditions on per-flow / per-host state.
pub(crate) enum StateCheck {
    FlowbitsAny { ids: Vec<u32>, want_set: bool },
    FlowbitsAll { ids: Vec<u32>, want_set: bool },
    Flowint { id: u32, op: FlowintOp, value: Option<FlowintValue> },
    /// `flowint:name,+,1` and friends: modify in rule order, like Suricata's match list.
    FlowintModify { id: u32, op: FlowintOp, value: Option<FlowintValue> },
    Xbit { id: u32, track: XbitsTrack, want_set: bool },
}

#[derive(Clone, Copy)]
pub(crate) enum FlowintValue {
    Num(u32),
    /// Another flowint's value.
    Flowint(u32),
}

/// State changes applied when the rule matches.
pub(crate) enum StateAction {
    Flowbit { id: u32, cmd: FlowbitsCmd },
    Xbit { id: u32, cmd: FlowbitsCmd, track: XbitsTrack, expire_secs: u32 },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ProtoMatch {
    Any,
    Ipv4,
    Ipv6,
    Tcp,
    Udp,
    Icmp,
    Icmpv4,
    Icmpv6,
    Sctp,
    /// TCP or UDP (app-layer protocols that run on both, e.g. dns).
    TcpOrUdp,
}

/// Threshold-like limits on alerting.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AlertLimit {
    Threshold(Threshold),
    DetectionFilter(DetectionFilter),
}

impl AlertLimit {
    /// Tracked per flow (kept by the worker that owns the flow) rather than per host/rule.
    pub(crate) fn tracks_flow(&self) -> bool {
        let track = match self {
            AlertLimit::Threshold(t) => t.track,
            AlertLimit::DetectionFilter(d) => d.track,
        };
        track == Track::ByFlow
    }
}

pub(crate) struct Suppression {
    pub track: Option<Track>,
    pub ip: Option<AddressSet>,
}

/// Signature class used for Suricata's internal ordering of flowbits users.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum BitsUse {
    Set = 0,
    SetRead = 1,
    Read = 2,
    None = 3,
}

pub(crate) struct CompiledRule {
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: Arc<str>,
    pub category: Arc<str>,
    pub severity: u8,
    pub action: Action,
    pub noalert: bool,
    pub proto: ProtoMatch,
    pub src: AddressSet,
    pub dst: AddressSet,
    pub src_ports: PortSet,
    pub dst_ports: PortSet,
    pub src_any: bool,
    pub dst_any: bool,
    pub ports_any: bool,
    pub bidirectional: bool,
    /// `=>`: the rule's buffers may come from both directions of one transaction; it is
    /// checked on to-client packets, whose source is the rule's destination.
    pub transactional: bool,
    pub flow: Option<Flow>,
    pub packet_checks: Vec<PacketCheck>,
    /// `pkt_data` keywords (packet payload or stream).
    pub payload: Option<Program>,
    /// Keywords on application-layer buffers; inspected only through a [`super::BufferSource`].
    pub app_buffers: Vec<AppBufferInspection>,
    /// Numeric app-layer keywords (`dns.opcode`, `tls.version`, ...), read through the
    /// [`super::BufferSource`] too.
    pub app_numbers: Vec<(AppNumber, UintCmp<u64>)>,
    /// Set when the rule uses something the engine cannot evaluate yet; it then never matches.
    pub never_matches: Option<&'static str>,
    pub require_packet: bool,
    pub stream_only: bool,
    pub state_checks: Vec<StateCheck>,
    pub state_actions: Vec<StateAction>,
    pub limit: Option<AlertLimit>,
    pub suppressions: Vec<Suppression>,
    pub ip_only: bool,
    /// Header buffers and packet checks of `headers.rs` (tcp.hdr, tcp.mss, vlan.id, ...).
    pub header: HeaderRule,
    pub bits_use: BitsUse,
    pub priority: u8,
    /// Fast pattern for the prefilter: (bytes, nocase).
    pub fast_pattern: Option<(Vec<u8>, bool)>,
    /// Fast pattern of an app-layer rule: (buffer, bytes, nocase); scanned in that buffer.
    pub app_fast_pattern: Option<AppFastPattern>,
    pub rule_log: Arc<RuleLog>,
}

/// The keywords of one app-layer buffer in a rule: the buffer, the transforms applied to it
/// first (in rule order), and the payload program run on the result. The same buffer with
/// another transform chain is another inspection (`http.uri; content:"a"; http.uri;
/// url_decode; content:"b";` has two).
pub struct AppBufferInspection {
    pub buffer: Buffer,
    pub transforms: Vec<TransformStep>,
    pub program: Program,
}

impl AppBufferInspection {
    /// The program runs on transformed data: a prefilter must search the transformed buffer
    /// (or leave the rule out), not the raw one.
    pub fn is_transformed(&self) -> bool {
        !self.transforms.is_empty()
    }
}

impl CompiledRule {
    /// The rule reads app-layer transaction data (buffers or numeric keywords), so it is
    /// checked only when a [`super::BufferSource`] is given and alerts once per transaction.
    pub fn inspects_app_layer(&self) -> bool {
        !self.app_buffers.is_empty() || !self.app_numbers.is_empty()
    }
}

/// A rule's `metadata:` pairs and its text, for eve's `alert.metadata` and `alert.rule`.
#[derive(Debug, Default)]
pub struct RuleLog {
    /// (key, value) in rule order; a key may repeat.
    pub metadata: Vec<(String, String)>,
    /// The rule as written.
    pub text: String,
}

/// Interned names of flowbits, flowints and xbits.
#[derive(Default)]
pub(crate) struct Names {
    pub flowbits: HashMap<String, u32>,
    pub flowints: HashMap<String, u32>,
    pub xbits: HashMap<String, u32>,
}

fn intern(map: &mut HashMap<String, u32>, name: &str) -> u32 {
    let next = map.len() as u32;
    *map.entry(name.to_string()).or_insert(next)
}

/// Suricata's pattern "strength": distinct letters score low, distinct other printable
/// bytes higher, distinct binary bytes highest, repeats one point each.
pub(crate) fn pattern_strength(pattern: &[u8]) -> u32 {
    let mut seen = [false; 256];
    let mut score = 0;
    for &b in pattern {
        if seen[b as usize] {
            score += 1;
            continue;
        }
        seen[b as usize] = true;
        score += if b.is_ascii_alphabetic() {
            3
        } else if (0x20..0x7f).contains(&b) || b == 0x00 || b == 0x01 || b == 0xff {
            4
        } else {
            6
        };
    }
    score
}

struct VarTable {
    names: Vec<String>,
}

impl VarTable {
    fn define(&mut self, name: &str) -> Result<u8, String> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(i as u8);
        }
        if self.names.len() >= MAX_VARS {
            return Err(format!("more than {MAX_VARS} byte_extract/byte_math variables"));
        }
        self.names.push(name.to_string());
        Ok((self.names.len() - 1) as u8)
    }

    fn val(&self, v: &NumOrVar) -> Result<Val, String> {
        match v {
            NumOrVar::Num(n) => Ok(Val::Num(*n)),
            NumOrVar::Var(name) => self
                .names
                .iter()
                .position(|n| n == name)
                .map(|i| Val::Var(i as u8))
                .ok_or_else(|| format!("unknown variable '{name}'")),
        }
    }
}

fn proto_match(p: Protocol) -> Result<ProtoMatch, String> {
    Ok(match p {
        Protocol::Ip | Protocol::PktHdr => ProtoMatch::Any,
        Protocol::Ipv4 => ProtoMatch::Ipv4,
        Protocol::Ipv6 => ProtoMatch::Ipv6,
        Protocol::Tcp | Protocol::TcpPkt | Protocol::TcpStream => ProtoMatch::Tcp,
        Protocol::Udp => ProtoMatch::Udp,
        Protocol::Icmp => ProtoMatch::Icmp,
        Protocol::Icmpv4 => ProtoMatch::Icmpv4,
        Protocol::Icmpv6 => ProtoMatch::Icmpv6,
        Protocol::Sctp => ProtoMatch::Sctp,
        // Application protocols map to their transport until app-layer detection exists.
        Protocol::App(name) => match name {
            "dns" => ProtoMatch::TcpOrUdp,
            "ntp" | "tftp" | "ikev2" | "ike" | "dhcp" | "snmp" | "sip" | "quic" | "bittorrent-dht" => {
                ProtoMatch::Udp
            }
            "krb5" => ProtoMatch::TcpOrUdp,
            _ => ProtoMatch::Tcp,
        },
    })
}

fn byte_read(
    vars: &VarTable,
    bytes: Val,
    offset: Val,
    relative: bool,
    endian: Endian,
    string: Option<NumBase>,
    bitmask: Option<u32>,
) -> ByteRead {
    let _ = vars;
    ByteRead {
        bytes,
        offset,
        relative,
        // No DCE/RPC parser: `dce` falls back to little endian, DCE's usual byte order.
        little_endian: matches!(endian, Endian::Little | Endian::Dce),
        string,
        bitmask,
    }
}

fn build_regex(p: &crate::detect::rule::options::Pcre) -> Result<pcre2::bytes::Regex, String> {
    let f = &p.flags;
    let mut pattern = String::new();
    if f.ungreedy {
        pattern.push_str("(?U)");
    }
    if f.anchored {
        // Anchored at the start position of the search (buffer start, or the previous match
        // for relative pcre), which is what PCRE2_ANCHORED does there.
        pattern.push_str("\\G(?:");
        pattern.push_str(&p.pattern);
        if f.extended {
            pattern.push('\n');
        }
        pattern.push(')');
    } else {
        pattern.push_str(&p.pattern);
    }
    let mut builder = pcre2::bytes::RegexBuilder::new();
    builder
        .caseless(f.caseless)
        .dotall(f.dotall)
        .multi_line(f.multiline)
        .extended(f.extended)
        .jit_if_available(true);
    builder.build(&pattern).map_err(|e| format!("pcre: {e}"))
}

/// Compiles one rule. `Err` rejects the rule (reported, not loaded).
pub(crate) fn compile_rule(
    rule: &Rule,
    classes: &ClassificationTable,
    names: &mut Names,
) -> Result<CompiledRule, String> {
    let header = &rule.header;
    let proto = proto_match(header.protocol)?;
    let mut vars = VarTable { names: Vec::new() };
    let mut packet_checks = Vec::new();
    let mut state_checks = Vec::new();
    let mut state_actions = Vec::new();
    let mut flow: Option<Flow> = None;
    let mut limit = None;
    let mut never_matches: Option<&'static str> = None;
    let mut require_packet = matches!(header.protocol, Protocol::TcpPkt);
    let mut stream_only = matches!(header.protocol, Protocol::TcpStream);
    let mut bits_set = false;
    let mut bits_read = false;
    let mut header_kw = HeaderRule::default();
    let mut app_numbers = Vec::new();

    // Payload keywords per (buffer, transform chain); buffer None = pkt_data.
    let mut lists: Vec<ListBuild> = Vec::new();
    let mut sticky: Option<Buffer> = None;
    // Transforms given since the current sticky buffer; keywords after them inspect the
    // transformed data, keywords before them the data as transformed so far.
    let mut chain: Vec<Transform> = Vec::new();
    // List of the last payload keyword (where a `base64_decode` without sticky buffer goes).
    let mut last_list: Option<usize> = None;
    let mut fp_candidates: Vec<FastPatternCandidate> = Vec::new();
    let push_op = |lists: &mut Vec<ListBuild>, last: &mut Option<usize>, buf: Option<Buffer>, chain: &[Transform], op: PayloadOp| {
        let i = list_index(lists, buf, chain);
        lists[i].ops.push(op);
        *last = Some(i);
    };
    // Buffer of the last content/pcre: without a sticky buffer, a relative keyword after
    // `uricontent` or `content; http_uri;` continues in that buffer (as in Suricata).
    let mut last_match_buf: Option<Buffer> = None;
    let relative_buf = |sticky: Option<Buffer>, last: Option<Buffer>, relative: bool| {
        if sticky.is_none() && relative { last } else { sticky }
    };

    for opt in &rule.options {
        match opt {
            RuleOption::Content(c) => {
                let buf = c.legacy_buffer.or(sticky);
                let content_chain: &[Transform] = if c.legacy_buffer.is_some() { &[] } else { &chain };
                last_match_buf = buf;
                let resolve = |v: &Option<NumOrVar>| -> Result<Option<Val>, String> {
                    v.as_ref().map(|v| vars.val(v)).transpose()
                };
                let mut depth = resolve(&c.depth)?;
                let mut offset = resolve(&c.offset)?;
                if c.startswith {
                    depth = Some(Val::Num(c.pattern.len() as i64));
                    offset = Some(Val::Num(0));
                }
                // Suricata counts `depth` from `offset`: the match must end before
                // offset + depth (the payload engine takes depth as an absolute end).
                if let (Some(Val::Num(d)), Some(Val::Num(o))) = (depth, offset) {
                    depth = Some(Val::Num(d.saturating_add(o)));
                }
                let op = ContentOp {
                    needle: Needle::new(&c.pattern, c.nocase),
                    negated: c.negated,
                    depth,
                    offset,
                    distance: resolve(&c.distance)?,
                    within: resolve(&c.within)?,
                    endswith: c.endswith,
                };
                if !c.pattern.is_empty() {
                    let fp_bytes = match c.fast_pattern {
                        Some(FastPattern::Chop { offset, length }) => {
                            let start = (offset as usize).min(c.pattern.len());
                            let end = start.saturating_add(length as usize).min(c.pattern.len());
                            c.pattern[start..end].to_vec()
                        }
                        _ => c.pattern.clone(),
                    };
                    if !fp_bytes.is_empty() {
                        fp_candidates.push(FastPatternCandidate {
                            buffer: buf,
                            bytes: fp_bytes,
                            nocase: c.nocase,
                            explicit: c.fast_pattern.is_some(),
                            negated: c.negated,
                            chain: content_chain.to_vec(),
                        });
                    }
                }
                push_op(&mut lists, &mut last_list, buf, content_chain, PayloadOp::Content(op));
            }
            RuleOption::Pcre(p) => {
                let buf = p.buffer.or(sticky);
                let pcre_chain: &[Transform] = if p.buffer.is_some() { &[] } else { &chain };
                last_match_buf = buf;
                let regex = build_regex(p)?;
                push_op(
                    &mut lists,
                    &mut last_list,
                    buf,
                    pcre_chain,
                    PayloadOp::Pcre(PcreOp { regex, negated: p.negated, relative: p.flags.relative }),
                );
            }
            RuleOption::Isdataat(i) => {
                let op = PayloadOp::Isdataat { negated: i.negated, offset: vars.val(&i.offset)?, relative: i.relative };
                push_op(&mut lists, &mut last_list, relative_buf(sticky, last_match_buf, i.relative), &chain, op);
            }
            RuleOption::ByteTest(b) => {
                let read = byte_read(&vars, vars.val(&b.bytes)?, vars.val(&b.offset)?, b.relative, b.endian, b.string, b.bitmask);
                let op = PayloadOp::ByteTest { read, op: b.op, value: vars.val(&b.value)?, negated: b.negated };
                push_op(&mut lists, &mut last_list, relative_buf(sticky, last_match_buf, b.relative), &chain, op);
            }
            RuleOption::ByteJump(b) => {
                let read = byte_read(&vars, vars.val(&b.bytes)?, vars.val(&b.offset)?, b.relative, b.endian, b.string, b.bitmask);
                let op = PayloadOp::ByteJump {
                    read,
                    multiplier: b.multiplier.unwrap_or(1),
                    align: b.align,
                    from_beginning: b.from_beginning,
                    from_end: b.from_end,
                    post_offset: b.post_offset.unwrap_or(0),
                };
                push_op(&mut lists, &mut last_list, relative_buf(sticky, last_match_buf, b.relative), &chain, op);
            }
            RuleOption::ByteExtract(b) => {
                let var = vars.define(&b.name)?;
                let read = byte_read(&vars, Val::Num(b.bytes as i64), Val::Num(b.offset), b.relative, b.endian, b.string, b.bitmask);
                let op = PayloadOp::ByteExtract { read, multiplier: b.multiplier.unwrap_or(1), align: b.align.unwrap_or(0), var };
                push_op(&mut lists, &mut last_list, relative_buf(sticky, last_match_buf, b.relative), &chain, op);
            }
            RuleOption::ByteMath(b) => {
                let bytes = vars.val(&b.bytes)?;
                let rvalue = vars.val(&b.rvalue)?;
                let var = vars.define(&b.result)?;
                let read = byte_read(&vars, bytes, Val::Num(b.offset), b.relative, b.endian, b.string, b.bitmask);
                push_op(&mut lists, &mut last_list, relative_buf(sticky, last_match_buf, b.relative), &chain, PayloadOp::ByteMath { read, op: b.op, rvalue, var });
            }
            RuleOption::Base64Decode(b) => {
                let op = PayloadOp::Base64Decode {
                    bytes: b.bytes.filter(|&n| n > 0).unwrap_or(BASE64_DECODE_MAX).min(BASE64_DECODE_MAX),
                    offset: b.offset.unwrap_or(0),
                    relative: b.relative,
                    data: None,
                };
                // Without a sticky buffer it joins the list of the keyword before it (Suricata).
                let i = match (sticky, last_list) {
                    (None, Some(i)) => i,
                    _ => list_index(&mut lists, sticky, &chain),
                };
                lists[i].ops.push(op);
                last_list = Some(i);
            }
            RuleOption::Transform(t) => {
                // Suricata accepts transforms on sticky buffers only, not on pkt_data.
                if sticky.is_none() {
                    return Err("transforms need a sticky buffer".into());
                }
                if chain.len() >= MAX_TRANSFORMS {
                    return Err(format!("more than {MAX_TRANSFORMS} transforms on one buffer"));
                }
                chain.push(t.clone());
                // A transformed buffer with no keywords still has to be present.
                list_index(&mut lists, sticky, &chain);
            }
            RuleOption::StickyBuffer { buffer, .. } => {
                sticky = Some(*buffer);
                chain.clear();
                // Keep list order: a sticky buffer with no keywords still needs its buffer.
                list_index(&mut lists, sticky, &[]);
            }
            RuleOption::PktData => {
                sticky = None;
                chain.clear();
            }
            RuleOption::Flow(f) => {
                if f.only_frag || f.no_frag {
                    never_matches.get_or_insert("flow:only_frag/no_frag");
                }
                if f.only_stream {
                    stream_only = true;
                }
                if f.no_stream {
                    require_packet = true;
                }
                flow = Some(*f);
            }
            RuleOption::Flags(f) => packet_checks.push(PacketCheck::Flags(*f)),
            RuleOption::Window { negated, size } => packet_checks.push(PacketCheck::Window { negated: *negated, size: *size }),
            RuleOption::Seq(v) => packet_checks.push(PacketCheck::Seq(*v)),
            RuleOption::Ack(v) => packet_checks.push(PacketCheck::Ack(*v)),
            RuleOption::Ttl(c) => packet_checks.push(PacketCheck::Ttl(*c)),
            RuleOption::Tos { negated, tos } => packet_checks.push(PacketCheck::Tos { negated: *negated, tos: *tos }),
            RuleOption::Ipopts(o) => packet_checks.push(PacketCheck::Ipopts(*o)),
            RuleOption::Fragbits(f) => packet_checks.push(PacketCheck::Fragbits(*f)),
            RuleOption::Fragoffset(c) => packet_checks.push(PacketCheck::Fragoffset(*c)),
            RuleOption::IpId(v) => packet_checks.push(PacketCheck::IpId(*v)),
            RuleOption::IpProto(c) => packet_checks.push(PacketCheck::IpProto(*c)),
            RuleOption::Itype(c) => packet_checks.push(PacketCheck::Itype(*c)),
            RuleOption::Icode(c) => packet_checks.push(PacketCheck::Icode(*c)),
            RuleOption::IcmpId(v) => packet_checks.push(PacketCheck::IcmpId(*v)),
            RuleOption::IcmpSeq(v) => packet_checks.push(PacketCheck::IcmpSeq(*v)),
            RuleOption::Dsize(c) => {
                // Suricata: dsize makes a rule inspect packets, never the stream.
                require_packet = true;
                packet_checks.push(PacketCheck::Dsize(*c));
            }
            RuleOption::StreamSize { side, cmp } => packet_checks.push(PacketCheck::StreamSize { side: *side, cmp: *cmp }),
            RuleOption::FlowCount(c) => packet_checks.push(PacketCheck::FlowCount(*c)),
            RuleOption::AppLayerProtocol { negated, name } => {
                packet_checks.push(PacketCheck::AppProto { negated: *negated, name })
            }
            RuleOption::AppNumber { field, cmp } => app_numbers.push((*field, *cmp)),
            RuleOption::Bsize(cmp) => {
                if sticky.is_none() {
                    return Err("bsize needs a sticky buffer".into());
                }
                push_op(&mut lists, &mut last_list, sticky, &chain, PayloadOp::Bsize(*cmp));
            }
            RuleOption::Urilen { cmp, raw } => {
                let name = if *raw { "http.uri.raw" } else { "http.uri" };
                let uri = crate::detect::rule::buffers::buffer_by_name(name).ok_or("urilen: no uri buffer")?;
                // urilen always measures the untransformed URI; `last_list` stays with the
                // previous keyword.
                let i = list_index(&mut lists, Some(uri), &[]);
                lists[i].ops.push(PayloadOp::Bsize(cmp_to_u64(*cmp)));
            }
            RuleOption::Flowbits(f) => {
                let ids: Vec<u32> = f.names.iter().map(|n| intern(&mut names.flowbits, n)).collect();
                match f.cmd {
                    FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet => {
                        bits_read = true;
                        let want_set = f.cmd == FlowbitsCmd::IsSet;
                        state_checks.push(match f.group {
                            crate::detect::rule::options::BitsGroup::Any => StateCheck::FlowbitsAny { ids, want_set },
                            _ => StateCheck::FlowbitsAll { ids, want_set },
                        });
                    }
                    FlowbitsCmd::NoAlert => {}
                    cmd => {
                        bits_set = true;
                        for id in ids {
                            state_actions.push(StateAction::Flowbit { id, cmd });
                        }
                    }
                }
            }
            RuleOption::Flowint(f) => {
                let id = intern(&mut names.flowints, &f.name);
                let value = match &f.value {
                    None => None,
                    Some(NumOrVar::Num(n)) => Some(FlowintValue::Num(u32::try_from(*n).map_err(|_| "flowint: value out of range")?)),
                    Some(NumOrVar::Var(v)) => Some(FlowintValue::Flowint(intern(&mut names.flowints, v))),
                };
                match f.op {
                    FlowintOp::Set | FlowintOp::Add | FlowintOp::Sub => {
                        state_checks.push(StateCheck::FlowintModify { id, op: f.op, value })
                    }
                    _ => state_checks.push(StateCheck::Flowint { id, op: f.op, value }),
                }
            }
            RuleOption::Xbits(x) => {
                if x.cmd == FlowbitsCmd::NoAlert {
                    continue;
                }
                let track = x.track.ok_or("xbits: missing track")?;
                if track == XbitsTrack::Tx {
                    never_matches.get_or_insert("xbits track tx");
                    continue;
                }
                let id = intern(&mut names.xbits, &x.name);
                match x.cmd {
                    FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet => {
                        state_checks.push(StateCheck::Xbit { id, track, want_set: x.cmd == FlowbitsCmd::IsSet })
                    }
                    cmd => state_actions.push(StateAction::Xbit { id, cmd, track, expire_secs: x.expire.unwrap_or(0) }),
                }
            }
            RuleOption::TcpMss(c) => header_kw.checks.push(HeaderCheck::TcpMss(*c)),
            RuleOption::VlanId(v) => header_kw.checks.push(HeaderCheck::VlanId(*v)),
            RuleOption::VlanLayers(c) => header_kw.checks.push(HeaderCheck::VlanLayers(*c)),
            RuleOption::Checksum { layer, valid } => {
                header_kw.checks.push(HeaderCheck::Checksum { layer: *layer, valid: *valid })
            }
            RuleOption::DecodeEvent(e) => header_kw.checks.push(HeaderCheck::DecodeEvent(*e)),
            // Tagged-packet logging is not implemented: the rule alerts as usual and the
            // packets that follow are not logged as tagged.
            RuleOption::Tag(_) => {}
            RuleOption::Threshold(t) => limit = Some(AlertLimit::Threshold(*t)),
            RuleOption::DetectionFilter(d) => limit = Some(AlertLimit::DetectionFilter(*d)),
            RuleOption::Msg(_)
            | RuleOption::Sid(_)
            | RuleOption::Rev(_)
            | RuleOption::Gid(_)
            | RuleOption::Classtype(_)
            | RuleOption::Priority(_)
            | RuleOption::Reference { .. }
            | RuleOption::Metadata(_)
            | RuleOption::Target(_)
            | RuleOption::Noalert
            | RuleOption::Prefilter => {}
        }
    }

    // base64_data keywords run on what any base64_decode of the rule decoded.
    let is_base64_data = |l: &ListBuild| l.buffer.is_some_and(|b| b.name == "base64_data");
    let base64_data = match lists.iter().position(is_base64_data) {
        Some(i) => {
            let list = lists.remove(i);
            if lists.iter().any(is_base64_data) {
                never_matches.get_or_insert("transform on base64_data");
            }
            if !list.transforms.is_empty() {
                never_matches.get_or_insert("transform on base64_data");
            }
            if list.ops.iter().any(|op| matches!(op, PayloadOp::Base64Decode { .. })) {
                never_matches.get_or_insert("base64_decode inside base64_data");
            }
            Some(Arc::new(Program::new(list.ops)))
        }
        None => None,
    };
    let mut has_base64_decode = false;
    for op in lists.iter_mut().flat_map(|l| l.ops.iter_mut()) {
        if let PayloadOp::Base64Decode { data, .. } = op {
            has_base64_decode = true;
            *data = base64_data.clone();
        }
    }
    if base64_data.is_some() && !has_base64_decode {
        // Suricata needs both keywords; base64_data alone has nothing to inspect.
        never_matches.get_or_insert("base64_data without base64_decode");
    }

    let mut payload = None;
    let mut app_buffers = Vec::new();
    for list in lists {
        let program = Program::new(list.ops);
        match list.buffer {
            None => payload = Some(program),
            Some(b) if HeaderBuffer::from_buffer(b).is_some() => {
                // Header buffers exist on packets only (Suricata: SIG_FLAG_REQUIRE_PACKET).
                require_packet = true;
                if !list.transforms.is_empty() {
                    never_matches.get_or_insert("transform on packet header buffer");
                }
                if let Some(which) = HeaderBuffer::from_buffer(b) {
                    header_kw.buffers.push((which, program));
                }
            }
            Some(b) => {
                let transforms =
                    list.transforms.into_iter().map(TransformStep::new).collect::<Result<Vec<_>, String>>()?;
                app_buffers.push(AppBufferInspection { buffer: b, transforms, program })
            }
        }
    }

    let transactional = header.direction == Direction::Transactional;
    if transactional && app_buffers.is_empty() && app_numbers.is_empty() {
        return Err("transactional rules ('=>') need app-layer keywords".into());
    }

    // A bare application-protocol rule (`alert http ... (sid:1;)`) matches on the protocol
    // alone: without app-layer detection that is unknown, so it must not match every packet.
    if let (Protocol::App(name), None, true) = (header.protocol, &payload, app_buffers.is_empty()) {
        packet_checks.push(PacketCheck::AppProto { negated: false, name });
    }

    // Fast pattern: explicit first; else Suricata's choice among non-negated contents:
    // highest strength, then longest. Packet rules take it from pkt_data; app-layer rules from
    // an app buffer without transforms (the prefilter scans the buffer as the parser gives it).
    let fast_pattern = if !app_buffers.is_empty() || !app_numbers.is_empty() || never_matches.is_some() {
        None
    } else {
        choose_fast_pattern(fp_candidates.iter().filter(|c| c.buffer.is_none() && c.chain.is_empty())).map(|c| (c.bytes.clone(), c.nocase))
    };
    // A transactional rule ('=>') reads buffers of both directions, so its fast pattern may
    // not be in the buffers the prefilter scans: it is checked on every transaction instead.
    let app_fast_pattern = if never_matches.is_some() || header.direction == Direction::Transactional {
        None
    } else {
        // The candidate's (buffer, transform chain) must be one the rule inspects.
        let prefilterable = |c: &FastPatternCandidate| {
            app_buffers.iter().any(|a| {
                same_buffer(Some(a.buffer), c.buffer) && a.transforms.iter().map(|t| &t.spec).eq(c.chain.iter())
            })
        };
        choose_fast_pattern(fp_candidates.iter().filter(|c| prefilterable(c))).and_then(|c| {
            Some(AppFastPattern { buffer: c.buffer?, transforms: c.chain.clone(), bytes: c.bytes.clone(), nocase: c.nocase })
        })
    };

    let class = rule.classtype.as_deref().and_then(|c| classes.get(c));
    let ports_any = header.src_ports.is_any() && header.dst_ports.is_any();
    let ip_only = payload.is_none()
        && app_buffers.is_empty()
        && app_numbers.is_empty()
        && packet_checks.is_empty()
        && flow.is_none()
        && state_checks.is_empty()
        && header_kw.is_empty()
        && ports_any
        && !matches!(header.protocol, Protocol::App(_));
    let bits_use = match (bits_set, bits_read) {
        (true, false) => BitsUse::Set,
        (true, true) => BitsUse::SetRead,
        (false, true) => BitsUse::Read,
        (false, false) => BitsUse::None,
    };
    Ok(CompiledRule {
        gid: rule.gid,
        sid: rule.sid,
        rev: rule.rev,
        msg: Arc::from(rule.msg.as_str()),
        rule_log: Arc::new(RuleLog {
            metadata: rule
                .options
                .iter()
                .filter_map(|o| match o {
                    RuleOption::Metadata(pairs) => Some(pairs.iter().cloned()),
                    _ => None,
                })
                .flatten()
                .collect(),
            text: rule.text.clone(),
        }),
        category: Arc::from(class.map(|c| c.description.as_str()).unwrap_or("")),
        severity: rule.effective_priority(classes),
        priority: rule.effective_priority(classes),
        action: header.action,
        noalert: rule.is_noalert(),
        proto,
        src_any: header.src.is_any(),
        dst_any: header.dst.is_any(),
        src: header.src.clone(),
        dst: header.dst.clone(),
        src_ports: header.src_ports.clone(),
        dst_ports: header.dst_ports.clone(),
        ports_any,
        bidirectional: header.direction == Direction::Both,
        transactional,
        flow,
        packet_checks,
        payload,
        app_buffers,
        app_numbers,
        never_matches,
        require_packet,
        stream_only,
        state_checks,
        state_actions,
        limit,
        suppressions: Vec::new(),
        ip_only,
        header: header_kw,
        bits_use,
        fast_pattern,
        app_fast_pattern,
    })
}

/// The fast pattern of an app-layer rule and where the prefilter searches it: the buffer
/// after the rule's transforms of it (`dns.query; dotprefix;` searches ".example.com").
pub struct AppFastPattern {
    pub buffer: Buffer,
    pub transforms: Vec<Transform>,
    pub bytes: Vec<u8>,
    pub nocase: bool,
}

/// A content that could serve as a rule's fast pattern.
struct FastPatternCandidate {
    /// `None`: pkt_data.
    buffer: Option<Buffer>,
    bytes: Vec<u8>,
    nocase: bool,
    /// Marked `fast_pattern` in the rule.
    explicit: bool,
    negated: bool,
    /// The transforms of the content's buffer: the prefilter must search transformed data.
    chain: Vec<Transform>,
}

/// An explicit `fast_pattern` wins (a negated one cannot prefilter: the rule matches when it
/// is absent); otherwise the strongest, then longest, non-negated content.
fn choose_fast_pattern<'a>(candidates: impl Iterator<Item = &'a FastPatternCandidate> + Clone) -> Option<&'a FastPatternCandidate> {
    if let Some(explicit) = candidates.clone().find(|c| c.explicit) {
        return (!explicit.negated).then_some(explicit);
    }
    candidates.filter(|c| !c.negated).max_by_key(|c| (pattern_strength(&c.bytes), c.bytes.len()))
}

fn same_buffer(a: Option<Buffer>, b: Option<Buffer>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.name == y.name,
        _ => false,
    }
}
