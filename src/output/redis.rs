//! eve-log `filetype: redis`: eve events pushed to a Redis server, the way a fleet of
//! sensors feeds one SIEM (Logstash, Vector, ... read the list, channel or stream).
//!
//! The eve writer thread writes whole lines into the [`Write`] that [`open`] returns; each
//! `\n`-terminated line is one event. The writer never touches the network: it puts the
//! line in a bounded queue (`redis.buffer` events) and returns. A full queue drops the
//! event and counts it (`picket.redis.events_dropped`), so a slow or absent Redis never
//! stalls the eve writer, and through it the workers.
//!
//! A sender thread (`picket-redis`) owns the connection: it takes up to `batch-size`
//! queued events, sends them as one pipelined write (`pipelining.enabled`, else one
//! command and one round trip per event), and reads the replies. It reconnects with
//! exponential backoff ([`BACKOFF_FIRST`] doubling to [`BACKOFF_CAP`]) and holds the
//! events meanwhile; what does not fit in the queue is dropped and counted.
//!
//! Delivery is at most once, in order: an event is never sent twice. When a connection
//! breaks in the middle of a batch, the events whose replies did not come back are
//! counted dropped (and `events_unconfirmed`): some may have reached Redis. Before a
//! batch on a connection idle for [`IDLE_CHECK_AFTER`] the sender checks that the server
//! has not closed it (a Redis restart, Redis's `timeout`), so a restart while picket is
//! quiet costs no event, and one while it is busy at most a batch.
//!
//! When the writer is dropped (end of run) the sender gets [`DRAIN_LIMIT`] to send what is
//! queued; what is left after that is counted dropped. So at the end
//! `events_sent + events_dropped` is the number of events written.
//!
//! The client is our own (RESP, [`resp`]) over a std `TcpStream`: the output needs four
//! commands and no replies' values, and owning the socket gives exact control of the
//! connect, read and write timeouts without an async runtime or a connection manager.
//!
//! | key (under the eve-log's `redis:`) | default | what |
//! |---|---|---|
//! | `server` | 127.0.0.1 | host name or address |
//! | `port` | 6379 | TCP port |
//! | `mode` | list | `list`/`lpush` (LPUSH), `rpush` (RPUSH), `channel`/`publish` (PUBLISH), `stream`/`xadd` (XADD) |
//! | `key` | suricata | the list, channel or stream |
//! | `pipelining.enabled`, `pipelining.batch-size` | no, 10 | events per pipelined write |
//! | `stream-maxlen`, `stream-trim-exact` | 100000, no | XADD `MAXLEN [~] N` (0: no trimming) |
//! | `buffer` (picket's) | 50000 | events held while Redis is away or slow |
//! | `async` | - | accepted, ignored (picket's output is always asynchronous) |

mod resp;

use crate::counters::CounterSource;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use picket_core::counters::CounterSet;
use serde_yaml::Value;
use std::io::{self, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Suricata's defaults.
const DEFAULT_SERVER: &str = "127.0.0.1";
const DEFAULT_PORT: u16 = 6379;
const DEFAULT_KEY: &str = "suricata";
const DEFAULT_BATCH_SIZE: usize = 10;
const DEFAULT_STREAM_MAXLEN: u64 = 100_000;
/// The field of a stream entry that holds the event (Suricata's).
const STREAM_FIELD: &[u8] = b"eve";

/// Events per pipelined write, at most.
const MAX_BATCH_SIZE: usize = 10_000;
/// Events held while Redis is away: about 25–50 MB of typical eve lines.
const DEFAULT_BUFFER: usize = 50_000;
const MAX_BUFFER: usize = 10_000_000;
/// A line longer than this (no `\n` seen) is not an eve event: it is dropped and counted.
const MAX_LINE: usize = 16 << 20;

/// Connecting gives up after this; then the backoff.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A write or a reply that takes longer ends the connection (Redis is stuck).
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// The first wait after a failed connect; doubled on every failure up to [`BACKOFF_CAP`].
pub const BACKOFF_FIRST: Duration = Duration::from_millis(50);
pub const BACKOFF_CAP: Duration = Duration::from_secs(1);
/// After the writer is dropped, the sender sends what is queued for at most this long.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// A connection idle this long is checked for a close by the server before the next
/// batch (a non-blocking peek); a busy one is not, to save the system calls.
const IDLE_CHECK_AFTER: Duration = Duration::from_millis(2);
/// Lost connections and a full queue are reported at most this often (all are counted).
const REPORT_EVERY: Duration = Duration::from_secs(10);
/// How often an idle sender looks at the queue and the closing flag.
const IDLE_TICK: Duration = Duration::from_millis(200);

/// The Redis command an event is sent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `list` / `lpush`: LPUSH key event (the newest first; readers BRPOP).
    LPush,
    /// `rpush`: RPUSH key event.
    RPush,
    /// `channel` / `publish`: PUBLISH key event (only subscribers connected now get it).
    Publish,
    /// `stream` / `xadd`: XADD key [MAXLEN [~] N] * eve event.
    XAdd,
}

