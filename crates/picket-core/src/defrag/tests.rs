use super::*;
use crate::decode::{decode, DecodeOptions, L4};
use etherparse::{Ipv4Header, PacketBuilder};
use proptest::prelude::*;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];
const V6_A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn secs(s: u64) -> Timestamp {
    Timestamp::from_parts(s, 0)
}

/// A whole IPv4 packet (no link layer) and its header length.
fn ipv4_datagram(id: u16, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut header =
        Ipv4Header::new(payload.len() as u16, 64, etherparse::IpNumber(proto), [10, 0, 0, 1], [10, 0, 0, 2]).unwrap();
    header.identification = id;
    header.dont_fragment = false; // the rebuilt header clears the whole field
    header.header_checksum = header.calc_header_checksum();
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// One fragment of `datagram` (a whole IPv4 packet with a 20-byte header) holding its
/// payload bytes `[start, end)`, with MF as given.
fn ipv4_fragment(datagram: &[u8], start: usize, end: usize, more: bool) -> Vec<u8> {
    ipv4_fragment_with(datagram, start, &datagram[20 + start..20 + end], more)
}

fn ipv4_fragment_with(datagram: &[u8], start: usize, data: &[u8], more: bool) -> Vec<u8> {
    let mut out = datagram[..20].to_vec();
    out.extend_from_slice(data);
    out[2..4].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
    let field = (start / 8) as u16 | if more { 0x2000 } else { 0 };
    out[6..8].copy_from_slice(&field.to_be_bytes());
    out[10] = 0;
    out[11] = 0;
    let sum = checksum::compute(checksum::accumulate(0, &out[..20]));
    out[10..12].copy_from_slice(&sum.to_be_bytes());
    out
}

/// Ethernet with one VLAN tag around an IPv4 packet.
fn eth_vlan(vlan: u16, ip: &[u8]) -> Vec<u8> {
    let mut out = MAC_B.to_vec();
    out.extend_from_slice(&MAC_A);
    out.extend_from_slice(&[0x81, 0x00]);
    out.extend_from_slice(&vlan.to_be_bytes());
    out.extend_from_slice(&[0x08, 0x00]);
    out.extend_from_slice(ip);
    out
}

fn udp_datagram(payload_len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..payload_len).map(|i| (i * 7 + 3) as u8).collect();
    let mut out = Vec::new();
    PacketBuilder::ipv4([192, 168, 1, 1], [192, 168, 1, 2], 64).udp(5000, 6000).write(&mut out, &payload).unwrap();
    out[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    out[6] = 0; // etherparse sets DF; the rebuilt header clears the whole field
    out[10] = 0;
    out[11] = 0;
    let sum = checksum::compute(checksum::accumulate(0, &out[..20]));
    out[10..12].copy_from_slice(&sum.to_be_bytes());
    out
}

fn defrag(policy: DefragPolicy) -> Defragmenter {
    Defragmenter::new(DefragConfig { policy, ..DefragConfig::default() })
}

fn counter(d: &Defragmenter, name: &str) -> u64 {
    d.counters().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap()
}

#[test]
fn in_order_ipv4_behind_a_vlan_rebuilds_the_original_frame() {
    let datagram = udp_datagram(100); // 8 UDP + 100 bytes
    let original = eth_vlan(6, &datagram);
    let mut d = defrag(DefragPolicy::Bsd);
    let mut out = Vec::new();
    let pieces = [(0, 48, true), (48, 96, true), (96, 108, false)];
    for (i, (start, end, more)) in pieces.into_iter().enumerate() {
        let frame = eth_vlan(6, &ipv4_fragment(&datagram, start, end, more));
        assert!(is_fragment(LinkType::Ethernet, &frame));
        let outcome = d.offer(LinkType::Ethernet, &frame, secs(1), &mut out);
        assert_eq!(outcome, if i == 2 { DefragOutcome::Reassembled } else { DefragOutcome::Held });
    }
    assert_eq!(out, original);
    assert!(d.last_events().is_empty());
    let decoded = decode(LinkType::Ethernet, &out, &DecodeOptions::default());
    assert!(!decoded.bad_checksum && !decoded.fragment);
    assert_eq!(decoded.vlan[0], 6);
    assert!(matches!(decoded.l4, L4::Udp(u) if u.src_port() == 5000));
    assert_eq!((counter(&d, "defrag.ipv4.fragments"), counter(&d, "defrag.ipv4.reassembled")), (3, 1));
    assert_eq!((d.trackers(), d.memuse()), (0, 0));
    // Not fragments: left alone.
    assert!(!is_fragment(LinkType::Ethernet, &original));
    assert_eq!(d.offer(LinkType::Ethernet, &original, secs(1), &mut out), DefragOutcome::NotFragment);
}

#[test]
fn out_of_order_and_duplicates() {
    let datagram = udp_datagram(200);
    let pieces = [(0, 64, true), (64, 128, true), (128, 192, true), (192, 208, false)];
    let order = [3, 1, 1, 0, 2];
    let mut d = defrag(DefragPolicy::Bsd);
    let mut out = Vec::new();
    let mut outcomes = Vec::new();
    for i in order {
        let (s, e, m) = pieces[i];
        outcomes.push(d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, s, e, m), secs(5), &mut out));
        if i == 1 && outcomes.len() == 3 {
            assert!(d.last_events().contains(DecodeEvent::Ipv4FragOverlap), "a duplicate overlaps");
        }
    }
    assert_eq!(outcomes.last(), Some(&DefragOutcome::Reassembled));
    assert_eq!(out, datagram);
    // The datagram's events come with it.
    assert!(d.last_events().contains(DecodeEvent::Ipv4FragOverlap));
    assert_eq!(counter(&d, "decoder.event.ipv4.frag_overlap"), 1);
}

