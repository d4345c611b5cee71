//! Loading memory ahead of its use. A reader that holds the next packets already (an
//! in-memory capture) asks the inspector where their flows' state lies and starts loading
//! it while the packet before them is inspected ([`crate::pipeline`]'s single-thread loop).

/// Bytes of a frame's start a reader decodes to find its flow (Ethernet, IP and transport
/// headers).
pub const HEADERS: usize = 64;

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
