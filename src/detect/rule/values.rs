//! Values shared by many keywords: numbers (decimal or `0x` hex), numeric comparisons
//! (`<5`, `2<>9`, `!3`), numbers that may name a `byte_extract` variable, hex pairs, and a
//! leading `!`.

/// A number written in the rule, or the name of a `byte_extract`/`byte_math` variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumOrVar {
    Num(i64),
    Var(String),
}

/// Comparison forms shared by dsize, bsize, ttl, itype, icode, urilen, stream_size...
/// Ranges are exclusive on both ends, as in Suricata (`2<>5` matches 3 and 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UintCmp<T> {
    Eq(T),
    Ne(T),
    Lt(T),
    Le(T),
    Gt(T),
    Ge(T),
    Range(T, T),
    NotRange(T, T),
}

impl<T: Copy + PartialOrd> UintCmp<T> {
    pub fn matches(&self, v: T) -> bool {
        match *self {
            UintCmp::Eq(a) => v == a,
            UintCmp::Ne(a) => v != a,
            UintCmp::Lt(a) => v < a,
            UintCmp::Le(a) => v <= a,
            UintCmp::Gt(a) => v > a,
            UintCmp::Ge(a) => v >= a,
            UintCmp::Range(lo, hi) => v > lo && v < hi,
            UintCmp::NotRange(lo, hi) => !(v > lo && v < hi),
        }
    }
}

pub(crate) fn strip_bang(v: &str) -> (bool, &str) {
    let v = v.trim();
    match v.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, v),
    }
}

pub fn parse_u32(v: &str, kw: &str) -> Result<u32, String> {
    v.trim()
        .parse::<u32>()
        .map_err(|_| format!("invalid {kw} '{}'", v.trim()))
}

pub(crate) fn parse_u16(v: &str, kw: &str) -> Result<u16, String> {
    v.trim()
        .parse::<u16>()
        .map_err(|_| format!("invalid {kw} '{}'", v.trim()))
}

pub(crate) fn parse_i64(v: &str, kw: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| format!("{kw}: invalid number '{}'", v.trim()))
}

/// Decimal, or hex with a `0x` prefix (a leading `0` does not mean octal).
pub(crate) fn parse_u64_any_base(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

pub(crate) fn is_var_name(v: &str) -> bool {
    let mut chars = v.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

pub(crate) fn parse_num_or_var(v: &str, kw: &str) -> Result<NumOrVar, String> {
    let v = v.trim();
    if let Ok(n) = v.parse::<i64>() {
        if n.unsigned_abs() > u64::from(u32::MAX) {
            return Err(format!("{kw} value {n} out of range"));
        }
        return Ok(NumOrVar::Num(n));
    }
    if let Some(n) = parse_u64_any_base(v) {
        if n > u64::from(u32::MAX) {
            return Err(format!("{kw} value {n} out of range"));
        }
        return Ok(NumOrVar::Num(n as i64));
    }
    if is_var_name(v) {
        return Ok(NumOrVar::Var(v.to_string()));
    }
    Err(format!("invalid {kw} value '{v}'"))
}

/// Numeric comparison: `N`, `!N`, `<N`, `<=N`, `>N`, `>=N`, `=N`, `N<>M`, `N-M`, `!N-M`.
pub fn parse_uint_cmp<T>(v: &str, kw: &str) -> Result<UintCmp<T>, String>
where
    T: TryFrom<u64> + Copy + PartialOrd,
{
    let text = v.trim();
    let bad = || format!("invalid {kw} value '{text}'");
    let num = |s: &str| -> Result<T, String> {
        let n = parse_u64_any_base(s).ok_or_else(bad)?;
        T::try_from(n).map_err(|_| format!("{kw} value '{}' out of range", s.trim()))
    };
    let range = |lo: &str, hi: &str| -> Result<(T, T), String> {
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo >= hi {
            return Err(format!("{kw} range '{text}': start must be below end"));
        }
        Ok((lo, hi))
    };
    if let Some(rest) = text.strip_prefix("<=") {
        return Ok(UintCmp::Le(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix(">=") {
        return Ok(UintCmp::Ge(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix("!=") {
        return Ok(UintCmp::Ne(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('<') {
        return Ok(UintCmp::Lt(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('>') {
        return Ok(UintCmp::Gt(num(rest)?));
    }
    if let Some(rest) = text.strip_prefix('=') {
        return Ok(UintCmp::Eq(num(rest)?));
    }
    let (negated, body) = match text.strip_prefix('!') {
        Some(r) => (true, r.trim()),
        None => (false, text),
    };
    let bounds = match body.split_once("<>") {
        Some((lo, hi)) => Some(range(lo, hi)?),
        None => match body.split_once('-') {
            Some((lo, hi)) => Some(range(lo, hi)?),
            None => None,
        },
    };
    Ok(match (negated, bounds) {
        (false, Some((lo, hi))) => UintCmp::Range(lo, hi),
        (true, Some((lo, hi))) => UintCmp::NotRange(lo, hi),
        (false, None) => UintCmp::Eq(num(body)?),
        (true, None) => UintCmp::Ne(num(body)?),
    })
}

/// Decodes hex digit pairs, spaces allowed between pairs.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}
