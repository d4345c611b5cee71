//! Community ID v1 (<https://github.com/corelight/community-id-spec>), the flow hash
//! eve records carry as `community_id` with eve-log `community-id: yes`, so that records
//! of the same flow from different tools can be joined.
//!
//! The hash covers the seed, both addresses, the IP protocol and, for TCP, UDP and SCTP,
//! both ports, with the endpoints ordered so that both directions give the same value.

use crate::output::json::base64;
use picket_core::decode::FiveTuple;
use sha1::{Digest, Sha1};

/// `1:` and the base64 of the SHA-1 of `t` with `seed` (eve-log `community-id-seed`).
pub fn community_id(t: &FiveTuple, seed: u16) -> String {
    let len = if t.is_v4 { 4 } else { 16 };
    let addr = |a: &[u8; 16]| -> Vec<u8> { a[16 - len..].to_vec() };
    let (mut a, mut b) = ((addr(&t.src), t.src_port), (addr(&t.dst), t.dst_port));
    // The smaller endpoint (address, then port) goes first.
    if (&a.0, a.1) > (&b.0, b.1) {
        std::mem::swap(&mut a, &mut b);
    }
    let mut h = Sha1::new();
    h.update(seed.to_be_bytes());
    h.update(&a.0);
    h.update(&b.0);
    h.update([t.proto, 0]);
    if super::has_ports(t.proto) {
        h.update(a.1.to_be_bytes());
        h.update(b.1.to_be_bytes());
    }
    format!("1:{}", base64(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, proto: u8) -> FiveTuple {
        let map = |a: [u8; 4]| {
            let mut m = [0u8; 16];
            m[10] = 0xff;
            m[11] = 0xff;
            m[12..].copy_from_slice(&a);
            m
        };
        FiveTuple { src: map(src), dst: map(dst), src_port: sport, dst_port: dport, proto, is_v4: true }
    }

    /// The spec's reference values (community-id-spec baseline, seed 0).
    #[test]
    fn matches_the_specification_baseline() {
        let tcp = v4([128, 232, 110, 120], 34855, [66, 35, 250, 204], 80, 6);
        assert_eq!(community_id(&tcp, 0), "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
        let udp = v4([192, 168, 1, 52], 54585, [8, 8, 8, 8], 53, 17);
        assert_eq!(community_id(&udp, 0), "1:d/FP5EW3wiY1vCndhwleRRKHowQ=");
    }

    /// Both directions of a flow hash the same; the seed changes the hash.
    #[test]
    fn direction_free_and_seeded() {
        let a = v4([10, 0, 0, 1], 40000, [10, 0, 0, 2], 80, 6);
        let b = v4([10, 0, 0, 2], 80, [10, 0, 0, 1], 40000, 6);
        assert_eq!(community_id(&a, 0), community_id(&b, 0));
        assert_ne!(community_id(&a, 0), community_id(&a, 1));
    }
}
