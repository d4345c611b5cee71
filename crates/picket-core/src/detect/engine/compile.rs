//! Rule -> [`CompiledRule`]: resolves variables, splits keywords into header, packet,
//! payload-program and state parts, and picks the fast pattern.

use std::collections::HashMap;
use std::sync::Arc;

use super::headers::{HeaderBuffer, HeaderCheck, HeaderRule};
use super::lists::{choose_fast_pattern, same_buffer, FastPatternCandidate, ListBuild, PayloadLists};
use super::program::Program;
use super::transform::TransformStep;
use crate::detect::rule::config::RateFilterAction;
use crate::detect::rule::options::{
    BitsGroup, DetectionFilter, Flow, Flowbits, FlowbitsCmd, Flowint, FlowintOp, Threshold, Track, UintCmp, Xbits,
    XbitsTrack,
};
use crate::detect::rule::{
    Action, AddressSet, AppNumber, Buffer, ClassificationTable, Direction, NumOrVar, NumberIndex, PortSet, Protocol,
    Rule, RuleOption, Transform,
};

/// Keywords evaluated on the packet headers and flow, before any payload.
pub(crate) enum PacketCheck {
    Flags(crate::detect::rule::options::TcpFlags),
    Window {
        negated: bool,
        size: u16,
    },
    Seq(u32),
    Ack(u32),
    Ttl(crate::detect::rule::UintCmp<u8>),
    Tos {
        negated: bool,
        tos: u8,
    },
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
    StreamSize {
        side: crate::detect::rule::options::StreamSide,
        cmp: crate::detect::rule::UintCmp<u32>,
    },
    /// The flow's protocol is (not) `name`, with Suricata's equivalences unless `exact`.
    AppProto {
        negated: bool,
        name: &'static str,
        exact: bool,
    },
    FlowCount(crate::detect::rule::options::FlowCount),
    FlowAge(crate::detect::rule::UintCmp<u32>),
    /// `app-layer-event`: the packet's transaction raised `event` in a flow of `proto`.
    AppEvent {
        proto: Option<&'static str>,
        event: Box<str>,
    },
}

/// Conditions on per-flow / per-host state.
pub(crate) enum StateCheck {
    FlowbitsAny {
        ids: Vec<u32>,
        want_set: bool,
    },
    FlowbitsAll {
        ids: Vec<u32>,
        want_set: bool,
    },
    Flowint {
        id: u32,
        op: FlowintOp,
        value: Option<FlowintValue>,
    },
    /// `flowint:name,+,1` and friends: modify in rule order, like Suricata's match list.
    FlowintModify {
        id: u32,
        op: FlowintOp,
        value: Option<FlowintValue>,
    },
    Xbit {
        id: u32,
        track: XbitsTrack,
        want_set: bool,
    },
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
    /// A threshold.config `rate_filter`: past `count` matches in `seconds`, matches take
    /// `new_action` for `timeout` seconds.
    RateFilter(RateFilter),
}

/// A `rate_filter` of threshold.config, as compiled into the rule it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RateFilter {
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    pub new_action: RateFilterAction,
    pub timeout: u32,
}

/// What a threshold, detection_filter or rate_filter makes of one match (Suricata's
/// PacketAlertThreshold results: 1, 2 and 0, and the action a rate_filter swaps in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LimitOutcome {
    /// The match alerts and its rule acts.
    Alert,
    /// No alert, but the rule still acts (Suricata's "silent match": a `limit` past its
    /// count, `both` past its count, backoff between alerts).
    Silent,
    /// Neither alert nor action: a threshold or detection_filter not reached yet.
    Skip,
    /// A rate_filter past its rate: the match alerts with this action instead of its rule's.
    Rate(RateFilterAction),
}

impl AlertLimit {
    /// Tracked per flow (kept by the worker that owns the flow) rather than per host/rule.
    pub(crate) fn tracks_flow(&self) -> bool {
        self.track() == Track::ByFlow
    }