/// Five overlap shapes, one per 8-byte region group, that together tell every policy
/// apart. Earlier fragments carry 'x', later ones 'y'. Per unit of 8 bytes:
/// R1: old [1,2), new [0,2)   new starts before, ends with it
/// R2: old [3,5), new [2,4)   new starts before, ends inside
/// R3: old [5,6), new [5,7)   same start, new ends after
/// R4: old [8,9), new [7,10)  new starts before and ends after
/// R5: old [10,12), new [11,12) new starts after
#[test]
fn overlap_policies_differ_as_documented() {
    let old = [(1, 2), (3, 5), (5, 6), (8, 9), (10, 12)];
    let new = [(0, 2), (2, 4), (5, 7), (7, 10), (11, 12)];
    let expected = [
        (DefragPolicy::First, "yxyxxxyyxyxx"),
        (DefragPolicy::Last, "yyyyxyyyyyxy"),
        (DefragPolicy::Bsd, "yyyyxxyyyyxx"),
        (DefragPolicy::Linux, "yyyyxyyyyyxx"),
        (DefragPolicy::Windows, "yxyxxxyyyyxx"),
        (DefragPolicy::Solaris, "yyyxxxyyyyxx"),
    ];
    let datagram = ipv4_datagram(99, 253, &[0; 96]);
    for (policy, units) in expected {
        let mut d = defrag(policy);
        let mut out = Vec::new();
        let mut last = DefragOutcome::Held;
        for (fill, list) in [(b'x', old), (b'y', new)] {
            for (s, e) in list {
                let data = vec![fill; (e - s) * 8];
                // Only the last new fragment ends the datagram, so every shape is seen.
                let frag = ipv4_fragment_with(&datagram, s * 8, &data, !(fill == b'y' && e == 12));
                last = d.offer(LinkType::RawIpv4, &frag, secs(1), &mut out);
            }
        }
        assert_eq!(last, DefragOutcome::Reassembled, "{policy:?}");
        let got: String = out[20..].chunks(8).map(|c| c[0] as char).collect();
        assert_eq!(got, units, "{policy:?}");
        assert!(out[20..].chunks(8).all(|c| c.iter().all(|b| *b == c[0])), "{policy:?}: whole units");
        assert!(d.last_events().contains(DecodeEvent::Ipv4FragOverlap));
        assert!(checksum::ipv4_header_ok(&out[..20]));
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 116);
    }
    assert_eq!(DefragPolicy::from_name("BSD"), Some(DefragPolicy::Bsd));
    assert_eq!(DefragPolicy::from_name("bsd-right"), None);
}

/// An IPv6 datagram with a hop-by-hop header, as one packet and as fragments.
fn ipv6_with_hop_by_hop(udp_payload: usize) -> (Vec<u8>, Vec<u8>) {
    let payload: Vec<u8> = (0..udp_payload).map(|i| i as u8).collect();
    let mut plain = Vec::new();
    PacketBuilder::ipv6(V6_A, V6_B, 64).udp(1000, 2000).write(&mut plain, &payload).unwrap();
    let udp = plain[40..].to_vec();
    let hop_by_hop = [17u8, 0, 1, 4, 0, 0, 0, 0]; // next UDP, PadN
    let mut whole = plain[..40].to_vec();
    whole[6] = 0;
    whole[4..6].copy_from_slice(&((8 + udp.len()) as u16).to_be_bytes());
    whole.extend_from_slice(&hop_by_hop);
    whole.extend_from_slice(&udp);
    (whole, udp)
}

