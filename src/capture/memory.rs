//! A capture preloaded into memory and replayed, so benchmarks measure the pipeline and
//! not the disk.

use std::path::Path;

use super::{open_offline, CaptureError, PacketSource, RawPacket};
use crate::packet::{LinkType, Timestamp};

struct StoredPacket {
    ts: Timestamp,
    link: LinkType,
    wire_len: u32,
    start: usize,
    end: usize,
}

/// All packets of a capture back to back in one buffer, with an index beside it.
/// Replaying costs one index lookup per packet.
pub struct MemorySource {
    description: String,
    bytes: Vec<u8>,
    packets: Vec<StoredPacket>,
    next: usize,
}

impl MemorySource {
    /// Reads a whole capture file or directory. Strict: any truncation, corruption or
    /// unreadable file is returned as the error, since a benchmark on half a capture
    /// would mislead.
    pub fn load(path: &Path) -> Result<Self, CaptureError> {
        let mut source = open_offline(path)?;
        let mut loaded = Self::from_source(source.as_mut())?;
        loaded.description = format!("memory copy of {}", path.display());
        Ok(loaded)
    }

    /// Drains `source` into memory; stops at the first error and returns it.
    pub fn from_source(source: &mut dyn PacketSource) -> Result<Self, CaptureError> {
        let description = format!("memory copy of {}", source.describe());
        let mut bytes = Vec::new();
        let mut packets = Vec::new();
        while let Some(packet) = source.next_packet()? {
            let start = bytes.len();
            bytes.extend_from_slice(packet.data);
            packets.push(StoredPacket {
                ts: packet.ts,
                link: packet.link,
                wire_len: packet.wire_len,
                start,
                end: bytes.len(),
            });
        }
        bytes.shrink_to_fit();
        packets.shrink_to_fit();
        Ok(MemorySource { description, bytes, packets, next: 0 })
    }

    /// Starts the replay over from the first packet.
    pub fn reset(&mut self) {
        self.next = 0;
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Captured bytes held, excluding the index.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }
}

impl MemorySource {
    /// The index of the next packet, moving past it; `None` at the end.
    fn take_next(&mut self) -> Option<usize> {
        let i = self.next;
        (i < self.packets.len()).then(|| {
            self.next += 1;
            i
        })
    }

    /// Packet `i` of the capture, if there is one.
    #[inline]
    fn raw(&self, i: usize) -> Option<RawPacket<'_>> {
        let stored = self.packets.get(i)?;
        Some(RawPacket {
            ts: stored.ts,
            link: stored.link,
            wire_len: stored.wire_len,
            data: self.bytes.get(stored.start..stored.end).unwrap_or(&[]),
        })
    }
}

impl PacketSource for MemorySource {
    #[inline]
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
        let Some(i) = self.take_next() else { return Ok(None) };
        Ok(self.raw(i))
    }

    #[inline]
    fn next_packet_ahead(&mut self) -> Result<Option<(RawPacket<'_>, super::Ahead<'_>)>, CaptureError> {
        let Some(i) = self.take_next() else { return Ok(None) };
        let Some(raw) = self.raw(i) else { return Ok(None) };
        // The headers of the packet after the one ahead, which the reader decodes next time.
        if let Some(later) = self.raw(i + super::AHEAD + 1) {
            super::prefetch::headers(later.data);
        }
        Ok(Some((raw, self.raw(i + super::AHEAD).map(|p| (p.link, p.data)))))
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
