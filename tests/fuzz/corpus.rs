//! Seed inputs: the captures bundled in `tests/fuzz-corpus/` and `data/`, plus the
//! conformance captures when `../shared/conformance/pcaps` (or `PICKET_FUZZ_CORPUS`) exists;
//! a minimal pcap reader/writer and pcapng writer to take them apart and rebuild them; and
//! the extraction of per-flow byte streams ("sessions") for the app-layer parsers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use picket::bytes::Endian;
use picket::decode::{decode, DecodeOptions, L4};
use picket::packet::LinkType;

#[derive(Clone, Debug)]
pub struct Pkt {
    pub ts_sec: u32,
    pub ts_frac: u32,
    pub data: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct Capture {
    pub linktype: u32,
    pub nanos: bool,
    pub packets: Vec<Pkt>,
}

/// Captures larger than this are only mined for packets, not used whole as file seeds
/// (a multi-megabyte seed makes each iteration slow).
const WHOLE_FILE_LIMIT: usize = 64 * 1024;
/// Packets taken from one capture for packet-level seeds.
const PACKETS_PER_FILE: usize = 300;

pub struct Corpus {
    /// Capture files as bytes (pcap), small ones only.
    pub files: Vec<Vec<u8>>,
    pub captures: Vec<Capture>,
    pub rules: Vec<String>,
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.retain(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("pcap" | "pcapng")));
    files.sort();
    files
}

pub fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(load)
}

fn load() -> Corpus {
    let mut paths = capture_files(&repo("tests/fuzz-corpus"));
    paths.extend(capture_files(&repo("data")));
    let shared = std::env::var_os("PICKET_FUZZ_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo("../shared/conformance/pcaps"));
    if shared.is_dir() {
        let extra = capture_files(&shared);
        eprintln!("fuzz: {} extra seed captures from {}", extra.len(), shared.display());
        paths.extend(extra);
    } else {
        eprintln!(
            "fuzz: {} not found, seeding from the bundled corpus only (tests/fuzz-corpus, data/)",
            shared.display()
        );
    }
    let mut files = Vec::new();
    let mut captures = Vec::new();
    for path in &paths {
        let Ok(bytes) = std::fs::read(path) else { continue };
        if let Some(mut cap) = parse_pcap(&bytes) {
            if bytes.len() <= WHOLE_FILE_LIMIT {
                files.push(bytes);
            }
            cap.packets.truncate(PACKETS_PER_FILE);
            captures.push(cap);
        }
    }
    let mut rules = Vec::new();
    for file in ["tests/fuzz-corpus/rules.txt", "rules/default.rules"] {
        let text = std::fs::read_to_string(repo(file)).unwrap_or_default();
        rules.extend(text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).map(String::from));
    }
    Corpus { files, captures, rules }
}

pub fn parse_pcap(b: &[u8]) -> Option<Capture> {
    let magic = b.get(..4)?;
    let (order, nanos) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (Endian::Little, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (Endian::Little, true),
        [0xa1, 0xb2, 0xc3, 0xd4] => (Endian::Big, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (Endian::Big, true),
        _ => return None,
    };
    let u32_at = |at: usize| order.u32(b, at);
    let linktype = u32_at(20)? & 0xffff;
    let mut packets = Vec::new();
    let mut at = 24;
    while let (Some(sec), Some(frac), Some(caplen)) = (u32_at(at), u32_at(at + 4), u32_at(at + 8)) {
        let start = at + 16;
        let Some(data) = b.get(start..start + caplen as usize) else { break };
        packets.push(Pkt { ts_sec: sec, ts_frac: frac, data: data.to_vec() });
        at = start + caplen as usize;
    }
    Some(Capture { linktype, nanos, packets })
}

/// A little-endian pcap file.
pub fn write_pcap(cap: &Capture) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + cap.packets.iter().map(|p| p.data.len() + 16).sum::<usize>());
    out.extend_from_slice(&(if cap.nanos { 0xa1b2_3c4du32 } else { 0xa1b2_c3d4 }).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&cap.linktype.to_le_bytes());
    for p in &cap.packets {
        out.extend_from_slice(&p.ts_sec.to_le_bytes());
        out.extend_from_slice(&p.ts_frac.to_le_bytes());
        out.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&p.data);
    }
    out
}