    pub(crate) fn track(&self) -> Track {
        match self {
            AlertLimit::Threshold(t) => t.track,
            AlertLimit::DetectionFilter(d) => d.track,
            AlertLimit::RateFilter(r) => r.track,
        }
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

/// What a rule's `drop`, `reject` or `pass` acts on: Suricata's action scope by signature
/// type (`signature_properties` in its detect-engine.c), which an IPS configuration relies on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ActionScope {
    /// Rules on packet fields (flags, dsize, ttl, decoder events, header buffers, payload
    /// rules that must see packets): the matching packet only.
    Packet,
    /// IP-only rules, protocol-detection rules, app-layer rules: the rest of the flow too.
    Flow,
    /// Payload rules that may match the stream: the flow when the match was in stream data,
    /// the packet when it was in a packet's payload.
    FlowIfStream,
}

/// The action scope of a rule being compiled (Suricata's SignatureSetType, as far as picket
/// tells rule types apart).
fn action_scope(build: &RuleBuild<'_>, has_payload: bool, has_app_buffers: bool) -> ActionScope {
    if has_app_buffers || !build.app_numbers.is_empty() {
        return ActionScope::Flow;
    }
    if has_payload {
        return if build.require_packet { ActionScope::Packet } else { ActionScope::FlowIfStream };
    }
    let detects_protocol = build.packet_checks.iter().any(|c| matches!(c, PacketCheck::AppProto { .. }));
    let only_protocol_checks = build.packet_checks.iter().all(|c| matches!(c, PacketCheck::AppProto { .. }));
    // A direction in `flow:` is allowed with app-layer-protocol (Suricata's PD-only rules),
    // any other flow keyword makes it a packet rule.
    let flow_ok = build.flow.is_none_or(|f| {
        detects_protocol && !(f.established || f.not_established || f.stateless || f.only_stream || f.no_stream)
    });
    let bits_ok = build.state_checks.is_empty();
    if only_protocol_checks && build.header.is_empty() && flow_ok && bits_ok {
        ActionScope::Flow
    } else {
        ActionScope::Packet
    }
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
    /// `alert`: a pass match is logged as an alert.
    pub logs_pass: bool,
    /// `bypass`: a match bypasses the rest of the flow.
    pub bypass: bool,
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
    /// Keywords on application-layer buffers; inspected only through a `BufferSource`.
    pub app_buffers: Vec<AppBufferInspection>,
    /// Numeric app-layer keywords (`dns.opcode`, `tls.version`, ...), read through the
    /// `BufferSource` too.
    pub app_numbers: Vec<(AppNumber, UintCmp<u64>, NumberIndex)>,
    /// Set when the rule uses something the engine cannot evaluate yet; it then never matches.
    pub never_matches: Option<&'static str>,
    pub require_packet: bool,
    pub stream_only: bool,
    pub state_checks: Vec<StateCheck>,
    pub state_actions: Vec<StateAction>,
    pub limit: Option<AlertLimit>,
    pub suppressions: Vec<Suppression>,
    pub ip_only: bool,
    /// The header names an application protocol (`alert http ...`).
    pub app_proto_header: bool,
    /// What a `drop` or `pass` match acts on besides its packet.
    pub action_scope: ActionScope,
    /// Header buffers and packet checks of `headers.rs` (tcp.hdr, tcp.mss, vlan.id, ...).
    pub header: HeaderRule,
    pub bits_use: BitsUse,
    pub priority: u8,
    /// Fast pattern for the prefilter: (bytes, nocase).
    pub fast_pattern: Option<(Vec<u8>, bool)>,
    /// Fast pattern of an app-layer rule: (buffer, bytes, nocase); scanned in that buffer.
    pub app_fast_pattern: Option<AppFastPattern>,
    /// Why neither fast pattern was chosen (`--engine-analysis`); `None` when one was.
    pub no_fast_pattern: Option<super::lists::NoFastPattern>,
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
    /// `absent`: `Some(false)` the buffer must be missing; `Some(true)` (`or_else`) a
    /// missing buffer matches, a present one runs `program`.
    pub absent: Option<bool>,
}

impl AppBufferInspection {
    /// The program runs on transformed data: a prefilter must search the transformed buffer
    /// (or leave the rule out), not the raw one.
    pub fn is_transformed(&self) -> bool {
        !self.transforms.is_empty()
    }
}

impl CompiledRule {
    /// (gid, sid) in one number: what threshold trackers are keyed by, so that they keep
    /// counting across a rule reload (rule indices change, signature ids do not).
    pub fn key(&self) -> u64 {
        (u64::from(self.gid) << 32) | u64::from(self.sid)
    }

