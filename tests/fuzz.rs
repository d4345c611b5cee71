//! Fuzz and property targets for every parser of hostile input, the reassemblers and the
//! whole inspection core. Stable Rust, no libFuzzer: each target mutates seed inputs
//! (captures from `tests/fuzz-corpus/`, `data/` and, when present, the conformance
//! captures) with a deterministic generator for a bounded time, catches panics per input,
//! checks invariants (memory caps, limits, split-independence), and saves failing inputs to
//! `target/fuzz-failures/`. See `harness.rs` for the environment variables.
//!
//! `cargo test --release --test fuzz` runs every target for `PICKET_FUZZ_SECS` (default 3)
//! seconds; `-- --nocapture` prints inputs per second and each target's slowest input.
//! CI (`.ci/run`) gives every target 20 s.
//!
//! Long runs: one target at a time, for as long as you like, with a seed of your own so the
//! run explores inputs CI never tried (the default seed is fixed):
//!
//! ```text
//! PICKET_FUZZ_SECS=3600 PICKET_FUZZ_SEED=$RANDOM cargo test --release --test fuzz rule_packets -- --nocapture
//! ```
//!
//! - `PICKET_FUZZ_SECS`: seconds per target (fractions allowed).
//! - `PICKET_FUZZ_SEED`: base seed, decimal or hex (`0x...`); printed at the end of each target.
//! - A failing input (panic, broken invariant, over its cost budget, or slower than 10 s) is
//!   saved as `target/fuzz-failures/<target>-<input seed>.bin` (or under `$CARGO_TARGET_DIR`);
//!   a target stops after 3 distinct failures and its test fails listing them.
//! - `PICKET_FUZZ_REPLAY=target/fuzz-failures/<file>.bin cargo test --release --test fuzz <test>`
//!   runs that one input without catching the panic (add `RUST_BACKTRACE=1`).
//! - `PICKET_FUZZ_INPUT=<input seed>` regenerates the input from its seed (same corpus only).
//!
//! `rule_packets` builds random rules (byte variables, byte_math, content modifiers, pcre...)
//! and random packets from each input and inspects them (grammar in `fuzz/rulegen.rs`);
//! it and `inspect_end_to_end` hold inspection to a [`harness::CostBudget`] per input byte.

#[path = "fuzz/corpus.rs"]
mod corpus;
#[path = "fuzz/harness.rs"]
mod harness;
#[path = "fuzz/mutate.rs"]
mod mutate;
#[path = "fuzz/rulegen.rs"]
mod rulegen;

use std::io::Cursor;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use corpus::{decode_session, file_seeds, packet_seeds, session_seeds, Rec, SessionKind, LINK_TYPES};
use harness::{fuzz, CostBudget, Rng, Target};
use picket::applayer::dns::{self, DnsConfig, DnsCounters, DnsState};
use picket::applayer::http::{FileConfig, HttpConfig, HttpParser};
use picket::applayer::probe::{probe, DetectStatus, ProtoDetector, Transport};
use picket::applayer::tls::{TlsConfig, TlsCounters, TlsState};
use picket::capture::{open_reader, MAX_CAPLEN};
use picket::config::EngineSettings;
use picket::decode::{decode, flow_hash_with, DecodeOptions, IpLayer, PortList, L4};
use picket::defrag::{is_fragment, DefragConfig, DefragOutcome, DefragPolicy, Defragmenter};
use picket::detect::engine::{DetectConfig, DetectEngine};
use picket::detect::mpm::AcBuilder;
use picket::detect::rule::{load_rules_str, parse_rule, RuleVars};
use picket::flow::tcp::{TcpConfig, TcpSession};
use picket::flow::TcpSegment;
use picket::inspect::{InspectSettings, Inspector};
use picket::output::json::JsonObject;
use picket::output::sink::LogSink;
use picket::packet::{LinkType, PacketMeta, PacketRef, Timestamp};
use picket::settings::ChecksumMode;
use picket::stream::{
    AppData, Direction, OverlapPolicy, ReassemblyMemory, Segment, SegmentOutcome, StreamConfig, TcpFlags, TcpReassembly,
};

/// Reads fuzz input as a sequence of small decisions; past the end it yields zeros, so
/// every input is a valid program.
pub(crate) struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    pub(crate) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

// ---------------------------------------------------------------- packet decoding

fn check_decode(input: &[u8]) -> Result<(), String> {
    let Some((&sel, data)) = input.split_first() else { return Ok(()) };
    let link = LINK_TYPES[sel as usize % LINK_TYPES.len()];
    let variants = [
        DecodeOptions::default(),
        DecodeOptions { validate_checksums: false, max_layers: 3, ..DecodeOptions::default() },
        DecodeOptions {
            vxlan_ports: PortList::one(80),
            geneve_ports: PortList::one(53),
            teredo_ports: PortList::one(443),
            ..DecodeOptions::default()
        },
    ];
    let opts = &variants[(sel as usize / LINK_TYPES.len()) % variants.len()];
    let d = decode(link, data, opts);
    let range = data.as_ptr_range();
    let inside = |s: &[u8]| s.is_empty() || (range.start <= s.as_ptr() && s.as_ptr_range().end <= range.end);
    ensure(inside(d.payload), || "payload is not a slice of the packet".into())?;
    ensure(d.tunnel_depth() <= opts.max_layers, || format!("tunnel depth {} over the limit", d.tunnel_depth()))?;
    let _ = (d.tuple(), d.ip_proto(), d.outer_vlan());
    match &d.ip {
        Some(IpLayer::V4(v)) => {
            let _ = (v.options().count(), v.header().len(), v.total_len(), v.frag_offset());
        }
        Some(IpLayer::V6(i)) => {
            let _ = (i.header.src(), i.upper_proto);
        }
        None => {}
    }
    if let L4::Tcp(t) = &d.l4 {
        ensure(inside(t.payload()), || "TCP payload outside the packet".into())?;
        let _ = (t.options().count(), t.header_len(), t.segment().len());
    }
    if d.fragment {
        ensure(d.payload.is_empty(), || "a fragment has a transport payload".into())?;
    }
    let _ = flow_hash_with(link, data, opts);
    let _ = is_fragment(link, data);
    Ok(())
}

#[test]
fn decode_packets() {
    fuzz(Target {
        name: "decode",
        seeds: packet_seeds(),
        mutate: &|rng, seeds| {
            let mut input = mutate::mutate_bytes(
                rng,
                seeds,
                &[
                    b"\x08\x00\x45\x00",
                    b"\x86\xdd\x60\x00",
                    b"\x81\x00",
                    b"\x88\xa8",
                    b"\x12\xb5",
                    b"\x65\x58",
                    b"\x00\x00\x08\x00",
                ],
            );
            if rng.chance(4) {
                if let Some(first) = input.first_mut() {
                    *first = rng.byte();
                }
            }
            input
        },
        check: &check_decode,
    });
}

