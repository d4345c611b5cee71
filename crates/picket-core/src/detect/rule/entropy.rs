//! The `entropy` keyword (Suricata 8): the Shannon entropy of the current buffer (or of
//! `bytes` bytes from `offset`) compared with a float, e.g. `file.data; entropy: value > 7;`.
//! Suricata also keeps the last value computed per buffer as a flow variable, which eve
//! logs as `metadata.entropy.<buffer>`; the engine does the same.

use super::error::OptionError;
use super::values::bad_value;

/// A float comparison: Suricata's `DetectFloatData` modes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FloatCmp {
    Eq(f64),
    Ne(f64),
    Lt(f64),
    Le(f64),
    Gt(f64),
    Ge(f64),
    /// `a-b`: strictly between.
    Range(f64, f64),
    /// `!a-b`: outside, bounds included.
    NotRange(f64, f64),
}

// Rule options compare as `Eq`; the parser admits finite numbers only, never NaN.
impl Eq for FloatCmp {}

impl FloatCmp {
    pub fn matches(self, v: f64) -> bool {
        match self {
            FloatCmp::Eq(a) => v == a,
            FloatCmp::Ne(a) => v != a,
            FloatCmp::Lt(a) => v < a,
            FloatCmp::Le(a) => v <= a,
            FloatCmp::Gt(a) => v > a,
            FloatCmp::Ge(a) => v >= a,
            FloatCmp::Range(a, b) => v > a && v < b,
            FloatCmp::NotRange(a, b) => v <= a || v >= b,
        }
    }

