//! The control socket (Suricata's `unix-command`) and the `picket ctl` client.
//!
//! The protocol is Suricata's, so `suricatasc` habits carry over: JSON values on a unix
//! stream socket, no framing beyond JSON itself (picket ends each answer with `\n`).
//!
//! ```text
//! client: {"version": "0.2"}                          server: {"return": "OK"}
//! client: {"command": "iface-stat", "arguments": {"iface": "eth0"}}
//! server: {"return": "OK", "message": {"pkts": 10, "drop": 0, ...}}
//! client: {"command": "nope"}                         server: {"return": "NOK", "message": "unknown command ..."}
//! ```
//!
//! | command (Suricata's name, picket's alias) | request |
//! |---|---|
//! | `reload-rules`, `ruleset-reload-rules` | [`Request::ReloadRules`], answered when the new engine runs |
//! | `ruleset-reload-nonblocking` | [`Request::ReloadRules`] queued; answered at once |
//! | `reopen-log-files`, `reopen-logs` | [`Request::ReopenLogs`] |
//! | `dump-counters`, `stats` | [`Request::Stats`] |
//! | `iface-stat [iface]`, `iface-list` | [`Request::IfaceStat`], [`Request::IfaceList`] |
//! | `shutdown`, `version`, `uptime`, `running-mode`, `capture-mode`, `ruleset-stats` | as named |
//! | `command-list`, `help` | answered by the socket thread |
//!
//! The server is one thread accepting connections and one short-lived thread per client
//! (at most [`MAX_CLIENTS`]); a client gets [`MAX_MESSAGE_BYTES`] per message and
//! [`IDLE_TIMEOUT`] between messages, so a slow or hostile client costs a thread for a
//! bounded time and never reaches the capture path: requests go through the control
//! channel the live run's main thread answers between its chores.

use super::{ControlSender, Reply, Request, RuleReloader, RunInfo};
use crate::config::Config;
use crate::tools::snapshot::WorkerSnapshot;
use serde_json::{json, Value};
use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the socket goes when neither `--unix-socket=PATH` nor `unix-command.filename`
/// says (a relative `filename` is taken inside this directory, as Suricata does).
pub const DEFAULT_SOCKET_DIR: &str = "/run/picket";
pub const DEFAULT_SOCKET_NAME: &str = "picket-command.socket";
/// Permissions of the socket: owner and group may connect.
pub const DEFAULT_MODE: u32 = 0o660;
/// Protocol versions accepted in the handshake (Suricata's 0.1 and 0.2).
const VERSIONS: &[&str] = &["0.1", "0.2"];
/// Clients served at once; one more is told so and closed.
pub const MAX_CLIENTS: usize = 8;
/// Largest request a client may send (a command is tens of bytes).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Largest answer the client reads (a `stats` snapshot of many workers).
const MAX_ANSWER_BYTES: usize = 16 << 20;
/// A client silent this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A client that does not read its answer this long is closed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// How long a request waits for the live run's answer (the main thread answers every
/// ~100 ms–1 s); a rule reload builds a whole engine.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
const RELOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// Read chunk of a client connection.
const READ_CHUNK: usize = 4096;

/// A control-socket failure: one line naming the socket and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtlError(pub String);

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CtlError {}

/// Whether `unix-command.enabled` asks for the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enabled {
    Yes,
    No,
    /// On for live runs; a socket that cannot be set up is a warning.
    Auto,
}

/// The socket a live run listens on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketSettings {
    pub path: PathBuf,
    /// Permission bits of the socket file.
    pub mode: u32,
    /// `unix-command.group`: the group given the socket (its members may connect).
    pub group: Option<String>,
    /// The id of `group`, looked up by the caller (`daemon::LiveService::start`) before the
    /// socket is made.
    pub group_id: Option<u32>,
    /// A failure to listen ends the run (`enabled: yes`, `--unix-socket`); else it warns.
    pub required: bool,
}