    /// The rule reads app-layer transaction data (buffers or numeric keywords), so it is
    /// checked only when a `BufferSource` is given and alerts once per transaction.
    pub fn inspects_app_layer(&self) -> bool {
        !self.app_buffers.is_empty() || !self.app_numbers.is_empty()
    }
}

/// A rule's `metadata:` pairs and its text, for eve's `alert.metadata` and `alert.rule`.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleLog {
    /// (key, value) in rule order; a key may repeat. The strings are shared between the
    /// rules of an engine ([`Names::shared_str`]): ET Open has ~10 pairs a rule but few
    /// distinct keys and values, and one copy each was ~13 MB.
    pub metadata: Box<[(Arc<str>, Arc<str>)]>,
    /// The rule as written; empty unless the engine keeps rule texts
    /// ([`super::DetectConfig::keep_rule_text`]).
    pub text: String,
}

/// Interned names of flowbits, flowints and xbits, and the strings rules share while an
/// engine is built.
#[derive(Default)]
pub(crate) struct Names {
    pub flowbits: HashMap<String, u32>,
    pub flowints: HashMap<String, u32>,
    pub xbits: HashMap<String, u32>,
    /// Metadata keys and values and classtype descriptions: one allocation for each
    /// distinct string, shared by every rule using it (dropped with the builder; the rules
    /// keep their `Arc`s).
    /// (Fx: SipHash over ~400k lookups was a visible part of a warm start; the keys come
    /// from the rule set.)
    pub strings: std::collections::HashSet<Arc<str>, crate::flow::hash::FxBuildHasher>,
}

impl Names {
    /// The shared copy of `s`.
    pub(crate) fn shared_str(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.strings.get(s) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(s);
        self.strings.insert(Arc::clone(&shared));
        shared
    }
}

fn intern(map: &mut HashMap<String, u32>, name: &str) -> u32 {
    let next = map.len() as u32;
    *map.entry(name.to_string()).or_insert(next)
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
            "ntp" | "tftp" | "ikev2" | "ike" | "dhcp" | "snmp" | "sip" | "quic" | "bittorrent-dht" => ProtoMatch::Udp,
            "krb5" => ProtoMatch::TcpOrUdp,
            _ => ProtoMatch::Tcp,
        },
    })
}

/// Everything but the payload keywords of one rule, gathered keyword by keyword; the payload
/// keywords go to [`PayloadLists`].
struct RuleBuild<'n> {
    names: &'n mut Names,
    payload: PayloadLists,
    packet_checks: Vec<PacketCheck>,
    header: HeaderRule,
    app_numbers: Vec<(AppNumber, UintCmp<u64>, NumberIndex)>,
    flow: Option<Flow>,
    state_checks: Vec<StateCheck>,
    state_actions: Vec<StateAction>,
    limit: Option<AlertLimit>,
    /// Set when the rule uses something the engine cannot evaluate yet.
    never_matches: Option<&'static str>,
    require_packet: bool,
    stream_only: bool,
    /// The rule sets / reads flowbits (for Suricata's rule ordering).
    bits_set: bool,
    bits_read: bool,
}

impl<'n> RuleBuild<'n> {
    fn new(protocol: Protocol, names: &'n mut Names) -> Self {
        RuleBuild {
            names,
            payload: PayloadLists::default(),
            packet_checks: Vec::new(),
            header: HeaderRule::default(),
            app_numbers: Vec::new(),
            flow: None,
            state_checks: Vec::new(),
            state_actions: Vec::new(),
            limit: None,
            never_matches: None,
            require_packet: matches!(protocol, Protocol::TcpPkt),
            stream_only: matches!(protocol, Protocol::TcpStream),
            bits_set: false,
            bits_read: false,
        }
    }

