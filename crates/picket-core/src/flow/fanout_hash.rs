//! The bucket of a packet under adaptive fanout: the Rust twin of picket's eBPF fanout
//! program (`bpf/fanout.c`), which the kernel runs to pick the worker of every captured
//! packet (`--fanout adaptive`). A live worker computes the same bucket from the frame it
//! received, to measure what each bucket costs and to know which flows leave with a
//! bucket that moves to another worker.
//!
//! The two must agree bit for bit; a test runs the real program on generated packets
//! (`BPF_PROG_TEST_RUN`, src/capture/afpacket/adaptive.rs) and compares. Change both
//! together.
//!
//! The hash is symmetric (both directions of a flow share a bucket): each endpoint
//! (address words, then its port) is mixed on its own and the two are added. Ports count
//! for TCP, UDP and SCTP and not for fragments (IPv4 MF or offset, an IPv6 fragment
//! header), so the fragments of a datagram share a bucket. Words are read in host byte
//! order, as the program's loads do: buckets are the same on every host of one byte order.
//! Packets that are neither IPv4 nor IPv6 are in bucket 0.

/// Buckets of the indirection table (`BUCKETS` in bpf/fanout.c): a power of two.
pub const FANOUT_BUCKETS: usize = 256;

const SEED: u32 = 0x2545_F491;
const MAX_VLAN_TAGS: usize = 4;
const MAX_V6_EXT_HEADERS: usize = 4;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86DD;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88A8;

fn mix(h: u32, w: u32) -> u32 {
    let h = (h ^ w).wrapping_mul(0x9E37_79B1);
    h ^ (h >> 16)
}

fn avalanche(h: u32) -> u32 {
    let h = h ^ (h >> 15);
    let h = h.wrapping_mul(0x2C1B_3C6D);
    h ^ (h >> 12)
}

fn port_proto(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 132)
}