fn ipv6_fragment(whole: &[u8], udp: &[u8], start: usize, end: usize, more: bool, id: u32) -> Vec<u8> {
    let mut out = whole[..48].to_vec();
    out[40] = 44; // hop-by-hop now names the Fragment header
    let field = (start as u16) | more as u16;
    out.extend_from_slice(&[17, 0]);
    out.extend_from_slice(&field.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&udp[start..end]);
    let plen = out.len() - 40;
    out[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
    out
}

#[test]
fn ipv6_keeps_the_unfragmentable_part_and_drops_the_fragment_header() {
    let (whole, udp) = ipv6_with_hop_by_hop(300); // 308 bytes of UDP
    let mut d = defrag(DefragPolicy::Bsd);
    let mut out = Vec::new();
    let pieces = [(200, 308, false), (0, 104, true), (104, 200, true)];
    let mut last = DefragOutcome::Held;
    for (s, e, m) in pieces {
        let frag = ipv6_fragment(&whole, &udp, s, e, m, 0xdead_beef);
        assert!(is_fragment(LinkType::RawIpv6, &frag));
        last = d.offer(LinkType::RawIpv6, &frag, secs(1), &mut out);
    }
    assert_eq!(last, DefragOutcome::Reassembled);
    assert_eq!(out, whole);
    let decoded = decode(LinkType::RawIpv6, &out, &DecodeOptions::default());
    assert!(!decoded.bad_checksum && !decoded.fragment);
    assert!(matches!(decoded.l4, L4::Udp(u) if u.dst_port() == 2000));
    assert_eq!(counter(&d, "defrag.ipv6.reassembled"), 1);

    // M set with a length that is not a multiple of 8.
    let bad = ipv6_fragment(&whole, &udp, 0, 100, true, 7);
    assert_eq!(d.offer(LinkType::RawIpv6, &bad, secs(1), &mut out), DefragOutcome::Dropped(DropReason::InvalidLength));
    assert!(d.last_events().contains(DecodeEvent::Ipv6FragInvalidLength));
    // Atomic fragments are whole datagrams.
    let atomic = ipv6_fragment(&whole, &udp, 0, 308, false, 8);
    assert!(!is_fragment(LinkType::RawIpv6, &atomic));
}

#[test]
fn timeout_is_packet_time_from_the_first_fragment() {
    let datagram = udp_datagram(100);
    let mut d = defrag(DefragPolicy::Bsd);
    let mut out = Vec::new();
    assert_eq!(
        d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 0, 64, true), secs(100), &mut out),
        DefragOutcome::Held
    );
    d.expire(secs(159));
    assert_eq!(d.trackers(), 1);
    d.expire(secs(161));
    assert_eq!((d.trackers(), d.memuse(), counter(&d, "defrag.ipv4.timeouts")), (0, 0, 1));
    // The rest alone cannot complete the datagram any more.
    let outcome = d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 64, 108, false), secs(161), &mut out);
    assert_eq!(outcome, DefragOutcome::Held);

    // Without an explicit expire, a late fragment finds its tracker stale.
    let mut d = defrag(DefragPolicy::Bsd);
    d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 0, 64, true), secs(0), &mut out);
    let late = d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 64, 108, false), secs(61), &mut out);
    assert_eq!(late, DefragOutcome::Held);
    assert_eq!(counter(&d, "defrag.ipv4.timeouts"), 1);
}

