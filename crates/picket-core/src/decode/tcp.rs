//! TCP header view (RFC 9293) and options.

use super::events::{DecodeEvent, EventSet};

pub const TCP_MIN_HEADER_LEN: usize = 20;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// A checked TCP segment: at least 20 bytes and the whole header (data offset) captured.
#[derive(Clone, Copy, Debug)]
pub struct TcpView<'a> {
    data: &'a [u8],
}

impl<'a> TcpView<'a> {
    pub fn new(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        if data.len() < TCP_MIN_HEADER_LEN {
            return Err(DecodeEvent::TcpPktTooSmall);
        }
        let header_len = ((data[12] >> 4) as usize) * 4;
        if header_len < TCP_MIN_HEADER_LEN {
            return Err(DecodeEvent::TcpHlenTooSmall);
        }
        if header_len > data.len() {
            return Err(DecodeEvent::TcpPktTooSmall);
        }
        Ok(TcpView { data })
    }

    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.data[0], self.data[1]])
    }
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.data[2], self.data[3]])
    }
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes([self.data[4], self.data[5], self.data[6], self.data[7]])
    }
    pub fn ack(&self) -> u32 {
        u32::from_be_bytes([self.data[8], self.data[9], self.data[10], self.data[11]])
    }
    /// Header length in bytes (data offset * 4), 20..=60.
    pub fn header_len(&self) -> usize {
        ((self.data[12] >> 4) as usize) * 4
    }
    /// FIN=1, SYN=2, RST=4, PSH=8, ACK=0x10, URG=0x20, ECE=0x40, CWR=0x80.
    pub fn flags(&self) -> u8 {
        self.data[13]
    }
    pub fn has(&self, flag: u8) -> bool {
        self.data[13] & flag == flag
    }
    pub fn window(&self) -> u16 {
        u16::from_be_bytes([self.data[14], self.data[15]])
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.data[16], self.data[17]])
    }
    pub fn urgent_ptr(&self) -> u16 {
        u16::from_be_bytes([self.data[18], self.data[19]])
    }
    pub fn options_bytes(&self) -> &'a [u8] {
        &self.data[TCP_MIN_HEADER_LEN..self.header_len()]
    }
    pub fn options(&self) -> TcpOptions<'a> {
        TcpOptions { rest: self.options_bytes() }
    }
    /// Segment data after the header (bounded by the IP length and the capture).
    pub fn payload(&self) -> &'a [u8] {
        &self.data[self.header_len()..]
    }
    /// Header and payload as given to `new`.
    pub fn segment(&self) -> &'a [u8] {
        self.data
    }
}

pub const OPT_EOL: u8 = 0;
pub const OPT_NOP: u8 = 1;
pub const OPT_MSS: u8 = 2;
pub const OPT_WS: u8 = 3;
pub const OPT_SACK_PERM: u8 = 4;
pub const OPT_SACK: u8 = 5;
pub const OPT_TS: u8 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption<'a> {
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    /// SACK blocks, 8 bytes each; see [`sack_blocks`].
    Sack(&'a [u8]),
    Timestamp {
        value: u32,
        echo: u32,
    },
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// (left edge, right edge) pairs of a SACK option.
pub fn sack_blocks(data: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    data.chunks_exact(8)
        .map(|b| (u32::from_be_bytes([b[0], b[1], b[2], b[3]]), u32::from_be_bytes([b[4], b[5], b[6], b[7]])))
}

/// Iterates options, skipping NOPs and stopping at EOL. A known option with the wrong
/// length yields `Err(TcpOptInvalidLen)` and iteration goes on; an option that runs
/// past the header yields an error and ends it.
#[derive(Clone, Debug)]
pub struct TcpOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for TcpOptions<'a> {
    type Item = Result<TcpOption<'a>, DecodeEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (&kind, after_kind) = self.rest.split_first()?;
            match kind {
                OPT_EOL => {
                    self.rest = &[];
                    return None;
                }
                OPT_NOP => {
                    self.rest = after_kind;
                    continue;
                }
                _ => {}
            }
            let Some(&len) = after_kind.first() else {
                self.rest = &[];
                return Some(Err(DecodeEvent::TcpInvalidOptlen));
            };
            let len = len as usize;
            if len < 2 || len > self.rest.len() {
                self.rest = &[];
                return Some(Err(DecodeEvent::TcpOptInvalidLen));
            }
            let data = &self.rest[2..len];
            self.rest = &self.rest[len..];
            let option = match (kind, data.len()) {
                (OPT_MSS, 2) => TcpOption::Mss(u16::from_be_bytes([data[0], data[1]])),
                (OPT_WS, 1) => TcpOption::WindowScale(data[0]),
                (OPT_SACK_PERM, 0) => TcpOption::SackPermitted,
                (OPT_SACK, n) if n >= 8 && n % 8 == 0 => TcpOption::Sack(data),
                (OPT_TS, 8) => TcpOption::Timestamp {
                    value: u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
                    echo: u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
                },
                (OPT_MSS | OPT_WS | OPT_SACK_PERM | OPT_SACK | OPT_TS, _) => {
                    return Some(Err(DecodeEvent::TcpOptInvalidLen));
                }
                _ => TcpOption::Unknown { kind, data },
            };
            return Some(Ok(option));
        }
    }
}

