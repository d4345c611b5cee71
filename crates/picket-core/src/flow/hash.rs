//! Deterministic hashing: the hash index must not use `RandomState` (runs must be
//! reproducible) and the flow id must be identical across runs and worker counts.

use std::hash::{BuildHasherDefault, Hasher};

use super::FlowKey;

/// Multiply-rotate hasher in the style of rustc's FxHash: a few cycles per word, good
/// enough spread for a hash index keyed by addresses. Not DoS-resistant by itself; the
/// table's memcap bounds what an attacker can make it hold.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    /// A hasher started from a secret `seed` (see [`key_hash_seeded`] for why the seed).
    #[inline]
    pub fn with_seed(seed: u64) -> Self {
        FxHasher { hash: seed }
    }

    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the best-mixed bits at the top; hash tables pick buckets from
        // the bottom, so rotate them down.
        self.hash.rotate_left(26)
    }
}

pub type FxBuildHasher = BuildHasherDefault<FxHasher>;

/// Hash of a flow key for the table's index.
#[inline]
pub fn key_hash(key: &FlowKey) -> u64 {
    key_hash_seeded(key, 0)
}

/// [`key_hash`] started from a secret `seed`. FxHash is invertible word by word: without a
/// seed, whoever controls a whole 64-bit word of the key (any IPv6 source address) can
/// give any number of distinct keys one hash and make every lookup walk all of them
/// (hash flooding, quadratic in the flows). With an unknown seed he cannot predict the
/// state his words meet. The index is never iterated, so the seed changes no output.
#[inline]
pub fn key_hash_seeded(key: &FlowKey, seed: u64) -> u64 {
    use std::hash::Hash;
    let mut hasher = FxHasher::with_seed(seed);
    key.hash(&mut hasher);
    hasher.finish()
}

/// Set by [`fix_seeds`]: [`random_seed`] then gives a constant.
static FIXED_SEEDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A per-process random seed for [`key_hash_seeded`] (drawn from the standard library's
/// randomly keyed hasher; only bucket positions depend on it), or a constant after
/// [`fix_seeds`].
pub fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    if FIXED_SEEDS.load(std::sync::atomic::Ordering::Relaxed) {
        return 0x5eed_5eed_5eed_5eed;
    }
    std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
}

/// Suricata's `--no-random`: every seed drawn afterwards is the same constant, so hash
/// tables lay out the same way on every run (call before building any).
pub fn fix_seeds() {
    FIXED_SEEDS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// JSON numbers are doubles: keep flow ids within 53 bits so consumers read them exactly.
pub const FLOW_ID_MASK: u64 = (1 << 53) - 1;

/// The flow id: a fixed-key hash of the normalized key and the `pcap_cnt` of the flow's
/// first packet. It depends on nothing else, so the same capture yields the same ids
/// whatever the worker count, and two flows reusing one tuple get different ids.
/// Never 0 (eve consumers treat 0 as "no flow").
pub fn flow_id(key: &FlowKey, first_pcap_cnt: u64) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    let mut absorb = |word: u64| {
        h = mix64(h ^ word);
    };
    let t = &key.tuple;
    for addr in [&t.src, &t.dst] {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&addr[..8]);
        hi.copy_from_slice(&addr[8..]);
        absorb(u64::from_le_bytes(lo));
        absorb(u64::from_le_bytes(hi));
    }
    absorb(t.src_port as u64 | (t.dst_port as u64) << 16 | (t.proto as u64) << 32);
    absorb(key.vlan[0] as u64 | (key.vlan[1] as u64) << 16 | (key.vlan[2] as u64) << 32);
    absorb(first_pcap_cnt);
    match h & FLOW_ID_MASK {
        0 => 1,
        id => id,
    }
}

/// A strong 64-bit finalizer (xor-shift-multiply rounds): every input bit affects every
/// output bit, so masking to 53 bits keeps ids well spread.
#[inline]
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    x
}

#[cfg(test)]
mod tests {