#[test]
fn memory_and_tracker_limits_hold() {
    let cfg = DefragConfig { memcap: 20_000, max_trackers: 1000, ..DefragConfig::default() };
    let mut d = Defragmenter::new(cfg);
    let mut out = Vec::new();
    let mut memcap_drops = 0;
    for id in 0..2000u16 {
        let datagram = ipv4_datagram(id, 17, &[1; 400]);
        let outcome = d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 0, 200, true), secs(1), &mut out);
        assert!(d.memuse() <= cfg.memcap);
        if outcome == DefragOutcome::Dropped(DropReason::Memcap) {
            memcap_drops += 1;
            assert!(d.last_events().contains(DecodeEvent::Ipv4FragIgnored));
        }
    }
    assert!(memcap_drops > 1900);
    assert_eq!(counter(&d, "defrag.memcap_reached"), memcap_drops);
    assert_eq!(counter(&d, "defrag.memuse"), d.memuse());

    let mut d = Defragmenter::new(DefragConfig { max_trackers: 3, ..DefragConfig::default() });
    for id in 0..5u16 {
        let datagram = ipv4_datagram(id, 17, &[1; 64]);
        let outcome = d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, 0, 16, true), secs(1), &mut out);
        assert_eq!(outcome == DefragOutcome::Held, id < 3);
    }
    assert_eq!(counter(&d, "defrag.max_trackers_reached"), 2);

    let mut d = Defragmenter::new(DefragConfig { max_frags: 4, ..DefragConfig::default() });
    let datagram = ipv4_datagram(1, 17, &[1; 800]);
    for i in 0..6 {
        let outcome = d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, i * 8, i * 8 + 8, true), secs(1), &mut out);
        assert_eq!(outcome == DefragOutcome::Held, i < 4);
    }
    assert_eq!(counter(&d, "defrag.max_frags_reached"), 2);
}

#[test]
fn hostile_fragments() {
    let mut out = Vec::new();
    // A flood of tiny fragments for one datagram is cut off and the datagram dropped.
    let mut d = defrag(DefragPolicy::Bsd);
    let datagram = ipv4_datagram(5, 6, &[0; 4000]);
    let mut outcomes = Vec::new();
    for i in 0..300 {
        outcomes.push(d.offer(LinkType::RawIpv4, &ipv4_fragment(&datagram, i * 8, i * 8 + 8, true), secs(1), &mut out));
    }
    assert_eq!(outcomes[MAX_FRAGMENTS_PER_DATAGRAM], DefragOutcome::Dropped(DropReason::TooManyFragments));
    assert_eq!(d.trackers(), 1, "the flood starts a fresh tracker afterwards");
    assert!(d.memuse() < 50 * 100);

    // A datagram past 65535 bytes.
    let mut d = defrag(DefragPolicy::Bsd);
    let frag = ipv4_fragment_with(&datagram, 65_512, &[0; 24], false);
    assert_eq!(d.offer(LinkType::RawIpv4, &frag, secs(1), &mut out), DefragOutcome::Dropped(DropReason::TooLarge));
    assert!(d.last_events().contains(DecodeEvent::Ipv4FragPktTooLarge));
    let fits = ipv4_fragment_with(&datagram, 65_488, &[0; 24], false); // 20 + 65512
    assert_eq!(d.offer(LinkType::RawIpv4, &fits, secs(1), &mut out), DefragOutcome::Held);

    // A TCP header rewritten by an overlapping second first fragment (the classic
    // evasion): the policy decides, and the overlap is flagged.
    let mut d = defrag(DefragPolicy::First);
    let original = ipv4_datagram(9, 6, &[b'a'; 40]);
    d.offer(LinkType::RawIpv4, &ipv4_fragment_with(&original, 0, &[b'a'; 24], true), secs(1), &mut out);
    d.offer(LinkType::RawIpv4, &ipv4_fragment_with(&original, 0, &[b'b'; 24], true), secs(1), &mut out);
    let done = d.offer(LinkType::RawIpv4, &ipv4_fragment_with(&original, 24, &[b'c'; 16], false), secs(1), &mut out);
    assert_eq!(done, DefragOutcome::Reassembled);
    assert_eq!(&out[20..44], &[b'a'; 24]);
    assert!(d.last_events().contains(DecodeEvent::Ipv4FragOverlap));

    // Truncated or malformed headers are not ours to reassemble.
    let mut cut = ipv4_fragment(&datagram, 0, 64, true);
    cut.truncate(50);
    assert_eq!(d.offer(LinkType::RawIpv4, &cut, secs(1), &mut out), DefragOutcome::NotFragment);
    assert_eq!(d.offer(LinkType::RawIpv4, &[0x45, 0, 0], secs(1), &mut out), DefragOutcome::NotFragment);
}

#[test]
fn ppp_link_keeps_its_header() {
    let datagram = udp_datagram(40);
    let mut d = defrag(DefragPolicy::Bsd);
    let mut out = Vec::new();
    let ppp = |ip: Vec<u8>| [vec![0x21], ip].concat();
    d.offer(LinkType::Ppp, &ppp(ipv4_fragment(&datagram, 24, 48, false)), secs(1), &mut out);
    assert_eq!(
        d.offer(LinkType::Ppp, &ppp(ipv4_fragment(&datagram, 0, 24, true)), secs(1), &mut out),
        DefragOutcome::Reassembled
    );
    assert_eq!(out, ppp(datagram));
}

