//! The layouts of the XDP program's map keys and values, mirrored from `bpf/common.h`
//! (change both together), and the reasons of `picket_stats`.
//!
//! aya reads and writes map entries as plain bytes of these `#[repr(C)]` types; the
//! `Pod` impls below are this module's only `unsafe`.
#![allow(unsafe_code)]

/// Where a packet ended in the XDP program: the index of its `picket_stats` slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Reason {
    Seen = 0,
    Inspect,
    Blocklisted,
    CookieSent,
    CookieAckPassed,
    CookieAckBad,
    CookieError,
    PassedThrough,
    Bypassed,
    NotIp,
}

impl Reason {
    pub const ALL: [Reason; 10] = [
        Reason::Seen,
        Reason::Inspect,
        Reason::Blocklisted,
        Reason::CookieSent,
        Reason::CookieAckPassed,
        Reason::CookieAckBad,
        Reason::CookieError,
        Reason::PassedThrough,
        Reason::Bypassed,
        Reason::NotIp,
    ];

    /// The counter's name under `stats.picket.xdp` (and in Prometheus, `picket_xdp_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Seen => "seen",
            Reason::Inspect => "inspected",
            Reason::Blocklisted => "blocklisted",
            Reason::CookieSent => "cookie_sent",
            Reason::CookieAckPassed => "cookie_ack_passed",
            Reason::CookieAckBad => "cookie_ack_dropped",
            Reason::CookieError => "cookie_error",
            Reason::PassedThrough => "passed_through",
            Reason::Bypassed => "bypassed",
            Reason::NotIp => "not_ip",
        }
    }
}

/// `struct counter`: one `picket_stats` slot of one CPU.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct Counter {
    pub packets: u64,
    pub bytes: u64,
}

/// `struct xdp_config`: the program's settings (`picket_config[0]`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct XdpConfig {
    pub flags: u32,
    pub cookie_mss: u16,
    pub pad: u16,
}

pub const CFG_AFXDP: u32 = 1 << 0;
pub const CFG_PASSTHROUGH: u32 = 1 << 1;
pub const CFG_BYPASS_DROP: u32 = 1 << 2;
pub const CFG_INSPECT_ICMP: u32 = 1 << 3;
pub const CFG_INSPECT_OTHER: u32 = 1 << 4;
pub const CFG_INSPECT_TCP_CTRL: u32 = 1 << 5;

/// `struct block_val`: a blocklist entry.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct BlockVal {
    /// CLOCK_MONOTONIC nanoseconds (the program's `bpf_ktime_get_ns`) it stops applying; 0: never.
    pub expires_ns: u64,
    pub packets: u64,
    pub bytes: u64,
}

/// `struct protect_v4`: a destination protected by SYN cookies (port 0: every port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct ProtectV4 {
    /// Network byte order (the octets as on the wire).
    pub addr: [u8; 4],
    pub port: u16,
    pub pad: u16,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct ProtectV6 {
    pub addr: [u8; 16],
    pub port: u16,
    pub pad: u16,
}

/// `struct protect_val`: what the SYN-cookie stage did for one protected destination.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct ProtectVal {
    pub syns: u64,
    pub acks_passed: u64,
    pub acks_bad: u64,
    pub pad: u64,
}

/// `struct flow_v4`: one direction of a bypassed flow, as its packets appear on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FlowV4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub pad: [u8; 3],
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FlowV6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub pad: [u8; 3],
}

/// `struct bypass_val`: what went past picket in one direction of a bypassed flow.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct BypassVal {
    pub packets: u64,
    pub bytes: u64,
    pub last_ns: u64,
}

// SAFETY: each type is `#[repr(C)]`, `Copy`, made only of integers and integer arrays
// with explicit padding fields, so every bit pattern is a valid value and the bytes
// aya copies to and from the kernel are exactly the C struct of bpf/common.h.
unsafe impl aya::Pod for Counter {}
// SAFETY: as above.
unsafe impl aya::Pod for XdpConfig {}
// SAFETY: as above.
unsafe impl aya::Pod for BlockVal {}
// SAFETY: as above.
unsafe impl aya::Pod for ProtectV4 {}
// SAFETY: as above.
unsafe impl aya::Pod for ProtectV6 {}
// SAFETY: as above.
unsafe impl aya::Pod for ProtectVal {}
// SAFETY: as above.
unsafe impl aya::Pod for FlowV4 {}
// SAFETY: as above.
unsafe impl aya::Pod for FlowV6 {}
// SAFETY: as above.
unsafe impl aya::Pod for BypassVal {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The sizes of bpf/common.h's structs (a mismatch corrupts every map access).
    #[test]
    fn layouts_match_the_c_structs() {
        assert_eq!(size_of::<Counter>(), 16);
        assert_eq!(size_of::<XdpConfig>(), 8);
        assert_eq!(size_of::<BlockVal>(), 24);
        assert_eq!(size_of::<ProtectV4>(), 8);
        assert_eq!(size_of::<ProtectV6>(), 20);
        assert_eq!(size_of::<ProtectVal>(), 32);
        assert_eq!(size_of::<FlowV4>(), 16);
        assert_eq!(size_of::<FlowV6>(), 40);
        assert_eq!(size_of::<BypassVal>(), 24);
    }
}