    #[test]
    fn fixed_seeds_are_one_constant() {
        fix_seeds();
        assert_eq!(random_seed(), random_seed());
    }

    use super::*;
    use crate::flow::FiveTuple;

    fn key(port: u16) -> FlowKey {
        let tuple = FiveTuple { src: [1; 16], dst: [2; 16], src_port: port, dst_port: 80, proto: 6, is_v4: false };
        FlowKey::new(&tuple, [0, 0, 0]).0
    }

    #[test]
    fn flow_id_is_stable_masked_and_sensitive_to_inputs() {
        let a = flow_id(&key(1000), 1);
        assert_eq!(a, flow_id(&key(1000), 1));
        assert_ne!(a, flow_id(&key(1001), 1));
        assert_ne!(a, flow_id(&key(1000), 2));
        assert_ne!(a, 0);
        assert_eq!(a & !FLOW_ID_MASK, 0);
    }

    /// IPv6 flows whose keys all have one unseeded FxHash: the source's second word undoes
    /// whatever its first word did to the hasher state.
    fn colliding_packets(n: u64) -> Vec<crate::flow::FlowPacket> {
        const T: u64 = 0x0123_4567_89ab_cdef;
        (0..n)
            .map(|i| {
                let a = i + 1;
                let b = a.wrapping_mul(FX_SEED).rotate_left(5) ^ T;
                let mut src = [0u8; 16];
                src[..8].copy_from_slice(&a.to_ne_bytes());
                src[8..].copy_from_slice(&b.to_ne_bytes());
                let tuple = FiveTuple { src, dst: [0xff; 16], src_port: 1000, dst_port: 53, proto: 17, is_v4: false };
                crate::flow::FlowPacket {
                    tuple,
                    vlan: [0, 0, 0],
                    ts: crate::packet::Timestamp::from_parts(1_700_000_000, 0),
                    pcap_cnt: i + 1,
                    wire_len: 100,
                    payload_len: 10,
                    tcp: None,
                }
            })
            .collect()
    }

    #[test]
    fn the_seeded_index_hash_defeats_hash_flooding() {
        use crate::flow::{FlowConfig, FlowTable};
        let n = 20_000;
        let hostile = colliding_packets(n);
        let keys: Vec<FlowKey> = hostile.iter().map(|p| FlowKey::from_packet(p).0).collect();
        assert!(keys.iter().all(|k| key_hash_seeded(k, 0) == key_hash_seeded(&keys[0], 0)), "all collide unseeded");
        assert_ne!(key_hash_seeded(&keys[0], 1), key_hash_seeded(&keys[1], 1));
        // Benign: as many flows from distinct ports.
        let benign: Vec<_> = hostile
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut p = *p;
                p.tuple.src = [1; 16];
                p.tuple.src_port = i as u16;
                p.tuple.dst_port = (i >> 16) as u16 + 1;
                p
            })
            .collect();
        let run = |pkts: &[crate::flow::FlowPacket]| {
            let mut table = FlowTable::<()>::new(FlowConfig::default());
            let started = std::time::Instant::now();
            for p in pkts {
                table.process(p, &mut |_| {}).expect("room for the flow");
            }
            assert_eq!(table.len(), n as usize);
            started.elapsed()
        };
        let (base, worst) = (run(&benign), run(&hostile));
        // Unseeded, the hostile run compares ~n^2/2 keys (seconds); seeded it is as fast as
        // the benign one. Generous bound: 10x plus slack for a loaded machine.
        assert!(worst < base * 10 + std::time::Duration::from_millis(200), "{worst:?} vs benign {base:?}");
    }

    #[test]
    fn fx_hasher_distinguishes_words_and_tails() {
        let h = |bytes: &[u8]| {
            let mut s = FxHasher::default();
            s.write(bytes);
            s.finish()
        };
        assert_ne!(h(&[1, 2, 3]), h(&[1, 2, 4]));
        assert_ne!(h(&[0; 9]), h(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
    }
}
