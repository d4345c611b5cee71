//! Content-Encoding decoding of HTTP bodies: a chain of gzip / deflate / zlib layers.
//!
//! Tolerant the way browsers (and libhtp) are, because an IDS that is stricter than the
//! client can be evaded:
//! - the gzip header is parsed by hand and its reserved flags, CRC and trailer are ignored;
//! - a layer that fails before producing any output restarts with the next format
//!   (gzip → raw deflate → zlib → gzip, at most three restarts), replaying what it saw, so
//!   "deflate" that is really zlib (or gzip labelled deflate) still decodes;
//! - a layer whose input never decodes passes it through unchanged (the header lied);
//! - a layer that fails after producing output stops (the data it produced is kept);
//! - data after the end of a compressed stream is ignored.
//!
//! Bomb protection: once the decoded size exceeds `bomb_limit` *and* `bomb_ratio` times the
//! encoded size, decoding stops for this body.
//!
//! The receiver can stop decoding too: a sink returns `false` once it takes no more bytes
//! (the body limit is reached), and the chain stops inflating right there instead of
//! decoding the rest of the piece it was given into bytes nobody reads.

use flate2::{Decompress, FlushDecompress, Status};

use crate::bytes;

/// One content coding we can undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Gzip,
    /// Raw RFC 1951 deflate.
    Deflate,
    /// RFC 1950 zlib-wrapped deflate.
    Zlib,
}

impl Codec {
    fn next_on_failure(self) -> Codec {
        match self {
            Codec::Gzip => Codec::Deflate,
            Codec::Deflate => Codec::Zlib,
            Codec::Zlib => Codec::Gzip,
        }
    }
}

/// Bytes of undecodable input kept per layer so a restart can replay them.
const REPLAY_LIMIT: usize = 4096;
/// A gzip header longer than this (extra field, file name, comment) is treated as garbage.
const GZIP_HEADER_LIMIT: usize = 4096;
const MAX_RESTARTS: u8 = 3;
const OUT_CHUNK: usize = 8192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LayerState {
    Decoding,
    /// The input was never decodable: forward it unchanged.
    Passthrough,
    /// End of the compressed stream, or an error after output: ignore further input.
    Done,
}

struct Layer {
    codec: Codec,
    inflater: Decompress,
    state: LayerState,
    /// Gzip only: header bytes collected until the header is complete.
    gzip_header: Vec<u8>,
    gzip_header_done: bool,
    produced_output: bool,
    restarts: u8,
    replay: Vec<u8>,
}

enum GzipHeader {
    Complete(usize),
    Incomplete,
    Invalid,
}

/// Lenient gzip member header parse: magic, method 8, then the optional fields the flags
/// announce. Reserved flag bits, MTIME, XFL, OS and the header CRC value are not checked.
fn parse_gzip_header(buf: &[u8]) -> GzipHeader {
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    let magic = [0x1f, 0x8b, 0x08];
    let n = buf.len().min(3);
    if buf[..n] != magic[..n] {
        return GzipHeader::Invalid;
    }
    if buf.len() < 10 {
        return GzipHeader::Incomplete;
    }
    let flags = buf[3];
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        let Some(xlen) = bytes::le_u16(buf, pos) else {
            return GzipHeader::Incomplete;
        };
        let xlen = xlen as usize;
        pos += 2 + xlen;
        if buf.len() < pos {
            return GzipHeader::Incomplete;
        }
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match buf[pos.min(buf.len())..].iter().position(|&b| b == 0) {
                Some(nul) => pos += nul + 1,
                None => return GzipHeader::Incomplete,
            }
        }
    }
    if flags & FHCRC != 0 {
        pos += 2;
        if buf.len() < pos {
            return GzipHeader::Incomplete;
        }
    }
    GzipHeader::Complete(pos)
}

impl Layer {
    fn new(codec: Codec) -> Layer {
        Layer {
            codec,
            inflater: Decompress::new(codec == Codec::Zlib),
            state: LayerState::Decoding,
            gzip_header: Vec::new(),
            gzip_header_done: false,
            produced_output: false,
            restarts: 0,
            replay: Vec::new(),
        }
    }

    fn reset_to(&mut self, codec: Codec) {
        self.codec = codec;
        self.inflater = Decompress::new(codec == Codec::Zlib);
        self.gzip_header.clear();
        self.gzip_header_done = false;
    }

    /// Decodes `input`, handing every produced piece to `sink`. Returns `false` once the
    /// sink wants no more (the rest of `input` is then left undecoded).
    fn write(&mut self, input: &[u8], sink: Sink<'_>) -> bool {
        match self.state {
            LayerState::Passthrough => sink(input),
            LayerState::Done => true,
            LayerState::Decoding => {
                let mut stored = 0;
                if !self.produced_output && self.replay.len() < REPLAY_LIMIT {
                    stored = input.len().min(REPLAY_LIMIT - self.replay.len());
                    self.replay.extend_from_slice(&input[..stored]);
                }
                match self.decode(input, sink) {
                    Ok(more) => more,
                    Err(()) => {
                        if !self.on_error(sink) {
                            return false;
                        }
                        // Given up on decoding: the replay passed through what it kept of this
                        // call; the rest passes through too, as it would had it arrived in a
                        // later call (the output must not depend on where the body was cut).
                        if self.state == LayerState::Passthrough {
                            return sink(input.get(stored..).unwrap_or_default());
                        }
                        true
                    }
                }
            }
        }
    }

