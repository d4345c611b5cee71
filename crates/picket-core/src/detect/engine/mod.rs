//! The detection engine: compiles parsed rules into signature groups with a multi-pattern
//! prefilter, and runs them against one packet (and the stream data that packet releases).
//!
//! Sans-IO and shared: a [`DetectEngine`] is immutable after `build` and shared by all
//! workers (`Arc`); each worker owns a [`DetectCtx`] (matcher scratch, threshold and host
//! state, counters), and each flow carries a [`DetectFlow`] (flowbits, flowints, ...).
//!
//! CONTRACT with `inspect` (the caller):
//! - per decoded packet: `engine.inspect(&mut ctx, &pkt, flow_state, &mut alerts)`;
//! - TCP stream data released by reassembly rides on the packet that released it
//!   (`DetectPacket::stream`), or on a pseudo packet (`decoded: None`) at flow end;
//! - alerts come back in the order they are to be logged; the caller writes eve/fast.log
//!   and applies drop/reject (the engine only reports the action).

#[cfg(test)]
mod bounds_tests;
mod carry;
mod compile;
mod cover;
mod headers;
#[cfg(test)]
mod headers_tests;
pub mod interest;
mod lists;
mod payload;
mod ports;
mod profile;
mod program;
mod state;
mod tables;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod threshold_action_tests;
pub mod transform;
// After the others: what `--engine-analysis` reports (analysis.rs).
pub mod analysis;

use crate::decode::{Decoded, FiveTuple, IpLayer, L4};
use crate::detect::mpm::{AcBuilder, MatcherBuilder, MultiPatternMatcher, Pattern, Scratch};
use crate::detect::rule::config::RateFilterAction;
use crate::detect::rule::options::{FlagsMode, FlowCountDir, FlowCountKind, IpOption, StreamSide, Track};
use crate::detect::rule::{
    Action, AppNumber, Buffer, ClassificationTable, NumberIndex, Rule, ThresholdConfig, ThresholdEntry, Transform,
};
use crate::packet::Timestamp;
use crate::stream::StreamChunk;
pub use carry::EngineCarry;
pub use compile::RuleLog;
use compile::{ActionScope, AlertLimit, CompiledRule, LimitOutcome, PacketCheck, ProtoMatch, RateFilter, Suppression};
use payload::Inspection;
pub use ports::PortGroupLimits;
use program::MAX_VARS;
use state::{FlowTrackers, FlowVars, Hosts, SharedState};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
pub use tables::TableConfig;
use transform::TransformStep;

/// Build-time settings.
#[derive(Clone, Debug)]
pub struct DetectConfig {
    /// Compiles the prefilter pattern sets; the caller picks the backend (`mpm-algo`, see
    /// `picket::matchers`). Default: the pure-Rust Aho-Corasick, sequentially.
    pub matchers: Arc<dyn MatcherBuilder>,
    pub classification: ClassificationTable,
    pub thresholds: ThresholdConfig,
    /// `packet-alert-max`: alerts logged per packet at most (Suricata default 15).
    pub packet_alert_max: u16,
    /// `action-order`.
    pub action_order: ActionOrder,
    /// Suricata's `host:` section: the table of host-tracked thresholds, xbits, hostbits.
    pub host: TableConfig,
    /// Suricata's `ippair:` section: the table of by_both thresholds and ip_pair xbits.
    pub ippair: TableConfig,
    /// `pcre.match-limit`, `pcre.match-limit-recursion`, `detect.inspection-recursion-limit`.
    pub limits: InspectionLimits,
    /// `detect.profile` / `detect.custom-values`: port groups of the TCP and UDP prefilter.
    pub port_groups: PortGroupLimits,
    /// Whether compiled rules keep their text (eve's `rule` field, `--engine-analysis`).
    /// Without it the text is dropped once the rule is compiled: ET Open's is about 17 MB.
    pub keep_rule_text: bool,
    /// `profiling.prefilter.enabled`: workers count the scans, bytes and time of each
    /// prefilter (see `profile.rs`).
    pub profile_prefilter: bool,
}

/// Bounds on the work one payload inspection may do, so that no rule and packet pair can
/// cost more than a bounded number of steps (Suricata's settings and defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InspectionLimits {
    /// `pcre.match-limit`: PCRE2's match limit for every pcre (backtracking steps).
    pub pcre_match_limit: u32,
    /// `pcre.match-limit-recursion`: PCRE2's depth limit for every pcre (nested
    /// backtracking points; the JIT ignores it, as in Suricata, and relies on the match limit).
    pub pcre_match_limit_recursion: u32,
    /// `detect.inspection-recursion-limit`: keyword evaluations of one inspection, counting
    /// every retry of a content/pcre at a later occurrence. 0 in the YAML means no limit.
    pub inspection_recursion_limit: u32,
}

impl InspectionLimits {
    /// Suricata's defaults.
    pub const DEFAULT: InspectionLimits =
        InspectionLimits { pcre_match_limit: 3500, pcre_match_limit_recursion: 1500, inspection_recursion_limit: 3000 };
    /// The largest PCRE2 limit that means something: PCRE2's own default match limit, above
    /// which an in-pattern `(*LIMIT_MATCH=)` has no effect.
    pub const PCRE_LIMIT_MAX: u32 = 10_000_000;
}

impl Default for InspectionLimits {
    fn default() -> Self {
        InspectionLimits::DEFAULT
    }
}

impl Default for DetectConfig {
    fn default() -> Self {
        DetectConfig {
            matchers: Arc::new(AcBuilder),
            classification: ClassificationTable::default(),
            thresholds: ThresholdConfig::default(),
            packet_alert_max: 0,
            action_order: ActionOrder::default(),
            limits: InspectionLimits::default(),
            host: TableConfig::HOST,
            ippair: TableConfig::IPPAIR,
            port_groups: PortGroupLimits::default(),
            keep_rule_text: true,
            profile_prefilter: false,
        }
    }
}

/// What the build did, for `picket rules check` and start-up logs.
#[derive(Clone, Debug, Default)]
pub struct BuildReport {
    pub rules_loaded: usize,
    /// Rules the parser accepted but the engine cannot run, with the reason.
    pub rules_rejected: Vec<(u32, String)>,
    pub prefilter_patterns: usize,
    /// Port groups of the packet and stream prefilter, over TCP and UDP and both directions.
    pub prefilter_port_groups: usize,
    /// Pattern entries looked for through a shorter literal of their set (`cover.rs`), over
    /// all sets.
    pub prefilter_patterns_folded: usize,
    pub mpm_algo: String,
    pub memory_bytes: usize,
    /// Rules that load but cannot match yet, by reason (app-layer buffer, transform, ...).
    pub rules_inactive: BTreeMap<String, usize>,
    /// Rules without a usable fast pattern (checked on every packet of their group).
    pub rules_always_checked: usize,
    pub rules_ip_only: usize,
    /// threshold.config entries the engine does not apply (rate_filter), as text.
    pub config_unsupported: Vec<String>,
    /// Sids of rules whose fast pattern the prefilter backend refused (Hyperscan and a
    /// 16 KiB literal, say): they are prefiltered by Aho-Corasick instead, and still match.
    pub prefilter_fallback_sids: Vec<u32>,
    pub build_micros: u64,
}

/// Flow facts the engine needs for `flow:`, `flow.pkts`, `stream_size` and friends.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowInfo {
    pub flow_id: u64,
    /// This packet travels from the flow's client to its server.
    pub to_server: bool,
    /// Suricata's `established` (TCP after the handshake; others once both sides spoke).
    pub established: bool,
    /// App-layer rules see the flow as established even though `established` is false (the
    /// flow-end pseudo packet of a session torn down by a RST).
    pub tx_established: bool,
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    /// Stream bytes inspected so far per direction [to_server, to_client].
    pub stream_bytes: [u64; 2],
    /// TCP sequence space seen per side [client, server] (Suricata's `next_seq - isn`,
    /// counting the SYN), for `stream_size`; 0 for a side not seen yet.
    pub stream_size: [u64; 2],
    /// Whole seconds between the flow's first and latest packet (`flow.age`; Suricata
    /// subtracts the seconds of the two timestamps).
    pub age_secs: u32,
}

/// One packet as the engine sees it.
pub struct DetectPacket<'a> {
    pub ts: Timestamp,
    pub pcap_cnt: u64,
    /// The decoded packet; `None` for a pseudo packet that only carries stream data at
    /// flow end (Suricata's "stream (flow timeout)").
    pub decoded: Option<&'a Decoded<'a>>,
    /// Addresses and ports in this packet's direction.
    pub tuple: FiveTuple,
    pub vlan: crate::decode::VlanIds,
    /// Transport payload of this packet (empty for pseudo packets).
    pub payload: &'a [u8],
    pub flow: Option<FlowInfo>,
    /// Reassembled stream data of this packet's direction released for inspection now.
    pub stream: Option<StreamChunk<'a>>,
    /// Detected application protocol of the flow ("http", "tls", "dns", ...), if known.
    pub app_proto: Option<&'a str>,
    /// This packet's payload was added to the TCP stream (Suricata's PKT_STREAM_ADD): stream
    /// rules then wait for the reassembled data instead of inspecting the packet.
    pub payload_in_stream: bool,
    /// Suricata's PKT_NOPAYLOAD_INSPECTION: the flow's payload is no longer inspected (it is
    /// encrypted): neither the payload nor stream data is scanned, and rules that need a
    /// payload (content, pcre, byte tests, `dsize` that an empty packet fails) do not match.
    pub no_payload: bool,
    /// A further stream chunk of the packet inspected just before (the stream held more than
    /// one contiguous run to release). Suricata evaluates a rule once per packet, over all
    /// its chunks: on a repeat only a rule matching this chunk's stream data may alert, and
    /// not one that alerted on an earlier chunk of the packet.
    pub repeat: bool,
    /// Application-layer buffers (http.uri, dns.query, ...) of this packet's transaction, once
    /// app-layer parsers exist. `None`: rules on such buffers do not match.
    pub buffers: Option<&'a dyn BufferSource>,
    /// The same transaction seen from the other direction, for transactional (`=>`) rules
    /// whose buffers span both.
    pub buffers_other: Option<&'a dyn BufferSource>,
    /// The app-layer events the flow's parser raised on this run's transaction (for
    /// `app-layer-event`).
    pub app_events: Option<&'a dyn AppEvents>,
}

/// The app-layer events raised on a transaction, by Suricata's event name.
pub trait AppEvents {
    /// Whether `event` (lower case, without the protocol) was raised.
    fn raised(&self, event: &str) -> bool;
}

impl Default for DetectPacket<'_> {
    fn default() -> Self {
        DetectPacket {
            ts: Timestamp(0),
            pcap_cnt: 0,
            decoded: None,
            tuple: FiveTuple { is_v4: true, ..FiveTuple::default() },
            vlan: [0; 3],
            payload: &[],
            flow: None,
            stream: None,
            app_proto: None,
            payload_in_stream: false,
            no_payload: false,
            repeat: false,
            buffers: None,
            buffers_other: None,
            app_events: None,
        }
    }
}