    /// Files one option where the engine evaluates it.
    fn add(&mut self, opt: &RuleOption) -> Result<(), String> {
        if requires_packet(opt) {
            self.require_packet = true;
        }
        let checks = &mut self.packet_checks;
        match opt {
            RuleOption::Content(c) => self.payload.content(c)?,
            RuleOption::Pcre(p) => self.payload.pcre(p)?,
            RuleOption::PcreLimit { match_limit, recursion } => self.payload.pcre_limit(*match_limit, *recursion)?,
            RuleOption::Isdataat(i) => self.payload.isdataat(i)?,
            RuleOption::ByteTest(b) => self.payload.byte_test(b)?,
            RuleOption::ByteJump(b) => self.payload.byte_jump(b)?,
            RuleOption::ByteExtract(b) => self.payload.byte_extract(b)?,
            RuleOption::ByteMath(b) => self.payload.byte_math(b)?,
            RuleOption::Base64Decode(b) => self.payload.base64_decode(b),
            RuleOption::Transform(t) => self.payload.transform(t)?,
            RuleOption::StickyBuffer { buffer, .. } => self.payload.sticky_buffer(buffer),
            RuleOption::PktData => self.payload.pkt_data(),
            RuleOption::Bsize(cmp) => self.payload.bsize(*cmp)?,
            RuleOption::Entropy(e) => self.payload.entropy(e)?,
            RuleOption::Absent { or_else } => self.payload.absent(*or_else)?,
            RuleOption::Urilen { cmp, raw } => self.payload.urilen(*cmp, *raw)?,
            RuleOption::Flow(f) => self.flow(f),
            RuleOption::Flags(f) => checks.push(PacketCheck::Flags(*f)),
            RuleOption::Window { negated, size } => checks.push(PacketCheck::Window { negated: *negated, size: *size }),
            RuleOption::Seq(v) => checks.push(PacketCheck::Seq(*v)),
            RuleOption::Ack(v) => checks.push(PacketCheck::Ack(*v)),
            RuleOption::Ttl(c) => checks.push(PacketCheck::Ttl(*c)),
            RuleOption::Tos { negated, tos } => checks.push(PacketCheck::Tos { negated: *negated, tos: *tos }),
            RuleOption::Ipopts(o) => checks.push(PacketCheck::Ipopts(*o)),
            RuleOption::Fragbits(f) => checks.push(PacketCheck::Fragbits(*f)),
            RuleOption::Fragoffset(c) => checks.push(PacketCheck::Fragoffset(*c)),
            RuleOption::IpId(v) => checks.push(PacketCheck::IpId(*v)),
            RuleOption::IpProto(c) => checks.push(PacketCheck::IpProto(*c)),
            RuleOption::Itype(c) => checks.push(PacketCheck::Itype(*c)),
            RuleOption::Icode(c) => checks.push(PacketCheck::Icode(*c)),
            RuleOption::IcmpId(v) => checks.push(PacketCheck::IcmpId(*v)),
            RuleOption::IcmpSeq(v) => checks.push(PacketCheck::IcmpSeq(*v)),
            RuleOption::Dsize(c) => {
                // Suricata: dsize makes a rule inspect packets, never the stream.
                self.require_packet = true;
                checks.push(PacketCheck::Dsize(*c));
            }
            RuleOption::StreamSize { side, cmp } => checks.push(PacketCheck::StreamSize { side: *side, cmp: *cmp }),
            RuleOption::FlowCount(c) => checks.push(PacketCheck::FlowCount(*c)),
            RuleOption::FlowAge(c) => checks.push(PacketCheck::FlowAge(*c)),
            RuleOption::AppLayerEvent { proto, event } => {
                checks.push(PacketCheck::AppEvent { proto: *proto, event: event.as_str().into() })
            }
            RuleOption::AppLayerProtocol { negated, name, exact } => {
                checks.push(PacketCheck::AppProto { negated: *negated, name, exact: *exact })
            }
            RuleOption::AppNumber { field, cmp, index } => self.app_numbers.push((*field, *cmp, *index)),
            RuleOption::Flowbits(f) => self.flowbits(f),
            RuleOption::Flowint(f) => self.flowint(f)?,
            RuleOption::Xbits(x) => self.xbits(x)?,
            RuleOption::TcpMss(c) => self.header.checks.push(HeaderCheck::TcpMss(*c)),
            RuleOption::VlanId(v) => self.header.checks.push(HeaderCheck::VlanId(*v)),
            RuleOption::VlanLayers(c) => self.header.checks.push(HeaderCheck::VlanLayers(*c)),
            RuleOption::Checksum { layer, valid } => {
                self.header.checks.push(HeaderCheck::Checksum { layer: *layer, valid: *valid })
            }
            RuleOption::DecodeEvent(e) => self.header.checks.push(HeaderCheck::DecodeEvent(*e)),
            // Tagged-packet logging is not implemented: the rule alerts as usual and the
            // packets that follow are not logged as tagged.
            RuleOption::Tag(_) => {}
            RuleOption::Threshold(t) => self.limit = Some(AlertLimit::Threshold(*t)),
            RuleOption::DetectionFilter(d) => self.limit = Some(AlertLimit::DetectionFilter(*d)),
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
            | RuleOption::Alert
            | RuleOption::Bypass
            | RuleOption::Prefilter => {}
        }
        Ok(())
    }

