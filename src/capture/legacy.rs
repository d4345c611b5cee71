//! Legacy pcap (libpcap) files: a 24-byte file header, then records of a 16-byte header
//! and the captured bytes. Parsed here directly: the format is fixed-size and this keeps
//! the per-packet path to two length checks and no copy.

use std::io::Read;
use std::path::PathBuf;

use super::record::PacketLocation;
use super::stream::ByteStream;
use super::{CaptureError, MAX_CAPLEN};
use crate::bytes::{Cursor, Endian};
use crate::packet::{LinkType, Timestamp};

const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

/// Magic numbers as read in little-endian order.
pub(crate) const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
pub(crate) const MAGIC_NANOS: u32 = 0xa1b2_3c4d;

/// Which variant of the format the magic announced.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegacyFlavor {
    pub order: Endian,
    pub nanos: bool,
}

impl LegacyFlavor {
    /// Recognises the four legacy magics (two resolutions, two byte orders).
    pub(crate) fn from_magic(magic: [u8; 4]) -> Option<Self> {
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        match (le, be) {
            (MAGIC_MICROS, _) => Some(LegacyFlavor { order: Endian::Little, nanos: false }),
            (MAGIC_NANOS, _) => Some(LegacyFlavor { order: Endian::Little, nanos: true }),
            (_, MAGIC_MICROS) => Some(LegacyFlavor { order: Endian::Big, nanos: false }),
            (_, MAGIC_NANOS) => Some(LegacyFlavor { order: Endian::Big, nanos: true }),
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
        let filled = match stream.fill(FILE_HEADER_LEN) {
            Ok(filled) => filled,
            Err(source) => return Err(CaptureError::Io { path, offset: 0, source }),
        };
        // The link type is the header's last field.
        let linktype_field = if filled { flavor.order.u32(stream.available(), 20) } else { None };
        let Some(linktype_field) = linktype_field else {
            let have = stream.available().len();
            return Err(CaptureError::Truncated {
                path,
                offset: 0,
                packets: 0,
                what: format!("only {have} of {FILE_HEADER_LEN} bytes of the pcap file header"),
            });
        };
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
        let filled = self.fill(RECORD_HEADER_LEN)?;
        let header = if filled { record_header(self.stream.available(), self.flavor.order) } else { None };
        let Some([secs, fraction, caplen, wire_len]) = header else {
            let have = self.stream.available().len();
            if have == 0 {
                self.finished = true;
                return Ok(None);
            }
            return Err(
                self.truncated(record_offset, format!("only {have} of {RECORD_HEADER_LEN} bytes of the record header"))
            );
        };
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

    /// File offset of the next unread byte (how far the file has been read).
    pub(crate) fn position(&self) -> u64 {
        self.stream.offset()
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

/// A record header: seconds, fraction of a second, captured length, length on the wire.
/// `None` when `bytes` holds less than a header.
#[inline]
fn record_header(bytes: &[u8], order: Endian) -> Option<[u32; 4]> {
    let mut c = Cursor::new(bytes);
    Some([c.u32_in(order)?, c.u32_in(order)?, c.u32_in(order)?, c.u32_in(order)?])
}