/// Supplies application-layer inspection buffers (the hook for app-layer parsers).
pub trait BufferSource {
    /// The buffer's bytes for the current transaction and direction, if present.
    fn get(&self, buffer: Buffer) -> Option<&[u8]>;

    /// Instance `index` of a buffer that can occur several times in one transaction
    /// (dns.query per question, tls.certs per certificate); `None` past the last one.
    /// Single buffers have only instance 0.
    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        if index == 0 {
            self.get(buffer)
        } else {
            None
        }
    }

    /// Instance `index` of a numeric fact (`dns.rrtype` has one per question); `None` when
    /// absent or past the last one.
    fn number(&self, _field: AppNumber, _index: usize) -> Option<u64> {
        None
    }
}

/// Runs a transform chain over `data` using the two scratch buffers; `None` when a transform
/// failed (the buffer then matches nothing). Without transforms, `data` itself.
fn apply_transforms<'a>(steps: &[TransformStep], data: &'a [u8], scratch: &'a mut [Vec<u8>; 2]) -> Option<&'a [u8]> {
    if steps.is_empty() {
        return Some(data);
    }
    let [first, second] = scratch;
    let (mut current, mut next) = (first, second);
    for (i, step) in steps.iter().enumerate() {
        let input: &[u8] = if i == 0 { data } else { current };
        if !step.apply(input, next) {
            return None;
        }
        std::mem::swap(&mut current, &mut next);
    }
    Some(current)
}

/// Instances of one buffer inspected at most (bounds work on hostile transactions).
const MAX_BUFFER_INSTANCES: usize = 256;

/// The instances of `buffer` in a transaction, at most `MAX_BUFFER_INSTANCES`.
fn buffer_instances<'a>(source: &'a dyn BufferSource, buffer: Buffer) -> impl Iterator<Item = &'a [u8]> + 'a {
    (0..MAX_BUFFER_INSTANCES).map_while(move |index| source.get_nth(buffer, index))
}

/// App buffers a source may hand out as the very same bytes: HTTP's `file.data` is the body
/// that `http.request_body` / `http.response_body` also hold. Their fast patterns share one
/// prefilter, which scans each distinct instance once instead of once per buffer name.
const SHARED_BYTES_BUFFERS: &[&str] = &["file.data", "http.request_body", "http.response_body"];

/// The name app fast patterns of `buffer` are grouped under: its own, or the class of
/// [`SHARED_BYTES_BUFFERS`].
fn prefilter_class(buffer: Buffer) -> &'static str {
    if SHARED_BYTES_BUFFERS.contains(&buffer.name) {
        "file.data+http bodies"
    } else {
        buffer.name
    }
}

/// Buffers that some app-layer parser fills; rules on other buffers load but cannot match.
fn buffer_has_source(buffer: Buffer) -> bool {
    matches!(buffer.app_proto, Some("http" | "dns" | "tls")) || matches!(buffer.name, "file.data")
}

/// Per-flow detection state, kept by the caller inside its flow state.
#[derive(Clone, Debug, Default)]
pub struct DetectFlow {
    /// Set by a matching `pass` rule with flow scope: no more inspection of this flow.
    pub passed: bool,
    /// flowbits and flowints.
    pub vars: FlowVars,
    /// IP-only rules were evaluated for this direction [to_server, to_client] (Suricata runs
    /// them on the first packet of each direction only).
    pub ip_only_done: [bool; 2],
}

/// Per-worker counters of the detection engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct DetectCounters {
    pub packets: u64,
    pub prefilter_scans: u64,
    /// App buffer instances not scanned because their prefilter had just scanned the very
    /// same bytes under another buffer name (`file.data` and `http.response_body`).
    pub prefilter_shared_skips: u64,
    pub prefilter_errors: u64,
    pub candidates: u64,
    /// Candidates whose rule header (protocol, addresses, ports) does not fit the packet.
    pub candidates_header_mismatch: u64,
    pub rules_matched: u64,
    pub alerts: u64,
    pub alerts_suppressed: u64,
    /// Alerts beyond `packet-alert-max`.
    pub alerts_discarded: u64,
    /// Inspections stopped by the backtracking step limit.
    pub recursion_limit: u64,
    /// pcre evaluations stopped by `pcre.match-limit` / `match-limit-recursion` (each one a
    /// no match for its rule).
    pub pcre_match_limit: u64,
    pub flows_passed: u64,
}

/// Per-worker mutable state.
#[derive(Default)]
pub struct DetectCtx {
    scratch: Scratch,
    candidates: Vec<u32>,
    /// Rule index -> scan stamp, to add a rule once per packet.
    seen: Vec<u32>,
    stamp: u32,
    matches: Vec<(u32, bool)>,
    /// `by_flow` thresholds and detection_filters of this worker's flows.
    flow_trackers: FlowTrackers,
    /// This context reports the gauges and counters of the engine's shared tables (one
    /// worker does, so that summing the workers' counters counts them once).
    reports_shared: bool,
    counters: DetectCounters,
    /// Per prefilter scan site: scans, bytes, time (empty unless `profiling.prefilter`).
    prefilter_counts: Vec<profile::SlotCounts>,
    /// Ping-pong outputs of an app buffer's transform chain, reused across packets.
    transform_scratch: [Vec<u8>; 2],
    /// Output of `base64_decode`, reused across packets.
    decode_scratch: Vec<u8>,
    /// (address, length) of the buffer instances one shared prefilter scanned for this packet.
    scanned_spans: Vec<(usize, usize)>,
    /// byte_extract/byte_math variables of the rule being evaluated. Suricata keeps them per
    /// detection thread for the whole rule, so a variable extracted from one buffer
    /// (`ipv4.hdr`) is usable in a later one (`tcp.hdr`); reset for each candidate.
    rule_vars: [u64; MAX_VARS],
    /// Rules that matched on the current packet's earlier stream chunks (see
    /// `DetectPacket::repeat`); cleared by each packet's first run.
    packet_matched: Vec<u32>,
    /// `entropy` values computed while evaluating the current rule, for the flow's
    /// variables (one per buffer: bounded by the buffers a rule names).
    entropy: Vec<(Option<Buffer>, f64)>,
}

/// One alert to log.
#[derive(Clone, Debug)]
pub struct Alert {
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: Arc<str>,
    /// Classification description (eve `alert.category`), empty when the rule has none.
    pub category: Arc<str>,
    /// Priority (eve `alert.severity`).
    pub severity: u8,
    /// The action taken: the rule's, or the one a rate_filter put in its place.
    pub action: Action,
    /// A threshold.config rate_filter changed the action (Suricata's drop reason
    /// "threshold detection_filter").
    pub rate_filtered: bool,
    /// A `pass` match that is logged as an alert (the rule's `alert` keyword).
    pub logs_pass: bool,
    /// The match was in reassembled stream data rather than the packet payload.
    pub in_stream: bool,
    /// The rule has `noalert`-like semantics for logging but still acts (e.g. drop with noalert).
    pub silent: bool,
    /// The rule inspects app-layer buffers: the caller alerts once per transaction.
    pub app_tx: bool,
    /// A `drop`/`reject`/`pass` of this match acts on the rest of the flow, not only on the
    /// packet (Suricata's action scope: IP-only, app-layer and stream matches).
    pub flow_scope: bool,
    /// The rule carries `bypass`: the caller bypasses the rest of the flow.
    pub bypass: bool,
    /// What eve may log about the rule besides its ids (shared, not copied, per alert).
    pub rule_log: Arc<RuleLog>,
}

const TRANSPORTS: usize = 5;
const T_TCP: usize = 0;
const T_UDP: usize = 1;
const T_ICMP4: usize = 2;
const T_ICMP6: usize = 3;
const T_OTHER: usize = 4;
/// The transport groups' names, by index (prefilter profiling's counter names).
const TRANSPORT_NAMES: [&str; TRANSPORTS] = ["tcp", "udp", "icmp", "icmpv6", "other"];

/// Rules of one (transport, flow direction): prefilters over their fast patterns (per port
/// group for the packet and stream, per buffer for app-layer rules) plus the rules that must
/// always be checked.
struct Group {
    /// Which of `port_groups` a packet uses, by its server port (`ports::key_port`).
    port_map: ports::PortMap,
    port_groups: Vec<PortPrefilter>,
    always: PortIndexed,
    /// App-layer rules without a usable fast pattern, checked whenever a `BufferSource` is given.
    app_always: Vec<u32>,
    /// One prefilter per app buffer over the fast patterns of the app-layer rules that take
    /// their fast pattern from it: each buffer is scanned once per transaction inspection.
    app_mpm: Vec<AppPrefilter>,
}

/// The packet and stream prefilter of one port group.
struct PortPrefilter {
    mpm: Arc<dyn MultiPatternMatcher>,
    /// The fast patterns of the rules that inspect packets only (`dsize`, `no_stream`,
    /// `tcp-pkt`): a payload that already went into the TCP stream is scanned with this one,
    /// since the other rules see those bytes in the reassembled stream (Suricata does the same).
    mpm_packet_only: Arc<dyn MultiPatternMatcher>,
    /// Where prefilter profiling counts this group's scans.
    profile: profile::PortSlots,
}

/// The prefilter of one app buffer as some rules transform it (most have no transforms); of
/// several buffers when they may be the same bytes ([`SHARED_BYTES_BUFFERS`]).
struct AppPrefilter {
    buffers: Vec<Buffer>,
    transforms: Vec<TransformStep>,
    mpm: Arc<dyn MultiPatternMatcher>,
    /// Where prefilter profiling counts this prefilter's scans.
    profile: u32,
}

/// Rules without a fast pattern, indexed by the ports they need: most name one or a few
/// server ports (`-> $HOME_NET 22 (flags:S; threshold...)`), so a packet only looks at the
/// rules its ports can satisfy instead of all of them.
#[derive(Default)]
struct PortIndexed {
    any_port: Vec<u32>,
    by_dst_port: std::collections::HashMap<u16, Vec<u32>>,
    by_src_port: std::collections::HashMap<u16, Vec<u32>>,
}

/// A side with more ports than this is not indexed (its rule is looked at for every packet).
const PORT_INDEX_MAX_PORTS: u32 = 64;

impl PortIndexed {
    fn insert(&mut self, idx: u32, rule: &CompiledRule) {
        let few = |p: &crate::detect::rule::PortSet| -> Option<Vec<u16>> {
            let ranges = p.ranges.as_slice();
            let count: u32 = ranges.iter().map(|&(lo, hi)| u32::from(hi) - u32::from(lo) + 1).sum();
            (count <= PORT_INDEX_MAX_PORTS).then(|| ranges.iter().flat_map(|&(lo, hi)| lo..=hi).collect())
        };
        // A bidirectional rule may match with the sides swapped: keep it simple.
        if rule.ports_any || rule.bidirectional {
            self.any_port.push(idx);
        } else if let Some(ports) = few(&rule.dst_ports) {
            for port in ports {
                self.by_dst_port.entry(port).or_default().push(idx);
            }
        } else if let Some(ports) = few(&rule.src_ports) {
            for port in ports {
                self.by_src_port.entry(port).or_default().push(idx);
            }
        } else {
            self.any_port.push(idx);
        }
    }

