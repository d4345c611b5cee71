//! The typed, validated settings the engine reads, with Suricata's defaults.

mod scalars;

pub use scalars::{parse_bool, parse_size};
use std::path::PathBuf;

/// `stream.inline`: whether TCP is reassembled as an inline (IPS) engine would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamInline {
    /// Follow the run mode: inline when running as an IPS.
    Auto,
    Yes,
    No,
}

/// What happens to a flow once its payload is encrypted (`app-layer.protocols.tls.` and
/// `.ssh.encryption-handling`), as in Suricata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EncryptionHandling {
    /// Suricata's default (`track-only`, TLS also spells it `default`): the parser goes on
    /// tracking the session (its keywords and records), but packet payloads and the raw
    /// stream are no longer inspected: content rules cannot match ciphertext.
    #[default]
    TrackOnly,
    /// The flow is bypassed (see [`crate::inspect::bypass`]).
    Bypass,
    /// Encrypted payload is inspected like any other.
    Full,
}

impl EncryptionHandling {
    /// Suricata's spellings: `track-only`, `default` (TLS's older name), `bypass`, `full`.
    pub fn parse(text: &str) -> Option<EncryptionHandling> {
        match text.trim() {
            "track-only" | "default" => Some(EncryptionHandling::TrackOnly),
            "bypass" => Some(EncryptionHandling::Bypass),
            "full" => Some(EncryptionHandling::Full),
            _ => None,
        }
    }
}

/// Checksum validation of captured packets (`pcap-file.checksum-checks`, `-k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumMode {
    /// Validate unless the capture looks checksum-offloaded (Suricata's `auto`).
    Auto,
    /// Validate every packet (`-k all`, `yes`).
    Always,
    /// Never validate (`-k none`, `no`).
    Never,
}

impl ChecksumMode {
    /// Accepts `auto`, `all`, `none` and the boolean spellings (yes = all, no = none).
    pub fn parse(text: &str) -> Option<ChecksumMode> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            Some(ChecksumMode::Auto)
        } else if text.eq_ignore_ascii_case("all") {
            Some(ChecksumMode::Always)
        } else if text.eq_ignore_ascii_case("none") {
            Some(ChecksumMode::Never)
        } else {
            parse_bool(text).map(|on| if on { ChecksumMode::Always } else { ChecksumMode::Never })
        }
    }
}

/// What the engine does when it meets an exception condition (Suricata's exception
/// policies: `exception-policy` master switch, `stream.midstream-policy`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionPolicy {
    /// IPS: drop the flow (or the packet where flows do not apply); IDS: ignore.
    Auto,
    /// Carry on as if nothing happened (Suricata's `ignore`, its internal "not set").
    Ignore,
    PassPacket,
    PassFlow,
    /// Pass the flow and ask the capture to bypass it.
    Bypass,
    DropPacket,
    DropFlow,
    Reject,
}

impl ExceptionPolicy {
    pub fn parse(text: &str) -> Option<ExceptionPolicy> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "auto" => ExceptionPolicy::Auto,
            "ignore" => ExceptionPolicy::Ignore,
            "pass-packet" => ExceptionPolicy::PassPacket,
            "pass-flow" => ExceptionPolicy::PassFlow,
            "bypass" => ExceptionPolicy::Bypass,
            "drop-packet" => ExceptionPolicy::DropPacket,
            "drop-flow" => ExceptionPolicy::DropFlow,
            "reject" => ExceptionPolicy::Reject,
            _ => return None,
        })
    }

    /// `auto` resolved the way Suricata does for a policy that can act on flows: drop the
    /// flow in IPS mode unless midstream pickup is on, otherwise ignore.
    fn pick_auto(midstream: bool, ips: bool) -> ExceptionPolicy {
        if ips && !midstream {
            ExceptionPolicy::DropFlow
        } else {
            ExceptionPolicy::Ignore
        }
    }
}

/// Timeouts in seconds for one protocol (`flow-timeouts.<proto>.*`). `closed` only matters
/// for protocols with a closing handshake (TCP) but is read for all, like Suricata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtoTimeouts {
    pub new: u32,
    pub established: u32,
    pub closed: u32,
    pub bypassed: u32,
    pub emergency_new: u32,
    pub emergency_established: u32,
    pub emergency_closed: u32,
    pub emergency_bypassed: u32,
}

