//! Log targets: where the writer thread's lines go (eve-log `filetype:`).
//!
//! | target | what | on trouble |
//! |---|---|---|
//! | [`ReopeningFile`] (`regular`) | a file, reopened at its path when [`LogReopen`] moved on (SIGHUP, `picket ctl reopen-logs`) | a failed reopen keeps the old file and is counted |
//! | [`UnixStreamTarget`] (`unix_stream`) | a connection to a listening stream socket | reconnects with backoff; lines meanwhile are counted and dropped |
//! | [`UnixDgramTarget`] (`unix_dgram`) | one datagram per line to a bound datagram socket | same |
//! | `redis` | `crate::output::redis::open` | its own queue and counters |
//!
//! Every target is a [`Write`] taking whole lines, possibly through a `BufWriter` (the
//! socket targets split what they get at `\n`). The file target checks the generation on
//! every write and flush, so a live run's writer thread, which flushes at least once a
//! second even when idle, creates the new file within a second of a SIGHUP.
//!
//! Socket targets never make the writer wait in a live run ([`Delivery::NeverBlock`]): a
//! stream target holds at most [`STREAM_PENDING_MAX`] bytes the peer has not taken yet and
//! drops lines beyond that; a datagram the peer's queue cannot take is dropped. Offline
//! ([`Delivery::Lossless`]) the writer waits up to [`LOSSLESS_WAIT`] for a slow reader
//! before dropping, since nothing is lost by reading a capture more slowly.
//!
//! Counters (`picket.output.*`, all targets of a run together): `file_reopens`,
//! `file_reopen_errors`, `socket_connects`, `socket_disconnects`, `socket_dropped`
//! (lines lost to a missing, gone or stuck reader), `write_errors` (failed writes to a
//! log file, e.g. a full disk) and `events_dropped` (lines those writes lost).

use crate::config::TargetSpec;
use crate::counters::CounterSet;
use crate::counters::CounterSource;
use crate::service::LogReopen;
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// First wait before connecting again to a socket that refused or went away.
pub const RECONNECT_FIRST: Duration = Duration::from_millis(100);
/// The wait doubles up to this.
pub const RECONNECT_MAX: Duration = Duration::from_secs(5);
/// Bytes a stream target holds for a peer that is not reading fast enough.
pub const STREAM_PENDING_MAX: usize = 4 << 20;
/// Longest an offline run's writer waits for a socket reader before dropping a line.
pub const LOSSLESS_WAIT: Duration = Duration::from_secs(5);
/// Longest a closing stream target waits to hand over what it still holds.
pub const CLOSE_DRAIN: Duration = Duration::from_secs(2);

const FILE_REOPENS: &str = "picket.output.file_reopens";
const FILE_REOPEN_ERRORS: &str = "picket.output.file_reopen_errors";
const SOCKET_CONNECTS: &str = "picket.output.socket_connects";
const SOCKET_DISCONNECTS: &str = "picket.output.socket_disconnects";
const SOCKET_DROPPED: &str = "picket.output.socket_dropped";
/// Writes to a log file that failed (a full disk); each is retried with the next event.
pub const WRITE_ERRORS: &str = "picket.output.write_errors";
/// Lines (events) lost to failed writes to a log file.
pub const EVENTS_DROPPED: &str = "picket.output.events_dropped";

/// Whether a socket target may make the writer wait for its reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Live: never wait; drop (and count) what the reader cannot take now.
    NeverBlock,
    /// Offline: wait up to [`LOSSLESS_WAIT`] for the reader; a reader that let that pass
    /// is not waited for again in the run (the target goes on as `NeverBlock`).
    Lossless,
}

impl Delivery {
    fn apply<S: SocketTimeouts>(self, socket: &S) -> io::Result<()> {
        match self {
            Delivery::NeverBlock => socket.nonblocking(),
            Delivery::Lossless => socket.wait_at_most(LOSSLESS_WAIT),
        }
    }

