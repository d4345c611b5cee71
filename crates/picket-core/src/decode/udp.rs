//! UDP header view (RFC 768).

use super::events::DecodeEvent;

pub const UDP_HEADER_LEN: usize = 8;

/// A checked UDP datagram: at least the 8-byte header captured.
#[derive(Clone, Copy, Debug)]
pub struct UdpView<'a> {
    data: &'a [u8],
}

impl<'a> UdpView<'a> {
    pub fn new(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        if data.len() < UDP_HEADER_LEN {
            return Err(DecodeEvent::UdpPktTooSmall);
        }
        Ok(UdpView { data })
    }

    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.data[0], self.data[1]])
    }
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.data[2], self.data[3]])
    }
    /// The length field: header plus data, as the sender claims.
    pub fn length(&self) -> u16 {
        u16::from_be_bytes([self.data[4], self.data[5]])
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.data[6], self.data[7]])
    }
    /// The datagram as the length field delimits it, cut to what was captured; the
    /// bytes given to `new` when the length field is below 8.
    pub fn datagram(&self) -> &'a [u8] {
        let len = self.length() as usize;
        if len < UDP_HEADER_LEN {
            return self.data;
        }
        &self.data[..len.min(self.data.len())]
    }
    /// Data after the header, bounded by the length field and the capture. Empty when
    /// the length field is below 8 (the datagram's extent is then unknown).
    pub fn payload(&self) -> &'a [u8] {
        if (self.length() as usize) < UDP_HEADER_LEN {
            return &[];
        }
        &self.datagram()[UDP_HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_and_bounds() {
        let d = [0, 53, 0x30, 0x39, 0, 10, 0xab, 0xcd, b'h', b'i', 0, 0, 0];
        let u = UdpView::new(&d).unwrap();
        assert_eq!((u.src_port(), u.dst_port(), u.length(), u.checksum()), (53, 12345, 10, 0xabcd));
        assert_eq!(u.payload(), b"hi");
        assert_eq!(UdpView::new(&d[..7]).unwrap_err(), DecodeEvent::UdpPktTooSmall);
        let mut bad = d;
        bad[5] = 4;
        assert!(UdpView::new(&bad).unwrap().payload().is_empty());
        bad[5] = 200;
        assert_eq!(UdpView::new(&bad).unwrap().payload().len(), 5);
    }
}
