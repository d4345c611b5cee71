//! The ethtool ioctl (SIOCETHTOOL) behind [`super`]: every `unsafe` block of the offload
//! code lives here, behind safe functions over a buffer of 32-bit words.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A datagram socket to address ioctls to (any socket reaches the device ioctls, as
/// ethtool itself does it).
pub(super) fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; no pointers involved.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Runs one ethtool command on interface `name`. `request` is the command's structure
/// as 32-bit words, the command number in word 0; the kernel reads it and writes its
/// answer into it. Returns the ioctl's non-negative result (ETHTOOL_SFEATURES reports
/// partial success with flags there).
pub(super) fn ethtool(fd: &OwnedFd, name: &str, request: &mut [u32]) -> io::Result<i32> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let bytes = cname.as_bytes_with_nul();
    if bytes.len() > libc::IFNAMSIZ || request.is_empty() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: `ifreq` is a C struct of integers, arrays and a union of such; all-zero is
    // a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_data = request.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads the command number from `request` and reads and writes
    // at most the size that command's structure declares within it: the callers size
    // `request` from the counts in that same structure (set count, string count, feature
    // words), so the kernel never goes past its end. `req` and `request` outlive the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL as libc::Ioctl, &mut req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}
