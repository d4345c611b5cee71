//! A read buffer that tracks the file offset of every byte and hands out packet bytes
//! by buffer range, so a reader can consume a record and still lend its bytes until the
//! next refill.

use std::io::{self, Read};
use std::ops::Range;

/// Buffered reader over a capture file. Bytes `buf[start..end]` are read but not yet
/// consumed; `buf[..start]` keeps the bytes of the record consumed last, which stay valid
/// until the next [`ByteStream::fill`].
pub(crate) struct ByteStream<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    at_eof: bool,
}

impl<R: Read> ByteStream<R> {
    pub(crate) fn new(reader: R, capacity: usize) -> Self {
        ByteStream { reader, buf: vec![0; capacity.max(16)], start: 0, end: 0, offset: 0, at_eof: false }
    }

    /// File offset of the next unconsumed byte.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The read-ahead bytes not consumed yet.
    pub(crate) fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Makes at least `needed` bytes available. Returns `Ok(false)` when the input ends
    /// first; [`available`](Self::available) then holds whatever was left. Callers bound
    /// `needed` (by the record size limits) before calling, since the buffer grows to fit.
    pub(crate) fn fill(&mut self, needed: usize) -> io::Result<bool> {
        if self.end - self.start >= needed {
            return Ok(true);
        }
        if needed > self.buf.len() {
            // Grow by doubling so a run of large records does not reallocate each time.
            let new_len = needed.max(self.buf.len().saturating_mul(2));
            let mut grown = vec![0; new_len];
            grown[..self.end - self.start].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = grown;
            self.end -= self.start;
            self.start = 0;
        } else if self.start + needed > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.end - self.start < needed && !self.at_eof {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.at_eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start >= needed)
    }

    /// Consumes `len` available bytes and returns where they sit in the buffer; they can be
    /// read with [`bytes`](Self::bytes) until the next `fill`.
    pub(crate) fn take(&mut self, len: usize) -> Range<usize> {
        let len = len.min(self.end - self.start);
        let range = self.start..self.start + len;
        self.start += len;
        self.offset += len as u64;
        range
    }

    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or(&[])
    }

    /// Discards `len` bytes without buffering them all (for pcapng blocks picket does not
    /// use, which may be of any size). Returns `Ok(false)` if the input ended first.
    pub(crate) fn skip(&mut self, mut len: u64) -> io::Result<bool> {
        loop {
            let buffered = (self.end - self.start) as u64;
            let step = buffered.min(len);
            self.take(step as usize);
            len -= step;
            if len == 0 {
                return Ok(true);
            }
            // Refill with whatever the reader gives, at most one buffer's worth.
            let want = (len.min(self.buf.len() as u64)) as usize;
            if !self.fill(want)? && self.end == self.start {
                return Ok(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `chunk` bytes per call, like a pipe would.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.chunk.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn fill_take_skip_track_offsets_across_refills_and_growth() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut s = ByteStream::new(Trickle { data: &data, chunk: 7 }, 16);
        assert!(s.fill(10).unwrap());
        let r = s.take(10);
        assert_eq!(s.bytes(r), &data[..10]);
        // Larger than the buffer: it must grow and keep the unconsumed bytes.
        assert!(s.fill(100).unwrap());
        assert!(s.capacity() >= 100);
        let r = s.take(100);
        assert_eq!(s.bytes(r), &data[10..110]);
        assert!(s.skip(500).unwrap());
        assert_eq!(s.offset(), 610);
        assert!(s.fill(4).unwrap());
        assert_eq!(&s.available()[..4], &data[610..614]);
        assert!(!s.skip(1000).unwrap());
        assert!(!s.fill(1).unwrap());
        assert_eq!(s.offset(), 1000);
    }
}