    fn flow(&mut self, f: &Flow) {
        if f.only_frag || f.no_frag {
            self.never_matches.get_or_insert("flow:only_frag/no_frag");
        }
        if f.only_stream {
            self.stream_only = true;
        }
        if f.no_stream {
            self.require_packet = true;
        }
        self.flow = Some(*f);
    }

    fn flowbits(&mut self, f: &Flowbits) {
        let ids: Vec<u32> = f.names.iter().map(|n| intern(&mut self.names.flowbits, n)).collect();
        match f.cmd {
            FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet => {
                self.bits_read = true;
                let want_set = f.cmd == FlowbitsCmd::IsSet;
                self.state_checks.push(match f.group {
                    BitsGroup::Any => StateCheck::FlowbitsAny { ids, want_set },
                    _ => StateCheck::FlowbitsAll { ids, want_set },
                });
            }
            FlowbitsCmd::NoAlert => {}
            cmd => {
                self.bits_set = true;
                for id in ids {
                    self.state_actions.push(StateAction::Flowbit { id, cmd });
                }
            }
        }
    }

    fn flowint(&mut self, f: &Flowint) -> Result<(), String> {
        let id = intern(&mut self.names.flowints, &f.name);
        let value = match &f.value {
            None => None,
            Some(NumOrVar::Num(n)) => {
                Some(FlowintValue::Num(u32::try_from(*n).map_err(|_| "flowint: value out of range")?))
            }
            Some(NumOrVar::Var(v)) => Some(FlowintValue::Flowint(intern(&mut self.names.flowints, v))),
        };
        self.state_checks.push(match f.op {
            FlowintOp::Set | FlowintOp::Add | FlowintOp::Sub => StateCheck::FlowintModify { id, op: f.op, value },
            _ => StateCheck::Flowint { id, op: f.op, value },
        });
        Ok(())
    }

    fn xbits(&mut self, x: &Xbits) -> Result<(), String> {
        if x.cmd == FlowbitsCmd::NoAlert {
            return Ok(());
        }
        let track = x.track.ok_or("xbits: missing track")?;
        if track == XbitsTrack::Tx {
            self.never_matches.get_or_insert("xbits track tx");
            return Ok(());
        }
        let id = intern(&mut self.names.xbits, &x.name);
        match x.cmd {
            FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet => {
                self.state_checks.push(StateCheck::Xbit { id, track, want_set: x.cmd == FlowbitsCmd::IsSet })
            }
            cmd => self.state_actions.push(StateAction::Xbit { id, cmd, track, expire_secs: x.expire.unwrap_or(0) }),
        }
        Ok(())
    }

    /// Turns the payload lists into programs: pkt_data's, the header buffers' (into
    /// `self.header`) and the app-layer buffers'.
    fn programs(&mut self, lists: Vec<ListBuild>) -> Result<(Option<Program>, Vec<AppBufferInspection>), String> {
        let mut payload = None;
        let mut app_buffers = Vec::new();
        for list in lists {
            let name = list.buffer.map_or("pkt_data", |b| b.name);
            match list.absent {
                Some(false) if !list.ops.is_empty() => {
                    return Err(format!(
                        "absent on {name} cannot be combined with keywords inspecting it (use absent: or_else)"
                    ))
                }
                Some(true) if list.ops.is_empty() => {
                    return Err(format!("absent: or_else on {name} needs keywords inspecting the buffer after it"))
                }
                Some(_) if list.buffer.is_some_and(|b| HeaderBuffer::from_buffer(b).is_some()) => {
                    return Err(format!("absent does not apply to the packet header buffer {name}"))
                }
                _ => {}
            }
            let absent = list.absent;
            let program = Program::new(list.ops);
            match list.buffer {
                None => payload = Some(program),
                Some(b) if HeaderBuffer::from_buffer(b).is_some() => {
                    // Header buffers exist on packets only (Suricata: SIG_FLAG_REQUIRE_PACKET).
                    self.require_packet = true;
                    if !list.transforms.is_empty() {
                        self.never_matches.get_or_insert("transform on packet header buffer");
                    }
                    if let Some(which) = HeaderBuffer::from_buffer(b) {
                        self.header.buffers.push((which, program));
                    }
                }
                Some(b) => {
                    let transforms =
                        list.transforms.into_iter().map(TransformStep::new).collect::<Result<Vec<_>, String>>()?;
                    app_buffers.push(AppBufferInspection { buffer: b, transforms, program, absent })
                }
            }
        }
        Ok((payload, app_buffers))
    }