    /// `>= 4`, `<4.5`, `!= 4`, `= 4`, `4`, `4-5`, `!4-5`.
    fn parse(text: &str) -> Result<FloatCmp, OptionError> {
        let bad = || bad_value("entropy value", text.trim());
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let t = text.trim();
        let (ctor, rest): (fn(f64) -> FloatCmp, &str) = if let Some(r) = t.strip_prefix(">=") {
            (FloatCmp::Ge, r)
        } else if let Some(r) = t.strip_prefix("<=") {
            (FloatCmp::Le, r)
        } else if let Some(r) = t.strip_prefix("!=") {
            (FloatCmp::Ne, r)
        } else if let Some(r) = t.strip_prefix('>') {
            (FloatCmp::Gt, r)
        } else if let Some(r) = t.strip_prefix('<') {
            (FloatCmp::Lt, r)
        } else if let Some(r) = t.strip_prefix('=') {
            (FloatCmp::Eq, r)
        } else {
            // A range (`a-b`, `!a-b`) or a bare number (equality).
            let (negated, body) = match t.strip_prefix('!') {
                Some(b) => (true, b),
                None => (false, t),
            };
            // The separator is a '-' after the first character (the low bound may be negative).
            let split = body.char_indices().skip(1).find(|&(_, c)| c == '-').map(|(i, _)| i);
            return match (split, negated) {
                (Some(i), _) => {
                    let (a, b) = (num(&body[..i]).ok_or_else(bad)?, num(&body[i + 1..]).ok_or_else(bad)?);
                    if a >= b {
                        return Err(bad());
                    }
                    Ok(if negated { FloatCmp::NotRange(a, b) } else { FloatCmp::Range(a, b) })
                }
                (None, false) => num(body).map(FloatCmp::Eq).ok_or_else(bad),
                (None, true) => Err(bad()),
            };
        };
        num(rest).map(ctor).ok_or_else(bad)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entropy {
    /// Bytes to measure from `offset` (`None`: to the end of the buffer).
    pub bytes: Option<u32>,
    pub offset: u32,
    pub value: FloatCmp,
}

impl Eq for Entropy {}

impl Entropy {
    /// The entropy of `buf` as this keyword measures it; `None` when `offset` or `bytes`
    /// reach past the buffer (no match, and no value recorded, as in Suricata).
    pub fn measure(&self, buf: &[u8]) -> Option<f64> {
        let rest = buf.get(self.offset as usize..)?;
        let data = match self.bytes {
            Some(n) => rest.get(..n as usize)?,
            None => rest,
        };
        Some(shannon(data))
    }
}

/// Shannon entropy in bits per byte, summed over byte values in ascending order as
/// Suricata does (the order fixes the last bits of the float that eve logs).
pub fn shannon(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    let len = data.len() as f64;
    counts.iter().filter(|&&c| c > 0).fold(0.0, |e, &c| {
        let p = c as f64 / len;
        e - p * p.log2()
    })
}

/// `entropy: [bytes N,] [offset N,] value CMP` (options in any order, `value` required).
pub(crate) fn parse_entropy(text: &str) -> Result<Entropy, OptionError> {
    let (mut bytes, mut offset, mut value) = (None, None, None);
    for part in text.split(',') {
        let part = part.trim();
        let (name, arg) = part.split_once(char::is_whitespace).unwrap_or((part, ""));
        let dup = || bad_value("entropy option given twice", name);
        match name {
            "bytes" => {
                let n = arg.trim().parse::<u32>().map_err(|_| bad_value("entropy bytes", arg.trim()))?;
                if bytes.replace(n).is_some() {
                    return Err(dup());
                }
            }
            "offset" => {
                let n = arg.trim().parse::<u32>().ok().filter(|&n| n <= 65535);
                let n = n.ok_or_else(|| bad_value("entropy offset", arg.trim()))?;
                if offset.replace(n).is_some() {
                    return Err(dup());
                }
            }
            "value" => {
                if value.replace(FloatCmp::parse(arg)?).is_some() {
                    return Err(dup());
                }
            }
            other => {
                return Err(OptionError::UnknownPart {
                    keyword: "entropy".into(),
                    part: "option",
                    value: other.to_string(),
                })
            }
        }
    }
    let value = value.ok_or_else(|| bad_value("entropy (value missing)", text.trim()))?;
    Ok(Entropy { bytes: bytes.filter(|&n| n > 0), offset: offset.unwrap_or(0), value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suricata_forms() {
        let e = parse_entropy("value > 4").unwrap();
        assert_eq!(e, Entropy { bytes: None, offset: 0, value: FloatCmp::Gt(4.0) });
        let e = parse_entropy(" offset 10, value > 4.14").unwrap();
        assert_eq!((e.offset, e.value), (10, FloatCmp::Gt(4.14)));
        assert_eq!(parse_entropy("bytes 4, value 4-5").unwrap().value, FloatCmp::Range(4.0, 5.0));
        assert_eq!(parse_entropy("value !4-5").unwrap().value, FloatCmp::NotRange(4.0, 5.0));
        assert_eq!(parse_entropy("value != 4").unwrap().value, FloatCmp::Ne(4.0));
        assert_eq!(parse_entropy("value = 4").unwrap().value, FloatCmp::Eq(4.0));
        assert_eq!(parse_entropy("value >= 5").unwrap().value, FloatCmp::Ge(5.0));
        for bad in
            ["offset 3", "value > x", "value 5-4", "value >4, value <5", "depth 3, value >1", "offset 70000, value >1"]
        {
            assert!(parse_entropy(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn measures_the_window_and_compares() {
        assert_eq!(shannon(b""), 0.0);
        assert_eq!(shannon(b"aaaa"), 0.0);
        assert_eq!(shannon(b"abab"), 1.0);
        assert_eq!(shannon(&(0..=255u8).collect::<Vec<_>>()), 8.0);
        let e = parse_entropy("offset 2, bytes 2, value = 1").unwrap();
        assert_eq!(e.measure(b"aaab"), Some(1.0));
        assert_eq!(e.measure(b"aab"), None, "bytes past the end");
        assert!(FloatCmp::Range(4.0, 5.0).matches(4.5) && !FloatCmp::Range(4.0, 5.0).matches(5.0));
        assert!(FloatCmp::NotRange(4.0, 5.0).matches(5.0) && !FloatCmp::NotRange(4.0, 5.0).matches(4.5));
    }
}
