//! Building small captures for the tests that run picket on one (`mod pcapfile;`): TCP
//! and UDP frames with consistent addresses and sequence numbers, and the pcap file.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;

/// A TCP conversation's frames, both ways, with consistent sequence numbers.
pub struct Tcp {
    pub client: ([u8; 4], u16),
    pub server: ([u8; 4], u16),
    seq_c: u32,
    seq_s: u32,
}

impl Tcp {
    pub fn new(client: ([u8; 4], u16), server: ([u8; 4], u16)) -> Self {
        Tcp { client, server, seq_c: 1000, seq_s: 5000 }
    }

    /// One segment of the client (`to_server`) or the server; `flags` holds the letters
    /// S, A, P, F it sets. Advances the sender's sequence number.
    pub fn segment(&mut self, to_server: bool, flags: &str, payload: &[u8]) -> Vec<u8> {
        let (src, dst) = if to_server { (self.client, self.server) } else { (self.server, self.client) };
        let (seq, ack) = if to_server { (self.seq_c, self.seq_s) } else { (self.seq_s, self.seq_c) };
        let mut b = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(src.0, dst.0, 64)
            .tcp(src.1, dst.1, seq, 64240);
        if flags.contains('S') {
            b = b.syn();
        }
        if flags.contains('A') {
            b = b.ack(ack);
        }
        if flags.contains('P') {
            b = b.psh();
        }
        if flags.contains('F') {
            b = b.fin();
        }
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        let advance = payload.len() as u32 + u32::from(flags.contains('S') || flags.contains('F'));
        if to_server {
            self.seq_c = self.seq_c.wrapping_add(advance);
        } else {
            self.seq_s = self.seq_s.wrapping_add(advance);
        }
        out
    }
}

/// One UDP datagram from `src` to `dst`.
pub fn udp(src: ([u8; 4], u16), dst: ([u8; 4], u16), payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src.0, dst.0, 64)
        .udp(src.1, dst.1)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// A little-endian microsecond pcap of Ethernet frames, one per second.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    write_pcap_every(path, frames, 1_000_000);
}

/// A little-endian microsecond pcap of Ethernet frames, `gap_us` apart.
pub fn write_pcap_every(path: &Path, frames: &[Vec<u8>], gap_us: u64) {
    let mut out = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for word in [0u32, 0, 65535, 1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (i, frame) in frames.iter().enumerate() {
        let at = i as u64 * gap_us;
        let (secs, micros) = ((at / 1_000_000) as u32, (at % 1_000_000) as u32);
        for word in [1_700_000_000 + secs, micros, frame.len() as u32, frame.len() as u32] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(frame);
    }
    std::fs::write(path, out).unwrap();
}