/// The `redis:` mapping of an eve-log, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisSettings {
    pub server: String,
    pub port: u16,
    pub mode: Mode,
    pub key: String,
    /// Events per write: 1 without pipelining.
    pub batch_size: usize,
    /// Events the queue holds while Redis is away or slow.
    pub buffer: usize,
    /// XADD's MAXLEN (0: none).
    pub stream_maxlen: u64,
    /// XADD's MAXLEN exactly (`=`) rather than approximately (`~`, cheaper for Redis).
    pub stream_trim_exact: bool,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            server: DEFAULT_SERVER.into(),
            port: DEFAULT_PORT,
            mode: Mode::LPush,
            key: DEFAULT_KEY.into(),
            batch_size: 1,
            buffer: DEFAULT_BUFFER,
            stream_maxlen: DEFAULT_STREAM_MAXLEN,
            stream_trim_exact: false,
        }
    }
}

/// Keys of `redis:` that are read; anything else gets a warning.
const KNOWN: &[&str] =
    &["server", "port", "mode", "key", "pipelining", "buffer", "stream-maxlen", "stream-trim-exact", "async"];

/// Reads the `redis:` mapping of the eve-log `eve_log` (absent: all defaults). Errors
/// name the key and what it takes; unknown keys come back as warnings.
pub fn settings(eve_log: &Value) -> Result<(RedisSettings, Vec<String>), String> {
    let mut s = RedisSettings::default();
    let mut warnings = Vec::new();
    let redis = match eve_log.get("redis") {
        None | Some(Value::Null) => return Ok((s, warnings)),
        Some(Value::Mapping(map)) => map,
        Some(_) => {
            return Err("eve-log redis: expected a mapping (server, port, mode, key, pipelining, buffer)".into());
        }
    };
    for key in redis.keys() {
        let name = text(key).unwrap_or_default();
        if !KNOWN.contains(&name.as_str()) {
            warnings.push(format!("eve-log redis.{name}: unknown key, ignored (known: {})", KNOWN.join(", ")));
        }
    }
    if let Some(server) = scalar(redis.get("server"), "server")? {
        if server.trim().is_empty() {
            return Err("eve-log redis.server: empty; give a host name or address such as 127.0.0.1".into());
        }
        s.server = server.trim().to_string();
    }
    if let Some(port) = scalar(redis.get("port"), "port")? {
        s.port = port
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("eve-log redis.port: '{port}' is not a TCP port (1-65535)"))?;
    }
    if let Some(mode) = scalar(redis.get("mode"), "mode")? {
        s.mode = match mode.trim().to_ascii_lowercase().as_str() {
            "list" | "lpush" => Mode::LPush,
            "rpush" => Mode::RPush,
            "channel" | "publish" => Mode::Publish,
            "stream" | "xadd" => Mode::XAdd,
            _ => {
                return Err(format!(
                    "eve-log redis.mode: '{mode}' is not a mode (list, lpush, rpush, channel, publish, stream, xadd)"
                ))
            }
        };
    }
    if let Some(key) = scalar(redis.get("key"), "key")? {
        if key.is_empty() {
            return Err("eve-log redis.key: empty; give the list, channel or stream name".into());
        }
        s.key = key;
    }
    match redis.get("pipelining") {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(p)) => {
            let enabled = match scalar(p.get("enabled"), "pipelining.enabled")? {
                None => false,
                Some(t) => picket_core::settings::parse_bool(&t).ok_or_else(|| {
                    format!("eve-log redis.pipelining.enabled: '{t}' is not a boolean (yes/no/true/false)")
                })?,
            };
            let size = match scalar(p.get("batch-size"), "pipelining.batch-size")? {
                None => DEFAULT_BATCH_SIZE,
                Some(t) => count(&t, "pipelining.batch-size", MAX_BATCH_SIZE)?,
            };
            s.batch_size = if enabled { size } else { 1 };
        }
        Some(_) => return Err("eve-log redis.pipelining: expected a mapping (enabled, batch-size)".into()),
    }
    if let Some(t) = scalar(redis.get("buffer"), "buffer")? {
        s.buffer = count(&t, "buffer", MAX_BUFFER)?;
    }
    if let Some(t) = scalar(redis.get("stream-maxlen"), "stream-maxlen")? {
        s.stream_maxlen = t
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("eve-log redis.stream-maxlen: '{t}' is not a count of entries (0: no trimming)"))?;
    }
    if let Some(t) = scalar(redis.get("stream-trim-exact"), "stream-trim-exact")? {
        s.stream_trim_exact = picket_core::settings::parse_bool(&t)
            .ok_or_else(|| format!("eve-log redis.stream-trim-exact: '{t}' is not a boolean (yes/no/true/false)"))?;
    }
    Ok((s, warnings))
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A scalar key's text; `None` when absent or empty; an error names the key otherwise.
fn scalar(value: Option<&Value>, key: &str) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => text(v).map(Some).ok_or_else(|| format!("eve-log redis.{key}: expected a single value")),
    }
}