    /// After a write that found the reader stuck: stop waiting for it.
    fn after_stall<S: SocketTimeouts>(&mut self, socket: &S, path: &Path) {
        if *self == Delivery::Lossless {
            *self = Delivery::NeverBlock;
            let _ = socket.nonblocking();
            eprintln!(
                "picket: warning: eve-log: the reader of {} took nothing for {} s; events it cannot take at once are \
                 dropped (and counted) from now on",
                path.display(),
                LOSSLESS_WAIT.as_secs()
            );
        }
    }
}

/// The two unix socket kinds, as far as [`Delivery`] is concerned.
trait SocketTimeouts {
    fn nonblocking(&self) -> io::Result<()>;
    fn wait_at_most(&self, limit: Duration) -> io::Result<()>;
}

impl SocketTimeouts for UnixStream {
    fn nonblocking(&self) -> io::Result<()> {
        self.set_nonblocking(true)
    }
    fn wait_at_most(&self, limit: Duration) -> io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_write_timeout(Some(limit))
    }
}

impl SocketTimeouts for UnixDatagram {
    fn nonblocking(&self) -> io::Result<()> {
        self.set_nonblocking(true)
    }
    fn wait_at_most(&self, limit: Duration) -> io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_write_timeout(Some(limit))
    }
}

/// A log target that cannot be opened, naming the file or socket and the fix.
#[derive(Debug)]
pub enum TargetError {
    File { path: PathBuf, source: io::Error },
    Redis(String),
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::File { path, source } => write!(
                f,
                "cannot write {}: {source} (check the log directory and its permissions, or the outputs: filename)",
                path.display()
            ),
            TargetError::Redis(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for TargetError {}

/// The counters every target of a run adds to.
#[derive(Debug, Default)]
pub struct TargetCounters {
    file_reopens: AtomicU64,
    file_reopen_errors: AtomicU64,
    socket_connects: AtomicU64,
    socket_disconnects: AtomicU64,
    socket_dropped: AtomicU64,
    write_errors: AtomicU64,
    events_dropped: AtomicU64,
}

impl TargetCounters {
    pub fn add_to(&self, set: &mut CounterSet) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        set.add(FILE_REOPENS, get(&self.file_reopens));
        set.add(FILE_REOPEN_ERRORS, get(&self.file_reopen_errors));
        set.add(SOCKET_CONNECTS, get(&self.socket_connects));
        set.add(SOCKET_DISCONNECTS, get(&self.socket_disconnects));
        set.add(SOCKET_DROPPED, get(&self.socket_dropped));
        set.add(WRITE_ERRORS, get(&self.write_errors));
        set.add(EVENTS_DROPPED, get(&self.events_dropped));
    }

    /// Events lost so far to failed writes to log files.
    pub fn events_dropped(&self) -> u64 {
        self.events_dropped.load(Ordering::Relaxed)
    }

    fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }
}

/// Opens the targets of one run: they share the run's [`LogReopen`] and counters.
pub struct Targets {
    reopen: LogReopen,
    delivery: Delivery,
    counters: Arc<TargetCounters>,
    /// Sources of counters kept by others (redis).
    extra: Vec<CounterSource>,
}

impl Targets {
    pub fn new(reopen: LogReopen, delivery: Delivery) -> Self {
        Targets { reopen, delivery, counters: Arc::default(), extra: Vec::new() }
    }

    /// A regular log file (fast.log, or eve-log `filetype: regular`).
    pub fn file(&self, path: &Path, append: bool) -> Result<Box<dyn Write + Send>, TargetError> {
        Ok(Box::new(ReopeningFile::open(path, append, self.reopen.clone(), Arc::clone(&self.counters))?))
    }

    /// The eve-log target of `spec`.
    pub fn open(&mut self, spec: &TargetSpec) -> Result<Box<dyn Write + Send>, TargetError> {
        let counters = Arc::clone(&self.counters);
        Ok(match spec {
            TargetSpec::Regular { path, append } => self.file(path, *append)?,
            TargetSpec::UnixStream(path) => Box::new(UnixStreamTarget::new(path, self.delivery, counters)),
            TargetSpec::UnixDgram(path) => Box::new(UnixDgramTarget::new(path, self.delivery, counters)),
            TargetSpec::Redis(entry) => {
                let (writer, source) = crate::output::redis::open(entry).map_err(TargetError::Redis)?;
                self.extra.push(source);
                writer
            }
        })
    }

