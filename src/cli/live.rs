//! Live runs: `picket -i IFACE` (passive AF_PACKET), `picket -q N` (inline NFQUEUE) and
//! `picket --bridge IF_A,IF_B` (inline AF_PACKET bridge), until SIGINT/SIGTERM.
//!
//! Everything that can fail (configuration, rules, log files, permissions, interfaces,
//! queues) is checked before the first port opens, and a port that cannot open ends the
//! run with one line before any packet is held: picket never becomes a black hole by
//! failing half-way through its start.

use super::args::RunArgs;
use super::resolve::{load_rules, resolve, warn, CliError};
use crate::capture::afpacket::adaptive::FanoutProgram;
use crate::capture::afpacket::{AfPacketConfig, FanoutMode};
use crate::capture::bridge::{self, BridgeSpec, CopyMode};
use crate::capture::nfqueue::NfQueueConfig;
use crate::capture::LivePort;
use crate::config::Config;
use crate::ddos::controller::Controller;
use crate::ddos::{DdosLayer, Delivery};
use crate::output::metrics::{self, LiveGauges};
use crate::output::stats::worker_name;
use crate::pipeline::live::{self, LiveLogs, LiveOptions};
use crate::rules::RuleSources;
use std::fs::{self, OpenOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a live run reads from and, inline, acts on.
enum LiveInput {
    /// Passive capture on each interface (a tap or span port): verdicts are not acted on.
    AfPacket(Vec<AfPacketConfig>),
    /// NFQUEUE queue numbers, one worker each, and the `nfq:` settings.
    Nfqueue(Vec<u16>, NfQueueConfig),
    /// AF_PACKET bridges: the two interfaces of each pair.
    Bridge(Vec<BridgeSpec>),
    /// AF_XDP sockets, one per RX queue, behind picket's XDP program (passive: a sink).
    AfXdp(AfXdpInput),
}

/// `--af-xdp=IFACE`: the capture settings, the interface's RX queues and the XDP
/// attach mode the YAML forces.
struct AfXdpInput {
    config: crate::capture::afxdp::AfXdpConfig,
    queues: u32,
    attach: Option<crate::config::AttachPreference>,
}

impl LiveInput {
    /// Whether verdicts are carried out (a bridge in `copy-mode: tap` forwards everything).
    fn is_inline(&self) -> bool {
        match self {
            LiveInput::AfPacket(_) | LiveInput::AfXdp(_) => false,
            LiveInput::Nfqueue(..) => true,
            LiveInput::Bridge(specs) => specs.iter().any(|s| s.mode == CopyMode::Ips),
        }
    }

    /// Opens every worker's ports, worker by worker. Nothing is held before this returns
    /// `Ok`; an error names the interface or queue and the fix.
    fn open(&self, workers: usize, ddos: Option<&mut DdosLayer>) -> Result<Vec<Vec<Box<dyn LivePort>>>, CliError> {
        match self {
            LiveInput::AfXdp(input) => {
                let xdp = ddos.ok_or_else(|| CliError("--af-xdp needs the XDP layer, which did not start".into()))?;
                crate::capture::afxdp::open_behind_xdp(&input.config, workers, xdp.xdp_mut())
                    .map_err(|e| CliError(e.to_string()))
            }
            LiveInput::AfPacket(captures) => live::open_sockets(captures, workers).map_err(|e| CliError(e.to_string())),
            LiveInput::Nfqueue(queues, config) => {
                crate::capture::nfqueue::open_ports(queues, config).map_err(|e| CliError(e.to_string()))
            }
            LiveInput::Bridge(specs) => bridge::open_ports(specs, workers).map_err(|e| CliError(e.to_string())),
        }
    }

    /// The run's workers: one per queue for NFQUEUE, else `--workers`.
    fn workers(&self, configured: usize) -> usize {
        match self {
            LiveInput::Nfqueue(queues, _) => queues.len(),
            LiveInput::AfXdp(input) => crate::capture::afxdp::worker_count(&input.config, configured, input.queues),
            _ => configured,
        }
    }

    /// Suricata's name of the capture method (`capture-mode`).
    fn capture_mode(&self) -> &'static str {
        match self {
            LiveInput::AfPacket(_) => "af-packet",
            LiveInput::Nfqueue(..) => "nfqueue",
            LiveInput::Bridge(_) => "af-packet-bridge",
            LiveInput::AfXdp(_) => "af-xdp",
        }
    }

    /// The interfaces (or queues, as `nfq:N`) this run captures on.
    fn interfaces(&self) -> Vec<String> {
        match self {
            LiveInput::AfPacket(c) => c.iter().map(|c| c.interface.clone()).collect(),
            LiveInput::Bridge(specs) => {
                specs.iter().flat_map(|s| [s.a.interface.clone(), s.b.interface.clone()]).collect()
            }
            LiveInput::AfXdp(input) => vec![input.config.interface.clone()],
            LiveInput::Nfqueue(queues, _) => queues.iter().map(|q| format!("nfq:{q}")).collect(),
        }
    }

    fn describe(&self) -> String {
        match self {
            LiveInput::AfPacket(captures) => captures
                .iter()
                .map(|c| {
                    let filter = c.bpf_filter.as_deref().map(|f| format!(", BPF filter '{f}'")).unwrap_or_default();
                    format!("{} (fanout group {}, {}{filter})", c.interface, c.fanout_group, c.fanout_mode.name())
                })
                .collect::<Vec<_>>()
                .join(", "),
            LiveInput::Nfqueue(queues, _) => {
                format!("NFQUEUE {}", queues.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", "))
            }
            LiveInput::Bridge(specs) => specs
                .iter()
                .map(|s| {
                    format!(
                        "bridge {} <-> {} (copy-mode {}, {})",
                        s.a.interface,
                        s.b.interface,
                        s.mode.name(),
                        s.tx.describe()
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            LiveInput::AfXdp(input) => format!(
                "{} (af-xdp, {} RX queues; passive: picket's XDP program redirects the packets, so they do not \
                 reach this host's stack)",
                input.config.interface, input.queues
            ),
        }
    }
}

/// The interfaces named with `-i` and `--af-packet[=IFACE]` (the YAML's list for a bare
/// `--af-packet`), each once.
fn passive_interfaces(args: &RunArgs, config: &Config) -> Result<Vec<String>, CliError> {
    let mut interfaces: Vec<String> = Vec::new();
    for name in args.live.interfaces.iter().chain(args.live.af_packet.iter().filter(|n| !n.is_empty())) {
        if !interfaces.contains(name) {
            interfaces.push(name.clone());
        }
    }
    if args.live.af_packet.iter().any(|n| n.is_empty()) {
        for name in crate::config::configured_interfaces(config) {
            if !interfaces.contains(&name) {
                interfaces.push(name);
            }
        }
        if interfaces.is_empty() {
            return Err(CliError(
                "--af-packet: no interface given and none listed under af-packet: in the configuration".into(),
            ));
        }
    }
    Ok(interfaces)
}

/// `-q 0 -q 1` or `-q 0:3`: the queue numbers, each once, in order.
fn queue_numbers(specs: &[String]) -> Result<Vec<u16>, CliError> {
    let mut queues = Vec::new();
    for spec in specs {
        let number = |text: &str| {
            text.trim()
                .parse::<u16>()
                .map_err(|_| CliError(format!("-q {spec}: expected a queue number 0-65535 or a range N:M")))
        };
        let (first, last) = match spec.split_once(':') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(spec)?, number(spec)?),
        };
        if first > last {
            return Err(CliError(format!("-q {spec}: the range ends before it starts")));
        }
        for q in first..=last {
            if queues.contains(&q) {
                return Err(CliError(format!("-q {spec}: queue {q} is given twice")));
            }
            queues.push(q);
        }
    }
    if queues.len() > 1024 {
        return Err(CliError(format!("-q: {} queues is more than 1024 workers", queues.len())));
    }
    Ok(queues)
}

