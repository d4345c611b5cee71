//! Payload keywords: `content` (its modifiers are folded in by the option parser), `pcre`,
//! `isdataat`, `byte_test`, `byte_jump`, `byte_extract`, `byte_math` and `base64_decode`.

use super::buffers::{buffer_by_name, Buffer};
use super::error::OptionError;
use super::lexer::strip_quotes;
use super::values::{
    bad_part, bad_value, decode_hex, is_var_name, parse_i64, parse_num_or_var, parse_u32, parse_u64_any_base,
    strip_bang, unknown_option, NumOrVar,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPattern {
    /// `fast_pattern;`
    Whole,
    /// `fast_pattern:only;` (legacy; Suricata treats it like `fast_pattern`).
    Only,
    /// `fast_pattern:offset,length;` uses only that slice of the pattern for prefiltering.
    Chop { offset: u16, length: u16 },
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Content {
    pub pattern: Vec<u8>,
    pub negated: bool,
    pub nocase: bool,
    pub rawbytes: bool,
    pub depth: Option<NumOrVar>,
    pub offset: Option<NumOrVar>,
    pub distance: Option<NumOrVar>,
    pub within: Option<NumOrVar>,
    pub startswith: bool,
    pub endswith: bool,
    pub fast_pattern: Option<FastPattern>,
    pub prefilter: bool,
    /// Buffer set by a legacy modifier after this content (`http_uri`); overrides the sticky
    /// buffer in effect. `uricontent` sets it to `http.uri`.
    pub legacy_buffer: Option<Buffer>,
}

impl Content {
    pub fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PcreFlags {
    pub caseless: bool,       // i
    pub dotall: bool,         // s
    pub multiline: bool,      // m
    pub extended: bool,       // x
    pub anchored: bool,       // A
    pub dollar_endonly: bool, // E
    pub ungreedy: bool,       // G
    pub relative: bool,       // R
    pub rawbytes: bool,       // B
    pub no_match_limit: bool, // O
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pcre {
    /// The regex between the slashes, as written.
    pub pattern: String,
    pub negated: bool,
    pub flags: PcreFlags,
    /// Buffer selected by an HTTP flag (U, I, P, Q, H, D, M, C, S, Y, V, W, Z).
    pub buffer: Option<Buffer>,
    /// Capture variables (`pcre:"/(.*)/, flow:name"`), stored as written.
    pub captures: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Isdataat {
    pub negated: bool,
    pub offset: NumOrVar,
    pub relative: bool,
    pub rawbytes: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
    /// Endianness taken from the DCE/RPC header.
    Dce,
}

/// `string` mode of the byte_* keywords: the bytes are ASCII digits in this base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumBase {
    Hex,
    Dec,
    Oct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteTestOp {
    Lt,
    Gt,
    Eq,
    Le,
    Ge,
    And,
    Xor,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteTest {
    /// Number of bytes, or a byte_extract variable holding it.
    pub bytes: NumOrVar,
    pub negated: bool,
    pub op: ByteTestOp,
    pub value: NumOrVar,
    pub offset: NumOrVar,
    pub relative: bool,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteJump {
    pub bytes: NumOrVar,
    pub offset: NumOrVar,
    pub relative: bool,
    pub multiplier: Option<u32>,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub align: bool,
    pub from_beginning: bool,
    pub from_end: bool,
    pub post_offset: Option<i64>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteExtract {
    pub bytes: u8,
    pub offset: i64,
    pub name: String,
    pub relative: bool,
    pub multiplier: Option<u32>,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub align: Option<u8>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteMathOp {
    Add,
    Sub,
    Mul,
    Div,
    Shl,
    Shr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteMath {
    pub bytes: NumOrVar,
    pub offset: i64,
    pub op: ByteMathOp,
    pub rvalue: NumOrVar,
    pub result: String,
    pub relative: bool,
    pub endian: Endian,
    pub string: Option<NumBase>,
    pub bitmask: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Base64Decode {
    pub bytes: Option<u32>,
    pub offset: Option<u32>,
    pub relative: bool,
}

/// `content:[!]"text|41 42|text"`.
pub(crate) fn parse_content(value: &str) -> Result<Content, OptionError> {
    let (negated, rest) = strip_bang(value);
    let inner = strip_quotes(rest).ok_or_else(|| OptionError::UnquotedContent { value: rest.to_string() })?;
    let pattern = decode_content_pattern(inner)?;
    if pattern.is_empty() {
        return Err(OptionError::EmptyContent);
    }
    Ok(Content { pattern, negated, ..Content::default() })
}

pub fn decode_content_pattern(inner: &str) -> Result<Vec<u8>, OptionError> {
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_hex = false;
    let mut hex_start = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_hex {
            if c == b'|' {
                let decoded = decode_hex(&inner[hex_start..i])
                    .ok_or_else(|| OptionError::BadHex { hex: inner[hex_start..i].to_string() })?;
                out.extend_from_slice(&decoded);
                in_hex = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'|' => {
                in_hex = true;
                hex_start = i + 1;
            }
            b'\\' => {
                let next = *bytes.get(i + 1).ok_or(OptionError::LoneBackslash)?;
                if !matches!(next, b'"' | b';' | b'\\' | b':' | b'|') {
                    return Err(OptionError::BadEscape { escaped: next as char });
                }
                out.push(next);
                i += 1;
            }
            b'"' => return Err(OptionError::UnescapedQuote),
            _ => out.push(c),
        }
        i += 1;
    }
    if in_hex {
        return Err(OptionError::UnterminatedHex);
    }
    Ok(out)
}

pub(crate) fn parse_pcre(value: &str) -> Result<Pcre, OptionError> {
    let (negated, rest) = strip_bang(value);
    let rest = rest.trim();
    // Optional capture spec after the closing quote: `"/re/", flow:var`.
    let (quoted, captures) = match rest.rfind('"') {
        Some(end) if end > 0 && rest.starts_with('"') => {
            let tail = rest[end + 1..].trim();
            let captures = match tail.strip_prefix(',') {
                Some(c) => Some(c.trim().to_string()),
                None if tail.is_empty() => None,
                None => return Err(OptionError::PcreTrailing { text: tail.to_string() }),
            };
            (&rest[1..end], captures)
        }
        // Suricata also takes the regex unquoted (`pcre:/one/U;`).
        _ if rest.starts_with('/') => (rest, None),
        _ => return Err(OptionError::PcreUnquoted),
    };
    let body = quoted.strip_prefix('/').ok_or(OptionError::PcreNoSlash)?;
    let close = body.rfind('/').ok_or(OptionError::PcreUnclosed)?;
    // Capture variables may also sit inside the quotes: `"/re/flags, pkt:a, flow:b"`.
    let (flag_text, inner_captures) = match body[close + 1..].split_once(',') {
        Some((f, c)) => (f.trim_end(), Some(c.trim().to_string())),
        None => (&body[close + 1..], None),
    };
    if inner_captures.is_some() && captures.is_some() {
        return Err(OptionError::PcreCapturesTwice);
    }
    let captures = captures.or(inner_captures);
    let pattern = &body[..close];
    if pattern.is_empty() {
        return Err(OptionError::EmptyRegex { keyword: "pcre" });
    }
    let (flags, buffer) = parse_pcre_modifiers(flag_text)?;
    Ok(Pcre { pattern: pattern.to_string(), negated, flags, buffer, captures })
}

/// The modifiers after a pcre's closing `/`: regex flags, Suricata's `R`/`B`/`O`, and at most
/// one HTTP buffer (`U`, `H`, ...).
fn parse_pcre_modifiers(flag_text: &str) -> Result<(PcreFlags, Option<Buffer>), OptionError> {
    let mut flags = PcreFlags::default();
    let mut buffer: Option<Buffer> = None;
    for f in flag_text.chars() {
        let buf_name = match f {
            'i' => {
                flags.caseless = true;
                None
            }
            's' => {
                flags.dotall = true;
                None
            }
            'm' => {
                flags.multiline = true;
                None
            }
            'x' => {
                flags.extended = true;
                None
            }
            'A' => {
                flags.anchored = true;
                None
            }
            'E' => {
                flags.dollar_endonly = true;
                None
            }
            'G' => {
                flags.ungreedy = true;
                None
            }
            'R' => {
                flags.relative = true;
                None
            }
            'B' => {
                flags.rawbytes = true;
                None
            }
            'O' => {
                flags.no_match_limit = true;
                None
            }
            'U' => Some("http.uri"),
            'I' => Some("http.uri.raw"),
            'P' => Some("http.request_body"),
            'Q' => Some("http.response_body"),
            'H' => Some("http.header"),
            'D' => Some("http.header.raw"),
            'M' => Some("http.method"),
            'C' => Some("http.cookie"),
            'S' => Some("http.stat_code"),
            'Y' => Some("http.stat_msg"),
            'V' => Some("http.user_agent"),
            'W' => Some("http.host"),
            'Z' => Some("http.host.raw"),
            other => return Err(OptionError::PcreModifier { modifier: other }),
        };
        if let Some(name) = buf_name {
            if buffer.is_some() {
                return Err(OptionError::PcreTwoBuffers);
            }
            buffer = buffer_by_name(name);
        }
    }
    Ok((flags, buffer))
}

pub(crate) fn parse_isdataat(value: &str) -> Result<Isdataat, OptionError> {
    let mut parts = value.split(',').map(str::trim);
    let (negated, first) = strip_bang(parts.next().unwrap_or(""));
    let offset = parse_num_or_var(first, "isdataat")?;
    let mut r = Isdataat { negated, offset, relative: false, rawbytes: false };
    for p in parts {
        match p {
            "relative" => r.relative = true,
            "rawbytes" => r.rawbytes = true,
            other => return Err(bad_value("isdataat option", other)),
        }
    }
    Ok(r)
}

/// Number of bytes to read. In string mode Suricata accepts 0 (ET Open uses `byte_test:0,...,string,dec`),
/// which the engine reads as "as many digits as are there, up to the maximum".
fn parse_nbytes(v: &str, kw: &'static str, max: u8) -> Result<u8, OptionError> {
    let n = parse_u32(v, kw)?;
    let min: u8 = if max > 8 { 0 } else { 1 };
    if n < u32::from(min) || n > u32::from(max) {
        return Err(OptionError::ByteCountRange { keyword: kw, count: n, min, max });
    }
    Ok(n as u8)
}

/// Like [`parse_nbytes`], but a byte_extract variable name is also accepted.
fn parse_nbytes_or_var(v: &str, kw: &'static str, max: u8) -> Result<NumOrVar, OptionError> {
    let v = v.trim();
    if is_var_name(v) {
        return Ok(NumOrVar::Var(v.to_string()));
    }
    Ok(NumOrVar::Num(i64::from(parse_nbytes(v, kw, max)?)))
}

fn parse_base(v: &str) -> Option<NumBase> {
    Some(match v {
        "hex" => NumBase::Hex,
        "dec" => NumBase::Dec,
        "oct" => NumBase::Oct,
        _ => return None,
    })
}

/// Options shared by byte_test/byte_jump/byte_extract: `relative`, endianness, `string[,base]`
/// (also the separate `string, hex` spelling), `dce`, `bitmask N`.
#[derive(Default)]
struct ByteCommon {
    relative: bool,
    endian: Option<Endian>,
    string: Option<NumBase>,
    bitmask: Option<u32>,
}

impl ByteCommon {
    /// Returns Ok(true) when the item was one of the common options.
    fn take(&mut self, item: &str, kw: &'static str) -> Result<bool, OptionError> {
        let set_endian = |slot: &mut Option<Endian>, e: Endian| -> Result<bool, OptionError> {
            if slot.is_some() {
                return Err(OptionError::GivenTwice { keyword: kw, part: "endianness".into() });
            }
            *slot = Some(e);
            Ok(true)
        };
        match item {
            "relative" => self.relative = true,
            "big" => return set_endian(&mut self.endian, Endian::Big),
            "little" => return set_endian(&mut self.endian, Endian::Little),
            "dce" => return set_endian(&mut self.endian, Endian::Dce),
            "string" => {
                if self.string.is_none() {
                    self.string = Some(NumBase::Dec);
                }
            }
            "hex" | "dec" | "oct" => self.string = parse_base(item),
            _ => {
                if let Some(mask) = item.strip_prefix("bitmask") {
                    let m = parse_u64_any_base(mask)
                        .filter(|m| *m <= u64::from(u32::MAX) && *m != 0)
                        .ok_or_else(|| bad_part(kw, "bitmask", mask.trim()))?;
                    self.bitmask = Some(m as u32);
                } else if let Some(rest) = item.strip_prefix("string") {
                    let base = parse_base(rest.trim()).ok_or_else(|| bad_part(kw, "string base", rest.trim()))?;
                    self.string = Some(base);
                } else {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn max_bytes(&self) -> u8 {
        // ASCII numbers can be longer than binary ones.
        if self.string.is_some() {
            23
        } else {
            8
        }
    }
}

pub(crate) fn parse_byte_test(value: &str) -> Result<ByteTest, OptionError> {
    const KW: &str = "byte_test";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 4 {
        return Err(OptionError::Usage { keyword: KW, usage: "bytes, operator, value, offset" });
    }
    let (negated, op_text) = strip_bang(parts[1]);
    let op = match op_text {
        "<" => ByteTestOp::Lt,
        ">" => ByteTestOp::Gt,
        "=" => ByteTestOp::Eq,
        "<=" => ByteTestOp::Le,
        ">=" => ByteTestOp::Ge,
        "&" => ByteTestOp::And,
        "^" => ByteTestOp::Xor,
        // `!` alone is "not equal".
        "" if negated => ByteTestOp::Eq,
        other => return Err(bad_part(KW, "operator", other)),
    };
    let value = parse_num_or_var(parts[2], KW)?;
    let offset = parse_num_or_var(parts[3], KW)?;
    let mut common = ByteCommon::default();
    for item in &parts[4..] {
        if !common.take(item, KW)? {
            return Err(unknown_option(KW, item));
        }
    }
    let bytes = parse_nbytes_or_var(parts[0], KW, common.max_bytes())?;
    Ok(ByteTest {
        bytes,
        negated,
        op,
        value,
        offset,
        relative: common.relative,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        bitmask: common.bitmask,
    })
}

pub(crate) fn parse_byte_jump(value: &str) -> Result<ByteJump, OptionError> {
    const KW: &str = "byte_jump";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 2 {
        return Err(OptionError::Usage { keyword: KW, usage: "bytes, offset" });
    }
    let offset = parse_num_or_var(parts[1], KW)?;
    let mut common = ByteCommon::default();
    let mut jump = ByteJump {
        bytes: NumOrVar::Num(0),
        offset,
        relative: false,
        multiplier: None,
        endian: Endian::Big,
        string: None,
        align: false,
        from_beginning: false,
        from_end: false,
        post_offset: None,
        bitmask: None,
    };
    for item in &parts[2..] {
        if common.take(item, KW)? {
            continue;
        }
        match *item {
            "align" => jump.align = true,
            "from_beginning" => jump.from_beginning = true,
            "from_end" => jump.from_end = true,
            _ => {
                if let Some(m) = item.strip_prefix("multiplier") {
                    jump.multiplier = Some(parse_u32(m, "byte_jump multiplier")?);
                } else if let Some(p) = item.strip_prefix("post_offset") {
                    let p = p.trim();
                    jump.post_offset = Some(p.parse::<i64>().map_err(|_| bad_part(KW, "post_offset", p))?);
                } else {
                    return Err(unknown_option(KW, item));
                }
            }
        }
    }
    if jump.from_beginning && jump.from_end {
        return Err(OptionError::Constraint { keyword: KW, rule: "from_beginning and from_end are exclusive" });
    }
    jump.bytes = parse_nbytes_or_var(parts[0], KW, common.max_bytes())?;
    jump.relative = common.relative;
    jump.endian = common.endian.unwrap_or(Endian::Big);
    jump.string = common.string;
    jump.bitmask = common.bitmask;
    Ok(jump)
}

pub(crate) fn parse_byte_extract(value: &str) -> Result<ByteExtract, OptionError> {
    const KW: &str = "byte_extract";
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 3 {
        return Err(OptionError::Usage { keyword: KW, usage: "bytes, offset, name" });
    }
    let offset = parse_i64(parts[1], KW)?;
    let name = parts[2];
    if !is_var_name(name) {
        return Err(bad_part(KW, "variable name", name));
    }
    let mut common = ByteCommon::default();
    let mut multiplier = None;
    let mut align = None;
    for item in &parts[3..] {
        if common.take(item, KW)? {
            continue;
        }
        if let Some(m) = item.strip_prefix("multiplier") {
            multiplier = Some(parse_u32(m, "byte_extract multiplier")?);
        } else if let Some(a) = item.strip_prefix("align") {
            let a = parse_u32(a, "byte_extract align")?;
            if a != 2 && a != 4 {
                return Err(OptionError::Constraint { keyword: KW, rule: "align must be 2 or 4" });
            }
            align = Some(a as u8);
        } else {
            return Err(unknown_option(KW, item));
        }
    }
    Ok(ByteExtract {
        bytes: parse_nbytes(parts[0], KW, common.max_bytes())?,
        offset,
        name: name.to_string(),
        relative: common.relative,
        multiplier,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        align,
        bitmask: common.bitmask,
    })
}

/// `byte_math: bytes N, offset N, oper +, rvalue N|var, result name[, relative][, endian big]...`
pub(crate) fn parse_byte_math(value: &str) -> Result<ByteMath, OptionError> {
    const KW: &str = "byte_math";
    let missing = |part| OptionError::MissingPart { keyword: KW, part };
    let mut bytes = None;
    let mut offset = None;
    let mut op = None;
    let mut rvalue = None;
    let mut result = None;
    let mut common = ByteCommon::default();
    for item in value.split(',').map(str::trim) {
        let (key, arg) = match item.split_once(char::is_whitespace) {
            Some((k, a)) => (k, a.trim()),
            None => (item, ""),
        };
        match key {
            "bytes" => bytes = Some(arg),
            "offset" => offset = Some(parse_i64(arg, KW)?),
            "oper" => {
                op = Some(match arg {
                    "+" => ByteMathOp::Add,
                    "-" => ByteMathOp::Sub,
                    "*" => ByteMathOp::Mul,
                    "/" => ByteMathOp::Div,
                    "<<" => ByteMathOp::Shl,
                    ">>" => ByteMathOp::Shr,
                    other => return Err(bad_part(KW, "oper", other)),
                })
            }
            "rvalue" => rvalue = Some(parse_num_or_var(arg, KW)?),
            "result" => {
                if !is_var_name(arg) {
                    return Err(bad_part(KW, "result name", arg));
                }
                result = Some(arg.to_string())
            }
            "endian" => {
                if !common.take(arg, KW)? || !matches!(arg, "big" | "little" | "dce") {
                    return Err(bad_part(KW, "endian", arg));
                }
            }
            "string" => {
                let base = parse_base(arg).ok_or_else(|| bad_part(KW, "string base", arg))?;
                common.string = Some(base);
            }
            _ => {
                if !common.take(item, KW)? {
                    return Err(unknown_option(KW, item));
                }
            }
        }
    }
    let bytes = parse_nbytes_or_var(bytes.ok_or(missing("bytes"))?, KW, common.max_bytes())?;
    let op = op.ok_or(missing("oper"))?;
    let rvalue = rvalue.ok_or(missing("rvalue"))?;
    if op == ByteMathOp::Div && rvalue == NumOrVar::Num(0) {
        return Err(OptionError::Constraint { keyword: KW, rule: "division by zero" });
    }
    Ok(ByteMath {
        bytes,
        offset: offset.ok_or(missing("offset"))?,
        op,
        rvalue,
        result: result.ok_or(missing("result"))?,
        relative: common.relative,
        endian: common.endian.unwrap_or(Endian::Big),
        string: common.string,
        bitmask: common.bitmask,
    })
}

pub(crate) fn parse_base64_decode(value: Option<&str>) -> Result<Base64Decode, OptionError> {
    let mut d = Base64Decode::default();
    let Some(value) = value else { return Ok(d) };
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, arg) = item.split_once(char::is_whitespace).map(|(k, a)| (k, a.trim())).unwrap_or((item, ""));
        match key {
            "bytes" => d.bytes = Some(parse_u32(arg, "base64_decode bytes")?),
            "offset" => d.offset = Some(parse_u32(arg, "base64_decode offset")?),
            "relative" => d.relative = true,
            _ => return Err(unknown_option("base64_decode", item)),
        }
    }
    Ok(d)
}
