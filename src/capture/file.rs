//! Offline sources: one capture file, or a directory of them read as one stream.
//!
//! This module picks a reader by the file's magic; the readers (`legacy`, `pcapng`)
//! depend only on `record` and `stream`, never on this module or on each other.

use std::fs::{self, File};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::legacy::{LegacyFlavor, LegacyReader};
use super::pcapng::{PcapNgReader, SHB_TYPE};
use super::record::PacketLocation;
use super::stream::ByteStream;
use super::{CaptureError, FileCounts, PacketSource, RawPacket, ReadProgress};

/// Initial read buffer; it grows when a record is larger (bounded by the record limits).
const DEFAULT_BUFFER_LEN: usize = 128 * 1024;

/// Opens a capture file or a directory of capture files (read in name order as one
/// stream). Errors here are fatal for the input: missing, unreadable, not a capture, or a
/// directory with no files in it.
pub fn open_offline(path: &Path) -> Result<Box<dyn PacketSource + Send>, CaptureError> {
    let metadata = fs::metadata(path).map_err(|source| CaptureError::Open { path: path.to_path_buf(), source })?;
    if metadata.is_dir() {
        Ok(Box::new(DirectorySource::open(path)?))
    } else {
        Ok(Box::new(FileSource::open(path)?))
    }
}

/// Reads a pcap or pcapng capture from any byte stream instead of a file (tests, fuzzing,
/// captures piped in). `name` only appears in error messages; `buffer_len` is the initial
/// read buffer, which grows when a record needs more (bounded by the record size limits),
/// so a tiny value exercises every refill path.
pub fn open_reader<R: Read + Send + 'static>(
    reader: R,
    name: &Path,
    buffer_len: usize,
) -> Result<Box<dyn PacketSource + Send>, CaptureError> {
    Ok(Box::new(CaptureReader::open(reader, name, buffer_len)?))
}

/// A capture reader over any byte stream; [`FileSource`] uses it over a `File`, tests over
/// in-memory bytes.
pub(crate) enum CaptureReader<R> {
    Legacy(LegacyReader<R>),
    PcapNg(PcapNgReader<R>),
}

impl<R: Read> CaptureReader<R> {
    /// Identifies the format by its magic and reads the file header. `path` is only used
    /// in error messages.
    pub(crate) fn open(reader: R, path: &Path, buffer_len: usize) -> Result<Self, CaptureError> {
        let owned_path = path.to_path_buf();
        let mut stream = ByteStream::new(reader, buffer_len);
        let have_magic =
            stream.fill(4).map_err(|source| CaptureError::Io { path: owned_path.clone(), offset: 0, source })?;
        if !have_magic {
            let reason = match stream.available().len() {
                0 => "empty file".to_string(),
                n => format!("file is only {n} bytes long"),
            };
            return Err(CaptureError::NotACapture { path: owned_path, reason });
        }
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&stream.available()[..4]);
        if let Some(flavor) = LegacyFlavor::from_magic(magic) {
            Ok(CaptureReader::Legacy(LegacyReader::open(stream, owned_path, flavor)?))
        } else if u32::from_le_bytes(magic) == SHB_TYPE {
            Ok(CaptureReader::PcapNg(PcapNgReader::open(stream, owned_path)?))
        } else {
            Err(CaptureError::NotACapture { path: owned_path, reason: describe_unknown_magic(magic) })
        }
    }

    pub(crate) fn advance(&mut self) -> Result<Option<PacketLocation>, CaptureError> {
        match self {
            CaptureReader::Legacy(reader) => reader.advance(),
            CaptureReader::PcapNg(reader) => reader.advance(),
        }
    }

    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        match self {
            CaptureReader::Legacy(reader) => reader.bytes(range),
            CaptureReader::PcapNg(reader) => reader.bytes(range),
        }
    }

    /// File offset of the next unread byte.
    pub(crate) fn position(&self) -> u64 {
        match self {
            CaptureReader::Legacy(reader) => reader.position(),
            CaptureReader::PcapNg(reader) => reader.position(),
        }
    }

    #[cfg(test)]
    pub(crate) fn buffer_capacity(&self) -> usize {
        match self {
            CaptureReader::Legacy(reader) => reader.buffer_capacity(),
            CaptureReader::PcapNg(reader) => reader.buffer_capacity(),
        }
    }
}

impl<R: Read> PacketSource for CaptureReader<R> {
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
        Ok(self.advance()?.map(|loc| RawPacket {
            ts: loc.ts,
            link: loc.link,
            wire_len: loc.wire_len,
            data: self.bytes(loc.range),
        }))
    }

    fn describe(&self) -> String {
        "capture stream".to_string()
    }
}

/// One pcap or pcapng file, read through a buffer (never loaded whole).
pub struct FileSource {
    path: PathBuf,
    reader: CaptureReader<File>,
    /// Size of the file when it was opened (progress reports).
    size: u64,
    /// The reader reached the end of the file with no error.
    ended_clean: bool,
}

