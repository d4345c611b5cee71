//! The DDoS controller: a thread of the live run (with `--ddos` / `ddos.enabled`) that
//! turns the workers' detector tallies into alerts and XDP actions.
//!
//! Every worker sends its detectors' tallies once per tick (`pipeline::live`); the
//! controller merges them into each detector's window ([`Evaluator`]), evaluates once a
//! second, and for each finding
//! - writes an eve `alert` (gid [`GID`], one sid per detector, category [`CATEGORY`],
//!   `alert.action` "blocked" when it acted) through the run's event writer;
//! - carries out its actions: a block goes into the XDP [`Blocklist`] for the block time,
//!   SYN cookies go on (and later off) through a [`SynProtect`] (helper A's ProtectTable).
//!
//! Sources in the never-block set (the capture interfaces' own addresses and
//! `ddos.detectors.allow`) are alerted, never blocked. Expired blocks are removed every
//! [`EXPIRE_EVERY`]. The counters (`picket.ddos.*`) are atomics read by the stats writer
//! through [`DdosCounters::add_to`].

use crate::counters::CounterSet;
use crate::detectors::{
    Action, DetectorSettings, Evaluator, Finding, Kind, NeverBlock, Prefix, Tallies, CATEGORY, GID, SEVERITY,
};
use crate::output::eve::EventHeader;
use crate::output::merge::EventBuf;
use crate::packet::Timestamp;
use crate::xdp::blocklist::Blocklist;
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashMap;
use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often expired blocks are removed (and tallies drained).
pub const EXPIRE_EVERY: Duration = Duration::from_millis(100);
/// Detectors evaluate their windows this often.
pub const EVALUATE_EVERY: Duration = Duration::from_secs(1);
/// Worker tallies queued for the controller; past it a worker's tally is dropped (counted).
pub const TALLY_QUEUE: usize = 256;
/// Above this many entries in force, their packet counts are not read every second.
const MAX_COUNTED_ENTRIES: usize = 4096;
/// Sort key of the controller's eve lines in the writer (after the workers' of a second).
const EVENT_KEY: u64 = u64::MAX - 1;

/// SYN cookies per destination, as the controller needs them. Implemented for helper
/// A's `xdp::protect::ProtectTable` where the layers are put together.
pub trait SynProtect: Send {
    fn protect(&mut self, addr: IpAddr, port: u16) -> Result<(), String>;
    fn unprotect(&mut self, addr: IpAddr, port: u16) -> Result<(), String>;
    /// Running totals of SYNs the kernel answered with cookies, per protected destination.
    fn syn_counts(&self) -> Vec<((IpAddr, u16), u64)>;
}

/// The XDP program's SYN-cookie table, as the SYN-flood detector steers it: one
/// destination (address and port) at a time. Entries for any address (the configured
/// `ddos.syn-cookies.ports`) are not the detector's and are left out of its counts.
impl SynProtect for crate::xdp::protect::ProtectTable {
    fn protect(&mut self, addr: IpAddr, port: u16) -> Result<(), String> {
        crate::xdp::protect::ProtectTable::protect(self, Some(addr), port).map_err(|e| e.to_string())
    }

    fn unprotect(&mut self, addr: IpAddr, port: u16) -> Result<(), String> {
        crate::xdp::protect::ProtectTable::unprotect(self, Some(addr), port).map_err(|e| e.to_string())
    }

    fn syn_counts(&self) -> Vec<((IpAddr, u16), u64)> {
        self.entries().into_iter().filter_map(|(addr, port, v)| addr.map(|a| ((a, port), v.syns))).collect()
    }
}

/// `picket.ddos.*`: written by the controller thread, read by the stats writer.
#[derive(Default)]
pub struct DdosCounters {
    findings: [AtomicU64; 4],
    keys_refused: [AtomicU64; 4],
    blocks: AtomicU64,
    blocks_active: AtomicU64,
    blocks_expired: AtomicU64,
    /// Packets XDP dropped for blocklist entries (expired and in force, static ones too).
    blocked_packets: AtomicU64,
    block_refused: AtomicU64,
    spared: AtomicU64,
    protected_active: AtomicU64,
    protect_on: AtomicU64,
    protect_off: AtomicU64,
    action_errors: AtomicU64,
    tallies: AtomicU64,
    /// Written by the workers: tallies dropped because the controller's queue was full.
    pub tallies_dropped: AtomicU64,
}