/// A count in 1..=max.
fn count(t: &str, key: &str, max: usize) -> Result<usize, String> {
    t.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("eve-log redis.{key}: '{t}' is not a count from 1 to {max}"))
}

/// Opens the Redis output of an eve-log whose YAML mapping is `eve_log` (its `redis:` keys).
/// Returns the writer the eve writer thread writes whole lines to, and the source of its
/// counters. Redis need not be up yet: the sender connects in the background.
pub fn open(eve_log: &Value) -> Result<(Box<dyn Write + Send>, CounterSource), String> {
    let (settings, warnings) = settings(eve_log)?;
    for warning in warnings {
        eprintln!("picket: {warning}");
    }
    let (writer, counters) = RedisWriter::start(settings)?;
    Ok((Box::new(writer), counters))
}

/// The output's counters, shared by the writer, the sender thread and the stats.
#[derive(Default)]
struct Counters {
    /// Events Redis acknowledged.
    sent: AtomicU64,
    /// Events lost: queue full, overlong line, error reply, broken batch, end-of-run limit.
    dropped: AtomicU64,
    /// Of `dropped`: events written on a connection that broke before their reply came.
    unconfirmed: AtomicU64,
    /// Of `dropped`: events Redis answered with an error (wrong key type, OOM, ...).
    errors: AtomicU64,
    /// Connections made after the first.
    reconnects: AtomicU64,
    /// Connection attempts that failed.
    connect_failures: AtomicU64,
    /// 1 while connected.
    connected: AtomicU64,
    /// Events the sender has taken from the queue and not yet settled.
    in_flight: AtomicU64,
}

impl Counters {
    fn drop_events(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn add_to(&self, set: &mut CounterSet, queued: usize) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        set.add("picket.redis.events_sent", get(&self.sent));
        set.add("picket.redis.events_dropped", get(&self.dropped));
        set.add("picket.redis.events_unconfirmed", get(&self.unconfirmed));
        set.add("picket.redis.errors", get(&self.errors));
        set.add("picket.redis.reconnects", get(&self.reconnects));
        set.add("picket.redis.connect_failures", get(&self.connect_failures));
        set.add("picket.redis.connected", get(&self.connected));
        set.add("picket.redis.buffered", queued as u64 + get(&self.in_flight));
    }
}