    /// Restarts with the next codec (or gives up); `false` if the sink wants no more.
    fn on_error(&mut self, sink: Sink<'_>) -> bool {
        if self.produced_output {
            self.state = LayerState::Done;
            return true;
        }
        if self.restarts >= MAX_RESTARTS {
            self.state = LayerState::Passthrough;
            let replay = std::mem::take(&mut self.replay);
            return sink(&replay);
        }
        self.restarts += 1;
        let next = self.codec.next_on_failure();
        self.reset_to(next);
        let replay = std::mem::take(&mut self.replay);
        let result = self.decode(&replay, sink);
        if !self.produced_output {
            self.replay = replay;
        }
        match result {
            Ok(more) => more,
            Err(()) => self.on_error(sink),
        }
    }

    /// `Ok(false)`: the sink wants no more, decoding stopped early.
    fn decode(&mut self, input: &[u8], sink: Sink<'_>) -> Result<bool, ()> {
        let mut input = input;
        // The gzip header is collected separately (it may arrive in pieces).
        let header_tail: Vec<u8>;
        if self.codec == Codec::Gzip && !self.gzip_header_done {
            self.gzip_header.extend_from_slice(input);
            match parse_gzip_header(&self.gzip_header) {
                GzipHeader::Invalid => return Err(()),
                GzipHeader::Incomplete => {
                    if self.gzip_header.len() > GZIP_HEADER_LIMIT {
                        return Err(());
                    }
                    return Ok(true);
                }
                GzipHeader::Complete(len) => {
                    self.gzip_header_done = true;
                    header_tail = self.gzip_header.split_off(len);
                    self.gzip_header = Vec::new();
                    input = &header_tail;
                }
            }
        }
        // Written by the inflater into its spare capacity (`decompress_vec`): a stack array
        // would be zeroed on every call, 8 KiB for a piece that is often one segment.
        let mut out: Vec<u8> = Vec::with_capacity(OUT_CHUNK);
        loop {
            out.clear();
            let in_before = self.inflater.total_in();
            let result = self.inflater.decompress_vec(input, &mut out, FlushDecompress::None);
            let consumed = (self.inflater.total_in() - in_before) as usize;
            let produced = out.len();
            input = input.get(consumed..).unwrap_or(&[]);
            // Output decoded before an error counts too: otherwise a stream corrupted after
            // its first bytes decodes when it arrives in pieces but not when it arrives whole.
            if produced > 0 {
                self.produced_output = true;
                self.replay = Vec::new();
                if !sink(&out) {
                    return Ok(false);
                }
            }
            let status = result.map_err(|_| ())?;
            match status {
                Status::StreamEnd => {
                    self.state = LayerState::Done;
                    return Ok(true);
                }
                _ if consumed == 0 && produced == 0 => return Ok(true),
                _ if input.is_empty() && produced < OUT_CHUNK => return Ok(true),
                _ => {}
            }
        }
    }
}

/// Limits for [`BodyDecoder`].
#[derive(Clone, Copy, Debug)]
pub struct DecompressLimits {
    /// Decoded bytes allowed before the ratio check applies.
    pub bomb_limit: u64,
    /// Maximum decoded/encoded ratio once past `bomb_limit`.
    pub bomb_ratio: u64,
}

/// The decoding chain of one body. `layers[0]` undoes the coding applied last (the last
/// one listed in Content-Encoding), whose output feeds `layers[1]`, and so on.
pub struct BodyDecoder {
    layers: Vec<Layer>,
    limits: DecompressLimits,
    encoded_len: u64,
    decoded_len: u64,
    bomb: bool,
    /// The receiver took no more (body limit): nothing further is decoded.
    full: bool,
}

impl BodyDecoder {
    /// `codecs` in the order they were applied by the sender (header order).
    pub fn new(codecs_in_header_order: &[Codec], limits: DecompressLimits) -> BodyDecoder {
        BodyDecoder {
            layers: codecs_in_header_order.iter().rev().map(|&c| Layer::new(c)).collect(),
            limits,
            encoded_len: 0,
            decoded_len: 0,
            bomb: false,
            full: false,
        }
    }

    /// True once the bomb limit stopped decoding.
    pub fn bomb_detected(&self) -> bool {
        self.bomb
    }

    pub fn decoded_len(&self) -> u64 {
        self.decoded_len
    }

