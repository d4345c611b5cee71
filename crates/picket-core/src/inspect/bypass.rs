//! Flow bypass: the engine decides it is finished with a flow, and its later packets are
//! no longer inspected (Suricata's bypass, with its triggers and counters).
//!
//! Triggers, checked after each packet's detection:
//! - `stream.bypass: yes` and a direction of a TCP stream reached `stream.reassembly.depth`
//!   (Suricata bypasses as soon as either direction hits the depth);
//! - `app-layer.protocols.tls.encryption-handling: bypass` and the TLS session is past its
//!   handshake (both directions encrypted);
//! - `app-layer.protocols.ssh.encryption-handling: bypass` and both SSH sides sent NEWKEYS;
//! - a rule with the `bypass` keyword matched.
//!
//! Two ways a bypass is carried out:
//! - **capture** ([`BypassSettings::capture`]): the caller can make the capture skip the
//!   flow (picket's XDP flow table). The inspector queues a [`BypassRequest`]; the caller
//!   takes it ([`super::Inspector::take_bypass_requests`]), installs the flow, and later
//!   reports the kernel's counts with [`super::Inspector::bypass_update`] (which keeps the
//!   flow alive while they move). If the capture cannot take the flow (its table is full)
//!   the caller calls [`super::Inspector::bypass_refused`] and the flow stays inspected.
//! - **local** (offline, or no capture bypass): later packets still arrive but skip every
//!   stage after flow tracking.
//!
//! Either way the flow ends after the protocol's `flow-timeouts.*.bypassed` idle time, and
//! its eve record says `bypass: local|capture` with the kernel's counts in `bypassed`.
//! What its streams held at the bypass (data not yet inspected: in IDS mode a direction's
//! data is inspected once the other side acks it) is inspected when the flow ends, so an
//! alert on data from before the bypass is late but not lost (Suricata drops that data).

use crate::flow::FlowHandle;

/// What may trigger a bypass in this run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BypassSettings {
    /// `stream.bypass`.
    pub stream_depth: bool,
    /// `app-layer.protocols.tls.encryption-handling: bypass`.
    pub tls: bool,
    /// `app-layer.protocols.ssh.encryption-handling: bypass`.
    pub ssh: bool,
    /// The capture can skip flows (the live XDP layer): bypasses become requests.
    pub capture: bool,
}

/// How a flow is bypassed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BypassMode {
    /// Not bypassed.
    #[default]
    None,
    /// Packets still reach the inspector, which skips them (eve `bypass: "local"`).
    Local,
    /// The capture skips the flow (eve `bypass: "capture"`).
    Capture,
    /// The capture could not take the flow (its table was full): it stays inspected and
    /// is not offered again.
    Refused,
}

impl BypassMode {
    /// Eve's `flow.bypass` value.
    pub fn eve_name(self) -> Option<&'static str> {
        match self {
            BypassMode::Local => Some("local"),
            BypassMode::Capture => Some("capture"),
            BypassMode::None | BypassMode::Refused => None,
        }
    }

    /// Later packets are not inspected.
    pub fn skips_inspection(self) -> bool {
        matches!(self, BypassMode::Local | BypassMode::Capture)
    }
}

/// Packets and bytes of one flow counted outside the inspector (in the kernel), per
/// direction of the flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BypassCounts {
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
}

/// A flow's bypass state (in `FlowExt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowBypass {
    pub mode: BypassMode,
    /// What the capture counted for the flow after the bypass (latest report).
    pub kernel: BypassCounts,
}

/// A flow to install in the capture's bypass table: both directions of `client` ⇄
/// `server` (v4-mapped addresses for IPv4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BypassRequest {
    pub handle: FlowHandle,
    pub flow_id: u64,
    pub is_v4: bool,
    pub proto: u8,
    pub client: ([u8; 16], u16),
    pub server: ([u8; 16], u16),
}

/// Why a flow was bypassed (for the counters and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BypassReason {
    StreamDepth,
    TlsEncrypted,
    SshEncrypted,
    Rule,
}

/// Suricata's `flow_bypassed.*` counters of one worker.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BypassCounters {
    /// Packets/bytes of locally bypassed flows the inspector skipped.
    pub local_pkts: u64,
    pub local_bytes: u64,
    /// Packets/bytes of capture-bypassed flows that still reached the inspector (before
    /// the capture took the flow, or in the other direction's path).
    pub local_capture_pkts: u64,
    pub local_capture_bytes: u64,
    /// Capture-bypassed flows that ended, and what the capture counted for them.
    pub closed: u64,
    pub pkts: u64,
    pub bytes: u64,
    /// Flows bypassed, by trigger (picket's own counters).
    pub by_stream_depth: u64,
    pub by_tls: u64,
    pub by_ssh: u64,
    pub by_rule: u64,
    /// The capture refused a flow (its table full).
    pub refused: u64,
}

impl BypassCounters {
    pub fn add_to(&self, s: &mut crate::counters::CounterSet) {
        for (name, v) in [
            ("flow_bypassed.local_pkts", self.local_pkts),
            ("flow_bypassed.local_bytes", self.local_bytes),
            ("flow_bypassed.local_capture_pkts", self.local_capture_pkts),
            ("flow_bypassed.local_capture_bytes", self.local_capture_bytes),
            ("flow_bypassed.closed", self.closed),
            ("flow_bypassed.pkts", self.pkts),
            ("flow_bypassed.bytes", self.bytes),
            ("picket.bypass.stream_depth", self.by_stream_depth),
            ("picket.bypass.tls", self.by_tls),
            ("picket.bypass.ssh", self.by_ssh),
            ("picket.bypass.rule", self.by_rule),
            ("picket.bypass.refused", self.refused),
        ] {
            s.add(name, v);
        }
    }

    pub fn count_reason(&mut self, reason: BypassReason) {
        match reason {
            BypassReason::StreamDepth => self.by_stream_depth += 1,
            BypassReason::TlsEncrypted => self.by_tls += 1,
            BypassReason::SshEncrypted => self.by_ssh += 1,
            BypassReason::Rule => self.by_rule += 1,
        }
    }
}
