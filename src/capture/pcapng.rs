//! pcapng files: a sequence of blocks, each `type, length, body, length`. Sections (SHB)
//! set the byte order and reset the interface list; interfaces (IDB) give every packet its
//! link type and timestamp resolution. Framing and the packet blocks (EPB, SPB, the obsolete
//! PB) are read here without allocation; SHB and IDB, which carry options, are parsed
//! with `pcap-parser`. Every other block type is skipped without being buffered.

use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;

use pcap_parser::pcapng::{
    parse_interfacedescriptionblock_be, parse_interfacedescriptionblock_le, parse_sectionheaderblock, OptionCode,
};

use super::record::PacketLocation;
use super::stream::ByteStream;
use super::{CaptureError, MAX_CAPLEN};
use crate::bytes::{self, Cursor, Endian};
use crate::packet::{LinkType, Timestamp};

pub(crate) const SHB_TYPE: u32 = 0x0a0d_0d0a;
const IDB_TYPE: u32 = 1;
/// The Packet Block that EPB replaced; still found in old files.
const OBSOLETE_PACKET_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;
const EPB_TYPE: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

/// Packet blocks hold options beside the data; allow that much beyond [`MAX_CAPLEN`].
/// SHB and IDB must fit too: they are only options.
const MAX_PARSED_BLOCK_LEN: u32 = MAX_CAPLEN + 64 * 1024;
/// Bounds the interface table a hostile file can make us keep.
const MAX_INTERFACES: usize = 4096;
/// Offset of the packet bytes inside an EPB or obsolete PB.
const PACKET_BLOCK_DATA_AT: usize = 28;
const SPB_DATA_AT: usize = 12;

struct Interface {
    link: LinkType,
    units_per_sec: u64,
    /// Nanoseconds per timestamp unit when that is a whole number (resolutions 10^0..10^9),
    /// the common case, which then needs no 128-bit division.
    nanos_per_unit: Option<u64>,
    /// `if_tsoffset`: seconds added to every timestamp.
    offset_secs: i64,
}

impl Interface {
    fn timestamp(&self, units: u64) -> Timestamp {
        let whole_secs = units / self.units_per_sec;
        let fraction = units % self.units_per_sec;
        let nanos = match self.nanos_per_unit {
            Some(per_unit) => fraction * per_unit,
            None => {
                (u128::from(fraction) * u128::from(Timestamp::NANOS_PER_SEC) / u128::from(self.units_per_sec)) as u64
            }
        };
        let secs = if self.offset_secs >= 0 {
            whole_secs.saturating_add(self.offset_secs as u64)
        } else {
            whole_secs.saturating_sub(self.offset_secs.unsigned_abs())
        };
        Timestamp(secs.saturating_mul(Timestamp::NANOS_PER_SEC).saturating_add(nanos))
    }
}

/// Interface id, timestamp units, captured length and original length of an EPB or an
/// obsolete PB (whose interface id is a u16 followed by a drop count).
fn packet_block_fields(block: &[u8], block_type: u32, order: Endian) -> Option<(u32, u64, u32, u32)> {
    let mut c = Cursor::new(block);
    c.skip(8)?; // block type and length
    let if_id = if block_type == EPB_TYPE {
        c.u32_in(order)?
    } else {
        let id = c.u16_in(order)?;
        c.skip(2)?;
        u32::from(id)
    };
    let ts_units = (u64::from(c.u32_in(order)?) << 32) | u64::from(c.u32_in(order)?);
    Some((if_id, ts_units, c.u32_in(order)?, c.u32_in(order)?))
}

/// Decodes `if_tsresol`: the high bit selects a power of 2, otherwise a power of 10, of
/// units per second. (Done here because pcap-parser 0.17's `build_ts_resolution` rejects
/// every power-of-2 resolution.)
fn units_per_second(tsresol: u8) -> Option<u64> {
    let exponent = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 == 0 {
        10u64.checked_pow(exponent)
    } else {
        1u64.checked_shl(exponent)
    }
}

pub(crate) struct PcapNgReader<R> {
    stream: ByteStream<R>,
    path: PathBuf,
    /// The current section's byte order.
    order: Endian,
    interfaces: Vec<Interface>,
    packets: u64,
    /// Simple packet blocks carry no time; they get the previous packet's, so flow
    /// timeouts do not see time jump back to 1970.
    last_ts: Timestamp,
    finished: bool,
}

impl<R: Read> PcapNgReader<R> {
    /// Reads the first section header; `stream` must be at offset 0.
    pub(crate) fn open(stream: ByteStream<R>, path: PathBuf) -> Result<Self, CaptureError> {
        let mut reader = PcapNgReader {
            stream,
            path,
            order: Endian::Little,
            interfaces: Vec::new(),
            packets: 0,
            last_ts: Timestamp(0),
            finished: false,
        };
        reader.read_section_header()?;
        Ok(reader)
    }

