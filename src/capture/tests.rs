//! Tests build their captures byte by byte with the small writers below, so each test
//! states exactly which bytes the reader sees.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::file::CaptureReader;
use super::*;
use crate::packet::{LinkType, Timestamp};

// ---------------------------------------------------------------- writers

/// A packet as the tests write and expect it back.
#[derive(Clone, Debug, PartialEq)]
struct Pkt {
    ts: Timestamp,
    link: LinkType,
    wire_len: u32,
    data: Vec<u8>,
}

fn put_u16(out: &mut Vec<u8>, v: u16, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn put_u32(out: &mut Vec<u8>, v: u32, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

/// A legacy pcap file. Records are (seconds, fraction in the file's unit, wire length, data).
fn legacy_pcap(be: bool, nanos: bool, linktype: u32, records: &[(u32, u32, u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }, be);
    put_u16(&mut out, 2, be);
    put_u16(&mut out, 4, be);
    put_u32(&mut out, 0, be); // thiszone
    put_u32(&mut out, 0, be); // sigfigs
    put_u32(&mut out, 65535, be); // snaplen
    put_u32(&mut out, linktype, be);
    for &(secs, fraction, wire_len, data) in records {
        put_u32(&mut out, secs, be);
        put_u32(&mut out, fraction, be);
        put_u32(&mut out, data.len() as u32, be);
        put_u32(&mut out, wire_len, be);
        out.extend_from_slice(data);
    }
    out
}

/// Appends pcapng blocks in one byte order; remembers where each block starts.
struct NgWriter {
    be: bool,
    out: Vec<u8>,
    block_starts: Vec<usize>,
}

impl NgWriter {
    fn new(be: bool) -> Self {
        let mut w = NgWriter { be, out: Vec::new(), block_starts: Vec::new() };
        w.section(be);
        w
    }

    /// Starts a new section, possibly switching byte order.
    fn section(&mut self, be: bool) {
        self.be = be;
        let mut body = Vec::new();
        put_u32(&mut body, 0x1a2b_3c4d, be);
        put_u16(&mut body, 1, be);
        put_u16(&mut body, 0, be);
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        self.block(0x0a0d_0d0a, &body);
    }

    fn block(&mut self, block_type: u32, body: &[u8]) {
        let mut padded = body.to_vec();
        while !padded.len().is_multiple_of(4) {
            padded.push(0);
        }
        let len = 12 + padded.len() as u32;
        self.block_starts.push(self.out.len());
        let be = self.be;
        put_u32(&mut self.out, block_type, be);
        put_u32(&mut self.out, len, be);
        self.out.extend_from_slice(&padded);
        put_u32(&mut self.out, len, be);
    }

    fn option(&self, body: &mut Vec<u8>, code: u16, value: &[u8]) {
        put_u16(body, code, self.be);
        put_u16(body, value.len() as u16, self.be);
        body.extend_from_slice(value);
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
    }

    fn interface(&mut self, linktype: u16, tsresol: Option<u8>, tsoffset: Option<i64>) {
        let mut body = Vec::new();
        put_u16(&mut body, linktype, self.be);
        put_u16(&mut body, 0, self.be);
        put_u32(&mut body, 262_144, self.be);
        if let Some(r) = tsresol {
            self.option(&mut body, 9, &[r]);
        }
        if let Some(offset) = tsoffset {
            let raw = if self.be { offset.to_be_bytes() } else { offset.to_le_bytes() };
            self.option(&mut body, 14, &raw);
        }
        if tsresol.is_some() || tsoffset.is_some() {
            self.option(&mut body, 0, &[]); // opt_endofopt
        }
        self.block(1, &body);
    }

    fn enhanced_packet(&mut self, if_id: u32, ts_units: u64, wire_len: u32, data: &[u8]) {
        let mut body = Vec::new();
        put_u32(&mut body, if_id, self.be);
        put_u32(&mut body, (ts_units >> 32) as u32, self.be);
        put_u32(&mut body, ts_units as u32, self.be);
        put_u32(&mut body, data.len() as u32, self.be);
        put_u32(&mut body, wire_len, self.be);
        body.extend_from_slice(data);
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        self.option(&mut body, 1, b"a comment"); // an option after the data must be ignored
        self.block(6, &body);
    }

    /// The Packet Block EPB replaced: a u16 interface id and a u16 drop count.
    fn obsolete_packet(&mut self, if_id: u16, ts_units: u64, wire_len: u32, data: &[u8]) {
        let mut body = Vec::new();
        put_u16(&mut body, if_id, self.be);
        put_u16(&mut body, 0, self.be);
        put_u32(&mut body, (ts_units >> 32) as u32, self.be);
        put_u32(&mut body, ts_units as u32, self.be);
        put_u32(&mut body, data.len() as u32, self.be);
        put_u32(&mut body, wire_len, self.be);
        body.extend_from_slice(data);
        self.block(2, &body);
    }

    fn simple_packet(&mut self, wire_len: u32, data: &[u8]) {
        let mut body = Vec::new();
        put_u32(&mut body, wire_len, self.be);
        body.extend_from_slice(data);
        self.block(3, &body);
    }
}

// ---------------------------------------------------------------- helpers

/// Reads in-memory capture bytes to the end: packets, then the error if any, checking that
/// the error comes only once and that the reader stays finished afterwards.
fn read_bytes(bytes: &[u8], buffer_len: usize) -> Result<(Vec<Pkt>, Option<CaptureError>), CaptureError> {
    let mut reader = CaptureReader::open(bytes, Path::new("test.pcap"), buffer_len)?;
    Ok(drain(&mut reader))
}

fn drain(source: &mut dyn PacketSource) -> (Vec<Pkt>, Option<CaptureError>) {
    let mut packets = Vec::new();
    loop {
        match source.next_packet() {
            Ok(Some(p)) => packets.push(Pkt { ts: p.ts, link: p.link, wire_len: p.wire_len, data: p.data.to_vec() }),
            Ok(None) => return (packets, None),
            Err(e) => {
                assert!(matches!(source.next_packet(), Ok(None)), "error must be reported once: {e}");
                assert!(matches!(source.next_packet(), Ok(None)));
                return (packets, Some(e));
            }
        }
    }
}

fn eth(ts: Timestamp, wire_len: u32, data: &[u8]) -> Pkt {
    Pkt { ts, link: LinkType::Ethernet, wire_len, data: data.to_vec() }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

const SMALL_BUFFER: usize = 16;
const BUFFERS: [usize; 3] = [SMALL_BUFFER, 100, 128 * 1024];

// ---------------------------------------------------------------- legacy pcap

#[test]
fn legacy_pcap_all_byte_orders_and_resolutions() {
    for be in [false, true] {
        for nanos in [false, true] {
            let file = legacy_pcap(
                be,
                nanos,
                1,
                &[(1_700_000_000, 123_456, 60, b"abc"), (1_700_000_001, 999_999, 1500, &[7; 40])],
            );
            let scale = if nanos { 1 } else { 1000 };
            for buffer in BUFFERS {
                let (packets, err) = read_bytes(&file, buffer).unwrap();
                assert!(err.is_none(), "be={be} nanos={nanos}: {err:?}");
                assert_eq!(
                    packets,
                    vec![
                        eth(Timestamp(1_700_000_000 * 1_000_000_000 + 123_456 * scale), 60, b"abc"),
                        eth(Timestamp(1_700_000_001 * 1_000_000_000 + 999_999 * scale), 1500, &[7; 40]),
                    ],
                    "be={be} nanos={nanos} buffer={buffer}"
                );
            }
        }
    }
}

#[test]
fn legacy_link_types_map_and_unknown_ones_pass_through() {
    let raw = legacy_pcap(false, false, 101, &[(1, 0, 2, &[0x45, 0])]);
    assert_eq!(read_bytes(&raw, 64).unwrap().0[0].link, LinkType::RawIp);
    // FCS bits in the upper half of the field do not change the link type.
    let sll = legacy_pcap(true, false, 0x1000_0000 | 113, &[(1, 0, 1, &[0])]);
    assert_eq!(read_bytes(&sll, 64).unwrap().0[0].link, LinkType::LinuxSll);
    let odd = legacy_pcap(false, false, 147, &[(1, 0, 1, &[0]), (2, 0, 1, &[1])]);
    let (packets, err) = read_bytes(&odd, 64).unwrap();
    assert!(err.is_none());
    assert_eq!(packets.len(), 2);
    assert!(packets.iter().all(|p| p.link == LinkType::Unsupported(147)));
}

#[test]
fn legacy_header_only_file_is_an_empty_capture() {
    let file = legacy_pcap(false, false, 1, &[]);
    let (packets, err) = read_bytes(&file, 64).unwrap();
    assert!(packets.is_empty() && err.is_none());
}

#[test]
fn legacy_truncated_at_every_offset_delivers_complete_records_then_one_error() {
    let records: [(u32, u32, u32, &[u8]); 3] = [(10, 1, 5, b"hello"), (11, 2, 100, &[1; 33]), (12, 3, 1, b"x")];
    let file = legacy_pcap(false, false, 1, &records);
    let mut record_starts = vec![24];
    for r in &records {
        record_starts.push(record_starts.last().unwrap() + 16 + r.3.len());
    }
    assert_eq!(*record_starts.last().unwrap(), file.len());
    let (_, err) = read_bytes(&file[..record_starts[1] + 20], 64).unwrap();
    assert_eq!(
        err.unwrap().to_string(),
        "test.pcap: truncated capture at byte 45 after 1 packet: only 4 of 33 bytes of the packet data"
    );
    for buffer in [SMALL_BUFFER, 4096] {
        for cut in 0..file.len() {
            let result = read_bytes(&file[..cut], buffer);
            if cut < 4 {
                assert!(matches!(result, Err(CaptureError::NotACapture { .. })), "cut {cut}");
                continue;
            }
            if cut < 24 {
                assert!(matches!(result, Err(CaptureError::Truncated { offset: 0, packets: 0, .. })), "cut {cut}");
                continue;
            }
            let (packets, err) = result.unwrap();
            let complete = record_starts[1..].iter().filter(|&&end| end <= cut).count();
            assert_eq!(packets.len(), complete, "cut {cut}");
            assert_eq!(packets.last().map(|p| p.data.clone()), complete.checked_sub(1).map(|i| records[i].3.to_vec()));
            if record_starts.contains(&cut) {
                assert!(err.is_none(), "cut {cut} at a record boundary is a clean end: {err:?}");
            } else {
                match err {
                    Some(CaptureError::Truncated { offset, packets, .. }) => {
                        assert_eq!(offset as usize, record_starts[complete], "cut {cut}");
                        assert_eq!(packets as usize, complete);
                    }
                    other => panic!("cut {cut}: expected Truncated, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn legacy_absurd_caplen_is_corrupt_without_a_big_allocation() {
    let mut file = legacy_pcap(false, false, 1, &[(1, 0, 3, b"abc")]);
    let bad_record_at = file.len() as u64;
    put_u32(&mut file, 2, false);
    put_u32(&mut file, 0, false);
    put_u32(&mut file, 0xffff_fff0, false); // caplen
    put_u32(&mut file, 60, false);
    file.extend_from_slice(&[0; 64]);
    let mut reader = CaptureReader::open(&file[..], Path::new("huge.pcap"), 64).unwrap();
    let (packets, err) = drain(&mut reader);
    assert_eq!(packets.len(), 1);
    match &err {
        Some(CaptureError::Corrupt { offset, packets: 1, what, .. }) => {
            assert_eq!(*offset, bad_record_at);
            assert!(what.contains("4294967280"), "{what}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(reader.buffer_capacity(), 64);
    let line = err.unwrap().to_string();
    assert!(line.starts_with("huge.pcap: corrupt capture at byte 43 after 1 packet:"), "{line}");
}

#[test]
fn record_larger_than_buffer_grows_it_up_to_the_limit() {
    let big = vec![0xab; MAX_CAPLEN as usize];
    let file = legacy_pcap(true, true, 1, &[(1, 0, MAX_CAPLEN, &big), (2, 0, 1, b"z")]);
    let mut reader = CaptureReader::open(&file[..], Path::new("big.pcap"), SMALL_BUFFER).unwrap();
    let (packets, err) = drain(&mut reader);
    assert!(err.is_none());
    assert_eq!(packets.len(), 2);
    assert_eq!(packets[0].data, big);
    assert!(reader.buffer_capacity() >= MAX_CAPLEN as usize);

    let over = vec![0; MAX_CAPLEN as usize + 1];
    let file = legacy_pcap(false, false, 1, &[(1, 0, 1, &over)]);
    let (packets, err) = read_bytes(&file, SMALL_BUFFER).unwrap();
    assert!(packets.is_empty());
    assert!(matches!(err, Some(CaptureError::Corrupt { offset: 24, packets: 0, .. })));
}

// ---------------------------------------------------------------- pcapng

#[test]
fn pcapng_interfaces_with_their_own_link_types_and_resolutions() {
    for be in [false, true] {
        let mut w = NgWriter::new(be);
        w.interface(1, None, None); // Ethernet, default microseconds
        w.interface(101, Some(9), None); // raw IP, nanoseconds
        w.block(0x0000_0004, &[0; 8]); // name resolution block: skipped
        w.interface(147, Some(0x80 | 20), None); // user DLT, 2^-20 s units
        w.interface(113, Some(3), Some(1000)); // Linux SLL, milliseconds, +1000 s
        w.enhanced_packet(0, 1_700_000_000_123_456, 60, b"eth-frame");
        w.block(0x4000_1234, &[1, 2, 3, 4, 5]); // unknown/custom block: skipped
        w.enhanced_packet(1, 1_700_000_000_123_456_789, 20, b"ip");
        w.enhanced_packet(2, (5 << 20) + (1 << 19), 3, b"odd");
        w.enhanced_packet(3, 2_500, 9, b"cooked");
        w.obsolete_packet(1, (1 << 32) + 42, 7, b"old");
        w.simple_packet(4, b"simple-longer-than-wire");
        let expected = vec![
            eth(Timestamp(1_700_000_000_123_456_000), 60, b"eth-frame"),
            Pkt { ts: Timestamp(1_700_000_000_123_456_789), link: LinkType::RawIp, wire_len: 20, data: b"ip".to_vec() },
            Pkt { ts: Timestamp(5_500_000_000), link: LinkType::Unsupported(147), wire_len: 3, data: b"odd".to_vec() },
            Pkt { ts: Timestamp(1_002_500_000_000), link: LinkType::LinuxSll, wire_len: 9, data: b"cooked".to_vec() },
            Pkt { ts: Timestamp((1 << 32) + 42), link: LinkType::RawIp, wire_len: 7, data: b"old".to_vec() },
            // SPB: interface 0, previous packet's time, data cut to the original length.
            eth(Timestamp((1 << 32) + 42), 4, b"simp"),
        ];
        for buffer in BUFFERS {
            let (packets, err) = read_bytes(&w.out, buffer).unwrap();
            assert!(err.is_none(), "be={be}: {err:?}");
            assert_eq!(packets, expected, "be={be} buffer={buffer}");
        }
    }
}

#[test]
fn pcapng_new_section_switches_byte_order_and_resets_interfaces() {
    let mut w = NgWriter::new(false);
    w.interface(1, None, None);
    w.interface(101, None, None);
    w.enhanced_packet(1, 7_000_000, 10, b"first");
    w.section(true);
    w.interface(113, Some(9), None);
    w.enhanced_packet(0, 8, 10, b"second");
    let second_bad = w.out.len() as u64;
    w.enhanced_packet(1, 9, 10, b"stale interface");
    let (packets, err) = read_bytes(&w.out, 64).unwrap();
    assert_eq!(
        packets,
        vec![
            Pkt { ts: Timestamp(7_000_000_000), link: LinkType::RawIp, wire_len: 10, data: b"first".to_vec() },
            Pkt { ts: Timestamp(8), link: LinkType::LinuxSll, wire_len: 10, data: b"second".to_vec() },
        ]
    );
    match err {
        Some(CaptureError::Corrupt { offset, packets: 2, what, .. }) => {
            assert_eq!(offset, second_bad);
            assert!(what.contains("interface 1"), "{what}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn pcapng_truncated_at_every_offset_delivers_complete_blocks_then_one_error() {
    let mut w = NgWriter::new(false);
    w.interface(1, Some(6), None);
    w.enhanced_packet(0, 1, 5, b"one");
    w.block(0x0bad, &[9; 10]);
    w.enhanced_packet(0, 2, 5, b"two..");
    w.simple_packet(3, b"333");
    let mut starts = w.block_starts.clone();
    starts.push(w.out.len());
    let packet_block_ends = [starts[3], starts[5], starts[6]];
    let shb_end = starts[1];
    for buffer in [SMALL_BUFFER, 4096] {
        for cut in 0..w.out.len() {
            let result = read_bytes(&w.out[..cut], buffer);
            if cut < 4 {
                assert!(matches!(result, Err(CaptureError::NotACapture { .. })), "cut {cut}");
                continue;
            }
            if cut < shb_end {
                assert!(matches!(result, Err(CaptureError::Truncated { offset: 0, packets: 0, .. })), "cut {cut}");
                continue;
            }
            let (packets, err) = result.unwrap();
            let complete = packet_block_ends.iter().filter(|&&end| end <= cut).count();
            assert_eq!(packets.len(), complete, "cut {cut}");
            if starts.contains(&cut) {
                assert!(err.is_none(), "cut {cut}: {err:?}");
            } else {
                let block_start = *starts.iter().filter(|&&s| s <= cut).max().unwrap();
                match err {
                    Some(CaptureError::Truncated { offset, packets, .. }) => {
                        assert_eq!(offset as usize, block_start, "cut {cut}");
                        assert_eq!(packets as usize, complete, "cut {cut}");
                    }
                    other => panic!("cut {cut}: expected Truncated, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn pcapng_absurd_lengths_are_corrupt() {
    // A packet block claiming a block length far over the limit.
    let mut w = NgWriter::new(false);
    w.interface(1, None, None);
    w.enhanced_packet(0, 1, 1, b"a");
    let at = w.out.len() as u64;
    put_u32(&mut w.out, 6, false);
    put_u32(&mut w.out, 0xffff_fff0, false);
    w.out.extend_from_slice(&[0; 40]);
    let (packets, err) = read_bytes(&w.out, 64).unwrap();
    assert_eq!(packets.len(), 1);
    assert!(matches!(err, Some(CaptureError::Corrupt { offset, packets: 1, .. }) if offset == at), "{err:?}");

    // A caplen that overruns its own block.
    let mut w = NgWriter::new(true);
    w.interface(1, None, None);
    let at = w.out.len() as u64;
    let mut body = Vec::new();
    for v in [0u32, 0, 0, 64, 64] {
        put_u32(&mut body, v, true);
    }
    body.extend_from_slice(&[0; 8]);
    w.block(6, &body);
    let (packets, err) = read_bytes(&w.out, 64).unwrap();
    assert!(packets.is_empty());
    assert!(
        matches!(&err, Some(CaptureError::Corrupt { offset, what, .. }) if *offset == at && what.contains("overruns"))
    );

    // Lengths that are not a multiple of 4, or disagree with the trailer.
    let mut w = NgWriter::new(false);
    w.interface(1, None, None);
    let at = w.out.len();
    w.enhanced_packet(0, 1, 1, b"abcd");
    let mut misaligned = w.out.clone();
    misaligned[at + 4] += 1;
    assert!(matches!(read_bytes(&misaligned, 64).unwrap().1, Some(CaptureError::Corrupt { .. })));
    let mut bad_trailer = w.out.clone();
    let end = bad_trailer.len();
    bad_trailer[end - 4] ^= 0x10;
    assert!(matches!(read_bytes(&bad_trailer, 64).unwrap().1, Some(CaptureError::Corrupt { .. })));

    // A huge block of a type picket skips is skipped by streaming, then found cut short.
    let mut w = NgWriter::new(false);
    let at = w.out.len() as u64;
    put_u32(&mut w.out, 0x0bad, false);
    put_u32(&mut w.out, 0x7fff_fff0, false);
    w.out.extend_from_slice(&[0; 100]);
    let (_, err) = read_bytes(&w.out, SMALL_BUFFER).unwrap();
    assert!(matches!(err, Some(CaptureError::Truncated { offset, .. }) if offset == at), "{err:?}");
}

#[test]
fn pcapng_bad_section_headers() {
    let mut w = NgWriter::new(false);
    w.out[8..12].copy_from_slice(&[1, 2, 3, 4]);
    assert!(matches!(read_bytes(&w.out, 64), Err(CaptureError::Corrupt { offset: 0, .. })));
    let mut w = NgWriter::new(true);
    w.out[12..14].copy_from_slice(&2u16.to_be_bytes());
    match read_bytes(&w.out, 64) {
        Err(CaptureError::Corrupt { what, .. }) => assert!(what.contains("version 2.0"), "{what}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // An interface with a resolution of 10^20 units per second cannot be represented.
    let mut w = NgWriter::new(false);
    w.interface(1, Some(20), None);
    w.enhanced_packet(0, 1, 1, b"a");
    assert!(matches!(read_bytes(&w.out, 64).unwrap().1, Some(CaptureError::Corrupt { .. })));
    // Packets before any interface.
    let mut w = NgWriter::new(false);
    w.simple_packet(1, b"a");
    assert!(matches!(read_bytes(&w.out, 64).unwrap(), (p, Some(CaptureError::Corrupt { .. })) if p.is_empty()));
}

// ---------------------------------------------------------------- files and directories

#[test]
fn open_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.pcap");
    match open_offline(&missing) {
        Err(e @ CaptureError::Open { .. }) => {
            let line = e.to_string();
            assert!(line.contains("nope.pcap") && line.contains("cannot open"), "{line}");
        }
        other => panic!("expected Open error, got {:?}", other.err()),
    }
    let empty = write(dir.path(), "empty.pcap", b"");
    match open_offline(&empty) {
        Err(e @ CaptureError::NotACapture { .. }) => assert!(e.to_string().contains("empty file"), "{e}"),
        other => panic!("expected NotACapture, got {:?}", other.err()),
    }
    let text = write(dir.path(), "notes.txt", b"GET / HTTP/1.1\r\n");
    match open_offline(&text) {
        Err(e @ CaptureError::NotACapture { .. }) => {
            assert_eq!(
                e.to_string(),
                format!("{}: not a pcap or pcapng file: unknown magic bytes 47 45 54 20", text.display())
            )
        }
        other => panic!("expected NotACapture, got {:?}", other.err()),
    }
    let short = write(dir.path(), "short.pcap", &[0xd4, 0xc3]);
    assert!(matches!(open_offline(&short), Err(CaptureError::NotACapture { .. })));
    let empty_dir = dir.path().join("empty-dir");
    fs::create_dir(&empty_dir).unwrap();
    assert!(matches!(open_offline(&empty_dir), Err(CaptureError::NoCaptureFiles { .. })));
}

#[test]
fn file_source_reads_from_disk_and_describes_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "one.pcap", &legacy_pcap(false, false, 1, &[(3, 4, 2, b"hi")]));
    let mut source = open_offline(&path).unwrap();
    assert_eq!(source.describe(), format!("file {}", path.display()));
    let (packets, err) = drain(source.as_mut());
    assert!(err.is_none());
    assert_eq!(packets, vec![eth(Timestamp(3_000_004_000), 2, b"hi")]);
}

#[test]
fn directory_reads_files_in_name_order_and_warns_about_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // Written out of order; the name decides the order.
    write(dir.path(), "b.pcap", &legacy_pcap(true, true, 1, &[(2, 1, 10, b"b1"), (2, 2, 10, b"b2")]));
    let mut ng = NgWriter::new(false);
    ng.interface(101, None, None);
    ng.enhanced_packet(0, 1_000_000, 10, b"a1");
    write(dir.path(), "a.pcapng", &ng.out);
    let truncated = legacy_pcap(false, false, 1, &[(3, 0, 10, b"c1"), (3, 1, 10, b"c2")]);
    write(dir.path(), "c.pcap", &truncated[..truncated.len() - 1]);
    write(dir.path(), "d-readme.txt", b"not a capture");
    write(dir.path(), "e.pcap", &legacy_pcap(false, false, 1, &[(4, 0, 10, b"e1")]));
    fs::create_dir(dir.path().join("a-subdir")).unwrap();

    let mut source = open_offline(dir.path()).unwrap();
    let mut events = Vec::new();
    loop {
        match source.next_packet() {
            Ok(Some(p)) => events.push(String::from_utf8_lossy(p.data).into_owned()),
            Ok(None) => break,
            Err(CaptureError::Truncated { path, offset, packets, .. }) => {
                assert_eq!(offset, 24 + 16 + 2);
                events.push(format!("truncated {} after {packets}", path.file_name().unwrap().to_string_lossy()))
            }
            Err(CaptureError::NotACapture { path, .. }) => {
                events.push(format!("skipped {}", path.file_name().unwrap().to_string_lossy()))
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    assert_eq!(events, ["a1", "b1", "b2", "c1", "truncated c.pcap after 1", "skipped d-readme.txt", "e1"]);
    assert!(matches!(source.next_packet(), Ok(None)));
}

// ---------------------------------------------------------------- memory source

#[test]
fn memory_source_replays_the_capture_and_resets() {
    let dir = tempfile::tempdir().unwrap();
    let records: [(u32, u32, u32, &[u8]); 3] = [(1, 0, 3, b"one"), (2, 0, 3, b"two"), (3, 0, 99, b"three")];
    let path = write(dir.path(), "m.pcap", &legacy_pcap(false, false, 1, &records));
    let mut memory = MemorySource::load(&path).unwrap();
    assert_eq!((memory.len(), memory.byte_len()), (3, 11));
    let (first, err) = drain(&mut memory);
    assert!(err.is_none());
    let (from_file, _) = drain(open_offline(&path).unwrap().as_mut());
    assert_eq!(first, from_file);
    assert!(memory.next_packet().unwrap().is_none());
    memory.reset();
    assert_eq!(drain(&mut memory).0, first);

    let cut = legacy_pcap(false, false, 1, &records);
    let cut_path = write(dir.path(), "cut.pcap", &cut[..cut.len() - 2]);
    assert!(matches!(MemorySource::load(&cut_path), Err(CaptureError::Truncated { packets: 2, .. })));
}

#[test]
fn bundled_sample_reads_cleanly() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap");
    let mut source = open_offline(&path).unwrap();
    let (packets, err) = drain(source.as_mut());
    assert!(err.is_none(), "{err:?}");
    assert!(packets.len() >= 200, "{} packets", packets.len());
    assert!(packets.iter().all(|p| p.link == LinkType::Ethernet));
    assert!(packets.windows(2).all(|w| w[0].ts <= w[1].ts), "sample timestamps must not go backwards");
    assert!(packets.iter().any(|p| p.data.windows(11).any(|w| w == b"uid=0(root)")));
}

// ---------------------------------------------------------------- properties

fn arb_records() -> impl Strategy<Value = Vec<(u32, u32, Vec<u8>)>> {
    proptest::collection::vec((any::<u32>(), 0u32..1_000_000, proptest::collection::vec(any::<u8>(), 0..300)), 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the buffer size, every format yields the same packets.
    #[test]
    fn buffer_size_never_changes_what_is_read(records in arb_records(), buffer in 16usize..600, be in any::<bool>()) {
        let borrowed: Vec<(u32, u32, u32, &[u8])> =
            records.iter().map(|(s, f, d)| (*s, *f, d.len() as u32 + 1, d.as_slice())).collect();
        let legacy = legacy_pcap(be, false, 1, &borrowed);
        let mut ng = NgWriter::new(be);
        ng.interface(1, None, None);
        for (s, f, d) in &records {
            ng.enhanced_packet(0, u64::from(*s) * 1_000_000 + u64::from(*f), d.len() as u32 + 1, d);
        }
        let expected: Vec<Pkt> = records
            .iter()
            .map(|(s, f, d)| eth(Timestamp(u64::from(*s) * 1_000_000_000 + u64::from(*f) * 1000), d.len() as u32 + 1, d))
            .collect();
        for file in [&legacy, &ng.out] {
            let (packets, err) = read_bytes(file, buffer).unwrap();
            prop_assert!(err.is_none());
            prop_assert_eq!(&packets, &expected);
        }
    }

    /// Arbitrary damage after a valid start: never a panic, and reading always ends.
    #[test]
    fn damaged_captures_never_panic(
        records in arb_records(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ng in any::<bool>(),
    ) {
        let mut file = if ng {
            let mut w = NgWriter::new(false);
            w.interface(1, Some(9), None);
            for (s, _, d) in &records {
                w.enhanced_packet(0, u64::from(*s), 1, d);
            }
            w.out
        } else {
            let borrowed: Vec<(u32, u32, u32, &[u8])> =
                records.iter().map(|(s, f, d)| (*s, *f, 1, d.as_slice())).collect();
            legacy_pcap(false, false, 1, &borrowed)
        };
        for (at, value) in flips {
            let i = at.index(file.len());
            file[i] = value;
        }
        if let Ok(mut reader) = CaptureReader::open(&file[..], Path::new("fuzz"), 32) {
            let (packets, _) = drain(&mut reader);
            prop_assert!(packets.len() <= records.len() + file.len() / 12);
            prop_assert!(packets.iter().all(|p| p.data.len() <= MAX_CAPLEN as usize));
        }
    }
}