    /// The run's target counters, to read after the targets were handed over.
    pub fn counters(&self) -> Arc<TargetCounters> {
        Arc::clone(&self.counters)
    }

    /// The counter sources of the run's targets: into `LiveOptions.global_counters`, or
    /// summed into an offline run's final stats.
    pub fn counter_sources(self) -> Vec<CounterSource> {
        let counters = self.counters;
        let mut sources: Vec<CounterSource> = vec![Box::new(move |set: &mut CounterSet| counters.add_to(set))];
        sources.extend(self.extra);
        sources
    }
}

/// A log file that follows rotation: when the [`LogReopen`] generation moved on since it
/// opened its file, the next write or flush opens its path again (appending: a reopen
/// without a rotation must not wipe the log).
///
/// Whole lines only: the file receives `write(2)` calls that end at a line boundary (what
/// it is handed after the last `\n` waits in `partial` for the rest of its line), so a
/// process killed at any moment leaves no half line at the end of the file. A line longer
/// than the writer's buffer still goes out in one call, with its start from `partial`.
///
/// A failed write (a full disk: `ENOSPC`, a quota) does not end the run and does not stop
/// later writes: the lines of that call are dropped and counted (`events_dropped`), the
/// error is counted (`write_errors`) and reported once on stderr with the file's name, and
/// a write cut off partway is truncated back to its last whole line. The next write tries
/// again, so events are written again as soon as there is room.
pub struct ReopeningFile {
    path: PathBuf,
    file: File,
    generation: u64,
    reopen: LogReopen,
    counters: Arc<TargetCounters>,
    /// The start of a line whose end has not been handed over yet.
    partial: Vec<u8>,
    /// Lines dropped since the last write that succeeded (0: writing works).
    failing: u64,
}

impl ReopeningFile {
    pub fn open(
        path: &Path,
        append: bool,
        reopen: LogReopen,
        counters: Arc<TargetCounters>,
    ) -> Result<Self, TargetError> {
        let generation = reopen.generation();
        let file = open_file(path, append).map_err(|source| TargetError::File { path: path.to_path_buf(), source })?;
        Ok(ReopeningFile {
            path: path.to_path_buf(),
            file,
            generation,
            reopen,
            counters,
            partial: Vec::new(),
            failing: 0,
        })
    }

    /// Reopens the file if a reopen was asked for since it was opened. A failure keeps
    /// the old file (events still land somewhere), is counted and reported once.
    fn follow_rotation(&mut self) {
        let now = self.reopen.generation();
        if now == self.generation {
            return;
        }
        self.generation = now;
        match open_file(&self.path, true) {
            Ok(file) => {
                self.file = file;
                TargetCounters::bump(&self.counters.file_reopens, 1);
            }
            Err(e) => {
                TargetCounters::bump(&self.counters.file_reopen_errors, 1);
                eprintln!(
                    "picket: warning: cannot reopen {}: {e}; still writing to the file opened before",
                    self.path.display()
                );
            }
        }
    }