    /// The rules whose port requirements this packet may meet (each once).
    fn for_packet(&self, facts: &PacketFacts, mut f: impl FnMut(u32)) {
        self.any_port.iter().for_each(|&id| f(id));
        // Rules with ports never match a packet without them (header_matches).
        if facts.has_ports {
            for map_hit in [self.by_dst_port.get(&facts.dp), self.by_src_port.get(&facts.sp)].into_iter().flatten() {
                map_hit.iter().for_each(|&id| f(id));
            }
        }
    }
}

/// Index of IP-only rules by the IPv4 addresses of their most selective side.
#[derive(Default)]
struct V4Index {
    /// Sorted segment starts; segment i covers [starts[i], starts[i+1]).
    starts: Vec<u32>,
    /// Per /16 network `n` (`addr >> 16`, and one past the last), how many starts lie below
    /// it: a lookup searches only the starts of its address's /16. A search over all of
    /// them (tens of thousands with ET Open's address lists) missed the cache on most of
    /// its steps.
    below_net: Vec<u32>,
    spans: Vec<(u32, u32)>,
    rules: Vec<u32>,
}

/// Networks of the [`V4Index`] lookup table: one per 16-bit prefix.
const V4_NETS: usize = 1 << 16;

impl V4Index {
    fn build(entries: &[(u32, Vec<(u32, u32)>)]) -> V4Index {
        let mut points = vec![0u32];
        for (_, ranges) in entries {
            for &(lo, hi) in ranges {
                points.push(lo);
                if let Some(after) = hi.checked_add(1) {
                    points.push(after);
                }
            }
        }
        points.sort_unstable();
        points.dedup();
        let mut per_segment: Vec<Vec<u32>> = vec![Vec::new(); points.len()];
        for (rule, ranges) in entries {
            for &(lo, hi) in ranges {
                let first = points.partition_point(|&p| p < lo);
                let last = points.partition_point(|&p| p <= hi);
                for seg in per_segment.iter_mut().take(last).skip(first) {
                    if seg.last() != Some(rule) {
                        seg.push(*rule);
                    }
                }
            }
        }
        let below_net =
            (0..=V4_NETS as u64).map(|n| points.partition_point(|&p| u64::from(p) < n << 16) as u32).collect();
        let mut idx = V4Index { starts: points, below_net, ..Default::default() };
        for seg in per_segment {
            idx.spans.push((idx.rules.len() as u32, seg.len() as u32));
            idx.rules.extend(seg);
        }
        idx
    }

    fn lookup(&self, addr: u32) -> &[u32] {
        let net = (addr >> 16) as usize;
        let (Some(&lo), Some(&hi)) = (self.below_net.get(net), self.below_net.get(net + 1)) else { return &[] };
        let (lo, hi) = (lo as usize, hi as usize);
        // Starts below `lo` are below the address's /16, those from `hi` above it.
        let i = lo + self.starts.get(lo..hi).map_or(0, |net_starts| net_starts.partition_point(|&p| p <= addr));
        let Some(&(start, len)) = i.checked_sub(1).and_then(|i| self.spans.get(i)) else { return &[] };
        self.rules.get(start as usize..(start + len) as usize).unwrap_or(&[])
    }
}

/// Sides whose address sets cover more than this many IPv4 addresses are not indexed.
const IP_INDEX_MAX_ADDRESSES: u64 = 1 << 24;

struct IpOnly {
    by_src: V4Index,
    by_dst: V4Index,
    /// Rules checked on every IPv4 packet (broad on both sides).
    v4_linear: Vec<u32>,
    /// All IP-only rules that can match IPv6.
    v6_linear: Vec<u32>,
}

pub struct DetectEngine {
    /// In Suricata's internal order (action, flowbits use, priority, load order).
    rules: Vec<CompiledRule>,
    /// [transport][direction: to_server, to_client]
    groups: Vec<[Group; 2]>,
    ip_only: IpOnly,
    packet_alert_max: usize,
    /// `detect.inspection-recursion-limit` (u32::MAX: none).
    step_limit: u32,
    report_memory: usize,
    /// Some rule is transactional (`=>`): callers then supply `buffers_other`.
    has_transactional: bool,
    /// Host-, pair- and rule-tracked thresholds and xbits, shared by all workers like
    /// Suricata's host and ip-pair tables (a host's flows are spread over workers).
    /// An `Arc` so that a reloaded engine takes over the running one's tables (`carry.rs`).
    shared: Arc<SharedState>,
    /// xbit interned id -> the name key the shared tables use.
    xbit_keys: Vec<u64>,
    /// Whether a worker context already reports the shared tables' counters.
    shared_reporter: AtomicBool,
    /// Flowbit, flowint and xbit names by interned id: for logging the bits a flow has set,
    /// and for carrying state over to a reloaded engine (ids are per engine).
    names: carry::NameTables,
    /// Names of the prefilter scan sites (see `profile.rs`), by slot.
    prefilter_labels: Vec<String>,
    /// `profiling.prefilter.enabled`.
    profile_prefilter: bool,
}

/// Compiles each distinct pattern set once with `builder` (whose `build_all` may spread them
/// over cores). Identical sets (a group's two directions often hold the same rules) share one
/// matcher.
fn build_matchers(
    builder: &dyn MatcherBuilder,
    sets: &[Vec<Pattern>],
) -> Result<Vec<Arc<dyn MultiPatternMatcher>>, String> {
    use std::collections::HashMap;
    let mut first_of: HashMap<&[Pattern], usize> = HashMap::new();
    let mut distinct: Vec<&[Pattern]> = Vec::new();
    let owner: Vec<usize> = sets
        .iter()
        .map(|set| {
            *first_of.entry(set.as_slice()).or_insert_with(|| {
                distinct.push(set.as_slice());
                distinct.len() - 1
            })
        })
        .collect();
    let built: Vec<Arc<dyn MultiPatternMatcher>> = builder
        .build_all(&distinct)
        .into_iter()
        .map(|result| result.map(Arc::from).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    owner
        .iter()
        .map(|&o| built.get(o).cloned().ok_or_else(|| "pattern compilation returned too few matchers".to_string()))
        .collect()
}

/// Suricata's `action-order`: the order in which matching rules are applied to a packet,
/// by action class. A `pass` that comes first ends the packet's rules; one placed after
/// `drop` lets a drop win. The default is pass, drop, reject, alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionOrder {
    /// Position of each class: [pass, drop, reject, alert].
    ranks: [u8; 4],
}

impl ActionOrder {
    pub const CLASSES: [&'static str; 4] = ["pass", "drop", "reject", "alert"];

    /// From the YAML list: each of pass, drop, reject and alert exactly once.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<ActionOrder, String> {
        let mut ranks = [u8::MAX; 4];
        for (pos, name) in names.iter().enumerate() {
            let name = name.as_ref().trim();
            let class = Self::CLASSES
                .iter()
                .position(|c| c.eq_ignore_ascii_case(name))
                .ok_or_else(|| format!("action-order: unknown action {name:?} (use pass, drop, reject, alert)"))?;
            if ranks[class] != u8::MAX {
                return Err(format!("action-order: {name} is listed twice"));
            }
            ranks[class] = pos as u8;
        }
        if ranks.contains(&u8::MAX) {
            return Err("action-order: list each of pass, drop, reject and alert once".into());
        }
        Ok(ActionOrder { ranks })
    }

    fn rank(&self, a: Action) -> u8 {
        let class = match a {
            Action::Pass => 0,
            Action::Drop => 1,
            Action::Reject | Action::RejectSrc | Action::RejectDst | Action::RejectBoth => 2,
            Action::Alert => 3,
        };
        self.ranks[class]
    }
}

impl Default for ActionOrder {
    fn default() -> Self {
        ActionOrder { ranks: [0, 1, 2, 3] }
    }
}

fn transports_of(p: ProtoMatch) -> &'static [usize] {
    match p {
        ProtoMatch::Any | ProtoMatch::Ipv4 | ProtoMatch::Ipv6 => &[T_TCP, T_UDP, T_ICMP4, T_ICMP6, T_OTHER],
        ProtoMatch::Tcp => &[T_TCP],
        ProtoMatch::Udp => &[T_UDP],
        ProtoMatch::Icmp => &[T_ICMP4, T_ICMP6],
        ProtoMatch::Icmpv4 => &[T_ICMP4],
        ProtoMatch::Icmpv6 => &[T_ICMP6],
        ProtoMatch::Sctp => &[T_OTHER],
        ProtoMatch::TcpOrUdp => &[T_TCP, T_UDP],
    }
}

/// The transport group of packets whose IP protocol (the five-tuple's) is `proto`.
fn transport_of(proto: u8) -> usize {
    match proto {
        6 => T_TCP,
        17 => T_UDP,
        1 => T_ICMP4,
        58 => T_ICMP6,
        _ => T_OTHER,
    }
}

/// The transport groups rule `r` is placed in: those of its protocol, narrowed to one by an
/// `ip_proto` equality. (`alert ip ... ip_proto:41` is otherwise a candidate on every TCP,
/// UDP and ICMP packet, where the check can only fail: ET Open's sid 2012141 was evaluated on
/// every packet of the reference capture.)
fn rule_transports(r: &CompiledRule) -> &'static [usize] {
    const ONE: [[usize; 1]; 5] = [[T_TCP], [T_UDP], [T_ICMP4], [T_ICMP6], [T_OTHER]];
    let all = transports_of(r.proto);
    let exact = r.packet_checks.iter().find_map(|c| match c {
        PacketCheck::IpProto(crate::detect::rule::UintCmp::Eq(p)) => Some(transport_of(*p)),
        _ => None,
    });
    match exact {
        Some(t) if all.contains(&t) => &ONE[t],
        Some(_) => &[],
        None => all,
    }
}

fn v4_count(ranges: &[(u32, u32)]) -> u64 {
    ranges.iter().map(|&(lo, hi)| (hi - lo) as u64 + 1).sum()
}

fn entry_applies(gen_id: u32, sig_id: u32, rule: &CompiledRule) -> bool {
    (gen_id == 0 || gen_id == rule.gid) && (sig_id == 0 || sig_id == rule.sid)
}

/// Packet facts computed once per inspection.
struct PacketFacts {
    transport: usize,
    dir: usize,
    proto: u8,
    is_v4: bool,
    src4: u32,
    dst4: u32,
    src6: u128,
    dst6: u128,
    has_ports: bool,
    sp: u16,
    dp: u16,
}

