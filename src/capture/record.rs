//! What the file readers hand back, shared by the pcap and pcapng readers and by
//! `file.rs`, which picks one of them. Depends on neither reader.

use std::ops::Range;

use crate::packet::{LinkType, Timestamp};

/// A packet found by a reader: its metadata and where its bytes sit in the reader's buffer.
/// Readers return this instead of a borrowed slice so that callers can loop over files and
/// blocks and only borrow the buffer once they have a packet in hand.
pub(crate) struct PacketLocation {
    pub ts: Timestamp,
    pub link: LinkType,
    pub wire_len: u32,
    pub range: Range<usize>,
}