impl DdosCounters {
    /// Adds the counters under `picket.ddos.*` (eve `stats.picket.ddos`).
    pub fn add_to(&self, into: &mut CounterSet) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for kind in Kind::ALL {
            let i = kind as usize;
            into.add(&format!("picket.ddos.{}.findings", kind.name()), get(&self.findings[i]));
            into.add(&format!("picket.ddos.{}.keys_refused", kind.name()), get(&self.keys_refused[i]));
        }
        for (name, v) in [
            ("picket.ddos.blocks", &self.blocks),
            ("picket.ddos.blocks_active", &self.blocks_active),
            ("picket.ddos.blocks_expired", &self.blocks_expired),
            ("picket.ddos.blocked_packets", &self.blocked_packets),
            ("picket.ddos.block_refused", &self.block_refused),
            ("picket.ddos.spared", &self.spared),
            ("picket.ddos.protected_active", &self.protected_active),
            ("picket.ddos.protect_on", &self.protect_on),
            ("picket.ddos.protect_off", &self.protect_off),
            ("picket.ddos.action_errors", &self.action_errors),
            ("picket.ddos.tallies", &self.tallies),
            ("picket.ddos.tallies_dropped", &self.tallies_dropped),
        ] {
            into.add(name, get(v));
        }
    }
}

/// What the controller is started with.
pub struct ControllerSetup {
    pub settings: Arc<DetectorSettings>,
    /// The capture interfaces: their addresses are never blocked.
    pub interfaces: Vec<String>,
    /// `ddos.blocklist.static`: blocked for the whole run.
    pub static_blocks: Vec<Prefix>,
    pub blocklist: Option<Blocklist>,
    pub protect: Option<Box<dyn SynProtect>>,
}

/// The running controller: its thread, the workers' tally channel, its counters.
pub struct Controller {
    pub tallies: Sender<Tallies>,
    pub counters: Arc<DdosCounters>,
    /// The controller's eve lines, for the run's writer (`LiveOptions::extra_events`).
    pub events: Receiver<EventBuf>,
    /// The detectors' settings, for the workers' inspectors (`InspectSettings::detectors`).
    pub settings: Arc<DetectorSettings>,
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Controller {
    /// The controller of a live run with the DDoS layer: `ddos.detectors` and
    /// `ddos.blocklist.static` from `config`, the layer's blocklist, its interfaces'
    /// addresses never blocked. SYN cookies are steered once a [`SynProtect`] is given
    /// (`setup.protect`; see the module docs).
    pub fn for_run(config: &crate::config::Config, layer: &mut super::DdosLayer) -> Result<Controller, String> {
        let ddos = crate::config::ddos_config(config)?;
        let settings = Arc::new(crate::config::detector_settings(config, ddos.block_time)?);
        let static_blocks = crate::config::static_blocklist(config)?;
        let interfaces = layer.xdp_mut().attached().iter().map(|(name, _)| name.clone()).collect();
        let blocklist = Blocklist::take(layer.xdp_mut()).map_err(|e| e.to_string())?;
        let (events_tx, events_rx) = crossbeam_channel::unbounded();
        let protect = layer.take_protect().map(|table| Box::new(table) as Box<dyn SynProtect>);
        let setup = ControllerSetup { settings, interfaces, static_blocks, blocklist: Some(blocklist), protect };
        Controller::start(setup, events_tx, events_rx)
    }

    /// The `picket.ddos.*` counters as a stats hook (`LiveOptions::global_counters`).
    pub fn global_counters(&self) -> crate::counters::CounterSource {
        let counters = Arc::clone(&self.counters);
        Box::new(move |into: &mut CounterSet| counters.add_to(into))
    }

    /// Writes the static entries, then starts the thread, which writes its alerts to
    /// `events` and runs until [`Controller::stop`]. Errors name the bad entry.
    pub fn start(
        mut setup: ControllerSetup,
        events: Sender<EventBuf>,
        events_rx: Receiver<EventBuf>,
    ) -> Result<Controller, String> {
        if let Some(list) = setup.blocklist.as_mut() {
            for p in &setup.static_blocks {
                match list.block(p.addr, p.len, None) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(format!(
                            "ddos.blocklist.static: {p} does not fit: the blocklist is full \
                             (raise ddos.blocklist.max-entries)"
                        ))
                    }
                    Err(e) => return Err(format!("ddos.blocklist.static: {p}: {e}")),
                }
            }
        }
        let mut never = NeverBlock { prefixes: setup.settings.allow.clone() };
        never.prefixes.extend(interface_addresses(&setup.interfaces).into_iter().map(Prefix::host));
        let (tx, rx) = crossbeam_channel::bounded(TALLY_QUEUE);
        let counters = Arc::new(DdosCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let settings = Arc::clone(&setup.settings);
        let mut state = State {
            evaluator: Evaluator::new(&setup.settings),
            blocklist: setup.blocklist,
            protect: setup.protect,
            never,
            counters: Arc::clone(&counters),
            last_syns: HashMap::new(),
            statics: setup.static_blocks.len() as u64,
            expired_packets: 0,
        };
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("ddos-ctl".into())
            .spawn(move || state.run(rx, events, &thread_stop))
            .map_err(|e| format!("cannot start the DDoS controller thread: {e}"))?;
        Ok(Controller { tallies: tx, counters, events: events_rx, settings, thread: Some(thread), stop })
    }

