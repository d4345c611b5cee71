//! Daemon hygiene, and the FFI fence of `service`: every system call that std does not
//! wrap (fork, setsid, setuid/setgid/setgroups, capset, prctl, getpwnam_r/getgrnam_r,
//! clock_gettime) is made here, each `unsafe` block with its `// SAFETY:` reason.
//!
//! | piece | what | when in a live run |
//! |---|---|---|
//! | [`Pidfile`] | `--pidfile FILE`: refuses a live picket's file, replaces a stale one, atomic write, removed at exit | right after the fork |
//! | [`daemonize`] / [`Detached`] | `-D`: fork + setsid; the parent waits on a pipe for "ready" or the child's failure | after the rules load, before any long-lived thread |
//! | [`Credentials`] / [`drop_privileges`] | `--user/--group`: setgroups/setgid/setuid keeping [`CAPTURE_CAPABILITIES`] | after ports, XDP, ctl socket and logs are set up |
//! | [`notify`] | `sd_notify`: READY=1, RELOADING=1, STOPPING=1 (only with `NOTIFY_SOCKET`) | ready: capturing; stopping: the run ends |
//!
//! Capabilities are per thread in Linux: [`drop_privileges`] runs on the main thread, and
//! the threads it starts afterwards (the workers) inherit its kept capabilities. Threads
//! started before the drop (signals, metrics, the ctl server) lose every capability: they
//! only use sockets that are already open.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A daemon set-up failure, one line naming the file, user or call and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonError(pub String);

impl fmt::Display for DaemonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DaemonError {}

fn err(message: impl Into<String>) -> DaemonError {
    DaemonError(message.into())
}

// ---------------------------------------------------------------------------------------
// The service pieces of a run, in the order the run needs them
// ---------------------------------------------------------------------------------------

/// The service set-up of a live run (`cli/live.rs` calls these in order):
/// [`LiveService::start`] (after the rules load: checks, `-D`, pidfile),
/// [`LiveService::listen`] (ctl socket), [`LiveService::drop_privileges`],
/// [`LiveService::ready`] (capturing), [`LiveService::stopping`]; dropping it removes the
/// socket and the pidfile.
pub struct LiveService {
    detached: Option<Detached>,
    credentials: Option<Credentials>,
    socket: Option<super::ctl::SocketSettings>,
    server: Option<super::ctl::CtlServer>,
    // Last: the pidfile goes after the socket.
    pidfile: Option<Pidfile>,
}

impl LiveService {
    /// Checks `--user/--group` and `unix-command:` (so that typos fail in the terminal),
    /// forks for `-D`, then writes the pidfile (the child's pid).
    pub fn start(args: &super::ServiceArgs, config: &crate::config::Config) -> Result<LiveService, DaemonError> {
        let credentials = Credentials::lookup(args.user.as_deref(), args.group.as_deref())?;
        let mut socket = super::ctl::socket_settings(config, args.unix_socket.as_deref()).map_err(|e| err(e.0))?;
        if let Some(settings) = socket.as_mut() {
            if let Some(group) = &settings.group {
                let found =
                    Credentials::lookup(None, Some(group)).map_err(|e| err(format!("unix-command.group: {e}")))?;
                settings.group_id = found.map(|c| c.gid());
            }
        }
        let detached = if args.daemon { Some(daemonize()?) } else { None };
        let pidfile = args.pidfile.as_deref().map(Pidfile::create).transpose()?;
        Ok(LiveService { detached, credentials, socket, server: None, pidfile })
    }

    /// Opens the control socket; under `unix-command.enabled: auto` a failure warns.
    pub fn listen(&mut self, control: super::ControlSender) -> Result<(), DaemonError> {
        let Some(settings) = &self.socket else {
            return Ok(());
        };
        match super::ctl::serve(settings, control) {
            Ok(server) => {
                self.server = Some(server);
                Ok(())
            }
            Err(e) if !settings.required => {
                super::warn(format!("{e} (unix-command.enabled is auto: running without it)"));
                Ok(())
            }
            Err(e) => Err(err(e.0)),
        }
    }

