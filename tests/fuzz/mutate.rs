//! Mutations: generic byte-level ones (bit flips, interesting values in length fields,
//! insertions of protocol tokens, truncation, splicing), and structure-aware ones that keep
//! a capture or a session well-formed while changing what is inside.

use crate::corpus::{decode_session, encode_session, parse_pcap, write_pcap, Pkt, Rec};
use crate::harness::Rng;

/// Values that sit on the edges of length and count fields.
const INTERESTING_16: [u16; 12] = [0, 1, 2, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff];
const INTERESTING_32: [u32; 8] = [0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0xffff, 0x10000, 65535 * 2];

fn random_input(rng: &mut Rng, dict: &[&[u8]]) -> Vec<u8> {
    let mut v: Vec<u8> = (0..rng.small(256)).map(|_| rng.byte()).collect();
    for _ in 0..rng.small(8) {
        if !dict.is_empty() {
            let tok = rng.pick(dict);
            let at = rng.below(v.len() + 1);
            v.splice(at..at, tok.iter().copied());
        }
    }
    v
}

/// One to a few byte-level changes of `data`. `dict` holds protocol tokens to insert;
/// `other` is another input for splicing.
pub fn bytes(rng: &mut Rng, data: &mut Vec<u8>, dict: &[&[u8]], other: &[u8]) {
    let rounds = 1 + rng.small(7);
    for _ in 0..rounds {
        let len = data.len();
        match rng.below(14) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.byte();
            }
            2 if len > 0 => {
                let i = rng.below(len);
                data[i] = *rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff, b'\r', b'\n', b' ', b':', b';', b'0', b'9']);
            }
            // Length-field mutation: an interesting 16- or 32-bit value, either byte order,
            // or the field nudged by a little.
            3 if len >= 2 => {
                let i = rng.below(len - 1);
                let v = if rng.chance(2) {
                    *rng.pick(&INTERESTING_16)
                } else {
                    u16::from_be_bytes([data[i], data[i + 1]]).wrapping_add((rng.below(17) as u16).wrapping_sub(8))
                };
                let b = if rng.chance(2) { v.to_be_bytes() } else { v.to_le_bytes() };
                data[i..i + 2].copy_from_slice(&b);
            }
            4 if len >= 4 => {
                let i = rng.below(len - 3);
                let v = *rng.pick(&INTERESTING_32);
                let b = if rng.chance(2) { v.to_be_bytes() } else { v.to_le_bytes() };
                data[i..i + 4].copy_from_slice(&b);
            }
            5 if !dict.is_empty() => {
                let tok = rng.pick(dict);
                let at = rng.below(len + 1);
                data.splice(at..at, tok.iter().copied());
            }
            6 => {
                let at = rng.below(len + 1);
                let n = rng.small(64);
                let fill = rng.byte();
                let random = rng.chance(2);
                let ins: Vec<u8> = (0..n).map(|_| if random { rng.byte() } else { fill }).collect();
                data.splice(at..at, ins);
            }
            7 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.small(len - at - 1);
                data.drain(at..at + n);
            }
            // Duplicate a range (repeated headers, repeated records).
            8 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.small((len - at - 1).min(512));
                let copy = data[at..at + n].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, copy);
            }
            9 if len > 0 => data.truncate(rng.below(len)),
            10 if !other.is_empty() => {
                let keep = rng.below(len + 1);
                let from = rng.below(other.len());
                data.truncate(keep);
                data.extend_from_slice(&other[from..]);
            }
            // Overwrite a range with bytes from another input (field transplant).
            11 if len > 0 && !other.is_empty() => {
                let at = rng.below(len);
                let from = rng.below(other.len());
                let n = (1 + rng.small(32)).min(len - at).min(other.len() - from);
                data[at..at + n].copy_from_slice(&other[from..from + n]);
            }
            12 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                data.swap(a, b);
            }
            // A very long run: the limits on lines, fields and names.
            13 if rng.chance(8) => {
                let at = rng.below(len + 1);
                let n = 1000 + rng.below(70_000);
                let fill = *rng.pick(&[b'A', b'0', b' ', 0u8, 0xff, b'\n']);
                data.splice(at..at, std::iter::repeat_n(fill, n));
            }
            _ => {}
        }
    }
}