    /// File offset of the next unread byte (how far the file has been read).
    pub(crate) fn position(&self) -> u64 {
        self.stream.offset()
    }

    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        self.stream.bytes(range)
    }

    pub(crate) fn advance(&mut self) -> Result<Option<PacketLocation>, CaptureError> {
        if self.finished {
            return Ok(None);
        }
        loop {
            let block_offset = self.stream.offset();
            let filled = self.fill(8)?;
            let head = self.stream.available();
            let fields = if filled { self.order.u32(head, 0).zip(self.order.u32(head, 4)) } else { None };
            let Some((block_type, block_len)) = fields else {
                let have = self.stream.available().len();
                if have == 0 {
                    self.finished = true;
                    return Ok(None);
                }
                return Err(self.truncated(block_offset, format!("only {have} of 8 bytes of the block header")));
            };
            // The SHB type reads the same in both byte orders; its body says which applies.
            if block_type == SHB_TYPE {
                self.read_section_header()?;
                continue;
            }
            if block_len < 12 || !block_len.is_multiple_of(4) {
                return Err(
                    self.corrupt(block_offset, format!("block type {block_type:#x} has invalid length {block_len}"))
                );
            }
            match block_type {
                EPB_TYPE | OBSOLETE_PACKET_TYPE => {
                    return self.read_packet_block(block_offset, block_type, block_len).map(Some)
                }
                SPB_TYPE => return self.read_simple_packet_block(block_offset, block_len).map(Some),
                IDB_TYPE => self.read_interface_description(block_offset, block_len)?,
                _ => {
                    if !self.skip(u64::from(block_len))? {
                        return Err(self.truncated(
                            block_offset,
                            format!("input ends inside a {block_len}-byte block of type {block_type:#x}"),
                        ));
                    }
                }
            }
        }
    }

    fn read_section_header(&mut self) -> Result<(), CaptureError> {
        let block_offset = self.stream.offset();
        let filled = self.fill(12)?;
        let head = self.stream.available();
        // Magic and length as little-endian; a big-endian section reads them swapped.
        let fields = if filled { bytes::le_u32(head, 8).zip(bytes::le_u32(head, 4)) } else { None };
        let Some((magic, le_len)) = fields else {
            let have = self.stream.available().len();
            return Err(self.truncated(block_offset, format!("only {have} of 12 bytes of the section header block")));
        };
        let (order, block_len) = match magic {
            BYTE_ORDER_MAGIC => (Endian::Little, le_len),
            m if m.swap_bytes() == BYTE_ORDER_MAGIC => (Endian::Big, le_len.swap_bytes()),
            other => {
                return Err(
                    self.corrupt(block_offset, format!("section header has unknown byte-order magic {other:#010x}"))
                );
            }
        };
        if block_len < 28 || !block_len.is_multiple_of(4) {
            return Err(self.corrupt(block_offset, format!("section header block has invalid length {block_len}")));
        }
        let range = self.read_whole_block(block_offset, block_len, order, "section header block")?;
        let version = match parse_sectionheaderblock(self.stream.bytes(range)) {
            Ok((_, shb)) => Ok((shb.major_version, shb.minor_version)),
            Err(_) => Err(()),
        };
        match version {
            Ok((1, _)) => {}
            Ok((major, minor)) => {
                return Err(self.corrupt(block_offset, format!("unsupported pcapng version {major}.{minor}")));
            }
            Err(()) => return Err(self.corrupt(block_offset, "unparsable section header block".to_string())),
        }
        self.order = order;
        self.interfaces.clear();
        Ok(())
    }

    fn read_interface_description(&mut self, block_offset: u64, block_len: u32) -> Result<(), CaptureError> {
        if block_len < 20 {
            return Err(
                self.corrupt(block_offset, format!("interface description block has invalid length {block_len}"))
            );
        }
        let range = self.read_whole_block(block_offset, block_len, self.order, "interface description block")?;
        let order = self.order;
        let block = self.stream.bytes(range);
        let parsed = match order {
            Endian::Big => parse_interfacedescriptionblock_be(block),
            Endian::Little => parse_interfacedescriptionblock_le(block),
        };
        // Pull plain values out so the borrow of the buffer ends before any error path.
        let fields = parsed.ok().map(|(_, idb)| {
            let offset_secs = idb
                .options
                .iter()
                .find(|opt| opt.code == OptionCode::IfTsoffset)
                .and_then(|opt| opt.as_bytes().ok())
                .filter(|value| value.len() == 8)
                .and_then(|value| order.u64(value, 0))
                .map(|units| units as i64)
                .unwrap_or(0);
            (idb.linktype.0 as u32 & 0xffff, idb.if_tsresol, offset_secs)
        });
        let Some((linktype, tsresol, offset_secs)) = fields else {
            return Err(self.corrupt(block_offset, "unparsable interface description block".to_string()));
        };
        let Some(units_per_sec) = units_per_second(tsresol) else {
            return Err(self.corrupt(block_offset, format!("interface has unsupported if_tsresol {tsresol:#04x}")));
        };
        if self.interfaces.len() >= MAX_INTERFACES {
            return Err(self.corrupt(block_offset, format!("more than {MAX_INTERFACES} interfaces in one section")));
        }
        let nanos_per_unit =
            Timestamp::NANOS_PER_SEC.is_multiple_of(units_per_sec).then(|| Timestamp::NANOS_PER_SEC / units_per_sec);
        self.interfaces.push(Interface {
            link: LinkType::from_pcap(linktype),
            units_per_sec,
            nanos_per_unit,
            offset_secs,
        });
        Ok(())
    }

    /// EPB and the obsolete PB share a layout: interface id (EPB: u32; PB: u16 + drop
    /// count), timestamp high/low, captured length, original length, data, options.
    fn read_packet_block(
        &mut self,
        block_offset: u64,
        block_type: u32,
        block_len: u32,
    ) -> Result<PacketLocation, CaptureError> {
        let name = if block_type == EPB_TYPE { "enhanced packet block" } else { "packet block" };
        if (block_len as usize) < PACKET_BLOCK_DATA_AT + 4 {
            return Err(self.corrupt(block_offset, format!("{name} has invalid length {block_len}")));
        }
        let range = self.read_whole_block(block_offset, block_len, self.order, name)?;
        let fields = packet_block_fields(self.stream.bytes(range.clone()), block_type, self.order);
        let Some((if_id, ts_units, caplen, wire_len)) = fields else {
            return Err(self.corrupt(block_offset, format!("{name} has invalid length {block_len}")));
        };
        if caplen > MAX_CAPLEN {
            return Err(
                self.corrupt(block_offset, format!("{name} caplen {caplen} exceeds the {MAX_CAPLEN}-byte limit"))
            );
        }
        if PACKET_BLOCK_DATA_AT + caplen as usize + 4 > block_len as usize {
            return Err(
                self.corrupt(block_offset, format!("{name} caplen {caplen} overruns its {block_len}-byte block"))
            );
        }
        let Some(interface) = self.interfaces.get(if_id as usize) else {
            return Err(self.corrupt(
                block_offset,
                format!("{name} names interface {if_id}, section has {}", self.interfaces.len()),
            ));
        };
        let ts = interface.timestamp(ts_units);
        let link = interface.link;
        self.last_ts = ts;
        self.packets += 1;
        let data_start = range.start + PACKET_BLOCK_DATA_AT;
        Ok(PacketLocation { ts, link, wire_len, range: data_start..data_start + caplen as usize })
    }

    /// SPB: original length and data only; it belongs to interface 0 and has no timestamp.
    fn read_simple_packet_block(&mut self, block_offset: u64, block_len: u32) -> Result<PacketLocation, CaptureError> {
        if block_len < 16 {
            return Err(self.corrupt(block_offset, format!("simple packet block has invalid length {block_len}")));
        }
        let range = self.read_whole_block(block_offset, block_len, self.order, "simple packet block")?;
        let Some(wire_len) = self.order.u32(self.stream.bytes(range.clone()), 8) else {
            return Err(self.corrupt(block_offset, format!("simple packet block has invalid length {block_len}")));
        };
        // The captured length is implied: the original length, unless the block is shorter.
        let caplen = (wire_len as usize).min(block_len as usize - 16);
        let Some(interface) = self.interfaces.first() else {
            return Err(self.corrupt(block_offset, "simple packet block before any interface description".to_string()));
        };
        let link = interface.link;
        self.packets += 1;
        let data_start = range.start + SPB_DATA_AT;
        Ok(PacketLocation { ts: self.last_ts, link, wire_len, range: data_start..data_start + caplen })
    }

    /// Buffers and consumes a whole block after checking its size against the limit and
    /// its trailing length copy; returns where it sits in the buffer.
    fn read_whole_block(
        &mut self,
        block_offset: u64,
        block_len: u32,
        order: Endian,
        name: &str,
    ) -> Result<Range<usize>, CaptureError> {
        if block_len > MAX_PARSED_BLOCK_LEN {
            return Err(self.corrupt(
                block_offset,
                format!("{name} length {block_len} exceeds the {MAX_PARSED_BLOCK_LEN}-byte limit"),
            ));
        }
        let len = block_len as usize;
        let filled = self.fill(len)?;
        let trailer =
            if filled { len.checked_sub(4).and_then(|at| order.u32(self.stream.available(), at)) } else { None };
        let Some(trailer) = trailer else {
            let have = self.stream.available().len();
            return Err(self.truncated(block_offset, format!("only {have} of {block_len} bytes of the {name}")));
        };
        if trailer != block_len {
            return Err(
                self.corrupt(block_offset, format!("{name} length {block_len} does not match its trailer {trailer}"))
            );
        }
        Ok(self.stream.take(len))
    }

    fn fill(&mut self, needed: usize) -> Result<bool, CaptureError> {
        self.stream.fill(needed).map_err(|source| self.io_error(source))
    }

    fn skip(&mut self, len: u64) -> Result<bool, CaptureError> {
        self.stream.skip(len).map_err(|source| self.io_error(source))
    }

    fn io_error(&mut self, source: std::io::Error) -> CaptureError {
        self.finished = true;
        CaptureError::Io { path: self.path.clone(), offset: self.stream.offset(), source }
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