/// The same packets as a pcapng file: one section, one interface (with `if_tsresol` when
/// `tsresol` is given), enhanced packet blocks; `big_endian` writes the other byte order.
pub fn write_pcapng(cap: &Capture, tsresol: Option<u8>, big_endian: bool) -> Vec<u8> {
    let w32 = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut out = Vec::new();
    let block = |out: &mut Vec<u8>, kind: u32, body: &[u8]| {
        let len = 12 + body.len().div_ceil(4) * 4;
        out.extend_from_slice(&w32(kind));
        out.extend_from_slice(&w32(len as u32));
        out.extend_from_slice(body);
        out.resize(out.len() + (4 - body.len() % 4) % 4, 0);
        out.extend_from_slice(&w32(len as u32));
    };
    let mut shb = Vec::new();
    shb.extend_from_slice(&w32(0x1a2b_3c4d));
    shb.extend_from_slice(&w16(1));
    shb.extend_from_slice(&w16(0));
    shb.extend_from_slice(&[0xff; 8]);
    block(&mut out, 0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&w16(cap.linktype as u16));
    idb.extend_from_slice(&w16(0));
    idb.extend_from_slice(&w32(0));
    if let Some(res) = tsresol {
        idb.extend_from_slice(&w16(9));
        idb.extend_from_slice(&w16(1));
        idb.extend_from_slice(&[res, 0, 0, 0]);
        idb.extend_from_slice(&[0; 4]);
    }
    block(&mut out, 1, &idb);
    for p in &cap.packets {
        let units = p.ts_sec as u64 * 1_000_000 + p.ts_frac as u64 % 1_000_000;
        let mut epb = Vec::new();
        epb.extend_from_slice(&w32(0));
        epb.extend_from_slice(&w32((units >> 32) as u32));
        epb.extend_from_slice(&w32(units as u32));
        epb.extend_from_slice(&w32(p.data.len() as u32));
        epb.extend_from_slice(&w32(p.data.len() as u32));
        epb.extend_from_slice(&p.data);
        block(&mut out, 6, &epb);
    }
    out
}

/// Link-type selector byte used by the decode target's input format.
pub const LINK_TYPES: [LinkType; 11] = [
    LinkType::Ethernet,
    LinkType::RawIp,
    LinkType::RawIpv4,
    LinkType::RawIpv6,
    LinkType::LinuxSll,
    LinkType::LinuxSll2,
    LinkType::Null,
    LinkType::Loop,
    LinkType::Ppp,
    LinkType::CiscoHdlc,
    LinkType::Unsupported(147),
];

pub fn link_selector(link: LinkType) -> u8 {
    LINK_TYPES.iter().position(|l| *l == link).unwrap_or(LINK_TYPES.len() - 1) as u8
}

/// Every seed packet as `[link selector][bytes]`, plus Ethernet frames re-framed as the
/// other link types so those decoders get real IP behind them.
pub fn packet_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for cap in &corpus().captures {
        let link = LinkType::from_pcap(cap.linktype);
        for (i, p) in cap.packets.iter().enumerate() {
            let mut seed = vec![link_selector(link)];
            seed.extend_from_slice(&p.data);
            out.push(seed);
            if link == LinkType::Ethernet && i % 8 == 0 && p.data.len() > 14 {
                out.extend(reframe(&p.data));
            }
        }
    }
    out
}

/// An Ethernet frame's payload under other link-layer headers.
fn reframe(frame: &[u8]) -> Vec<Vec<u8>> {
    let ethertype = [frame[12], frame[13]];
    let payload = &frame[14..];
    let v6 = ethertype == [0x86, 0xdd];
    let with = |link: LinkType, header: &[u8]| {
        let mut v = vec![link_selector(link)];
        v.extend_from_slice(header);
        v.extend_from_slice(payload);
        v
    };
    let mut sll = vec![0, 0, 0, 1, 0, 6];
    sll.extend_from_slice(&frame[6..12]);
    sll.extend_from_slice(&[0, 0]);
    sll.extend_from_slice(&ethertype);
    let mut sll2 = ethertype.to_vec();
    sll2.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 1, 0, 6]);
    sll2.extend_from_slice(&frame[6..12]);
    sll2.extend_from_slice(&[0, 0]);
    let af: u32 = if v6 { 24 } else { 2 };
    vec![
        with(LinkType::RawIp, &[]),
        with(if v6 { LinkType::RawIpv6 } else { LinkType::RawIpv4 }, &[]),
        with(LinkType::LinuxSll, &sll),
        with(LinkType::LinuxSll2, &sll2),
        with(LinkType::Null, &af.to_le_bytes()),
        with(LinkType::Loop, &af.to_be_bytes()),
        with(LinkType::Ppp, &[0xff, 0x03, 0x00, if v6 { 0x57 } else { 0x21 }]),
        with(LinkType::CiscoHdlc, &[0x0f, 0x00, ethertype[0], ethertype[1]]),
    ]
}

/// An address as 16 bytes (IPv4 v4-mapped).
type Addr = [u8; 16];

/// One record of a session: data in a direction, or a gap of `len` bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Rec {
    Data {
        to_server: bool,
        bytes: Vec<u8>,
    },
    Gap {
        to_server: bool,
        len: u16,
    },
    /// App-layer targets: the flow ends here (parsers get `on_close` and later data).
    Close,
}

