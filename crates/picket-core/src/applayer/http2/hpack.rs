//! HPACK (RFC 7541): the header compression of HTTP/2, decoding side only.
//!
//! One [`Decoder`] per direction of a connection keeps that direction's dynamic table. A
//! header block decodes into [`Field`]s: header fields, dynamic table size updates (which
//! Suricata logs in the header lists) and decoding errors (logged too, and reported as
//! app-layer anomalies by the caller). Hostile input never panics: integers are bounded,
//! the table is bounded at [`MAX_TABLE_SIZE`] whatever the peer announces (counted in
//! [`Decoder::table_capped`]), and a malformed block stops decoding with an error field.

use std::collections::VecDeque;

/// Largest dynamic table kept (Suricata's `HTTP2_MAX_TABLESIZE`). A larger size update is
/// honoured up to this size and counted.
pub const MAX_TABLE_SIZE: usize = 65536;
/// The table size a connection starts with (RFC 7541 section 4.2, SETTINGS default).
const DEFAULT_TABLE_SIZE: usize = 4096;
/// Per-entry overhead of the table size accounting (RFC 7541 section 4.1).
const ENTRY_OVERHEAD: usize = 32;
/// Continuation bytes of an integer beyond which it overflows (2^7^4: larger than any
/// length or index a sane peer sends; Suricata gives up past u64).
const MAX_INT_BYTES: usize = 4;

/// One decoded item of a header block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Header {
        name: Vec<u8>,
        value: Vec<u8>,
    },
    /// A dynamic table size update (eve: `{"table_size_update": N}`).
    SizeUpdate(u64),
    /// Decoding failed here; the rest of the block was not decoded.
    Error(DecodeError),
}

/// Why a header block could not be decoded, with Suricata's names for its eve `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Truncated representation, bad Huffman code or padding.
    Malformed,
    /// An index past the static and dynamic tables.
    NotIndexed,
    /// An integer too large.
    IntegerOverflow,
    /// Index 0, which RFC 7541 forbids.
    Index0,
}

impl DecodeError {
    /// Suricata's name of the decode status (eve's header list `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            DecodeError::Malformed => "HTTP2HeaderDecodeError",
            DecodeError::NotIndexed => "HTTP2HeaderDecodeNotIndexed",
            DecodeError::IntegerOverflow => "HTTP2HeaderDecodeIntegerOverflow",
            DecodeError::Index0 => "HTTP2HeaderDecodeIndex0",
        }
    }
}

/// RFC 7541 Appendix A.
const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The decoding state of one direction: its dynamic table.
#[derive(Clone, Debug)]
pub struct Decoder {
    /// Newest entry first (index 62 is `table[0]`).
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// Size of the entries as RFC 7541 counts it.
    size: usize,
    /// The size the peer set, at most [`MAX_TABLE_SIZE`].
    max_size: usize,
    /// Size updates above [`MAX_TABLE_SIZE`] (honoured up to it).
    pub table_capped: u64,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { table: VecDeque::new(), size: 0, max_size: DEFAULT_TABLE_SIZE, table_capped: 0 }
    }
}

/// Reads an integer of an `n`-bit prefix (RFC 7541 section 5.1) at `*pos`.
fn read_int(block: &[u8], pos: &mut usize, n: u8) -> Result<u64, DecodeError> {
    let first = *block.get(*pos).ok_or(DecodeError::Malformed)?;
    *pos += 1;
    let max = (1u64 << n) - 1;
    let mut value = u64::from(first) & max;
    if value < max {
        return Ok(value);
    }
    for i in 0..=MAX_INT_BYTES {
        let b = *block.get(*pos).ok_or(DecodeError::Malformed)?;
        *pos += 1;
        if i == MAX_INT_BYTES {
            return Err(DecodeError::IntegerOverflow);
        }
        value += u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::IntegerOverflow)
}

