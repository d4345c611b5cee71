//! Buffer transforms (`dotprefix`, `url_decode`, `to_sha256`, `from_base64`, ...) with
//! Suricata's semantics, and the RFC 4648 decoder `base64_decode` shares with `from_base64`.
//!
//! Each transform reads `input` and writes its whole result to `out` (cleared first); the
//! engine chains them through two reused scratch vectors, so steady-state inspection does
//! not allocate (except inside the decompressors and pcre capture lookups).
//! A transform returns `false` when it "fails" in Suricata's sense (from_base64 decoding
//! nothing): the buffer then matches nothing, not even negated content.

use std::io::Read;

use crate::detect::rule::{Base64Mode, FromBase64, Subslice, Transform, XorKey, XorSpec};

/// One transform of a compiled inspection: the parsed keyword plus what it needs at run time
/// (the compiled regex of `pcrexform`).
pub struct TransformStep {
    pub spec: Transform,
    regex: Option<pcre2::bytes::Regex>,
}

impl std::fmt::Debug for TransformStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.spec.fmt(f)
    }
}

impl TransformStep {
    pub(crate) fn new(spec: Transform) -> Result<TransformStep, String> {
        let regex = match &spec {
            Transform::Pcrexform(pattern) => Some(build_pcrexform(pattern)?),
            _ => None,
        };
        Ok(TransformStep { spec, regex })
    }

    /// Applies the transform; `false` when it failed (see the module comment).
    pub(crate) fn apply(&self, input: &[u8], out: &mut Vec<u8>) -> bool {
        match (&self.spec, &self.regex) {
            (Transform::Pcrexform(_), Some(re)) => {
                pcrexform(re, input, out);
                true
            }
            (spec, _) => apply(spec, input, out),
        }
    }
}

fn build_pcrexform(pattern: &str) -> Result<pcre2::bytes::Regex, String> {
    // Suricata's default pcre limits bound the transform's regex like every pcre's.
    let limits = super::InspectionLimits::DEFAULT;
    let bounded = format!(
        "{}{pattern}",
        super::lists::pcre_limit_prefix(limits.pcre_match_limit, limits.pcre_match_limit_recursion)
    );
    let re = pcre2::bytes::RegexBuilder::new()
        .jit_if_available(true)
        .build(&bounded)
        .map_err(|e| format!("pcrexform: {e}"))?;
    // Suricata refuses a pcrexform without a capture: the buffer would be the whole match.
    if re.captures_len() < 2 {
        return Err("pcrexform: the regex needs a capture group".into());
    }
    Ok(re)
}

/// Applies one transform to `input`, writing the result to `out`. `false`: the transform
/// failed and the buffer must not match. `pcrexform` compiles its regex here; the engine
/// uses [`TransformStep`], which compiles it once.
pub fn apply(t: &Transform, input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    // Like Suricata, an empty buffer stays empty whatever the transform.
    if input.is_empty() {
        return true;
    }
    match t {
        Transform::Dotprefix => {
            out.push(b'.');
            out.extend_from_slice(input);
        }
        Transform::ToLowercase => out.extend(input.iter().map(u8::to_ascii_lowercase)),
        Transform::ToUppercase => out.extend(input.iter().map(u8::to_ascii_uppercase)),
        Transform::StripWhitespace => out.extend(input.iter().copied().filter(|&b| !is_space(b))),
        Transform::CompressWhitespace => compress_whitespace(input, out),
        Transform::UrlDecode => url_decode(input, out),
        Transform::ToMd5 => {
            use md5::Digest;
            out.extend_from_slice(&md5::Md5::digest(input));
        }
        Transform::ToSha1 => {
            use sha1::Digest;
            out.extend_from_slice(&sha1::Sha1::digest(input));
        }
        Transform::ToSha256 => {
            use sha2::Digest;
            out.extend_from_slice(&sha2::Sha256::digest(input));
        }
        Transform::HeaderLowercase => header_lowercase(input, out),
        Transform::StripPseudoHeaders => {
            for line in input.split_inclusive(|&b| b == b'\n') {
                if line.first() != Some(&b':') {
                    out.extend_from_slice(line);
                }
            }
        }
        Transform::Pcrexform(pattern) => match build_pcrexform(pattern) {
            Ok(re) => pcrexform(&re, input, out),
            Err(_) => out.extend_from_slice(input),
        },
        Transform::Xor(spec) => xor(spec, input, out),
        Transform::FromBase64(opts) => return from_base64(opts, input, out),
        Transform::Gunzip { max_size } => {
            decompress(flate2::read::GzDecoder::new(input), *max_size, out);
        }
        Transform::ZlibDeflate { max_size } => {
            decompress(flate2::read::ZlibDecoder::new(input), *max_size, out);
        }
        Transform::Subslice(s) => {
            if let Some(window) = subslice(s, input) {
                out.extend_from_slice(window);
            }
        }
    }
    true
}

