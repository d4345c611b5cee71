//! IPv4 header view (RFC 791) and option checks.

use super::events::{DecodeEvent, EventSet};

pub const IPV4_MIN_HEADER_LEN: usize = 20;

/// A checked IPv4 packet: at least 20 bytes, version 4, and the whole header (IHL)
/// captured. The slice may run past `total_len` (Ethernet padding) or stop short of it
/// (snaplen); [`Ipv4View::payload`] handles both.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4View<'a> {
    data: &'a [u8],
}

impl<'a> Ipv4View<'a> {
    /// Validates version and header length; the error is the event to record.
    pub fn new(data: &'a [u8]) -> Result<Self, DecodeEvent> {
        if data.len() < IPV4_MIN_HEADER_LEN {
            return Err(DecodeEvent::Ipv4PktTooSmall);
        }
        if data[0] >> 4 != 4 {
            return Err(DecodeEvent::Ipv4WrongIpVersion);
        }
        let header_len = ((data[0] & 0x0f) as usize) * 4;
        if header_len < IPV4_MIN_HEADER_LEN {
            return Err(DecodeEvent::Ipv4HlenTooSmall);
        }
        if header_len > data.len() {
            return Err(DecodeEvent::Ipv4TruncPkt);
        }
        Ok(Ipv4View { data })
    }

    pub fn version(&self) -> u8 {
        self.data[0] >> 4
    }
    /// Header length in bytes (IHL * 4), 20..=60.
    pub fn header_len(&self) -> usize {
        ((self.data[0] & 0x0f) as usize) * 4
    }
    pub fn tos(&self) -> u8 {
        self.data[1]
    }
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes([self.data[2], self.data[3]])
    }
    pub fn id(&self) -> u16 {
        u16::from_be_bytes([self.data[4], self.data[5]])
    }
    /// The three flag bits (reserved, DF, MF) in the low bits.
    pub fn flags(&self) -> u8 {
        self.data[6] >> 5
    }
    pub fn dont_fragment(&self) -> bool {
        self.data[6] & 0x40 != 0
    }
    pub fn more_fragments(&self) -> bool {
        self.data[6] & 0x20 != 0
    }
    /// Short for [`Ipv4View::dont_fragment`].
    pub fn df(&self) -> bool {
        self.dont_fragment()
    }
    /// Short for [`Ipv4View::more_fragments`].
    pub fn mf(&self) -> bool {
        self.more_fragments()
    }
    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        u16::from_be_bytes([self.data[6] & 0x1f, self.data[7]])
    }
    pub fn is_fragment(&self) -> bool {
        self.more_fragments() || self.frag_offset() != 0
    }
    pub fn ttl(&self) -> u8 {
        self.data[8]
    }
    pub fn protocol(&self) -> u8 {
        self.data[9]
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.data[10], self.data[11]])
    }
    pub fn src(&self) -> [u8; 4] {
        [self.data[12], self.data[13], self.data[14], self.data[15]]
    }
    pub fn dst(&self) -> [u8; 4] {
        [self.data[16], self.data[17], self.data[18], self.data[19]]
    }
    pub fn src_addr(&self) -> std::net::Ipv4Addr {
        self.src().into()
    }
    pub fn dst_addr(&self) -> std::net::Ipv4Addr {
        self.dst().into()
    }
    /// The header including options.
    pub fn header(&self) -> &'a [u8] {
        &self.data[..self.header_len()]
    }
    /// Raw option bytes (empty when IHL is 5).
    pub fn options_bytes(&self) -> &'a [u8] {
        &self.data[IPV4_MIN_HEADER_LEN..self.header_len()]
    }
    pub fn options(&self) -> Ipv4Options<'a> {
        Ipv4Options { rest: self.options_bytes(), done: false }
    }
    /// Bytes after the header, bounded by the total length (drops link padding) and by
    /// what was captured. Empty when the total length is smaller than the header.
    pub fn payload(&self) -> &'a [u8] {
        let end = (self.total_len() as usize).min(self.data.len());
        self.data.get(self.header_len()..end).unwrap_or(&[])
    }
    /// True when fewer bytes were captured than the total length announces.
    pub fn is_truncated(&self) -> bool {
        (self.total_len() as usize) > self.data.len()
    }
}

pub const IPV4_OPT_EOL: u8 = 0;
pub const IPV4_OPT_NOP: u8 = 1;
pub const IPV4_OPT_RR: u8 = 7;
pub const IPV4_OPT_QS: u8 = 25;
pub const IPV4_OPT_TS: u8 = 68;
pub const IPV4_OPT_SEC: u8 = 130;
pub const IPV4_OPT_LSRR: u8 = 131;
pub const IPV4_OPT_ESEC: u8 = 133;
pub const IPV4_OPT_CIPSO: u8 = 134;
pub const IPV4_OPT_SID: u8 = 136;
pub const IPV4_OPT_SSRR: u8 = 137;
pub const IPV4_OPT_RTRALT: u8 = 148;