/// The path `unix-command.filename` names (relative: inside [`DEFAULT_SOCKET_DIR`]), or
/// the default.
pub fn configured_path(config: &Config) -> PathBuf {
    match config.get_str("unix-command.filename") {
        Some(name) if Path::new(&name).is_absolute() => PathBuf::from(name),
        Some(name) => Path::new(DEFAULT_SOCKET_DIR).join(name),
        None => Path::new(DEFAULT_SOCKET_DIR).join(DEFAULT_SOCKET_NAME),
    }
}

/// The socket of a live run from the YAML `unix-command:` section and `--unix-socket`
/// (`Some("")`: the flag alone, the YAML's path). `None`: no socket. Without either the
/// socket is off, as in Suricata when the section is missing.
pub fn socket_settings(config: &Config, flag: Option<&str>) -> Result<Option<SocketSettings>, CtlError> {
    let enabled = match config.get_str("unix-command.enabled").map(|v| v.to_ascii_lowercase()) {
        None => Enabled::No,
        Some(v) if v == "auto" => Enabled::Auto,
        Some(v) if matches!(v.as_str(), "yes" | "true" | "on" | "1") => Enabled::Yes,
        Some(v) if matches!(v.as_str(), "no" | "false" | "off" | "0") => Enabled::No,
        Some(v) => {
            return Err(CtlError(format!("unix-command.enabled: '{v}' is not yes, no or auto")));
        }
    };
    let (path, required) = match flag {
        Some("") => (configured_path(config), true),
        Some(path) => (PathBuf::from(path), true),
        None if enabled == Enabled::No => return Ok(None),
        None => (configured_path(config), enabled == Enabled::Yes),
    };
    let mode = match config.get_str("unix-command.mode") {
        None => DEFAULT_MODE,
        Some(text) => u32::from_str_radix(text.trim_start_matches("0o"), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| CtlError(format!("unix-command.mode: '{text}' is not an octal mode such as 0660")))?,
    };
    Ok(Some(SocketSettings { path, mode, group: config.get_str("unix-command.group"), group_id: None, required }))
}

// ---------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------

/// The listening socket and its accept thread. Dropping it stops the thread and removes
/// the socket file (when it is still ours).
#[derive(Debug)]
pub struct CtlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// (device, inode) of our socket file, so a successor's socket is never removed.
    identity: Option<(u64, u64)>,
    /// The socket's directory, when this server made it.
    created_dir: Option<PathBuf>,
}

impl CtlServer {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory made for the socket (given to `--user` with the socket).
    pub fn created_dir(&self) -> Option<&Path> {
        self.created_dir.as_deref()
    }
}