    /// Writes `lines` (whole lines) to the file; on an error drops them, counts, reports
    /// the first error of a run of failures, and cuts a partial write back to its last
    /// whole line.
    fn write_lines(&mut self, lines: &[u8]) {
        let mut done = 0;
        while done < lines.len() {
            match self.file.write(&lines[done..]) {
                Ok(0) => return self.write_failed(lines, done, &io::Error::from(ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.write_failed(lines, done, &e),
            }
        }
        if self.failing > 0 {
            eprintln!(
                "picket: {}: writing again after {} lost event{}",
                self.path.display(),
                self.failing,
                if self.failing == 1 { "" } else { "s" }
            );
            self.failing = 0;
        }
    }

    fn write_failed(&mut self, lines: &[u8], done: usize, error: &io::Error) {
        // The line cut off in the file: from its last newline written to the end.
        let whole = lines[..done].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let cut = (done - whole) as u64;
        if cut > 0 {
            let _ = truncate_tail(&mut self.file, cut);
        }
        let lost = lines[whole..].iter().filter(|&&b| b == b'\n').count() as u64;
        TargetCounters::bump(&self.counters.write_errors, 1);
        TargetCounters::bump(&self.counters.events_dropped, lost);
        if self.failing == 0 {
            eprintln!(
                "picket: error: cannot write {}: {error}; events are dropped (and counted in picket.output.events_dropped) \
                 until writing succeeds again",
                self.path.display()
            );
        }
        self.failing += lost;
    }
}

/// Cuts the last `cut` bytes off `file` (a line written in part), leaving the write
/// position at the new end.
fn truncate_tail(file: &mut File, cut: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let end = file.stream_position()?;
    let keep = end.saturating_sub(cut);
    file.set_len(keep)?;
    file.seek(SeekFrom::Start(keep))?;
    Ok(())
}

fn open_file(path: &Path, append: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    options.open(path)
}

impl Write for ReopeningFile {
    /// Takes everything; writes the whole lines of `partial` + `buf`, keeps the rest.
    /// Never fails: a write error is counted and reported (see the type's doc).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.follow_rotation();
        let Some(last) = buf.iter().rposition(|&b| b == b'\n') else {
            self.partial.extend_from_slice(buf);
            return Ok(buf.len());
        };
        let (lines, rest) = buf.split_at(last + 1);
        if self.partial.is_empty() {
            self.write_lines(lines);
        } else {
            let mut joined = std::mem::take(&mut self.partial);
            joined.extend_from_slice(lines);
            self.write_lines(&joined);
            joined.clear();
            self.partial = joined;
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    /// Writes nothing of a line not handed over whole yet: that waits for its end.
    fn flush(&mut self) -> io::Result<()> {
        self.follow_rotation();
        Ok(())
    }
}

impl Drop for ReopeningFile {
    /// A last line without its newline (no writer of picket leaves one) is written as is.
    fn drop(&mut self) {
        if !self.partial.is_empty() {
            let tail = std::mem::take(&mut self.partial);
            self.write_lines(&tail);
        }
    }
}

/// Reconnection timing of a socket target: a first attempt at once, then waits doubling
/// from [`RECONNECT_FIRST`] up to [`RECONNECT_MAX`] after each failure or loss.
struct Backoff {
    next_attempt: Instant,
    wait: Duration,
    /// The first failure to connect since the last connection is reported; later ones
    /// only counted.
    reported: bool,
}

impl Backoff {
    fn new() -> Self {
        Backoff { next_attempt: Instant::now(), wait: RECONNECT_FIRST, reported: false }
    }

    /// Takes the result of a connection attempt: a connection is counted, a failure
    /// schedules the next attempt and, the first time, prints `failure(error)`.
    fn outcome<S>(
        &mut self,
        attempt: io::Result<S>,
        counters: &TargetCounters,
        failure: impl FnOnce(&io::Error) -> String,
    ) -> Option<S> {
        match attempt {
            Ok(s) => {
                self.connected();
                self.reported = false;
                TargetCounters::bump(&counters.socket_connects, 1);
                Some(s)
            }
            Err(e) => {
                self.failed();
                if !self.reported {
                    self.reported = true;
                    eprintln!("picket: warning: eve-log: {}", failure(&e));
                }
                None
            }
        }
    }

    fn due(&self) -> bool {
        Instant::now() >= self.next_attempt
    }

    fn failed(&mut self) {
        self.next_attempt = Instant::now() + self.wait;
        self.wait = (self.wait * 2).min(RECONNECT_MAX);
    }

    fn connected(&mut self) {
        self.wait = RECONNECT_FIRST;
    }
}

/// Splits what a `BufWriter` hands over into whole lines (a line may arrive in pieces).
#[derive(Default)]
struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    fn feed(&mut self, mut buf: &[u8], mut line: impl FnMut(&[u8])) {
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let (head, rest) = buf.split_at(end + 1);
            if self.partial.is_empty() {
                line(head);
            } else {
                self.partial.extend_from_slice(head);
                line(&self.partial);
                self.partial.clear();
            }
            buf = rest;
        }
        self.partial.extend_from_slice(buf);
    }
}

/// Whether an error of a socket write means the reader is gone (as opposed to busy).
fn peer_gone(e: &io::Error) -> bool {
    !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// eve-log `filetype: unix_stream`: lines to a connected stream socket, in order; what
/// the peer has not taken yet waits in a bounded buffer.
pub struct UnixStreamTarget {
    path: PathBuf,
    delivery: Delivery,
    conn: Option<UnixStream>,
    /// Whole lines not sent yet; the first `sent` bytes of it are.
    pending: Vec<u8>,
    sent: usize,
    lines: LineSplitter,
    backoff: Backoff,
    counters: Arc<TargetCounters>,
}

impl UnixStreamTarget {
    pub fn new(path: &Path, delivery: Delivery, counters: Arc<TargetCounters>) -> Self {
        let mut target = UnixStreamTarget {
            path: path.to_path_buf(),
            delivery,
            conn: None,
            pending: Vec::new(),
            sent: 0,
            lines: LineSplitter::default(),
            backoff: Backoff::new(),
            counters,
        };
        target.connect_if_due();
        target
    }

    fn connect_if_due(&mut self) {
        if self.conn.is_some() || !self.backoff.due() {
            return;
        }
        let attempt = UnixStream::connect(&self.path).and_then(|s| {
            self.delivery.apply(&s)?;
            Ok(s)
        });
        let path = self.path.display();
        self.conn = self.backoff.outcome(attempt, &self.counters, |e| {
            format!(
                "cannot connect to unix_stream socket {path}: {e}; events are dropped (and counted) until a reader \
                 listens there"
            )
        });
    }

    /// Sends what is pending until the socket would block.
    fn send_pending(&mut self) {
        let Some(conn) = &mut self.conn else { return };
        while self.sent < self.pending.len() {
            match conn.write(&self.pending[self.sent..]) {
                Ok(0) => return self.lost_peer(),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if peer_gone(&e) => return self.lost_peer(),
                Err(_) => {
                    self.delivery.after_stall(conn, &self.path);
                    break;
                }
            }
        }
        if self.sent == self.pending.len() {
            self.pending.clear();
            self.sent = 0;
        } else if self.sent > self.pending.len() / 2 {
            self.pending.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// The reader went away: what it did not take is lost (a line half sent too).
    fn lost_peer(&mut self) {
        self.conn = None;
        // Each line not wholly sent (the one cut in flight too) ends in the unsent part.
        let unsent = &self.pending[self.sent.min(self.pending.len())..];
        let lost = unsent.iter().filter(|&&b| b == b'\n').count() as u64;
        TargetCounters::bump(&self.counters.socket_dropped, lost);
        TargetCounters::bump(&self.counters.socket_disconnects, 1);
        self.pending.clear();
        self.sent = 0;
        self.backoff.failed();
        eprintln!(
            "picket: warning: eve-log: unix_stream socket {} closed by its reader; reconnecting",
            self.path.display()
        );
    }

    fn push_line(&mut self, line: &[u8]) {
        self.connect_if_due();
        if self.conn.is_none() {
            TargetCounters::bump(&self.counters.socket_dropped, 1);
            return;
        }
        if self.pending.len() + line.len() > STREAM_PENDING_MAX {
            self.send_pending();
        }
        if self.conn.is_none() || self.pending.len() + line.len() > STREAM_PENDING_MAX {
            TargetCounters::bump(&self.counters.socket_dropped, 1);
            return;
        }
        self.pending.extend_from_slice(line);
        self.send_pending();
    }
}

impl Write for UnixStreamTarget {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(buf, |line| self.push_line(line));
        self.lines = lines;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.connect_if_due();
        self.send_pending();
        Ok(())
    }
}

impl Drop for UnixStreamTarget {
    /// Hands over what is still pending, waiting at most [`CLOSE_DRAIN`].
    fn drop(&mut self) {
        if let Some(conn) = &self.conn {
            if self.sent < self.pending.len()
                && conn.set_nonblocking(false).is_ok()
                && conn.set_write_timeout(Some(CLOSE_DRAIN)).is_ok()
            {
                self.send_pending();
            }
            let unsent = &self.pending[self.sent.min(self.pending.len())..];
            let lost = unsent.iter().filter(|&&b| b == b'\n').count() as u64;
            TargetCounters::bump(&self.counters.socket_dropped, lost);
        }
    }
}

/// eve-log `filetype: unix_dgram`: each line one datagram to a bound datagram socket.
pub struct UnixDgramTarget {
    path: PathBuf,
    delivery: Delivery,
    socket: Option<UnixDatagram>,
    lines: LineSplitter,
    backoff: Backoff,
    counters: Arc<TargetCounters>,
}

impl UnixDgramTarget {
    pub fn new(path: &Path, delivery: Delivery, counters: Arc<TargetCounters>) -> Self {
        let mut target = UnixDgramTarget {
            path: path.to_path_buf(),
            delivery,
            socket: None,
            lines: LineSplitter::default(),
            backoff: Backoff::new(),
            counters,
        };
        target.connect_if_due();
        target
    }

    fn connect_if_due(&mut self) {
        if self.socket.is_some() || !self.backoff.due() {
            return;
        }
        let attempt = UnixDatagram::unbound().and_then(|s| {
            s.connect(&self.path)?;
            self.delivery.apply(&s)?;
            Ok(s)
        });
        let path = self.path.display();
        self.socket = self.backoff.outcome(attempt, &self.counters, |e| {
            format!(
                "cannot reach unix_dgram socket {path}: {e}; events are dropped (and counted) until a reader binds it"
            )
        });
    }

    fn send_line(&mut self, line: &[u8]) {
        self.connect_if_due();
        let Some(socket) = &self.socket else {
            TargetCounters::bump(&self.counters.socket_dropped, 1);
            return;
        };
        loop {
            match socket.send(line) {
                Ok(_) => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    TargetCounters::bump(&self.counters.socket_dropped, 1);
                    // A full queue or an oversized line loses this line only; a reader
                    // that went away (refused, no such file) is looked for again.
                    let too_big = e.raw_os_error() == Some(libc::EMSGSIZE);
                    if peer_gone(&e) && !too_big {
                        self.socket = None;
                        self.backoff.failed();
                        TargetCounters::bump(&self.counters.socket_disconnects, 1);
                    } else if !too_big {
                        self.delivery.after_stall(socket, &self.path);
                    }
                    return;
                }
            }
        }
    }
}

impl Write for UnixDgramTarget {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(buf, |line| self.send_line(line));
        self.lines = lines;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.connect_if_due();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixListener;

    fn counters_of(c: &TargetCounters) -> CounterSet {
        let mut set = CounterSet::new();
        c.add_to(&mut set);
        set
    }

    #[test]
    fn file_reopens_after_rotation_and_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.json");
        let reopen = LogReopen::default();
        let counters = Arc::new(TargetCounters::default());
        let mut file = ReopeningFile::open(&path, false, reopen.clone(), Arc::clone(&counters)).unwrap();
        file.write_all(b"one\n").unwrap();
        std::fs::rename(&path, dir.path().join("eve.json.1")).unwrap();
        file.write_all(b"two\n").unwrap();
        reopen.bump();
        file.flush().unwrap();
        assert!(path.exists(), "flush alone creates the new file");
        file.write_all(b"three\n").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("eve.json.1")).unwrap(), "one\ntwo\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        // A reopen without a rotation keeps what the file holds.
        reopen.bump();
        file.write_all(b"four\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\nfour\n");
        assert_eq!(counters_of(&counters).get(FILE_REOPENS), Some(2));
    }