/// A seed, mutated; now and then an input made from scratch.
pub fn mutate_bytes(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    if seeds.is_empty() || rng.chance(50) {
        return random_input(rng, dict);
    }
    let mut data = rng.pick(seeds).clone();
    let other = rng.pick(seeds);
    bytes(rng, &mut data, dict, other);
    data
}

/// Offsets in an Ethernet frame worth hitting: IPv4/IPv6 header fields (lengths, offsets,
/// protocol), TCP/UDP header fields, and the bytes right after them.
fn header_offset(rng: &mut Rng, len: usize) -> usize {
    let interesting = [12, 13, 14, 16, 17, 18, 20, 21, 22, 23, 24, 26, 34, 36, 38, 40, 42, 46, 47, 54, 58, 60];
    let at = *rng.pick(&interesting);
    if at < len {
        at
    } else {
        rng.below(len.max(1))
    }
}

/// Mutates the packets of a capture while keeping the capture file valid: packet bytes,
/// header fields, drops, duplicates, reordering, packets from other captures, IPv4
/// fragmentation.
pub fn capture(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    let Some(mut cap) = parse_pcap(rng.pick(seeds).as_slice()) else {
        return mutate_bytes(rng, seeds, dict);
    };
    let donor = parse_pcap(rng.pick(seeds).as_slice());
    let rounds = 1 + rng.small(6);
    for _ in 0..rounds {
        let n = cap.packets.len();
        match rng.below(9) {
            0..=2 if n > 0 => {
                let i = rng.below(n);
                let other = donor.as_ref().and_then(|d| d.packets.first()).map(|p| p.data.clone()).unwrap_or_default();
                let p = &mut cap.packets[i].data;
                if rng.chance(2) && !p.is_empty() {
                    // Targeted: a header field rather than anywhere.
                    let at = header_offset(rng, p.len());
                    if rng.chance(2) {
                        p[at] = rng.byte();
                    } else {
                        p[at] ^= 1 << rng.below(8);
                    }
                } else {
                    bytes(rng, p, dict, &other);
                }
            }
            3 if n > 1 => {
                cap.packets.remove(rng.below(n));
            }
            4 if n > 0 => {
                let i = rng.below(n);
                let dup = cap.packets[i].clone();
                cap.packets.insert(rng.below(n + 1), dup);
            }
            5 if n > 1 => {
                let i = rng.below(n - 1);
                cap.packets.swap(i, i + 1);
            }
            6 => {
                if let Some(d) = &donor {
                    if d.linktype == cap.linktype && !d.packets.is_empty() {
                        let p = d.packets[rng.below(d.packets.len())].clone();
                        cap.packets.insert(rng.below(n + 1), p);
                    }
                }
            }
            7 if n > 0 => {
                let i = rng.below(n);
                if let Some(frags) = fragment_ipv4(rng, &cap.packets[i], cap.linktype) {
                    cap.packets.splice(i..=i, frags);
                }
            }
            // Time jumps (flow timeouts, defrag expiry).
            8 if n > 0 => {
                let i = rng.below(n);
                let jump = *rng.pick(&[1u32, 30, 61, 120, 3600, 0x8000_0000]);
                for p in &mut cap.packets[i..] {
                    p.ts_sec = p.ts_sec.wrapping_add(jump);
                }
            }
            _ => {}
        }
    }
    if cap.packets.len() > 2000 {
        cap.packets.truncate(2000);
    }
    write_pcap(&cap)
}