/// What the writer tells the sender when the run ends.
#[derive(Default)]
struct Closing {
    since: Mutex<Option<Instant>>,
}

impl Closing {
    fn deadline(&self) -> Option<Instant> {
        self.since.lock().ok().and_then(|s| *s).map(|t| t + DRAIN_LIMIT)
    }
}

/// The eve writer's side: splits lines, queues them, never blocks.
struct RedisWriter {
    partial: Vec<u8>,
    /// Skipping the rest of an overlong line, up to its `\n`.
    discarding: bool,
    queue: Option<Sender<Vec<u8>>>,
    counters: Arc<Counters>,
    closing: Arc<Closing>,
    /// Disconnected when the sender thread ends.
    finished: Receiver<()>,
    thread: Option<JoinHandle<()>>,
    peer: String,
    /// When a full queue was last reported (at most every [`REPORT_EVERY`]).
    full_reported: Option<Instant>,
}

impl RedisWriter {
    fn start(settings: RedisSettings) -> Result<(RedisWriter, CounterSource), String> {
        let (tx, rx) = crossbeam_channel::bounded(settings.buffer);
        let (finished_tx, finished) = crossbeam_channel::bounded::<()>(0);
        let counters = Arc::new(Counters::default());
        let closing = Arc::new(Closing::default());
        let peer = format!("{}:{}", settings.server, settings.port);
        let sender = RedisSender::new(settings, rx.clone(), Arc::clone(&counters), Arc::clone(&closing));
        let thread = thread::Builder::new()
            .name("picket-redis".into())
            .spawn(move || {
                let _finished = finished_tx;
                sender.run();
            })
            .map_err(|e| format!("eve-log redis: cannot start the sender thread: {e}"))?;
        let source_counters = Arc::clone(&counters);
        let source: CounterSource = Box::new(move |set: &mut CounterSet| source_counters.add_to(set, rx.len()));
        let writer = RedisWriter {
            partial: Vec::new(),
            discarding: false,
            queue: Some(tx),
            counters,
            closing,
            finished,
            thread: Some(thread),
            peer,
            full_reported: None,
        };
        Ok((writer, source))
    }

    fn enqueue(&mut self, line: Vec<u8>) {
        if line.is_empty() {
            return;
        }
        let Some(queue) = &self.queue else { return };
        match queue.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.counters.drop_events(1);
                if self.full_reported.is_none_or(|t| t.elapsed() >= REPORT_EVERY) {
                    self.full_reported = Some(Instant::now());
                    eprintln!(
                        "picket: eve-log redis {}: the buffer of {} events is full (Redis away or slow): events \
                         are dropped and counted in picket.redis.events_dropped (raise redis.buffer, enable \
                         redis.pipelining)",
                        self.peer,
                        queue.capacity().unwrap_or(0)
                    );
                }
            }
        }
    }

    /// Takes the bytes of one line (without its `\n`) that end in `tail`.
    fn end_line(&mut self, tail: &[u8]) {
        if self.discarding {
            self.discarding = false;
            return;
        }
        if self.partial.is_empty() {
            self.enqueue(tail.to_vec());
        } else {
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(tail);
            if line.len() > MAX_LINE {
                self.counters.drop_events(1);
            } else {
                self.enqueue(line);
            }
        }
    }
}

impl Write for RedisWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.end_line(&rest[..end]);
            rest = &rest[end + 1..];
        }
        if !rest.is_empty() && !self.discarding {
            if self.partial.len() + rest.len() > MAX_LINE {
                self.partial = Vec::new();
                self.discarding = true;
                self.counters.drop_events(1);
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
        Ok(buf.len())
    }

    /// Lines are queued as they complete; nothing waits for the network.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RedisWriter {
    fn drop(&mut self) {
        if !self.partial.is_empty() && !self.discarding {
            let last = std::mem::take(&mut self.partial);
            self.enqueue(last);
        }
        if let Ok(mut since) = self.closing.since.lock() {
            *since = Some(Instant::now());
        }
        self.queue = None;
        // The sender stops by itself at DRAIN_LIMIT; its socket timeouts bound the rest.
        let limit = DRAIN_LIMIT + CONNECT_TIMEOUT + 2 * IO_TIMEOUT;
        match self.finished.recv_timeout(limit) {
            Err(RecvTimeoutError::Timeout) => {
                eprintln!(
                    "picket: eve-log redis {}: the sender did not finish within {limit:?}; left behind",
                    self.peer
                )
            }
            _ => {
                if let Some(thread) = self.thread.take() {
                    let _ = thread.join();
                }
            }
        }
    }
}