// ---------------------------------------------------------------------------------------
// Conformance captures: the rebuilt packet must be byte for byte what Suricata logs.

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64"),
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        acc = (acc << 6) | value(c) as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[test]
fn conformance_defrag_captures_rebuild_what_suricata_logs() {
    let tests = [
        "defrag/bug-6887-defrag-eth-vlan-ipv4-tcp-syn",
        "defrag/bug-6887-defrag-eth-vlan-ipv6-tcp",
        "defrag/bug-6887-defrag-ipv4-tcp-syn",
        "defrag/bug-6887-defrag-ppp-ipv4-tcp-syn",
        "defrag/bug-6887-defrag-ppp-ipv6-tcp",
    ];
    for test in tests {
        let Some((link, packets)) = crate::decode::tunnel_tests::conformance_pcap(test) else { return };
        let spec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!(
                "{}/../../../shared/conformance/tests/{test}/test.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap();
        let check = &spec["checks"][0]["match"];
        let expected = base64_decode(check["packet"].as_str().unwrap());
        assert_eq!(link.pcap_number() as u64, check["packet_info.linktype"].as_u64().unwrap(), "{test}");
        let mut d = defrag(DefragPolicy::Bsd);
        let mut out = Vec::new();
        let outcomes: Vec<_> = packets.iter().map(|p| d.offer(link, p, secs(1), &mut out)).collect();
        assert_eq!(outcomes.last(), Some(&DefragOutcome::Reassembled), "{test}");
        assert_eq!(out, expected, "{test}");
        let decoded = decode(link, &out, &DecodeOptions::default());
        assert!(matches!(decoded.l4, L4::Tcp(_)), "{test}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any datagram, cut at arbitrary 8-byte boundaries, offered in any order with
    /// duplicates, reassembles to the original bytes under every policy.
    #[test]
    fn split_and_shuffled_datagrams_reassemble(
        payload in proptest::collection::vec(any::<u8>(), 1..3000),
        cuts in proptest::collection::vec(any::<u16>(), 0..12),
        order_seed in any::<u64>(),
        duplicates in proptest::collection::vec(any::<u8>(), 0..4),
        policy in prop_oneof![Just(DefragPolicy::First), Just(DefragPolicy::Last), Just(DefragPolicy::Bsd),
                              Just(DefragPolicy::Linux), Just(DefragPolicy::Windows), Just(DefragPolicy::Solaris)],
        v6 in any::<bool>(),
    ) {
        let len = payload.len();
        let mut bounds: Vec<usize> = cuts.iter().map(|c| (*c as usize % len) / 8 * 8).filter(|b| *b > 0).collect();
        bounds.push(0);
        bounds.push(len);
        bounds.sort();
        bounds.dedup();
        let mut pieces: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        for dup in &duplicates {
            let piece = pieces[*dup as usize % pieces.len()];
            pieces.push(piece);
        }
        // Deterministic shuffle from the seed.
        let mut next = crate::test_rng::xorshift(order_seed | 1);
        for i in (1..pieces.len()).rev() {
            pieces.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let mut d = defrag(policy);
        let mut out = Vec::new();
        let mut reassembled = 0;
        let (whole, link) = if v6 {
            let mut whole = vec![0x60, 0, 0, 0, 0, 0, 253, 64];
            whole.extend_from_slice(&V6_A);
            whole.extend_from_slice(&V6_B);
            whole.extend_from_slice(&payload);
            whole[4..6].copy_from_slice(&(len as u16).to_be_bytes());
            (whole, LinkType::RawIpv6)
        } else {
            (ipv4_datagram(77, 253, &payload), LinkType::RawIpv4)
        };
        for (s, e) in &pieces {
            let frag = if v6 {
                let mut f = whole[..40].to_vec();
                f[6] = 44;
                f.extend_from_slice(&[253, 0]);
                f.extend_from_slice(&((*s as u16) | (*e != len) as u16).to_be_bytes());
                f.extend_from_slice(&42u32.to_be_bytes());
                f.extend_from_slice(&payload[*s..*e]);
                let plen = (f.len() - 40) as u16;
                f[4..6].copy_from_slice(&plen.to_be_bytes());
                f
            } else {
                ipv4_fragment(&whole, *s, *e, *e != len)
            };
            match d.offer(link, &frag, secs(1), &mut out) {
                DefragOutcome::Reassembled => {
                    reassembled += 1;
                    prop_assert_eq!(&out, &whole);
                }
                // A single piece is the whole datagram, not a fragment.
                DefragOutcome::NotFragment => {
                    prop_assert_eq!((*s, *e), (0, len));
                    reassembled += 1;
                }
                DefragOutcome::Held => {}
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
        // Duplicates arriving after completion start a new (incomplete) datagram.
        prop_assert!(reassembled >= 1);
    }

    /// Random fragment headers and bytes never panic and never outgrow the memcap.
    #[test]
    fn random_fragments_are_harmless(
        frags in proptest::collection::vec((any::<u16>(), any::<bool>(), 0u16..4, proptest::collection::vec(any::<u8>(), 0..64), any::<u8>()), 1..80),
        policy in prop_oneof![Just(DefragPolicy::First), Just(DefragPolicy::Last), Just(DefragPolicy::Bsd),
                              Just(DefragPolicy::Linux), Just(DefragPolicy::Windows), Just(DefragPolicy::Solaris)],
    ) {
        let cfg = DefragConfig { memcap: 4096, policy, ..DefragConfig::default() };
        let mut d = Defragmenter::new(cfg);
        let mut out = Vec::new();
        for (i, (offset, more, id, data, garbage)) in frags.iter().enumerate() {
            let mut f = ipv4_datagram(*id, 17, data);
            let field = (offset & 0x1fff) | if *more { 0x2000 } else { 0 };
            f[6..8].copy_from_slice(&field.to_be_bytes());
            if garbage % 7 == 0 {
                let at = *garbage as usize % f.len();
                f[at] = garbage.wrapping_mul(31);
            }
            let _ = is_fragment(LinkType::RawIpv4, &f);
            let _ = d.offer(LinkType::RawIpv4, &f, secs(i as u64), &mut out);
            prop_assert!(d.memuse() <= cfg.memcap);
        }
        d.expire(secs(10_000));
        prop_assert_eq!((d.trackers(), d.memuse()), (0, 0));
    }
}

/// Offers `datagrams` UDP datagrams (ids 0..) of 255 fragments of 8 bytes each (the last
/// one carrying the rest), in the order `order` gives for fragment indexes; returns the
/// number reassembled and the time taken.
fn many_fragments(d: &mut Defragmenter, datagrams: u16, order: &[usize]) -> (u64, std::time::Duration) {
    let whole = udp_datagram(255 * 8 - 8);
    let payload = whole.len() - 20;
    let mut out = Vec::new();
    let mut done = 0;
    let frames: Vec<Vec<Vec<u8>>> = (0..datagrams)
        .map(|id| {
            let mut w = whole.clone();
            w[4..6].copy_from_slice(&id.to_be_bytes());
            (0..255)
                .map(|i| {
                    let end = if i == 254 { payload } else { (i + 1) * 8 };
                    eth_vlan(1, &ipv4_fragment(&w, i * 8, end, i != 254))
                })
                .collect()
        })
        .collect();
    let started = std::time::Instant::now();
    for frags in &frames {
        for &i in order {
            if d.offer(LinkType::Ethernet, &frags[i], secs(1), &mut out) == DefragOutcome::Reassembled {
                done += 1;
            }
        }
    }
    (done, started.elapsed())
}

#[test]
fn many_fragments_in_reverse_or_shuffled_order_cost_about_what_in_order_does() {
    // The scaled-down worst case of issue #16: a datagram of 255 fragments arriving
    // backwards (every fragment lands before all held ones), plus overlapping copies.
    let in_order: Vec<usize> = (0..255).collect();
    let reverse: Vec<usize> = (0..255).rev().collect();
    // Every other fragment first, then the rest: each of the second half fills a hole
    // between two held segments.
    let holes: Vec<usize> = (0..255).step_by(2).chain((1..255).step_by(2)).collect();
    let (n, base) = many_fragments(&mut defrag(DefragPolicy::Bsd), 200, &in_order);
    assert_eq!(n, 200);
    for order in [&reverse, &holes] {
        let mut d = defrag(DefragPolicy::Bsd);
        let (n, took) = many_fragments(&mut d, 200, order);
        assert_eq!(n, 200, "every datagram is rebuilt");
        assert_eq!(d.trackers(), 0);
        assert_eq!(d.memuse(), 0);
        // Generous: 10x over in-order plus slack for a loaded machine.
        assert!(took < base * 10 + std::time::Duration::from_millis(500), "{took:?} vs in order {base:?}");
    }
}
