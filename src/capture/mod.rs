//! Packet sources: where packets come from before the dispatcher sees them.
//!
//! Offline sources read pcap and pcapng files (or a directory of them, like Suricata's
//! `-r DIR`) through a streaming buffer, so multi-gigabyte captures never sit in memory.
//! [`MemorySource`] preloads a capture for benchmarks. Live capture (AF_PACKET, AF_XDP,
//! NFQUEUE) implements the same [`PacketSource`] trait.
//!
//! Error contract for callers: an `Err` from [`PacketSource::next_packet`] is reported
//! once and ends the *current file* only. The caller logs it as a warning and keeps
//! calling: a single-file source then returns `Ok(None)`; a directory source goes on with
//! its next file (one damaged file in a rotated capture set should not hide the others).
//! Everything readable before the damage has already been delivered.

pub mod afpacket;
pub mod afxdp;
pub mod bpf;
pub mod bridge;
mod file;
mod legacy;
mod memory;
pub mod nfqueue;
pub mod offload;
mod pcapng;
pub mod port;
pub mod prefetch;
mod record;
mod stream;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::packet::{LinkType, Timestamp};

pub use file::{open_offline, open_reader, DirectorySource, FileSource};
pub use memory::MemorySource;
pub use port::{KernelCounts, LivePort, PortMode};

/// Largest captured length accepted for one packet. Real link layers stay far below it
/// (jumbo frames, GRO super-packets up to 64 KiB); anything bigger is a corrupt length
/// field, and refusing it keeps a hostile file from forcing a huge allocation.
pub const MAX_CAPLEN: u32 = 256 * 1024;

/// How far a reader looks ahead to load flow state early: the packet this many after the
/// one being read ([`PacketSource::next_packet_ahead`], [`crate::pipeline`]'s `FlowsAhead`).
/// Four: one packet's inspection each to load the flow table's hint, then the hinted
/// slot, then the reassembly and app layer the slot points to, then the app layer's parser.
pub const AHEAD: usize = 4;

/// The packet [`AHEAD`] after the one being read, if the source holds it already: (link
/// type, bytes).
pub type Ahead<'a> = Option<(LinkType, &'a [u8])>;

/// One captured packet, borrowing the source's buffer.
#[derive(Clone, Copy, Debug)]
pub struct RawPacket<'a> {
    pub ts: Timestamp,
    pub link: LinkType,
    /// Length on the wire; `data` may be shorter when the snaplen cut the packet.
    pub wire_len: u32,
    pub data: &'a [u8],
}

pub trait PacketSource {
    /// Next packet, borrowing the source's buffer until the next call. Ok(None) = end of input.
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError>;
    /// The next packet and, when the source holds it already, the packet [`AHEAD`] after
    /// it, which the reader may look at to load its flow's state ahead. The default looks
    /// at nothing ahead.
    fn next_packet_ahead(&mut self) -> Result<Option<(RawPacket<'_>, Ahead<'_>)>, CaptureError> {
        Ok(self.next_packet()?.map(|raw| (raw, None)))
    }
    /// Human-readable description for logs ("file foo.pcap", "interface eth0").
    fn describe(&self) -> String;
    /// How much of the input has been read, for progress reports; `None` for sources
    /// without a known size (live capture, streams).
    fn progress(&self) -> Option<ReadProgress> {
        None
    }
    /// Offline inputs: how many files the input holds, and how many of them have been
    /// read to their end without an error. `None` for live capture and streams.
    fn file_counts(&self) -> Option<FileCounts> {
        None
    }
}

/// Files of an offline input (one for `-r FILE`, every regular file for `-r DIR`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileCounts {
    pub total: u64,
    /// Read to the end with no error reported.
    pub clean: u64,
}

/// Bytes of an offline input read so far, out of its total size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadProgress {
    pub bytes_read: u64,
    pub total_bytes: u64,
}

/// Why a source could not open or could not finish a capture. `Display` gives one line
/// naming the file, what went wrong and where.
#[derive(Debug)]
pub enum CaptureError {
    /// The file or directory could not be opened or listed (missing, permission denied).
    Open { path: PathBuf, source: io::Error },
    /// Reading failed part-way through.
    Io { path: PathBuf, offset: u64, source: io::Error },
    /// Not a pcap or pcapng file (empty, too short, or unknown magic).
    NotACapture { path: PathBuf, reason: String },
    /// The input ended inside a header or record. `offset` is where that header or
    /// record starts; `packets` were delivered from this file before it.
    Truncated { path: PathBuf, offset: u64, packets: u64, what: String },
    /// A header or record is invalid (absurd length, unknown interface, bad byte-order
    /// magic). `offset` is where it starts; `packets` were delivered from this file.
    Corrupt { path: PathBuf, offset: u64, packets: u64, what: String },
    /// A directory given as input holds no regular files.
    NoCaptureFiles { path: PathBuf },
}

impl CaptureError {
    /// Damage in the file's own content: it ends inside a record (the usual end of a
    /// capture whose writer was killed) or a record header is invalid. The file was read
    /// up to that point, and nothing after it can be framed as records, so nothing
    /// readable was skipped (Suricata, through libpcap, reads such files the same way and
    /// exits 0). Every other error skipped input: a file that could not be opened, is not
    /// a capture, or failed to read.
    pub fn is_damage(&self) -> bool {
        matches!(self, CaptureError::Truncated { .. } | CaptureError::Corrupt { .. })
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            CaptureError::Open { path, .. }
            | CaptureError::Io { path, .. }
            | CaptureError::NotACapture { path, .. }
            | CaptureError::Truncated { path, .. }
            | CaptureError::Corrupt { path, .. }
            | CaptureError::NoCaptureFiles { path } => path,
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Open { path, source } => write!(f, "{}: cannot open: {source}", path.display()),
            CaptureError::Io { path, offset, source } => {
                write!(f, "{}: read error at byte {offset}: {source}", path.display())
            }
            CaptureError::NotACapture { path, reason } => {
                write!(f, "{}: not a pcap or pcapng file: {reason}", path.display())
            }
            CaptureError::Truncated { path, offset, packets, what } => write!(
                f,
                "{}: truncated capture at byte {offset} after {packets} packet{}: {what}",
                path.display(),
                plural(*packets)
            ),
            CaptureError::Corrupt { path, offset, packets, what } => write!(
                f,
                "{}: corrupt capture at byte {offset} after {packets} packet{}: {what}",
                path.display(),
                plural(*packets)
            ),
            CaptureError::NoCaptureFiles { path } => {
                write!(f, "{}: directory holds no files to read", path.display())
            }
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CaptureError::Open { source, .. } | CaptureError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