    /// `--user/--group`: gives the run's files to the user (the log files open under
    /// `log_dir`, `log_dir` itself when this run created it, the pidfile, the ctl socket
    /// and the directory made for it), then drops to it keeping [`CAPTURE_CAPABILITIES`].
    /// Refused with the DDoS layer, whose controller thread (already running) needs
    /// CAP_BPF on every map access.
    pub fn drop_privileges(&mut self, log_dir: &Path, log_dir_created: bool, ddos: bool) -> Result<(), DaemonError> {
        let Some(credentials) = &self.credentials else {
            return Ok(());
        };
        if ddos && credentials.user.is_some() {
            return Err(err("--user with the DDoS layer (--ddos, --af-xdp): its BPF maps need CAP_BPF in threads \
                            that start before the drop; run as root, or as a user given CAP_NET_ADMIN, CAP_NET_RAW \
                            and CAP_BPF by systemd (AmbientCapabilities=)"));
        }
        let mut give = open_files_under(log_dir);
        if log_dir_created {
            give.push(log_dir.to_path_buf());
        } else if let Some(uid) = credentials.uid() {
            if !writable_by(log_dir, uid, credentials.gid()) {
                super::warn(format!(
                    "--user: {} cannot write in the log directory {}; log reopening (SIGHUP) and the stats \
                     snapshot will fail; give the directory to the user",
                    credentials.user.as_ref().map(|u| u.0.as_str()).unwrap_or("the user"),
                    log_dir.display()
                ));
            }
        }
        give.extend(self.pidfile.as_ref().map(|p| p.path().to_path_buf()));
        if let Some(server) = &self.server {
            give.push(server.path().to_path_buf());
            give.extend(server.created_dir().map(Path::to_path_buf));
        }
        for path in &give {
            credentials.chown(path)?;
        }
        drop_privileges(credentials, CAPTURE_CAPABILITIES)
    }

    /// The run captures: tells systemd (`READY=1`) and, after `-D`, the waiting parent.
    pub fn ready(&mut self) -> Result<(), DaemonError> {
        notify_ready();
        match self.detached.take() {
            Some(detached) => detached.ready(),
            None => Ok(()),
        }
    }

    /// The run ends (`STOPPING=1`).
    pub fn stopping(&self) {
        notify_stopping();
    }
}

/// `--pidfile` of an offline run (`-D`, `--user`, `--unix-socket` apply to live runs:
/// warned and ignored). Dropping it removes the pidfile.
pub fn offline_pidfile(args: &super::ServiceArgs) -> Result<Option<Pidfile>, DaemonError> {
    if args.daemon || args.user.is_some() || args.group.is_some() || args.unix_socket.is_some() {
        super::warn("-D, --user, --group and --unix-socket apply to live runs; ignored when reading a capture");
    }
    args.pidfile.as_deref().map(Pidfile::create).transpose()
}

/// The files this process has open under `dir` (from `/proc/self/fd`).
fn open_files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(dir) = fs::canonicalize(dir) else {
        return Vec::new();
    };
    let Ok(fds) = fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = fds
        .flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter(|target| target.starts_with(&dir) && target.is_file())
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Whether the permission bits let `uid`/`gid` create files in `dir`.
fn writable_by(dir: &Path, uid: u32, gid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::metadata(dir) else {
        return false;
    };
    let mode = meta.mode();
    let (write, search) = if meta.uid() == uid {
        (0o200, 0o100)
    } else if meta.gid() == gid {
        (0o020, 0o010)
    } else {
        (0o002, 0o001)
    };
    mode & write != 0 && mode & search != 0
}

// ---------------------------------------------------------------------------------------
// Pidfile
// ---------------------------------------------------------------------------------------

/// Longest pidfile picket reads (a pid and a newline; anything longer is not ours).
const MAX_PIDFILE_BYTES: u64 = 64;
/// The process name (`/proc/PID/comm`) a live picket has.
const PROCESS_NAME: &str = "picket";
/// Mode of the pidfile: readable by all (`kill $(cat FILE)`), written by picket.
const PIDFILE_MODE: u32 = 0o644;

/// `--pidfile FILE`: holds this process's pid for the run; removed on drop when it still
/// holds it.
#[derive(Debug)]
pub struct Pidfile {
    path: PathBuf,
    pid: u32,
}