/// C `isspace`: space, \t, \n, \v, \f, \r.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// A run of whitespace becomes its first byte.
fn compress_whitespace(input: &[u8], out: &mut Vec<u8>) {
    let mut previous_space = false;
    for &b in input {
        let space = is_space(b);
        if !(space && previous_space) {
            out.push(b);
        }
        previous_space = space;
    }
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `%XX` becomes the byte, `+` a space; a `%` without two hex digits stays.
fn url_decode(input: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%' {
            let pair = input.get(i + 1).copied().and_then(hex_value).zip(input.get(i + 2).copied().and_then(hex_value));
            if let Some((hi, lo)) = pair {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
            out.push(b'%');
        } else if b == b'+' {
            out.push(b' ');
        } else {
            out.push(b);
        }
        i += 1;
    }
}

/// Lowercases header names: bytes from a line start up to its first ':'.
fn header_lowercase(input: &[u8], out: &mut Vec<u8>) {
    let mut in_value = false;
    for &b in input {
        if in_value {
            out.push(b);
            in_value = b != b'\n';
        } else {
            out.push(b.to_ascii_lowercase());
            in_value = b == b':';
        }
    }
}

/// The buffer becomes the highest-numbered capture that took part in the match (Suricata
/// takes the last substring PCRE reports); unchanged when the regex does not match.
fn pcrexform(re: &pcre2::bytes::Regex, input: &[u8], out: &mut Vec<u8>) {
    let captured = match re.captures(input) {
        Ok(Some(caps)) => (1..caps.len()).rev().find_map(|i| caps.get(i)).map(|m| m.as_bytes()),
        _ => None,
    };
    match captured {
        Some(bytes) => out.extend_from_slice(bytes),
        None => out.extend_from_slice(input),
    }
}

/// XOR from `offset` on, cycling the key; bytes before `offset` are copied. A key read from
/// the buffer that lies outside it, or an offset past the end, leaves the buffer unchanged.
fn xor(spec: &XorSpec, input: &[u8], out: &mut Vec<u8>) {
    let start = spec.offset as usize;
    let key: &[u8] = match &spec.key {
        XorKey::Static(k) => k,
        XorKey::InBuffer { nbytes, at } => {
            let at = *at as usize;
            match input.get(at..at + *nbytes as usize) {
                Some(k) => k,
                None => {
                    out.extend_from_slice(input);
                    return;
                }
            }
        }
    };
    if start > input.len() || key.is_empty() {
        out.extend_from_slice(input);
        return;
    }
    out.extend_from_slice(&input[..start]);
    out.extend(input[start..].iter().zip(key.iter().cycle()).map(|(b, k)| b ^ k));
}

