//! Loading memory ahead of its use. A reader that holds the next packets already (an
//! in-memory capture, a worker's batch) asks the inspector where their flows' state lies
//! and starts loading it while the packets before them are inspected
//! ([`crate::pipeline`]'s `FlowsAhead`); at shutdown the inspector names the flows about
//! to end ([`picket_core::inspect::Inspector::finish_loading`]).

/// Bytes of a frame's start a reader decodes to find its flow (Ethernet, IP and transport
/// headers).
const HEADERS: usize = 64;

/// Starts loading the headers of `frame`, which a reader decodes soon.
pub fn headers(frame: &[u8]) {
    lines(frame.as_ptr(), HEADERS.min(frame.len()));
}

/// Starts loading the cache lines of the `len` bytes from `start` into the CPU's caches. A
/// hint: it changes no value a program sees, for any address.
#[allow(unsafe_code)]
pub fn lines(start: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 64;
        // Every line the bytes touch, from the one holding the first byte.
        let first = start.wrapping_sub(start as usize % LINE);
        let lines = (start as usize % LINE + len).div_ceil(LINE);
        let mut line = first;
        for _ in 0..lines {
            // SAFETY: a prefetch instruction never faults and never writes; whatever the
            // address, it at most loads a line into the cache. `wrapping_add` asserts nothing
            // about the pointer.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
            line = line.wrapping_add(LINE);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}
