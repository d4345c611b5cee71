//! Parsing of scalar setting values the way Suricata spells them: booleans in their
//! YAML 1.1 forms and byte sizes with kb/mb/gb suffixes.
//!
//! These live apart from the tree so that the CLI (`-k`, `--set`) and other modules can reuse
//! them on raw strings.

/// Suricata's boolean spellings, case-insensitive: yes/no, true/false, on/off, 1/0.
///
/// YAML 1.2 (what serde_yaml speaks) only knows true/false, so `yes`/`on` arrive here as
/// strings; this is where they become booleans. Returns `None` for anything else.
pub fn parse_bool(text: &str) -> Option<bool> {
    let text = text.trim();
    const TRUE: [&str; 4] = ["yes", "true", "on", "1"];
    const FALSE: [&str; 4] = ["no", "false", "off", "0"];
    if TRUE.iter().any(|t| text.eq_ignore_ascii_case(t)) {
        Some(true)
    } else if FALSE.iter().any(|f| text.eq_ignore_ascii_case(f)) {
        Some(false)
    } else {
        None
    }
}

/// A byte size: a number, optionally with a fraction, optionally followed (with or without
/// blanks) by a unit. Units are case-insensitive and binary (1 kb = 1024 bytes), as in
/// Suricata: `b`, `kb`/`kib`, `mb`/`mib`, `gb`/`gib`, `tb`/`tib`. Fractions are truncated
/// to whole bytes ("1.5kb" = 1536). Returns `None` on bad syntax or overflow.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let number_end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(number_end);
    let multiplier: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "kib" => 1 << 10,
        "mb" | "mib" => 1 << 20,
        "gb" | "gib" => 1 << 30,
        "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if whole.is_empty() || fraction.contains('.') || (number.contains('.') && fraction.is_empty()) {
        return None;
    }
    // Digits only from here; lengths are bounded so u128 arithmetic cannot overflow.
    if whole.len() > 20 || fraction.len() > 18 {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let mut bytes = whole.checked_mul(multiplier)?;
    if !fraction.is_empty() {
        let scale = 10u128.pow(fraction.len() as u32);
        let fraction: u128 = fraction.parse().ok()?;
        bytes += fraction * multiplier / scale;
    }
    u64::try_from(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_in_every_suricata_spelling() {
        for t in ["yes", "YES", "Yes", "true", "True", "TRUE", "on", "On", "1", " yes "] {
            assert_eq!(parse_bool(t), Some(true), "{t:?}");
        }
        for f in ["no", "NO", "No", "false", "False", "off", "OFF", "0"] {
            assert_eq!(parse_bool(f), Some(false), "{f:?}");
        }
        for bad in ["", "y", "n", "enabled", "2", "truee", "yes please", "detection-only"] {
            assert_eq!(parse_bool(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn sizes_in_every_suricata_spelling() {
        let cases: &[(&str, u64)] = &[
            ("1024", 1024),
            ("0", 0),
            ("64kb", 64 * 1024),
            ("64KB", 64 * 1024),
            ("64Kb", 64 * 1024),
            ("128mb", 128 << 20),
            ("128 MB", 128 << 20),
            ("1 MiB", 1 << 20),
            ("1gb", 1 << 30),
            ("2GiB", 2 << 30),
            ("1tb", 1 << 40),
            ("10b", 10),
            ("1.5kb", 1536),
            ("0.5mb", 512 * 1024),
            (" 4kb ", 4096),
        ];
        for &(text, bytes) in cases {
            assert_eq!(parse_size(text), Some(bytes), "{text:?}");
        }
    }

    #[test]
    fn bad_sizes_are_rejected() {
        for bad in
            ["", "mb", "12xb", "-1", "1..2mb", "1.mb", ".5mb", "1 2mb", "1e3", "kb1", "99999999999999999999gb", "1.5.5"]
        {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }
}
