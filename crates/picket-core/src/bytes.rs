//! Bounds-checked reading of integers from byte slices: the one reader every parser uses.
//!
//! Two forms: free functions that read a fixed-width integer at an offset
//! (`be_u16(buf, 12)`), and a [`Cursor`] that reads fields in sequence. Every read
//! returns `None` when the bytes are not there; nothing here panics, whatever the input.
//! Network protocols are big-endian; the little-endian and [`Endian`] forms serve capture
//! file formats, whose byte order the file announces. Pure: no I/O, no allocation.

/// The `N` bytes at `off`, or `None` when `buf` is shorter than `off + N`.
#[inline]
pub fn array<const N: usize>(buf: &[u8], off: usize) -> Option<[u8; N]> {
    buf.get(off..)?.first_chunk::<N>().copied()
}

/// The byte at `off`.
#[inline]
pub fn u8_at(buf: &[u8], off: usize) -> Option<u8> {
    buf.get(off).copied()
}

#[inline]
pub fn be_u16(buf: &[u8], off: usize) -> Option<u16> {
    array(buf, off).map(u16::from_be_bytes)
}

/// A 24-bit big-endian integer (TLS lengths).
#[inline]
pub fn be_u24(buf: &[u8], off: usize) -> Option<u32> {
    array::<3>(buf, off).map(|[a, b, c]| u32::from_be_bytes([0, a, b, c]))
}

#[inline]
pub fn be_u32(buf: &[u8], off: usize) -> Option<u32> {
    array(buf, off).map(u32::from_be_bytes)
}

#[inline]
pub fn be_u64(buf: &[u8], off: usize) -> Option<u64> {
    array(buf, off).map(u64::from_be_bytes)
}

#[inline]
pub fn le_u16(buf: &[u8], off: usize) -> Option<u16> {
    array(buf, off).map(u16::from_le_bytes)
}

#[inline]
pub fn le_u32(buf: &[u8], off: usize) -> Option<u32> {
    array(buf, off).map(u32::from_le_bytes)
}

#[inline]
pub fn le_u64(buf: &[u8], off: usize) -> Option<u64> {
    array(buf, off).map(u64::from_le_bytes)
}

/// Native byte order: structures the local kernel wrote (AF_PACKET ring headers).
#[inline]
pub fn ne_u16(buf: &[u8], off: usize) -> Option<u16> {
    array(buf, off).map(u16::from_ne_bytes)
}

#[inline]
pub fn ne_u32(buf: &[u8], off: usize) -> Option<u32> {
    array(buf, off).map(u32::from_ne_bytes)
}

/// A byte order chosen at run time, as capture files announce theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
}

impl Endian {
    #[inline]
    pub fn u16(self, buf: &[u8], off: usize) -> Option<u16> {
        array(buf, off).map(|a| self.u16_from(a))
    }

    #[inline]
    pub fn u32(self, buf: &[u8], off: usize) -> Option<u32> {
        array(buf, off).map(|a| self.u32_from(a))
    }

    #[inline]
    pub fn u64(self, buf: &[u8], off: usize) -> Option<u64> {
        array(buf, off).map(|a| self.u64_from(a))
    }

    #[inline]
    fn u16_from(self, a: [u8; 2]) -> u16 {
        match self {
            Endian::Big => u16::from_be_bytes(a),
            Endian::Little => u16::from_le_bytes(a),
        }
    }

    #[inline]
    fn u32_from(self, a: [u8; 4]) -> u32 {
        match self {
            Endian::Big => u32::from_be_bytes(a),
            Endian::Little => u32::from_le_bytes(a),
        }
    }

    #[inline]
    fn u64_from(self, a: [u8; 8]) -> u64 {
        match self {
            Endian::Big => u64::from_be_bytes(a),
            Endian::Little => u64::from_le_bytes(a),
        }
    }
}