fn word(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(data.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// The bucket of an Ethernet frame as captured: VLAN tags may be in the frame (802.1Q or
/// 802.1ad, any number up to four) or, as TPACKET reports the outer one, already taken
/// out (pass the frame without it; the bucket does not depend on tags).
pub fn fanout_bucket(frame: &[u8]) -> u16 {
    match frame.get(12..14) {
        Some(t) => bucket_at_network(u16::from_be_bytes([t[0], t[1]]), frame.get(14..).unwrap_or(&[])),
        None => 0,
    }
}

/// The bucket of a packet whose network data (after the Ethernet header) is `data` and
/// whose EtherType is `ethertype`: what the eBPF program sees (`skb->protocol`, data at
/// the network header).
pub fn bucket_at_network(ethertype: u16, data: &[u8]) -> u16 {
    (hash_at_network(ethertype, data) & (FANOUT_BUCKETS as u32 - 1)) as u16
}

/// The hash behind [`bucket_at_network`]: 0 where the program returns bucket 0 without
/// hashing (not IP, or cut short before the end of the addresses).
fn hash_at_network(ethertype: u16, data: &[u8]) -> u32 {
    hash_fields(ethertype, data).map(finish).unwrap_or(0)
}

/// What the hash is taken of.
struct Fields {
    words: usize,
    src: [u32; 4],
    dst: [u32; 4],
    ports: [u16; 2],
    proto: u8,
}

fn finish(f: Fields) -> u32 {
    let (mut es, mut ed) = (SEED, SEED);
    for i in 0..f.words {
        es = mix(es, f.src[i]);
        ed = mix(ed, f.dst[i]);
    }
    es = mix(es, f.ports[0] as u32);
    ed = mix(ed, f.ports[1] as u32);
    avalanche(mix(es.wrapping_add(ed), f.proto as u32))
}

fn hash_fields(mut ethertype: u16, data: &[u8]) -> Option<Fields> {
    let mut off = 0usize;
    for _ in 0..MAX_VLAN_TAGS {
        if ethertype != ETH_P_8021Q && ethertype != ETH_P_8021AD {
            break;
        }
        let t = data.get(off + 2..off + 4)?;
        ethertype = u16::from_be_bytes([t[0], t[1]]);
        off += 4;
    }
    let mut f = Fields { words: 0, src: [0; 4], dst: [0; 4], ports: [0; 2], proto: 0 };
    let fragment;
    match ethertype {
        ETH_P_IP => {
            let vihl = *data.get(off)?;
            if vihl >> 4 != 4 || vihl & 0xf < 5 {
                return None;
            }
            let frag = data.get(off + 6..off + 8)?;
            f.proto = *data.get(off + 9)?;
            f.src[0] = word(data, off + 12)?;
            f.dst[0] = word(data, off + 16)?;
            fragment = u16::from_be_bytes([frag[0], frag[1]]) & 0x3fff != 0;
            off += (vihl & 0xf) as usize * 4;
            f.words = 1;
        }
        ETH_P_IPV6 => {
            if *data.get(off)? >> 4 != 6 {
                return None;
            }
            f.proto = *data.get(off + 6)?;
            for i in 0..4 {
                f.src[i] = word(data, off + 8 + 4 * i)?;
                f.dst[i] = word(data, off + 24 + 4 * i)?;
            }
            off += 40;
            let mut frag = false;
            for _ in 0..MAX_V6_EXT_HEADERS {
                let Some(ext) = data.get(off..off + 2) else { break };
                if f.proto == 44 {
                    f.proto = ext[0];
                    frag = true;
                    break;
                }
                if !matches!(f.proto, 0 | 43 | 60) {
                    break;
                }
                f.proto = ext[0];
                off += (ext[1] as usize + 1) * 8;
            }
            fragment = frag;
            f.words = 4;
        }
        _ => return None,
    }
    if !fragment && port_proto(f.proto) {
        if let Some(p) = data.get(off..off + 4) {
            f.ports = [u16::from_ne_bytes([p[0], p[1]]), u16::from_ne_bytes([p[2], p[3]])];
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16, frag: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[6..8].copy_from_slice(&frag.to_be_bytes());
        ip[9] = proto;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&[0u8; 16]);
        f
    }

    #[test]
    fn both_directions_share_a_bucket() {
        for i in 0..200u16 {
            let a = [10, 0, (i >> 8) as u8, i as u8];
            let b = [192, 168, 1, (i % 7) as u8];
            let there = v4(a, b, 6, 1000 + i, 80, 0);
            let back = v4(b, a, 6, 80, 1000 + i, 0);
            assert_eq!(fanout_bucket(&there), fanout_bucket(&back));
        }
    }

    #[test]
    fn ports_spread_flows_between_two_hosts() {
        let buckets: std::collections::HashSet<u16> =
            (0..2000u16).map(|p| fanout_bucket(&v4([10, 0, 0, 1], [10, 0, 0, 2], 17, 1024 + p, 53, 0))).collect();
        assert!(buckets.len() > 200, "{} buckets used", buckets.len());
    }

    #[test]
    fn fragments_ignore_ports_and_vlan_tags_do_not_count() {
        let first = v4([1, 2, 3, 4], [5, 6, 7, 8], 17, 1111, 2222, 0x2000);
        let later = v4([1, 2, 3, 4], [5, 6, 7, 8], 17, 9, 9, 0x0010);
        assert_eq!(fanout_bucket(&first), fanout_bucket(&later));
        let plain = v4([1, 2, 3, 4], [5, 6, 7, 8], 6, 1111, 2222, 0);
        let mut tagged = plain[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x88, 0xa8, 0x00, 0x07]);
        tagged.extend_from_slice(&plain[12..]);
        assert_eq!(fanout_bucket(&plain), fanout_bucket(&tagged));
    }

    #[test]
    fn short_and_foreign_frames_are_bucket_zero() {
        assert_eq!(fanout_bucket(&[]), 0);
        assert_eq!(fanout_bucket(&[0u8; 13]), 0);
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(fanout_bucket(&arp), 0);
        let full = v4([1, 2, 3, 4], [5, 6, 7, 8], 6, 1, 2, 0);
        for cut in 0..full.len() {
            let _ = fanout_bucket(&full[..cut]);
        }
    }
}
