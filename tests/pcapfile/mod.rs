//! Writing small captures for the tests that run picket on one (`mod pcapfile;`).

use std::path::Path;

/// A little-endian microsecond pcap of Ethernet frames, one per second.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for word in [0u32, 0, 65535, 1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (i, frame) in frames.iter().enumerate() {
        for word in [1_700_000_000 + i as u32, 0, frame.len() as u32, frame.len() as u32] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(frame);
    }
    std::fs::write(path, out).unwrap();
}
