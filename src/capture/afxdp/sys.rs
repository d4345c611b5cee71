//! The system calls behind [`super::AfXdpSocket`]: every `unsafe` block of AF_XDP
//! capture lives in this file, each behind a safe function or method.
//!
//! An AF_XDP socket shares four pieces of memory with the kernel:
//! - the UMEM, an area of fixed-size frames the kernel copies (or, zero-copy, DMAs)
//!   packets into;
//! - the fill ring, where user space hands frames (their UMEM offsets) to the kernel;
//! - the RX ring, where the kernel hands back filled frames (offset, length);
//! - the completion ring, used only for transmission, which the kernel insists on
//!   having before it binds the socket (it stays empty here).
//!
//! Each ring is a single-producer single-consumer queue of `size` slots (a power of
//! two) with a producer and a consumer index that only grow (wrapping at 2^32). The
//! producer writes slots, then publishes them with a release store of its index; the
//! consumer reads the index with acquire ordering before reading the slots it covers,
//! and frees them with a release store of its own index. A frame therefore belongs to
//! exactly one side at a time: to the kernel from the fill ring's publish until it is
//! read from the RX ring, and to this process from then until it is put back on the
//! fill ring. [`Xsk::receive`] only hands out the bytes of frames it owns, and only for
//! the duration of the callback, so no borrowed frame outlives its hand-back.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A failed step of opening a socket: which system call, and the kernel's answer.
#[derive(Debug)]
pub(super) struct SysError {
    pub step: &'static str,
    pub source: io::Error,
}

fn step(step: &'static str) -> impl FnOnce(io::Error) -> SysError {
    move |source| SysError { step, source }
}

/// Index of interface `name` (0 when there is none).
pub(super) fn interface_index(name: &str) -> io::Result<u32> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `cname` is a valid NUL-terminated string that lives across the call; the
    // function only reads it.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(index)
}

/// A private anonymous or shared mapping, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Anonymous memory for a UMEM, populated so the first packets do not fault.
    fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        Self::checked(ptr, len)
    }

    /// One of the socket's rings, at the kernel-defined page offset `offset`.
    fn ring(fd: &OwnedFd, len: usize, offset: u64) -> io::Result<Mapping> {
        // SAFETY: maps `len` bytes of the socket's ring at the offset the kernel defines
        // for it; the kernel checks the length against the ring it allocated.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        Self::checked(ptr, len)
    }

    fn checked(ptr: *mut libc::c_void, len: usize) -> io::Result<Mapping> {
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned a null pointer"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and every pointer into the
        // mapping is held by the structure this mapping belongs to, which is being dropped.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// One mapped ring: its indexes, flags and `size` slots of `T`.
struct Ring<T> {
    _map: Mapping,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    slots: NonNull<T>,
    mask: u32,
    /// This side's own index (the producer's for the fill ring, the consumer's for RX).
    local: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: &OwnedFd, offsets: &libc::xdp_ring_offset, size: u32, page_offset: u64) -> io::Result<Ring<T>> {
        let len = offsets.desc as usize + size as usize * size_of::<T>();
        let map = Mapping::ring(fd, len, page_offset)?;
        for field in [offsets.producer, offsets.consumer, offsets.flags] {
            if field as usize + size_of::<u32>() > len || !field.is_multiple_of(4) {
                return Err(io::Error::other("ring offsets outside the mapping"));
            }
        }
        if !(offsets.desc as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(io::Error::other("misaligned ring descriptors"));
        }
        let at = |offset: u64| -> NonNull<u8> {
            // SAFETY: every offset was checked to lie inside the mapping above.
            unsafe { map.ptr.add(offset as usize) }
        };
        let (producer, consumer, flags, slots) = (
            at(offsets.producer).cast(),
            at(offsets.consumer).cast(),
            at(offsets.flags).cast(),
            at(offsets.desc).cast(),
        );
        Ok(Ring { _map: map, producer, consumer, flags, slots, mask: size - 1, local: 0 })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the live mapping, 4-byte aligned (checked in `map`); the
        // kernel accesses it atomically too.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    fn flags(&self) -> u32 {
        // SAFETY: as for `producer`.
        unsafe { self.flags.as_ref() }.load(Ordering::Relaxed)
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: `index & mask` is below the ring size, and the mapping holds `size`
        // slots after `desc`.
        unsafe { self.slots.as_ptr().add((index & self.mask) as usize) }
    }
}

/// Ring sizes and frame layout of one socket.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    /// Frames in the UMEM (a power of two); all start on the fill ring.
    pub frames: u32,
    /// Bytes per frame: 2048 or 4096 (aligned chunks).
    pub frame_size: u32,
}

/// What a failed bind tells the caller to try next.
pub(super) enum BindOutcome {
    Bound(Xsk),
    /// The driver refused this mode (no zero-copy support): try the next one.
    Unsupported(SysError),
    Failed(SysError),
}

