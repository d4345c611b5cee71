//! The system calls behind [`super::NfQueue`]: every `unsafe` block of the NFQUEUE port
//! lives in this file, each behind a safe function.
//!
//! - the netlink socket (`AF_NETLINK`, `NETLINK_NETFILTER`) a queue is bound through;
//! - [`RecvBatch`]: many kernel messages per system call with `recvmmsg` (a netlink
//!   socket hands out one message per `recv`);
//! - the raw IP sockets reject replies are sent through.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `socket()` then ownership of the new descriptor.
fn socket(domain: libc::c_int, kind: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain system call with integer arguments; no pointers involved.
    let fd = check(unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_option<T: Copy>(fd: &OwnedFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live, initialised `T` and the length passed is exactly
    // its size; the kernel only reads it. `T` is a plain integer here.
    check(unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t)
    })?;
    Ok(())
}

fn get_int_option(fd: &OwnedFd, level: i32, name: i32) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the buffer is one writable c_int and `len` says so; the kernel writes at
    // most `len` bytes.
    check(unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, (&mut value as *mut libc::c_int).cast(), &mut len) })?;
    Ok(value)
}

/// A netfilter netlink socket bound to a port id the kernel picks. Fails with
/// EPROTONOSUPPORT when the kernel has no nfnetlink.
pub(super) fn netlink_socket() -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_NETFILTER)?;
    // SAFETY: `sockaddr_nl` is a C struct of integers; all-zero is valid (port id 0:
    // the kernel assigns one, no multicast groups).
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: `addr` is a valid `sockaddr_nl` and the length passed is its size.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// The port id the kernel gave the netlink socket (what /proc lists as `peer_portid`).
pub(super) fn netlink_port_id(fd: &OwnedFd) -> io::Result<u32> {
    // SAFETY: as in `netlink_socket`.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    // SAFETY: `addr` is writable and `len` is its size; the kernel writes at most `len`.
    check(unsafe { libc::getsockname(fd.as_raw_fd(), (&mut addr as *mut libc::sockaddr_nl).cast(), &mut len) })?;
    Ok(addr.nl_pid)
}

/// Asks for a receive buffer of `bytes`: past the `net.core.rmem_max` limit when the
/// process may (SO_RCVBUFFORCE, CAP_NET_ADMIN), else up to it. Returns the size the
/// kernel granted (it doubles the request for its bookkeeping).
pub(super) fn set_receive_buffer(fd: &OwnedFd, bytes: u32) -> io::Result<usize> {
    let want = bytes.min(i32::MAX as u32) as libc::c_int;
    if set_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &want).is_err() {
        set_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &want)?;
    }
    Ok(get_int_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?.max(0) as usize)
}

/// Sends one datagram (one or more netlink messages) to the kernel.
pub(super) fn send(fd: &OwnedFd, datagram: &[u8]) -> io::Result<()> {
    loop {
        // SAFETY: the pointer and length describe `datagram`, which the kernel only
        // reads during the call. An unconnected netlink socket sends to the kernel.
        let rc = unsafe { libc::send(fd.as_raw_fd(), datagram.as_ptr().cast(), datagram.len(), 0) };
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits until the socket has something to read (or an error to report), at most
/// `timeout`. Returns whether it has.
pub(super) fn wait_readable(fd: &OwnedFd, timeout: Duration) -> io::Result<bool> {
    let millis = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid `pollfd`, count 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, millis) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(err) };
    }
    if pfd.revents & libc::POLLNVAL != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // POLLERR (a pending ENOBUFS) is reported by the next receive.
    Ok(rc > 0)
}

/// Most datagrams one `recvmmsg` call takes.
pub(super) const MAX_BATCH: usize = 64;

/// Receive buffers for up to [`MAX_BATCH`] datagrams of `slot_size` bytes each, and what
/// the last [`RecvBatch::receive`] put in them.
pub(super) struct RecvBatch {
    buf: Vec<u8>,
    slot_size: usize,
    slots: usize,
    /// Per datagram received: its length in its slot, and whether it was cut short.
    received: Vec<(usize, bool)>,
}

