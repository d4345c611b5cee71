//! A small deterministic generator for tests that build many inputs from a seed (xorshift64:
//! not random enough for anything but varied test cases, and the same on every run).

/// A generator of `u64`s from `seed` (which must not be 0).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