/// `--bridge IF_A,IF_B` (repeatable): the interface pairs. An interface belongs to one
/// pair at most, and never to a pair with itself.
fn bridge_pairs(specs: &[String]) -> Result<Vec<(String, String)>, CliError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for spec in specs {
        let Some((a, b)) = spec.split_once(',').map(|(a, b)| (a.trim(), b.trim())) else {
            return Err(CliError(format!("--bridge {spec}: expected two interfaces, IF_A,IF_B")));
        };
        if a.is_empty() || b.is_empty() || b.contains(',') {
            return Err(CliError(format!("--bridge {spec}: expected two interfaces, IF_A,IF_B")));
        }
        if a == b {
            return Err(CliError(format!("--bridge {spec}: an interface cannot be bridged with itself")));
        }
        for name in [a, b] {
            if pairs.iter().any(|(x, y)| x == name || y == name) {
                return Err(CliError(format!("--bridge {spec}: {name} is already in another bridge")));
            }
        }
        pairs.push((a.to_string(), b.to_string()));
    }
    Ok(pairs)
}

/// Which live input the command line and the YAML ask for; they cannot be mixed.
fn live_input(
    args: &RunArgs,
    config: &Config,
    bpf_filter: Option<String>,
    stop: &Arc<AtomicBool>,
) -> Result<LiveInput, CliError> {
    let l = &args.live;
    let passive = !l.interfaces.is_empty() || !l.af_packet.is_empty();
    let kinds = [passive, !l.nfqueue.is_empty(), !l.bridge.is_empty(), !l.af_xdp.is_empty()];
    if kinds.iter().filter(|k| **k).count() > 1 {
        return Err(CliError(
            "-i/--af-packet, --af-xdp, -q and --bridge cannot be combined: capture passively, or inline through \
             NFQUEUE or a bridge"
                .into(),
        ));
    }
    if !l.af_xdp.is_empty() {
        return afxdp_input(args, config, bpf_filter.as_deref());
    }
    if !l.nfqueue.is_empty() {
        let queues = queue_numbers(&l.nfqueue)?;
        let (nfq, warnings) = crate::config::nfq_config(config).map_err(CliError)?;
        for w in warnings {
            warn(w);
        }
        return Ok(LiveInput::Nfqueue(queues, nfq));
    }
    let overrides = crate::config::CaptureOverrides {
        fanout: l
            .fanout
            .as_deref()
            .map(crate::config::parse_fanout)
            .transpose()
            .map_err(|e| CliError(format!("--fanout: {e}")))?,
        promiscuous: l.no_promisc.then_some(false),
        bpf_filter,
    };
    if !l.bridge.is_empty() {
        let mut pairs = Vec::new();
        for (a, b) in bridge_pairs(&l.bridge)? {
            let mode = command_line_bridge_mode(config, &a, &b)?;
            pairs.push((a, b, mode));
        }
        return bridge_input(config, &pairs, &overrides, stop);
    }
    let interfaces = passive_interfaces(args, config)?;
    // Suricata's IPS form: af-packet entries with copy-mode and copy-iface.
    if let Some(pairs) = crate::config::configured_bridges(config, &interfaces).map_err(CliError)? {
        return bridge_input(config, &pairs, &overrides, stop);
    }
    let (captures, warnings) =
        crate::config::capture_configs(config, &interfaces, &overrides, stop).map_err(CliError)?;
    for w in warnings {
        warn(w);
    }
    Ok(LiveInput::AfPacket(captures))
}