/// One option; `data` is what follows the type and length bytes (empty for EOL/NOP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Option<'a> {
    pub kind: u8,
    pub data: &'a [u8],
}

/// Iterates options in header order, including NOP and a final EOL. A malformed
/// option yields `Err(event)` and ends the iteration.
#[derive(Clone, Debug)]
pub struct Ipv4Options<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> Ipv4Options<'a> {
    /// Bytes not yet consumed (after an EOL: the padding).
    pub fn remaining(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Ipv4Options<'a> {
    type Item = Result<Ipv4Option<'a>, DecodeEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let (&kind, after_kind) = self.rest.split_first()?;
        match kind {
            IPV4_OPT_EOL => {
                self.done = true;
                self.rest = after_kind;
                Some(Ok(Ipv4Option { kind, data: &[] }))
            }
            IPV4_OPT_NOP => {
                self.rest = after_kind;
                Some(Ok(Ipv4Option { kind, data: &[] }))
            }
            _ => {
                let Some(&len) = after_kind.first() else {
                    self.done = true;
                    return Some(Err(DecodeEvent::Ipv4OptEolRequired));
                };
                let len = len as usize;
                if len < 2 || len > self.rest.len() {
                    self.done = true;
                    return Some(Err(DecodeEvent::Ipv4OptInvalidLen));
                }
                let data = &self.rest[2..len];
                self.rest = &self.rest[len..];
                Some(Ok(Ipv4Option { kind, data }))
            }
        }
    }
}

/// Checks every option and records what is wrong. Cold: most packets have no options.
#[cold]
pub fn validate_options(options: Ipv4Options<'_>, events: &mut EventSet) {
    let mut iter = options;
    // Bit per single-instance option kind already seen, indexed by `dup_slot`.
    let mut seen: u16 = 0;
    while let Some(item) = iter.next() {
        let opt = match item {
            Ok(opt) => opt,
            Err(event) => {
                events.insert(event);
                return;
            }
        };
        let len = opt.data.len() + 2;
        match opt.kind {
            IPV4_OPT_EOL => {
                if iter.remaining().iter().any(|b| *b != 0) {
                    events.insert(DecodeEvent::Ipv4OptPadRequired);
                }
                return;
            }
            IPV4_OPT_NOP => continue,
            _ => {}
        }
        if let Some(slot) = dup_slot(opt.kind) {
            if seen & (1 << slot) != 0 {
                events.insert(DecodeEvent::Ipv4OptDuplicate);
            }
            seen |= 1 << slot;
        }
        let verdict = match opt.kind {
            IPV4_OPT_RR | IPV4_OPT_LSRR | IPV4_OPT_SSRR => check_route(opt.data, len),
            IPV4_OPT_TS => check_timestamp(opt.data, len),
            IPV4_OPT_QS => exact_len(len, 8),
            IPV4_OPT_SID | IPV4_OPT_RTRALT => exact_len(len, 4),
            IPV4_OPT_SEC | IPV4_OPT_ESEC => min_len(len, 3),
            IPV4_OPT_CIPSO => min_len(len, 6),
            // Option classes 1 and 3 are reserved by RFC 791.
            kind if matches!(kind & 0x60, 0x20 | 0x60) => Err(DecodeEvent::Ipv4OptInvalid),
            _ => Err(DecodeEvent::Ipv4OptUnknown),
        };
        if let Err(event) = verdict {
            events.insert(event);
        }
    }
}

fn dup_slot(kind: u8) -> Option<u8> {
    Some(match kind {
        IPV4_OPT_RR => 0,
        IPV4_OPT_QS => 1,
        IPV4_OPT_TS => 2,
        IPV4_OPT_SEC => 3,
        IPV4_OPT_LSRR => 4,
        IPV4_OPT_ESEC => 5,
        IPV4_OPT_CIPSO => 6,
        IPV4_OPT_SID => 7,
        IPV4_OPT_SSRR => 8,
        IPV4_OPT_RTRALT => 9,
        _ => return None,
    })
}

fn exact_len(len: usize, want: usize) -> Result<(), DecodeEvent> {
    if len == want {
        Ok(())
    } else {
        Err(DecodeEvent::Ipv4OptInvalidLen)
    }
}

fn min_len(len: usize, min: usize) -> Result<(), DecodeEvent> {
    if len >= min {
        Ok(())
    } else {
        Err(DecodeEvent::Ipv4OptInvalidLen)
    }
}

/// Record/source route: pointer byte, then 4-byte addresses; the pointer (1-based,
/// counted from the type byte) names the next slot or one past the last.
fn check_route(data: &[u8], len: usize) -> Result<(), DecodeEvent> {
    if len < 3 || !(len - 3).is_multiple_of(4) {
        return Err(DecodeEvent::Ipv4OptInvalidLen);
    }
    let ptr = data[0] as usize;
    if ptr < 4 || ptr > len + 1 || !(ptr - 4).is_multiple_of(4) {
        return Err(DecodeEvent::Ipv4OptMalformed);
    }
    Ok(())
}

