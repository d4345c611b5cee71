//! The command line of a run (`picket -r ...`, `picket -i ...`), in Suricata's spelling.

use clap::Args;
use std::path::PathBuf;

pub use crate::service::ServiceArgs;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Read packets from a pcap/pcapng file, or every capture in a directory.
    #[arg(short = 'r', value_name = "FILE|DIR")]
    pub read: Option<PathBuf>,
    /// Directory for eve.json, stats.log and the other logs.
    #[arg(short = 'l', value_name = "LOGDIR")]
    pub log_dir: Option<PathBuf>,
    /// Suricata-format YAML configuration.
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Rule file, used exclusively (replaces the configured rule files).
    #[arg(short = 'S', value_name = "FILE")]
    pub rules_exclusive: Vec<PathBuf>,
    /// Rule file, added to the configured rule files.
    #[arg(short = 's', value_name = "FILE")]
    pub rules_extra: Vec<PathBuf>,
    /// Checksum validation: none, all or auto.
    #[arg(short = 'k', value_name = "none|all|auto")]
    pub checksum: Option<String>,
    /// Override a configuration value (Suricata's dotted keys); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// single: one thread does everything. workers (or autofp): a reader dispatching to N pinned workers.
    #[arg(long, value_name = "single|workers|autofp")]
    pub runmode: Option<String>,
    /// Number of worker threads (default: one per CPU core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Dispatch policy: flow (symmetric flow hash), adaptive (flow hash through a bucket
    /// table rebalanced by measured load, flows handed over), roundrobin or random
    /// [default: YAML `threading.dispatch`, else flow].
    #[arg(long, value_name = "POLICY")]
    pub dispatch: Option<String>,
    /// Do not pin worker threads to CPU cores.
    #[arg(long)]
    pub no_pin: bool,
    /// Suricata's `--no-random`: no random values inside the engine. picket's output never
    /// depends on them; this fixes the seeds of its hash tables too (reproducible memory
    /// layout and timings, at the price of hash-flooding resistance).
    #[arg(long)]
    pub no_random: bool,
    /// Act on drop/reject rules as an inline IPS would, while reading a capture (offline
    /// only: live, run inline with -q or --bridge).
    #[arg(long)]
    pub simulate_ips: bool,
    /// Test the configuration and rules, then exit (Suricata's -T): exit status 1 when a
    /// rule failed; rules skipped for an unsupported keyword alone exit 0.
    #[arg(short = 'T')]
    pub test_config: bool,
    /// More log output.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Read the BPF filter from FILE ('#' starts a comment); instead of trailing words.
    #[arg(short = 'F', value_name = "FILE")]
    pub bpf_file: Option<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub service: ServiceArgs,
    #[command(flatten)]
    pub info: InfoArgs,
    /// A BPF capture filter, as for tcpdump (e.g. `port 22 and host 10.0.0.1`): packets it
    /// rejects are not inspected, not numbered and not logged.
    #[arg(trailing_var_arg = true, value_name = "BPF")]
    pub bpf: Vec<String>,
}

/// Live capture flags (`picket -i eth0 ...`).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Live capture")]
pub struct LiveArgs {
    /// Capture live from an interface through AF_PACKET rings (repeatable).
    #[arg(short = 'i', value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Suricata's spelling of -i: `--af-packet=IFACE`, or `--af-packet` alone for the
    /// interfaces of the YAML `af-packet:` list.
    #[arg(long = "af-packet", value_name = "IFACE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub af_packet: Vec<String>,
    /// Live capture: how the kernel spreads packets over the workers: hash (flow, the
    /// default), lb (round robin), cpu, rnd, qm, or adaptive (flow hash through picket's
    /// eBPF bucket table, rebalanced by measured load); or Suricata's cluster_* names.
    #[arg(long, value_name = "MODE")]
    pub fanout: Option<String>,
    /// Live capture: leave the interfaces out of promiscuous mode.
    #[arg(long)]
    pub no_promisc: bool,
    /// Inline through NFQUEUE: read verdict-pending packets from queue N (repeatable, or a
    /// range N:M), one worker per queue. Use with iptables `-j NFQUEUE --queue-balance
    /// N:M --queue-bypass` so traffic flows when picket is not running.
    #[arg(short = 'q', value_name = "QUEUE[:LAST]")]
    pub nfqueue: Vec<String>,
    /// Inline AF_PACKET bridge: packets read on one interface are inspected and, unless
    /// blocked, sent out of the other, both ways (repeatable for several pairs).
    #[arg(long, value_name = "IF_A,IF_B")]
    pub bridge: Vec<String>,
    /// DDoS filter in the kernel: load picket's XDP program on the capture interfaces
    /// (blocklist, SYN cookies, flow bypass, pass-through; YAML `ddos:`).
    #[arg(long)]
    pub ddos: bool,
    /// Capture through AF_XDP sockets, one per RX queue and worker, behind picket's XDP
    /// program: `--af-xdp=IFACE`, or `--af-xdp` alone for the YAML `af-xdp:` list.
    #[arg(long = "af-xdp", value_name = "IFACE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub af_xdp: Vec<String>,
    /// Live capture: serve Prometheus metrics at http://ADDR/metrics (PORT alone binds 127.0.0.1).
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub metrics: Option<String>,
}

/// Commands that print facts and exit (Suricata's spelling).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Information")]
pub struct InfoArgs {
    /// Print the version and the build's features, then exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    /// Print how this binary was built (features, libraries, paths), then exit.
    #[arg(long)]
    pub build_info: bool,
    /// List the rule keywords picket knows (`all`, or one keyword for its details), then exit.
    #[arg(long, value_name = "all|KEYWORD", num_args = 0..=1, require_equals = true, default_missing_value = "all")]
    pub list_keywords: Option<String>,
    /// List the application-layer protocols picket parses, then exit.
    #[arg(long)]
    pub list_app_layer_protos: bool,
    /// Print the configuration as picket reads it (after includes and --set), then exit.
    #[arg(long)]
    pub dump_config: bool,
    /// Load the rules and report, per rule, its prefilter pattern or why it has none
    /// (rules_analysis.txt and rules_fast_pattern.txt in the log directory), then exit.
    #[arg(long)]
    pub engine_analysis: bool,
}

impl InfoArgs {
    /// Whether one of the print-and-exit commands was given.
    pub fn requested(&self) -> bool {
        self.version
            || self.build_info
            || self.list_keywords.is_some()
            || self.list_app_layer_protos
            || self.dump_config
            || self.engine_analysis
    }
}

impl RunArgs {
    /// Whether a live input was named (`-i`, `--af-packet`, `--af-xdp`, `-q`, `--bridge`).
    pub fn is_live(&self) -> bool {
        let l = &self.live;
        !l.interfaces.is_empty()
            || !l.af_packet.is_empty()
            || !l.af_xdp.is_empty()
            || !l.nfqueue.is_empty()
            || !l.bridge.is_empty()
    }
}