/// The kernel's XDP_STATISTICS of a socket.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty: u64,
}

/// An AF_XDP socket bound to one queue, with its UMEM and rings.
pub(super) struct Xsk {
    // Drop order: the socket first (the kernel detaches it from the queue and the
    // XSKMAP), then the rings, then the UMEM the kernel no longer writes to.
    fd: OwnedFd,
    fill: Ring<u64>,
    _completion: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    umem: Mapping,
    frame_size: u32,
    /// Whether the kernel wants a wake-up call when the fill ring is replenished.
    need_wakeup: bool,
    pub zero_copy: bool,
    /// RX descriptors whose offset or length lay outside the UMEM (never expected).
    pub bad_descriptors: u64,
}

// SAFETY: the raw pointers all point into mappings owned by this structure; it is only
// ever used by one thread at a time (moved to its worker, never shared), and the kernel
// side is synchronised through the rings' atomics.
unsafe impl Send for Xsk {}

fn set_option<T: Copy>(fd: &OwnedFd, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live, initialised `T` of the given size; the kernel
    // only reads it. The types are the kernel's own option structures as `libc`
    // declares them, or a u32.
    let rc = unsafe {
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_XDP, name, (value as *const T).cast(), size_of::<T>() as u32)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads an option whose value is a structure of integers; the kernel must fill it all.
fn get_option<T: Copy>(fd: &OwnedFd, name: i32) -> io::Result<T> {
    let mut value = MaybeUninit::<T>::zeroed();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the buffer holds `len` writable bytes; the kernel writes at most that many
    // and says how many.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, name, value.as_mut_ptr().cast(), &mut len) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != size_of::<T>() {
        return Err(io::Error::other("this kernel's AF_XDP structures are older than picket's (Linux 5.4+ needed)"));
    }
    // SAFETY: zero-initialised and filled by the kernel; `T` is a structure of integers,
    // valid for any bit pattern.
    Ok(unsafe { value.assume_init() })
}

impl Xsk {
    /// Creates a socket with its UMEM and rings and binds it to `(ifindex, queue)` with
    /// `bind_flags` (XDP_ZEROCOPY or XDP_COPY; XDP_USE_NEED_WAKEUP is always asked).
    pub(super) fn open(ifindex: u32, queue: u32, geometry: Geometry, bind_flags: u16) -> BindOutcome {
        match Self::setup(geometry) {
            Err(e) => BindOutcome::Failed(e),
            Ok(xsk) => xsk.bind(ifindex, queue, bind_flags),
        }
    }

    fn setup(g: Geometry) -> Result<Xsk, SysError> {
        // SAFETY: plain system call with constant arguments.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(SysError { step: "socket(AF_XDP)", source: io::Error::last_os_error() });
        }
        // SAFETY: `raw` was just returned by socket() and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = g.frames as usize * g.frame_size as usize;
        let umem = Mapping::anonymous(umem_len).map_err(step("mmap of the UMEM"))?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr.as_ptr() as u64,
            len: umem_len as u64,
            chunk_size: g.frame_size,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set_option(&fd, libc::XDP_UMEM_REG, &reg).map_err(step("XDP_UMEM_REG"))?;
        set_option(&fd, libc::XDP_UMEM_FILL_RING, &g.frames).map_err(step("XDP_UMEM_FILL_RING"))?;
        // The smallest completion ring the kernel takes: nothing is ever sent.
        set_option(&fd, libc::XDP_UMEM_COMPLETION_RING, &COMPLETION_SLOTS).map_err(step("XDP_UMEM_COMPLETION_RING"))?;
        set_option(&fd, libc::XDP_RX_RING, &g.frames).map_err(step("XDP_RX_RING"))?;
        let offsets: libc::xdp_mmap_offsets =
            get_option(&fd, libc::XDP_MMAP_OFFSETS).map_err(step("XDP_MMAP_OFFSETS"))?;
        let mut fill = Ring::<u64>::map(&fd, &offsets.fr, g.frames, libc::XDP_UMEM_PGOFF_FILL_RING)
            .map_err(step("mmap of the fill ring"))?;
        let completion = Ring::<u64>::map(&fd, &offsets.cr, COMPLETION_SLOTS, libc::XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(step("mmap of the completion ring"))?;
        let rx = Ring::<libc::xdp_desc>::map(&fd, &offsets.rx, g.frames, libc::XDP_PGOFF_RX_RING as u64)
            .map_err(step("mmap of the RX ring"))?;
        // Every frame starts on the fill ring: the ring has a slot per frame, so it can
        // never overflow when frames come back.
        for frame in 0..g.frames {
            // SAFETY: slot index below the ring size (see `slot`); nobody else writes the
            // fill ring's slots before the producer index is published.
            unsafe { fill.slot(frame).write(frame as u64 * g.frame_size as u64) };
        }
        fill.local = g.frames;
        fill.producer().store(g.frames, Ordering::Release);
        Ok(Xsk {
            fd,
            fill,
            _completion: completion,
            rx,
            umem,
            frame_size: g.frame_size,
            need_wakeup: false,
            zero_copy: false,
            bad_descriptors: 0,
        })
    }