impl Pidfile {
    /// Writes this process's pid into `path` (atomically: a temporary file renamed over
    /// it). Refuses when `path` names a running picket; a file naming a dead process, or a
    /// process that is not picket (a reused pid), is stale and replaced.
    pub fn create(path: &Path) -> Result<Pidfile, DaemonError> {
        let pid = std::process::id();
        if let Some(other) = read_pid(path)? {
            if other != pid && is_live_picket(other) {
                return Err(err(format!(
                    "--pidfile {}: picket is already running as pid {other}; stop it first, or give another pidfile",
                    path.display()
                )));
            }
        }
        let name = path.file_name().ok_or_else(|| err(format!("--pidfile {}: not a file name", path.display())))?;
        let temporary = path.with_file_name(format!(".{}.{pid}.tmp", name.to_string_lossy()));
        let write = || -> io::Result<()> {
            let mut file =
                OpenOptions::new().write(true).create(true).truncate(true).mode(PIDFILE_MODE).open(&temporary)?;
            file.write_all(format!("{pid}\n").as_bytes())?;
            file.sync_all()?;
            fs::rename(&temporary, path)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&temporary);
            err(format!(
                "--pidfile {}: cannot write it: {e}; check the directory exists and is writable",
                path.display()
            ))
        })?;
        Ok(Pidfile { path: path.to_path_buf(), pid })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        // Only our own file: a later picket may have replaced it after a stale check.
        if read_pid(&self.path).ok().flatten() == Some(self.pid) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The pid a pidfile holds; `None` when there is no file or it holds no pid.
fn read_pid(path: &Path) -> Result<Option<u32>, DaemonError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(format!("--pidfile {}: cannot read it: {e}", path.display()))),
    };
    let mut text = String::new();
    let _ = file.take(MAX_PIDFILE_BYTES).read_to_string(&mut text);
    Ok(text.trim().parse::<u32>().ok().filter(|pid| *pid > 0))
}

/// Whether `pid` is a running process named picket.
fn is_live_picket(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim_end() == PROCESS_NAME)
}

// ---------------------------------------------------------------------------------------
// -D: fork into the background
// ---------------------------------------------------------------------------------------

/// Byte the child writes on the pipe once it captures.
const READY: u8 = b'R';
/// Exit status of the parent when the child died without a status of its own.
const CHILD_FAILED_EXIT: i32 = 1;

/// The child's end of `-D`: report start-up success with [`Detached::ready`]; dropping it
/// without (start-up failed) lets the parent exit with the child's status.
pub struct Detached {
    ready: File,
}

impl Detached {
    /// Tells the waiting parent the run is capturing (it prints the pid and exits 0), then
    /// detaches stdin, stdout and stderr from the terminal (to /dev/null).
    pub fn ready(mut self) -> Result<(), DaemonError> {
        self.ready.write_all(&[READY]).map_err(|e| err(format!("-D: cannot tell the parent we started: {e}")))?;
        let null = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(|e| err(format!("-D: cannot open /dev/null: {e}")))?;
        for target in [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            // SAFETY: dup2 on a descriptor we own (`null`, open until the end of this
            // function) onto the standard descriptors; no memory is involved.
            if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), target) } < 0 {
                return Err(err(format!("-D: dup2 onto fd {target}: {}", io::Error::last_os_error())));
            }
        }
        Ok(())
    }
}

/// `-D`: forks. The parent never returns: it waits until the child reports ready (prints
/// the child's pid, exits 0) or ends (exits with the child's status; the child has
/// printed its error on the still-shared stderr). The child returns a [`Detached`] in
/// a new session. Refuses when the process already runs more than one thread: a fork
/// copies only the calling thread.
pub fn daemonize() -> Result<Detached, DaemonError> {
    let threads = fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(1);
    if threads > 1 {
        return Err(err(format!(
            "-D: {threads} threads already run, and a fork would lose them; this is a picket bug (the fork must come \
             before any thread starts)"
        )));
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the two-element array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(err(format!("-D: pipe: {}", io::Error::last_os_error())));
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Whatever the parent buffered would otherwise be printed twice.
    let _ = io::stdout().flush();
    // SAFETY: the process has one thread (checked above), so the child is a complete copy
    // and may keep running Rust code.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(err(format!("-D: fork: {}", io::Error::last_os_error()))),
        0 => {
            drop(read_end);
            // SAFETY: setsid has no memory arguments; the child of a fork is never a
            // process-group leader, so it cannot fail with EPERM.
            if unsafe { libc::setsid() } < 0 {
                return Err(err(format!("-D: setsid: {}", io::Error::last_os_error())));
            }
            Ok(Detached { ready: File::from(write_end) })
        }
        child => {
            drop(write_end);
            let mut byte = [0u8; 1];
            let mut pipe = File::from(read_end);
            if matches!(pipe.read(&mut byte), Ok(1)) && byte[0] == READY {
                println!("picket: running in the background as pid {child}");
                std::process::exit(0);
            }
            std::process::exit(wait_exit_status(child));
        }
    }
}