// ---------------------------------------------------------------- reject replies

/// The packet seeds' selector byte picks the link type, as for decoding; its high bits pick
/// the reject target. Every reply must decode as IP, with right checksums, toward the address
/// it names, and no larger than an ICMPv6 error within the IPv6 minimum MTU (plus link header).
fn check_reject(input: &[u8]) -> Result<(), String> {
    use picket::inspect::{Reject, RejectReply, RejectTarget};
    let Some((&sel, data)) = input.split_first() else { return Ok(()) };
    let link = LINK_TYPES[sel as usize % LINK_TYPES.len()];
    let to = [RejectTarget::Source, RejectTarget::Destination, RejectTarget::Both][(sel >> 4) as usize % 3];
    let reply = if sel & 0x80 == 0 { RejectReply::TcpReset } else { RejectReply::IcmpUnreachable };
    let mut out = Vec::new();
    let Ok(n) = picket::reject::replies(link, data, Reject { reply, to }, &mut out) else { return Ok(()) };
    ensure(n == out.len() && n <= 2, || format!("{n} replies, {} appended", out.len()))?;
    for r in &out {
        ensure(r.frame.len() <= 1280 + 22, || format!("a {}-byte reply", r.frame.len()))?;
        let d = decode(link, &r.frame, &DecodeOptions::default());
        ensure(!d.bad_checksum, || "a reply with a wrong checksum".into())?;
        let dst = d.tuple().map(|t| t.dst_ip());
        ensure(dst == Some(r.dst), || format!("reply to {:?} says {}", dst, r.dst))?;
    }
    Ok(())
}

#[test]
fn reject_replies() {
    fuzz(Target {
        name: "reject",
        seeds: packet_seeds(),
        mutate: &|rng, seeds| {
            let mut input = mutate::mutate_bytes(rng, seeds, &[b"\x08\x00\x45\x00", b"\x86\xdd\x60\x00", b"\x81\x00"]);
            if rng.chance(4) {
                if let Some(first) = input.first_mut() {
                    *first = rng.byte();
                }
            }
            input
        },
        check: &check_reject,
    });
}

// ---------------------------------------------------------------- capture files

fn check_capture(input: &[u8]) -> Result<(), String> {
    let buffer_len = [16usize, 100, 4096, 128 * 1024][input.len() % 4];
    let mut source = match open_reader(Cursor::new(input.to_vec()), Path::new("fuzz.pcap"), buffer_len) {
        Ok(s) => s,
        Err(e) => return ensure(!e.to_string().is_empty(), || "open error without a reason".into()),
    };
    let mut packets = 0usize;
    loop {
        match source.next_packet() {
            Ok(Some(p)) => {
                packets += 1;
                ensure(p.data.len() <= MAX_CAPLEN as usize, || {
                    format!("packet of {} bytes over MAX_CAPLEN", p.data.len())
                })?;
                // A packet's bytes are in the file; a record cannot produce more packets
                // than the file has bytes.
                ensure(packets <= input.len() / 8 + 1, || format!("{packets} packets from {} bytes", input.len()))?;
            }
            Ok(None) => break,
            Err(e) => {
                let text = e.to_string();
                ensure(text.contains("fuzz.pcap") && text.len() > "fuzz.pcap: ".len(), || {
                    format!("error without file or reason: {text:?}")
                })?;
                // The contract: after an error a single-file source ends.
                return match source.next_packet() {
                    Ok(None) => Ok(()),
                    Ok(Some(_)) => Err(format!("packets after the error {text:?}")),
                    Err(e2) => Err(format!("a second error after {text:?}: {e2}")),
                };
            }
        }
    }
    Ok(())
}

#[test]
fn capture_files() {
    fuzz(Target {
        name: "capture",
        seeds: file_seeds(),
        mutate: &|rng, seeds| {
            if rng.chance(2) {
                mutate::capture(rng, seeds, &[])
            } else {
                mutate::mutate_bytes(
                    rng,
                    seeds,
                    &[
                        b"\x0a\x0d\x0d\x0a",
                        b"\x4d\x3c\x2b\x1a",
                        b"\x1a\x2b\x3c\x4d",
                        b"\xd4\xc3\xb2\xa1",
                        b"\x06\x00\x00\x00",
                        b"\x01\x00\x00\x00",
                        b"\x09\x00\x01\x00",
                    ],
                )
            }
        },
        check: &check_capture,
    });
}

// ---------------------------------------------------------------- IP defragmentation

fn check_defrag(input: &[u8]) -> Result<(), String> {
    let Some(cap) = corpus::parse_pcap(input) else { return Ok(()) };
    let h = fnv(input);
    let policies = [
        DefragPolicy::Bsd,
        DefragPolicy::Linux,
        DefragPolicy::First,
        DefragPolicy::Last,
        DefragPolicy::Windows,
        DefragPolicy::Solaris,
    ];
    let cfg = if h & 1 == 0 {
        DefragConfig { policy: policies[(h >> 8) as usize % 6], ..DefragConfig::default() }
    } else {
        // Tight limits, so every limit path runs.
        DefragConfig {
            memcap: 3000,
            timeout_secs: 2,
            max_frags: 8,
            max_trackers: 3,
            policy: policies[(h >> 8) as usize % 6],
        }
    };
    let link = LinkType::from_pcap(cap.linktype);
    let mut d = Defragmenter::new(cfg);
    let mut out = Vec::new();
    let mut last = Timestamp(0);
    for p in &cap.packets {
        let ts = Timestamp::from_parts(p.ts_sec as u64, p.ts_frac % 1_000_000_000);
        last = last.max(ts);
        out.clear();
        let outcome = d.offer(link, &p.data, ts, &mut out);
        ensure(d.memuse() <= cfg.memcap, || format!("defrag memuse {} over memcap {}", d.memuse(), cfg.memcap))?;
        ensure(d.trackers() <= cfg.max_trackers, || format!("{} trackers over {}", d.trackers(), cfg.max_trackers))?;
        if outcome == DefragOutcome::Reassembled {
            // Link header + IP header(s) + at most 65535 bytes of datagram.
            ensure(out.len() <= p.data.len() + 65_535, || format!("reassembled {} bytes", out.len()))?;
            // (It may still be a fragment: a Fragment header inside the reassembled payload.)
            let whole = decode(link, &out, &DecodeOptions::default());
            ensure(whole.ip.is_some(), || "a reassembled datagram has no IP layer".into())?;
        }
    }
    d.expire(Timestamp(last.0.saturating_add(3600 * Timestamp::NANOS_PER_SEC)));
    ensure(d.memuse() == 0 && d.trackers() == 0, || {
        format!("after expiry: memuse {} trackers {}", d.memuse(), d.trackers())
    })
}