/// Reads a string literal (RFC 7541 section 5.2), Huffman-decoding it when flagged.
fn read_string(block: &[u8], pos: &mut usize) -> Result<Vec<u8>, DecodeError> {
    let huffman = block.get(*pos).ok_or(DecodeError::Malformed)? & 0x80 != 0;
    let len = read_int(block, pos, 7)?;
    let len = usize::try_from(len).map_err(|_| DecodeError::IntegerOverflow)?;
    let end = pos.checked_add(len).filter(|&e| e <= block.len()).ok_or(DecodeError::Malformed)?;
    let raw = &block[*pos..end];
    *pos = end;
    if huffman {
        huffman_decode(raw)
    } else {
        Ok(raw.to_vec())
    }
}

impl Decoder {
    /// Bytes the table holds (names and values), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.table.iter().map(|(n, v)| n.capacity() + v.capacity()).sum::<usize>()
            + self.table.capacity() * std::mem::size_of::<(Vec<u8>, Vec<u8>)>()
    }

    /// Entries of the dynamic table now.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    fn lookup(&self, index: u64) -> Result<(Vec<u8>, Vec<u8>), DecodeError> {
        match index {
            0 => Err(DecodeError::Index0),
            1..=61 => {
                let (n, v) = STATIC_TABLE[(index - 1) as usize];
                Ok((n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            }
            _ => {
                let i = usize::try_from(index - 62).map_err(|_| DecodeError::NotIndexed)?;
                self.table.get(i).cloned().ok_or(DecodeError::NotIndexed)
            }
        }
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some((n, v)) = self.table.pop_back() else {
                self.size = 0;
                break;
            };
            self.size -= ENTRY_OVERHEAD + n.len() + v.len();
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let entry = ENTRY_OVERHEAD + name.len() + value.len();
        if entry > self.max_size {
            // RFC 7541 section 4.4: an entry larger than the table empties it.
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - entry);
        self.table.push_front((name.to_vec(), value.to_vec()));
        self.size += entry;
    }

    fn set_max_size(&mut self, requested: u64) {
        let max = match usize::try_from(requested) {
            Ok(m) if m <= MAX_TABLE_SIZE => m,
            _ => {
                self.table_capped += 1;
                MAX_TABLE_SIZE
            }
        };
        self.max_size = max;
        self.evict_to(max);
    }

    /// Decodes one complete header block (HEADERS or PUSH_PROMISE plus its
    /// CONTINUATIONs), appending its fields to `out`, at most `max_fields` in all (more are
    /// decoded for the table's sake but not kept). Returns how many were not kept.
    pub fn decode(&mut self, block: &[u8], out: &mut Vec<Field>, max_fields: usize) -> u64 {
        let mut pos = 0;
        let mut dropped = 0;
        let mut push = |out: &mut Vec<Field>, f: Field| {
            if out.len() < max_fields {
                out.push(f);
            } else {
                dropped += 1;
            }
        };
        while pos < block.len() {
            match self.decode_one(block, &mut pos) {
                Ok(f) => push(out, f),
                Err(e) => {
                    push(out, Field::Error(e));
                    break;
                }
            }
        }
        dropped
    }

    /// Decodes the representation at `*pos` (RFC 7541 section 6).
    fn decode_one(&mut self, block: &[u8], pos: &mut usize) -> Result<Field, DecodeError> {
        let b = block[*pos];
        if b & 0x80 != 0 {
            // Indexed header field.
            let (name, value) = self.lookup(read_int(block, pos, 7)?)?;
            return Ok(Field::Header { name, value });
        }
        if b & 0xe0 == 0x20 {
            let size = read_int(block, pos, 5)?;
            self.set_max_size(size);
            return Ok(Field::SizeUpdate(size));
        }
        // Literals: with incremental indexing (01), without (0000) or never indexed (0001).
        let (prefix, index_it) = if b & 0xc0 == 0x40 { (6, true) } else { (4, false) };
        let index = read_int(block, pos, prefix)?;
        let name = if index == 0 { read_string(block, pos)? } else { self.lookup(index)?.0 };
        let value = read_string(block, pos)?;
        if index_it {
            self.insert(&name, &value);
        }
        Ok(Field::Header { name, value })
    }
}