/// One connection to the server.
struct Connection {
    stream: TcpStream,
    replies: BufReader<TcpStream>,
}

impl Connection {
    fn open(server: &str, port: u16) -> io::Result<Connection> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the name resolves to no address");
        for addr in (server, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(IO_TIMEOUT))?;
                    stream.set_write_timeout(Some(IO_TIMEOUT))?;
                    let replies = BufReader::new(stream.try_clone()?);
                    return Ok(Connection { stream, replies });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Whether the server closed the connection or sent something unasked while we were
    /// idle (Redis restarted, or its `timeout` ended the connection).
    fn closed_while_idle(&mut self) -> bool {
        if !self.replies.buffer().is_empty() {
            return true; // bytes nobody asked for: the stream is out of step
        }
        if self.stream.set_nonblocking(true).is_err() {
            return true;
        }
        let mut probe = [0u8; 1];
        let closed = match self.stream.peek(&mut probe) {
            Ok(_) => true, // 0: the server closed; > 0: unasked bytes
            Err(e) => e.kind() != io::ErrorKind::WouldBlock,
        };
        closed || self.stream.set_nonblocking(false).is_err()
    }
}

/// The sender thread: the queue to Redis.
struct RedisSender {
    settings: RedisSettings,
    queue: Receiver<Vec<u8>>,
    counters: Arc<Counters>,
    closing: Arc<Closing>,
    conn: Option<Connection>,
    backoff: Duration,
    ever_connected: bool,
    /// Failed attempts since the last connection (reported once per outage).
    failures: u64,
    /// The first error reply has been reported.
    error_reported: bool,
    /// When the last batch was settled (the connection is idle since).
    last_sent: Instant,
    /// No connection attempt before this (the backoff after a failure).
    retry_at: Instant,
    /// When a lost connection was last reported.
    lost_reported: Option<Instant>,
    peer: String,
}

impl RedisSender {
    fn new(settings: RedisSettings, queue: Receiver<Vec<u8>>, counters: Arc<Counters>, closing: Arc<Closing>) -> Self {
        let peer = format!("{}:{}", settings.server, settings.port);
        RedisSender {
            settings,
            queue,
            counters,
            closing,
            conn: None,
            backoff: BACKOFF_FIRST,
            ever_connected: false,
            failures: 0,
            error_reported: false,
            last_sent: Instant::now(),
            retry_at: Instant::now(),
            lost_reported: None,
            peer,
        }
    }

    fn run(mut self) {
        let mut batch: Vec<Vec<u8>> = Vec::with_capacity(self.settings.batch_size);
        loop {
            if batch.is_empty() {
                match self.queue.recv_timeout(IDLE_TICK) {
                    Ok(line) => batch.push(line),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                while batch.len() < self.settings.batch_size {
                    match self.queue.try_recv() {
                        Ok(line) => batch.push(line),
                        Err(_) => break,
                    }
                }
                self.counters.in_flight.store(batch.len() as u64, Ordering::Relaxed);
            }
            let deadline = self.closing.deadline();
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let left = batch.len() + self.queue.try_iter().count();
                self.counters.drop_events(left);
                if left > 0 {
                    eprintln!(
                        "picket: eve-log redis {}: {left} events not sent within {DRAIN_LIMIT:?} of the end",
                        self.peer
                    );
                }
                batch.clear();
                break;
            }
            if self.last_sent.elapsed() >= IDLE_CHECK_AFTER && self.conn.as_mut().is_some_and(|c| c.closed_while_idle())
            {
                self.disconnect();
                self.back_off();
            }
            if self.conn.is_none() {
                let now = Instant::now();
                if self.retry_at > now {
                    let until = deadline.map_or(self.retry_at, |d| d.min(self.retry_at));
                    thread::sleep(until.saturating_duration_since(now));
                    continue;
                }
                if !self.connect() {
                    self.back_off();
                    continue;
                }
            }
            self.send(&mut batch);
            self.last_sent = Instant::now();
            self.counters.in_flight.store(0, Ordering::Relaxed);
        }
        self.counters.in_flight.store(0, Ordering::Relaxed);
        self.disconnect();
    }