/// The copy mode of a `--bridge A,B` pair: the YAML's `copy-mode` of A or B (they must
/// agree), `ips` when neither has one. A `copy-iface` in the YAML must name the partner.
fn command_line_bridge_mode(config: &Config, a: &str, b: &str) -> Result<CopyMode, CliError> {
    for (name, partner) in [(a, b), (b, a)] {
        if let Some(peer) = crate::config::copy_iface(config, name) {
            if peer != partner {
                return Err(CliError(format!(
                    "--bridge {a},{b}: af-packet.copy-iface of {name} is {peer}, not {partner}; fix the configuration \
                     or the --bridge pair"
                )));
            }
        }
    }
    let mode_a = crate::config::copy_mode(config, a).map_err(CliError)?;
    let mode_b = crate::config::copy_mode(config, b).map_err(CliError)?;
    match (mode_a, mode_b) {
        (Some(x), Some(y)) if x != y => Err(CliError(format!(
            "--bridge {a},{b}: af-packet.copy-mode is {} for {a} and {} for {b}; give both the same",
            x.name(),
            y.name()
        ))),
        (Some(x), _) | (_, Some(x)) => Ok(x),
        (None, None) => Ok(CopyMode::Ips),
    }
}

/// The bridge specs of `pairs`, with each interface's `af-packet:` settings.
fn bridge_input(
    config: &Config,
    pairs: &[(String, String, CopyMode)],
    overrides: &crate::config::CaptureOverrides,
    stop: &Arc<AtomicBool>,
) -> Result<LiveInput, CliError> {
    let names: Vec<String> = pairs.iter().flat_map(|(a, b, _)| [a.clone(), b.clone()]).collect();
    let (captures, warnings) =
        crate::config::bridge_capture_configs(config, &names, overrides, stop).map_err(CliError)?;
    for w in warnings {
        warn(w);
    }
    let mut captures = captures.into_iter();
    let mut specs = Vec::with_capacity(pairs.len());
    for (a_name, b_name, mode) in pairs {
        let (Some(a), Some(b)) = (captures.next(), captures.next()) else { break };
        let tx = crate::config::bridge_tx_options(config, a_name, b_name).map_err(CliError)?;
        specs.push(BridgeSpec { a, b, mode: *mode, tx });
    }
    Ok(LiveInput::Bridge(specs))
}

