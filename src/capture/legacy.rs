//! Legacy pcap (libpcap) files: a 24-byte file header, then records of a 16-byte header
//! and the captured bytes. Parsed here directly: the format is fixed-size and this keeps
//! the per-packet path to two length checks and no copy.

use std::io::Read;
use std::path::PathBuf;

use super::file::PacketLocation;
use super::stream::ByteStream;
use super::{CaptureError, MAX_CAPLEN};
use crate::packet::{LinkType, Timestamp};

const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

/// Magic numbers as read in little-endian order.
pub(crate) const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
pub(crate) const MAGIC_NANOS: u32 = 0xa1b2_3c4d;

/// Which variant of the format the magic announced.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegacyFlavor {
    pub big_endian: bool,
    pub nanos: bool,
}

impl LegacyFlavor {
    /// Recognises the four legacy magics (two resolutions, two byte orders).
    pub(crate) fn from_magic(magic: [u8; 4]) -> Option<Self> {
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        match (le, be) {
            (MAGIC_MICROS, _) => Some(LegacyFlavor { big_endian: false, nanos: false }),
            (MAGIC_NANOS, _) => Some(LegacyFlavor { big_endian: false, nanos: true }),
            (_, MAGIC_MICROS) => Some(LegacyFlavor { big_endian: true, nanos: false }),
            (_, MAGIC_NANOS) => Some(LegacyFlavor { big_endian: true, nanos: true }),
            _ => None,
        }
    }
}

pub(crate) struct LegacyReader<R> {
    stream: ByteStream<R>,
    path: PathBuf,
    flavor: LegacyFlavor,
    link: LinkType,
    packets: u64,
    finished: bool,
}

impl<R: Read> LegacyReader<R> {
    /// Reads the file header; `stream` must be at offset 0.
    pub(crate) fn open(mut stream: ByteStream<R>, path: PathBuf, flavor: LegacyFlavor) -> Result<Self, CaptureError> {
        match stream.fill(FILE_HEADER_LEN) {
            Ok(true) => {}
            Ok(false) => {
                let have = stream.available().len();
                return Err(CaptureError::Truncated {
                    path,
                    offset: 0,
                    packets: 0,
                    what: format!("only {have} of {FILE_HEADER_LEN} bytes of the pcap file header"),
                });
            }
            Err(source) => return Err(CaptureError::Io { path, offset: 0, source }),
        }
        let header = stream.available();
        let linktype_field = read_u32(header, 20, flavor.big_endian);
        // The upper bits may carry FCS information; the link type is the low 16 bits.
        let link = LinkType::from_pcap(linktype_field & 0xffff);
        stream.take(FILE_HEADER_LEN);
        Ok(LegacyReader { stream, path, flavor, link, packets: 0, finished: false })
    }

    pub(crate) fn advance(&mut self) -> Result<Option<PacketLocation>, CaptureError> {
        if self.finished {
            return Ok(None);
        }
        let record_offset = self.stream.offset();
        if !self.fill(RECORD_HEADER_LEN)? {
            let have = self.stream.available().len();
            if have == 0 {
                self.finished = true;
                return Ok(None);
            }
            return Err(
                self.truncated(record_offset, format!("only {have} of {RECORD_HEADER_LEN} bytes of the record header"))
            );
        }
        let header = self.stream.available();
        let big_endian = self.flavor.big_endian;
        let secs = read_u32(header, 0, big_endian);
        let fraction = read_u32(header, 4, big_endian);
        let caplen = read_u32(header, 8, big_endian);
        let wire_len = read_u32(header, 12, big_endian);
        if caplen > MAX_CAPLEN {
            return Err(
                self.corrupt(record_offset, format!("record caplen {caplen} exceeds the {MAX_CAPLEN}-byte limit"))
            );
        }
        let record_len = RECORD_HEADER_LEN + caplen as usize;
        if !self.fill(record_len)? {
            let have = self.stream.available().len().saturating_sub(RECORD_HEADER_LEN);
            return Err(self.truncated(record_offset, format!("only {have} of {caplen} bytes of the packet data")));
        }
        let fraction_nanos = if self.flavor.nanos { u64::from(fraction) } else { u64::from(fraction) * 1000 };
        // u32 seconds * 1e9 plus a u32 fraction * 1000 cannot overflow u64.
        let ts = Timestamp(u64::from(secs) * Timestamp::NANOS_PER_SEC + fraction_nanos);
        self.stream.take(RECORD_HEADER_LEN);
        let range = self.stream.take(caplen as usize);
        self.packets += 1;
        Ok(Some(PacketLocation { ts, link: self.link, wire_len, range }))
    }

    pub(crate) fn bytes(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.stream.bytes(range)
    }

    fn fill(&mut self, needed: usize) -> Result<bool, CaptureError> {
        self.stream.fill(needed).map_err(|source| {
            self.finished = true;
            CaptureError::Io { path: self.path.clone(), offset: self.stream.offset(), source }
        })
    }

    fn truncated(&mut self, offset: u64, what: String) -> CaptureError {
        self.finished = true;
        CaptureError::Truncated { path: self.path.clone(), offset, packets: self.packets, what }
    }

    fn corrupt(&mut self, offset: u64, what: String) -> CaptureError {
        self.finished = true;
        CaptureError::Corrupt { path: self.path.clone(), offset, packets: self.packets, what }
    }

    #[cfg(test)]
    pub(crate) fn buffer_capacity(&self) -> usize {
        self.stream.capacity()
    }
}

/// Reads a u32 at `at`; callers have checked that `bytes` holds `at + 4` bytes.
pub(crate) fn read_u32(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let mut word = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        word.copy_from_slice(src);
    }
    if big_endian {
        u32::from_be_bytes(word)
    } else {
        u32::from_le_bytes(word)
    }
}

pub(crate) fn read_u16(bytes: &[u8], at: usize, big_endian: bool) -> u16 {
    let mut word = [0u8; 2];
    if let Some(src) = bytes.get(at..at + 2) {
        word.copy_from_slice(src);
    }
    if big_endian {
        u16::from_be_bytes(word)
    } else {
        u16::from_le_bytes(word)
    }
}
