//! The XDP module's own system calls, fenced here (aya makes the others):
//! - [`test_run`]: runs the loaded XDP program on one frame in the kernel
//!   (`BPF_PROG_TEST_RUN`), without any interface: what the verifier accepted is what
//!   runs, with the real helpers (SYN cookies, map lookups). The tests of the program's
//!   decisions use it; aya 0.13 has no wrapper for this command.
//! - [`monotonic_ns`]: the clock of the program's `bpf_ktime_get_ns`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `BPF_PROG_TEST_RUN` (include/uapi/linux/bpf.h `enum bpf_cmd`).
const BPF_PROG_TEST_RUN: libc::c_long = 10;
/// Room for the program to grow the frame (SYN-ACKs are built by growing the SYN).
const OUT_SLACK: usize = 256;

/// The `test` member of `union bpf_attr`, up to `batch_size`.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    pad: u32,
}

/// What the program did with a frame: its XDP action (`XDP_DROP` = 1, `XDP_PASS` = 2,
/// `XDP_TX` = 3, `XDP_REDIRECT` = 4) and the frame as it left the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestRun {
    pub action: u32,
    pub frame: Vec<u8>,
}

/// Runs the program behind `prog` once on `frame`.
pub fn test_run(prog: BorrowedFd<'_>, frame: &[u8]) -> io::Result<TestRun> {
    let mut out = vec![0u8; frame.len() + OUT_SLACK];
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: frame.len() as u32,
        data_size_out: out.len() as u32,
        data_in: frame.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: 1,
        ..TestRunAttr::default()
    };
    // SAFETY: `attr` is a valid, initialised `bpf_attr` prefix of the size passed; the
    // kernel reads `data_size_in` bytes from `frame` and writes at most `data_size_out`
    // bytes into `out`, both live for the call, and updates `attr` in place.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            &mut attr as *mut TestRunAttr,
            std::mem::size_of::<TestRunAttr>() as u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    out.truncate((attr.data_size_out as usize).min(out.len()));
    Ok(TestRun { action: attr.retval, frame: out })
}

/// Now on the clock of the program's `bpf_ktime_get_ns` (CLOCK_MONOTONIC), in ns: the
/// time base of blocklist expiry (`BlockVal::expires_ns`) and bypass `last_ns`.
pub fn monotonic_ns() -> u64 {
    // std's Instant is CLOCK_MONOTONIC on Linux but hides its value; /proc/uptime is
    // too coarse. clock_gettime cannot fail for CLOCK_MONOTONIC with a valid pointer.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