/// `--af-xdp=IFACE` (or the YAML `af-xdp:` list for a bare `--af-xdp`): one interface,
/// its `af-xdp:` settings and RX queue count.
fn afxdp_input(args: &RunArgs, config: &Config, bpf_filter: Option<&str>) -> Result<LiveInput, CliError> {
    let mut names: Vec<String> = args.live.af_xdp.iter().filter(|n| !n.is_empty()).cloned().collect();
    if args.live.af_xdp.iter().any(|n| n.is_empty()) {
        names.extend(crate::config::configured_afxdp_interfaces(config));
    }
    names.dedup();
    let interface = match names.as_slice() {
        [] => {
            return Err(CliError(
                "--af-xdp: no interface given and none listed under af-xdp: in the configuration".into(),
            ))
        }
        [one] => one.clone(),
        more => {
            return Err(CliError(format!(
                "--af-xdp: {} interfaces ({}); AF_XDP capture takes one interface per run for now",
                more.len(),
                more.join(", ")
            )))
        }
    };
    if let Some(filter) = bpf_filter {
        return Err(CliError(format!(
            "--af-xdp on {interface} with the BPF capture filter '{filter}': AF_XDP sockets take no BPF filter; \
             drop the filter or capture with -i"
        )));
    }
    let settings = crate::config::afxdp_config(config, &interface).map_err(CliError)?;
    for w in settings.warnings {
        warn(w);
    }
    let queues = crate::capture::afxdp::rx_queues(&interface).map_err(|e| CliError(e.to_string()))?;
    Ok(LiveInput::AfXdp(AfXdpInput { config: settings.capture, queues, attach: settings.attach }))
}

/// `--ddos` or `ddos.enabled`: loads and attaches the XDP layer for the run's interfaces
/// and gives their capture sockets its filter. `None` when the layer is off.
fn start_ddos(args: &RunArgs, config: &Config, input: &mut LiveInput) -> Result<Option<DdosLayer>, CliError> {
    let mut ddos = crate::config::ddos_config(config).map_err(CliError)?;
    ddos.enabled |= args.live.ddos;
    if let LiveInput::AfXdp(input) = input {
        // AF_XDP capture is fed by the XDP program: the layer is always on.
        if let Some(attach) = input.attach {
            ddos.attach = attach;
        }
        let interfaces = [input.config.interface.clone()];
        return DdosLayer::start(&ddos, &interfaces, Delivery::AfXdp).map(Some).map_err(|e| {
            if input.attach.is_some() && e.contains("no native XDP") {
                CliError(format!(
                    "af-xdp.force-xdp-mode is drv but the driver of {} has no native XDP; use force-xdp-mode: none",
                    interfaces[0]
                ))
            } else {
                CliError(e)
            }
        });
    }
    if !ddos.enabled {
        return Ok(None);
    }
    let LiveInput::AfPacket(captures) = input else {
        return Err(CliError(
            "--ddos applies to passive capture (-i, --af-packet, --af-xdp); inline runs (-q, --bridge) are not \
             supported yet"
                .into(),
        ));
    };
    if let Some(c) = captures.iter().find(|c| c.bpf_filter.is_some()) {
        return Err(CliError(format!(
            "--ddos with a BPF capture filter on {}: an AF_PACKET socket has one filter, and --ddos needs it; \
             drop the filter or --ddos",
            c.interface
        )));
    }
    let interfaces: Vec<String> = captures.iter().map(|c| c.interface.clone()).collect();
    let layer = DdosLayer::start(&ddos, &interfaces, Delivery::AfPacket).map_err(CliError)?;
    for capture in captures.iter_mut() {
        capture.socket_filter = layer.socket_filter();
    }
    Ok(Some(layer))
}

