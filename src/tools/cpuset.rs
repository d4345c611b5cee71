//! CPU sets in the two text forms the kernel uses: cpulists ("0-3,8,10-11", as in
//! `smp_affinity_list` and `node*/cpulist`) and hex masks in comma-separated 32-bit groups,
//! most significant group first ("ff", "00000000,000000ff", as in `rps_cpus`, `xps_cpus`).

use std::collections::BTreeSet;
use std::fmt;

/// Highest CPU id we accept from any file; far above any real machine, low enough that a
/// hostile "0-4294967295" cannot make us allocate gigabytes.
pub const MAX_CPU_ID: u32 = 65_535;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSet(BTreeSet<u32>);

impl CpuSet {
    pub fn new() -> CpuSet {
        CpuSet(BTreeSet::new())
    }

    pub fn from_ids(ids: impl IntoIterator<Item = u32>) -> CpuSet {
        CpuSet(ids.into_iter().filter(|&id| id <= MAX_CPU_ID).collect())
    }

    pub fn insert(&mut self, cpu: u32) {
        if cpu <= MAX_CPU_ID {
            self.0.insert(cpu);
        }
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub fn max(&self) -> Option<u32> {
        self.0.last().copied()
    }

    /// Parses a cpulist: comma-separated ids and inclusive ranges, optionally with a
    /// stride ("0-7:2"). Empty text (or only whitespace) is the empty set.
    pub fn parse_list(text: &str) -> Result<CpuSet, String> {
        let mut set = CpuSet::new();
        let text = text.trim();
        if text.is_empty() {
            return Ok(set);
        }
        for part in text.split(',') {
            let part = part.trim();
            let (range, stride) = match part.split_once(':') {
                Some((range, stride)) => (range, parse_id(stride.split('/').next().unwrap_or(""))?),
                None => (part, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (parse_id(a)?, parse_id(b)?),
                None => {
                    let id = parse_id(range)?;
                    (id, id)
                }
            };
            if first > last || stride == 0 {
                return Err(format!("bad cpu range {part:?}"));
            }
            let mut cpu = first;
            while cpu <= last {
                set.0.insert(cpu);
                cpu = match cpu.checked_add(stride) {
                    Some(next) => next,
                    None => break,
                };
            }
        }
        Ok(set)
    }

    /// The kernel's cpulist form: ascending, consecutive runs as ranges ("0-3,8").
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut ids = self.0.iter().copied().peekable();
        while let Some(start) = ids.next() {
            let mut end = start;
            while ids.peek() == Some(&(end + 1)) {
                end += 1;
                ids.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }

    /// Parses a hex mask ("ff", "00000000,000000ff", optional "0x"); commas are group
    /// separators only, so any grouping is accepted.
    pub fn parse_hex_mask(text: &str) -> Result<CpuSet, String> {
        let text = text.trim();
        let text = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
        let mut set = CpuSet::new();
        // Walk hex digits from the least significant end: digit k holds CPUs 4k..4k+3.
        let mut digit_index: u32 = 0;
        for c in text.chars().rev() {
            if c == ',' {
                continue;
            }
            let value = c.to_digit(16).ok_or_else(|| format!("bad hex cpu mask {text:?}"))?;
            for bit in 0..4 {
                if value & (1 << bit) != 0 {
                    let cpu = digit_index.saturating_mul(4).saturating_add(bit);
                    if cpu > MAX_CPU_ID {
                        return Err(format!("cpu mask {text:?} names a cpu above {MAX_CPU_ID}"));
                    }
                    set.0.insert(cpu);
                }
            }
            digit_index = digit_index.saturating_add(1);
        }
        Ok(set)
    }

    /// The mask as the kernel prints it for a machine with `nr_cpu_ids` possible CPUs:
    /// 32-bit groups of 8 hex digits separated by commas, the leading group only as wide as
    /// the remaining bits need ("ff" for 8 CPUs, "00,000000ff" for 40). Ids at or above
    /// `nr_cpu_ids` widen the mask rather than being dropped.
    pub fn to_hex_mask(&self, nr_cpu_ids: u32) -> String {
        let bits = nr_cpu_ids.max(self.max().map_or(1, |m| m + 1)).max(1);
        let digits = bits.div_ceil(4) as usize;
        let mut nibbles = vec![0u8; digits]; // index 0 = least significant nibble
        for cpu in self.iter() {
            if let Some(n) = nibbles.get_mut((cpu / 4) as usize) {
                *n |= 1 << (cpu % 4);
            }
        }
        let mut out = String::with_capacity(digits + digits / 8);
        for (i, nibble) in nibbles.iter().enumerate().rev() {
            out.push(char::from_digit(u32::from(*nibble), 16).unwrap_or('0'));
            if i > 0 && i % 8 == 0 {
                out.push(',');
            }
        }
        out
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

fn parse_id(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let id: u32 = text.parse().map_err(|_| format!("bad cpu id {text:?}"))?;
    if id > MAX_CPU_ID {
        return Err(format!("cpu id {id} above {MAX_CPU_ID}"));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulist_round_trip() {
        let set = CpuSet::parse_list("0-3,8,10-11\n").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(set.to_list(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse_list("").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_list("0-6:3").unwrap().to_list(), "0,3,6");
    }

    #[test]
    fn cpulist_rejects_garbage_without_panicking() {
        for bad in ["x", "3-1", "0-", "-", "0-99999999", "1,,2", "0-7:0", "4294967296"] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hex_masks_are_grouped_like_the_kernel() {
        let set = CpuSet::from_ids([0, 4]);
        assert_eq!(set.to_hex_mask(8), "11");
        assert_eq!(CpuSet::from_ids([0]).to_hex_mask(8), "01");
        assert_eq!(CpuSet::new().to_hex_mask(8), "00");
        assert_eq!(CpuSet::from_ids([0]).to_hex_mask(2), "1");
        assert_eq!(CpuSet::from_ids([0, 7]).to_hex_mask(64), "00000000,00000081");
        assert_eq!(CpuSet::from_ids([32, 39]).to_hex_mask(40), "81,00000000");
        assert_eq!(CpuSet::from_ids([0, 35]).to_hex_mask(8), "8,00000001");
    }

    #[test]
    fn hex_mask_parse_round_trip() {
        assert_eq!(CpuSet::parse_hex_mask("00000000,00000081\n").unwrap(), CpuSet::from_ids([0, 7]));
        assert_eq!(CpuSet::parse_hex_mask("0").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_hex_mask("ff").unwrap().to_list(), "0-7");
        assert!(CpuSet::parse_hex_mask("fg").is_err());
        let set = CpuSet::from_ids([1, 33, 70]);
        assert_eq!(CpuSet::parse_hex_mask(&set.to_hex_mask(96)).unwrap(), set);
    }
}