/// `from_base64`: an `offset` or `bytes` that reaches past the buffer leaves it unchanged
/// (Suricata's behaviour); decoding nothing fails the transform.
fn from_base64(opts: &FromBase64, input: &[u8], out: &mut Vec<u8>) -> bool {
    let mut data = input;
    let offset = opts.offset as usize;
    if offset > 0 {
        if offset >= data.len() {
            out.extend_from_slice(input);
            return true;
        }
        data = &data[offset..];
    }
    let nbytes = opts.bytes as usize;
    if nbytes > 0 {
        if nbytes >= data.len() {
            out.extend_from_slice(input);
            return true;
        }
        data = &data[..nbytes];
    }
    decode_base64(opts.mode, data, out)
}

fn base64_value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes one group of four characters ('=' allowed in the last two places) onto `out`;
/// `false` for padding where a data character must be.
fn decode_quad(quad: [u8; 4], out: &mut Vec<u8>) -> bool {
    let (Some(a), Some(b)) = (base64_value(quad[0]), base64_value(quad[1])) else { return false };
    out.push(a << 2 | b >> 4);
    if quad[2] == b'=' {
        return true;
    }
    let Some(c) = base64_value(quad[2]) else { return false };
    out.push(b << 4 | c >> 2);
    if quad[3] == b'=' {
        return true;
    }
    let Some(d) = base64_value(quad[3]) else { return false };
    out.push(c << 6 | d);
    true
}

/// Base64 decoding in one of Suricata's modes, appended to `out` (cleared first). `false`
/// (with `out` empty) when nothing could be decoded.
pub(crate) fn decode_base64(mode: Base64Mode, data: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let ok = match mode {
        Base64Mode::Rfc4648 => decode_rfc4648(data, out),
        Base64Mode::Rfc2045 => decode_rfc2045(data, out),
        Base64Mode::Strict => decode_strict(data, out),
    };
    if !ok {
        out.clear();
    }
    !out.is_empty()
}

/// Decodes up to the first byte outside the alphabet; a final partial group is padded.
fn decode_rfc4648(data: &[u8], out: &mut Vec<u8>) -> bool {
    let end = data.iter().position(|&b| b != b'=' && base64_value(b).is_none()).unwrap_or(data.len());
    let mut chunks = data[..end].chunks(4);
    for chunk in &mut chunks {
        let mut quad = [b'='; 4];
        quad[..chunk.len()].copy_from_slice(chunk);
        if !decode_quad(quad, out) {
            return false;
        }
    }
    true
}

/// Skips bytes outside the alphabet; a final partial group is dropped.
fn decode_rfc2045(data: &[u8], out: &mut Vec<u8>) -> bool {
    let mut quad = [0u8; 4];
    let mut n = 0;
    for &b in data {
        if b != b'=' && base64_value(b).is_none() {
            continue;
        }
        quad[n] = b;
        n += 1;
        if n == 4 {
            if !decode_quad(quad, out) {
                return false;
            }
            n = 0;
        }
    }
    true
}

/// Whole groups of four, padding only at the very end, no stray bits.
fn decode_strict(data: &[u8], out: &mut Vec<u8>) -> bool {
    if data.is_empty() || !data.len().is_multiple_of(4) {
        return false;
    }
    let pad = data.iter().rev().take_while(|&&b| b == b'=').count();
    if pad > 2 {
        return false;
    }
    let body = &data[..data.len() - pad];
    if body.iter().any(|&b| base64_value(b).is_none()) {
        return false;
    }
    for chunk in data.chunks(4) {
        let quad = [chunk[0], chunk[1], chunk[2], chunk[3]];
        if !decode_quad(quad, out) {
            return false;
        }
    }
    // The bits after the last full byte must be zero (canonical encoding).
    match pad {
        1 => base64_value(data[data.len() - 2]).is_some_and(|v| v & 0x03 == 0),
        2 => base64_value(data[data.len() - 3]).is_some_and(|v| v & 0x0f == 0),
        _ => true,
    }
}

