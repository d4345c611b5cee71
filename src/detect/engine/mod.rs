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

use crate::decode::{Decoded, FiveTuple};
use crate::detect::rule::{Action, ClassificationTable, Rule, ThresholdConfig};
use crate::packet::Timestamp;
use crate::stream::StreamChunk;
use std::sync::Arc;

/// Build-time settings.
#[derive(Clone, Debug, Default)]
pub struct DetectConfig {
    /// `mpm-algo`: "auto", "hs", "ac", ... (see `detect::mpm::MpmAlgo`).
    pub mpm_algo: Option<String>,
    pub classification: ClassificationTable,
    pub thresholds: ThresholdConfig,
    /// `packet-alert-max`: alerts logged per packet at most (Suricata default 15).
    pub packet_alert_max: u16,
}

/// What the build did, for `picket rules check` and start-up logs.
#[derive(Clone, Debug, Default)]
pub struct BuildReport {
    pub rules_loaded: usize,
    /// Rules the parser accepted but the engine cannot run, with the reason.
    pub rules_rejected: Vec<(u32, String)>,
    pub prefilter_patterns: usize,
    pub mpm_algo: String,
    pub memory_bytes: usize,
}

/// Flow facts the engine needs for `flow:`, `flow.pkts`, `stream_size` and friends.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowInfo {
    pub flow_id: u64,
    /// This packet travels from the flow's client to its server.
    pub to_server: bool,
    /// Suricata's `established` (TCP after the handshake; others once both sides spoke).
    pub established: bool,
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    /// Stream bytes seen so far per direction [to_server, to_client], for `stream_size`.
    pub stream_bytes: [u64; 2],
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
    pub vlan: [u16; 2],
    /// Transport payload of this packet (empty for pseudo packets).
    pub payload: &'a [u8],
    pub flow: Option<FlowInfo>,
    /// Reassembled stream data of this packet's direction released for inspection now.
    pub stream: Option<StreamChunk<'a>>,
    /// Detected application protocol of the flow ("http", "tls", "dns", ...), if known.
    pub app_proto: Option<&'a str>,
}

/// Per-flow detection state, kept by the caller inside its flow state.
#[derive(Clone, Debug, Default)]
pub struct DetectFlow {
    /// Set by a matching `pass` rule with flow scope: no more inspection of this flow.
    pub passed: bool,
}

/// Per-worker mutable state.
#[derive(Default)]
pub struct DetectCtx {}

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
    pub action: Action,
    /// The match was in reassembled stream data rather than the packet payload.
    pub in_stream: bool,
    /// The rule has `noalert`-like semantics for logging but still acts (e.g. drop with noalert).
    pub silent: bool,
}

pub struct DetectEngine {
    rules: usize,
}

impl DetectEngine {
    pub fn build(rules: Vec<Rule>, _cfg: &DetectConfig) -> Result<(DetectEngine, BuildReport), String> {
        let report = BuildReport { rules_loaded: rules.len(), ..Default::default() };
        Ok((DetectEngine { rules: rules.len() }, report))
    }

    pub fn rule_count(&self) -> usize {
        self.rules
    }

    pub fn new_ctx(&self) -> DetectCtx {
        DetectCtx::default()
    }

    /// Runs every applicable rule on `pkt`; alerts are appended to `alerts`.
    pub fn inspect(&self, _ctx: &mut DetectCtx, _pkt: &DetectPacket<'_>, _flow: Option<&mut DetectFlow>, _alerts: &mut Vec<Alert>) {}

    /// Counters of this worker's detection (prefilter scans, candidates, matches, ...).
    pub fn counters(&self, _ctx: &DetectCtx) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