/// The exit status of `child` (128 + signal when a signal ended it).
fn wait_exit_status(child: libc::pid_t) -> i32 {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes the status into the integer it is given.
        let r = unsafe { libc::waitpid(child, &mut status, 0) };
        if r == child {
            break;
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return CHILD_FAILED_EXIT;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        CHILD_FAILED_EXIT
    }
}

// ---------------------------------------------------------------------------------------
// --user / --group
// ---------------------------------------------------------------------------------------

/// The capabilities a live run keeps after `--user`: CAP_NET_ADMIN only. NFQUEUE
/// verdicts go through nfnetlink, which checks it on every message (tests/daemon.rs fails
/// without it), and an inline bridge restores the interfaces' offloads (SIOCETHTOOL) at
/// exit. CAP_NET_RAW is not kept: every AF_PACKET, AF_XDP and raw reply socket is open
/// before the drop, and sending on an open socket checks no capability.
pub const CAPTURE_CAPABILITIES: &[u32] = &[CAP_NET_ADMIN];
pub const CAP_NET_ADMIN: u32 = 12;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// Buffer for getpwnam_r/getgrnam_r when sysconf gives no hint.
const NSS_BUFFER: usize = 16 * 1024;
/// Largest buffer tried for a user or group entry (huge group member lists).
const NSS_BUFFER_MAX: usize = 1 << 20;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The user and group `--user/--group` name, resolved before anything is set up, so a
/// typo fails at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// `None`: `--group` alone (the user stays).
    pub user: Option<(String, u32)>,
    pub group: (String, u32),
}

impl Credentials {
    /// Looks up `--user` (a name or a number) and `--group` (default: the user's primary
    /// group). `None` when neither is given.
    pub fn lookup(user: Option<&str>, group: Option<&str>) -> Result<Option<Credentials>, DaemonError> {
        let user = match user {
            Some(name) => Some(lookup_user(name)?),
            None => None,
        };
        let group = match (group, &user) {
            (Some(name), _) => lookup_group(name)?,
            (None, Some((name, _, gid))) => (format!("{name}'s primary group"), *gid),
            (None, None) => return Ok(None),
        };
        Ok(Some(Credentials { user: user.map(|(name, uid, _)| (name, uid)), group }))
    }

    pub fn uid(&self) -> Option<u32> {
        self.user.as_ref().map(|u| u.1)
    }

    pub fn gid(&self) -> u32 {
        self.group.1
    }

    /// Gives `path` to the run's user and group (log files, the pidfile, the ctl socket),
    /// so that they can be reopened or removed after the drop.
    pub fn chown(&self, path: &Path) -> Result<(), DaemonError> {
        std::os::unix::fs::chown(path, self.uid(), Some(self.gid()))
            .map_err(|e| err(format!("--user/--group: cannot give {} to the run's user: {e}", path.display())))
    }
}