/// Splits an IPv4 packet (Ethernet or raw IP) into fragments at random 8-byte boundaries,
/// sometimes overlapping or with a wrong last-fragment flag, in shuffled order.
fn fragment_ipv4(rng: &mut Rng, p: &Pkt, linktype: u32) -> Option<Vec<Pkt>> {
    let l2 = match linktype {
        1 if p.data.get(12..14) == Some(&[0x08, 0x00]) => 14,
        101 | 228 => 0,
        _ => return None,
    };
    let ip = p.data.get(l2..)?;
    if ip.first()? >> 4 != 4 {
        return None;
    }
    let ihl = (ip[0] as usize & 0x0f) * 4;
    let total = (u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]) as usize).min(ip.len());
    if ihl < 20 || total <= ihl + 8 {
        return None;
    }
    let payload = &ip[ihl..total];
    let mut frags = Vec::new();
    let mut off = 0usize;
    while off < payload.len() {
        let step = 8 * (1 + rng.small(payload.len() / 8));
        let overlap = if off >= 8 && rng.chance(6) { 8 * (1 + rng.below(off / 8).min(3)) } else { 0 };
        let start = off - overlap;
        let end = (off + step).min(payload.len());
        let more = end < payload.len() || rng.chance(20);
        let mut d = p.data[..l2].to_vec();
        d.extend_from_slice(&ip[..ihl]);
        let body = &payload[start..end];
        let mut body = body.to_vec();
        if overlap > 0 && rng.chance(2) {
            for b in body.iter_mut().take(overlap) {
                *b ^= 0x5a;
            }
        }
        d.extend_from_slice(&body);
        let h = &mut d[l2..];
        let len = (ihl + body.len()) as u16;
        h[2..4].copy_from_slice(&len.to_be_bytes());
        let field = ((start / 8) as u16) | if more { 0x2000 } else { 0 };
        h[6..8].copy_from_slice(&field.to_be_bytes());
        // The checksum is left wrong on purpose now and then; otherwise fix it.
        h[10] = 0;
        h[11] = 0;
        if !rng.chance(10) {
            let sum = ipv4_checksum(&h[..ihl]);
            h[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        frags.push(Pkt { ts_sec: p.ts_sec, ts_frac: p.ts_frac, data: d });
        off = end;
        if frags.len() > 64 {
            break;
        }
    }
    // Shuffle a little.
    for _ in 0..rng.small(frags.len()) {
        let (a, b) = (rng.below(frags.len()), rng.below(frags.len()));
        frags.swap(a, b);
    }
    Some(frags)
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for pair in header.chunks(2) {
        sum += u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Mutates a session: the bytes of a record, record boundaries (splits, merges), order,
/// duplicates (retransmissions as the parser sees them), gaps, direction, early close.
pub fn session(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    if seeds.is_empty() || rng.chance(40) {
        return mutate_bytes(rng, seeds, dict);
    }
    let mut recs = decode_session(rng.pick(seeds).as_slice());
    let donor = decode_session(rng.pick(seeds).as_slice());
    let rounds = 1 + rng.small(6);
    for _ in 0..rounds {
        let n = recs.len();
        match rng.below(10) {
            0..=3 if n > 0 => {
                let i = rng.below(n);
                let other = match donor.first() {
                    Some(Rec::Data { bytes, .. }) => bytes.clone(),
                    _ => Vec::new(),
                };
                if let Rec::Data { bytes: b, .. } = &mut recs[i] {
                    bytes(rng, b, dict, &other);
                }
            }
            4 if n > 0 => {
                let i = rng.below(n);
                if let Rec::Data { to_server, bytes } = recs[i].clone() {
                    if bytes.len() > 1 {
                        let at = 1 + rng.below(bytes.len() - 1);
                        recs[i] = Rec::Data { to_server, bytes: bytes[..at].to_vec() };
                        recs.insert(i + 1, Rec::Data { to_server, bytes: bytes[at..].to_vec() });
                    }
                }
            }
            5 if n > 1 => {
                let i = rng.below(n - 1);
                recs.swap(i, i + 1);
            }
            6 if n > 0 => {
                let i = rng.below(n);
                let dup = recs[i].clone();
                recs.insert(rng.below(n + 1), dup);
            }
            7 => {
                let len = *rng.pick(&[1u16, 7, 100, 1460, 0xffff]);
                recs.insert(rng.below(n + 1), Rec::Gap { to_server: rng.chance(2), len });
            }
            8 if n > 0 => {
                let i = rng.below(n);
                if let Rec::Data { to_server, .. } | Rec::Gap { to_server, .. } = &mut recs[i] {
                    *to_server = !*to_server;
                }
            }
            9 => {
                if let Some(r) = donor.get(rng.below(donor.len().max(1))) {
                    recs.insert(rng.below(n + 1), r.clone());
                } else {
                    recs.insert(rng.below(n + 1), Rec::Close);
                }
            }
            _ => {}
        }
    }
    encode_session(&recs)
}

/// Tokens that steer the HTTP parser into its interesting states.
pub const HTTP_DICT: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n",
    b"POST /x HTTP/1.0\r\n",
    b"HTTP/1.1 200 OK\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: ",
    b"Content-Length: 5\r\n",
    b"Content-Encoding: gzip\r\n",
    b"Content-Encoding: deflate, gzip\r\n",
    b"Host: a\r\n",
    b" folded\r\n",
    b"0\r\n\r\n",
    b"ffffffff\r\n",
    b"5;ext\r\n",
    b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
    b"\x78\x9c",
    b"Connection: Upgrade\r\nUpgrade: websocket\r\n",
    b"CONNECT a:443 HTTP/1.1\r\n",
    b"%2e%2e/",
    b"http://h/p?q#f",
];

pub const DNS_DICT: &[&[u8]] = &[
    b"\xc0\x0c",
    b"\xc0\x00",
    b"\xc0\xff",
    b"\x00\x01\x00\x01",
    b"\x00\x1c\x00\x01",
    b"\x00\x06\x00\x01",
    b"\x00\x21\x00\x01",
    b"\x00\x10\x00\x01",
    b"\x3f",
    b"\x00\x00",
    b"\x81\x80",
];

pub const TLS_DICT: &[&[u8]] = &[
    b"\x16\x03\x01",
    b"\x16\x03\x03\x40\x00",
    b"\x14\x03\x03\x00\x01\x01",
    b"\x17\x03\x03",
    b"\x80\x2e\x01\x03\x01",
    b"\x01\x00\x00",
    b"\x02\x00\x00",
    b"\x0b\x00\x00",
    b"\x00\x00\x00\x05",
    b"\x30\x82",
    b"\xff\xff",
];

pub const RULE_DICT: &[&[u8]] = &[
    b"alert tcp any any -> any any (",
    b"alert http $HOME_NET any -> $EXTERNAL_NET $HTTP_PORTS (",
    b"content:\"",
    b"|00 ff|",
    b"\";",
    b";",
    b"\\",
    b"sid:1;",
    b"msg:\"x\";",
    b"pcre:\"/a(b)?/Ri\";",
    b"byte_test:4,>,1000,0,relative;",
    b"byte_jump:2,0,relative,multiplier 2;",
    b"byte_math:bytes 2,offset 0,oper +,rvalue 1,result r;",
    b"isdataat:!1,relative;",
    b"flowbits:set,a;",
    b"flow:established,to_server;",
    b"threshold:type limit,track by_src,count 1,seconds 60;",
    b"depth:0;",
    b"offset:-1;",
    b"distance:4294967295;",
    b"within:0;",
    b"[1.2.3.0/24,!1.2.3.4]",
    b"[1:1024,!80]",
    b"!",
    b"http.uri; content:\"a\"; to_lowercase;",
    b"dns.query;",
    b"tls.sni;",
    b"fast_pattern:0,1;",
    b"dsize:>1<;",
    b"xor:\"0102\";",
    b"metadata:a b, c d;",
    b")",
    b"(",
    b"\"",
];