    fn bind(mut self, ifindex: u32, queue: u32, bind_flags: u16) -> BindOutcome {
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: bind_flags | libc::XDP_USE_NEED_WAKEUP,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a valid sockaddr_xdp and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_xdp).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let source = io::Error::last_os_error();
            let unsupported = matches!(source.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EPROTONOSUPPORT));
            let e = SysError { step: "bind", source };
            return if unsupported && bind_flags & libc::XDP_ZEROCOPY != 0 {
                BindOutcome::Unsupported(e)
            } else {
                BindOutcome::Failed(e)
            };
        }
        self.need_wakeup = true;
        self.zero_copy = match get_option::<libc::xdp_options>(&self.fd, libc::XDP_OPTIONS) {
            Ok(o) => o.flags & libc::XDP_OPTIONS_ZEROCOPY != 0,
            Err(_) => bind_flags & libc::XDP_ZEROCOPY != 0,
        };
        BindOutcome::Bound(self)
    }

    pub(super) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Packets ready on the RX ring, without a system call.
    pub(super) fn ready(&self) -> u32 {
        self.rx.producer().load(Ordering::Acquire).wrapping_sub(self.rx.local)
    }

    /// Visits up to `max` received packets, calling `visit` with each frame's bytes,
    /// then gives the frames back to the kernel. Returns the number visited.
    pub(super) fn receive(&mut self, max: u32, visit: &mut dyn FnMut(&[u8])) -> u32 {
        let n = self.ready().min(max);
        if n == 0 {
            return 0;
        }
        let chunk_mask = !(self.frame_size as u64 - 1);
        let mut returned = 0u32;
        for i in 0..n {
            // SAFETY: the slot lies below the producer index just read with acquire
            // ordering, so the kernel finished writing it; `xdp_desc` is plain integers.
            let desc = unsafe { self.rx.slot(self.rx.local.wrapping_add(i)).read() };
            let (start, len) = (desc.addr as usize, desc.len as usize);
            let in_umem = start.checked_add(len).is_some_and(|end| end <= self.umem.len);
            if in_umem {
                // SAFETY: the range lies inside the UMEM (checked above), and the frame
                // belongs to this process from its RX read until it is put back on the
                // fill ring below, after `visit` returned: the kernel does not write it
                // meanwhile. The slice does not outlive this iteration.
                let data = unsafe { std::slice::from_raw_parts(self.umem.ptr.as_ptr().add(start), len) };
                visit(data);
            } else {
                self.bad_descriptors += 1;
            }
            let frame = desc.addr & chunk_mask;
            if (frame as usize) < self.umem.len {
                // SAFETY: slot below the ring size; the fill ring has a slot for every
                // frame, and this frame was not on it, so the slot is free.
                unsafe { self.fill.slot(self.fill.local.wrapping_add(returned)).write(frame) };
                returned += 1;
            }
        }
        self.rx.local = self.rx.local.wrapping_add(n);
        self.rx.consumer().store(self.rx.local, Ordering::Release);
        self.fill.local = self.fill.local.wrapping_add(returned);
        self.fill.producer().store(self.fill.local, Ordering::Release);
        if self.need_wakeup && self.fill.flags() & libc::XDP_RING_NEED_WAKEUP != 0 {
            self.kick();
        }
        n
    }

    /// Tells the driver that frames are back on the fill ring (zero-copy drivers sleep
    /// when it ran empty and ask for this).
    fn kick(&self) {
        // SAFETY: a zero-length, non-blocking receive with a null buffer, which the
        // kernel accepts as a wake-up; no memory is written.
        unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
        }
    }

    /// Sleeps until packets are ready or `timeout` passes; `Ok(false)` on timeout (a
    /// signal ends the wait early, like a timeout). poll() also wakes the driver.
    pub(super) fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let millis = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, millis) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(err);
        }
        if pfd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(io::Error::other("the AF_XDP socket reported an error (interface down or removed?)"));
        }
        Ok(rc > 0)
    }

    /// The kernel's XDP_STATISTICS.
    pub(super) fn statistics(&self) -> io::Result<XskStats> {
        let s: libc::xdp_statistics = get_option(&self.fd, libc::XDP_STATISTICS)?;
        Ok(XskStats {
            rx_dropped: s.rx_dropped,
            rx_invalid_descs: s.rx_invalid_descs,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
        })
    }
}

/// Completion ring slots: a power of two, never used (receive only).
const COMPLETION_SLOTS: u32 = 64;