    fn bits_use(&self) -> BitsUse {
        match (self.bits_set, self.bits_read) {
            (true, false) => BitsUse::Set,
            (true, true) => BitsUse::SetRead,
            (false, true) => BitsUse::Read,
            (false, false) => BitsUse::None,
        }
    }
}

/// Fast pattern of a packet rule, from pkt_data: explicit first; else Suricata's choice among
/// non-negated contents: highest strength, then longest.
fn packet_fast_pattern(candidates: &[FastPatternCandidate]) -> Option<(Vec<u8>, bool)> {
    choose_fast_pattern(candidates.iter().filter(|c| c.buffer.is_none() && c.chain.is_empty()))
        .map(|c| (c.bytes.clone(), c.nocase))
}

/// Fast pattern of an app-layer rule: from a (buffer, transform chain) the rule inspects, so
/// the prefilter searches the buffer as the rule's program sees it.
fn app_fast_pattern(
    candidates: &[FastPatternCandidate],
    app_buffers: &[AppBufferInspection],
) -> Option<AppFastPattern> {
    let prefilterable = |c: &FastPatternCandidate| {
        app_buffers
            .iter()
            .any(|a| same_buffer(Some(a.buffer), c.buffer) && a.transforms.iter().map(|t| &t.spec).eq(c.chain.iter()))
    };
    choose_fast_pattern(candidates.iter().filter(|c| prefilterable(c))).and_then(|c| {
        Some(AppFastPattern {
            buffer: c.buffer?,
            transforms: c.chain.clone(),
            bytes: c.bytes.clone(),
            nocase: c.nocase,
        })
    })
}

/// What eve logs about the rule besides its ids; `text` is the rule's.
fn rule_log(rule: &Rule, text: String, names: &mut Names) -> RuleLog {
    RuleLog {
        metadata: rule
            .options
            .iter()
            .filter_map(|o| match o {
                RuleOption::Metadata(pairs) => Some(pairs.iter()),
                _ => None,
            })
            .flatten()
            .map(|(k, v)| (names.shared_str(k), names.shared_str(v)))
            .collect(),
        text,
    }
}