fn fragment_seeds() -> Vec<Vec<u8>> {
    // Captures with fragments, plus small captures that the mutator fragments itself.
    let c = corpus::corpus();
    let mut seeds: Vec<Vec<u8>> = c.files.iter().filter(|f| f.len() < 8192).cloned().collect();
    for cap in &c.captures {
        let link = LinkType::from_pcap(cap.linktype);
        if cap.packets.iter().any(|p| is_fragment(link, &p.data)) {
            seeds.push(corpus::write_pcap(&corpus::Capture {
                packets: cap.packets.iter().take(200).cloned().collect(),
                ..cap.clone()
            }));
        }
    }
    seeds
}

#[test]
fn defrag() {
    fuzz(Target {
        name: "defrag",
        seeds: fragment_seeds(),
        mutate: &|rng, seeds| mutate::capture(rng, seeds, &[]),
        check: &check_defrag,
    });
}

// ---------------------------------------------------------------- TCP reassembly

/// The flow's TCP session and its reassembly, fed as the inspector feeds them: the session
/// first, then reassembly reading the updated session. `dir` is taken as the session's
/// role as given (a role swap the session asks for is not applied: more combinations).
struct TcpFlow {
    session: TcpSession,
    r: TcpReassembly,
}

impl TcpFlow {
    fn new(cfg: StreamConfig) -> Self {
        TcpFlow { session: TcpSession::default(), r: TcpReassembly::new(cfg) }
    }

    fn on_segment(
        &mut self,
        dir: Direction,
        seg: &Segment<'_>,
        tcp: TcpConfig,
        mem: &mut ReassemblyMemory,
    ) -> SegmentOutcome {
        let flow_seg = TcpSegment { flags: seg.flags.0, seq: seg.seq, ack: seg.ack, window: seg.window };
        self.session.on_segment(&flow_seg, seg.payload.len() as u32, dir == Direction::ToServer, tcp);
        self.r.on_segment(dir, seg, self.session.stream(), mem)
    }
}

fn stream_config(b: &mut Bytes<'_>) -> (StreamConfig, TcpConfig, u64) {
    let c = b.u8();
    let d = b.u8();
    let policies = ["bsd", "linux", "old-linux", "first", "last", "windows", "vista", "solaris", "hpux10", "macos"];
    let policy = OverlapPolicy::from_name(policies[d as usize % policies.len()]).unwrap_or(OverlapPolicy::Bsd);
    let cfg = StreamConfig {
        depth: [0, 64, 1000, 1024 * 1024][(c & 3) as usize],
        policy,
        inline: c & 4 != 0,
        async_oneside: c & 16 != 0,
        toserver_chunk_size: [1, 16, 300, 2560][(d >> 4 & 3) as usize],
        toclient_chunk_size: [1, 16, 300, 2560][(d >> 6) as usize],
        lookback: if c & 32 != 0 { 8 } else { 0 },
        app_layer: c & 64 != 0,
        // A tight region limit for some inputs, so segments are also refused for it.
        max_regions: if d & 8 != 0 { 3 } else { StreamConfig::DEFAULT_MAX_REGIONS },
    };
    let tcp = TcpConfig { midstream: c & 8 != 0, async_oneside: c & 16 != 0, reassembly_depth: cfg.depth };
    let memcap = if c & 128 != 0 { 600 } else { 64 * 1024 };
    (cfg, tcp, memcap)
}

/// Per-flow stream bytes are a fixed function of the offset, so retransmissions carry the
/// same bytes unless the input asks for different ones.
fn stream_byte(dir: usize, off: u64) -> u8 {
    (off.wrapping_mul(31).wrapping_add(dir as u64 * 7) % 251) as u8
}

fn check_chunk(c: &picket::stream::StreamChunk<'_>) -> Result<(), String> {
    let end = c.offset + c.data.len() as u64;
    ensure(c.offset <= c.new_start && c.new_start <= c.new_end && c.new_end <= end, || {
        format!("chunk offset {} len {} new {}..{}", c.offset, c.data.len(), c.new_start, c.new_end)
    })?;
    let _ = c.new_data();
    Ok(())
}

/// Arbitrary segment sequences on two flows sharing one memory budget: random sequence
/// numbers, lengths, overlaps with same or different data, retransmissions, gaps, RST/FIN,
/// both directions, inspection and app-layer consumption at any point.
fn check_stream(input: &[u8]) -> Result<(), String> {
    let mut b = Bytes(input);
    let (cfg, tcp, memcap) = stream_config(&mut b);
    let mut mem = ReassemblyMemory::new(memcap);
    let mut flows = [TcpFlow::new(cfg), TcpFlow::new(cfg)];
    let isn = [b.u32(), b.u32()];
    let mut steps = 0;
    while !b.is_empty() && steps < 2000 {
        steps += 1;
        let op = b.u8();
        let f = (op >> 7) as usize;
        let dir = if op & 0x40 != 0 { Direction::ToClient } else { Direction::ToServer };
        let di = dir.index();
        let TcpFlow { r: flow, .. } = &mut flows[f];
        match op & 7 {
            0..=3 => {
                let flags = TcpFlags(b.u8() & 0x1f | if op & 0x20 != 0 { TcpFlags::ACK } else { 0 });
                let rel = b.u16() as u32;
                let seq = if op & 8 != 0 { b.u32() } else { isn[di].wrapping_add(rel.wrapping_sub(16)) };
                let ack = isn[1 - di].wrapping_add(b.u16() as u32);
                let len = (b.u8() as usize) * if op & 16 != 0 { 8 } else { 1 };
                let base = seq.wrapping_sub(isn[di]).wrapping_sub(1) as u64;
                let differ = op & 3 == 3;
                let payload: Vec<u8> =
                    (0..len as u64).map(|i| stream_byte(di, base + i) ^ if differ { 0x55 } else { 0 }).collect();
                let seg = Segment { seq, ack, flags, window: 65535, payload: &payload };
                flows[f].on_segment(dir, &seg, tcp, &mut mem);
            }
            4 => {
                let mut err = Ok(());
                flow.inspect_raw(dir, &mut mem, |c| {
                    if err.is_ok() {
                        err = check_chunk(&c);
                    }
                });
                err?;
            }
            5 if cfg.app_layer => {
                let upto = match flow.app_data(dir) {
                    Some(AppData::Data { offset, data }) => offset + data.len().min(b.u8() as usize + 1) as u64,
                    Some(AppData::Gap { offset, len }) => offset + len,
                    None => 0,
                };
                flow.app_consume(dir, upto, &mut mem);
            }
            6 => flow.trigger_raw(dir),
            7 => flow.close(),
            _ => {}
        }
        ensure(mem.used() <= memcap, || format!("reassembly memory {} over memcap {memcap}", mem.used()))?;
    }
    for TcpFlow { r: flow, .. } in &mut flows {
        flow.close();
        for dir in [Direction::ToServer, Direction::ToClient] {
            let mut err = Ok(());
            flow.inspect_raw(dir, &mut mem, |c| {
                if err.is_ok() {
                    err = check_chunk(&c);
                }
            });
            err?;
        }
    }
    ensure(mem.peak() <= memcap, || format!("peak {} over memcap {memcap}", mem.peak()))?;
    for TcpFlow { r: flow, .. } in &mut flows {
        flow.release(&mut mem);
    }
    ensure(mem.used() == 0, || format!("{} bytes still charged after both flows were released", mem.used()))
}

