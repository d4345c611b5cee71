//! DNS parser, sans-IO: one message per UDP datagram, or a stream of 2-byte-length-prefixed
//! messages over TCP (RFC 1035 §4.2.2) fed incrementally per direction.
//!
//! Transactions follow Suricata 8: every parsed message is its own transaction (a request or
//! a response), numbered from 0 per flow in arrival order. A response additionally remembers
//! the transaction id of the request with the same DNS id (`request_tx`), when one is known.
//!
//! Sticky buffers exposed for detection (Suricata names):
//! - `dns.query`: each question name of a *request* ([`DnsTransaction::query_names`]);
//! - `dns.queries.rrname` / `dns.query.name`: each question name, both directions;
//! - `dns.answer.name`: each answer record name ([`DnsTransaction::answer_names`]);
//! - `dns.opcode`, `dns.rcode`, `dns.rrtype`: integers from [`DnsHeader`] and the questions.
//!
//! Names are the raw label bytes joined with '.', without a trailing dot (the root is the
//! empty string), exactly what Suricata puts in its buffers.

pub(crate) mod buffers;
pub(crate) mod flow;
pub mod record;

use std::collections::VecDeque;

use crate::bytes::{self, Cursor};
use crate::stream::Direction;

pub const HEADER_LEN: usize = 12;
/// Names longer than this are cut (and flagged), as Suricata does, so a message of 2-byte
/// pointers cannot expand into megabytes of names.
pub const MAX_NAME_LEN: usize = 1025;
/// Labels plus pointers followed while reading one name; more means a compression loop.
pub const MAX_NAME_STEPS: usize = 255;
/// Labels plus pointers followed for all the names of one message together, per byte of
/// the message (plus one name's worth). A benign compressed message needs well under one
/// step per byte; without this bound each 2-byte pointer of a message full of records could
/// send its name through a 254-step pointer chain, over 100 times the work of a benign
/// message of the same size.
pub const NAME_STEPS_PER_BYTE: usize = 2;

pub const RRTYPE_A: u16 = 1;
pub const RRTYPE_NS: u16 = 2;
pub const RRTYPE_CNAME: u16 = 5;
pub const RRTYPE_SOA: u16 = 6;
pub const RRTYPE_NULL: u16 = 10;
pub const RRTYPE_PTR: u16 = 12;
pub const RRTYPE_MX: u16 = 15;
pub const RRTYPE_TXT: u16 = 16;
pub const RRTYPE_AAAA: u16 = 28;
pub const RRTYPE_SRV: u16 = 33;

/// Per-flow limits. Defaults keep one flow's DNS state within a few hundred KiB.
#[derive(Clone, Debug)]
pub struct DnsConfig {
    /// Transactions kept per flow; the oldest is dropped beyond this (`dns.tx_dropped`).
    pub max_transactions: usize,
    /// Resource records kept per section; the rest are skipped (`dns.records_skipped`).
    pub max_records_per_section: usize,
    /// Requests remembered for pairing responses by DNS id.
    pub max_pending_requests: usize,
}

impl Default for DnsConfig {
    fn default() -> Self {
        DnsConfig { max_transactions: 256, max_records_per_section: 256, max_pending_requests: 64 }
    }
}

/// Worker-wide counters; parse calls add to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DnsCounters {
    pub requests: u64,
    pub responses: u64,
    /// Message not parseable (truncated header, section past the end, bad label type).
    pub malformed: u64,
    /// A name's compression pointers went round in circles (or too many labels), or the
    /// message's names took more than [`NAME_STEPS_PER_BYTE`] steps per byte.
    pub name_loops: u64,
    pub names_truncated: u64,
    /// A to-server message with QR set: not a request, dropped (Suricata `not_a_request`).
    pub not_request: u64,
    /// A to-client message with QR clear: kept, but counted (Suricata `not_a_response`).
    pub not_response: u64,
    pub z_flag_set: u64,
    pub records_skipped: u64,
    /// Authority/additional sections that did not parse and were dropped (the message
    /// was kept, as Suricata keeps it).
    pub sections_dropped: u64,
    pub tx_dropped: u64,
    /// TCP bytes skipped after a gap until the stream looked like DNS again.
    pub gap_bytes_skipped: u64,
}

