//! The system calls behind [`super::AfPacketSocket`] and [`super::TxSocket`]: every
//! `unsafe` block of AF_PACKET capture and transmission lives in this file, each behind a
//! safe function.
//!
//! The shared rings are the delicate part. The kernel and this process both write to
//! them; ownership of each slot (a TPACKET_V3 block, a TPACKET_V2 frame) is passed back
//! and forth through its status word. [`Ring`] only hands out the bytes of a slot after
//! seeing `TP_STATUS_USER` on it (with acquire ordering, so the kernel's writes are
//! visible), and gives it back with a release store of `TP_STATUS_KERNEL` from a
//! `&mut self` method, so no borrowed slice of the slot can outlive the hand-back.
//! [`TxRing`] is the mirror image: it writes a frame only after seeing
//! `TP_STATUS_AVAILABLE` (acquire) and hands it over with a release store of
//! `TP_STATUS_SEND_REQUEST`.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// `ETH_P_ALL` in network byte order, as `socket` and `bind` want it.
fn all_protocols_be() -> u16 {
    (libc::ETH_P_ALL as u16).to_be()
}

/// A packet socket that receives nothing until bound: with protocol 0 the kernel does
/// not deliver packets from every interface in the window before `bind`.
pub(super) fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; no pointers involved.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn set_option<T: Copy>(fd: &OwnedFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live, initialised `T` and the length passed is exactly
    // its size; the kernel only reads it. The types used are the kernel's own option
    // structures as declared by `libc` (or plain integers).
    let rc = unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads a socket option whose value is a plain C structure of integers (any bit
/// pattern valid), returning an error if the kernel wrote fewer bytes than `T` holds.
fn get_option<T: Copy>(fd: &OwnedFd, level: i32, name: i32) -> io::Result<T> {
    let mut value = MaybeUninit::<T>::zeroed();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the buffer is `size_of::<T>()` writable bytes and `len` says so; the kernel
    // writes at most `len` bytes and reports how many.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, value.as_mut_ptr().cast(), &mut len) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != size_of::<T>() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "socket option of unexpected size"));
    }
    // SAFETY: zero-initialised, then fully written by the kernel; `T` is only ever an
    // integer or a struct of integers here, for which every bit pattern is valid.
    Ok(unsafe { value.assume_init() })
}

/// PACKET_STATISTICS of a TPACKET_V3 socket (the answer's size depends on the version).
pub(super) fn statistics(fd: &OwnedFd) -> io::Result<libc::tpacket_stats_v3> {
    get_option(fd, libc::SOL_PACKET, libc::PACKET_STATISTICS)
}

/// PACKET_STATISTICS of a TPACKET_V2 socket: packets and drops, no freeze count.
pub(super) fn statistics_v2(fd: &OwnedFd) -> io::Result<libc::tpacket_stats> {
    get_option(fd, libc::SOL_PACKET, libc::PACKET_STATISTICS)
}

/// Pending asynchronous error of the socket (e.g. ENETDOWN when the interface went
/// down), cleared by reading it.
fn take_socket_error(fd: &OwnedFd) -> io::Result<i32> {
    get_option::<libc::c_int>(fd, libc::SOL_SOCKET, libc::SO_ERROR)
}

/// `ifreq` for `name`; the caller has checked the name fits (validation in config).
fn ifreq_for(name: &str) -> io::Result<libc::ifreq> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let bytes = cname.as_bytes_with_nul();
    if bytes.len() > libc::IFNAMSIZ {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: `ifreq` is a C struct of integers, arrays and a union of such; all-zero is
    // a valid value (empty name, zero payload).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

fn interface_ioctl(fd: &OwnedFd, name: &str, request: libc::Ioctl) -> io::Result<libc::ifreq> {
    let mut req = ifreq_for(name)?;
    // SAFETY: SIOCGIFINDEX, SIOCGIFFLAGS and SIOCGIFHWADDR read the NUL-terminated name
    // from `req` and write one field of its union; `req` is a valid, writable `ifreq`.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, &mut req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(req)
}

/// Index of interface `name` in the socket's network namespace.
pub(super) fn interface_index(fd: &OwnedFd, name: &str) -> io::Result<i32> {
    let req = interface_ioctl(fd, name, libc::SIOCGIFINDEX)?;
    // SAFETY: SIOCGIFINDEX succeeded, so the kernel filled `ifru_ifindex`.
    Ok(unsafe { req.ifr_ifru.ifru_ifindex })
}

/// `IFF_*` flags of interface `name`.
pub(super) fn interface_flags(fd: &OwnedFd, name: &str) -> io::Result<i32> {
    let req = interface_ioctl(fd, name, libc::SIOCGIFFLAGS)?;
    // SAFETY: SIOCGIFFLAGS succeeded, so the kernel filled `ifru_flags`.
    Ok(unsafe { req.ifr_ifru.ifru_flags } as u16 as i32)
}

/// ARPHRD_* hardware type of interface `name`, known before the socket is bound.
pub(super) fn interface_hardware_type(fd: &OwnedFd, name: &str) -> io::Result<u16> {
    let req = interface_ioctl(fd, name, libc::SIOCGIFHWADDR)?;
    // SAFETY: SIOCGIFHWADDR succeeded, so the kernel filled `ifru_hwaddr`, whose family
    // field holds the hardware type.
    Ok(unsafe { req.ifr_ifru.ifru_hwaddr.sa_family })
}

/// Attaches a classic BPF program as the socket filter: the kernel runs it on every
/// packet before it reaches the ring and drops those it rejects. Also valid before bind.
pub(super) fn attach_filter(fd: &OwnedFd, program: &[crate::capture::bpf::BpfInstruction]) -> io::Result<()> {
    let len = u16::try_from(program.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let fprog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>() };
    // `BpfInstruction` has the layout of `sock_filter` (checked in bpf's tests); the kernel
    // copies the program during the call and only reads it.
    set_option(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
}

fn link_address(ifindex: i32) -> libc::sockaddr_ll {
    // SAFETY: `sockaddr_ll` is a C struct of integers and an array; all-zero is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = all_protocols_be();
    addr.sll_ifindex = ifindex;
    addr
}

/// Binds the socket to one interface for all protocols; packets start flowing into the
/// ring from here on.
pub(super) fn bind_to_interface(fd: &OwnedFd, ifindex: i32) -> io::Result<()> {
    let addr = link_address(ifindex);
    // SAFETY: `addr` is a valid `sockaddr_ll` and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// ARPHRD_* hardware type of the interface the socket is bound to.
pub(super) fn bound_hardware_type(fd: &OwnedFd) -> io::Result<u16> {
    // SAFETY: all-zero is a valid `sockaddr_ll`.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `addr` is writable for `len` bytes; the kernel writes at most that much.
    let rc = unsafe { libc::getsockname(fd.as_raw_fd(), (&mut addr as *mut libc::sockaddr_ll).cast(), &mut len) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(addr.sll_hatype)
}

/// Sleeps until the socket is readable or `timeout` passes. A signal ends the wait
/// early, like a timeout. A pending socket error (interface gone down) is returned.
pub(super) fn wait_readable(fd: &OwnedFd, timeout: Duration) -> io::Result<()> {
    wait_any_readable(&[fd], timeout)
}

/// Sleeps until one of `fds` is readable or `timeout` passes (a signal ends the wait
/// early, like a timeout). A pending socket error on one of them is returned.
pub(super) fn wait_any_readable(fds: &[&OwnedFd], timeout: Duration) -> io::Result<()> {
    let millis = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN | libc::POLLERR, revents: 0 })
        .collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structures.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, millis) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(());
        }
        return Err(err);
    }
    for (pfd, fd) in pfds.iter().zip(fds) {
        if pfd.revents & libc::POLLERR != 0 {
            let code = take_socket_error(fd)?;
            if code != 0 {
                return Err(io::Error::from_raw_os_error(code));
            }
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
    }
    Ok(())
}

/// The memory-mapped receive ring of one socket, walked slot by slot in the order the
/// kernel fills them. A slot is a block of packets (TPACKET_V3) or one packet's frame
/// (TPACKET_V2); each has a status word at `status_offset`.
pub(super) struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    block_size: usize,
    block_count: usize,
    /// Where the status word sits in a slot.
    status_offset: usize,
    /// Next block to hand out, or the one held.
    current: usize,
    /// Whether `current` is owned by user space (seen as TP_STATUS_USER, not given back).
    held: bool,
}