    /// Ends the thread (its last alerts are written first).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop();
    }
}

struct State {
    evaluator: Evaluator,
    blocklist: Option<Blocklist>,
    protect: Option<Box<dyn SynProtect>>,
    never: NeverBlock,
    counters: Arc<DdosCounters>,
    /// Kernel SYN totals per protected destination at the last evaluation.
    last_syns: HashMap<(IpAddr, u16), u64>,
    /// Static entries (never expire), counted in blocks_active.
    statics: u64,
    /// Packets dropped for entries that expired (their final counts).
    expired_packets: u64,
}

impl State {
    fn run(&mut self, rx: Receiver<Tallies>, events: Sender<EventBuf>, stop: &AtomicBool) {
        let start = Instant::now();
        let mut next_eval = start + EVALUATE_EVERY;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(EXPIRE_EVERY);
            for tallies in rx.try_iter() {
                self.counters.tallies.fetch_add(1, Ordering::Relaxed);
                self.evaluator.add(&tallies);
            }
            if let Some(list) = self.blocklist.as_mut() {
                let expired = list.expire();
                self.counters.blocks_expired.fetch_add(expired.len() as u64, Ordering::Relaxed);
                self.expired_packets += expired.iter().map(|(_, _, v)| v.packets).sum::<u64>();
            }
            if Instant::now() >= next_eval {
                next_eval += EVALUATE_EVERY;
                let findings = self.evaluate(start.elapsed().as_secs());
                let mut buf = EventBuf::default();
                for f in &findings {
                    let blocked = self.act(f);
                    if !f.signature.is_empty() {
                        buf.push(EVENT_KEY, |out| write_alert(out, f, blocked));
                    }
                }
                if !buf.is_empty() {
                    let _ = events.send(buf);
                }
                self.count_blocked_packets();
            }
            self.publish();
        }
    }

    fn evaluate(&mut self, now_secs: u64) -> Vec<Finding> {
        let mut deltas = HashMap::new();
        if let Some(p) = &self.protect {
            for (dst, total) in p.syn_counts() {
                let before = self.last_syns.insert(dst, total).unwrap_or(0);
                deltas.insert(dst, total.saturating_sub(before));
            }
        }
        self.evaluator.second(now_secs, &self.never, &deltas)
    }

    /// Carries out a finding's actions; whether it blocked something.
    fn act(&mut self, f: &Finding) -> bool {
        let c = &self.counters;
        if f.spared {
            c.spared.fetch_add(1, Ordering::Relaxed);
        }
        let mut acted = false;
        for action in &f.actions {
            let result = match *action {
                Action::Block { prefix, ttl_secs } => match self.blocklist.as_mut() {
                    None => Ok(false),
                    Some(list) => match list.block(prefix.addr, prefix.len, Some(Duration::from_secs(ttl_secs))) {
                        Ok(true) => {
                            c.blocks.fetch_add(1, Ordering::Relaxed);
                            Ok(true)
                        }
                        Ok(false) => {
                            c.block_refused.fetch_add(1, Ordering::Relaxed);
                            Ok(false)
                        }
                        Err(e) => Err(e.to_string()),
                    },
                },
                Action::Protect { addr, port } => match self.protect.as_mut() {
                    None => Ok(false),
                    Some(p) => p.protect(addr, port).map(|()| {
                        c.protect_on.fetch_add(1, Ordering::Relaxed);
                        true
                    }),
                },
                Action::Unprotect { addr, port } => match self.protect.as_mut() {
                    None => Ok(false),
                    Some(p) => {
                        self.last_syns.remove(&(addr, port));
                        p.unprotect(addr, port).map(|()| {
                            c.protect_off.fetch_add(1, Ordering::Relaxed);
                            false
                        })
                    }
                },
            };
            match result {
                Ok(done) => acted |= done,
                Err(e) => {
                    c.action_errors.fetch_add(1, Ordering::Relaxed);
                    eprintln!("picket: ddos: {action:?} failed: {e}");
                }
            }
        }
        acted
    }

    /// `blocked_packets`: what expired entries dropped plus what the entries in force
    /// dropped so far (read from the kernel once a second, skipped for a huge list).
    fn count_blocked_packets(&self) {
        let active = match &self.blocklist {
            Some(list) if list.len() <= MAX_COUNTED_ENTRIES => list.entries().iter().map(|(_, _, v)| v.packets).sum(),
            _ => 0,
        };
        self.counters.blocked_packets.store(self.expired_packets + active, Ordering::Relaxed);
    }

    fn publish(&self) {
        let c = &self.counters;
        for kind in Kind::ALL {
            let i = kind as usize;
            c.findings[i].store(self.evaluator.findings[i], Ordering::Relaxed);
            c.keys_refused[i].store(self.evaluator.keys_refused[i], Ordering::Relaxed);
        }
        let active = self.blocklist.as_ref().map_or(0, |l| l.len() as u64);
        c.blocks_active.store(active.saturating_sub(self.statics), Ordering::Relaxed);
        c.protected_active.store(self.evaluator.protected() as u64, Ordering::Relaxed);
    }
}