#[test]
fn stream_segments() {
    fuzz(Target {
        name: "stream",
        seeds: Vec::new(),
        mutate: &|rng, _| {
            let n = 8 + rng.small(600);
            (0..n).map(|_| rng.byte()).collect()
        },
        check: &check_stream,
    });
}

/// Property: a stream cut into non-overlapping segments (plus exact retransmissions),
/// delivered in any order inside the window and then acknowledged, is reassembled into
/// exactly the original bytes, for detection (`inspect_raw`) and for the app layer.
fn check_stream_reorder(input: &[u8]) -> Result<(), String> {
    let mut b = Bytes(input);
    let c = b.u8();
    let isn = b.u32();
    let len = 1 + (b.u16() as usize % 6000);
    let inline = c & 1 != 0;
    let app_layer = c & 2 != 0;
    let cfg = StreamConfig {
        depth: 0,
        inline,
        app_layer,
        toserver_chunk_size: [1, 100, 2560, 4000][(c >> 2 & 3) as usize],
        policy: OverlapPolicy::from_name(["bsd", "first", "last", "linux"][(c >> 4 & 3) as usize])
            .unwrap_or(OverlapPolicy::Bsd),
        ..StreamConfig::default()
    };
    let stream: Vec<u8> = (0..len as u64).map(|i| stream_byte(0, i) ^ (i >> 8) as u8).collect();
    let mut rng = Rng::new(fnv(input));
    let mut cuts = vec![0usize, len];
    for _ in 0..rng.small(len.min(200)) {
        cuts.push(rng.below(len));
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut segs: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    for _ in 0..rng.small(segs.len()) {
        let dup = *rng.pick(&segs);
        segs.push(dup);
    }
    for i in (1..segs.len()).rev() {
        segs.swap(i, rng.below(i + 1));
    }

    let mut mem = ReassemblyMemory::new(1 << 30);
    let mut flow = TcpFlow::new(cfg);
    let tcp = TcpConfig { reassembly_depth: cfg.depth, ..TcpConfig::default() };
    let server_isn = 7_000u32;
    let syn = |seq, ack, flags| Segment { seq, ack, flags: TcpFlags(flags), window: 65535, payload: &[] };
    flow.on_segment(Direction::ToServer, &syn(isn, 0, TcpFlags::SYN), tcp, &mut mem);
    flow.on_segment(
        Direction::ToClient,
        &syn(server_isn, isn.wrapping_add(1), TcpFlags::SYN | TcpFlags::ACK),
        tcp,
        &mut mem,
    );
    flow.on_segment(
        Direction::ToServer,
        &syn(isn.wrapping_add(1), server_isn.wrapping_add(1), TcpFlags::ACK),
        tcp,
        &mut mem,
    );

    // What detection saw: every chunk's bytes must be the original ones at that offset, the
    // new parts together must cover the stream, and in IDS mode they come in order.
    let mut covered = vec![false; len];
    let mut progress = 0u64;
    let mut app: Vec<u8> = Vec::new();
    let collect = |r: &mut TcpReassembly,
                   mem: &mut ReassemblyMemory,
                   covered: &mut Vec<bool>,
                   progress: &mut u64,
                   app: &mut Vec<u8>|
     -> Result<(), String> {
        let mut err = Ok(());
        r.inspect_raw(Direction::ToServer, mem, |c| {
            if err.is_err() {
                return;
            }
            err = check_chunk(&c).and_then(|()| {
                let end = c.offset as usize + c.data.len();
                ensure(end <= len && c.data == &stream[c.offset as usize..end], || {
                    format!("chunk at {} ({} bytes) differs from the stream", c.offset, c.data.len())
                })?;
                if !inline {
                    ensure(c.new_start == *progress && c.gap_before == 0, || {
                        format!(
                            "IDS chunk new {}..{} after progress {} (gap {})",
                            c.new_start, c.new_end, progress, c.gap_before
                        )
                    })?;
                    *progress = c.new_end;
                }
                covered[c.new_start as usize..c.new_end as usize].fill(true);
                Ok(())
            });
        });
        err?;
        if app_layer {
            while let Some(d) = r.app_data(Direction::ToServer) {
                match d {
                    AppData::Data { offset, data } => {
                        ensure(offset == app.len() as u64, || format!("app data at {offset}, expected {}", app.len()))?;
                        app.extend_from_slice(data);
                        r.app_consume(Direction::ToServer, offset + data.len() as u64, mem);
                    }
                    AppData::Gap { offset, len } => {
                        return Err(format!("app-layer gap of {len} at {offset} in a stream without holes"))
                    }
                }
            }
        }
        Ok(())
    };
    for (start, end) in &segs {
        let seg = Segment {
            seq: isn.wrapping_add(1).wrapping_add(*start as u32),
            ack: server_isn.wrapping_add(1),
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            window: 65535,
            payload: &stream[*start..*end],
        };
        flow.on_segment(Direction::ToServer, &seg, tcp, &mut mem);
        collect(&mut flow.r, &mut mem, &mut covered, &mut progress, &mut app)?;
    }
    // The server acknowledges everything, then the client sends one more empty ACK, which
    // is when IDS mode inspects.
    flow.on_segment(
        Direction::ToClient,
        &syn(server_isn.wrapping_add(1), isn.wrapping_add(1 + len as u32), TcpFlags::ACK),
        tcp,
        &mut mem,
    );
    flow.on_segment(
        Direction::ToServer,
        &syn(isn.wrapping_add(1 + len as u32), server_isn.wrapping_add(1), TcpFlags::ACK),
        tcp,
        &mut mem,
    );
    let r = &mut flow.r;
    collect(r, &mut mem, &mut covered, &mut progress, &mut app)?;
    r.close();
    collect(r, &mut mem, &mut covered, &mut progress, &mut app)?;
    r.release(&mut mem);
    ensure(mem.used() == 0, || format!("{} bytes charged after release", mem.used()))?;
    let missing = covered.iter().filter(|c| !**c).count();
    ensure(missing == 0, || {
        format!(
            "{missing} of {len} bytes never inspected, first at {:?} ({} segments, cfg {c:#x})",
            covered.iter().position(|c| !c),
            segs.len()
        )
    })?;
    ensure(!app_layer || app == stream, || {
        format!(
            "app layer got {} of {len} bytes, first difference at {:?}",
            app.len(),
            app.iter().zip(&stream).position(|(a, b)| a != b)
        )
    })
}

#[test]
fn stream_reorder() {
    fuzz(Target {
        name: "stream_reorder",
        seeds: Vec::new(),
        mutate: &|rng, _| (0..16).map(|_| rng.byte()).collect(),
        check: &check_stream_reorder,
    });
}

// ---------------------------------------------------------------- HTTP

fn http_config(sel: u64) -> HttpConfig {
    if sel & 1 == 0 {
        return HttpConfig::default();
    }
    HttpConfig {
        request_body_limit: [0, 10, 1000][(sel >> 1) as usize % 3],
        response_body_limit: [0, 10, 1000][(sel >> 3) as usize % 3],
        decompress_response: sel & 32 != 0,
        decompress_request: sel & 64 != 0,
        decompress_layer_limit: [0, 1, 2][(sel >> 7) as usize % 3],
        compression_bomb_limit: [100, 1 << 20][(sel >> 9) as usize % 2],
        compression_bomb_ratio: [2, 2048][(sel >> 10) as usize % 2],
        field_limit: [20, 200, 18000][(sel >> 11) as usize % 3],
        max_headers: [1, 4, 1024][(sel >> 13) as usize % 3],
        max_tx: [1, 3, 512][(sel >> 15) as usize % 3],
        // Bodies as files, hashed or not (the tracking must hold on any input too).
        files: FileConfig { enabled: sel & (1 << 17) != 0, md5: sel & (1 << 18) != 0, sha1: false, sha256: true },
        smtp: Default::default(),
    }
}

fn http_dir(to_server: bool) -> Direction {
    if to_server {
        Direction::ToServer
    } else {
        Direction::ToClient
    }
}

/// Feeds a session; `split` re-cuts each data record into pieces of that size.
fn run_http(
    recs: &[Rec],
    cfg: HttpConfig,
    split: Option<usize>,
    prune: bool,
) -> Result<(HttpParser, Vec<String>), String> {
    let mut p = HttpParser::new(cfg);
    let mut events = Vec::new();
    let mut buf = Vec::new();
    for r in recs {
        match r {
            Rec::Data { to_server, bytes } => match split {
                Some(n) => {
                    for piece in bytes.chunks(n.max(1)) {
                        p.on_data(http_dir(*to_server), piece, &mut |e| events.push(format!("{e:?}")));
                    }
                }
                None => p.on_data(http_dir(*to_server), bytes, &mut |e| events.push(format!("{e:?}"))),
            },
            Rec::Gap { to_server, len } => {
                p.on_gap(http_dir(*to_server), *len as u64, &mut |e| events.push(format!("{e:?}")))
            }
            Rec::Close => p.on_close(&mut |e| events.push(format!("{e:?}"))),
        }
        // The transactions a record can change are the newest ones; all are checked at the end.
        let live = p.txs().count();
        for tx in p.txs().skip(live.saturating_sub(2)) {
            check_http_tx(tx, &cfg, &mut buf)?;
        }
        ensure(live <= cfg.max_tx, || format!("{live} live transactions, max_tx {}", cfg.max_tx))?;
        if prune {
            p.prune_completed();
        }
    }
    for tx in p.txs() {
        check_http_tx(tx, &cfg, &mut buf)?;
    }
    Ok((p, events))
}

fn check_http_tx(tx: &picket::applayer::http::HttpTx, cfg: &HttpConfig, buf: &mut Vec<u8>) -> Result<(), String> {
    {
        {
            ensure(tx.request_body.len() <= cfg.request_body_limit, || {
                format!("request body {} over limit {}", tx.request_body.len(), cfg.request_body_limit)
            })?;
            ensure(tx.response_body.len() <= cfg.response_body_limit, || {
                format!("response body {} over limit {}", tx.response_body.len(), cfg.response_body_limit)
            })?;
            for dir in [Direction::ToServer, Direction::ToClient] {
                let n = tx.headers(dir).len();
                ensure(n <= cfg.max_headers, || format!("{n} headers kept, limit {}", cfg.max_headers))?;
                buf.clear();
                tx.header_buffer(dir, buf);
                tx.header_names_buffer(dir, buf);
                tx.start_buffer(dir, buf);
            }
            // A line or header block is never longer than the field limit (plus its ending).
            for (what, len) in [
                ("request line", tx.request_line.len()),
                ("response line", tx.response_line.len()),
                ("request headers", tx.request_headers_raw.len()),
                ("response headers", tx.response_headers_raw.len()),
            ] {
                ensure(len <= cfg.field_limit + 4, || {
                    format!("{what} of {len} bytes kept, field limit {}", cfg.field_limit)
                })?;
            }
            let _ = (tx.user_agent(), tx.cookie(), tx.content_type(Direction::ToClient), tx.is_complete());
        }
    }
    Ok(())
}

fn has_gap(recs: &[Rec]) -> bool {
    recs.iter().any(|r| matches!(r, Rec::Gap { .. }))
}

fn check_http(input: &[u8]) -> Result<(), String> {
    let recs = decode_session(input);
    let sel = fnv(input);
    let cfg = http_config(sel);
    let (_whole, events) = run_http(&recs, cfg, None, sel & (1 << 20) != 0)?;
    // Split-independence: the parser promises the same transactions however the stream is
    // cut. Checked without pruning (so both runs keep everything) on a share of inputs, and
    // only without gaps: whether a gap can be skipped depends on what is buffered.
    if sel & (3 << 21) == 0 && sel & (1 << 20) == 0 && !has_gap(&recs) {
        let n = [1usize, 2, 3, 7, 64][(sel >> 23) as usize % 5];
        // Data after `on_close` is outside the contract (a closed parser treats every piece
        // as a last, unterminated line): compare up to the close.
        let upto = recs.iter().position(|r| *r == Rec::Close).map_or(recs.len(), |i| i + 1);
        let recs = &recs[..upto];
        let (whole, _) = run_http(recs, cfg, None, false)?;
        let (pieces, _) = run_http(recs, cfg, Some(n), false)?;
        // The bomb check compares decoded with encoded bytes *so far*, so where it trips
        // depends on the cut; libhtp behaves the same. Not compared.
        if whole.counters().decompression_bombs + pieces.counters().decompression_bombs > 0 {
            return Ok(());
        }
        let a: Vec<String> = whole.txs().map(|t| format!("{t:?}")).collect();
        let b: Vec<String> = pieces.txs().map(|t| format!("{t:?}")).collect();
        if a != b {
            let i = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            let (x, y) = (a.get(i).map_or("-", |s| s.as_str()), b.get(i).map_or("-", |s| s.as_str()));
            // Show where the two debug dumps part, with the field name before it.
            let at = x.bytes().zip(y.bytes()).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
            let from = x[..at].rfind(", ").map_or(0, |f| f + 2).min(at);
            let clip = |s: &str| s.get(from..(at + 120).min(s.len())).unwrap_or("").to_string();
            return Err(format!(
                "transactions differ when fed in {n}-byte pieces ({} vs {} txs), tx #{i} from {:?}:\nwhole:  {}\npieces: {}",
                a.len(),
                b.len(),
                x.get(from..at).unwrap_or("").split(':').next().unwrap_or(""),
                clip(x),
                clip(y)
            ));
        }
    }
    let _ = events;
    Ok(())
}

#[test]
fn http() {
    fuzz(Target {
        name: "http",
        seeds: session_seeds(SessionKind::Http),
        mutate: &|rng, seeds| mutate::session(rng, seeds, mutate::HTTP_DICT),
        check: &check_http,
    });
}

// ---------------------------------------------------------------- DNS

/// Checks the transaction limit, and the eve output of transactions from id `from` on (each
/// is checked once, as it appears).
fn check_dns_tx(state: &DnsState, cfg: &DnsConfig, from: &mut u64) -> Result<(), String> {
    let n = state.transactions().count();
    ensure(n <= cfg.max_transactions, || format!("{n} DNS transactions kept, max {}", cfg.max_transactions))?;
    let first_new = *from;
    *from = state.next_tx_id();
    for tx in state.transactions().filter(|t| t.tx_id >= first_new) {
        let out = eve_object(|o| tx.write_record(o));
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&out) {
            return Err(format!("eve dns object is not JSON ({e}): {}", String::from_utf8_lossy(&out)));
        }
        let _ =
            (tx.query_names().count(), tx.answer_names().count(), tx.query_rrtypes().count(), tx.opcode(), tx.rcode());
    }
    Ok(())
}