/// (name, uid, primary gid) of a user name or number.
fn lookup_user(name: &str) -> Result<(String, u32, u32), DaemonError> {
    let c_name = CString::new(name).map_err(|_| err(format!("--user {name:?}: not a user name")))?;
    let mut size = nss_buffer_size(libc::_SC_GETPW_R_SIZE_MAX);
    loop {
        let mut buffer = vec![0 as libc::c_char; size];
        // SAFETY: passwd is plain old data; all zero is a valid value.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: the name is NUL-terminated, the
        // buffer has `size` bytes, `entry` and `found` are ours.
        let r = unsafe { libc::getpwnam_r(c_name.as_ptr(), &mut entry, buffer.as_mut_ptr(), size, &mut found) };
        if r == libc::ERANGE && size < NSS_BUFFER_MAX {
            size *= 2;
            continue;
        }
        if r != 0 {
            return Err(err(format!("--user {name}: user lookup failed: {}", io::Error::from_raw_os_error(r))));
        }
        if found.is_null() {
            // A number that names no user is still a valid uid (as for chown).
            return match name.parse::<u32>() {
                Ok(uid) => Ok((name.to_string(), uid, uid)),
                Err(_) => Err(err(format!("--user {name}: no such user; create it or give a uid"))),
            };
        }
        return Ok((name.to_string(), entry.pw_uid, entry.pw_gid));
    }
}

/// (name, gid) of a group name or number.
fn lookup_group(name: &str) -> Result<(String, u32), DaemonError> {
    let c_name = CString::new(name).map_err(|_| err(format!("--group {name:?}: not a group name")))?;
    let mut size = nss_buffer_size(libc::_SC_GETGR_R_SIZE_MAX);
    loop {
        let mut buffer = vec![0 as libc::c_char; size];
        // SAFETY: group is plain old data; all zero is a valid value.
        let mut entry: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as for getpwnam_r above.
        let r = unsafe { libc::getgrnam_r(c_name.as_ptr(), &mut entry, buffer.as_mut_ptr(), size, &mut found) };
        if r == libc::ERANGE && size < NSS_BUFFER_MAX {
            size *= 2;
            continue;
        }
        if r != 0 {
            return Err(err(format!("--group {name}: group lookup failed: {}", io::Error::from_raw_os_error(r))));
        }
        if found.is_null() {
            return match name.parse::<u32>() {
                Ok(gid) => Ok((name.to_string(), gid)),
                Err(_) => Err(err(format!("--group {name}: no such group; create it or give a gid"))),
            };
        }
        return Ok((name.to_string(), entry.gr_gid));
    }
}

fn nss_buffer_size(name: libc::c_int) -> usize {
    // SAFETY: sysconf takes an integer and returns one.
    let hint = unsafe { libc::sysconf(name) };
    usize::try_from(hint).ok().filter(|n| *n > 0).unwrap_or(NSS_BUFFER).min(NSS_BUFFER_MAX)
}