/// Timestamp: pointer, overflow/flag byte, then 4-byte stamps (flag 0) or 8-byte
/// address+stamp pairs (flags 1 and 3).
fn check_timestamp(data: &[u8], len: usize) -> Result<(), DecodeEvent> {
    if len < 4 {
        return Err(DecodeEvent::Ipv4OptInvalidLen);
    }
    let ptr = data[0] as usize;
    let entry = match data[1] & 0x0f {
        0 => 4,
        1 | 3 => 8,
        _ => return Err(DecodeEvent::Ipv4OptMalformed),
    };
    if !(len - 4).is_multiple_of(entry) || ptr < 5 || ptr > len + 1 || !(ptr - 5).is_multiple_of(entry) {
        return Err(DecodeEvent::Ipv4OptMalformed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_with_options(opts: &[u8]) -> Vec<u8> {
        assert_eq!(opts.len() % 4, 0);
        let hlen = 20 + opts.len();
        let mut h =
            vec![0x40 | (hlen / 4) as u8, 0, 0, hlen as u8, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        h.extend_from_slice(opts);
        h
    }

    fn events_for(opts: &[u8]) -> Vec<DecodeEvent> {
        let h = header_with_options(opts);
        let v = Ipv4View::new(&h).unwrap();
        let mut ev = EventSet::new();
        validate_options(v.options(), &mut ev);
        ev.iter().collect()
    }

    #[test]
    fn accessors() {
        let h = header_with_options(&[]);
        let v = Ipv4View::new(&h).unwrap();
        assert_eq!((v.version(), v.header_len(), v.total_len(), v.id(), v.ttl(), v.protocol()), (4, 20, 20, 1, 64, 6));
        assert!(v.dont_fragment() && !v.more_fragments() && !v.is_fragment());
        assert_eq!(v.flags(), 0b010);
        assert_eq!(v.src(), [10, 0, 0, 1]);
        assert_eq!(v.dst_addr(), std::net::Ipv4Addr::new(10, 0, 0, 2));
        assert!(v.payload().is_empty());
    }

    #[test]
    fn constructor_errors() {
        let h = header_with_options(&[]);
        assert_eq!(Ipv4View::new(&h[..19]).unwrap_err(), DecodeEvent::Ipv4PktTooSmall);
        let mut v6 = h.clone();
        v6[0] = 0x65;
        assert_eq!(Ipv4View::new(&v6).unwrap_err(), DecodeEvent::Ipv4WrongIpVersion);
        let mut short = h.clone();
        short[0] = 0x44;
        assert_eq!(Ipv4View::new(&short).unwrap_err(), DecodeEvent::Ipv4HlenTooSmall);
        let mut long = h.clone();
        long[0] = 0x46;
        assert_eq!(Ipv4View::new(&long).unwrap_err(), DecodeEvent::Ipv4TruncPkt);
    }

    #[test]
    fn well_formed_options_raise_nothing() {
        // NOP, router alert, record route with one free slot, EOL, zero pad.
        let opts = [1, 148, 4, 0, 0, 7, 7, 4, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(events_for(&opts), vec![]);
        let h = header_with_options(&opts);
        let kinds: Vec<u8> = Ipv4View::new(&h).unwrap().options().map(|o| o.unwrap().kind).collect();
        assert_eq!(kinds, vec![1, 148, 7, 0]);
    }

    #[test]
    fn option_anomalies() {
        assert_eq!(events_for(&[148, 4, 0, 0, 148, 4, 0, 0]), vec![DecodeEvent::Ipv4OptDuplicate]);
        assert_eq!(events_for(&[148, 9, 0, 0]), vec![DecodeEvent::Ipv4OptInvalidLen]);
        assert_eq!(events_for(&[148, 1, 0, 0]), vec![DecodeEvent::Ipv4OptInvalidLen]);
        assert_eq!(events_for(&[148, 3, 0, 0]), vec![DecodeEvent::Ipv4OptInvalidLen]);
        assert_eq!(events_for(&[1, 1, 1, 148]), vec![DecodeEvent::Ipv4OptEolRequired]);
        assert_eq!(events_for(&[0, 0, 5, 0]), vec![DecodeEvent::Ipv4OptPadRequired]);
        assert_eq!(events_for(&[30, 4, 0, 0]), vec![DecodeEvent::Ipv4OptUnknown]);
        assert_eq!(events_for(&[0x3f, 4, 0, 0]), vec![DecodeEvent::Ipv4OptInvalid]);
        // Record route with pointer 5 (not on a slot boundary).
        assert_eq!(events_for(&[7, 7, 5, 0, 0, 0, 0, 0]), vec![DecodeEvent::Ipv4OptMalformed]);
        // Timestamp with unknown flag 2.
        assert_eq!(events_for(&[68, 8, 5, 2, 0, 0, 0, 0]), vec![DecodeEvent::Ipv4OptMalformed]);
        // Timestamp, flag 0, one empty slot: fine.
        assert_eq!(events_for(&[68, 8, 5, 0, 0, 0, 0, 0]), vec![]);
    }
}