fn dns_config(sel: u64) -> DnsConfig {
    if sel & 1 == 0 {
        DnsConfig::default()
    } else {
        DnsConfig { max_transactions: 2, max_records_per_section: 1, max_pending_requests: 1 }
    }
}

fn check_dns_udp(input: &[u8]) -> Result<(), String> {
    let cfg = dns_config(fnv(input));
    let mut state = DnsState::new(cfg.clone());
    let mut counters = DnsCounters::default();
    let mut checked = 0;
    for r in decode_session(input) {
        if let Rec::Data { to_server, bytes } = r {
            state.parse_udp(http_dir(to_server), &bytes, &mut counters);
            // The stateless pieces on the same bytes.
            let _ = dns::parse_message(&bytes, cfg.max_records_per_section);
            let _ = dns::probe_message(&bytes, bytes.len());
            if bytes.len() > 12 {
                let _ = dns::parse_name(&bytes, 12 + bytes[0] as usize % (bytes.len() - 12));
            }
        }
        check_dns_tx(&state, &cfg, &mut checked)?;
    }
    Ok(())
}

#[test]
fn dns_udp() {
    fuzz(Target {
        name: "dns_udp",
        seeds: session_seeds(SessionKind::DnsUdp),
        mutate: &|rng, seeds| mutate::session(rng, seeds, mutate::DNS_DICT),
        check: &check_dns_udp,
    });
}