/// `--fanout adaptive` / `cluster-type: cluster_adaptive`: loads picket's eBPF fanout
/// program for `workers` workers and gives it to every capture that asks for it (one
/// program and one bucket table for all interfaces, so a flow crossing two interfaces
/// stays on one worker). Returns the program (kept for the run) and the controller.
fn start_adaptive_fanout(
    input: &mut LiveInput,
    workers: usize,
    config: &crate::config::Config,
) -> Result<(Option<FanoutProgram>, Option<live::LiveAdaptive>), CliError> {
    let LiveInput::AfPacket(captures) = input else { return Ok((None, None)) };
    if !captures.iter().any(|c| c.fanout_mode == FanoutMode::Adaptive) {
        return Ok((None, None));
    }
    let (program, table) = FanoutProgram::load(workers).map_err(|e| CliError(format!("--fanout adaptive: {e}")))?;
    for capture in captures.iter_mut().filter(|c| c.fanout_mode == FanoutMode::Adaptive) {
        capture.fanout_program = Some(program.fd());
    }
    let mut settings = super::resolve::adaptive_settings(config)?;
    if config.get_str("threading.adaptive.interval-ms").is_none() {
        settings.interval = crate::pipeline::adaptive_live::LIVE_INTERVAL;
    }
    // A packet the kernel queued under the old table shows up when its ring block retires.
    let retire_ms = captures.iter().map(|c| c.retire_timeout_ms).max().unwrap_or(0) as u64;
    let grace = std::time::Duration::from_millis(retire_ms + 2);
    let adaptive = live::LiveAdaptive::new(table, &settings, grace);
    Ok((Some(program), Some(adaptive)))
}