/// Compiles rules one at a time, as they come (a rule reload streams them from the parser,
/// so the parsed form of a large rule set is never held whole), then builds the engine.
/// A rule the engine cannot run is reported and left out.
pub struct EngineBuilder<'c> {
    cfg: &'c DetectConfig,
    names: compile::Names,
    /// By load slot; `None`: rejected.
    compiled: Vec<Option<CompiledRule>>,
    report: BuildReport,
    started: std::time::Instant,
    /// What eve logs of each rule of the running engine: a reload shares it for rules that
    /// did not change instead of holding a second copy (rule text and metadata are a large
    /// part of an engine). Keyed by the whole value, metadata and text: without rule texts
    /// ([`DetectConfig::keep_rule_text`]) two rules are told apart by their metadata.
    previous: std::collections::HashMap<&'c RuleLog, &'c Arc<RuleLog>>,
}

impl<'c> EngineBuilder<'c> {
    pub fn new(cfg: &'c DetectConfig) -> Self {
        EngineBuilder {
            cfg,
            names: compile::Names::default(),
            compiled: Vec::new(),
            report: BuildReport::default(),
            started: std::time::Instant::now(),
            previous: Default::default(),
        }
    }

    /// A builder for the engine that replaces `running` (a rule reload): unchanged rules
    /// share their logged text and metadata with it.
    pub fn replacing(cfg: &'c DetectConfig, running: &'c DetectEngine) -> Self {
        let mut builder = Self::new(cfg);
        builder.previous = running.rules.iter().map(|r| (&*r.rule_log, &r.rule_log)).collect();
        builder
    }

    /// Room for `rules` more rules (the lines of the next rules file): the slots otherwise
    /// grow by doubling, each time copying every compiled rule so far, and may end with
    /// twice the room the rules need.
    pub fn reserve(&mut self, rules: usize) {
        self.compiled.reserve_exact(rules);
    }

    /// Compiles `rule` into load slot `slot` (a slot given again is a duplicate sid whose
    /// later revision replaces the rule there: `RuleSetLoad::record`).
    pub fn add(&mut self, slot: usize, mut rule: Rule) {
        if slot >= self.compiled.len() {
            self.compiled.resize_with(slot + 1, || None);
        } else {
            // A replacement: what was reported of the rule it replaces no longer holds.
            let sid = rule.sid;
            self.report.rules_rejected.retain(|(s, _)| *s != sid);
        }
        let text = if self.cfg.keep_rule_text { std::mem::take(&mut rule.text) } else { String::new() };
        self.compiled[slot] =
            match compile::compile_rule(&rule, text, &self.cfg.classification, &self.cfg.limits, &mut self.names) {
                Ok(mut c) => {
                    if let Some(&shared) = self.previous.get(&*c.rule_log) {
                        c.rule_log = Arc::clone(shared);
                    }
                    Some(c)
                }
                Err(reason) => {
                    self.report.rules_rejected.push((rule.sid, reason));
                    None
                }
            };
    }

    pub fn finish(self) -> Result<(DetectEngine, BuildReport), String> {
        let compiled: Vec<(usize, CompiledRule)> =
            self.compiled.into_iter().enumerate().filter_map(|(load, c)| c.map(|c| (load, c))).collect();
        DetectEngine::build_compiled(
            compiled,
            carry::NameTables::from_names(self.names),
            self.cfg,
            self.report,
            self.started,
        )
    }
}

/// threshold.config: suppress adds to the rule; threshold/event_filter/rate_filter for a sid
/// replaces the rule's own threshold/detection_filter; sid 0 applies to rules without one.
fn apply_threshold_config(compiled: &mut [(usize, CompiledRule)], config: &ThresholdConfig, _report: &mut BuildReport) {
    for (_, rule) in compiled.iter_mut() {
        let mut specific = None;
        let mut global = None;
        for entry in &config.entries {
            let (sig_id, limit) = match entry {
                ThresholdEntry::Suppress { gen_id, sig_id, track, ip } if entry_applies(*gen_id, *sig_id, rule) => {
                    rule.suppressions.push(Suppression { track: *track, ip: ip.clone() });
                    continue;
                }
                ThresholdEntry::Threshold { gen_id, sig_id, threshold } if entry_applies(*gen_id, *sig_id, rule) => {
                    (*sig_id, AlertLimit::Threshold(*threshold))
                }
                ThresholdEntry::RateFilter { gen_id, sig_id, track, count, seconds, new_action, timeout }
                    if entry_applies(*gen_id, *sig_id, rule) =>
                {
                    let (track, count, seconds, new_action, timeout) =
                        (*track, *count, *seconds, *new_action, *timeout);
                    (*sig_id, AlertLimit::RateFilter(RateFilter { track, count, seconds, new_action, timeout }))
                }
                _ => continue,
            };
            if sig_id == 0 {
                global = Some(limit);
            } else {
                specific = Some(limit);
            }
        }
        if let Some(limit) = specific {
            rule.limit = Some(limit);
        } else if let (Some(limit), None) = (global, &rule.limit) {
            rule.limit = Some(limit);
        }
    }
}

/// A packet/stream fast pattern of a group, before the group is split by port.
struct PrefilterEntry {
    pattern: Pattern,
    /// The rule inspects packets only (see [`PortPrefilter::mpm_packet_only`]).
    packet_only: bool,
    /// The ports the rule needs on the side the group is keyed by; `None`: any.
    ports: Option<Vec<(u16, u16)>>,
}

/// App-layer fast patterns of one group: buffer class and transforms (as a key) -> (the
/// buffers of the class some rule uses, transforms, patterns).
type AppPatterns = BTreeMap<String, (Vec<Buffer>, Vec<Transform>, Vec<Pattern>)>;

/// Where a group's pattern sets are in the list of all sets.
struct GroupSets {
    port_map: ports::PortMap,
    /// (all, packet-only) set of each port group.
    port_groups: Vec<(usize, usize)>,
    app: Vec<(Vec<Buffer>, Vec<Transform>, usize)>,
}

/// Where each rule goes: the prefilter patterns and always-checked rules of every
/// [transport][direction] group, and the IP-only index.
struct GroupPlan {
    patterns: Vec<[Vec<PrefilterEntry>; 2]>,
    port_limits: PortGroupLimits,
    always: Vec<[PortIndexed; 2]>,
    app_always: Vec<[Vec<u32>; 2]>,
    app_patterns: Vec<[AppPatterns; 2]>,
    ip_entries_src: Vec<(u32, Vec<(u32, u32)>)>,
    ip_entries_dst: Vec<(u32, Vec<(u32, u32)>)>,
    v4_linear: Vec<u32>,
    v6_linear: Vec<u32>,
}

impl GroupPlan {
    fn new(port_limits: PortGroupLimits) -> Self {
        GroupPlan {
            patterns: (0..TRANSPORTS).map(|_| [Vec::new(), Vec::new()]).collect(),
            port_limits,
            always: (0..TRANSPORTS).map(|_| Default::default()).collect(),
            app_always: (0..TRANSPORTS).map(|_| [Vec::new(), Vec::new()]).collect(),
            app_patterns: (0..TRANSPORTS).map(|_| [BTreeMap::new(), BTreeMap::new()]).collect(),
            ip_entries_src: Vec::new(),
            ip_entries_dst: Vec::new(),
            v4_linear: Vec::new(),
            v6_linear: Vec::new(),
        }
    }

    /// Places rule `idx` (its index in the engine's rule order).
    fn add(&mut self, idx: u32, rule: &CompiledRule, report: &mut BuildReport) {
        if let Some(reason) = rule.never_matches {
            *report.rules_inactive.entry(reason.to_string()).or_default() += 1;
            return;
        }
        if rule.ip_only {
            report.rules_ip_only += 1;
            self.add_ip_only(idx, rule);
            return;
        }
        if let Some(app) = rule.app_buffers.iter().find(|a| !buffer_has_source(a.buffer)) {
            *report.rules_inactive.entry(format!("app-layer buffer {}", app.buffer.name)).or_default() += 1;
        }
        let prefiltered =
            if rule.inspects_app_layer() { rule.app_fast_pattern.is_some() } else { rule.fast_pattern.is_some() };
        if !prefiltered {
            report.rules_always_checked += 1;
        }
        self.add_to_groups(idx, rule);
    }

    /// An IP-only rule goes to the IPv4 index of its more selective side, or to the lists
    /// checked on every packet.
    fn add_ip_only(&mut self, idx: u32, rule: &CompiledRule) {
        if !rule.src.v6.is_empty() && !rule.dst.v6.is_empty() {
            self.v6_linear.push(idx);
        }
        let (src, dst) = (rule.src.v4.as_slice(), rule.dst.v4.as_slice());
        if src.is_empty() || dst.is_empty() {
            return;
        }
        let (ns, nd) = (v4_count(src), v4_count(dst));
        let (side_is_src, ranges, n) = if ns <= nd { (true, src, ns) } else { (false, dst, nd) };
        if n > IP_INDEX_MAX_ADDRESSES {
            self.v4_linear.push(idx);
        } else if rule.bidirectional {
            self.ip_entries_src.push((idx, ranges.to_vec()));
            self.ip_entries_dst.push((idx, ranges.to_vec()));
        } else if side_is_src {
            self.ip_entries_src.push((idx, ranges.to_vec()));
        } else {
            self.ip_entries_dst.push((idx, ranges.to_vec()));
        }
    }

    /// Adds the rule to the groups of its transports and flow directions: its fast pattern to
    /// their prefilters, or the rule to the lists checked without one.
    fn add_to_groups(&mut self, idx: u32, rule: &CompiledRule) {
        let dirs: &[usize] = match rule.flow {
            _ if rule.transactional => &[1],
            Some(f) if f.to_server && !f.to_client => &[0],
            Some(f) if f.to_client && !f.to_server => &[1],
            _ => &[0, 1],
        };
        for &t in rule_transports(rule) {
            for &d in dirs {
                if rule.inspects_app_layer() {
                    // Application layers run over TCP and UDP only.
                    if t != T_TCP && t != T_UDP {
                        continue;
                    }
                    match &rule.app_fast_pattern {
                        Some(fp) => {
                            let (buffers, _, patterns) = self.app_patterns[t][d]
                                .entry(format!("{}{:?}", prefilter_class(fp.buffer), fp.transforms))
                                .or_insert_with(|| (Vec::new(), fp.transforms.clone(), Vec::new()));
                            if !buffers.contains(&fp.buffer) {
                                buffers.push(fp.buffer);
                            }
                            patterns.push(Pattern::new(idx, fp.bytes.clone(), fp.nocase));
                        }
                        None => self.app_always[t][d].push(idx),
                    }
                } else if let Some((bytes, nocase)) = &rule.fast_pattern {
                    // TCP and UDP rules are grouped by the server port their direction is
                    // looked up by; rules that may match with the sides swapped join every group.
                    let side = if d == 0 { &rule.dst_ports } else { &rule.src_ports };
                    let grouped = (t == T_TCP || t == T_UDP)
                        && !(rule.ports_any || rule.bidirectional || rule.transactional || side.is_any());
                    self.patterns[t][d].push(PrefilterEntry {
                        pattern: Pattern::new(idx, bytes.clone(), *nocase),
                        packet_only: rule.require_packet,
                        ports: grouped.then(|| side.ranges.as_slice().to_vec()),
                    });
                } else {
                    self.always[t][d].insert(idx, rule);
                }
            }
        }
    }