impl DnsCounters {
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("dns.requests", self.requests),
            ("dns.responses", self.responses),
            ("dns.malformed", self.malformed),
            ("dns.name_loops", self.name_loops),
            ("dns.names_truncated", self.names_truncated),
            ("dns.not_request", self.not_request),
            ("dns.not_response", self.not_response),
            ("dns.z_flag_set", self.z_flag_set),
            ("dns.records_skipped", self.records_skipped),
            ("dns.sections_dropped", self.sections_dropped),
            ("dns.tx_dropped", self.tx_dropped),
            ("dns.gap_bytes_skipped", self.gap_bytes_skipped),
        ]
        .into_iter()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsError {
    /// Fewer than 12 bytes.
    ShortHeader,
    /// A section ran past the end of the message.
    Truncated,
    /// Label type 0x40/0x80 or a pointer past the end of the message.
    BadLabel,
    /// Too many labels/pointers while reading one name.
    NameLoop,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DnsHeader {
    pub id: u16,
    pub flags: u16,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
}

impl DnsHeader {
    /// The first [`HEADER_LEN`] bytes of `buf`; `None` when it is shorter.
    pub fn parse(buf: &[u8]) -> Option<DnsHeader> {
        let mut c = Cursor::new(buf);
        Some(DnsHeader {
            id: c.be_u16()?,
            flags: c.be_u16()?,
            qdcount: c.be_u16()?,
            ancount: c.be_u16()?,
            nscount: c.be_u16()?,
            arcount: c.be_u16()?,
        })
    }
    pub fn qr(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xf) as u8
    }
    pub fn aa(&self) -> bool {
        self.flags & 0x0400 != 0
    }
    pub fn tc(&self) -> bool {
        self.flags & 0x0200 != 0
    }
    pub fn rd(&self) -> bool {
        self.flags & 0x0100 != 0
    }
    pub fn ra(&self) -> bool {
        self.flags & 0x0080 != 0
    }
    pub fn z(&self) -> bool {
        self.flags & 0x0040 != 0
    }
    pub fn rcode(&self) -> u8 {
        (self.flags & 0xf) as u8
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsName {
    /// Labels joined with '.', no trailing dot; cut at [`MAX_NAME_LEN`].
    pub bytes: Vec<u8>,
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsQuestion {
    pub name: DnsName,
    pub rrtype: u16,
    pub rrclass: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Soa {
    pub mname: DnsName,
    pub rname: DnsName,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srv {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub target: DnsName,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RData {
    A([u8; 4]),
    Aaaa([u8; 16]),
    /// CNAME, NS, PTR: a single name.
    Name(DnsName),
    Mx {
        preference: u16,
        exchange: DnsName,
    },
    /// The character-strings of a TXT record, in order.
    Txt(Vec<Vec<u8>>),
    Soa(Soa),
    Srv(Srv),
    /// Any other type, or a known type whose data did not parse: the raw rdata.
    Raw(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsRecord {
    pub name: DnsName,
    pub rrtype: u16,
    pub rrclass: u16,
    pub ttl: u32,
    pub rdata: RData,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsMessage {
    pub header: DnsHeader,
    pub questions: Vec<DnsQuestion>,
    pub answers: Vec<DnsRecord>,
    pub authorities: Vec<DnsRecord>,
    pub additionals: Vec<DnsRecord>,
}

/// What a successful parse noticed without failing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseNotes {
    pub names_truncated: u32,
    pub records_skipped: u32,
    /// Authority or additional sections that did not parse, dropped from the message.
    pub sections_dropped: u32,
    /// Name steps (labels, pointers) the message may still take; set from the message
    /// length by [`ParseNotes::for_message`].
    pub name_steps_left: usize,
}

impl ParseNotes {
    /// Notes for parsing `message`, with its name-step budget.
    pub fn for_message(message: &[u8]) -> Self {
        ParseNotes { name_steps_left: message.len() * NAME_STEPS_PER_BYTE + MAX_NAME_STEPS, ..Default::default() }
    }
}

/// Reads the name starting at `start` in `message`, following compression pointers.
/// Returns the name and the offset just past it in the original position (after the first
/// pointer, if any).
pub fn parse_name(message: &[u8], start: usize) -> Result<(DnsName, usize), DnsError> {
    let mut steps_left = MAX_NAME_STEPS;
    parse_name_within(message, start, &mut steps_left)
}

/// [`parse_name`], taking its steps from the message's budget `steps_left`.
fn parse_name_within(message: &[u8], start: usize, steps_left: &mut usize) -> Result<(DnsName, usize), DnsError> {
    // Assembled on the stack and copied out once at its final length: growing the name's
    // Vec label by label took several reallocations per name.
    let mut text = [0u8; MAX_NAME_LEN];
    let mut used = 0usize;
    let mut truncated = false;
    let mut pos = start;
    // Where parsing resumes in the caller's sequence once a pointer has been followed.
    let mut resume: Option<usize> = None;
    let mut steps = 0usize;
    loop {
        steps += 1;
        if steps > MAX_NAME_STEPS || *steps_left == 0 {
            return Err(DnsError::NameLoop);
        }
        *steps_left -= 1;
        let len = *message.get(pos).ok_or(DnsError::Truncated)?;
        match len & 0xc0 {
            0x00 => {
                if len == 0 {
                    pos += 1;
                    break;
                }
                let label = message.get(pos + 1..pos + 1 + len as usize).ok_or(DnsError::Truncated)?;
                if !truncated {
                    let dot = usize::from(used > 0);
                    if used + dot + label.len() > MAX_NAME_LEN {
                        truncated = true;
                    } else {
                        if dot == 1 {
                            text[used] = b'.';
                        }
                        text[used + dot..used + dot + label.len()].copy_from_slice(label);
                        used += dot + label.len();
                    }
                }
                pos += 1 + len as usize;
            }
            0xc0 => {
                let low = *message.get(pos + 1).ok_or(DnsError::Truncated)?;
                let target = (usize::from(len & 0x3f) << 8) | usize::from(low);
                if target >= message.len() {
                    return Err(DnsError::BadLabel);
                }
                if resume.is_none() {
                    resume = Some(pos + 2);
                }
                pos = target;
            }
            _ => return Err(DnsError::BadLabel),
        }
    }
    Ok((DnsName { bytes: text[..used].to_vec(), truncated }, resume.unwrap_or(pos)))
}

/// A read past the end of the message (or of the section being read).
fn truncated<T>(value: Option<T>) -> Result<T, DnsError> {
    value.ok_or(DnsError::Truncated)
}

fn read_name(r: &mut Cursor<'_>, notes: &mut ParseNotes) -> Result<DnsName, DnsError> {
    let (name, next) = parse_name_within(r.data(), r.pos(), &mut notes.name_steps_left)?;
    truncated(r.seek(next))?;
    notes.names_truncated += u32::from(name.truncated);
    Ok(name)
}

/// Parses the rdata at `range` in `message`; names inside may point anywhere in the message.
/// Known types whose data is inconsistent fall back to [`RData::Raw`].
fn parse_rdata(message: &[u8], start: usize, end: usize, rrtype: u16, notes: &mut ParseNotes) -> RData {
    let raw = &message[start..end];
    let parsed: Option<RData> = (|| {
        let mut r = Cursor::new(&message[..end]);
        r.seek(start)?;
        let data = match rrtype {
            RRTYPE_A if raw.len() == 4 => RData::A([raw[0], raw[1], raw[2], raw[3]]),
            RRTYPE_AAAA if raw.len() == 16 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(raw);
                RData::Aaaa(a)
            }
            RRTYPE_CNAME | RRTYPE_NS | RRTYPE_PTR => RData::Name(read_name_in(message, &mut r, notes)?),
            RRTYPE_MX => {
                let preference = r.be_u16()?;
                RData::Mx { preference, exchange: read_name_in(message, &mut r, notes)? }
            }
            RRTYPE_TXT => {
                let mut strings = Vec::new();
                while !r.is_empty() {
                    strings.push(r.u8_prefixed()?.to_vec());
                }
                RData::Txt(strings)
            }
            RRTYPE_SOA => {
                let mname = read_name_in(message, &mut r, notes)?;
                let rname = read_name_in(message, &mut r, notes)?;
                RData::Soa(Soa {
                    mname,
                    rname,
                    serial: r.be_u32()?,
                    refresh: r.be_u32()?,
                    retry: r.be_u32()?,
                    expire: r.be_u32()?,
                    minimum: r.be_u32()?,
                })
            }
            RRTYPE_SRV => RData::Srv(Srv {
                priority: r.be_u16()?,
                weight: r.be_u16()?,
                port: r.be_u16()?,
                target: read_name_in(message, &mut r, notes)?,
            }),
            _ => RData::Raw(raw.to_vec()),
        };
        Some(data)
    })();
    parsed.unwrap_or_else(|| RData::Raw(raw.to_vec()))
}

/// A name inside rdata: pointers may reach the whole message, but the name itself must start
/// inside the rdata (the cursor is bounded by the rdata end). `None` when it does not.
fn read_name_in(message: &[u8], r: &mut Cursor<'_>, notes: &mut ParseNotes) -> Option<DnsName> {
    if r.is_empty() {
        return None;
    }
    let (name, next) = parse_name_within(message, r.pos(), &mut notes.name_steps_left).ok()?;
    r.seek(next)?;
    notes.names_truncated += u32::from(name.truncated);
    Some(name)
}

fn parse_records(
    r: &mut Cursor<'_>,
    count: u16,
    keep: usize,
    notes: &mut ParseNotes,
) -> Result<Vec<DnsRecord>, DnsError> {
    let mut records = Vec::with_capacity(usize::from(count).min(keep).min(16));
    for _ in 0..count {
        let name = read_name(r, notes)?;
        let rrtype = truncated(r.be_u16())?;
        let rrclass = truncated(r.be_u16())?;
        let ttl = truncated(r.be_u32())?;
        let rdlen = truncated(r.be_u16())? as usize;
        let start = r.pos();
        truncated(r.skip(rdlen))?;
        if records.len() >= keep {
            notes.records_skipped += 1;
            continue;
        }
        let rdata = parse_rdata(r.data(), start, start + rdlen, rrtype, notes);
        records.push(DnsRecord { name, rrtype, rrclass, ttl, rdata });
    }
    Ok(records)
}

/// Parses one complete DNS message (the UDP payload, or one TCP frame without its length).
pub fn parse_message(buf: &[u8], max_records_per_section: usize) -> Result<(DnsMessage, ParseNotes), DnsError> {
    let header = DnsHeader::parse(buf).ok_or(DnsError::ShortHeader)?;
    let mut notes = ParseNotes::for_message(buf);
    let mut r = Cursor::new(buf);
    truncated(r.skip(HEADER_LEN))?;
    // Each question takes at least 5 bytes, so the count is bounded by the message size.
    let mut questions = Vec::with_capacity(usize::from(header.qdcount).min(buf.len() / 5));
    for _ in 0..header.qdcount {
        let name = read_name(&mut r, &mut notes)?;
        let rrtype = truncated(r.be_u16())?;
        let rrclass = truncated(r.be_u16())?;
        questions.push(DnsQuestion { name, rrtype, rrclass });
    }
    let keep = max_records_per_section;
    let answers = parse_records(&mut r, header.ancount, keep, &mut notes)?;
    // As Suricata: a bad authority or additional section is dropped (and the additional
    // one after a bad authority section), the rest of the message is kept.
    let lenient = |r: &mut Cursor<'_>, count: u16, notes: &mut ParseNotes| {
        let mut probe = *r;
        match parse_records(&mut probe, count, keep, notes) {
            Ok(records) => {
                *r = probe;
                Some(records)
            }
            Err(_) => {
                notes.sections_dropped += 1;
                None
            }
        }
    };
    let authorities = lenient(&mut r, header.nscount, &mut notes);
    let additionals = match authorities {
        Some(_) => lenient(&mut r, header.arcount, &mut notes).unwrap_or_default(),
        None => Vec::new(),
    };
    let authorities = authorities.unwrap_or_default();
    Ok((DnsMessage { header, questions, answers, authorities, additionals }, notes))
}

/// The length prefix of a DNS-over-TCP frame at the start of `buf`, if `buf` holds it.
#[inline]
pub(crate) fn tcp_frame_len(buf: &[u8]) -> Option<usize> {
    bytes::be_u16(buf, 0).map(usize::from)
}

/// Cheap check that `buf` (a UDP payload, or a TCP frame body whose declared length is
/// `declared_len`) could be DNS: a known opcode and section counts that fit the length.
/// Returns `Some(is_request)` when plausible. Mirrors the sanity checks Suricata's probe makes.
pub fn probe_message(buf: &[u8], declared_len: usize) -> Option<bool> {
    let header = DnsHeader::parse(buf)?;
    // Suricata's checks: no opcode check (an unassigned opcode is still DNS, logged with
    // an anomaly), but a message without records must be a bare header, and a request
    // must ask something.
    let records = [header.qdcount, header.ancount, header.nscount, header.arcount].map(usize::from);
    if records.iter().sum::<usize>() == 0 && declared_len > HEADER_LEN || !header.qr() && header.qdcount == 0 {
        return None;
    }
    let min_len = HEADER_LEN
        + 2 * (usize::from(header.qdcount)
            + usize::from(header.ancount)
            + usize::from(header.nscount)
            + usize::from(header.arcount));
    if min_len > declared_len {
        return None;
    }
    // With the whole message at hand, the questions must parse too.
    if buf.len() >= declared_len {
        let mut notes = ParseNotes::for_message(&buf[..declared_len]);
        let mut r = Cursor::new(&buf[..declared_len]);
        r.skip(HEADER_LEN)?;
        for _ in 0..header.qdcount {
            read_name(&mut r, &mut notes).ok()?;
            r.skip(4)?;
        }
    }
    Some(!header.qr())
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsTransaction {
    /// Per-flow transaction number, from 0.
    pub tx_id: u64,
    /// `ToServer` for a request, `ToClient` for a response.
    pub direction: Direction,
    pub message: DnsMessage,
    /// For a response: the request transaction with the same DNS id, if it was seen.
    pub request_tx: Option<u64>,
}

impl DnsTransaction {
    pub fn is_request(&self) -> bool {
        self.direction == Direction::ToServer
    }

    /// `dns.query`: question names of a request (none for a response).
    pub fn query_names(&self) -> impl Iterator<Item = &[u8]> {
        let questions: &[DnsQuestion] = if self.is_request() { &self.message.questions } else { &[] };
        questions.iter().map(|q| q.name.bytes.as_slice())
    }

    /// `dns.queries.rrname`: question names in either direction.
    pub fn question_names(&self) -> impl Iterator<Item = &[u8]> {
        self.message.questions.iter().map(|q| q.name.bytes.as_slice())
    }

    /// `dns.answer.name`: names of the answer records.
    pub fn answer_names(&self) -> impl Iterator<Item = &[u8]> {
        self.message.answers.iter().map(|a| a.name.bytes.as_slice())
    }

    /// `dns.rrtype`: the question types.
    pub fn query_rrtypes(&self) -> impl Iterator<Item = u16> + '_ {
        self.message.questions.iter().map(|q| q.rrtype)
    }

    pub fn opcode(&self) -> u8 {
        self.message.header.opcode()
    }

    /// The reserved Z bit of the header is set.
    pub fn z_flag(&self) -> bool {
        self.message.header.z()
    }

    pub fn rcode(&self) -> u8 {
        self.message.header.rcode()
    }
}

/// Reassembles length-prefixed DNS messages from one direction of a TCP stream.
#[derive(Clone, Debug, Default)]
struct TcpFramer {
    /// Bytes of the frame being collected (length prefix included). At most 2 + 65535.
    partial: Vec<u8>,
    /// After a gap: skip data until it looks like the start of a DNS frame.
    resync: bool,
}

/// Per-flow DNS state: transactions plus the TCP framing of each direction.
#[derive(Clone, Debug)]
pub struct DnsState {
    config: DnsConfig,
    transactions: VecDeque<DnsTransaction>,
    next_tx_id: u64,
    /// (DNS id, request tx id), oldest first, for pairing responses.
    pending_requests: VecDeque<(u16, u64)>,
    tcp: [TcpFramer; 2],
}

impl Default for DnsState {
    fn default() -> Self {
        DnsState::new(DnsConfig::default())
    }
}

impl DnsState {
    pub fn new(config: DnsConfig) -> Self {
        DnsState {
            config,
            transactions: VecDeque::new(),
            next_tx_id: 0,
            pending_requests: VecDeque::new(),
            tcp: Default::default(),
        }
    }

    /// Parses one UDP datagram. Returns the new transaction's id, or `None` when the
    /// datagram was not a usable message for that direction.
    pub fn parse_udp(&mut self, direction: Direction, datagram: &[u8], counters: &mut DnsCounters) -> Option<u64> {
        self.handle_message(direction, datagram, counters)
    }

    /// Feeds the next in-order bytes of one TCP direction. Returns how many transactions
    /// were created. Any split of the stream gives the same transactions.
    pub fn parse_tcp(&mut self, direction: Direction, mut data: &[u8], counters: &mut DnsCounters) -> usize {
        let mut created = 0;
        let d = direction.index();
        while !data.is_empty() {
            if self.tcp[d].resync {
                // Resume only where a plausible frame starts; otherwise drop this chunk. The
                // length prefix and header may come in pieces: a start too short to judge
                // is kept (in `partial`, at most 13 bytes) until the next chunk completes it.
                let framer = &mut self.tcp[d];
                if framer.partial.len() + data.len() < 2 + HEADER_LEN {
                    framer.partial.extend_from_slice(data);
                    return created;
                }
                let joined;
                let start: &[u8] = if framer.partial.is_empty() {
                    data
                } else {
                    joined = [framer.partial.as_slice(), data].concat();
                    &joined
                };
                let plausible = tcp_frame_len(start)
                    .is_some_and(|len| len >= HEADER_LEN && probe_message(&start[2..], len).is_some());
                if !plausible {
                    counters.gap_bytes_skipped += start.len() as u64;
                    framer.partial.clear();
                    return created;
                }
                // `partial` holds the frame's first bytes; the framing below adds the rest.
                framer.resync = false;
            }
            let framer = &mut self.tcp[d];
            // Fast path: whole frames directly from `data` when nothing is pending.
            if framer.partial.is_empty() {
                if let Some(len) = tcp_frame_len(data) {
                    if data.len() >= 2 + len {
                        let (frame, rest) = data.split_at(2 + len);
                        data = rest;
                        if len > 0 && self.handle_message(direction, &frame[2..], counters).is_some() {
                            created += 1;
                        }
                        continue;
                    }
                }
            }
            // Slow path: collect the length prefix, then the body.
            let have = framer.partial.len();
            let need = match tcp_frame_len(&framer.partial) {
                None => 2 - have,
                Some(len) => 2 + len - have,
            };
            let n = need.min(data.len());
            framer.partial.extend_from_slice(&data[..n]);
            data = &data[n..];
            if let Some(len) = tcp_frame_len(&framer.partial) {
                if framer.partial.len() == 2 + len {
                    let frame = std::mem::take(&mut self.tcp[d].partial);
                    if len > 0 && self.handle_message(direction, &frame[2..], counters).is_some() {
                        created += 1;
                    }
                    // Keep the allocation for the next frame.
                    let mut frame = frame;
                    frame.clear();
                    self.tcp[d].partial = frame;
                }
            }
        }
        created
    }

    /// Bytes were lost in this TCP direction: drop the partial frame and resynchronise.
    pub fn on_gap(&mut self, direction: Direction) {
        let framer = &mut self.tcp[direction.index()];
        framer.partial.clear();
        framer.resync = true;
    }

    fn handle_message(&mut self, direction: Direction, buf: &[u8], counters: &mut DnsCounters) -> Option<u64> {
        let (message, notes) = match parse_message(buf, self.config.max_records_per_section) {
            Ok(parsed) => parsed,
            Err(e) => {
                if e == DnsError::NameLoop {
                    counters.name_loops += 1;
                }
                counters.malformed += 1;
                return None;
            }
        };
        counters.names_truncated += u64::from(notes.names_truncated);
        counters.records_skipped += u64::from(notes.records_skipped);
        counters.sections_dropped += u64::from(notes.sections_dropped);
        if message.header.z() {
            counters.z_flag_set += 1;
        }
        let tx_id = self.next_tx_id;
        let mut request_tx = None;
        match direction {
            Direction::ToServer => {
                if message.header.qr() {
                    counters.not_request += 1;
                    return None;
                }
                counters.requests += 1;
                if self.pending_requests.len() >= self.config.max_pending_requests {
                    self.pending_requests.pop_front();
                }
                self.pending_requests.push_back((message.header.id, tx_id));
            }
            Direction::ToClient => {
                if !message.header.qr() {
                    counters.not_response += 1;
                }
                counters.responses += 1;
                let id = message.header.id;
                if let Some(i) = self.pending_requests.iter().position(|&(pid, _)| pid == id) {
                    request_tx = self.pending_requests.remove(i).map(|(_, t)| t);
                    crate::applayer::free_if_drained(&mut self.pending_requests);
                }
            }
        }
        self.next_tx_id += 1;
        if self.transactions.len() >= self.config.max_transactions {
            self.transactions.pop_front();
            counters.tx_dropped += 1;
        }
        self.transactions.push_back(DnsTransaction { tx_id, direction, message, request_tx });
        Some(tx_id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &DnsTransaction> {
        self.transactions.iter()
    }

    pub fn tx(&self, tx_id: u64) -> Option<&DnsTransaction> {
        // Ids are increasing, so binary search works even after drops at the front.
        let i = self.transactions.binary_search_by_key(&tx_id, |t| t.tx_id).ok()?;
        self.transactions.get(i)
    }

    /// Forgets transactions with an id below `tx_id` (already inspected and logged).
    pub fn free_below(&mut self, tx_id: u64) {
        while self.transactions.front().is_some_and(|t| t.tx_id < tx_id) {
            self.transactions.pop_front();
        }
        crate::applayer::free_if_drained(&mut self.transactions);
    }

    /// Id the next transaction will get (= number of transactions created so far).
    pub fn next_tx_id(&self) -> u64 {
        self.next_tx_id
    }
}

/// Test support: a dotted name as uncompressed labels.
#[cfg(test)]
pub(crate) fn labels(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::value::record;
    use proptest::prelude::*;

    fn header(id: u16, flags: u16, qd: u16, an: u16, ns: u16, ar: u16) -> Vec<u8> {
        [id, flags, qd, an, ns, ar].iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn query(id: u16, name: &str, rrtype: u16) -> Vec<u8> {
        let mut m = header(id, 0x0100, 1, 0, 0, 0);
        m.extend(labels(name));
        m.extend(rrtype.to_be_bytes());
        m.extend(1u16.to_be_bytes());
        m
    }

    /// A response to `query` with answers: CNAME to a compressed name, then an A record.
    fn response(id: u16) -> Vec<u8> {
        let mut m = header(id, 0x8180, 1, 2, 0, 0);
        m.extend(labels("www.suricata.io")); // offset 12
        m.extend([0, 1, 0, 1]);
        // answer 1: name = pointer to offset 12, CNAME -> pointer to offset 16 ("suricata.io")
        m.extend([0xc0, 12, 0, 5, 0, 1, 0, 0, 0x0e, 0x0d, 0, 2, 0xc0, 16]);
        // answer 2: name = pointer to 16, A 35.212.0.44
        m.extend([0xc0, 16, 0, 1, 0, 1, 0, 0, 2, 0x55, 0, 4, 35, 212, 0, 44]);
        m
    }

    fn udp(state: &mut DnsState, dir: Direction, msg: &[u8]) -> Option<u64> {
        state.parse_udp(dir, msg, &mut DnsCounters::default())
    }

    /// A response of `records` answers whose names each point at the end of a chain of
    /// `chain` compression pointers (the chain is the first answer's rdata): every name
    /// walks the whole chain. With `chain` 0 every name is one pointer to the question.
    pub(crate) fn pointer_chain_response(chain: usize, records: u16) -> Vec<u8> {
        let mut m = header(7, 0x8180, 1, records + 1, 0, 0);
        m.extend(labels("a.example")); // offset 12
        m.extend([0, 1, 0, 1]);
        // Answer 0: a TXT record whose rdata holds the chain.
        m.extend([0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60]);
        m.extend(((chain * 2) as u16).to_be_bytes());
        let chain_at = m.len();
        for k in 0..chain {
            let target = if k == 0 { 12 } else { chain_at + 2 * (k - 1) };
            m.extend([0xc0 | (target >> 8) as u8, target as u8]);
        }
        let tail = if chain == 0 { 12 } else { chain_at + 2 * (chain - 1) };
        for _ in 0..records {
            m.extend([0xc0 | (tail >> 8) as u8, tail as u8, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]);
        }
        m
    }

    #[test]
    fn an_idle_flow_holds_no_transaction_buffers() {
        let mut s = DnsState::default();
        let q = udp(&mut s, Direction::ToServer, &query(0x1234, "www.suricata.io", 1)).expect("request");
        // Inspected and logged: the request goes, the pairing entry stays for the answer.
        s.free_below(q + 1);
        assert_eq!(s.transactions.capacity(), 0);
        assert_eq!(s.pending_requests.len(), 1);
        let r = udp(&mut s, Direction::ToClient, &response(0x1234)).expect("response");
        assert_eq!(s.tx(r).and_then(|t| t.request_tx), Some(q), "paired after the request went");
        // With the answer gone as well the flow keeps nothing queued, capacity included.
        s.free_below(r + 1);
        assert!(s.tx(r).is_none());
        assert_eq!((s.transactions.capacity(), s.pending_requests.capacity()), (0, 0));
        // A later exchange on the same flow works as before.
        let q2 = udp(&mut s, Direction::ToServer, &query(7, "a.example", 1)).expect("second request");
        assert_eq!(q2, r + 1);
        assert!(s.tx(q2).is_some_and(DnsTransaction::is_request));
    }

    #[test]
    fn pointer_chains_cannot_multiply_the_work_of_a_message() {
        // Benign: 3000 answers, each one pointer to the question name.
        let benign = pointer_chain_response(0, 3000);
        let (msg, _) = parse_message(&benign, usize::MAX).expect("benign message parses");
        assert_eq!(msg.answers.len(), 3001);
        // Hostile, same size: each answer's name walks 200 pointers (each name alone is
        // legal). The message-wide budget stops it after ~2 steps per byte.
        let hostile = pointer_chain_response(200, 2966);
        assert!(hostile.len() <= benign.len() + 16, "{} vs {}", hostile.len(), benign.len());
        assert_eq!(parse_message(&hostile, usize::MAX).map(|_| ()), Err(DnsError::NameLoop));
        // A few chained names stay well within the budget.
        let (few, _) = parse_message(&pointer_chain_response(200, 3), usize::MAX).expect("parses");
        assert_eq!(few.answers[1].name.bytes, b"a.example");
        // Scaled-down worst case against a generous bound (10x the benign time plus slack).
        let time = |m: &[u8]| {
            let started = std::time::Instant::now();
            for _ in 0..200 {
                let _ = std::hint::black_box(parse_message(std::hint::black_box(m), 256));
            }
            started.elapsed()
        };
        let (base, worst) = (time(&benign), time(&hostile));
        assert!(worst < base * 10 + std::time::Duration::from_millis(200), "{worst:?} vs benign {base:?}");
    }

    #[test]
    fn request_names_dotted_without_trailing_dot() {
        let mut s = DnsState::default();
        let id = udp(&mut s, Direction::ToServer, &query(0x1234, "www.google.co.uk", 1)).unwrap();
        let tx = s.tx(id).unwrap();
        assert_eq!(tx.query_names().collect::<Vec<_>>(), vec![b"www.google.co.uk".as_slice()]);
        assert_eq!(tx.query_rrtypes().collect::<Vec<_>>(), vec![1]);
        assert_eq!(tx.opcode(), 0);
        assert!(tx.message.header.rd());
    }

    #[test]
    fn response_with_compression_and_pairing() {
        let mut s = DnsState::default();
        let q = udp(&mut s, Direction::ToServer, &query(7, "www.suricata.io", 1)).unwrap();
        let r = udp(&mut s, Direction::ToClient, &response(7)).unwrap();
        assert_eq!((q, r), (0, 1));
        let tx = s.tx(r).unwrap();
        assert_eq!(tx.request_tx, Some(0));
        assert_eq!(tx.query_names().count(), 0, "dns.query only looks at requests");
        assert_eq!(tx.question_names().collect::<Vec<_>>(), vec![b"www.suricata.io".as_slice()]);
        assert_eq!(tx.answer_names().collect::<Vec<_>>(), vec![b"www.suricata.io".as_slice(), b"suricata.io"]);
        assert_eq!(
            tx.message.answers[0].rdata,
            RData::Name(DnsName { bytes: b"suricata.io".to_vec(), truncated: false })
        );
        assert_eq!(tx.message.answers[1].rdata, RData::A([35, 212, 0, 44]));
        assert_eq!(tx.message.answers[1].ttl, 597);
    }

    #[test]
    fn eve_matches_suricata_v3_layout() {
        let mut s = DnsState::default();
        udp(&mut s, Direction::ToServer, &query(0, "www.suricata.io", 1));
        udp(&mut s, Direction::ToClient, &response(0));
        let v = record(|w| s.tx(0).unwrap().write_record(w));
        assert_eq!(
            v,
            serde_json::json!({"version":3,"type":"request","tx_id":0,"id":0,"flags":"100","rd":true,
                "opcode":0,"rcode":"NOERROR","queries":[{"rrname":"www.suricata.io","rrtype":"A"}]})
        );
        let v = record(|w| s.tx(1).unwrap().write_record(w));
        assert_eq!(v["type"], "response");
        assert_eq!(v["flags"], "8180");
        assert_eq!(v["qr"], true);
        assert_eq!(v["ra"], true);
        assert_eq!(
            v["answers"][0],
            serde_json::json!({"rrname":"www.suricata.io","rrtype":"CNAME","ttl":3597,"rdata":"suricata.io"})
        );
        assert_eq!(v["answers"][1]["rdata"], "35.212.0.44");
    }

    #[test]
    fn eve_grouped_answers_and_type_filter() {
        use crate::applayer::dns::record::DnsRecordFilter;
        let mut s = DnsState::default();
        udp(&mut s, Direction::ToServer, &query(0, "www.suricata.io", 1));
        udp(&mut s, Direction::ToClient, &response(0));
        let resp = s.tx(1).unwrap();
        let v = record(|w| resp.write_record_with(w, &DnsRecordFilter::default()));
        assert_eq!(v["grouped"], serde_json::json!({"CNAME":["suricata.io"],"A":["35.212.0.44"]}));
        assert_eq!(v["answers"].as_array().map(Vec::len), Some(2));
        // The alert object has detailed answers only.
        assert!(record(|w| resp.write_record(w)).get("grouped").is_none());
        let grouped_only = DnsRecordFilter { detailed: false, ..DnsRecordFilter::default() };
        assert!(record(|w| resp.write_record_with(w, &grouped_only)).get("answers").is_none());
        // `types: [aaaa]` leaves out messages whose questions are all of other types.
        let aaaa =
            DnsRecordFilter { rrtypes: DnsRecordFilter::rrtype_by_name("aaaa").map(|t| vec![t]), ..Default::default() };
        assert_eq!(aaaa.rrtypes, Some(vec![28]));
        assert!(!resp.is_logged(&aaaa) && resp.is_logged(&DnsRecordFilter::default()));
        assert_eq!(DnsRecordFilter::rrtype_by_name("HTTPS"), Some(65));
        assert_eq!(DnsRecordFilter::rrtype_by_name("bogus"), None);
    }

    #[test]
    fn eve_v2_query_per_question_and_answer() {
        use crate::applayer::dns::record::DnsRecordFilter;
        let mut s = DnsState::default();
        udp(&mut s, Direction::ToServer, &query(9, "www.suricata.io", 1));
        udp(&mut s, Direction::ToClient, &response(9));
        let all = DnsRecordFilter::default();
        let req = s.tx(0).unwrap();
        let v = record(|w| assert!(req.write_v2_query(w, 0, &all)));
        assert_eq!(
            v,
            serde_json::json!({"version":2,"type":"query","id":9,"rrname":"www.suricata.io","rrtype":"A",
                "tx_id":0,"opcode":0})
        );
        assert!(!req.write_v2_query(&mut crate::record::value::ValueWriter::new(), 1, &all), "one question");
        let v = record(|w| s.tx(1).unwrap().write_v2_answer(w, &all));
        assert_eq!(
            (v["type"].as_str(), v["rrname"].as_str(), v["rrtype"].as_str()),
            (Some("answer"), Some("www.suricata.io"), Some("A"))
        );
        assert_eq!(v["grouped"]["A"][0], "35.212.0.44");
    }

    #[test]
    fn bad_additional_section_is_dropped_and_the_answers_kept() {
        let mut m = response(4);
        m[11] = 1; // one additional record, which is not there
        m.extend([0xc0]); // and a dangling pointer byte
        let mut s = DnsState::default();
        let mut c = DnsCounters::default();
        let id = s.parse_udp(Direction::ToClient, &m, &mut c).expect("kept");
        let tx = s.tx(id).unwrap();
        assert_eq!(tx.message.answers.len(), 2);
        assert!(tx.message.additionals.is_empty());
        assert_eq!((c.sections_dropped, c.malformed), (1, 0));
    }

    #[test]
    fn compression_loop_is_rejected() {
        // Question name is a pointer to itself.
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        m.extend([0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(parse_message(&m, 16).unwrap_err(), DnsError::NameLoop);
        // Two pointers pointing at each other, via a label.
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        m.extend([1, b'a', 0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(parse_message(&m, 16).unwrap_err(), DnsError::NameLoop);
        let mut s = DnsState::default();
        let mut c = DnsCounters::default();
        assert_eq!(s.parse_udp(Direction::ToServer, &m, &mut c), None);
        assert_eq!((c.malformed, c.name_loops), (1, 1));
    }

    #[test]
    fn bad_pointer_and_label_types_rejected() {
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        m.extend([0xc0, 200, 0, 1, 0, 1]);
        assert_eq!(parse_message(&m, 16).unwrap_err(), DnsError::BadLabel);
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        m.extend([0x41, b'a', 0, 0, 1, 0, 1]);
        assert_eq!(parse_message(&m, 16).unwrap_err(), DnsError::BadLabel);
        assert_eq!(parse_message(&[0; 11], 16).unwrap_err(), DnsError::ShortHeader);
        let mut m = query(1, "abc.de", 1);
        m.pop();
        assert_eq!(parse_message(&m, 16).unwrap_err(), DnsError::Truncated);
    }

    #[test]
    fn a_name_of_exactly_the_limit_is_kept_whole_across_a_pointer() {
        // 16 labels of 63 bytes and one of 1 byte, dotted: 16 * 64 + 1 = 1025 bytes, the
        // limit. The last label is reached through a compression pointer.
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        let tail = m.len();
        m.extend([1, b'z', 0]);
        let start = m.len();
        for _ in 0..16 {
            m.push(63);
            m.extend([b'x'; 63]);
        }
        m.extend([0xc0, tail as u8]);
        let (name, next) = parse_name(&m, start).unwrap();
        assert_eq!(next, m.len(), "resumes after the pointer");
        assert!(!name.truncated);
        assert_eq!(name.bytes.len(), MAX_NAME_LEN);
        assert_eq!(name.bytes.len(), name.bytes.capacity(), "stored at its final size");
        assert!(name.bytes.ends_with(b"x.z"));
        // One byte more and the last label no longer fits: it is left out, flagged.
        m.splice(tail..tail + 2, [2, b'z', b'z']);
        let start = start + 1;
        let last = m.len() - 1;
        m[last] = tail as u8;
        let (name, _) = parse_name(&m, start).unwrap();
        assert!(name.truncated);
        assert_eq!(name.bytes.len(), 16 * 64 - 1);
    }

    #[test]
    fn long_names_are_cut_at_limit() {
        // 200 questions' worth of pointer chains would explode; here one name made of a
        // pointer to a 63-byte label chain repeated: build 20 labels of 63 bytes = 1279 bytes.
        let mut m = header(1, 0x0100, 1, 0, 0, 0);
        for _ in 0..20 {
            m.push(63);
            m.extend([b'x'; 63]);
        }
        m.push(0);
        m.extend([0, 1, 0, 1]);
        let (msg, notes) = parse_message(&m, 16).unwrap();
        assert!(msg.questions[0].name.truncated);
        assert!(msg.questions[0].name.bytes.len() <= MAX_NAME_LEN);
        assert_eq!(notes.names_truncated, 1);
    }

    #[test]
    fn record_limit_skips_and_counts() {
        let mut m = header(9, 0x8180, 0, 5, 0, 0);
        for i in 0..5u8 {
            m.extend([0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 10, 0, 0, i]);
        }
        let mut s = DnsState::new(DnsConfig { max_records_per_section: 2, ..Default::default() });
        let mut c = DnsCounters::default();
        let id = s.parse_udp(Direction::ToClient, &m, &mut c).unwrap();
        assert_eq!(s.tx(id).unwrap().message.answers.len(), 2);
        assert_eq!(c.records_skipped, 3);
    }

    #[test]
    fn transaction_limit_drops_oldest() {
        let mut s = DnsState::new(DnsConfig { max_transactions: 3, ..Default::default() });
        let mut c = DnsCounters::default();
        for i in 0..5 {
            s.parse_udp(Direction::ToServer, &query(i, "a.b", 1), &mut c).unwrap();
        }
        assert_eq!(s.transactions().map(|t| t.tx_id).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(c.tx_dropped, 2);
        assert!(s.tx(0).is_none());
        assert_eq!(s.tx(3).unwrap().message.header.id, 3);
        s.free_below(4);
        assert_eq!(s.transactions().count(), 1);
    }

    #[test]
    fn response_flag_in_request_direction_is_refused() {
        let mut s = DnsState::default();
        let mut c = DnsCounters::default();
        assert_eq!(s.parse_udp(Direction::ToServer, &response(3), &mut c), None);
        assert_eq!(c.not_request, 1);
        // A query seen in the response direction is kept but counted.
        assert!(s.parse_udp(Direction::ToClient, &query(3, "x.y", 1), &mut c).is_some());
        assert_eq!(c.not_response, 1);
    }

    #[test]
    fn opcode_notify_with_soa_answer() {
        // Request from the dns-opcode conformance capture: opcode 4, one SOA in the answers.
        let mut m = header(0x9668, 0x2400, 1, 1, 0, 0);
        m.extend(labels("bortzmeyer.42"));
        m.extend([0, 6, 0, 1]);
        m.extend(labels("bortzmeyer.42"));
        m.extend([0, 6, 0, 1, 0, 1, 0x51, 0x80]);
        let mut rdata = labels("ns3.bortzmeyer.org");
        rdata.extend(labels("stephane.bortzmeyer.org"));
        rdata.extend([0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
        m.extend((rdata.len() as u16).to_be_bytes());
        m.extend(rdata);
        let mut s = DnsState::default();
        let id = udp(&mut s, Direction::ToServer, &m).unwrap();
        let tx = s.tx(id).unwrap().clone();
        assert_eq!(tx.opcode(), 4);
        match &tx.message.answers[0].rdata {
            RData::Soa(soa) => {
                assert_eq!(soa.mname.bytes, b"ns3.bortzmeyer.org");
                assert_eq!((soa.serial, soa.minimum), (1, 5));
            }
            other => panic!("expected SOA, got {other:?}"),
        }
        let v = record(|w| tx.write_record(w));
        assert_eq!(v["answers"][0]["soa"]["rname"], "stephane.bortzmeyer.org");
        assert_eq!(v["answers"][0]["rrtype"], "SOA");
    }

    #[test]
    fn root_query_gives_empty_name() {
        // detect-bytetest-03 capture: a query for the root name.
        let m = [0x38, 0x35, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
        let mut s = DnsState::default();
        let id = udp(&mut s, Direction::ToServer, &m).unwrap();
        let tx = s.tx(id).unwrap();
        assert_eq!(tx.query_names().collect::<Vec<_>>(), vec![b"".as_slice()]);
    }

    #[test]
    fn rdata_types_mx_txt_srv_aaaa_and_unknown() {
        let mut m = header(5, 0x8180, 0, 5, 0, 0);
        m.extend([0, 0, 15, 0, 1, 0, 0, 0, 9]); // MX
        let mut mx = vec![0, 10];
        mx.extend(labels("mail.example"));
        m.extend((mx.len() as u16).to_be_bytes());
        m.extend(mx);
        m.extend([0, 0, 16, 0, 1, 0, 0, 0, 9, 0, 6, 2, b'h', b'i', 2, b'y', b'o']); // TXT
        m.extend([0, 0, 33, 0, 1, 0, 0, 0, 9]); // SRV
        let mut srv = vec![0, 1, 0, 2, 0x01, 0xbb];
        srv.extend(labels("t.example"));
        m.extend((srv.len() as u16).to_be_bytes());
        m.extend(srv);
        m.extend([0, 0, 28, 0, 1, 0, 0, 0, 9, 0, 16, 0x26, 0x07, 0xf8, 0xb0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x69]);
        m.extend([0, 0, 99, 0, 1, 0, 0, 0, 9, 0, 3, 1, 2, 3]); // SPF as raw
        let (msg, _) = parse_message(&m, 16).unwrap();
        assert_eq!(
            msg.answers[0].rdata,
            RData::Mx { preference: 10, exchange: DnsName { bytes: b"mail.example".to_vec(), truncated: false } }
        );
        assert_eq!(msg.answers[1].rdata, RData::Txt(vec![b"hi".to_vec(), b"yo".to_vec()]));
        assert!(matches!(&msg.answers[2].rdata, RData::Srv(s) if s.port == 443 && s.target.bytes == b"t.example"));
        assert!(matches!(msg.answers[3].rdata, RData::Aaaa(_)));
        assert_eq!(msg.answers[4].rdata, RData::Raw(vec![1, 2, 3]));
        let tx = DnsTransaction { tx_id: 0, direction: Direction::ToClient, message: msg, request_tx: None };
        let v = record(|w| tx.write_record(w));
        assert_eq!(v["answers"][1]["rdata"], "hi");
        assert_eq!(v["answers"][2]["rdata"], "yo", "one eve answer per TXT string");
        assert_eq!(v["answers"][3]["srv"]["port"], 443);
        assert_eq!(v["answers"][4]["rdata"], "2607:f8b0:0000:0000:0000:0000:0000:0069");
        assert_eq!(v["answers"][5]["rrtype"], "SPF");
        assert_eq!(v["answers"].as_array().unwrap().len(), 6);
    }

    fn tcp_stream(msgs: &[Vec<u8>]) -> Vec<u8> {
        let mut s = Vec::new();
        for m in msgs {
            s.extend((m.len() as u16).to_be_bytes());
            s.extend(m);
        }
        s
    }

    #[test]
    fn tcp_several_messages_per_segment_and_split() {
        let stream = tcp_stream(&[query(1, "a.example", 1), query(2, "b.example", 28), query(3, "c.example", 15)]);
        let mut whole = DnsState::default();
        let mut c = DnsCounters::default();
        assert_eq!(whole.parse_tcp(Direction::ToServer, &stream, &mut c), 3);
        let mut split = DnsState::default();
        let mut created = 0;
        for piece in stream.chunks(7) {
            created += split.parse_tcp(Direction::ToServer, piece, &mut c);
        }
        assert_eq!(created, 3);
        assert_eq!(whole.transactions().collect::<Vec<_>>(), split.transactions().collect::<Vec<_>>());
    }

    #[test]
    fn tcp_gap_resyncs_on_next_frame() {
        let mut s = DnsState::default();
        let mut c = DnsCounters::default();
        let first = tcp_stream(&[query(1, "a.example", 1)]);
        s.parse_tcp(Direction::ToServer, &first[..10], &mut c);
        s.on_gap(Direction::ToServer);
        s.parse_tcp(Direction::ToServer, b"garbage that is not dns", &mut c);
        assert_eq!(c.gap_bytes_skipped, 23);
        assert_eq!(s.parse_tcp(Direction::ToServer, &tcp_stream(&[query(2, "b.example", 1)]), &mut c), 1);
        assert_eq!(s.transactions().next().unwrap().message.header.id, 2);
    }

    /// Found by the fuzz target `dns_tcp`: after a gap, a frame whose length prefix and
    /// header arrived in several small segments was never picked up again.
    #[test]
    fn tcp_gap_resyncs_on_a_frame_start_split_over_segments() {
        let stream = tcp_stream(&[query(7, "a.example", 1), query(8, "b.example", 1)]);
        for piece in [1, 5, 13] {
            let mut s = DnsState::default();
            let mut c = DnsCounters::default();
            s.on_gap(Direction::ToServer);
            let created: usize = stream.chunks(piece).map(|p| s.parse_tcp(Direction::ToServer, p, &mut c)).sum();
            assert_eq!(created, 2, "pieces of {piece}");
            assert_eq!(c.gap_bytes_skipped, 0);
        }
        // A short start that turns out not to be DNS is dropped with what completed it.
        let mut s = DnsState::default();
        let mut c = DnsCounters::default();
        s.on_gap(Direction::ToServer);
        s.parse_tcp(Direction::ToServer, b"\xff\xff\xff", &mut c);
        s.parse_tcp(Direction::ToServer, b"not a dns header at all", &mut c);
        assert_eq!(c.gap_bytes_skipped, 26);
        assert_eq!(s.parse_tcp(Direction::ToServer, &stream, &mut c), 2);
    }

    #[test]
    fn probe_checks_counts_as_suricata() {
        let q = query(1, "a.b", 1);
        assert_eq!(probe_message(&q, q.len()), Some(true));
        assert_eq!(probe_message(&response(1), response(1).len()), Some(false));
        // An unassigned opcode is still DNS (dns-invalid-opcode capture).
        let mut odd = q.clone();
        odd[2] = 0x48; // opcode 9
        assert_eq!(probe_message(&odd, odd.len()), Some(true));
        // A request without questions, or no records but more than a header, is not.
        let empty_request = header(1, 0x0100, 0, 0, 0, 0);
        assert_eq!(probe_message(&empty_request, empty_request.len()), None);
        let mut padded = header(1, 0x8180, 0, 0, 0, 0);
        padded.extend([0; 4]);
        assert_eq!(probe_message(&padded, padded.len()), None);
        let huge = header(1, 0x0100, 400, 0, 0, 0);
        assert_eq!(probe_message(&huge, 100), None);
        // Header only, rest still to come: plausible.
        assert_eq!(probe_message(&q[..12], q.len()), Some(true));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut s = DnsState::default();
            let mut c = DnsCounters::default();
            s.parse_udp(Direction::ToServer, &data, &mut c);
            s.parse_udp(Direction::ToClient, &data, &mut c);
            s.parse_tcp(Direction::ToServer, &data, &mut c);
            let _ = probe_message(&data, data.len());
            for tx in s.transactions() {
                // Every open object or list is closed again (the test writer checks).
                let _ = record(|w| tx.write_record(w));
            }
        }

        #[test]
        fn mutated_messages_never_panic(pos in 0usize..80, byte in any::<u8>(), cut in 0usize..80) {
            let mut m = response(3);
            if pos < m.len() { m[pos] = byte; }
            m.truncate(cut.max(1) + 12);
            let _ = parse_message(&m, 16);
        }

        #[test]
        fn tcp_any_split_equals_whole(cuts in proptest::collection::vec(1usize..40, 1..20)) {
            let stream = tcp_stream(&[query(1, "a.example", 1), response(1), query(2, "bb.example.org", 16)]);
            let mut whole = DnsState::default();
            let mut c = DnsCounters::default();
            whole.parse_tcp(Direction::ToClient, &stream, &mut c);
            let mut split = DnsState::default();
            let mut rest = stream.as_slice();
            let mut i = 0;
            while !rest.is_empty() {
                let n = cuts[i % cuts.len()].min(rest.len());
                split.parse_tcp(Direction::ToClient, &rest[..n], &mut c);
                rest = &rest[n..];
                i += 1;
            }
            prop_assert_eq!(whole.transactions().collect::<Vec<_>>(), split.transactions().collect::<Vec<_>>());
        }

        #[test]
        fn tcp_one_byte_at_a_time_equals_whole(n in 1usize..4) {
            let msgs: Vec<Vec<u8>> = (0..n).map(|i| query(i as u16, "one.two.three", 1)).collect();
            let stream = tcp_stream(&msgs);
            let mut whole = DnsState::default();
            let mut c = DnsCounters::default();
            whole.parse_tcp(Direction::ToServer, &stream, &mut c);
            let mut bytewise = DnsState::default();
            for b in &stream {
                bytewise.parse_tcp(Direction::ToServer, std::slice::from_ref(b), &mut c);
            }
            prop_assert_eq!(whole.transactions().count(), n);
            prop_assert_eq!(whole.transactions().collect::<Vec<_>>(), bytewise.transactions().collect::<Vec<_>>());
        }
    }
}