impl FileSource {
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        Self::open_with_buffer(path, DEFAULT_BUFFER_LEN)
    }

    pub(crate) fn open_with_buffer(path: &Path, buffer_len: usize) -> Result<Self, CaptureError> {
        let file = File::open(path).map_err(|source| CaptureError::Open { path: path.to_path_buf(), source })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(FileSource {
            path: path.to_path_buf(),
            reader: CaptureReader::open(file, path, buffer_len)?,
            size,
            ended_clean: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn advance(&mut self) -> Result<Option<PacketLocation>, CaptureError> {
        let next = self.reader.advance();
        if matches!(next, Ok(None)) {
            self.ended_clean = true;
        }
        next
    }

    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        self.reader.bytes(range)
    }
}

fn describe_unknown_magic(magic: [u8; 4]) -> String {
    let hex = format!("{:02x} {:02x} {:02x} {:02x}", magic[0], magic[1], magic[2], magic[3]);
    if u32::from_le_bytes(magic) == 0xa1b2_cd34 || u32::from_be_bytes(magic) == 0xa1b2_cd34 {
        format!("magic {hex} is the modified (Kuznetzov) pcap format, which is not supported")
    } else {
        format!("unknown magic bytes {hex}")
    }
}

impl PacketSource for FileSource {
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
        Ok(self.advance()?.map(|loc| RawPacket {
            ts: loc.ts,
            link: loc.link,
            wire_len: loc.wire_len,
            data: self.bytes(loc.range),
        }))
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }

    fn progress(&self) -> Option<ReadProgress> {
        Some(ReadProgress { bytes_read: self.reader.position().min(self.size), total_bytes: self.size })
    }

    fn file_counts(&self) -> Option<FileCounts> {
        Some(FileCounts { total: 1, clean: u64::from(self.ended_clean) })
    }
}

/// Every regular file of a directory, in name order, as one stream (Suricata's `-r DIR`).
/// Files are opened one at a time when the previous one ends. A file that cannot be opened
/// or is not a capture, and a file that turns out truncated or corrupt, yields its error
/// once (a warning for the caller) and reading goes on with the next file.
pub struct DirectorySource {
    dir: PathBuf,
    files: Vec<PathBuf>,
    next_file: usize,
    current: Option<FileSource>,
    buffer_len: usize,
    /// Sizes of the files, in reading order (progress reports).
    sizes: Vec<u64>,
    /// Files read to their end with no error.
    clean: u64,
}

impl DirectorySource {
    pub fn open(dir: &Path) -> Result<Self, CaptureError> {
        Self::open_with_buffer(dir, DEFAULT_BUFFER_LEN)
    }

    pub(crate) fn open_with_buffer(dir: &Path, buffer_len: usize) -> Result<Self, CaptureError> {
        let open_error = |source| CaptureError::Open { path: dir.to_path_buf(), source };
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(open_error)? {
            let path = entry.map_err(open_error)?.path();
            // Follows symlinks. An entry whose metadata cannot be read is kept, so that
            // opening it reports why instead of it silently vanishing.
            if fs::metadata(&path).map(|m| m.is_file()).unwrap_or(true) {
                files.push(path);
            }
        }
        if files.is_empty() {
            return Err(CaptureError::NoCaptureFiles { path: dir.to_path_buf() });
        }
        // All entries share the parent, so path order is file-name order.
        files.sort();
        let sizes = files.iter().map(|f| fs::metadata(f).map(|m| m.len()).unwrap_or(0)).collect();
        Ok(DirectorySource { dir: dir.to_path_buf(), files, next_file: 0, current: None, buffer_len, sizes, clean: 0 })
    }

    /// The files that make up the stream, in reading order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

impl PacketSource for DirectorySource {
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, CaptureError> {
        let location = loop {
            let file = match &mut self.current {
                Some(file) => file,
                None => {
                    let Some(path) = self.files.get(self.next_file) else {
                        return Ok(None);
                    };
                    self.next_file += 1;
                    self.current = Some(FileSource::open_with_buffer(path, self.buffer_len)?);
                    continue;
                }
            };
            match file.advance() {
                Ok(Some(location)) => break location,
                Ok(None) => {
                    self.clean += 1;
                    self.current = None;
                }
                Err(e) => {
                    self.current = None;
                    return Err(e);
                }
            }
        };
        let Some(file) = &self.current else {
            return Ok(None);
        };
        Ok(Some(RawPacket {
            ts: location.ts,
            link: location.link,
            wire_len: location.wire_len,
            data: file.bytes(location.range),
        }))
    }

    fn describe(&self) -> String {
        match &self.current {
            Some(file) => format!("directory {} (reading {})", self.dir.display(), file.path().display()),
            None => format!("directory {}", self.dir.display()),
        }
    }

    /// Files done count whole; the current one up to its read position.
    fn progress(&self) -> Option<ReadProgress> {
        let total_bytes = self.sizes.iter().sum();
        let (done, current) = match &self.current {
            // `next_file` is one past the file being read.
            Some(file) => (self.next_file.saturating_sub(1), file.progress().map_or(0, |p| p.bytes_read)),
            None => (self.next_file, 0),
        };
        let bytes_read = self.sizes.iter().take(done).sum::<u64>() + current;
        Some(ReadProgress { bytes_read: bytes_read.min(total_bytes), total_bytes })
    }

    fn file_counts(&self) -> Option<FileCounts> {
        Some(FileCounts { total: self.files.len() as u64, clean: self.clean })
    }
}