    /// Every pattern set of every group, in one list (so that they compile together), and
    /// where each group's sets are in it.
    fn take_pattern_sets(&mut self) -> (Vec<Vec<Pattern>>, Vec<[GroupSets; 2]>) {
        let mut sets: Vec<Vec<Pattern>> = Vec::new();
        let mut layout = Vec::with_capacity(TRANSPORTS);
        for t in 0..TRANSPORTS {
            let mut per_dir = |d: usize| {
                let mut add = |set: Vec<Pattern>| {
                    sets.push(set);
                    sets.len() - 1
                };
                let entries = std::mem::take(&mut self.patterns[t][d]);
                let keys: Vec<Option<&[(u16, u16)]>> = entries.iter().map(|e| e.ports.as_deref()).collect();
                let plan = ports::plan(&keys, self.port_limits.of_dir(d));
                let port_groups = plan
                    .members
                    .iter()
                    .map(|members| {
                        let of = |packet_only: bool| -> Vec<Pattern> {
                            let chosen = members.iter().filter_map(|&i| entries.get(i));
                            chosen.filter(|e| e.packet_only || !packet_only).map(|e| e.pattern.clone()).collect()
                        };
                        (add(of(false)), add(of(true)))
                    })
                    .collect();
                let app = std::mem::take(&mut self.app_patterns[t][d])
                    .into_values()
                    .map(|(buffers, transforms, set)| (buffers, transforms, add(set)))
                    .collect();
                GroupSets { port_map: plan.map, port_groups, app }
            };
            layout.push([per_dir(0), per_dir(1)]);
        }
        (sets, layout)
    }

    /// The groups, from the compiled pattern sets; and the IP-only index.
    fn finish(
        mut self,
        layout: Vec<[GroupSets; 2]>,
        matchers: &[Arc<dyn MultiPatternMatcher>],
    ) -> Result<(Vec<[Group; 2]>, IpOnly), String> {
        let mut groups = Vec::with_capacity(TRANSPORTS);
        for (t, [d0, d1]) in layout.into_iter().enumerate() {
            groups.push([self.group(t, 0, d0, matchers)?, self.group(t, 1, d1, matchers)?]);
        }
        let ip_only = IpOnly {
            by_src: V4Index::build(&self.ip_entries_src),
            by_dst: V4Index::build(&self.ip_entries_dst),
            v4_linear: self.v4_linear,
            v6_linear: self.v6_linear,
        };
        Ok((groups, ip_only))
    }

    fn group(
        &mut self,
        t: usize,
        d: usize,
        sets: GroupSets,
        matchers: &[Arc<dyn MultiPatternMatcher>],
    ) -> Result<Group, String> {
        let mut app_mpm = Vec::with_capacity(sets.app.len());
        for (buffers, transforms, i) in sets.app {
            let transforms = transforms.into_iter().map(TransformStep::new).collect::<Result<Vec<_>, String>>()?;
            app_mpm.push(AppPrefilter { buffers, transforms, mpm: matchers[i].clone(), profile: 0 });
        }
        let port_groups = sets
            .port_groups
            .iter()
            .map(|&(all, packet_only)| PortPrefilter {
                mpm: matchers[all].clone(),
                mpm_packet_only: matchers[packet_only].clone(),
                profile: profile::PortSlots::default(),
            })
            .collect();
        Ok(Group {
            port_map: sets.port_map,
            port_groups,
            always: std::mem::take(&mut self.always[t][d]),
            app_always: std::mem::take(&mut self.app_always[t][d]),
            app_mpm,
        })
    }
}

/// Memory of the distinct matchers (identical sets share one).
fn matchers_memory(matchers: &[Arc<dyn MultiPatternMatcher>]) -> usize {
    let mut memory = 0usize;
    let mut seen_matchers = std::collections::HashSet::new();
    for m in matchers {
        if seen_matchers.insert(Arc::as_ptr(m) as *const u8 as usize) {
            memory += m.memory_bytes();
        }
    }
    memory
}

/// Estimated memory of the compiled rules and the IP-only index.
fn rules_memory(rules: &[CompiledRule], ip_only: &IpOnly) -> usize {
    let mut memory = std::mem::size_of_val(rules);
    memory += rules
        .iter()
        .map(|r| {
            (r.src.v4.as_slice().len() + r.dst.v4.as_slice().len()) * 8
                + (r.src.v6.as_slice().len() + r.dst.v6.as_slice().len()) * 32
        })
        .sum::<usize>();
    memory += (ip_only.by_src.rules.len() + ip_only.by_dst.rules.len()) * 4
        + (ip_only.by_src.starts.len() + ip_only.by_dst.starts.len()) * 12
        + (ip_only.by_src.below_net.len() + ip_only.by_dst.below_net.len()) * 4;
    memory
}

impl DetectEngine {
    pub fn build(rules: Vec<Rule>, cfg: &DetectConfig) -> Result<(DetectEngine, BuildReport), String> {
        let mut builder = EngineBuilder::new(cfg);
        // Each parsed rule is freed as soon as it is compiled.
        for (slot, rule) in rules.into_iter().enumerate() {
            builder.add(slot, rule);
        }
        builder.finish()
    }

    fn build_compiled(
        mut compiled: Vec<(usize, CompiledRule)>,
        names: carry::NameTables,
        cfg: &DetectConfig,
        mut report: BuildReport,
        started: std::time::Instant,
    ) -> Result<(DetectEngine, BuildReport), String> {
        apply_threshold_config(&mut compiled, &cfg.thresholds, &mut report);
        // By cached keys: a compiled rule is large, and a comparison sort moved each rule about
        // log n times (ET Open: 74 M instructions, 3.5% of a warm start); this moves each once.
        compiled.sort_by_cached_key(|(load, r)| (cfg.action_order.rank(r.action), r.bits_use, r.priority, *load));
        let mut rules: Vec<CompiledRule> = compiled.into_iter().map(|(_, r)| r).collect();
        // Room was made for every rule line of the files (`EngineBuilder::reserve`), also for
        // the rules that failed, were skipped or were replaced by a later revision.
        rules.shrink_to_fit();
        let has_transactional = rules.iter().any(|r| r.transactional);
        report.rules_loaded = rules.len();

        let mut plan = GroupPlan::new(cfg.port_groups);
        for (idx, rule) in rules.iter().enumerate() {
            plan.add(idx as u32, rule, &mut report);
        }
        report.prefilter_patterns = rules
            .iter()
            .filter(|r| {
                (r.fast_pattern.is_some() || r.app_fast_pattern.is_some()) && r.never_matches.is_none() && !r.ip_only
            })
            .count();
        // Every pattern set of every group, compiled on all cores, each distinct set once.
        let (mut sets, layout) = plan.take_pattern_sets();
        report.prefilter_patterns_folded = sets.iter_mut().map(|set| cover::fold_covered(set)).sum();
        let matchers = build_matchers(cfg.matchers.as_ref(), &sets)?;
        let algo_used = cfg.matchers.algo();
        let mut fallback: Vec<u32> = matchers
            .iter()
            .flat_map(|m| m.fallback_pattern_ids().iter())
            .filter_map(|&idx| rules.get(idx as usize).map(|r| r.sid))
            .collect();
        fallback.sort_unstable();
        fallback.dedup();
        report.prefilter_fallback_sids = fallback;
        let (mut groups, ip_only) = plan.finish(layout, &matchers)?;
        let prefilter_labels = profile::label_slots(&mut groups);
        report.prefilter_port_groups =
            groups[T_TCP].iter().chain(&groups[T_UDP]).map(|g: &Group| g.port_groups.len()).sum();
        let port_maps: usize = groups.iter().flatten().map(|g| g.port_map.memory_bytes()).sum();
        let memory = matchers_memory(&matchers) + rules_memory(&rules, &ip_only) + port_maps;
        report.mpm_algo = algo_used.to_string();
        report.memory_bytes = memory;
        report.build_micros = started.elapsed().as_micros() as u64;
        let packet_alert_max = if cfg.packet_alert_max == 0 { 15 } else { cfg.packet_alert_max as usize };
        Ok((
            DetectEngine {
                rules,
                groups,
                ip_only,
                packet_alert_max,
                step_limit: match cfg.limits.inspection_recursion_limit {
                    0 => u32::MAX,
                    n => n,
                },
                report_memory: memory,
                has_transactional,
                shared: Arc::new(SharedState::new(cfg.host, cfg.ippair)),
                xbit_keys: names.xbits.iter().map(|n| state::xbit_name_key(n)).collect(),
                shared_reporter: AtomicBool::new(false),
                names,
                prefilter_labels,
                profile_prefilter: cfg.profile_prefilter,
            },
            report,
        ))
    }

    /// Whether some rule inspects the app-layer buffer `name` (Suricata computes JA3 only
    /// when rules use it or the configuration asks for it).
    pub fn uses_buffer(&self, name: &str) -> bool {
        self.rules.iter().any(|r| r.app_buffers.iter().any(|b| b.buffer.name == name))
    }

    /// Whether some rule is transactional (`=>`) and needs both directions' buffers.
    pub fn has_transactional_rules(&self) -> bool {
        self.has_transactional
    }

    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Whether the rules kept their text ([`DetectConfig::keep_rule_text`]).
    pub fn keeps_rule_text(&self) -> bool {
        self.rules.iter().any(|r| !r.rule_log.text.is_empty())
    }

    /// Whether workers' contexts profile their prefilter scans
    /// ([`DetectConfig::profile_prefilter`]).
    pub fn profiles_prefilter(&self) -> bool {
        self.profile_prefilter
    }

    /// JIT-compiles every rule's pcre that is not compiled yet and returns how many were.
    /// A pcre is otherwise JIT-compiled the first time a packet reaches it (start-up stays
    /// short); a reload calls this before the new engine goes live, so that no packet of
    /// the new rules waits for a JIT build.
    pub fn jit_compile_pcre(&self) -> usize {
        let programs = self.rules.iter().flat_map(|r| r.payload.iter().chain(r.app_buffers.iter().map(|b| &b.program)));
        let mut compiled = 0;
        for program in programs {
            for step in &program.steps {
                if let program::PayloadOp::Pcre(p) = &step.op {
                    compiled += usize::from(p.regex.compile_jit());
                }
            }
        }
        compiled
    }