impl ProtoTimeouts {
    pub const OTHER: ProtoTimeouts = ProtoTimeouts {
        new: 30,
        established: 300,
        closed: 0,
        bypassed: 100,
        emergency_new: 10,
        emergency_established: 100,
        emergency_closed: 0,
        emergency_bypassed: 50,
    };
    /// TCP's, as suricata.yaml sets them (what a Suricata deployment runs with): a
    /// handshake gets a minute, an established session ten, a closed one a minute.
    pub const TCP: ProtoTimeouts =
        ProtoTimeouts { new: 60, established: 600, closed: 60, emergency_new: 5, emergency_closed: 10, ..Self::OTHER };
}

/// `flow-timeouts`: `default` applies to protocols other than TCP, UDP and ICMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowTimeouts {
    pub default: ProtoTimeouts,
    pub tcp: ProtoTimeouts,
    pub udp: ProtoTimeouts,
    pub icmp: ProtoTimeouts,
}

impl Default for FlowTimeouts {
    fn default() -> Self {
        FlowTimeouts {
            default: ProtoTimeouts::OTHER,
            tcp: ProtoTimeouts::TCP,
            udp: ProtoTimeouts::OTHER,
            icmp: ProtoTimeouts::OTHER,
        }
    }
}

/// Everything the engine reads from the configuration, validated.
///
/// File paths are kept as written: Suricata resolves relative ones against the working
/// directory, and so does picket (rule files excepted, see [`EngineSettings::rule_paths`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineSettings {
    /// `stream.midstream`: pick up TCP sessions without seeing their handshake.
    pub midstream: bool,
    /// `stream.midstream-policy`, if set.
    pub midstream_policy: Option<ExceptionPolicy>,
    /// `exception-policy`: the master switch, default for every policy not set itself.
    pub exception_policy: Option<ExceptionPolicy>,
    /// `host-os-policy`: (policy name, address or CIDR) pairs in file order.
    pub host_os_policy: Vec<(String, String)>,
    /// `stream.async-oneside`: accept TCP sessions seen in one direction only.
    pub async_oneside: bool,
    pub stream_inline: StreamInline,
    /// `stream.memcap`, bytes.
    pub stream_memcap: u64,
    /// `stream.reassembly.memcap`, bytes.
    pub stream_reassembly_memcap: u64,
    /// `stream.reassembly.depth`, bytes per direction; 0 means unlimited.
    pub stream_reassembly_depth: u64,
    /// `stream.reassembly.max-regions`: separate runs of held bytes per direction; 0 means
    /// unlimited.
    pub stream_reassembly_max_regions: u32,
    /// `stream.checksum-validation`: drop TCP segments with bad checksums from the stream.
    pub stream_checksum_validation: bool,
    /// `stream.bypass`: a TCP flow whose stream reached `reassembly.depth` is bypassed.
    pub stream_bypass: bool,
    /// `app-layer.protocols.tls.encryption-handling`: with `bypass` a TLS flow past its
    /// handshake is bypassed; with `track-only` (the default) its payload is no longer
    /// inspected once application data was seen.
    pub tls_encryption: EncryptionHandling,
    /// `app-layer.protocols.ssh.encryption-handling`, acting once both SSH sides sent
    /// NEWKEYS (encrypted from then on).
    pub ssh_encryption: EncryptionHandling,
    /// `pcap-file.checksum-checks`, overridden by `-k` (see [`EngineSettings::apply_checksum_flag`]).
    pub checksum_mode: ChecksumMode,
    /// `flow.memcap`, bytes.
    pub flow_memcap: u64,
    /// `flow.hash-size`, buckets (at least 1).
    pub flow_hash_size: u32,
    /// `flow.prealloc`, flows.
    pub flow_prealloc: u32,
    /// `flow.emergency-recovery`, percent: emergency mode ends once this much of the flow
    /// memcap is free again (Suricata's default 30).
    pub flow_emergency_recovery: u8,
    /// `app-layer.protocols.http.memcap`, bytes (0: unlimited): HTTP bodies held for
    /// inspection. Suricata's built-in default is unlimited; picket defaults to the 64 MiB
    /// Suricata's shipped suricata.yaml suggests, so unanswered uploads stay bounded.
    pub http_memcap: u64,
    pub flow_timeouts: FlowTimeouts,
    /// `vlan.use-for-tracking`: VLAN ids are part of the flow key.
    pub vlan_use_for_tracking: bool,
    /// `mpm-algo` (`auto`, `ac`, `ac-bs`, `ac-ks`, `hs`); `None` = engine's choice.
    pub mpm_algo: Option<String>,
    /// `spm-algo` (`auto`, `bm`, `hs`); `None` = engine's choice.
    pub spm_algo: Option<String>,
    pub default_rule_path: Option<PathBuf>,
    /// `rule-files`, as written.
    pub rule_files: Vec<String>,
    pub classification_file: Option<PathBuf>,
    pub reference_config_file: Option<PathBuf>,
    pub threshold_file: Option<PathBuf>,
    /// `max-pending-packets`, 1..=65534.
    pub max_pending_packets: u32,
    /// `packet-alert-max`: alerts kept per packet, 1..=255 (outside that range Suricata warns
    /// and keeps the default, and so do we).
    pub packet_alert_max: u16,
    /// `action-order`: which matching rule's action applies first (pass, drop, reject, alert
    /// by default).
    pub action_order: crate::detect::engine::ActionOrder,
    /// `pcre.match-limit`, `pcre.match-limit-recursion`, `detect.inspection-recursion-limit`.
    pub inspection_limits: crate::detect::engine::InspectionLimits,
    /// Whether the engine keeps each rule's text: eve-log's `alert: metadata: rule: raw: yes`
    /// logs it (and `--engine-analysis` prints it); otherwise it is dropped once compiled.
    pub keep_rule_text: bool,
    pub runmode: Option<String>,
    pub default_log_dir: Option<PathBuf>,
    /// `app-layer.protocols.dns.{tcp,udp}.detection-ports.dp` (or the key without the
    /// transport): server ports on which DNS is recognised; `None` keeps port 53.
    pub dns_detection_ports: [Option<Vec<u16>>; 2],
    /// `app-layer.protocols.<proto>.enabled` and `detection-ports` of the protocols picket
    /// detects without parsing them.
    pub detect_only: crate::applayer::detect_only::DetectOnlySettings,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            midstream: false,
            midstream_policy: None,
            exception_policy: None,
            host_os_policy: Vec::new(),
            async_oneside: false,
            stream_inline: StreamInline::Auto,
            stream_memcap: 64 << 20,
            stream_reassembly_memcap: 256 << 20,
            stream_reassembly_depth: 1 << 20,
            stream_reassembly_max_regions: crate::stream::StreamConfig::DEFAULT_MAX_REGIONS,
            stream_checksum_validation: true,
            stream_bypass: false,
            tls_encryption: EncryptionHandling::TrackOnly,
            ssh_encryption: EncryptionHandling::TrackOnly,
            checksum_mode: ChecksumMode::Auto,
            flow_memcap: 32 << 20,
            flow_hash_size: 65536,
            flow_prealloc: 10000,
            flow_emergency_recovery: 30,
            http_memcap: 64 << 20,
            flow_timeouts: FlowTimeouts::default(),
            vlan_use_for_tracking: true,
            mpm_algo: None,
            spm_algo: None,
            default_rule_path: None,
            rule_files: Vec::new(),
            classification_file: None,
            reference_config_file: None,
            threshold_file: None,
            max_pending_packets: 1024,
            packet_alert_max: 15,
            inspection_limits: Default::default(),
            keep_rule_text: false,
            action_order: Default::default(),
            runmode: None,
            default_log_dir: None,
            dns_detection_ports: [None, None],
            detect_only: Default::default(),
        }
    }
}

impl EngineSettings {
    /// `stream.midstream-policy` as Suricata resolves it: the key itself, else the master
    /// switch, else the built-in default (drop the flow in IPS mode without midstream
    /// pickup, ignore otherwise). In IDS mode dropping is not possible and becomes ignore.
    pub fn effective_midstream_policy(&self, ips: bool) -> ExceptionPolicy {
        let policy = match (self.midstream_policy, self.exception_policy) {
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => ExceptionPolicy::Auto,
        };
        let policy =
            if policy == ExceptionPolicy::Auto { ExceptionPolicy::pick_auto(self.midstream, ips) } else { policy };
        match policy {
            ExceptionPolicy::DropFlow | ExceptionPolicy::DropPacket if !ips => ExceptionPolicy::Ignore,
            // A midstream pickup concerns the whole flow: per-packet variants act on it.
            ExceptionPolicy::DropPacket => ExceptionPolicy::DropFlow,
            ExceptionPolicy::PassPacket => ExceptionPolicy::PassFlow,
            p => p,
        }
    }
}