/// Reads fields in sequence from a borrowed buffer. A read that does not fit returns
/// `None` and leaves the position where it was; the position never passes the end.
/// Slices handed out borrow the buffer, not the cursor.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    /// The unread tail of `buf`; the position is what `buf` has beyond it.
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    #[inline]
    pub const fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, rest: buf }
    }

    /// The whole buffer, read part included.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.buf
    }

    /// Bytes read so far: the offset of the next read in [`Cursor::data`].
    #[inline]
    pub fn pos(&self) -> usize {
        self.buf.len() - self.rest.len()
    }

    /// Moves to `pos` (backwards too); `None`, and no move, when it lies past the end.
    #[inline]
    pub fn seek(&mut self, pos: usize) -> Option<()> {
        self.rest = self.buf.get(pos..)?;
        Some(())
    }

    /// Number of bytes left to read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The bytes left to read.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next byte, without consuming it.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// The next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        self.rest = tail;
        Some(head)
    }

    #[inline]
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>()?;
        self.rest = tail;
        Some(*head)
    }

    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        let (&b, tail) = self.rest.split_first()?;
        self.rest = tail;
        Some(b)
    }

    #[inline]
    pub fn be_u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_be_bytes)
    }

    #[inline]
    pub fn be_u24(&mut self) -> Option<u32> {
        self.array::<3>().map(|[a, b, c]| u32::from_be_bytes([0, a, b, c]))
    }

    #[inline]
    pub fn be_u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_be_bytes)
    }

    #[inline]
    pub fn be_u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_be_bytes)
    }

    #[inline]
    pub fn le_u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    #[inline]
    pub fn le_u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    #[inline]
    pub fn le_u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// A u16 in a byte order chosen at run time.
    #[inline]
    pub fn u16_in(&mut self, order: Endian) -> Option<u16> {
        self.array().map(|a| order.u16_from(a))
    }

    #[inline]
    pub fn u32_in(&mut self, order: Endian) -> Option<u32> {
        self.array().map(|a| order.u32_from(a))
    }

    #[inline]
    pub fn u64_in(&mut self, order: Endian) -> Option<u64> {
        self.array().map(|a| order.u64_from(a))
    }

    /// A field with a one-byte length prefix (TLS `opaque x<0..2^8-1>`). When the field
    /// does not fit, nothing is consumed, the prefix included.
    #[inline]
    pub fn u8_prefixed(&mut self) -> Option<&'a [u8]> {
        let mut c = *self;
        let n = c.u8()?;
        let field = c.take(usize::from(n))?;
        *self = c;
        Some(field)
    }

    /// A field with a two-byte big-endian length prefix. Nothing is consumed on failure.
    #[inline]
    pub fn be_u16_prefixed(&mut self) -> Option<&'a [u8]> {
        let mut c = *self;
        let n = c.be_u16()?;
        let field = c.take(usize::from(n))?;
        *self = c;
        Some(field)
    }

    /// A field with a three-byte big-endian length prefix. Nothing is consumed on failure.
    #[inline]
    pub fn be_u24_prefixed(&mut self) -> Option<&'a [u8]> {
        let mut c = *self;
        let n = c.be_u24()?;
        let field = c.take(n as usize)?;
        *self = c;
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: [u8; 9] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09];

    #[test]
    fn readers_at_an_offset() {
        assert_eq!(u8_at(&DATA, 8), Some(0x09));
        assert_eq!(be_u16(&DATA, 0), Some(0x0102));
        assert_eq!(be_u16(&DATA, 7), Some(0x0809));
        assert_eq!(be_u24(&DATA, 1), Some(0x02_0304));
        assert_eq!(be_u32(&DATA, 5), Some(0x0607_0809));
        assert_eq!(be_u64(&DATA, 1), Some(0x0203_0405_0607_0809));
        assert_eq!(le_u16(&DATA, 0), Some(0x0201));
        assert_eq!(le_u32(&DATA, 0), Some(0x0403_0201));
        assert_eq!(le_u64(&DATA, 0), Some(0x0807_0605_0403_0201));
        assert_eq!(ne_u16(&DATA, 0), Some(u16::from_ne_bytes([1, 2])));
        assert_eq!(ne_u32(&DATA, 0), Some(u32::from_ne_bytes([1, 2, 3, 4])));
        assert_eq!(array::<2>(&DATA, 3), Some([4, 5]));
        assert_eq!(array::<0>(&DATA, 9), Some([]));
        assert_eq!(Endian::Big.u16(&DATA, 0), Some(0x0102));
        assert_eq!(Endian::Little.u16(&DATA, 0), Some(0x0201));
        assert_eq!(Endian::Big.u32(&DATA, 0), Some(0x0102_0304));
        assert_eq!(Endian::Little.u32(&DATA, 0), Some(0x0403_0201));
        assert_eq!(Endian::Big.u64(&DATA, 0), Some(0x0102_0304_0506_0708));
        assert_eq!(Endian::Little.u64(&DATA, 1), Some(0x0908_0706_0504_0302));
    }

    #[test]
    fn truncated_reads_at_an_offset_are_none() {
        assert_eq!(u8_at(&DATA, 9), None);
        assert_eq!(be_u16(&DATA, 8), None);
        assert_eq!(be_u24(&DATA, 7), None);
        assert_eq!(be_u32(&DATA, 6), None);
        assert_eq!(be_u64(&DATA, 2), None);
        assert_eq!(le_u16(&DATA, 8), None);
        assert_eq!(le_u32(&DATA, 6), None);
        assert_eq!(le_u64(&DATA, 2), None);
        assert_eq!(ne_u32(&DATA, 6), None);
        assert_eq!(Endian::Little.u32(&DATA, 6), None);
        assert_eq!(be_u16(&[], 0), None);
        assert_eq!(array::<1>(&DATA, 10), None);
        // Offsets near usize::MAX must not overflow.
        assert_eq!(be_u32(&DATA, usize::MAX), None);
        assert_eq!(be_u16(&DATA, usize::MAX - 1), None);
        assert_eq!(u8_at(&DATA, usize::MAX), None);
    }

    #[test]
    fn cursor_reads_in_sequence() {
        let mut c = Cursor::new(&DATA);
        assert_eq!((c.pos(), c.remaining(), c.is_empty()), (0, 9, false));
        assert_eq!(c.peek(), Some(1));
        assert_eq!(c.u8(), Some(1));
        assert_eq!(c.be_u16(), Some(0x0203));
        assert_eq!(c.be_u24(), Some(0x04_0506));
        assert_eq!(c.pos(), 6);
        assert_eq!(c.rest(), &DATA[6..]);
        assert_eq!(c.take(2), Some(&[7, 8][..]));
        assert_eq!(c.array::<1>(), Some([9]));
        assert!(c.is_empty());
        assert_eq!(c.remaining(), 0);
        assert_eq!(c.rest(), &[] as &[u8]);
        assert_eq!(c.data(), &DATA);

        let mut c = Cursor::new(&DATA);
        assert_eq!(c.be_u32(), Some(0x0102_0304));
        assert_eq!(c.le_u32(), Some(0x0807_0605));
        let mut c = Cursor::new(&DATA);
        assert_eq!(c.le_u16(), Some(0x0201));
        assert_eq!(c.be_u64(), None);
        c.seek(1).unwrap();
        assert_eq!(c.be_u64(), Some(0x0203_0405_0607_0809));
        let mut c = Cursor::new(&DATA);
        assert_eq!(c.le_u64(), Some(0x0807_0605_0403_0201));
        let mut c = Cursor::new(&DATA);
        assert_eq!(c.u16_in(Endian::Little), Some(0x0201));
        assert_eq!(c.u32_in(Endian::Big), Some(0x0304_0506));
        assert_eq!(c.u16_in(Endian::Big), Some(0x0708));
        assert_eq!(c.u64_in(Endian::Big), None);
        let mut c = Cursor::new(&DATA);
        assert_eq!(c.u64_in(Endian::Little), Some(0x0807_0605_0403_0201));
    }

    #[test]
    fn cursor_truncated_reads_are_none_and_consume_nothing() {
        let mut c = Cursor::new(&DATA[..3]);
        assert_eq!(c.be_u32(), None);
        assert_eq!(c.be_u24(), Some(0x01_0203));
        assert_eq!(c.u8(), None);
        assert_eq!(c.peek(), None);
        assert_eq!(c.take(1), None);
        assert_eq!(c.skip(1), None);
        assert_eq!(c.take(0), Some(&[] as &[u8]));
        assert_eq!(c.pos(), 3);

        let mut c = Cursor::new(&DATA[..5]);
        c.skip(2).unwrap();
        for _ in 0..2 {
            assert_eq!(c.be_u64(), None);
            assert_eq!(c.le_u64(), None);
            assert_eq!(c.be_u32(), None);
            assert_eq!(c.le_u32(), None);
            assert_eq!(c.u32_in(Endian::Big), None);
            assert_eq!(c.u64_in(Endian::Little), None);
            assert_eq!(c.array::<4>(), None);
            assert_eq!(c.take(4), None);
            assert_eq!(c.take(usize::MAX), None);
            assert_eq!(c.pos(), 2);
        }
        assert_eq!(c.le_u16(), Some(0x0403));
        assert_eq!(c.be_u16(), None);
        assert_eq!(c.u16_in(Endian::Little), None);
        assert_eq!(c.u8(), Some(5));
        assert!(c.is_empty());

        let mut empty = Cursor::new(&[]);
        assert_eq!((empty.u8(), empty.be_u16(), empty.remaining()), (None, None, 0));
    }

    #[test]
    fn cursor_seek_stays_inside() {
        let mut c = Cursor::new(&DATA);
        assert_eq!(c.seek(9), Some(()));
        assert!(c.is_empty());
        assert_eq!(c.seek(10), None);
        assert_eq!(c.pos(), 9);
        assert_eq!(c.seek(usize::MAX), None);
        assert_eq!(c.seek(4), Some(()));
        assert_eq!(c.u8(), Some(5));
    }

    #[test]
    fn length_prefixed_fields() {
        let buf = [2, 0xaa, 0xbb, 0, 1, 0xcc, 0, 0, 2, 0xdd, 0xee];
        let mut c = Cursor::new(&buf);
        assert_eq!(c.u8_prefixed(), Some(&[0xaa, 0xbb][..]));
        assert_eq!(c.be_u16_prefixed(), Some(&[0xcc][..]));
        assert_eq!(c.be_u24_prefixed(), Some(&[0xdd, 0xee][..]));
        assert!(c.is_empty());

        // A length that runs past the end consumes nothing, not even the prefix.
        for cut in 0..buf.len() {
            let mut c = Cursor::new(&buf[..cut]);
            let got = c.u8_prefixed();
            assert_eq!(got.is_some(), cut >= 3, "cut {cut}");
            if got.is_none() {
                assert_eq!(c.pos(), 0);
            }
        }
        let mut c = Cursor::new(&[0, 5, 1, 2]);
        assert_eq!(c.be_u16_prefixed(), None);
        assert_eq!(c.pos(), 0);
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 1]);
        assert_eq!(c.be_u24_prefixed(), None);
        assert_eq!(c.pos(), 0);
        let mut c = Cursor::new(&[0, 0]);
        assert_eq!(c.be_u24_prefixed(), None);
        assert_eq!(c.pos(), 0);
    }

    #[test]
    fn hostile_lengths_never_panic() {
        // Every read at every offset and cut of a small buffer either fits or is None.
        let buf: Vec<u8> = (0..32u8).collect();
        for len in 0..buf.len() {
            let b = &buf[..len];
            for off in 0..len + 10 {
                assert_eq!(be_u32(b, off).is_some(), off + 4 <= len);
                assert_eq!(be_u24(b, off).is_some(), off + 3 <= len);
                assert_eq!(le_u16(b, off).is_some(), off + 2 <= len);
                let mut c = Cursor::new(b);
                if c.seek(off).is_none() {
                    assert!(off > len);
                    assert_eq!(c.pos(), 0);
                    continue;
                }
                assert_eq!((c.pos(), c.remaining()), (off, len - off));
                let (mut long, mut prefixed) = (c, c);
                assert_eq!(long.be_u64().is_some(), off + 8 <= len);
                let fits = be_u24(b, off).is_some_and(|n| off + 3 + n as usize <= len);
                assert_eq!(prefixed.be_u24_prefixed().is_some(), fits);
                assert_eq!(c.u8_prefixed().is_some(), off < len && off + 1 + usize::from(b[off]) <= len);
            }
        }
    }
}