    /// Heap bytes of the compiled engine (approximate).
    pub fn memory_bytes(&self) -> usize {
        self.report_memory
    }

    pub fn new_ctx(&self) -> DetectCtx {
        let mut ctx = DetectCtx {
            seen: vec![0; self.rules.len()],
            reports_shared: !self.shared_reporter.swap(true, Ordering::Relaxed),
            ..Default::default()
        };
        if self.profile_prefilter {
            ctx.prefilter_counts = vec![profile::SlotCounts::default(); self.prefilter_labels.len()];
        }
        for pair in &self.groups {
            for g in pair {
                // Sizing errors surface again (and are counted) on the first scan.
                for p in &g.port_groups {
                    let _ = p.mpm.prepare_scratch(&mut ctx.scratch);
                    let _ = p.mpm_packet_only.prepare_scratch(&mut ctx.scratch);
                }
                for m in g.app_mpm.iter().map(|p| &p.mpm) {
                    let _ = m.prepare_scratch(&mut ctx.scratch);
                }
            }
        }
        ctx.candidates.reserve(1024);
        ctx.matches.reserve(64);
        ctx
    }

    /// Runs every applicable rule on `pkt`; alerts are appended to `alerts`.
    /// The last `entropy` value per buffer on `flow`, with Suricata's buffer names
    /// (`file.data` → `file_data`; the payload / stream is `content`).
    pub fn entropy_values<'a>(&self, flow: &'a DetectFlow) -> impl Iterator<Item = (&'static str, f64)> + 'a {
        flow.vars.entropy.iter().map(|&(buffer, value)| (buffer.map_or("content", |b| b.name), value))
    }

    /// Names of the flowbits set on `flow`, in id order.
    pub fn flowbits_set<'a>(&'a self, flow: &'a DetectFlow) -> impl Iterator<Item = &'a str> + 'a {
        flow.vars.bits.iter().filter_map(|&id| self.names.flowbits.get(id as usize).map(String::as_str))
    }

    pub fn inspect(
        &self,
        ctx: &mut DetectCtx,
        pkt: &DetectPacket<'_>,
        mut flow: Option<&mut DetectFlow>,
        alerts: &mut Vec<Alert>,
    ) {
        ctx.counters.packets += 1;
        if flow.as_ref().is_some_and(|f| f.passed) {
            return;
        }
        if let Some(d) = pkt.decoded {
            if d.ip.is_none() {
                return;
            }
        }
        let facts = packet_facts(pkt);
        if ctx.seen.len() != self.rules.len() {
            ctx.seen = vec![0; self.rules.len()];
        }
        ctx.stamp = ctx.stamp.wrapping_add(1);
        if ctx.stamp == 0 {
            ctx.seen.iter_mut().for_each(|s| *s = 0);
            ctx.stamp = 1;
        }
        let stamp = ctx.stamp;
        ctx.candidates.clear();
        ctx.matches.clear();
        if !pkt.repeat {
            ctx.packet_matched.clear();
        }

        // IP-only rules: once per flow direction.
        let ip_only_due = match flow.as_deref() {
            Some(f) => pkt.decoded.is_some() && !f.ip_only_done[facts.dir],
            None => pkt.decoded.is_some(),
        };
        if ip_only_due {
            if let Some(f) = flow.as_deref_mut() {
                f.ip_only_done[facts.dir] = true;
            }
            self.add_ip_only_candidates(ctx, &facts, stamp);
        }
        self.add_prefilter_candidates(ctx, pkt, &facts, stamp);
        ctx.candidates.sort_unstable();
        ctx.counters.candidates += ctx.candidates.len() as u64;

        let (sp, dp) = if facts.has_ports { (facts.sp, facts.dp) } else { (0, 0) };
        let hosts =
            Hosts { src: pkt.tuple.src, dst: pkt.tuple.dst, flow_id: pkt.flow.map(|f| f.flow_id).unwrap_or(0), sp, dp };
        let now = pkt.ts.0;
        for i in 0..ctx.candidates.len() {
            let idx = ctx.candidates[i];
            let Some(rule) = self.rules.get(idx as usize) else { continue };
            if pkt.repeat && (rule.payload.is_none() || ctx.packet_matched.contains(&idx)) {
                continue;
            }
            let evaluated = self.evaluate(ctx, rule, pkt, &facts, flow.as_deref_mut(), &hosts, now);
            // Suricata keeps every entropy value computed, matching or not, as a flow variable.
            if let (false, Some(f)) = (ctx.entropy.is_empty(), flow.as_deref_mut()) {
                for &(buffer, value) in &ctx.entropy {
                    f.vars.set_entropy(buffer, value);
                }
            }
            let Some(in_stream) = evaluated else {
                continue;
            };
            if pkt.repeat && !in_stream {
                continue;
            }
            if pkt.stream.is_some() {
                ctx.packet_matched.push(idx);
            }
            ctx.counters.rules_matched += 1;
            for action in &rule.state_actions {
                let vars = flow.as_deref_mut().map(|f| &mut f.vars);
                state::apply(action, vars, &self.shared, &self.xbit_keys, &hosts, now);
            }
            ctx.matches.push((idx, in_stream));
        }
        self.finalize(ctx, &hosts, now, flow, alerts);
    }

    /// The IP-only rules for the packet's addresses.
    fn add_ip_only_candidates(&self, ctx: &mut DetectCtx, facts: &PacketFacts, stamp: u32) {
        let DetectCtx { candidates, seen, .. } = ctx;
        let mut add = |ids: &[u32]| {
            for &id in ids {
                if let Some(s) = seen.get_mut(id as usize) {
                    if *s != stamp {
                        *s = stamp;
                        candidates.push(id);
                    }
                }
            }
        };
        if facts.is_v4 {
            add(self.ip_only.by_src.lookup(facts.src4));
            add(self.ip_only.by_dst.lookup(facts.dst4));
            add(&self.ip_only.v4_linear);
        } else {
            add(&self.ip_only.v6_linear);
        }
    }

    /// The rules of the packet's group whose fast pattern is in the stream data, the payload
    /// or an app-layer buffer, and those checked without one.
    fn add_prefilter_candidates(&self, ctx: &mut DetectCtx, pkt: &DetectPacket<'_>, facts: &PacketFacts, stamp: u32) {
        let group = &self.groups[facts.transport][facts.dir];
        let DetectCtx {
            candidates, seen, scratch, counters, transform_scratch, scanned_spans, prefilter_counts, ..
        } = ctx;
        let mut on_match = |id: u32| {
            if let Some(s) = seen.get_mut(id as usize) {
                if *s != stamp {
                    *s = stamp;
                    candidates.push(id);
                }
            }
        };
        // Without ports only the rules without port requirements can match, and every group
        // holds those.
        let port = if facts.has_ports { ports::key_port(facts.dir, facts.sp, facts.dp) } else { 0 };
        let port_group = group.port_groups.get(group.port_map.group_of(port));
        if let Some(port_group) = port_group.filter(|g| g.mpm.pattern_count() > 0 && !pkt.no_payload) {
            if let Some(chunk) = pkt.stream.as_ref().filter(|c| !c.data.is_empty()) {
                let (mpm, slot) = (port_group.mpm.as_ref(), port_group.profile.stream);
                profile::counted_scan(mpm, slot, chunk.data, scratch, &mut on_match, counters, prefilter_counts);
            }
            let (payload_mpm, slot) = if pkt.payload_in_stream {
                (&port_group.mpm_packet_only, port_group.profile.payload_packet_only)
            } else {
                (&port_group.mpm, port_group.profile.payload)
            };
            if !pkt.payload.is_empty() && payload_mpm.pattern_count() > 0 {
                let mpm = payload_mpm.as_ref();
                profile::counted_scan(mpm, slot, pkt.payload, scratch, &mut on_match, counters, prefilter_counts);
            }
        }
        group.always.for_packet(facts, &mut on_match);
        if let Some(source) = pkt.buffers {
            for &id in &group.app_always {
                on_match(id);
            }
            for prefilter in &group.app_mpm {
                scanned_spans.clear();
                let shared = prefilter.buffers.len() > 1;
                for data in prefilter.buffers.iter().flat_map(|&buffer| buffer_instances(source, buffer)) {
                    if shared {
                        // The very same bytes under another name of this prefilter: scanning
                        // them again would only find the same patterns.
                        let span = (data.as_ptr() as usize, data.len());
                        if scanned_spans.contains(&span) {
                            counters.prefilter_shared_skips += 1;
                            continue;
                        }
                        scanned_spans.push(span);
                    }
                    let Some(data) = apply_transforms(&prefilter.transforms, data, transform_scratch) else { continue };
                    if data.is_empty() {
                        continue;
                    }
                    let (mpm, slot) = (prefilter.mpm.as_ref(), prefilter.profile);
                    profile::counted_scan(mpm, slot, data, scratch, &mut on_match, counters, prefilter_counts);
                }
            }
        }
    }

    /// Suricata's PacketAlertFinalize: thresholds and suppressions, noalert, `pass` stops the
    /// packet's alerts, `packet-alert-max`.
    fn finalize(
        &self,
        ctx: &mut DetectCtx,
        hosts: &Hosts,
        now: u64,
        mut flow: Option<&mut DetectFlow>,
        alerts: &mut Vec<Alert>,
    ) {
        let mut emitted = 0usize;
        for i in 0..ctx.matches.len() {
            let (idx, in_stream) = ctx.matches[i];
            let Some(rule) = self.rules.get(idx as usize) else { continue };
            let mut action = rule.action;
            let mut rate_filtered = false;
            // Suppressed or silenced by its limit, the match is not logged but its rule
            // still acts (Suricata: suppression removes the alert, not the drop).
            let mut removed = false;
            if rule.suppressions.iter().any(|s| suppressed(s, hosts, rule)) {
                removed = true;
            } else if let Some(limit) = &rule.limit {
                let outcome = if limit.tracks_flow() {
                    ctx.flow_trackers.allow(rule.key(), limit, hosts, now)
                } else {
                    self.shared.allow(rule.key(), limit, hosts, now)
                };
                match outcome {
                    LimitOutcome::Alert => {}
                    LimitOutcome::Silent => removed = true,
                    LimitOutcome::Skip => {
                        ctx.counters.alerts_suppressed += 1;
                        continue;
                    }
                    LimitOutcome::Rate(new_action) => {
                        action = rate_filter_action(new_action);
                        rate_filtered = action != rule.action;
                    }
                }
            }
            if removed {
                ctx.counters.alerts_suppressed += 1;
            }
            let mut silent = rule.noalert || removed;
            if silent && action == Action::Alert {
                continue;
            }
            if removed {
                // Acts without taking a place in the packet's alert queue.
            } else if emitted >= self.packet_alert_max {
                ctx.counters.alerts_discarded += 1;
                // Past `packet-alert-max` the alert is not logged, but a drop, reject or
                // pass still acts (Suricata applies actions before the alert queue fills).
                if action == Action::Alert {
                    continue;
                }
                silent = true;
            } else {
                emitted += 1;
            }
            ctx.counters.alerts += 1;
            let flow_scope = match rule.action_scope {
                ActionScope::Flow => true,
                ActionScope::FlowIfStream => in_stream,
                ActionScope::Packet => false,
            };
            alerts.push(Alert {
                gid: rule.gid,
                sid: rule.sid,
                rev: rule.rev,
                msg: rule.msg.clone(),
                category: rule.category.clone(),
                severity: rule.severity,
                action,
                rate_filtered,
                logs_pass: rule.logs_pass,
                in_stream,
                silent,
                app_tx: rule.inspects_app_layer(),
                flow_scope,
                bypass: rule.bypass,
                rule_log: rule.rule_log.clone(),
            });
            if action == Action::Pass {
                // A pass match ends the packet's alerts; with flow scope (Suricata 7+) it
                // also passes the rest of the flow. A suppressed pass only passes the flow:
                // Suricata stops at a pass that is in the alert queue.
                if let Some(f) = flow.as_deref_mut().filter(|_| flow_scope) {
                    f.passed = true;
                    ctx.counters.flows_passed += 1;
                }
                if !removed {
                    break;
                }
            }
        }
    }

    /// Full check of one candidate; `Some(in_stream)` on a match.
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &self,
        ctx: &mut DetectCtx,
        rule: &CompiledRule,
        pkt: &DetectPacket<'_>,
        facts: &PacketFacts,
        flow: Option<&mut DetectFlow>,
        hosts: &Hosts,
        now: u64,
    ) -> Option<bool> {
        if rule.never_matches.is_some() {
            return None;
        }
        ctx.rule_vars = [0; MAX_VARS];
        ctx.entropy.clear();
        if !proto_matches(rule.proto, facts) || !header_matches(rule, facts) {
            // Candidates the rule header (addresses, ports) rules out: what a finer,
            // port-based grouping of the prefilter would save.
            ctx.counters.candidates_header_mismatch += 1;
            return None;
        }
        if let Some(f) = &rule.flow {
            let mut info = pkt.flow;
            if let Some(i) = info.as_mut().filter(|_| rule.inspects_app_layer()) {
                i.established |= i.tx_established;
            }
            if !flow_matches(f, info.as_ref()) {
                return None;
            }
        }
        if !rule.packet_checks.iter().all(|c| packet_check(c, pkt)) {
            return None;
        }
        if !rule.header.matches(pkt.decoded, |program, bytes| self.run_program(ctx, program, bytes, 0)) {
            return None;
        }
        let mut in_stream = false;
        if let Some(program) = &rule.payload {
            if pkt.no_payload {
                return None;
            }
            let stream = pkt.stream.as_ref().filter(|c| !c.data.is_empty());
            let mut matched = false;
            if !rule.require_packet {
                if let Some(chunk) = stream {
                    matched = self.run_program(ctx, program, chunk.data, chunk.offset);
                    in_stream = matched;
                }
                if !matched && (pkt.payload_in_stream || rule.stream_only) {
                    return None;
                }
            }
            if !matched && (pkt.payload.is_empty() || !self.run_program(ctx, program, pkt.payload, 0)) {
                return None;
            }
        }
        if rule.inspects_app_layer() {
            let this_direction = pkt.buffers?;
            if rule.transactional && pkt.flow.is_none_or(|f| f.to_server) {
                return None;
            }
            // A transactional rule reads each buffer from the direction that has it.
            let other = pkt.buffers_other.filter(|_| rule.transactional);
            for app in &rule.app_buffers {
                let source = match other {
                    Some(o) if this_direction.get_nth(app.buffer, 0).is_none() => o,
                    _ => this_direction,
                };
                // A multi-instance buffer (one dns.query per question) matches when any
                // instance satisfies the whole program, as Suricata's multi-buffers do.
                let mut instances = buffer_instances(source, app.buffer).peekable();
                match (app.absent, instances.peek().is_none()) {
                    (Some(_), true) => continue,
                    (Some(false), false) => return None,
                    _ => {}
                }
                if !instances.any(|data| self.inspect_app_buffer(ctx, app, data)) {
                    return None;
                }
            }
            for (field, cmp, index) in &rule.app_numbers {
                let source = match other {
                    Some(o) if this_direction.number(*field, 0).is_none() => o,
                    _ => this_direction,
                };
                let mut values = (0..MAX_BUFFER_INSTANCES).map_while(|i| source.number(*field, i));
                let matched = if *index == NumberIndex::Any {
                    values.any(|value| cmp.matches(value))
                } else {
                    let mut all = [0u64; MAX_BUFFER_INSTANCES];
                    let n = values.by_ref().zip(all.iter_mut()).map(|(v, slot)| *slot = v).count();
                    index.matches(cmp, &all[..n])
                };
                if !matched {
                    return None;
                }
            }
        }
        // State keywords last, in rule order (Suricata's match list runs after the payload).
        let mut vars = flow.map(|f| &mut f.vars);
        for c in &rule.state_checks {
            if !state::check(c, vars.as_deref_mut(), &self.shared, &self.xbit_keys, hosts, now) {
                return None;
            }
        }
        Some(in_stream)
    }

    fn run_program(&self, ctx: &mut DetectCtx, program: &program::Program, data: &[u8], stream_start: u64) -> bool {
        // Taken out of the context for the run (a move, no allocation) so the inspection can
        // hold it while `ctx` stays usable.
        let mut decode_scratch = std::mem::take(&mut ctx.decode_scratch);
        let mut insp = Inspection::with_scratch(data, stream_start, &mut decode_scratch);
        insp.step_limit = self.step_limit;
        insp.vars = ctx.rule_vars;
        let ok = insp.run(program);
        if ok {
            // Only a matching buffer's values carry on: a failed one ends the rule, except
            // for one instance of a multi-buffer, whose values must not leak to the next.
            ctx.rule_vars = insp.vars;
        }
        let (limit_hit, pcre_limit_hits) = (insp.limit_hit, insp.pcre_limit_hits);
        if let Some((buffer, value)) = insp.entropy {
            match ctx.entropy.iter_mut().find(|e| e.0 == buffer) {
                Some(slot) => slot.1 = value,
                None => ctx.entropy.push((buffer, value)),
            }
        }
        ctx.decode_scratch = decode_scratch;
        if limit_hit {
            ctx.counters.recursion_limit += 1;
        }
        ctx.counters.pcre_match_limit += pcre_limit_hits as u64;
        ok
    }

    /// One instance of an app buffer: its transform chain (into the worker's scratch), then
    /// the program. A failed transform (from_base64 decoding nothing) means no match.
    fn inspect_app_buffer(&self, ctx: &mut DetectCtx, app: &compile::AppBufferInspection, data: &[u8]) -> bool {
        if !app.is_transformed() {
            return self.run_program(ctx, &app.program, data, 0);
        }
        let mut scratch = std::mem::take(&mut ctx.transform_scratch);
        let matched = match apply_transforms(&app.transforms, data, &mut scratch) {
            Some(transformed) => self.run_program(ctx, &app.program, transformed, 0),
            None => false,
        };
        ctx.transform_scratch = scratch;
        matched
    }

    /// Counters of this worker's detection (prefilter scans, candidates, matches, ...).
    pub fn counters(&self, ctx: &DetectCtx) -> Vec<(&'static str, u64)> {
        let c = &ctx.counters;
        vec![
            ("detect.packets", c.packets),
            ("detect.prefilter_scans", c.prefilter_scans),
            ("detect.prefilter_shared_skips", c.prefilter_shared_skips),
            ("detect.prefilter_errors", c.prefilter_errors),
            ("detect.candidates", c.candidates),
            ("detect.candidates_header_mismatch", c.candidates_header_mismatch),
            ("detect.rules_matched", c.rules_matched),
            ("detect.alerts", c.alerts),
            ("detect.alerts_suppressed", c.alerts_suppressed),
            ("detect.alert_queue_overflow", c.alerts_discarded),
            ("detect.recursion_limit", c.recursion_limit),
            ("detect.pcre_match_limit", c.pcre_match_limit),
            ("detect.flows_passed", c.flows_passed),
        ]
        .into_iter()
        .chain(self.table_counters(ctx))
        .collect()
    }

    /// Prefilter profiling's counters of this worker (`profiling.prefilter.enabled`; none
    /// otherwise): scans, bytes and microseconds of each prefilter that scanned anything.
    pub fn prefilter_profile(&self, ctx: &DetectCtx) -> Vec<(String, u64)> {
        profile::counters(&self.prefilter_labels, &ctx.prefilter_counts)
    }

    /// The state tables' counters: Suricata's `host.memuse`, `host.memcap`, `ippair.memuse`,
    /// `ippair.memcap` (gauges, bytes) and picket's `*.memcap_evicted` (live rows evicted
    /// for room at the memcap), `*.memcap_refused` (rows not stored: no room), `*.expired`
    /// (rows whose contents expired). The shared tables are reported by one worker (zeros
    /// elsewhere); `detect.flow_thresholds.*` are the worker's `by_flow` table.
    fn table_counters(&self, ctx: &DetectCtx) -> Vec<(&'static str, u64)> {
        let stat = |a: &std::sync::atomic::AtomicU64| if ctx.reports_shared { a.load(Ordering::Relaxed) } else { 0 };
        let gauge = |v: u64| if ctx.reports_shared { v } else { 0 };
        let (h, p, f) = (&self.shared.hosts, &self.shared.pairs, &ctx.flow_trackers.table);
        vec![
            ("host.memuse", gauge(h.memuse())),
            ("host.memcap", gauge(h.memcap())),
            ("host.memcap_evicted", stat(&h.stats.evicted)),
            ("host.memcap_refused", stat(&h.stats.refused)),
            ("host.expired", stat(&h.stats.expired)),
            ("ippair.memuse", gauge(p.memuse())),
            ("ippair.memcap", gauge(p.memcap())),
            ("ippair.memcap_evicted", stat(&p.stats.evicted)),
            ("ippair.memcap_refused", stat(&p.stats.refused)),
            ("ippair.expired", stat(&p.stats.expired)),
            ("detect.flow_thresholds.memuse", f.memuse()),
            ("detect.flow_thresholds.memcap_evicted", f.stats.evicted.load(Ordering::Relaxed)),
            ("detect.flow_thresholds.memcap_refused", f.stats.refused.load(Ordering::Relaxed)),
        ]
    }
}