fn run_dns_tcp(recs: &[Rec], cfg: &DnsConfig, split: Option<usize>) -> Result<DnsState, String> {
    let mut state = DnsState::new(cfg.clone());
    let mut counters = DnsCounters::default();
    let mut checked = 0;
    for r in recs {
        match r {
            Rec::Data { to_server, bytes } => {
                for piece in bytes.chunks(split.unwrap_or(usize::MAX).max(1)) {
                    state.parse_tcp(http_dir(*to_server), piece, &mut counters);
                }
            }
            Rec::Gap { to_server, .. } => state.on_gap(http_dir(*to_server)),
            Rec::Close => {}
        }
        check_dns_tx(&state, cfg, &mut checked)?;
    }
    Ok(state)
}

/// DNS over TCP, as length-prefixed frames. Seeds: the UDP messages framed, plus real TCP
/// DNS sessions.
fn check_dns_tcp(input: &[u8]) -> Result<(), String> {
    let sel = fnv(input);
    let cfg = dns_config(sel);
    let recs = decode_session(input);
    let whole = run_dns_tcp(&recs, &cfg, None)?;
    // Split-independence, for sessions without gaps: after a gap the parser resumes at a
    // segment start that looks like a frame, so there the cut rightly matters.
    if sel & 6 == 0 && !has_gap(&recs) {
        let n = [1usize, 2, 5, 100][(sel >> 3) as usize % 4];
        let pieces = run_dns_tcp(&recs, &cfg, Some(n))?;
        let a: Vec<_> = whole.transactions().collect();
        let b: Vec<_> = pieces.transactions().collect();
        ensure(a == b, || {
            format!("DNS/TCP transactions differ when fed in {n}-byte pieces: {} vs {}", a.len(), b.len())
        })?;
    }
    Ok(())
}

fn dns_tcp_seeds() -> Vec<Vec<u8>> {
    let mut seeds = session_seeds(SessionKind::DnsTcp);
    for s in session_seeds(SessionKind::DnsUdp) {
        let framed: Vec<Rec> = decode_session(&s)
            .into_iter()
            .map(|r| match r {
                Rec::Data { to_server, bytes } => {
                    let mut b = (bytes.len() as u16).to_be_bytes().to_vec();
                    b.extend_from_slice(&bytes);
                    Rec::Data { to_server, bytes: b }
                }
                other => other,
            })
            .collect();
        seeds.push(corpus::encode_session(&framed));
    }
    seeds
}

#[test]
fn dns_tcp() {
    fuzz(Target {
        name: "dns_tcp",
        seeds: dns_tcp_seeds(),
        mutate: &|rng, seeds| mutate::session(rng, seeds, mutate::DNS_DICT),
        check: &check_dns_tcp,
    });
}

// ---------------------------------------------------------------- TLS

fn run_tls(recs: &[Rec], cfg: &TlsConfig, split: Option<usize>) -> Result<TlsState, String> {
    let mut state = TlsState::new(cfg.clone());
    let mut counters = TlsCounters::default();
    for r in recs {
        match r {
            Rec::Data { to_server, bytes } => {
                for piece in bytes.chunks(split.unwrap_or(usize::MAX).max(1)) {
                    state.parse(http_dir(*to_server), piece, &mut counters);
                }
            }
            Rec::Gap { to_server, .. } => state.on_gap(http_dir(*to_server), &mut counters),
            Rec::Close => {}
        }
        for dir in [Direction::ToServer, Direction::ToClient] {
            let certs = state.certificates(dir);
            ensure(certs.len() <= cfg.max_certs, || {
                format!("{} certificates kept, max {}", certs.len(), cfg.max_certs)
            })?;
            let stored: usize = certs.iter().map(|c| c.der.len()).sum();
            ensure(stored <= cfg.max_cert_bytes, || {
                format!("{stored} certificate bytes kept, max {}", cfg.max_cert_bytes)
            })?;
        }
    }
    let out = eve_object(|o| state.write_record(o, true, |_| String::new()));
    {
        serde_json::from_slice::<serde_json::Value>(&out)
            .map_err(|e| format!("eve tls object is not JSON ({e}): {}", String::from_utf8_lossy(&out)))?;
    }
    let _ = (
        state.sni(),
        state.ja3(),
        state.ja3s(),
        state.client_alpns(),
        state.server_alpn(),
        state.version(),
        state.server_cert(),
        state.handshake_done(),
    );
    Ok(state)
}