/// Compiles one rule. `Err` rejects the rule (reported, not loaded). `text` is the rule's
/// text, taken out of it by the caller (the compiled rule keeps it for eve: moved, not copied).
pub(crate) fn compile_rule(
    rule: &Rule,
    text: String,
    classes: &ClassificationTable,
    limits: &super::InspectionLimits,
    names: &mut Names,
) -> Result<CompiledRule, String> {
    let header = &rule.header;
    let proto = proto_match(header.protocol)?;
    let mut build = RuleBuild::new(header.protocol, names);
    build.payload.set_limits(*limits);
    for opt in &rule.options {
        build.add(opt)?;
    }
    let (lists, fp_candidates) = std::mem::take(&mut build.payload).finish(&mut build.never_matches);
    let (payload, app_buffers) = build.programs(lists)?;

    let transactional = header.direction == Direction::Transactional;
    if transactional && app_buffers.is_empty() && build.app_numbers.is_empty() {
        return Err("transactional rules ('=>') need app-layer keywords".into());
    }
    // A bare application-protocol rule (`alert http ... (sid:1;)`) matches on the protocol
    // alone: without app-layer detection that is unknown, so it must not match every packet.
    if let (Protocol::App(name), None, true) = (header.protocol, &payload, app_buffers.is_empty()) {
        build.packet_checks.push(PacketCheck::AppProto { negated: false, name, exact: false });
    } else if let (Protocol::App(name @ ("http1" | "http2" | "doh2")), false) =
        (header.protocol, app_buffers.is_empty())
    {
        // The `http.*` buffers exist over HTTP/1 and HTTP/2: a rule naming one version
        // (or DNS over HTTP/2) in its header only matches flows of it.
        build.packet_checks.push(PacketCheck::AppProto { negated: false, name, exact: false });
    }

    // Packet rules take their fast pattern from pkt_data, app-layer rules from an app buffer.
    let inactive = build.never_matches.is_some();
    let fast_pattern = if !app_buffers.is_empty() || !build.app_numbers.is_empty() || inactive {
        None
    } else {
        packet_fast_pattern(&fp_candidates)
    };
    // A transactional rule ('=>') reads buffers of both directions, so its fast pattern may
    // not be in the buffers the prefilter scans: it is checked on every transaction instead.
    let app_fast_pattern =
        if inactive || transactional { None } else { app_fast_pattern(&fp_candidates, &app_buffers) };

    let app_rule = !app_buffers.is_empty() || !build.app_numbers.is_empty();
    let no_fast_pattern = (fast_pattern.is_none() && app_fast_pattern.is_none())
        .then(|| super::lists::no_fast_pattern_reason(&fp_candidates, app_rule, transactional));

    let class = rule.classtype.as_deref().and_then(|c| classes.get(c));
    let ports_any = header.src_ports.is_any() && header.dst_ports.is_any();
    let ip_only = payload.is_none()
        && app_buffers.is_empty()
        && build.app_numbers.is_empty()
        && build.packet_checks.is_empty()
        && build.flow.is_none()
        && build.state_checks.is_empty()
        && build.header.is_empty()
        && ports_any
        && !matches!(header.protocol, Protocol::App(_));
    let action_scope = action_scope(&build, payload.is_some(), !app_buffers.is_empty());
    let bits_use = build.bits_use();
    let rule_log = Arc::new(rule_log(rule, text, build.names));
    let category = build.names.shared_str(class.map(|c| c.description.as_str()).unwrap_or(""));
    Ok(CompiledRule {
        gid: rule.gid,
        sid: rule.sid,
        rev: rule.rev,
        msg: Arc::from(rule.msg.as_str()),
        rule_log,
        category,
        severity: rule.effective_priority(classes),
        priority: rule.effective_priority(classes),
        action: header.action,
        noalert: rule.is_noalert(),
        logs_pass: rule.logs_pass() && !rule.is_noalert(),
        bypass: rule.is_bypass(),
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
        flow: build.flow,
        packet_checks: build.packet_checks,
        payload,
        app_buffers,
        app_numbers: build.app_numbers,
        never_matches: build.never_matches,
        require_packet: build.require_packet,
        stream_only: build.stream_only,
        state_checks: build.state_checks,
        state_actions: build.state_actions,
        limit: build.limit,
        suppressions: Vec::new(),
        ip_only,
        app_proto_header: matches!(header.protocol, Protocol::App(_)),
        action_scope,
        header: build.header,
        bits_use,
        fast_pattern,
        app_fast_pattern,
        no_fast_pattern,
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

/// Keywords that describe one packet (its header fields, or the flow's packet counters):
/// Suricata flags their rules `SIG_FLAG_REQUIRE_PACKET`, so the rule's payload contents
/// are matched against the packet, never against reassembled stream data. (E.g.
/// `flags:S; content:"GET"` matches a TCP Fast Open SYN's own data.) `dsize`, header
/// buffers and `flow:no_stream` set it where they are filed.
fn requires_packet(opt: &RuleOption) -> bool {
    matches!(
        opt,
        RuleOption::Flags(_)
            | RuleOption::Window { .. }
            | RuleOption::Seq(_)
            | RuleOption::Ack(_)
            | RuleOption::Ttl(_)
            | RuleOption::Tos { .. }
            | RuleOption::Ipopts(_)
            | RuleOption::Fragbits(_)
            | RuleOption::Fragoffset(_)
            | RuleOption::IpId(_)
            | RuleOption::IpProto(_)
            | RuleOption::Itype(_)
            | RuleOption::Icode(_)
            | RuleOption::IcmpId(_)
            | RuleOption::IcmpSeq(_)
            | RuleOption::FlowCount(_)
    )
}