/// The rule action a rate_filter's `new_action` stands for.
fn rate_filter_action(a: RateFilterAction) -> Action {
    match a {
        RateFilterAction::Alert => Action::Alert,
        RateFilterAction::Drop => Action::Drop,
        RateFilterAction::Reject => Action::Reject,
        RateFilterAction::Pass => Action::Pass,
    }
}

fn suppressed(s: &Suppression, hosts: &Hosts, _rule: &CompiledRule) -> bool {
    let Some(ip) = &s.ip else { return true };
    let contains = |a: &[u8; 16]| addr_in(ip, a);
    match s.track {
        Some(Track::BySrc) => contains(&hosts.src),
        Some(Track::ByDst) => contains(&hosts.dst),
        Some(Track::ByEither) => contains(&hosts.src) || contains(&hosts.dst),
        _ => true,
    }
}

/// Membership of a FiveTuple address (IPv4 as v4-mapped IPv6).
fn addr_in(set: &crate::detect::rule::AddressSet, a: &[u8; 16]) -> bool {
    if a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff {
        set.contains_v4(u32::from_be_bytes([a[12], a[13], a[14], a[15]]))
    } else {
        set.contains_v6(u128::from_be_bytes(*a))
    }
}

fn packet_facts(pkt: &DetectPacket<'_>) -> PacketFacts {
    let t = &pkt.tuple;
    let transport = transport_of(t.proto);
    let has_ports = match pkt.decoded {
        Some(d) => matches!(d.l4, L4::Tcp(_) | L4::Udp(_)),
        None => matches!(t.proto, 6 | 17),
    };
    let v4 = |a: &[u8; 16]| u32::from_be_bytes([a[12], a[13], a[14], a[15]]);
    PacketFacts {
        transport,
        dir: match pkt.flow {
            Some(f) if !f.to_server => 1,
            _ => 0,
        },
        proto: t.proto,
        is_v4: t.is_v4,
        src4: v4(&t.src),
        dst4: v4(&t.dst),
        src6: u128::from_be_bytes(t.src),
        dst6: u128::from_be_bytes(t.dst),
        has_ports,
        sp: t.src_port,
        dp: t.dst_port,
    }
}