/// One eve `alert` line for a finding.
fn write_alert(out: &mut Vec<u8>, f: &Finding, blocked: bool) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let ts = Timestamp::from_parts(now.as_secs(), now.subsec_nanos());
    let unspecified = |like: Option<(IpAddr, u16)>| match like {
        Some((IpAddr::V6(_), _)) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        _ => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
    };
    let (src_ip, src_port) = f.src.unwrap_or((unspecified(f.dst), 0));
    let (dest_ip, dest_port) = f.dst.unwrap_or((unspecified(f.src), 0));
    let icmp = matches!(f.proto, 1 | 58).then_some((0, 0));
    let mut o = EventHeader {
        ts,
        flow_id: None,
        pcap_cnt: None,
        event_type: "alert",
        src_ip,
        src_port,
        dest_ip,
        dest_port,
        proto: f.proto,
        icmp,
    }
    .write(out);
    o.u64("ip_v", if src_ip.is_ipv4() { 4 } else { 6 });
    o.open("alert")
        .str("action", if blocked { "blocked" } else { "allowed" })
        .u64("gid", GID.into())
        .u64("signature_id", f.kind.sid().into())
        .u64("rev", 1)
        .str("signature", &f.signature)
        .str("category", CATEGORY)
        .u64("severity", SEVERITY.into())
        .close();
    o.finish();
}

/// The addresses of `interfaces` (iproute2's view); unreadable ones are skipped.
pub fn interface_addresses(interfaces: &[String]) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for name in interfaces {
        let Ok(o) = Command::new("ip").args(["-j", "addr", "show", "dev", name]).output() else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else { continue };
        for link in v.as_array().into_iter().flatten() {
            for a in link.get("addr_info").and_then(|a| a.as_array()).into_iter().flatten() {
                if let Some(ip) = a.get("local").and_then(|l| l.as_str()).and_then(|l| l.parse().ok()) {
                    out.push(ip);
                }
            }
        }
    }
    out
}