/// `picket -i IFACE ... | -q N ... | --bridge IF_A,IF_B`: a live run until SIGINT/SIGTERM.
pub fn run_live_capture(args: &RunArgs) -> Result<(), CliError> {
    if args.read.is_some() {
        return Err(CliError(
            "-r cannot be combined with a live input (-i, --af-packet, --af-xdp, -q, --bridge)".into(),
        ));
    }
    let mut resolved = resolve(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut input = live_input(args, &resolved.config, resolved.bpf_expression.clone(), &stop)?;
    if args.simulate_ips && !input.is_inline() {
        return Err(CliError(
            "--simulate-ips applies to reading a capture (-r): a passive interface sees copies and cannot block; \
             run inline with -q QUEUE (NFQUEUE) or --bridge IF_A,IF_B"
                .into(),
        ));
    }
    if resolved.options.single {
        warn("--runmode single does not apply to live capture; running workers");
    }
    if args.checksum.is_none() {
        let interfaces: Vec<String> = match &input {
            LiveInput::Nfqueue(..) => Vec::new(),
            other => other.interfaces(),
        };
        resolved.engine.checksum_mode =
            crate::config::live_checksum_mode(&resolved.config, &interfaces).map_err(CliError)?;
    }
    let workers = input.workers(resolved.options.workers);
    // Memory caps are split between the workers that will really run. Inline, verdicts
    // act on packets: the inspector runs as an IPS (drop/reject rules block, stream.inline).
    let mut inspect = crate::inspect::InspectSettings::from_engine(&resolved.engine, workers, input.is_inline());
    inspect.http = resolved.options.inspect.http.clone();
    let stats_interval = crate::config::stats_interval(&resolved.config).map_err(CliError)?;
    let metrics_addr = args
        .live
        .metrics
        .as_deref()
        .map(metrics::parse_listen_address)
        .transpose()
        .map_err(|e| CliError(format!("--metrics: {e}")))?;
    let sources = RuleSources { exclusive: args.rules_exclusive.clone(), extra: args.rules_extra.clone() };
    let mut rules = load_rules(&resolved.config, &resolved.engine, &sources, true, args.verbose > 0)?;
    inspect.detect = rules.engine.take().map(Arc::new);
    if let Some(engine) = &inspect.detect {
        let eve = Arc::make_mut(&mut resolved.options.eve);
        crate::output::eve::tx::enable_rule_fingerprints(eve, |b| engine.uses_buffer(b));
    }
    // SIGUSR2 and `picket ctl reload-rules` load the same inputs again and swap the engine.
    let (engine_slot, reloader) = match inspect.detect.clone() {
        Some(engine) => {
            let slot = crate::service::reload::EngineSlot::new(engine, workers);
            let inputs = crate::service::reload::RuleInputs {
                config: args.config.clone(),
                sets: args.set.clone(),
                sources: sources.clone(),
            };
            let reloader = crate::service::reload::Reloader::new(inputs, Arc::clone(&slot), &rules, args.verbose > 0);
            (Some(slot), Some(reloader))
        }
        None => (None, None),
    };
    // The parsed rules are in the engine now; what the build freed goes back to the system
    // (a live run then sits at its real size, and a reload grows from there).
    drop(rules);
    crate::heap::release_free_memory();
    let log_dir = resolved.outputs.log_dir.clone();
    let log_dir_created = !log_dir.exists();
    fs::create_dir_all(&log_dir)
        .map_err(|e| CliError(format!("cannot create log directory {}: {e}", log_dir.display())))?;
    // Service set-up (`crate::service::daemon`): -D forks here, before any thread starts.
    let mut service = crate::service::daemon::LiveService::start(&args.service, &resolved.config)?;
    // Every log file reopens when this generation moves on (SIGHUP, `picket ctl reopen-logs`).
    let reopen = crate::service::LogReopen::default();
    // A live sensor appends to its logs across restarts, as Suricata does by default
    // (`append:` in the YAML says otherwise); a socket reader never holds up the workers.
    let mut targets = crate::output::target::Targets::new(reopen.clone(), crate::output::target::Delivery::NeverBlock);
    let logs = LiveLogs {
        eve: match &resolved.outputs.eve {
            Some(eve) => targets.open(&eve.target)?,
            None => Box::new(std::io::sink()),
        },
        fast: match &resolved.outputs.fast {
            Some(fast) => targets.file(&fast.path, fast.append)?,
            None => Box::new(std::io::sink()),
        },
    };
    let stats_log = match &resolved.outputs.stats {
        Some(stats) if !stats.append => {
            OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&stats.path)
                .map_err(|e| CliError(format!("cannot write {}: {e}", stats.path.display())))?;
            Some(stats.path.clone())
        }
        other => other.as_ref().map(|stats| stats.path.clone()),
    };

    // Signals before the ports: a Ctrl-C during setup still ends the run cleanly. A
    // second one exits at once. SIGHUP reopens the logs, SIGUSR2 reloads the rules.
    crate::service::signals::register_stop(&stop)?;
    let (control_tx, control_rx) = crate::service::channel();
    let _signals = crate::service::signals::start(reopen.clone(), Some(control_tx.clone()))?;
    // The control socket before the ports: a socket another picket serves ends this start
    // before it joins that picket's fanout groups.
    service.listen(control_tx.clone())?;
    // The DDoS layer before the ports: capture sockets carry its socket filter from
    // their first packet. Dropped after the run: the program is detached on every exit.
    let mut ddos = start_ddos(args, &resolved.config, &mut input)?;
    // The detectors and their controller come with the DDoS layer; pass-through keeps
    // what the rules and the enabled detectors look at.
    let controller = match ddos.as_mut() {
        Some(layer) => Some(Controller::for_run(&resolved.config, layer).map_err(CliError)?),
        None => None,
    };
    inspect.detectors = controller.as_ref().map(|c| Arc::clone(&c.settings));
    let flow_bypass = match (ddos.as_mut(), &controller) {
        (Some(layer), Some(controller)) => {
            let cfg = crate::config::ddos_config(&resolved.config).map_err(CliError)?;
            let needs = crate::ddos::passthrough::DetectorNeeds::of(&controller.settings);
            crate::ddos::passthrough::configure(layer, &cfg, &needs, &mut inspect).map_err(CliError)?
        }
        _ => None,
    };
    // --fanout adaptive: picket's eBPF fanout program goes to every capture socket's group.
    let (_fanout_program, adaptive) = start_adaptive_fanout(&mut input, workers, &resolved.config)?;
    let ports = input.open(workers, ddos.as_mut())?;
    let gauges = Arc::new(LiveGauges::new((0..workers).map(worker_name)));
    let metrics_server = match metrics_addr {
        Some(addr) => Some(
            metrics::serve(addr, Arc::clone(&gauges), Arc::clone(&stop))
                .map_err(|e| CliError(format!("--metrics: cannot listen on {addr}: {e}")))?,
        ),
        None => None,
    };
    // --user/--group: everything privileged is set up by now.
    service.drop_privileges(&log_dir, log_dir_created, ddos.is_some())?;
    let opts = LiveOptions {
        workers,
        pin_cores: !args.no_pin,
        // With a slot, workers take the engine from it, and the old one is freed after a
        // reload (no `Arc` of it stays here).
        inspect: crate::inspect::InspectSettings {
            detect: if engine_slot.is_some() { None } else { inspect.detect.clone() },
            ..inspect
        },
        eve: resolved.options.eve.clone(),
        stats_interval,
        snapshot_path: Some(log_dir.join(crate::tools::snapshot::SNAPSHOT_FILE_NAME)),
        stats_log,
        flow_bypass,
        global_counters: {
            let mut sources = match ddos.as_mut() {
                Some(layer) => layer.counter_sources().map_err(CliError)?,
                None => Vec::new(),
            };
            sources.extend(controller.as_ref().map(|c| c.global_counters()));
            sources.extend(targets.counter_sources());
            sources.extend(reloader.as_ref().map(|r| r.counter_source()));
            sources.extend(adaptive.as_ref().map(|a| a.counter_source()));
            sources
        },
        detector_tallies: controller.as_ref().map(|c| c.tallies.clone()),
        extra_events: controller.as_ref().map(|c| c.events.clone()),
        control: Some(crate::service::ControlPlane {
            commands: control_rx,
            reloader: reloader.clone().map(|r| r as Arc<dyn crate::service::RuleReloader>),
            reopen: reopen.clone(),
            info: crate::service::RunInfo {
                running_mode: "workers".into(),
                capture_mode: input.capture_mode().into(),
                interfaces: input.interfaces(),
                started: std::time::Instant::now(),
            },
        }),
        engine_slot,
        adaptive,
    };
    eprintln!(
        "picket: {} {}{} with {workers} workers, logs in {}{}; stop with Ctrl-C",
        if input.is_inline() { "inline on" } else { "capturing on" },
        input.describe(),
        ddos.as_ref().map(|d| format!(", {}", d.describe())).unwrap_or_default(),
        log_dir.display(),
        metrics_server.as_ref().map(|m| format!(", metrics at http://{}/metrics", m.local_addr)).unwrap_or_default()
    );
    service.ready()?;
    let result = live::run_live(ports, &opts, Arc::clone(&gauges), Arc::clone(&stop), logs);
    stop.store(true, Ordering::Relaxed);
    service.stopping();
    if let Some(server) = metrics_server {
        let _ = server.thread.join();
    }
    drop(controller);
    drop(ddos);
    drop(service);
    let summary = result?;
    let packets: u64 = summary.workers.iter().map(|w| w.report.packets).sum();
    let drops: u64 = summary.workers.iter().map(|w| w.kernel.drops).sum();
    println!(
        "picket: {packets} packets from {} in {:.3} s, {drops} dropped by the kernel, {} events written",
        input.describe(),
        summary.wall.as_secs_f64(),
        summary.events_written
    );
    let mut out = std::io::stdout().lock();
    let _ = live::write_live_load_table(&mut out, &summary.workers, summary.wall);
    if let Some(adaptive) = &opts.adaptive {
        use std::io::Write;
        let _ = writeln!(out, "{}", adaptive.counters.summary());
    }
    if let Some(failure) = summary.workers.iter().find_map(|w| w.failure.as_ref()) {
        return Err(CliError(format!("{failure}; the run stopped (stats written for what was inspected)")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_numbers_take_lists_and_ranges() {
        let q = |specs: &[&str]| queue_numbers(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(q(&["0", "1"]).unwrap(), vec![0, 1]);
        assert_eq!(q(&["2:4"]).unwrap(), vec![2, 3, 4]);
        assert!(q(&["1", "0:1"]).unwrap_err().0.contains("twice"));
        assert!(q(&["3:1"]).unwrap_err().0.contains("ends before"));
        assert!(q(&["x"]).unwrap_err().0.contains("queue number"));
        assert!(q(&["70000"]).is_err());
    }

    #[test]
    fn bridge_pairs_refuse_self_and_reuse() {
        let b = |specs: &[&str]| bridge_pairs(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(b(&["a,b"]).unwrap(), vec![("a".to_string(), "b".to_string())]);
        assert!(b(&["a,a"]).unwrap_err().0.contains("itself"));
        assert!(b(&["a,b", "b,c"]).unwrap_err().0.contains("already"));
        assert!(b(&["a"]).unwrap_err().0.contains("IF_A,IF_B"));
        assert!(b(&["a,b,c"]).is_err());
    }
}