    /// Decodes one piece of the encoded body, handing the decoded bytes to `out`, which
    /// returns `false` once it takes no more: decoding stops there, for good (the rest of
    /// the body is not decoded, as nothing would read it).
    pub fn write(&mut self, data: &[u8], out: Sink<'_>) {
        if self.bomb || self.full {
            return;
        }
        self.encoded_len += data.len() as u64;
        let limits = self.limits;
        let encoded_len = self.encoded_len;
        let decoded_len = &mut self.decoded_len;
        let bomb = &mut self.bomb;
        let mut guarded = |piece: &[u8]| {
            if *bomb {
                return false;
            }
            *decoded_len += piece.len() as u64;
            let ratio_exceeded = *decoded_len > encoded_len.saturating_mul(limits.bomb_ratio);
            if *decoded_len > limits.bomb_limit && ratio_exceeded {
                *bomb = true;
                return false;
            }
            out(piece)
        };
        if !push(&mut self.layers, data, &mut guarded) && !self.bomb {
            self.full = true;
        }
    }
}

/// Where a layer's decoded pieces go: returns `false` once it takes no more.
pub type Sink<'s> = &'s mut dyn FnMut(&[u8]) -> bool;

/// Feeds `data` through the layers; `false` once the final receiver takes no more.
fn push(layers: &mut [Layer], data: &[u8], out: Sink<'_>) -> bool {
    match layers.split_first_mut() {
        None => out(data),
        Some((first, rest)) => first.write(data, &mut |piece: &[u8]| push(rest, piece, out)),
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Vec<u8> {
        let limits = DecompressLimits { bomb_limit: 1 << 20, bomb_ratio: 2048 };
        let mut decoder = BodyDecoder::new(&[Codec::Deflate], limits);
        let mut out = Vec::new();
        for chunk in body.chunks(piece) {
            decoder.write(chunk, &mut |b| {
                out.extend_from_slice(b);
                true
            });
        }
        out
    }

    /// A receiver that takes no more stops the decoding inside the piece it was handed:
    /// a 4 MiB body of zeros arriving whole is inflated only as far as the first chunk past
    /// what the receiver took, not to its end, and later pieces are not decoded at all.
    #[test]
    fn decoding_stops_when_the_receiver_is_full() {
        let plain = vec![0u8; 4 << 20];
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut enc, &plain).unwrap();
        let body = enc.finish().unwrap();
        let limits = DecompressLimits { bomb_limit: u64::MAX, bomb_ratio: u64::MAX };
        let mut decoder = BodyDecoder::new(&[Codec::Deflate], limits);
        let (mut taken, mut calls_after_full) = (0usize, 0);
        let mut sink = |piece: &[u8]| {
            if taken >= 1000 {
                calls_after_full += 1;
            }
            taken += piece.len();
            taken < 1000
        };
        let (first, rest) = body.split_at(body.len() / 2);
        decoder.write(first, &mut sink);
        decoder.write(rest, &mut sink);
        assert_eq!(calls_after_full, 0, "no piece after the receiver said it was full");
        assert!(decoder.decoded_len() <= (1000 + OUT_CHUNK) as u64, "decoded {}", decoder.decoded_len());
        assert!(!decoder.bomb_detected());
    }

    /// Output larger than the inflater's chunk comes out whole and in order, however the
    /// encoded body is cut (one byte, a few, a segment, the chunk's size, whole), through
    /// two layers (gzip inside deflate, as `Content-Encoding: gzip, deflate` reads).
    #[test]
    fn output_spanning_many_chunks_is_decoded_whole_whatever_the_cut() {
        let mut x = crate::test_rng::xorshift(7);
        let text: Vec<u8> = (0..5 * OUT_CHUNK + 123).map(|_| b"abcdefgh \r\n"[(x() % 11) as usize]).collect();
        // Zeros: a few encoded bytes decode to whole chunks.
        for plain in [text, vec![0u8; 5 * OUT_CHUNK + 123]] {
            check_decoded_whole_in_pieces(&plain);
        }
    }

    fn check_decoded_whole_in_pieces(plain: &[u8]) {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, plain).unwrap();
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut deflate, &gz.finish().unwrap()).unwrap();
        let body = deflate.finish().unwrap();
        let limits = DecompressLimits { bomb_limit: 1 << 20, bomb_ratio: 2048 };
        for piece in [1, 7, 1448, OUT_CHUNK, body.len()] {
            let mut decoder = BodyDecoder::new(&[Codec::Gzip, Codec::Deflate], limits);
            let mut out = Vec::new();
            for chunk in body.chunks(piece) {
                decoder.write(chunk, &mut |b| {
                    assert!(b.len() <= OUT_CHUNK);
                    out.extend_from_slice(b);
                    true
                });
            }
            assert!(out == plain, "pieces of {piece}: {} bytes decoded of {}", out.len(), plain.len());
            assert_eq!(decoder.decoded_len(), plain.len() as u64);
        }
    }

    /// A body labelled deflate that no codec decodes, longer than the replay buffer: once
    /// decoding is given up the whole body passes through, whether it comes whole or in pieces
    /// (the fuzz finding http-74d26856095bbbdf: whole, the bytes past the replay were dropped).
    #[test]
    fn undecodable_body_passes_through_whatever_the_cut() {
        let body = vec![0xffu8; REPLAY_LIMIT + 1000];
        let whole = decode_in_pieces(&body, body.len());
        assert_eq!(whole.len(), body.len());
        assert_eq!(decode_in_pieces(&body, 1), whole);
        assert_eq!(decode_in_pieces(&body, 777), whole);
    }
}