// SAFETY: the mapping belongs to this `Ring` alone (no other handle to it exists in the
// process), so moving it to another thread moves sole access with it.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring the kernel allocated with PACKET_RX_RING, as `block_count` slots of
    /// `block_size` bytes back to back, each with its status word at `status_offset`
    /// (a multiple of 4 below `block_size`).
    pub(super) fn map(fd: &OwnedFd, block_size: usize, block_count: usize, status_offset: usize) -> io::Result<Ring> {
        if !status_offset.is_multiple_of(4) || status_offset + 4 > block_size {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let map_len = block_size
            .checked_mul(block_count)
            .filter(|&len| len > 0)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let base = map_ring(fd, map_len)?;
        Ok(Ring { base, map_len, block_size, block_count, status_offset, current: 0, held: false })
    }

    fn status_word(&self, index: usize) -> &AtomicU32 {
        debug_assert!(index < self.block_count);
        // SAFETY: `index < block_count` and `status_offset + 4 <= block_size` (checked in
        // `map`), so the word lies inside the mapping; the mapping is page-aligned, slot
        // sizes are multiples of 16 (TPACKET_ALIGNMENT, checked by the config) and the
        // offset a multiple of 4, so it is aligned for AtomicU32. The kernel accesses this
        // word concurrently, which is why it is only ever touched through an atomic.
        unsafe { &*self.base.as_ptr().add(index * self.block_size + self.status_offset).cast::<AtomicU32>() }
    }

    /// Takes ownership of the next block if the kernel has filled it. Returns whether a
    /// block is held afterwards.
    pub(super) fn try_acquire(&mut self) -> bool {
        if !self.held {
            let status = self.status_word(self.current).load(Ordering::Acquire);
            self.held = status & libc::TP_STATUS_USER != 0;
        }
        self.held
    }

    /// Bytes of the held block, if any.
    pub(super) fn held_block(&self) -> Option<&[u8]> {
        if !self.held {
            return None;
        }
        // SAFETY: the block lies inside the mapping. We saw TP_STATUS_USER on it with
        // acquire ordering, so the kernel has finished writing it and will not touch it
        // until `release` stores TP_STATUS_KERNEL; `release` takes `&mut self`, so this
        // shared borrow ends before that.
        Some(unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(self.current * self.block_size), self.block_size)
        })
    }

    /// Gives the held block back to the kernel and moves on to the next one.
    pub(super) fn release(&mut self) {
        if !self.held {
            return;
        }
        self.status_word(self.current).store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.held = false;
        self.current = (self.current + 1) % self.block_count;
    }

    pub(super) fn block_count(&self) -> usize {
        self.block_count
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `map`; no slice of it can be alive
        // since they all borrow `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

/// The system's page size; ring blocks must be multiples of it.
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects; it returns -1 only for unknown names.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// Binds a packet socket to one interface with protocol 0: it can send there (the
/// frames given are transmitted as they are) and never receives anything.
pub(super) fn bind_send_only(fd: &OwnedFd, ifindex: i32) -> io::Result<()> {
    let mut addr = link_address(ifindex);
    addr.sll_protocol = 0;
    // SAFETY: `addr` is a valid `sockaddr_ll` and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// MTU of interface `name`: the largest packet above the link header it carries.
pub(super) fn interface_mtu(fd: &OwnedFd, name: &str) -> io::Result<u32> {
    let req = interface_ioctl(fd, name, libc::SIOCGIFMTU)?;
    // SAFETY: SIOCGIFMTU succeeded, so the kernel filled `ifru_mtu`.
    Ok(unsafe { req.ifr_ifru.ifru_mtu }.max(0) as u32)
}

/// Most frames handed to the kernel in one `sendmmsg`.
pub(super) const MAX_SEND_BATCH: usize = 64;

/// Sends each of `frames` (at most [`MAX_SEND_BATCH`]) as one packet on the interface
/// the socket is bound to, in one `sendmmsg`. Returns how many were sent, in order;
/// fewer than all means the next one failed (call again from there to learn why). An
/// `Err` means the first one failed.
pub(super) fn send_frames(fd: &OwnedFd, frames: &[&[u8]]) -> io::Result<usize> {
    let count = frames.len().min(MAX_SEND_BATCH);
    if count == 0 {
        return Ok(0);
    }
    // SAFETY: `iovec` and `mmsghdr` are C structs of integers and pointers; all-zero
    // (null pointers, zero lengths) is a valid value.
    let mut iovecs: [libc::iovec; MAX_SEND_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut messages: [libc::mmsghdr; MAX_SEND_BATCH] = unsafe { std::mem::zeroed() };
    for (i, frame) in frames[..count].iter().enumerate() {
        iovecs[i] = libc::iovec { iov_base: frame.as_ptr().cast_mut().cast(), iov_len: frame.len() };
        // No destination address: the socket's bound interface. No control data.
        messages[i].msg_hdr.msg_iov = &mut iovecs[i];
        messages[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `messages[..count]` each point to one `iovec` of `iovecs`, which point to
    // the caller's frames; all of them outlive the call and the kernel only reads the
    // frames (it writes `msg_len` of each message).
    let rc = unsafe { libc::sendmmsg(fd.as_raw_fd(), messages.as_mut_ptr(), count as libc::c_uint, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as usize)
}

/// Asks the kernel to transmit every frame of the socket's TX ring marked
/// TP_STATUS_SEND_REQUEST. On a blocking socket it returns once they are all sent (or
/// the send timeout passed). Returns the bytes sent.
pub(super) fn kick_tx_ring(fd: &OwnedFd) -> io::Result<usize> {
    // SAFETY: a zero-length send with no buffer (the frames are in the mapped ring);
    // the kernel reads nothing through the null pointer.
    let rc = unsafe { libc::send(fd.as_raw_fd(), std::ptr::null(), 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as usize)
}

/// The memory-mapped TPACKET_V2 transmit ring of one socket: frames filled in order and
/// handed to the kernel through each frame's status word. A frame is only written after
/// its status was seen TP_STATUS_AVAILABLE (acquire: the kernel is done with it), and handed
/// over by a release store of TP_STATUS_SEND_REQUEST after the data is written.
pub(super) struct TxRing {
    base: NonNull<u8>,
    map_len: usize,
    frame_size: usize,
    frame_count: usize,
    /// Where the kernel wants the frame's length and its data, in a frame.
    len_offset: usize,
    data_offset: usize,
    /// The next frame to fill: the kernel sends them in the same order.
    head: usize,
}

// SAFETY: the mapping belongs to this `TxRing` alone, so moving it to another thread
// moves sole access with it.
unsafe impl Send for TxRing {}

impl TxRing {
    /// Maps the ring the kernel allocated with PACKET_TX_RING (`frame_count` frames of
    /// `frame_size` bytes filling the blocks exactly). `len_offset` must be 4-aligned and
    /// both offsets inside a frame, after the 4-byte status word at offset 0.
    pub(super) fn map(
        fd: &OwnedFd,
        frame_size: usize,
        frame_count: usize,
        len_offset: usize,
        data_offset: usize,
    ) -> io::Result<TxRing> {
        let map_len = frame_size
            .checked_mul(frame_count)
            .filter(|&len| len > 0)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if !frame_size.is_multiple_of(libc::TPACKET_ALIGNMENT)
            || !len_offset.is_multiple_of(4)
            || len_offset < 4
            || len_offset + 4 > data_offset
            || data_offset >= frame_size
        {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let base = map_ring(fd, map_len)?;
        Ok(TxRing { base, map_len, frame_size, frame_count, len_offset, data_offset, head: 0 })
    }

    /// Largest frame a slot holds.
    pub(super) fn capacity(&self) -> usize {
        self.frame_size - self.data_offset
    }

    fn status_word(&self, index: usize) -> &AtomicU32 {
        debug_assert!(index < self.frame_count);
        // SAFETY: `index < frame_count`, so the word (offset 0 of the frame) lies inside
        // the mapping; frames are multiples of 16 bytes from a page-aligned base, so it
        // is aligned for AtomicU32. The kernel accesses it concurrently, hence the atomic.
        unsafe { &*self.base.as_ptr().add(index * self.frame_size).cast::<AtomicU32>() }
    }

    /// Copies `frame` into the next frame of the ring and marks it for sending. Returns
    /// false, writing nothing, when that frame is still the kernel's (the ring is full)
    /// or `frame` is larger than a slot.
    pub(super) fn submit(&mut self, frame: &[u8]) -> bool {
        if frame.len() > self.capacity() {
            return false;
        }
        let status = self.status_word(self.head).load(Ordering::Acquire);
        if status != libc::TP_STATUS_AVAILABLE {
            return false;
        }
        let start = self.head * self.frame_size;
        // SAFETY: the frame lies inside the mapping (`head < frame_count`); we saw it
        // TP_STATUS_AVAILABLE with acquire ordering, so the kernel neither reads nor writes
        // it until the release store below. The length word is 4-aligned and inside the
        // frame; the data fits (checked against `capacity`) and does not overlap the
        // status or length words (`data_offset >= len_offset + 4`).
        unsafe {
            let frame_base = self.base.as_ptr().add(start);
            frame_base.add(self.len_offset).cast::<u32>().write(frame.len() as u32);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), frame_base.add(self.data_offset), frame.len());
        }
        self.status_word(self.head).store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.head = (self.head + 1) % self.frame_count;
        true
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `map`; nothing borrows it.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

/// Maps a socket's ring (RX or TX) into this process, shared with the kernel.
fn map_ring(fd: &OwnedFd, map_len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of the socket's ring (no address hint); the kernel
    // checks that `map_len` equals the ring size it allocated.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::from(io::ErrorKind::Other))
}