/// Records malformed and duplicated options.
pub fn validate_options(view: &TcpView<'_>, events: &mut EventSet) {
    let mut seen: u8 = 0;
    for item in view.options() {
        let bit = match item {
            Err(event) => {
                events.insert(event);
                continue;
            }
            Ok(TcpOption::Mss(_)) => 1,
            Ok(TcpOption::WindowScale(_)) => 2,
            Ok(TcpOption::SackPermitted) => 4,
            Ok(TcpOption::Sack(_)) => 8,
            Ok(TcpOption::Timestamp { .. }) => 16,
            Ok(TcpOption::Unknown { .. }) => 0,
        };
        if seen & bit != 0 {
            events.insert(DecodeEvent::TcpOptDuplicate);
        }
        seen |= bit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(options: &[u8], flags: u8) -> Vec<u8> {
        assert_eq!(options.len() % 4, 0);
        let doff = (20 + options.len()) / 4;
        let mut s =
            vec![0x30, 0x39, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, (doff as u8) << 4, flags, 0xff, 0xff, 0, 0, 0, 7];
        s.extend_from_slice(options);
        s.extend_from_slice(b"data");
        s
    }

    fn events(options: &[u8]) -> Vec<DecodeEvent> {
        let s = segment(options, SYN);
        let mut ev = EventSet::new();
        validate_options(&TcpView::new(&s).unwrap(), &mut ev);
        ev.iter().collect()
    }

    #[test]
    fn accessors() {
        let s = segment(&[], SYN | ACK | CWR);
        let t = TcpView::new(&s).unwrap();
        assert_eq!((t.src_port(), t.dst_port(), t.seq(), t.ack()), (12345, 80, 1, 2));
        assert_eq!((t.header_len(), t.flags(), t.window(), t.urgent_ptr()), (20, 0x92, 0xffff, 7));
        assert!(t.has(SYN | ACK) && !t.has(FIN));
        assert_eq!(t.payload(), b"data");
    }

    #[test]
    fn constructor_errors() {
        let s = segment(&[], SYN);
        assert_eq!(TcpView::new(&s[..19]).unwrap_err(), DecodeEvent::TcpPktTooSmall);
        let mut small = s.clone();
        small[12] = 0x40;
        assert_eq!(TcpView::new(&small).unwrap_err(), DecodeEvent::TcpHlenTooSmall);
        let mut big = s.clone();
        big[12] = 0xf0;
        assert_eq!(TcpView::new(&big).unwrap_err(), DecodeEvent::TcpPktTooSmall);
    }

    #[test]
    fn syn_options_parse() {
        // MSS 1460, SACK permitted, TS, NOP, WS 7.
        let opts = [2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 1, 3, 3, 7];
        let s = segment(&opts, SYN);
        let got: Vec<_> = TcpView::new(&s).unwrap().options().collect();
        assert_eq!(
            got,
            vec![
                Ok(TcpOption::Mss(1460)),
                Ok(TcpOption::SackPermitted),
                Ok(TcpOption::Timestamp { value: 9, echo: 0 }),
                Ok(TcpOption::WindowScale(7)),
            ]
        );
        assert_eq!(events(&opts), vec![]);
    }

    #[test]
    fn sack_blocks_decode() {
        let opts = [1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        let s = segment(&opts, ACK);
        let t = TcpView::new(&s).unwrap();
        let Some(Ok(TcpOption::Sack(blocks))) = t.options().next() else { panic!("no SACK") };
        assert_eq!(sack_blocks(blocks).collect::<Vec<_>>(), vec![(1, 2)]);
    }

    #[test]
    fn option_anomalies() {
        assert_eq!(events(&[2, 4, 5, 0xb4, 2, 4, 5, 0xb4]), vec![DecodeEvent::TcpOptDuplicate]);
        assert_eq!(events(&[2, 3, 5, 1]), vec![DecodeEvent::TcpOptInvalidLen]); // MSS of length 3
        assert_eq!(events(&[2, 9, 5, 1]), vec![DecodeEvent::TcpOptInvalidLen]); // past the header
        assert_eq!(events(&[2, 0, 5, 1]), vec![DecodeEvent::TcpOptInvalidLen]);
        assert_eq!(events(&[1, 1, 1, 2]), vec![DecodeEvent::TcpInvalidOptlen]);
        assert_eq!(events(&[5, 6, 0, 0, 0, 0, 1, 1]), vec![DecodeEvent::TcpOptInvalidLen]); // SACK of 4
        assert_eq!(events(&[30, 4, 0, 0, 0, 0, 0, 0]), vec![]); // unknown kinds are fine
    }
}