    #[test]
    fn file_gets_whole_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.json");
        let counters = Arc::new(TargetCounters::default());
        let mut file = ReopeningFile::open(&path, false, LogReopen::default(), counters).unwrap();
        file.write_all(b"{\"a\":").unwrap();
        file.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "a line's start waits for its end");
        file.write_all(b"1}\n{\"b\"").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        file.write_all(b":2}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn full_device_is_counted_and_does_not_fail_the_writer() {
        let counters = Arc::new(TargetCounters::default());
        let path = Path::new("/dev/full");
        let mut file = ReopeningFile::open(path, true, LogReopen::default(), Arc::clone(&counters)).unwrap();
        file.write_all(b"one\ntwo\n").unwrap();
        file.write_all(b"three\n").unwrap();
        file.flush().unwrap();
        let set = counters_of(&counters);
        assert_eq!((set.get(WRITE_ERRORS), set.get(EVENTS_DROPPED)), (Some(2), Some(3)));
        assert_eq!(file.failing, 3, "the loss is reported once, then counted until a write succeeds");
    }

    #[test]
    fn stream_lines_cross_write_boundaries_and_reconnect() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        let counters = Arc::new(TargetCounters::default());
        // Nobody listens yet: the line is dropped and counted.
        let mut target = UnixStreamTarget::new(&path, Delivery::NeverBlock, Arc::clone(&counters));
        target.write_all(b"lost\n").unwrap();
        assert_eq!(counters_of(&counters).get(SOCKET_DROPPED), Some(1));
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::sleep(RECONNECT_FIRST + Duration::from_millis(20));
        target.write_all(b"{\"a\":").unwrap();
        target.write_all(b"1}\n{\"b\":2}\n").unwrap();
        target.flush().unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        drop(target);
        let mut got = String::new();
        peer.read_to_string(&mut got).unwrap();
        assert_eq!(got, "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(counters_of(&counters).get(SOCKET_CONNECTS), Some(1));
    }

    #[test]
    fn stream_never_waits_for_a_reader_that_does_not_read_and_reconnects() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let counters = Arc::new(TargetCounters::default());
        let mut target = UnixStreamTarget::new(&path, Delivery::NeverBlock, Arc::clone(&counters));
        let (stuck, _) = listener.accept().unwrap();
        // Twice what the target holds, to a reader that reads nothing: the writes return
        // (a blocking target would hang here) and the excess is counted.
        let line = [b"x".repeat(1023), b"\n".to_vec()].concat();
        for _ in 0..2 * STREAM_PENDING_MAX / line.len() {
            target.write_all(&line).unwrap();
        }
        let dropped = counters_of(&counters).get(SOCKET_DROPPED).unwrap();
        assert!(dropped > 0, "the excess is dropped and counted");
        // The reader goes away; a new one listens at the same path and gets what follows.
        drop(stuck);
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        let mut tries = 0;
        while counters_of(&counters).get(SOCKET_DISCONNECTS) == Some(0) {
            target.write_all(&line).unwrap();
            tries += 1;
            assert!(tries < 1000, "a closed reader is noticed");
        }
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::sleep(RECONNECT_FIRST * 2);
        target.write_all(b"again\n").unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        drop(target);
        let mut got = String::new();
        peer.read_to_string(&mut got).unwrap();
        assert_eq!(got, "again\n");
        let set = counters_of(&counters);
        assert_eq!((set.get(SOCKET_CONNECTS), set.get(SOCKET_DISCONNECTS)), (Some(2), Some(1)));
    }

    #[test]
    fn dgram_sends_one_datagram_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eve.sock");
        let reader = UnixDatagram::bind(&path).unwrap();
        let counters = Arc::new(TargetCounters::default());
        let mut target = UnixDgramTarget::new(&path, Delivery::NeverBlock, Arc::clone(&counters));
        target.write_all(b"x\ny").unwrap();
        target.write_all(b"z\n").unwrap();
        let mut buf = [0u8; 64];
        let n = reader.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"x\n");
        let n = reader.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"yz\n");
        drop(reader);
        std::fs::remove_file(&path).unwrap();
        target.write_all(b"gone\n").unwrap();
        let set = counters_of(&counters);
        assert_eq!((set.get(SOCKET_DROPPED), set.get(SOCKET_DISCONNECTS)), (Some(1), Some(1)));
    }
}