/// Switches the process to `credentials` and keeps `keep` (capability numbers) in the
/// calling thread's effective and permitted sets; every other capability is gone, and
/// the process cannot become root again (checked). Call on the main thread after every
/// privileged set-up, before the workers start.
pub fn drop_privileges(credentials: &Credentials, keep: &[u32]) -> Result<(), DaemonError> {
    // SAFETY: geteuid has no arguments.
    if unsafe { libc::geteuid() } != 0 {
        return Err(err("--user/--group: picket must start as root to change user; start it as root, or drop \
                        --user/--group and give the capabilities with systemd (AmbientCapabilities=)"));
    }
    let gid = credentials.gid();
    let fail = |what: &str| err(format!("--user/--group: {what}: {}", io::Error::last_os_error()));
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1 as libc::c_ulong, 0, 0, 0) } < 0 {
        return Err(fail("prctl(PR_SET_KEEPCAPS)"));
    }
    // glibc applies setgroups/setgid/setuid to every thread of the process.
    // SAFETY: setgroups reads one gid from the pointer it is given.
    if unsafe { libc::setgroups(1, &gid) } < 0 {
        return Err(fail("setgroups"));
    }
    // SAFETY: integer argument only.
    if unsafe { libc::setgid(gid) } < 0 {
        return Err(fail(&format!("setgid({gid})")));
    }
    let Some(uid) = credentials.uid() else {
        // --group alone: still root, nothing else to drop.
        return Ok(());
    };
    // SAFETY: integer argument only.
    if unsafe { libc::setuid(uid) } < 0 {
        return Err(fail(&format!("setuid({uid})")));
    }
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 0 as libc::c_ulong, 0, 0, 0) };
    let mut data = [CapData::default(); 2];
    for &cap in keep {
        let word = &mut data[(cap / 32) as usize % 2];
        word.effective |= 1 << (cap % 32);
        word.permitted |= 1 << (cap % 32);
    }
    let header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    // SAFETY: capset reads a version-3 header and two data words, which is what we pass.
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) } < 0 {
        return Err(fail("capset"));
    }
    // SAFETY: integer argument only; it must fail now.
    if uid != 0 && unsafe { libc::setuid(0) } == 0 {
        return Err(err("--user: the process could become root again after the drop; refusing to run"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// sd_notify
// ---------------------------------------------------------------------------------------

/// The service manager's notification socket (systemd `Type=notify`).
const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Sends `state` (e.g. `READY=1`) to the service manager when `NOTIFY_SOCKET` is set.
/// Returns whether it was sent; without the variable nothing happens.
pub fn notify(state: &str) -> bool {
    let Some(target) = std::env::var_os(NOTIFY_SOCKET) else {
        return false;
    };
    let Ok(socket) = std::os::unix::net::UnixDatagram::unbound() else {
        return false;
    };
    let address = match target.as_encoded_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name),
        None => SocketAddr::from_pathname(Path::new(&target)),
    };
    address.and_then(|a| socket.send_to_addr(state.as_bytes(), &a)).is_ok()
}

/// `READY=1` (with `MAINPID`, which matters after `-D`).
pub fn notify_ready() -> bool {
    notify(&format!("READY=1\nMAINPID={}\nSTATUS=capturing", std::process::id()))
}

/// `RELOADING=1` with the monotonic time systemd's `Type=notify-reload` asks for.
pub fn notify_reloading() -> bool {
    notify(&format!("RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading rules", monotonic_usec()))
}

/// The reload is over: `READY=1` again.
pub fn notify_reloaded() -> bool {
    notify("READY=1\nSTATUS=capturing")
}

pub fn notify_stopping() -> bool {
    notify("STOPPING=1\nSTATUS=stopping")
}

/// CLOCK_MONOTONIC in microseconds (what systemd compares `MONOTONIC_USEC` with).
fn monotonic_usec() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64) * 1_000_000 + (now.tv_nsec as u64) / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pidfile_replaces_stale_and_refuses_live() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pid");
        // A dead pid (larger than any pid_max) is stale.
        fs::write(&path, "4194305\n").unwrap();
        let pidfile = Pidfile::create(&path).unwrap();
        assert_eq!(read_pid(&path).unwrap(), Some(std::process::id()));
        drop(pidfile);
        assert!(!path.exists(), "the pidfile is removed on drop");
        // Garbage is stale too.
        fs::write(&path, "not a pid").unwrap();
        drop(Pidfile::create(&path).unwrap());
    }

    #[test]
    fn pidfile_of_a_live_non_picket_process_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pid");
        // pid 1 is alive and is not picket.
        fs::write(&path, "1\n").unwrap();
        let pidfile = Pidfile::create(&path).unwrap();
        assert_eq!(read_pid(pidfile.path()).unwrap(), Some(std::process::id()));
    }

    #[test]
    fn unknown_user_and_group_are_refused() {
        let e = Credentials::lookup(Some("no-such-user-picket"), None).unwrap_err();
        assert!(e.0.contains("no such user"), "{e}");
        let e = Credentials::lookup(None, Some("no-such-group-picket")).unwrap_err();
        assert!(e.0.contains("no such group"), "{e}");
        assert_eq!(Credentials::lookup(None, None).unwrap(), None);
        let root = Credentials::lookup(Some("root"), None).unwrap().unwrap();
        assert_eq!((root.uid(), root.gid()), (Some(0), 0));
        let numeric = Credentials::lookup(Some("54321"), Some("54322")).unwrap().unwrap();
        assert_eq!((numeric.uid(), numeric.gid()), (Some(54321), 54322));
    }

    #[test]
    fn notify_sends_to_the_notify_socket_only_when_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let server = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        // Set only in this test; the other tests of this module do not read it.
        std::env::set_var(NOTIFY_SOCKET, &path);
        assert!(notify_ready());
        std::env::remove_var(NOTIFY_SOCKET);
        let mut buf = [0u8; 256];
        let n = server.recv(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("READY=1\nMAINPID="), "{text}");
        assert!(!notify_stopping());
    }
}