impl RecvBatch {
    pub(super) fn new(slots: usize, slot_size: usize) -> Self {
        let slots = slots.clamp(1, MAX_BATCH);
        RecvBatch { buf: vec![0; slots * slot_size], slot_size, slots, received: Vec::with_capacity(slots) }
    }

    /// Reads the datagrams that are ready without waiting; returns how many (0 when none
    /// is). ENOBUFS (messages the socket had no room for) comes back as an error, once.
    pub(super) fn receive(&mut self, fd: &OwnedFd) -> io::Result<usize> {
        self.received.clear();
        let mut iovecs: [MaybeUninit<libc::iovec>; MAX_BATCH] = [const { MaybeUninit::uninit() }; MAX_BATCH];
        let mut headers: [MaybeUninit<libc::mmsghdr>; MAX_BATCH] = [const { MaybeUninit::uninit() }; MAX_BATCH];
        for (i, chunk) in self.buf.chunks_exact_mut(self.slot_size).take(self.slots).enumerate() {
            let iov = iovecs[i].write(libc::iovec { iov_base: chunk.as_mut_ptr().cast(), iov_len: chunk.len() });
            // SAFETY: `msghdr` is a C struct of integers and pointers; all-zero is valid
            // (no name, no control data).
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov;
            msg.msg_iovlen = 1;
            headers[i].write(libc::mmsghdr { msg_hdr: msg, msg_len: 0 });
        }
        let rc = loop {
            // SAFETY: the first `self.slots` headers were initialised above, each naming
            // one iovec over a distinct `slot_size` chunk of `self.buf`, all of which
            // live until the call returns; the kernel writes at most `iov_len` bytes to
            // each and fills `msg_len`/`msg_flags`. No timeout pointer.
            let rc = unsafe {
                libc::recvmmsg(
                    fd.as_raw_fd(),
                    headers.as_mut_ptr().cast::<libc::mmsghdr>(),
                    self.slots as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if rc >= 0 {
                break rc as usize;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(err),
            }
        };
        for header in headers.iter().take(rc.min(self.slots)) {
            // SAFETY: initialised before the call, and the kernel updated the first `rc`.
            let header = unsafe { header.assume_init_ref() };
            let truncated = header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            self.received.push(((header.msg_len as usize).min(self.slot_size), truncated));
        }
        Ok(self.received.len())
    }

    /// Datagram `i` of the last receive, and whether the kernel had to cut it.
    pub(super) fn datagram(&self, i: usize) -> (&[u8], bool) {
        match self.received.get(i) {
            Some(&(len, truncated)) => {
                let start = i * self.slot_size;
                (self.buf.get(start..start + len).unwrap_or(&[]), truncated)
            }
            None => (&[], false),
        }
    }

    pub(super) fn slots(&self) -> usize {
        self.slots
    }
}

/// A raw socket that sends whole IP packets (header included) of one family:
/// `AF_INET`/`AF_INET6`, `SOCK_RAW`, `IPPROTO_RAW`.
pub(super) fn raw_ip_socket(ipv6: bool) -> io::Result<OwnedFd> {
    let domain = if ipv6 { libc::AF_INET6 } else { libc::AF_INET };
    socket(domain, libc::SOCK_RAW, libc::IPPROTO_RAW)
}

/// Sends the IP packet `packet` (its header included) to `dst` through a raw socket of
/// the matching family.
pub(super) fn send_ip_packet(fd: &OwnedFd, packet: &[u8], dst: IpAddr) -> io::Result<()> {
    // SAFETY: `sockaddr_storage` is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match dst {
        IpAddr::V4(v4) => {
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 0,
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in`.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), addr) };
            size_of::<libc::sockaddr_in>()
        }
        IpAddr::V6(v6) => {
            let addr = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: 0,
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: v6.octets() },
                sin6_scope_id: 0,
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in6`.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), addr) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    loop {
        // SAFETY: `packet` is readable for its length; `storage` holds a valid address
        // of `len` bytes. The kernel only reads both.
        let rc = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                packet.as_ptr().cast(),
                packet.len(),
                0,
                (&storage as *const libc::sockaddr_storage).cast(),
                len as libc::socklen_t,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