/// A protocol record written as the eve JSON object it becomes.
fn eve_object(write: impl FnOnce(&mut JsonObject<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut o = JsonObject::begin(&mut out);
    write(&mut o);
    o.finish();
    out
}

fn check_tls(input: &[u8]) -> Result<(), String> {
    let sel = fnv(input);
    let cfg = if sel & 1 == 0 {
        TlsConfig::default()
    } else {
        TlsConfig { max_handshake_len: 300, max_cert_bytes: 500, max_certs: 1 }
    };
    let recs = decode_session(input);
    let whole = run_tls(&recs, &cfg, None)?;
    if sel & 6 == 0 && !has_gap(&recs) {
        let n = [1usize, 3, 5, 1000][(sel >> 3) as usize % 4];
        let pieces = run_tls(&recs, &cfg, Some(n))?;
        let a = eve_object(|o| whole.write_record(o, true, |_| String::new()));
        let b = eve_object(|o| pieces.write_record(o, true, |_| String::new()));
        ensure(a == b, || {
            format!(
                "TLS state differs when fed in {n}-byte pieces:\n{}\n{}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            )
        })?;
    }
    Ok(())
}

#[test]
fn tls() {
    fuzz(Target {
        name: "tls",
        seeds: session_seeds(SessionKind::Tls),
        mutate: &|rng, seeds| mutate::session(rng, seeds, mutate::TLS_DICT),
        check: &check_tls,
    });
}

// ---------------------------------------------------------------- protocol probing

fn check_probe(input: &[u8]) -> Result<(), String> {
    let sel = fnv(input);
    let transport = if sel & 1 == 0 { Transport::Tcp } else { Transport::Udp };
    let ports = [(40000, 80), (40000, 53), (53, 40000), (40000, 443), (40000, 25), (21, 40000), (1, 1)]
        [(sel >> 1) as usize % 7];
    let mut det = ProtoDetector::new([0usize, 1, 16, 4096][(sel >> 4) as usize % 4]);
    let mut seen = [Vec::new(), Vec::new()];
    let mut detected = None;
    for r in decode_session(input) {
        let status = match r {
            Rec::Data { to_server, bytes } => {
                let dir = http_dir(to_server);
                let _ = probe(transport, dir, &bytes, ports);
                seen[dir.index()].extend_from_slice(&bytes);
                det.on_data(transport, dir, &seen[dir.index()], ports)
            }
            Rec::Gap { to_server, .. } => det.direction_finished(http_dir(to_server)),
            Rec::Close => det.status(),
        };
        // Once detected, the verdict stays.
        if let Some(p) = detected {
            ensure(status == DetectStatus::Detected(p), || format!("detected {p:?}, then {status:?}"))?;
        }
        if let DetectStatus::Detected(p) = status {
            detected = Some(p);
        }
    }
    Ok(())
}

#[test]
fn probe_protocols() {
    fuzz(Target {
        name: "probe",
        seeds: session_seeds(SessionKind::Any).into_iter().step_by(3).collect(),
        mutate: &|rng, seeds| {
            let dicts: [&[&[u8]]; 3] =
                [mutate::HTTP_DICT, mutate::TLS_DICT, &[b"SSH-2.0-", b"220 ", b"EHLO ", b"USER ", b"HTTP/1."]];
            let dict = dicts[rng.below(3)];
            mutate::session(rng, seeds, dict)
        },
        check: &check_probe,
    });
}

// ---------------------------------------------------------------- rules

fn detect_config() -> DetectConfig {
    DetectConfig { matchers: Arc::new(AcBuilder), ..DetectConfig::default() }
}

/// Arbitrary rule text never panics; an error carries a reason; a rule that parses also
/// builds into an engine (now and then, building costs more than parsing).
fn check_rule(input: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(input);
    let vars = RuleVars::default();
    for line in text.lines().take(20) {
        match parse_rule(line, &vars) {
            Ok(rule) => {
                if fnv(line.as_bytes()).is_multiple_of(8) {
                    if let Err(e) = DetectEngine::build(vec![rule], &detect_config()) {
                        ensure(!e.trim().is_empty(), || "engine build error without a reason".into())?;
                    }
                }
            }
            Err(e) => ensure(!e.to_string().trim().is_empty(), || format!("error without a reason for {line:?}"))?,
        }
    }
    let load = load_rules_str("fuzz.rules", &text, &vars);
    for e in &load.errors {
        ensure(!e.error.to_string().trim().is_empty(), || format!("load error at line {} without a reason", e.line))?;
    }
    Ok(())
}

#[test]
fn rules() {
    let c = corpus::corpus();
    fuzz(Target {
        name: "rule",
        seeds: c.rules.iter().map(|r| r.as_bytes().to_vec()).collect(),
        mutate: &|rng, seeds| {
            let mut v = mutate::mutate_bytes(rng, seeds, mutate::RULE_DICT);
            // Options of one rule grafted into another.
            if rng.chance(4) {
                let other = rng.pick(seeds);
                if let (Some(a), Some(b)) = (v.iter().position(|&c| c == b'('), other.iter().position(|&c| c == b'(')) {
                    let cut = a + 1 + rng.below(v.len() - a);
                    let from = b + 1 + rng.below(other.len() - b);
                    v.truncate(cut);
                    v.extend_from_slice(&other[from..]);
                }
            }
            v
        },
        check: &check_rule,
    });
}

// ---------------------------------------------------------------- end to end

fn engine() -> Option<Arc<DetectEngine>> {
    static ENGINE: OnceLock<Option<Arc<DetectEngine>>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let text = corpus::corpus().rules.join("\n");
            let load = load_rules_str("fuzz.rules", &text, &RuleVars::default());
            match DetectEngine::build(load.rules, &detect_config()) {
                Ok((engine, _)) => Some(Arc::new(engine)),
                Err(e) => {
                    eprintln!("fuzz: no detection engine for the end-to-end target: {e}");
                    None
                }
            }
        })
        .clone()
}

fn inspect_settings(sel: u64) -> InspectSettings {
    let mut config = EngineSettings {
        midstream: sel & 1 != 0,
        async_oneside: sel & 2 != 0,
        checksum_mode: if sel & 4 != 0 { ChecksumMode::Never } else { ChecksumMode::Auto },
        ..EngineSettings::default()
    };
    if sel & 8 != 0 {
        // Tight caps: flow and stream memcaps reached on a few flows.
        config.stream_reassembly_memcap = 4096;
        config.flow_memcap = 64 * 1024;
    }
    let mut s = InspectSettings::from_engine(&config, 1, sel & 16 != 0);
    s.stream.inline = sel & 32 != 0;
    if sel & 64 == 0 {
        s.detect = engine();
    }
    s
}