/// Code length in bits of each symbol of the HPACK Huffman code (RFC 7541 Appendix B),
/// symbols 0..=255 then EOS (256). The code is canonical: codes of one length are
/// consecutive, in symbol order, so the lengths are the whole table.
const HUFFMAN_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 0x20
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 0x30
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 0x40
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 0x50
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 0x60
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 0x70
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
    30, // EOS
];

const MAX_CODE_LEN: usize = 30;
const EOS: u16 = 256;

/// The canonical code built from [`HUFFMAN_LENGTHS`]: per length, its first code, how many
/// codes it has and where its symbols start in `symbols` (sorted by length, then symbol).
struct Canonical {
    first: [u32; MAX_CODE_LEN + 1],
    count: [u32; MAX_CODE_LEN + 1],
    offset: [u16; MAX_CODE_LEN + 1],
    symbols: [u16; 257],
}

const fn canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; MAX_CODE_LEN + 1],
        count: [0; MAX_CODE_LEN + 1],
        offset: [0; MAX_CODE_LEN + 1],
        symbols: [0; 257],
    };
    let mut s = 0;
    while s < 257 {
        c.count[HUFFMAN_LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut code = 0u32;
    let mut next = 0u16;
    let mut len = 1;
    while len <= MAX_CODE_LEN {
        c.first[len] = code;
        c.offset[len] = next;
        let mut s = 0;
        while s < 257 {
            if HUFFMAN_LENGTHS[s] as usize == len {
                c.symbols[next as usize] = s as u16;
                next += 1;
            }
            s += 1;
        }
        code = (code + c.count[len]) << 1;
        len += 1;
    }
    c
}

static HUFFMAN: Canonical = canonical();

/// Decodes a Huffman-coded string: padding must be at most 7 one-bits, EOS may not occur.
pub fn huffman_decode(data: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let h = &HUFFMAN;
    let mut out = Vec::with_capacity(data.len() * 8 / 5);
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in data {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            let index = code.wrapping_sub(h.first[len]);
            if code >= h.first[len] && index < h.count[len] {
                let sym = h.symbols[h.offset[len] as usize + index as usize];
                if sym == EOS {
                    return Err(DecodeError::Malformed);
                }
                out.push(sym as u8);
                code = 0;
                len = 0;
            } else if len == MAX_CODE_LEN {
                return Err(DecodeError::Malformed);
            }
        }
    }
    // Padding: the most significant bits of EOS (all ones), shorter than a byte.
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(DecodeError::Malformed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
    }

    fn code_of(sym: usize) -> (u32, usize) {
        let h = &HUFFMAN;
        let len = HUFFMAN_LENGTHS[sym] as usize;
        let pos = h.symbols.iter().position(|&s| s as usize == sym).expect("symbol") as u32;
        (h.first[len] + pos - u32::from(h.offset[len]), len)
    }

    #[test]
    fn canonical_codes_are_the_rfc_ones() {
        // Codes as printed in RFC 7541 Appendix B.
        assert_eq!(code_of(0), (0x1ff8, 13));
        assert_eq!(code_of(1), (0x7fffd8, 23));
        assert_eq!(code_of(9), (0xffffea, 24));
        assert_eq!(code_of(10), (0x3ffffffc, 30));
        assert_eq!(code_of(b' ' as usize), (0x14, 6));
        assert_eq!(code_of(b'0' as usize), (0x0, 5));
        assert_eq!(code_of(b'a' as usize), (0x3, 5));
        assert_eq!(code_of(b'z' as usize), (0x7b, 7));
        assert_eq!(code_of(255), (0x3ffffee, 26));
        assert_eq!(code_of(256), (0x3fffffff, 30));
    }

    #[test]
    fn huffman_strings_of_rfc_examples() {
        // RFC 7541 C.4.1 and C.6.1.
        assert_eq!(huffman_decode(&hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff")).unwrap(), b"www.example.com");
        assert_eq!(huffman_decode(&hex("a8eb 1064 9cbf")).unwrap(), b"no-cache");
        assert_eq!(huffman_decode(&hex("6402")).unwrap(), b"302");
        assert_eq!(
            huffman_decode(&hex("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff")).unwrap(),
            b"Mon, 21 Oct 2013 20:13:21 GMT"
        );
    }

    #[test]
    fn huffman_rejects_bad_padding_and_eos() {
        assert_eq!(huffman_decode(&[0x00]), Err(DecodeError::Malformed), "zero padding");
        assert_eq!(huffman_decode(&[0xff, 0xff, 0xff, 0xff]), Err(DecodeError::Malformed), "EOS");
        assert_eq!(huffman_decode(&[0xff]), Err(DecodeError::Malformed), "8 bits of padding");
    }

    fn headers(fields: &[Field]) -> Vec<(String, String)> {
        fields
            .iter()
            .filter_map(|f| match f {
                Field::Header { name, value } => {
                    Some((String::from_utf8_lossy(name).into_owned(), String::from_utf8_lossy(value).into_owned()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rfc_request_examples_with_huffman_and_dynamic_table() {
        // RFC 7541 C.4: three requests sharing one dynamic table.
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.decode(&hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"), &mut out, 64);
        assert_eq!(
            headers(&out),
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]
                .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(d.size, 57);
        out.clear();
        d.decode(&hex("8286 84be 5886 a8eb 1064 9cbf"), &mut out, 64);
        assert_eq!(headers(&out)[3], (":authority".into(), "www.example.com".into()));
        assert_eq!(headers(&out)[4], ("cache-control".into(), "no-cache".into()));
        out.clear();
        d.decode(&hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"), &mut out, 64);
        assert_eq!(headers(&out)[2], (":path".into(), "/index.html".into()));
        assert_eq!(headers(&out)[4], ("custom-key".into(), "custom-value".into()));
        assert_eq!(d.size, 164);
        assert_eq!(d.table_len(), 3);
    }

    #[test]
    fn eviction_and_size_updates() {
        // RFC 7541 C.5.1-C.5.2 with a 256-byte table: the second response evicts.
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.decode(&hex("3fe1 01"), &mut out, 64); // size update to 256
        assert_eq!(out, [Field::SizeUpdate(256)]);
        d.decode(
            &hex("4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
                 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
            &mut out,
            64,
        );
        assert_eq!(d.size, 222);
        out.clear();
        d.decode(&hex("4803 3330 37c1 c0bf"), &mut out, 64);
        assert_eq!(headers(&out)[0], (":status".into(), "307".into()));
        assert_eq!(headers(&out)[3], ("location".into(), "https://www.example.com".into()));
        assert_eq!(d.size, 222);
        // A size update past the cap is honoured up to it and counted.
        out.clear();
        d.decode(&hex("3fe2 ff03"), &mut out, 64);
        assert_eq!(d.table_capped, 1);
        assert_eq!(d.max_size, MAX_TABLE_SIZE);
    }

    #[test]
    fn hostile_blocks_give_errors_not_panics() {
        let mut d = Decoder::default();
        for block in [
            &hex("80")[..],            // index 0
            &hex("ff80 8080 8080 01"), // integer overflow
            &hex("be"),                // index 62, empty table
            &hex("4085"),              // truncated name
            &hex("7f"),                // truncated integer
            &hex("0081 00"),           // bad huffman name
        ] {
            let mut out = Vec::new();
            d.decode(block, &mut out, 64);
            assert!(matches!(out.last(), Some(Field::Error(_))), "{block:02x?} -> {out:?}");
        }
        let mut out = Vec::new();
        d.decode(&hex("80"), &mut out, 64);
        assert_eq!(out, [Field::Error(DecodeError::Index0)]);
        // Fields past the cap are decoded but not kept.
        let mut out = Vec::new();
        assert_eq!(d.decode(&hex("8282 8282"), &mut out, 2), 2);
        assert_eq!(out.len(), 2);
    }
}