impl Drop for CtlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if self.identity.is_some() && file_identity(&self.path) == self.identity {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Listens on `settings.path` and serves clients until the returned server drops. A
/// socket file nobody listens on (left by a crash) is replaced; one a live process
/// listens on refuses the start, as does a path that is not a socket.
pub fn serve(settings: &SocketSettings, control: ControlSender) -> Result<CtlServer, CtlError> {
    let path = &settings.path;
    let shown = path.display();
    let mut created_dir = None;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            created_dir = Some(dir.to_path_buf());
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| CtlError(format!("control socket {shown}: cannot create {}: {e}", dir.display())))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(CtlError(format!(
                    "control socket {shown}: another process (a running picket?) listens on it; stop it, or set \
                     another unix-command.filename / --unix-socket=PATH"
                )))
            }
            Err(_) => {
                std::fs::remove_file(path)
                    .map_err(|e| CtlError(format!("control socket {shown}: cannot remove the stale socket: {e}")))?;
            }
        },
        Ok(_) => {
            return Err(CtlError(format!(
                "control socket {shown}: the path exists and is not a socket; remove it or choose another path"
            )))
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path).map_err(|e| CtlError(format!("control socket {shown}: bind: {e}")))?;
    let identity = file_identity(path);
    let server_guard = |e: String| {
        let _ = std::fs::remove_file(path);
        CtlError(e)
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(settings.mode))
        .map_err(|e| server_guard(format!("control socket {shown}: chmod {:o}: {e}", settings.mode)))?;
    if let (Some(group), Some(gid)) = (&settings.group, settings.group_id) {
        std::os::unix::fs::chown(path, None, Some(gid))
            .map_err(|e| server_guard(format!("control socket {shown}: chown to group {group}: {e}")))?;
    }
    listener.set_nonblocking(true).map_err(|e| server_guard(format!("control socket {shown}: {e}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("ctl".into())
        .spawn(move || accept_loop(listener, control, thread_stop))
        .map_err(|e| server_guard(format!("control socket {shown}: cannot start its thread: {e}")))?;
    Ok(CtlServer { path: path.clone(), stop, thread: Some(thread), identity, created_dir })
}

fn accept_loop(listener: UnixListener, control: ControlSender, stop: Arc<AtomicBool>) {
    let clients = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
                if clients.fetch_add(1, Ordering::Relaxed) >= MAX_CLIENTS {
                    clients.fetch_sub(1, Ordering::Relaxed);
                    let _ = send(&mut stream, &nok(format!("too many clients (at most {MAX_CLIENTS}); retry later")));
                    continue;
                }
                let (control, stop, clients) = (control.clone(), Arc::clone(&stop), Arc::clone(&clients));
                let spawned = std::thread::Builder::new().name("ctl-client".into()).spawn(move || {
                    serve_client(stream, &control, &stop);
                    clients.fetch_sub(1, Ordering::Relaxed);
                });
                if spawned.is_err() {
                    // The closure (and its count) went with the failed spawn.
                    eprintln!("picket: control socket: cannot start a client thread");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

fn ok(message: Option<Value>) -> Value {
    match message {
        Some(message) => json!({"return": "OK", "message": message}),
        None => json!({"return": "OK"}),
    }
}

fn nok(message: impl Into<String>) -> Value {
    json!({"return": "NOK", "message": message.into()})
}

fn send(stream: &mut UnixStream, answer: &Value) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(answer).map_err(io::Error::other)?;
    bytes.push(b'\n');
    stream.write_all(&bytes)
}

/// Reads JSON values from a byte stream with a size limit, an idle limit and a stop flag.
struct JsonReader {
    buffer: Vec<u8>,
    limit: usize,
}

enum Next {
    Value(Value),
    /// The peer closed, went idle or the run stops.
    Closed,
    /// Not JSON, or too large: told to the peer, then closed.
    Bad(String),
}

impl JsonReader {
    fn new(limit: usize) -> JsonReader {
        JsonReader { buffer: Vec::new(), limit }
    }

    /// The next complete JSON value; waits in `POLL` slices up to `idle`.
    fn next(&mut self, stream: &mut UnixStream, idle: Duration, stop: Option<&AtomicBool>) -> Next {
        let since = Instant::now();
        loop {
            let start = self.buffer.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(self.buffer.len());
            self.buffer.drain(..start);
            if !self.buffer.is_empty() {
                let mut values = serde_json::Deserializer::from_slice(&self.buffer).into_iter::<Value>();
                match values.next() {
                    Some(Ok(value)) => {
                        let used = values.byte_offset();
                        self.buffer.drain(..used);
                        return Next::Value(value);
                    }
                    Some(Err(e)) if !e.is_eof() => return Next::Bad(format!("not JSON: {e}")),
                    _ => {}
                }
            }
            if self.buffer.len() > self.limit {
                return Next::Bad(format!("message larger than {} bytes", self.limit));
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) || since.elapsed() >= idle {
                return Next::Closed;
            }
            let mut chunk = [0u8; READ_CHUNK];
            match stream.read(&mut chunk) {
                Ok(0) => return Next::Closed,
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Next::Closed,
            }
        }
    }
}

/// One client: the version handshake, then commands until it closes or idles out.
fn serve_client(mut stream: UnixStream, control: &ControlSender, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(POLL));
    let mut reader = JsonReader::new(MAX_MESSAGE_BYTES);
    let mut handshake_done = false;
    loop {
        let message = match reader.next(&mut stream, IDLE_TIMEOUT, Some(stop)) {
            Next::Value(value) => value,
            Next::Closed => return,
            Next::Bad(why) => {
                let _ = send(&mut stream, &nok(why));
                return;
            }
        };
        let answer = if !handshake_done {
            match message.get("version").and_then(Value::as_str) {
                Some(v) if VERSIONS.contains(&v) => {
                    handshake_done = true;
                    ok(None)
                }
                Some(v) => nok(format!("unsupported protocol version {v}; picket speaks {}", VERSIONS.join(", "))),
                None => nok("send {\"version\": \"0.2\"} first"),
            }
        } else {
            answer_command(&message, control)
        };
        let refused = answer["return"] == "NOK" && !handshake_done;
        if send(&mut stream, &answer).is_err() || refused {
            return;
        }
    }
}

/// What a command name asks the server to do.
#[derive(Debug)]
enum Action {
    /// Send and wait for the answer.
    Call(Request, Duration),
    /// Queue and answer at once.
    Queue(Request),
    /// Answered by the socket thread.
    Local(Value),
}

/// Commands the server knows, in `command-list` order (Suricata's names first).
pub const COMMANDS: &[&str] = &[
    "shutdown",
    "command-list",
    "help",
    "version",
    "uptime",
    "running-mode",
    "capture-mode",
    "dump-counters",
    "stats",
    "reload-rules",
    "ruleset-reload-rules",
    "ruleset-reload-nonblocking",
    "ruleset-stats",
    "reopen-log-files",
    "reopen-logs",
    "iface-list",
    "iface-stat",
];

fn action(command: &str, arguments: Option<&Value>) -> Result<Action, String> {
    let call = |request| Ok(Action::Call(request, ANSWER_TIMEOUT));
    match command {
        "shutdown" => call(Request::Shutdown),
        "command-list" | "help" => Ok(Action::Local(json!({"count": COMMANDS.len(), "commands": COMMANDS}))),
        "version" => call(Request::Version),
        "uptime" => call(Request::Uptime),
        "running-mode" => call(Request::RunningMode),
        "capture-mode" => call(Request::CaptureMode),
        "dump-counters" | "stats" => call(Request::Stats),
        "reload-rules" | "ruleset-reload-rules" => Ok(Action::Call(Request::ReloadRules, RELOAD_TIMEOUT)),
        "ruleset-reload-nonblocking" => Ok(Action::Queue(Request::ReloadRules)),
        "ruleset-stats" => call(Request::RulesetStats),
        "reopen-log-files" | "reopen-logs" => call(Request::ReopenLogs),
        "iface-list" => call(Request::IfaceList),
        "iface-stat" => {
            let iface = match arguments.and_then(|a| a.get("iface")) {
                None | Some(Value::Null) => None,
                Some(Value::String(name)) => Some(name.clone()),
                Some(other) => return Err(format!("iface-stat: \"iface\" must be a string, not {other}")),
            };
            call(Request::IfaceStat(iface))
        }
        other => Err(format!("unknown command '{other}'; command-list names the commands")),
    }
}

fn answer_command(message: &Value, control: &ControlSender) -> Value {
    let Some(command) = message.get("command").and_then(Value::as_str) else {
        return nok("expected {\"command\": NAME, \"arguments\": {...}}");
    };
    match action(command, message.get("arguments")) {
        Err(why) => nok(why),
        Ok(Action::Local(value)) => ok(Some(value)),
        Ok(Action::Queue(request)) => {
            if control.notify(request) {
                ok(Some(Value::String("queued".into())))
            } else {
                nok("a request of this kind is already queued, or picket is shutting down")
            }
        }
        Ok(Action::Call(request, timeout)) => match control.call(request, timeout) {
            Ok(value) => ok(Some(value)),
            Err(why) => nok(why),
        },
    }
}

// ---------------------------------------------------------------------------------------
// Info requests (answered on the live run's main thread)
// ---------------------------------------------------------------------------------------

/// Answers the requests that only read facts of the run (version, uptime, modes,
/// interfaces, ruleset stats, iface-stat).
pub fn answer_info(
    request: &Request,
    info: &RunInfo,
    reloader: Option<&dyn RuleReloader>,
    workers: &[WorkerSnapshot],
) -> Reply {
    match request {
        Request::Version => Ok(Value::String(super::version_string())),
        Request::Uptime => Ok(json!(info.started.elapsed().as_secs())),
        Request::RunningMode => Ok(Value::String(info.running_mode.clone())),
        Request::CaptureMode => Ok(Value::String(info.capture_mode.clone())),
        Request::IfaceList => Ok(json!({"count": info.interfaces.len(), "ifaces": info.interfaces})),
        Request::IfaceStat(Some(name)) => {
            if !info.interfaces.contains(name) {
                return Err(format!(
                    "interface {name} is not captured by this run; iface-list names its interfaces ({})",
                    info.interfaces.join(", ")
                ));
            }
            Ok(iface_stat(info, workers))
        }
        Request::IfaceStat(None) => {
            let stat = iface_stat(info, workers);
            Ok(json!({"ifaces": info.interfaces.iter().map(|i| (i.clone(), stat.clone()))
                .collect::<serde_json::Map<String, Value>>()}))
        }
        Request::RulesetStats => match reloader {
            Some(reloader) => Ok(match reloader.ruleset_stats() {
                // Suricata answers a list of engines.
                Value::Array(engines) => Value::Array(engines),
                engine => Value::Array(vec![engine]),
            }),
            None => Err("no rule files loaded in this run: no ruleset stats".into()),
        },
        other => Err(format!("{other:?} is not an information request")),
    }
}

/// Suricata's iface-stat fields. picket's workers read every capture interface of the run
/// (a fanout group per interface, each worker a member of all), so the counts are the
/// run's; with several interfaces, `scope` says so.
fn iface_stat(info: &RunInfo, workers: &[WorkerSnapshot]) -> Value {
    let pkts: u64 = workers.iter().map(|w| w.packets).sum();
    let bytes: u64 = workers.iter().map(|w| w.bytes).sum();
    let drop: u64 = workers.iter().map(|w| w.drops).sum();
    let mut stat = json!({"pkts": pkts, "bytes": bytes, "drop": drop, "workers": workers.len()});
    if info.interfaces.len() > 1 {
        stat["scope"] = Value::String(format!("all {} interfaces of the run", info.interfaces.len()));
    }
    stat
}

// ---------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------

#[derive(clap::Args, Debug)]
pub struct CtlArgs {
    /// The control socket (default: the YAML's `unix-command.filename`, else the default path).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<std::path::PathBuf>,
    /// Suricata-format YAML to read `unix-command.filename` from.
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// reload-rules, reopen-logs, stats, iface-stat [IFACE], iface-list, shutdown, version,
    /// uptime, running-mode, capture-mode, ruleset-stats, command-list (and Suricata's names:
    /// dump-counters, reopen-log-files, ruleset-reload-rules, ruleset-reload-nonblocking).
    #[arg(value_name = "COMMAND")]
    pub command: String,
    /// The command's arguments: `iface-stat IFACE`, or KEY=VALUE pairs.
    #[arg(value_name = "ARG")]
    pub args: Vec<String>,
}

/// How long the client waits to connect and for an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// `picket ctl COMMAND`: sends one command and prints the answer (strings as they are,
/// objects as pretty JSON). Errors (connection, NOK) carry the message.
pub fn run_client(args: &CtlArgs) -> Result<(), String> {
    let path = match (&args.socket, &args.config) {
        (Some(path), _) => path.clone(),
        (None, Some(config)) => {
            let (config, _) = Config::load(Some(config), &[]).map_err(|e| e.to_string())?;
            configured_path(&config)
        }
        (None, None) => Path::new(DEFAULT_SOCKET_DIR).join(DEFAULT_SOCKET_NAME),
    };
    let arguments = command_arguments(&args.command, &args.args)?;
    let timeout = match args.command.as_str() {
        "reload-rules" | "ruleset-reload-rules" => RELOAD_TIMEOUT,
        _ => CLIENT_TIMEOUT,
    };
    let message = call(&path, &args.command, arguments, timeout)?;
    match message {
        Value::String(text) => println!("{text}"),
        Value::Null => println!("OK"),
        other => println!("{}", serde_json::to_string_pretty(&other).unwrap_or_default()),
    }
    Ok(())
}

/// `iface-stat IFACE` → `{"iface": IFACE}`; `KEY=VALUE` → `{KEY: VALUE}`.
fn command_arguments(command: &str, args: &[String]) -> Result<Option<Value>, String> {
    if args.is_empty() {
        return Ok(None);
    }
    let mut map = serde_json::Map::new();
    for (i, arg) in args.iter().enumerate() {
        match arg.split_once('=') {
            Some((key, value)) => {
                map.insert(key.to_string(), Value::String(value.to_string()));
            }
            None if i == 0 && command == "iface-stat" => {
                map.insert("iface".into(), Value::String(arg.clone()));
            }
            None => return Err(format!("ctl {command}: unexpected argument '{arg}' (arguments are KEY=VALUE)")),
        }
    }
    Ok(Some(Value::Object(map)))
}

/// Connects to `path`, does the handshake, sends one command and returns its message;
/// NOK answers and connection failures are errors naming the socket.
pub fn call(path: &Path, command: &str, arguments: Option<Value>, timeout: Duration) -> Result<Value, String> {
    let shown = path.display();
    let mut stream = UnixStream::connect(path).map_err(|e| {
        format!("cannot connect to the control socket {shown}: {e}; is picket running with unix-command enabled?")
    })?;
    let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
    let _ = stream.set_read_timeout(Some(POLL));
    let mut reader = JsonReader::new(MAX_ANSWER_BYTES);
    let mut exchange = |request: Value, timeout: Duration| -> Result<Value, String> {
        send(&mut stream, &request).map_err(|e| format!("control socket {shown}: send: {e}"))?;
        let answer = match reader.next(&mut stream, timeout, None) {
            Next::Value(value) => value,
            Next::Closed => return Err(format!("control socket {shown}: no answer (closed or timed out)")),
            Next::Bad(why) => return Err(format!("control socket {shown}: bad answer: {why}")),
        };
        let message = answer.get("message").cloned().unwrap_or(Value::Null);
        match answer.get("return").and_then(Value::as_str) {
            Some("OK") => Ok(message),
            _ => Err(match message {
                Value::String(text) => text,
                other => other.to_string(),
            }),
        }
    };
    exchange(json!({"version": VERSIONS[VERSIONS.len() - 1]}), CLIENT_TIMEOUT)?;
    let mut request = json!({"command": command});
    if let Some(arguments) = arguments {
        request["arguments"] = arguments;
    }
    exchange(request, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            running_mode: "workers".into(),
            capture_mode: "af-packet".into(),
            interfaces: vec!["eth0".into()],
            started: Instant::now(),
        }
    }

    #[test]
    fn settings_follow_yaml_and_flag() {
        let none = Config::default();
        assert_eq!(socket_settings(&none, None).unwrap(), None);
        let s = socket_settings(&none, Some("")).unwrap().unwrap();
        assert_eq!(s.path, Path::new("/run/picket/picket-command.socket"));
        assert!(s.required);
        assert_eq!(s.mode, 0o660);
        let yaml =
            Config::from_yaml_str("unix-command:\n  enabled: auto\n  filename: ctl.sock\n  mode: \"0600\"\n").unwrap();
        let s = socket_settings(&yaml, None).unwrap().unwrap();
        assert_eq!(s.path, Path::new("/run/picket/ctl.sock"));
        assert!(!s.required);
        assert_eq!(s.mode, 0o600);
        let s = socket_settings(&yaml, Some("/tmp/x.sock")).unwrap().unwrap();
        assert_eq!(s.path, Path::new("/tmp/x.sock"));
        let bad = Config::from_yaml_str("unix-command:\n  enabled: maybe\n").unwrap();
        assert!(socket_settings(&bad, None).unwrap_err().0.contains("unix-command.enabled"));
        let bad = Config::from_yaml_str("unix-command:\n  enabled: yes\n  mode: 999\n").unwrap();
        assert!(socket_settings(&bad, None).unwrap_err().0.contains("unix-command.mode"));
    }

    #[test]
    fn commands_map_to_requests() {
        assert!(matches!(action("dump-counters", None), Ok(Action::Call(Request::Stats, _))));
        assert!(matches!(action("reopen-log-files", None), Ok(Action::Call(Request::ReopenLogs, _))));
        assert!(matches!(action("ruleset-reload-nonblocking", None), Ok(Action::Queue(Request::ReloadRules))));
        let args = json!({"iface": "eth0"});
        assert!(
            matches!(action("iface-stat", Some(&args)), Ok(Action::Call(Request::IfaceStat(Some(i)), _)) if i == "eth0")
        );
        assert!(action("iface-stat", Some(&json!({"iface": 3}))).is_err());
        assert!(action("rm-rf", None).unwrap_err().contains("unknown command"));
        assert_eq!(command_arguments("iface-stat", &["eth0".into()]).unwrap(), Some(json!({"iface": "eth0"})));
        assert!(command_arguments("version", &["x".into()]).is_err());
    }

    #[test]
    fn info_answers() {
        let workers =
            vec![WorkerSnapshot { name: "W#01".into(), packets: 5, bytes: 300, drops: 1, ..Default::default() }];
        let i = info();
        assert_eq!(answer_info(&Request::RunningMode, &i, None, &workers).unwrap(), json!("workers"));
        let stat = answer_info(&Request::IfaceStat(Some("eth0".into())), &i, None, &workers).unwrap();
        assert_eq!((stat["pkts"].as_u64(), stat["drop"].as_u64()), (Some(5), Some(1)));
        assert!(answer_info(&Request::IfaceStat(Some("eth9".into())), &i, None, &workers).is_err());
        assert_eq!(answer_info(&Request::IfaceList, &i, None, &workers).unwrap()["count"], 1);
        assert!(answer_info(&Request::RulesetStats, &i, None, &workers).is_err());
    }

    /// A real socket, a real client, and a fake main thread answering the channel.
    #[test]
    fn server_speaks_the_protocol_and_survives_bad_clients() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctl.sock");
        let settings =
            SocketSettings { path: path.clone(), mode: DEFAULT_MODE, group: None, group_id: None, required: true };
        let (tx, rx) = super::super::channel();
        let server = serve(&settings, tx).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        // A second server on the same live socket is refused.
        let (tx2, _rx2) = super::super::channel();
        assert!(serve(&settings, tx2).unwrap_err().0.contains("listens on it"));
        let answering = std::thread::spawn(move || {
            for command in rx.iter() {
                let reply = answer_info(&command.request, &info(), None, &[]);
                if let Some(tx) = command.reply {
                    let _ = tx.send(reply);
                }
            }
        });
        // Garbage and oversized messages get a NOK and a close; the server keeps serving.
        let mut bad = UnixStream::connect(&path).unwrap();
        bad.write_all(b"{\"version\": ]").unwrap();
        let mut text = String::new();
        let _ = bad.read_to_string(&mut text);
        assert!(text.contains("NOK"), "{text}");
        let mut big = UnixStream::connect(&path).unwrap();
        let mut endless = b"{\"command\": \"".to_vec();
        endless.resize(MAX_MESSAGE_BYTES + READ_CHUNK * 2, b'a');
        let _ = big.write_all(&endless);
        let mut text = String::new();
        let _ = big.read_to_string(&mut text);
        assert!(text.contains("larger than"), "{text}");
        // A silent client does not block others.
        let _silent = UnixStream::connect(&path).unwrap();
        assert_eq!(call(&path, "running-mode", None, CLIENT_TIMEOUT).unwrap(), json!("workers"));
        assert!(call(&path, "nope", None, CLIENT_TIMEOUT).unwrap_err().contains("unknown command"));
        assert_eq!(call(&path, "command-list", None, CLIENT_TIMEOUT).unwrap()["count"], COMMANDS.len());
        drop(server);
        assert!(!path.exists(), "the socket is removed when the server stops");
        drop(answering);
    }

    #[test]
    fn a_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stale.sock");
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let settings =
            SocketSettings { path: path.clone(), mode: DEFAULT_MODE, group: None, group_id: None, required: true };
        let (tx, _rx) = super::super::channel();
        let server = serve(&settings, tx).unwrap();
        assert!(UnixStream::connect(&path).is_ok());
        drop(server);
        std::fs::write(&path, "x").unwrap();
        let (tx, _rx) = super::super::channel();
        assert!(serve(&settings, tx).unwrap_err().0.contains("not a socket"));
    }
}