/// Reads decompressed output up to `max_size` bytes; a corrupt stream keeps what came out
/// before the error (nothing, when the header is bad).
fn decompress(reader: impl Read, max_size: u32, out: &mut Vec<u8>) {
    let mut limited = reader.take(max_size as u64);
    let mut chunk = [0u8; 1024];
    loop {
        match limited.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Suricata's subslice window; `None` (empty buffer) when a bound is out of range without
/// `truncate`.
fn subslice<'a>(s: &Subslice, data: &'a [u8]) -> Option<&'a [u8]> {
    let len = data.len() as i64;
    if s.offset.unsigned_abs() > len as u64 && !s.truncate {
        return None;
    }
    let start = if s.offset >= 0 { s.offset.min(len) } else { len + s.offset.max(-len) };
    let end = match s.nbytes {
        None => len,
        Some(n) if n < 0 => {
            let candidate = len.saturating_add(n);
            if candidate < 0 {
                if !s.truncate {
                    return None;
                }
                0
            } else {
                candidate
            }
        }
        Some(n) => {
            let candidate = start.saturating_add(n);
            if candidate > len && !s.truncate {
                return None;
            }
            candidate.min(len)
        }
    };
    let (start, end) = if end < start { (end, start) } else { (start, end) };
    data.get(start as usize..end as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::rule::Transform as T;

    fn run(t: &T, input: &[u8]) -> Vec<u8> {
        let mut out = vec![0xAA; 3]; // stale content must be cleared
        assert!(apply(t, input, &mut out), "{t:?} failed on {input:?}");
        out
    }

    fn parse(keyword: &str, value: Option<&str>) -> T {
        T::parse(keyword, value).expect("valid").expect("a transform")
    }

    #[test]
    fn dotprefix_and_case() {
        assert_eq!(run(&T::Dotprefix, b"hello.google.com"), b".hello.google.com");
        assert_eq!(run(&T::Dotprefix, b""), b"");
        assert_eq!(run(&T::ToLowercase, b"AbC\xC4-1"), b"abc\xC4-1");
        assert_eq!(run(&T::ToUppercase, b"AbC\xe4-1"), b"ABC\xe4-1");
    }

    #[test]
    fn whitespace_transforms() {
        assert_eq!(run(&T::StripWhitespace, b" window.navigate (\t\r\n\x0b\x0c)"), b"window.navigate()");
        // A run keeps its first byte: Suricata does not turn it into a space.
        assert_eq!(run(&T::CompressWhitespace, b"a  \t b\t\tc\n"), b"a b\tc\n");
        assert_eq!(run(&T::CompressWhitespace, b"abc"), b"abc");
    }

    #[test]
    fn url_decode_percent_and_plus() {
        assert_eq!(run(&T::UrlDecode, b"/evil%27sqli+x%2F%2f"), b"/evil'sqli x//");
        // Incomplete or non-hex escapes stay as they are.
        assert_eq!(run(&T::UrlDecode, b"%zz%4"), b"%zz%4");
        assert_eq!(run(&T::UrlDecode, b"%41"), b"A");
        assert_eq!(run(&T::UrlDecode, b"%"), b"%");
    }

    #[test]
    fn hashes_are_raw_digests() {
        let hex = |v: Vec<u8>| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(run(&T::ToMd5, b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex(run(&T::ToSha1, b"abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(hex(run(&T::ToSha256, b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn header_transforms() {
        assert_eq!(
            run(&T::HeaderLowercase, b"Header1: Value1\nHeader2:Value2\n"),
            b"header1: Value1\nheader2:Value2\n"
        );
        assert_eq!(run(&T::StripPseudoHeaders, b"Header1: V\n:method:get\nh2:v\n:scheme:https"), b"Header1: V\nh2:v\n");
        assert_eq!(run(&T::StripPseudoHeaders, b":method:get"), b"");
    }

    #[test]
    fn pcrexform_keeps_the_capture_or_the_buffer() {
        let t = parse("pcrexform", Some(r#""[a-zA-Z]+\s+(.*)\s+HTTP""#));
        let step = TransformStep::new(t.clone()).unwrap();
        let mut out = Vec::new();
        assert!(step.apply(b"GET /z4d4kWk.jpg HTTP/1.1", &mut out));
        assert_eq!(out, b"/z4d4kWk.jpg");
        assert_eq!(run(&t, b"no match here"), b"no match here");
        // The last group that took part wins.
        let two = parse("pcrexform", Some(r#""(a)(b)?""#));
        assert_eq!(run(&two, b"xa"), b"a");
        assert_eq!(run(&two, b"xab"), b"b");
        assert!(TransformStep::new(parse("pcrexform", Some(r#""abc""#))).is_err());
    }

    #[test]
    fn xor_static_and_key_from_buffer() {
        let t = parse("xor", Some(r#""0a0DC8ff""#));
        assert_eq!(run(&t, b"example.com"), b"ou\xa9\x92za\xad\xd1ib\xa5");
        // Key byte 0x42 at offset 0, decoding from offset 1.
        let mut body = vec![0x42];
        body.extend(b"password".iter().map(|b| b ^ 0x42));
        let var = parse("xor", Some("offset 1,extract 1 0"));
        let out = run(&var, &body);
        assert_eq!(&out[1..], b"password");
        assert_eq!(out[0], 0x42);
        // Key out of range: unchanged.
        assert_eq!(run(&parse("xor", Some("extract 1 200")), &body), body);
        // No offset: the key byte itself is XORed too (becomes 0).
        assert_eq!(run(&parse("xor", Some("var 1 0")), &body)[0], 0);
        assert!(T::parse("xor", Some("offset 1")).is_err());
        assert!(T::parse("xor", Some("extract 0 1")).is_err());
        assert!(T::parse("xor", Some("\"zz\"")).is_err());
    }

    #[test]
    fn from_base64_modes_offsets_and_failures() {
        let t = |v: &str| parse("from_base64", Some(v));
        assert_eq!(run(&parse("from_base64", None), b"VGhpcyBpcyBTdXJpY2F0YQ=="), b"This is Suricata");
        assert_eq!(run(&t("mode rfc2045"), b"Zm 9v Ym Fy"), b"foobar");
        assert_eq!(run(&t("bytes 12"), b"VGhpcyBpcyBTdXJpY2F0YQ=="), b"This is S");
        assert_eq!(run(&t("offset 4"), b"VGhpcyBpcyBTdXJpY2F0YQ=="), b"s is Suricata");
        assert_eq!(run(&t("mode rfc2045, bytes 15"), b"SGVs bG8 gV29y bGQ="), b"Hello Wor");
        assert_eq!(run(&t("bytes 6, offset 6"), b"/?arg=dGhpc2lzYXRlc3QK"), b"this");
        // Offset or bytes past the end: no transform.
        assert_eq!(run(&t("bytes 25"), b"VGhpcyBpcyBTdXJpY2F0YQ=="), b"VGhpcyBpcyBTdXJpY2F0YQ==");
        assert_eq!(run(&t("offset 25"), b"VGhpcyBpcyBTdXJpY2F0YQ=="), b"VGhpcyBpcyBTdXJpY2F0YQ==");
        // RFC 4648 stops at the space; RFC 2045 skips bad bytes after a valid prefix.
        assert_eq!(run(&t("mode rfc4648"), b"Zm 9v Ym Fy"), b"f");
        assert_eq!(run(&t("mode rfc2045"), b"ABCD!!!!"), b"\x00\x10\x83");
        let mut out = Vec::new();
        assert!(!apply(&t("mode strict"), b"This is Suricata\n", &mut out));
        assert!(!apply(&t("mode strict"), b"Zm 9v Ym Fy", &mut out));
        assert!(!apply(&t("mode rfc4648"), b"!!!!", &mut out));
        assert!(!apply(&t("mode rfc2045"), b"!!!!", &mut out));
        assert_eq!(run(&t("mode strict"), b"dGhpc2lzYXRlc3QK"), b"thisisatest\n");
        assert!(T::parse("from_base64", Some("mode unknown")).is_err());
        assert!(T::parse("from_base64", Some("offset 70000")).is_err());
        assert!(T::parse("from_base64", Some("mode strict, mode rfc2045")).is_err());
    }

    #[test]
    fn gunzip_and_zlib_are_capped() {
        use std::io::Write;
        let text = b"This is compressed then base64-encoded\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(text).unwrap();
        let zl = zl.finish().unwrap();
        assert_eq!(run(&parse("gunzip", None), &gz), text);
        assert_eq!(run(&parse("gunzip", Some("max-size 8")), &gz), b"This is ");
        assert_eq!(run(&parse("zlib_deflate", None), &zl), text);
        assert_eq!(run(&parse("zlib_deflate", Some("max-size=8")), &zl), b"This is ");
        // Not compressed: empty buffer, no panic.
        assert_eq!(run(&parse("gunzip", None), b"plain text"), b"");
        assert_eq!(run(&parse("zlib_deflate", None), &gz), b"");
        assert!(T::parse("gunzip", Some("max-size 0")).is_err());
        assert!(T::parse("gunzip", Some("size 8")).is_err());
        assert_eq!(parse("gunzip", Some("max-size 1MiB")), T::Gunzip { max_size: 1 << 20 });
    }

    #[test]
    fn subslice_windows() {
        let s = |v: &str| parse("subslice", Some(v));
        let data = b"this is suricata";
        assert_eq!(run(&s("1"), data), b"his is suricata");
        assert_eq!(run(&s("0, 9"), data), b"this is s");
        assert_eq!(run(&s("1,12"), data), b"his is suric");
        assert_eq!(run(&s("13,-12"), data), b" is suric");
        assert_eq!(run(&s("-6"), b"curl/7.64.1"), b"7.64.1");
        assert_eq!(run(&s("-10,3"), b"curl/7.64.1"), b"url");
        assert_eq!(run(&s("1,-3"), b"curl/7.64.1"), b"url/7.6");
        assert_eq!(run(&s("2, 30"), data), b"");
        assert_eq!(run(&s("2, 30, truncate"), data), b"is is suricata");
        assert_eq!(run(&s("40"), data), b"");
        assert!(T::parse("subslice", Some("1,0")).is_err());
        assert!(T::parse("subslice", Some("1, 2, nottruncate")).is_err());
    }

    #[test]
    fn rfc4648_padding_rules() {
        let mut out = Vec::new();
        assert!(decode_base64(Base64Mode::Rfc4648, b"YQ==YQ==", &mut out));
        assert_eq!(out, b"aa");
        // A lone trailing character cannot be decoded: the whole decode fails.
        assert!(!decode_base64(Base64Mode::Rfc4648, b"YWJjZ", &mut out));
        assert!(out.is_empty());
        assert!(decode_base64(Base64Mode::Rfc4648, b"YWJjZA\"rest", &mut out));
        assert_eq!(out, b"abcd");
    }

    proptest::proptest! {
        #[test]
        fn transforms_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200), which in 0usize..12) {
            let all = [
                T::Dotprefix, T::CompressWhitespace, T::UrlDecode, T::HeaderLowercase, T::StripPseudoHeaders,
                parse("xor", Some("offset 3,extract 4 2")),
                parse("from_base64", Some("offset 2, bytes 9")),
                parse("from_base64", Some("mode rfc2045")),
                parse("from_base64", Some("mode strict")),
                parse("gunzip", None),
                parse("zlib_deflate", None),
                parse("subslice", Some("-5, -300, truncate")),
            ];
            let mut out = Vec::new();
            apply(&all[which], &data, &mut out);
            proptest::prop_assert!(out.len() <= data.len() * 2 + 1024 + 1);
        }
    }
}