    fn connect(&mut self) -> bool {
        match Connection::open(&self.settings.server, self.settings.port) {
            Ok(conn) => {
                self.conn = Some(conn);
                self.counters.connected.store(1, Ordering::Relaxed);
                if self.ever_connected {
                    self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                if self.failures > 0 {
                    eprintln!("picket: eve-log redis {}: connected after {} failed attempts", self.peer, self.failures);
                }
                self.ever_connected = true;
                self.failures = 0;
                true
            }
            Err(e) => {
                self.counters.connect_failures.fetch_add(1, Ordering::Relaxed);
                if self.failures == 0 {
                    eprintln!(
                        "picket: eve-log redis {}: cannot connect ({e}); holding up to {} events and retrying \
                         (check that redis-server runs there and redis.server/redis.port)",
                        self.peer, self.settings.buffer
                    );
                }
                self.failures += 1;
                false
            }
        }
    }

    /// The next connection waits [`Self::backoff`], which doubles up to [`BACKOFF_CAP`]
    /// (it starts again at [`BACKOFF_FIRST`] once a batch went through whole).
    fn back_off(&mut self) {
        self.retry_at = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_CAP);
    }

    fn disconnect(&mut self) {
        self.conn = None;
        self.counters.connected.store(0, Ordering::Relaxed);
    }

    /// Sends the batch on the open connection and settles every event of it.
    fn send(&mut self, batch: &mut Vec<Vec<u8>>) {
        let mut wire = Vec::with_capacity(batch.iter().map(|l| l.len() + 64).sum());
        let maxlen = self.settings.stream_maxlen.to_string();
        let trim: &[u8] = if self.settings.stream_trim_exact { b"=" } else { b"~" };
        let key = self.settings.key.as_bytes();
        for line in batch.iter() {
            match self.settings.mode {
                Mode::LPush => resp::encode_command(&mut wire, &[b"LPUSH", key, line]),
                Mode::RPush => resp::encode_command(&mut wire, &[b"RPUSH", key, line]),
                Mode::Publish => resp::encode_command(&mut wire, &[b"PUBLISH", key, line]),
                Mode::XAdd if self.settings.stream_maxlen > 0 => resp::encode_command(
                    &mut wire,
                    &[b"XADD", key, b"MAXLEN", trim, maxlen.as_bytes(), b"*", STREAM_FIELD, line],
                ),
                Mode::XAdd => resp::encode_command(&mut wire, &[b"XADD", key, b"*", STREAM_FIELD, line]),
            }
        }
        let total = batch.len();
        batch.clear();
        let Some(conn) = self.conn.as_mut() else {
            self.counters.drop_events(total);
            return;
        };
        let mut settled = 0;
        let mut broken = None;
        if let Err(e) = conn.stream.write_all(&wire) {
            broken = Some(io_failure(&e, "took the events"));
        } else {
            while settled < total {
                match resp::read_reply(&mut conn.replies) {
                    Ok(Ok(())) => {
                        self.counters.sent.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Err(text)) => {
                        self.counters.errors.fetch_add(1, Ordering::Relaxed);
                        self.counters.drop_events(1);
                        if !self.error_reported {
                            self.error_reported = true;
                            eprintln!(
                                "picket: eve-log redis {}: Redis refused an event: {text} (WRONGTYPE: redis.key \
                                 names a key of another type; further refusals are only counted in \
                                 picket.redis.errors)",
                                self.peer
                            );
                        }
                    }
                    Err(resp::ReplyError::Io(e)) => {
                        broken = Some(io_failure(&e, "answered"));
                        break;
                    }
                    Err(e) => {
                        broken = Some(e.to_string());
                        break;
                    }
                }
                settled += 1;
            }
        }
        let Some(why) = broken else {
            self.backoff = BACKOFF_FIRST;
            return;
        };
        let lost = total - settled;
        self.counters.drop_events(lost);
        self.counters.unconfirmed.fetch_add(lost as u64, Ordering::Relaxed);
        if self.lost_reported.is_none_or(|t| t.elapsed() >= REPORT_EVERY) {
            self.lost_reported = Some(Instant::now());
            eprintln!(
                "picket: eve-log redis {}: connection lost ({why}); {lost} events unconfirmed, counted dropped; \
                 reconnecting (further losses within {REPORT_EVERY:?} are only counted)",
                self.peer
            );
        }
        self.disconnect();
        self.back_off();
    }
}