/// `[kind][len: u16 LE][bytes]...`; decoding is lenient (a short record takes what is there).
pub fn encode_session(recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in recs {
        match r {
            Rec::Data { to_server, bytes } => {
                let bytes = &bytes[..bytes.len().min(u16::MAX as usize)];
                out.push(if *to_server { 0 } else { 1 });
                out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Rec::Gap { to_server, len } => {
                out.push(if *to_server { 2 } else { 3 });
                out.extend_from_slice(&len.to_le_bytes());
            }
            Rec::Close => out.extend_from_slice(&[4, 0, 0]),
        }
    }
    out
}

pub fn decode_session(mut b: &[u8]) -> Vec<Rec> {
    let mut recs = Vec::new();
    while let [kind, rest @ ..] = b {
        let len = match rest {
            [lo, hi, ..] => u16::from_le_bytes([*lo, *hi]),
            [lo] => *lo as u16,
            [] => 0,
        };
        let rest = rest.get(2..).unwrap_or(&[]);
        match kind % 8 {
            k @ (0 | 1) => {
                let n = (len as usize).min(rest.len());
                recs.push(Rec::Data { to_server: k == 0, bytes: rest[..n].to_vec() });
                b = &rest[n..];
            }
            k @ (2 | 3) => {
                recs.push(Rec::Gap { to_server: k == 2, len });
                b = rest;
            }
            4 => {
                recs.push(Rec::Close);
                b = rest;
            }
            // Unknown kinds: data to-server of the remaining bytes, so random input still
            // reaches the parser.
            _ => {
                recs.push(Rec::Data { to_server: true, bytes: rest.to_vec() });
                b = &[];
            }
        }
    }
    recs
}

/// What a session seed must look like to be kept for a target.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    Http,
    DnsUdp,
    DnsTcp,
    Tls,
    /// Any TCP or UDP flow (protocol probing).
    Any,
}

/// Flows of the seed captures as sessions (the payloads in capture order, retransmissions
/// included), filtered by `kind`. The client is the side with the higher port.
pub fn session_seeds(kind: SessionKind) -> Vec<Vec<u8>> {
    let opts = DecodeOptions { validate_checksums: false, ..DecodeOptions::default() };
    let mut out = Vec::new();
    for cap in &corpus().captures {
        let link = LinkType::from_pcap(cap.linktype);
        let mut flows: HashMap<(Addr, Addr, u16, u16, u8), Vec<Rec>> = HashMap::new();
        let mut order = Vec::new();
        for p in &cap.packets {
            let d = decode(link, &p.data, &opts);
            let Some(t) = d.tuple() else { continue };
            let udp = matches!(d.l4, L4::Udp(_));
            if !(udp || matches!(d.l4, L4::Tcp(_))) || d.payload.is_empty() {
                continue;
            }
            let to_server = t.src_port > t.dst_port || (t.src_port == t.dst_port && t.src <= t.dst);
            let key = if to_server {
                (t.src, t.dst, t.src_port, t.dst_port, t.proto)
            } else {
                (t.dst, t.src, t.dst_port, t.src_port, t.proto)
            };
            let server_port = key.3;
            let first = d.payload[0];
            let keep = match kind {
                SessionKind::Http => {
                    !udp && (matches!(server_port, 80 | 8080 | 3128) || d.payload.starts_with(b"HTTP/"))
                }
                SessionKind::DnsUdp => udp && server_port == 53,
                SessionKind::DnsTcp => !udp && server_port == 53,
                SessionKind::Tls => !udp && (server_port == 443 || (first == 0x16 && d.payload.get(1) == Some(&3))),
                SessionKind::Any => true,
            };
            if !keep {
                continue;
            }
            let recs = flows.entry(key).or_insert_with(|| {
                order.push(key);
                Vec::new()
            });
            if recs.len() < 64 {
                recs.push(Rec::Data { to_server, bytes: d.payload.to_vec() });
            }
        }
        for key in order {
            if let Some(recs) = flows.remove(&key) {
                out.push(encode_session(&recs));
            }
        }
    }
    out
}

/// Whole-file seeds: the small captures as pcap, some also as pcapng (both byte orders,
/// a few timestamp resolutions), so both readers start from valid files.
pub fn file_seeds() -> Vec<Vec<u8>> {
    let c = corpus();
    let mut out = c.files.clone();
    for (i, cap) in c.captures.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        let small = Capture { packets: cap.packets.iter().take(40).cloned().collect(), ..cap.clone() };
        let res = [None, Some(6), Some(9), Some(0x83)][i % 4];
        out.push(write_pcapng(&small, res, i % 2 == 1));
    }
    out
}
