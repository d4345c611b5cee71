//! Values shared by many keywords: numbers (decimal or `0x` hex), numeric comparisons
//! (`<5`, `2<>9`, `!3`), numbers that may name a `byte_extract` variable, hex pairs, and a
//! leading `!`.

use super::error::OptionError;

/// A number written in the rule, or the name of a `byte_extract`/`byte_math` variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumOrVar {
    Num(i64),
    Var(String),
}

/// Which values of a multi-valued number a keyword compares (Suricata's index part, as in
/// `dns.rrtype:1,all;`): any of them (the default), all, a position from the front or
/// (negative) from the back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NumberIndex {
    #[default]
    Any,
    /// Every value matches, and there is one at least.
    All,
    /// Every value matches, or there is none.
    AllOrAbsent,
    /// One value matches, or there is none.
    OrAbsent,
    /// The value at `index` matches; with `oob_or`, also when there is no such value.
    At { index: i32, oob_or: bool },
}

impl NumberIndex {
    /// Parses the index part: `any`, `all`, `all_or_absent`, `or_absent`, `N`, `-N`,
    /// `oob_or N`.
    pub fn parse(text: &str) -> Option<NumberIndex> {
        Some(match text.trim() {
            "any" => NumberIndex::Any,
            "all" => NumberIndex::All,
            "all_or_absent" => NumberIndex::AllOrAbsent,
            "or_absent" => NumberIndex::OrAbsent,
            other => {
                let (oob_or, n) = match other.strip_prefix("oob_or") {
                    Some(rest) => (true, rest.trim()),
                    None => (false, other),
                };
                NumberIndex::At { index: n.parse().ok()?, oob_or }
            }
        })
    }

    /// Whether `values` (in order) satisfy `cmp` as this index asks.
    pub fn matches<T: Copy + PartialOrd>(self, cmp: &UintCmp<T>, values: &[T]) -> bool {
        match self {
            NumberIndex::Any => values.iter().any(|&v| cmp.matches(v)),
            NumberIndex::All => !values.is_empty() && values.iter().all(|&v| cmp.matches(v)),
            NumberIndex::AllOrAbsent => values.iter().all(|&v| cmp.matches(v)),
            NumberIndex::OrAbsent => values.is_empty() || values.iter().any(|&v| cmp.matches(v)),
            NumberIndex::At { index, oob_or } => {
                let at = if index < 0 {
                    values.len().checked_sub(index.unsigned_abs() as usize)
                } else {
                    Some(index as usize)
                };
                match at.and_then(|i| values.get(i)) {
                    Some(&v) => cmp.matches(v),
                    None => oob_or,
                }
            }
        }
    }
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

/// "invalid `what` 'value'", the error of a plain number or name.
pub(crate) fn bad_value(what: &str, value: &str) -> OptionError {
    OptionError::BadValue { what: what.to_string(), value: value.to_string() }
}

/// "`keyword`: invalid `part` 'value'", the error of one part of a list value.
pub(crate) fn bad_part(keyword: &str, part: &'static str, value: &str) -> OptionError {
    OptionError::BadPart { keyword: keyword.to_string(), part, value: value.to_string() }
}

/// "`keyword`: unknown option 'option'".
pub(crate) fn unknown_option(keyword: &str, option: &str) -> OptionError {
    OptionError::UnknownPart { keyword: keyword.to_string(), part: "option", value: option.to_string() }
}

/// A decimal `u32`; `kw` names it in the error.
pub fn parse_u32(v: &str, kw: &str) -> Result<u32, OptionError> {
    v.trim().parse::<u32>().map_err(|_| bad_value(kw, v.trim()))
}

pub(crate) fn parse_u16(v: &str, kw: &str) -> Result<u16, OptionError> {
    v.trim().parse::<u16>().map_err(|_| bad_value(kw, v.trim()))
}

pub(crate) fn parse_i64(v: &str, kw: &str) -> Result<i64, OptionError> {
    v.trim().parse::<i64>().map_err(|_| bad_part(kw, "number", v.trim()))
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

/// A number of at most 32 bits (either sign), or a variable name.
pub(crate) fn parse_num_or_var(v: &str, kw: &str) -> Result<NumOrVar, OptionError> {
    let v = v.trim();
    let too_large = |value: i128| OptionError::TooLarge { keyword: kw.to_string(), value };
    if let Ok(n) = v.parse::<i64>() {
        if n.unsigned_abs() > u64::from(u32::MAX) {
            return Err(too_large(n.into()));
        }
        return Ok(NumOrVar::Num(n));
    }
    if let Some(n) = parse_u64_any_base(v) {
        if n > u64::from(u32::MAX) {
            return Err(too_large(n.into()));
        }
        return Ok(NumOrVar::Num(n as i64));
    }
    if is_var_name(v) {
        return Ok(NumOrVar::Var(v.to_string()));
    }
    Err(OptionError::BadNumber { keyword: kw.to_string(), value: v.to_string() })
}

/// Numeric comparison: `N`, `!N`, `<N`, `<=N`, `>N`, `>=N`, `=N`, `N<>M`, `N-M`, `!N-M`.
pub fn parse_uint_cmp<T>(v: &str, kw: &str) -> Result<UintCmp<T>, OptionError>
where
    T: TryFrom<u64> + Copy + PartialOrd,
{
    let text = v.trim();
    let bad = || OptionError::BadNumber { keyword: kw.to_string(), value: text.to_string() };
    let num = |s: &str| -> Result<T, OptionError> {
        let n = parse_u64_any_base(s).ok_or_else(bad)?;
        T::try_from(n).map_err(|_| OptionError::OutOfRange { keyword: kw.to_string(), value: s.trim().to_string() })
    };
    let range = |lo: &str, hi: &str| -> Result<(T, T), OptionError> {
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo >= hi {
            return Err(OptionError::EmptyRange { keyword: kw.to_string(), range: text.to_string() });
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