fn proto_matches(p: ProtoMatch, f: &PacketFacts) -> bool {
    match p {
        ProtoMatch::Any => true,
        ProtoMatch::Ipv4 => f.is_v4,
        ProtoMatch::Ipv6 => !f.is_v4,
        ProtoMatch::Tcp => f.proto == 6,
        ProtoMatch::Udp => f.proto == 17,
        ProtoMatch::Icmp => f.proto == 1 || f.proto == 58,
        ProtoMatch::Icmpv4 => f.proto == 1,
        ProtoMatch::Icmpv6 => f.proto == 58,
        ProtoMatch::Sctp => f.proto == 132,
        ProtoMatch::TcpOrUdp => f.proto == 6 || f.proto == 17,
    }
}

/// Whether a rule's protocol `rule` (as `app-layer-protocol` or a rule header names it)
/// covers a flow detected as `flow` (Suricata's `AppProtoEquals`; `exact`:
/// `AppProtoEqualsStrict`). Flow names are eve's: `http` is HTTP/1.
pub(crate) fn app_proto_matches(rule: &str, flow: &str, exact: bool) -> bool {
    if rule == flow {
        return true;
    }
    match (rule, exact) {
        ("http2", _) => flow == "doh2",
        ("doh2", true) => flow == "http2",
        (_, true) => false,
        ("http1", false) => flow == "http",
        ("http", false) => flow == "http2",
        ("dns", false) => flow == "doh2",
        ("doh2", false) => matches!(flow, "http2" | "dns"),
        ("dcerpc", false) => flow == "smb",
        _ => false,
    }
}

fn header_matches(r: &CompiledRule, f: &PacketFacts) -> bool {
    let one_way = |src_is_pkt_src: bool| -> bool {
        let (s4, d4, s6, d6, sp, dp) = if src_is_pkt_src {
            (f.src4, f.dst4, f.src6, f.dst6, f.sp, f.dp)
        } else {
            (f.dst4, f.src4, f.dst6, f.src6, f.dp, f.sp)
        };
        let addrs = if f.is_v4 {
            (r.src_any || r.src.contains_v4(s4)) && (r.dst_any || r.dst.contains_v4(d4))
        } else {
            (r.src_any || r.src.contains_v6(s6)) && (r.dst_any || r.dst.contains_v6(d6))
        };
        addrs && (r.ports_any || (f.has_ports && r.src_ports.contains(sp) && r.dst_ports.contains(dp)))
    };
    if r.transactional {
        // Checked on to-client packets: the rule's source is the packet's destination.
        return one_way(false);
    }
    one_way(true) || (r.bidirectional && one_way(false))
}

fn flow_matches(f: &crate::detect::rule::options::Flow, info: Option<&FlowInfo>) -> bool {
    let Some(info) = info else {
        // Without a flow only `stateless` (and stream/frag modifiers) can hold.
        return !(f.established || f.not_established || f.to_server || f.to_client);
    };
    (!f.established || info.established)
        && (!f.not_established || !info.established)
        && (!f.to_server || info.to_server)
        && (!f.to_client || !info.to_server)
}

fn packet_check(c: &PacketCheck, pkt: &DetectPacket<'_>) -> bool {
    match c {
        PacketCheck::StreamSize { side, cmp } => {
            let Some(info) = pkt.flow else { return false };
            let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
            let client = clamp(info.stream_size[0]);
            let server = clamp(info.stream_size[1]);
            return match side {
                StreamSide::Client => cmp.matches(client),
                StreamSide::Server => cmp.matches(server),
                StreamSide::Both => cmp.matches(client) && cmp.matches(server),
                StreamSide::Either => cmp.matches(client) || cmp.matches(server),
            };
        }
        PacketCheck::FlowAge(cmp) => return pkt.flow.is_some_and(|info| cmp.matches(info.age_secs)),
        PacketCheck::AppEvent { proto, event } => {
            return proto.is_none_or(|p| pkt.app_proto == Some(p))
                && pkt.app_events.is_some_and(|events| events.raised(event));
        }
        PacketCheck::AppProto { negated, name, exact } => {
            return pkt.app_proto.is_some_and(|flow| app_proto_matches(name, flow, *exact)) != *negated
        }
        PacketCheck::FlowCount(fc) => {
            let Some(info) = pkt.flow else { return false };
            let (to_server, to_client) = match fc.kind {
                FlowCountKind::Packets => (info.pkts_toserver, info.pkts_toclient),
                FlowCountKind::Bytes => (info.bytes_toserver, info.bytes_toclient),
            };
            return match fc.dir {
                FlowCountDir::ToServer => fc.cmp.matches(to_server),
                FlowCountDir::ToClient => fc.cmp.matches(to_client),
                FlowCountDir::Either => fc.cmp.matches(to_server) || fc.cmp.matches(to_client),
            };
        }
        _ => {}
    }
    let Some(d) = pkt.decoded else { return false };
    let v4 = match d.ip {
        Some(IpLayer::V4(v)) => Some(v),
        _ => None,
    };
    let tcp = match d.l4 {
        L4::Tcp(t) => Some(t),
        _ => None,
    };
    let icmp = match d.l4 {
        L4::Icmpv4(i) | L4::Icmpv6(i) => Some(i),
        _ => None,
    };
    match c {
        PacketCheck::Flags(f) => tcp.is_some_and(|t| f.matches(t.flags())),
        PacketCheck::Window { negated, size } => tcp.is_some_and(|t| (t.window() == *size) != *negated),
        PacketCheck::Seq(v) => tcp.is_some_and(|t| t.seq() == *v),
        PacketCheck::Ack(v) => tcp.is_some_and(|t| t.ack() == *v),
        PacketCheck::Ttl(cmp) => match d.ip {
            Some(IpLayer::V4(v)) => cmp.matches(v.ttl()),
            Some(IpLayer::V6(i)) => cmp.matches(i.header.hop_limit()),
            None => false,
        },
        PacketCheck::Tos { negated, tos } => v4.is_some_and(|v| (v.tos() == *tos) != *negated),
        PacketCheck::Ipopts(o) => v4.is_some_and(|v| {
            v.options().filter_map(Result::ok).any(|opt| match o {
                IpOption::Any => true,
                other => ipopt_kind(*other) == Some(opt.kind),
            })
        }),
        PacketCheck::Fragbits(fb) => v4.is_some_and(|v| {
            let bits = v.flags();
            match fb.mode {
                FlagsMode::Exact => bits == fb.bits,
                FlagsMode::All => bits & fb.bits == fb.bits,
                FlagsMode::Any => bits & fb.bits != 0,
                FlagsMode::Not => bits & fb.bits == 0,
            }
        }),
        PacketCheck::Fragoffset(cmp) => v4.is_some_and(|v| cmp.matches(v.frag_offset().wrapping_mul(8))),
        PacketCheck::IpId(id) => v4.is_some_and(|v| v.id() == *id),
        PacketCheck::IpProto(cmp) => d.ip_proto().is_some_and(|p| cmp.matches(p)),
        PacketCheck::Itype(cmp) => icmp.is_some_and(|i| cmp.matches(i.icmp_type())),
        PacketCheck::Icode(cmp) => icmp.is_some_and(|i| cmp.matches(i.code())),
        PacketCheck::IcmpId(id) => icmp.is_some_and(|i| is_echo_like(&d.l4, i.icmp_type()) && i.echo_id() == *id),
        PacketCheck::IcmpSeq(seq) => icmp.is_some_and(|i| is_echo_like(&d.l4, i.icmp_type()) && i.echo_seq() == *seq),
        PacketCheck::Dsize(cmp) => {
            let len = d.payload.len().min(u16::MAX as usize) as u16;
            // Suricata marks `dsize:!N` rules as needing a payload: an empty packet never
            // matches them, while `<N`/`<=N` do match empty packets. A packet whose payload
            // is not inspected does not meet a rule that needs one.
            let needs_payload = matches!(cmp, crate::detect::rule::UintCmp::Ne(_)) || !cmp.matches(0);
            if needs_payload && (len == 0 || pkt.no_payload) {
                return false;
            }
            cmp.matches(len)
        }
        PacketCheck::StreamSize { .. }
        | PacketCheck::AppProto { .. }
        | PacketCheck::FlowCount(_)
        | PacketCheck::FlowAge(_)
        | PacketCheck::AppEvent { .. } => true,
    }
}

/// ICMP messages that carry an identifier and sequence number.
fn is_echo_like(l4: &L4<'_>, icmp_type: u8) -> bool {
    match l4 {
        L4::Icmpv4(_) => matches!(icmp_type, 0 | 8 | 13 | 14 | 15 | 16 | 17 | 18),
        L4::Icmpv6(_) => matches!(icmp_type, 128 | 129),
        _ => false,
    }
}

fn ipopt_kind(o: IpOption) -> Option<u8> {
    Some(match o {
        IpOption::RecordRoute => 7,
        IpOption::EndOfList => 0,
        IpOption::Nop => 1,
        IpOption::Timestamp => 68,
        IpOption::Security => 130,
        IpOption::ExtendedSecurity => 133,
        IpOption::LooseSourceRoute => 131,
        IpOption::StrictSourceRoute => 137,
        IpOption::StreamId => 136,
        IpOption::Any => return None,
    })
}