/// The end-to-end inspection may cost this much per capture byte, plus the base (release
/// build): about 1/1000 of the throughput the corpus runs at, so only superlinear work fires.
const INSPECT_BUDGET: CostBudget = CostBudget { base: Duration::from_millis(100), per_unit: Duration::from_micros(10) };

/// The whole inspection core (with defragmentation before it, as the reading thread does)
/// on an arbitrary capture: no panic, every eve line is JSON, and at the end every flow is
/// gone and every byte of stream memory returned.
fn check_inspect(input: &[u8]) -> Result<(), String> {
    let Some(cap) = corpus::parse_pcap(input) else { return Ok(()) };
    let sel = fnv(input);
    let settings = inspect_settings(sel);
    let link = LinkType::from_pcap(cap.linktype);
    // The clock starts after the settings: the first call builds the shared engine.
    let started = std::time::Instant::now();
    let mut inspector = Inspector::new(&settings);
    let mut defrag = Defragmenter::new(DefragConfig::default());
    let mut rebuilt = Vec::new();
    let mut events = LogSink::new(Default::default());
    let check_events = |sink: &mut LogSink| -> Result<(), String> {
        for (_, _, line) in sink.take().lines() {
            let text = String::from_utf8_lossy(line);
            for l in text.lines().filter(|l| !l.trim().is_empty() && l.trim_start().starts_with('{')) {
                serde_json::from_str::<serde_json::Value>(l).map_err(|e| format!("eve line is not JSON ({e}): {l}"))?;
            }
        }
        Ok(())
    };
    for (i, p) in cap.packets.iter().enumerate() {
        let ts = Timestamp::from_parts(p.ts_sec as u64, p.ts_frac % 1_000_000_000);
        let meta = PacketMeta::standalone(i as u64 + 1, ts, link, p.data.len() as u32, p.data.len());
        inspector.packet(PacketRef { meta: &meta, data: &p.data }, &mut events);
        if is_fragment(link, &p.data) && defrag.offer(link, &p.data, ts, &mut rebuilt) == DefragOutcome::Reassembled {
            let meta = PacketMeta::standalone(i as u64 + 1, ts, link, rebuilt.len() as u32, rebuilt.len());
            inspector.packet(PacketRef { meta: &meta, data: &rebuilt }, &mut events);
        }
        if events.events.len() > 64 {
            check_events(&mut events)?;
        }
    }
    inspector.finish(&mut events);
    let took = started.elapsed();
    check_events(&mut events)?;
    INSPECT_BUDGET.check(&format!("inspection of a {}-byte capture", input.len()), input.len() as u64, took)?;
    let counters = inspector.counters();
    let get = |name: &str| counters.get(name).unwrap_or(0);
    ensure(get("tcp.reassembly_memuse") == 0, || {
        format!("{} bytes of stream memory still charged after finish", get("tcp.reassembly_memuse"))
    })?;
    ensure(get("flow.active") == 0, || format!("{} flows active after finish", get("flow.active")))?;
    ensure(get("decoder.pkts") >= cap.packets.len() as u64, || "packets not counted".into())
}

#[test]
fn inspect_end_to_end() {
    let c = corpus::corpus();
    let mut seeds: Vec<Vec<u8>> = c.files.clone();
    // Larger captures cut down to their first packets.
    for cap in c.captures.iter().filter(|cap| cap.packets.len() > 50) {
        seeds.push(corpus::write_pcap(&corpus::Capture {
            packets: cap.packets.iter().take(50).cloned().collect(),
            ..cap.clone()
        }));
    }
    fuzz(Target {
        name: "inspect",
        seeds,
        mutate: &|rng, seeds| mutate::capture(rng, seeds, mutate::HTTP_DICT),
        check: &check_inspect,
    });
}

// ---------------------------------------------------------------- random rules x random packets

/// Inspection may cost this much per payload byte per rule, plus the base (release build).
/// Benign inputs stay below 1/100 of it; a keyword whose work grows with the square of the
/// payload, or a pcre without its limits, goes over.
const RULE_PACKETS_BUDGET: CostBudget =
    CostBudget { base: Duration::from_millis(100), per_unit: Duration::from_micros(10) };

/// Random rules (see `rulegen.rs`) through the real rule parser and engine build, then
/// random packets through the whole inspection core with that engine: no panic, and the
/// inspection within its cost budget.
fn check_rule_packets(input: &[u8]) -> Result<(), String> {
    let mut b = Bytes(input);
    let rules = rulegen::rules(&mut b);
    let load = load_rules_str("fuzz.rules", &rules.text, &RuleVars::default());
    if load.rules.is_empty() {
        return Ok(());
    }
    let loaded = load.rules.len();
    let engine = match DetectEngine::build(load.rules, &detect_config()) {
        Ok((engine, _)) => Arc::new(engine),
        Err(e) => return ensure(!e.trim().is_empty(), || "engine build error without a reason".into()),
    };
    let packets = rulegen::packets(&mut b, &rules.contents);
    let config = EngineSettings { midstream: true, checksum_mode: ChecksumMode::Never, ..EngineSettings::default() };
    let mut settings = InspectSettings::from_engine(&config, 1, false);
    settings.detect = Some(engine);
    let mut inspector = Inspector::new(&settings);
    let mut events = LogSink::new(Default::default());
    let bytes: usize = packets.iter().map(|p| p.payload_len.max(1)).sum();
    let what = format!("inspection of {loaded} rules x {bytes} payload bytes");
    RULE_PACKETS_BUDGET.run(&what, (loaded * bytes) as u64, || {
        for (i, p) in packets.iter().enumerate() {
            let ts = Timestamp::from_parts(1_700_000_000 + i as u64, 0);
            let meta = PacketMeta::standalone(i as u64 + 1, ts, LinkType::RawIp, p.frame.len() as u32, p.frame.len());
            inspector.packet(PacketRef { meta: &meta, data: &p.frame }, &mut events);
        }
        inspector.finish(&mut events);
    })?;
    ensure(inspector.counters().get("decoder.pkts").unwrap_or(0) >= packets.len() as u64, || {
        "packets not counted".into()
    })
}

/// A few fixed inputs to start from; the mutator mostly draws fresh random decisions, since
/// every byte string is a valid program of the grammar.
fn rule_packet_seeds() -> Vec<Vec<u8>> {
    (0..16u64)
        .map(|i| {
            let mut rng = Rng::new(0x5eed ^ i);
            let len = 64 + rng.below(448);
            (0..len).map(|_| rng.byte()).collect()
        })
        .collect()
}

#[test]
fn rule_packets() {
    fuzz(Target {
        name: "rule_packets",
        seeds: rule_packet_seeds(),
        mutate: &|rng, seeds| {
            if rng.chance(2) {
                let len = 16 + rng.below(496);
                (0..len).map(|_| rng.byte()).collect()
            } else {
                mutate::mutate_bytes(rng, seeds, &[])
            }
        },
        check: &check_rule_packets,
    });
}