/// An I/O failure on the connection, in words: a timeout says what Redis did not do.
fn io_failure(e: &io::Error, not_done: &str) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("Redis has not {not_done} within {IO_TIMEOUT:?}")
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<RedisSettings, String> {
        let value: Value = serde_yaml::from_str(yaml).unwrap();
        settings(&value).map(|(s, _)| s)
    }

    #[test]
    fn defaults_are_suricatas() {
        let s = parse("filetype: redis").unwrap();
        assert_eq!(s, RedisSettings::default());
        assert_eq!(
            (s.server.as_str(), s.port, s.mode, s.key.as_str(), s.batch_size),
            ("127.0.0.1", 6379, Mode::LPush, "suricata", 1)
        );
    }

    #[test]
    fn every_key_and_mode_spelling() {
        let s = parse(
            "redis: {server: redis.example, port: '6380', mode: XADD, key: ids, buffer: 7, \
             pipelining: {enabled: yes, batch-size: 25}, stream-maxlen: 0, stream-trim-exact: yes, async: yes}",
        )
        .unwrap();
        assert_eq!(
            s,
            RedisSettings {
                server: "redis.example".into(),
                port: 6380,
                mode: Mode::XAdd,
                key: "ids".into(),
                batch_size: 25,
                buffer: 7,
                stream_maxlen: 0,
                stream_trim_exact: true,
            }
        );
        for (text, mode) in [
            ("list", Mode::LPush),
            ("lpush", Mode::LPush),
            ("rpush", Mode::RPush),
            ("channel", Mode::Publish),
            ("publish", Mode::Publish),
            ("stream", Mode::XAdd),
            ("xadd", Mode::XAdd),
        ] {
            assert_eq!(parse(&format!("redis: {{mode: {text}}}")).unwrap().mode, mode);
        }
        assert_eq!(parse("redis: {pipelining: {enabled: yes}}").unwrap().batch_size, DEFAULT_BATCH_SIZE);
        assert_eq!(parse("redis: {pipelining: {enabled: no, batch-size: 99}}").unwrap().batch_size, 1);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (yaml, key) in [
            ("redis: {mode: queue}", "redis.mode"),
            ("redis: {port: 70000}", "redis.port"),
            ("redis: {port: 0}", "redis.port"),
            ("redis: {port: http}", "redis.port"),
            ("redis: {server: ''}", "redis.server"),
            ("redis: {server: [a, b]}", "redis.server"),
            ("redis: {key: ''}", "redis.key"),
            ("redis: {pipelining: {enabled: maybe}}", "redis.pipelining.enabled"),
            ("redis: {pipelining: {enabled: yes, batch-size: 0}}", "redis.pipelining.batch-size"),
            ("redis: {pipelining: yes}", "redis.pipelining"),
            ("redis: {buffer: 0}", "redis.buffer"),
            ("redis: {buffer: lots}", "redis.buffer"),
            ("redis: {stream-maxlen: -1}", "redis.stream-maxlen"),
            ("redis: {stream-trim-exact: sometimes}", "redis.stream-trim-exact"),
            ("redis: 127.0.0.1", "redis"),
        ] {
            let err = parse(yaml).unwrap_err();
            assert!(err.starts_with(&format!("eve-log {key}")), "{yaml}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn unknown_keys_warn() {
        let value: Value = serde_yaml::from_str("redis: {servr: x}").unwrap();
        let (_, warnings) = settings(&value).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("redis.servr"), "{warnings:?}");
    }
}
