//! Running picket as a service: the control plane of a live run.
//!
//! Requests reach a running picket three ways, and all end up as one [`Command`] on one
//! channel that the live run's main thread answers between its once-a-second chores
//! (`crate::pipeline::live`):
//!
//! | source | module | requests |
//! |---|---|---|
//! | signals (`SIGUSR2`, `SIGHUP`) | [`signals`] | reload rules, reopen logs |
//! | the unix control socket (`picket ctl`, Suricata's `unix-command`) | [`ctl`] | all of [`Request`] |
//! | `ExecReload=` of the systemd unit | (sends `SIGUSR2`) | reload rules |
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`Request`], [`Command`], [`ControlSender`], [`LogReopen`] |
//! | `signals.rs` | the signal thread: SIGHUP, SIGUSR2 (and SIGINT/SIGTERM → stop) |
//! | `ctl.rs` | the control socket server and the `picket ctl` client |
//! | `reload.rs` | rule reload without loss: build in the background, swap between batches |
//! | `daemon.rs` | `--pidfile`, `-D`, `--user/--group` (the FFI fence of this module) |

pub mod ctl;
pub mod daemon;
pub mod reload;
pub mod signals;

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The command line of running as a service (flattened into `picket`'s run arguments).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Service")]
pub struct ServiceArgs {
    /// Write the process id to FILE; refuse to start while FILE names a running picket.
    #[arg(long, value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// Run in the background (detach from the terminal once the start-up succeeded).
    #[arg(short = 'D')]
    pub daemon: bool,
    /// After setting up capture, run as USER (keeping only the capabilities capture needs).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// After setting up capture, run with GROUP (default: USER's primary group).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Listen for `picket ctl` on a unix socket: `--unix-socket=PATH`, or alone for the
    /// YAML `unix-command.filename`.
    #[arg(long = "unix-socket", value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub unix_socket: Option<String>,
}

/// What a client or a signal asks of a running picket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Build the rule set again from the configured files and switch every worker to it
    /// (`SIGUSR2`, `picket ctl reload-rules`).
    ReloadRules,
    /// Close and reopen every log file (`SIGHUP`, `picket ctl reopen-logs`).
    ReopenLogs,
    /// A snapshot of every counter, in the shape of eve's `stats` object.
    Stats,
    /// Kernel counts of one capture interface (`None`: all of them).
    IfaceStat(Option<String>),
    /// The capture interfaces.
    IfaceList,
    /// End the run as SIGTERM does (final stats, logs flushed).
    Shutdown,
    Version,
    Uptime,
    RunningMode,
    CaptureMode,
    /// Rules loaded / failed of the running engine, and its last reload.
    RulesetStats,
}

/// A successful answer is a JSON value (Suricata's `"message"`); a refusal or failure a
/// one-line reason.
pub type Reply = Result<serde_json::Value, String>;

/// A request with the channel its answer goes back on (`None`: nobody waits, as for a
/// signal).
pub struct Command {
    pub request: Request,
    pub reply: Option<Sender<Reply>>,
}

/// Commands queued at most before a sender waits; a signal that finds the queue full is
/// dropped (the same request is already queued).
const QUEUE: usize = 64;

/// The sending side of the control channel, cloned into the signal thread and the
/// control socket.
#[derive(Clone)]
pub struct ControlSender(Sender<Command>);

/// A new control channel: senders for the request sources, the receiver for the live
/// run's main thread.
pub fn channel() -> (ControlSender, Receiver<Command>) {
    let (tx, rx) = crossbeam_channel::bounded(QUEUE);
    (ControlSender(tx), rx)
}

impl ControlSender {
    /// Queues a request nobody waits on. Returns false when the queue is full or the run
    /// is over.
    pub fn notify(&self, request: Request) -> bool {
        self.0.try_send(Command { request, reply: None }).is_ok()
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub fn call(&self, request: Request, timeout: Duration) -> Reply {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.0
            .send_timeout(Command { request, reply: Some(tx) }, timeout)
            .map_err(|_| "picket is not taking commands (shutting down?)".to_string())?;
        rx.recv_timeout(timeout).unwrap_or_else(|_| Err("no answer in time".to_string()))
    }
}

/// The log generation: every log writer remembers the generation it opened its file in,
/// and reopens its file (same path, new inode after a rotation) when the generation moved
/// on. SIGHUP and `picket ctl reopen-logs` bump it.
#[derive(Clone, Debug, Default)]
pub struct LogReopen(Arc<AtomicU64>);

impl LogReopen {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn generation(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Rebuilds the rule set of a running picket (`reload.rs` implements it).
pub trait RuleReloader: Send + Sync {
    /// Loads the configured rule files again and, when they build, switches every worker to
    /// the new engine; on failure the running engine stays and the reason is returned.
    fn reload(&self) -> Reply;
    /// Rules loaded / failed / skipped of the running engine and its last reload
    /// (`ruleset-stats`; also eve `stats.detect.engines`).
    fn ruleset_stats(&self) -> serde_json::Value;
}

/// What the live run's main thread needs to answer commands.
pub struct ControlPlane {
    pub commands: Receiver<Command>,
    /// `None`: this run cannot reload its rules (no rule files); the request is refused.
    pub reloader: Option<Arc<dyn RuleReloader>>,
    pub reopen: LogReopen,
    pub info: RunInfo,
}

/// Facts about the run, for `version`, `running-mode`, `capture-mode`, `iface-list`.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// "workers" (live runs have no other).
    pub running_mode: String,
    /// "af-packet", "af-xdp", "nfqueue", "bridge".
    pub capture_mode: String,
    pub interfaces: Vec<String>,
    pub started: std::time::Instant,
}

/// `version`: picket's version and build features.
pub fn version_string() -> String {
    let mut features = Vec::new();
    if cfg!(feature = "hyperscan") {
        features.push("hyperscan");
    }
    if crate::xdp::XdpLayer::available() {
        features.push("xdp");
    }
    format!("picket {} ({})", env!("CARGO_PKG_VERSION"), features.join(", "))
}

/// One warning line on stderr, as the command line writes them (`picket: warning: ...`).
pub(crate) fn warn(msg: impl std::fmt::Display) {
    eprintln!("picket: warning: {msg}");
}
