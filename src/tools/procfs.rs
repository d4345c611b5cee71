//! Parsers for the /proc files the tools read: `stat`, `softirqs`, `interrupts`. They take
//! the file text and never fail as a whole: a line they cannot read is counted in
//! `skipped_lines` and the rest is kept (kernels add columns, CPUs come and go).

use super::cpuset::MAX_CPU_ID;
use std::collections::BTreeMap;

/// Cumulative time of one CPU in USER_HZ ticks, the columns of a `/proc/stat` cpu line.
/// Columns the kernel does not print (old kernels) are 0; columns after `guest_nice`
/// (future kernels) are ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All time the CPU existed. `guest` and `guest_nice` are already counted inside
    /// `user` and `nice`, so they are not added again.
    pub fn total(&self) -> u64 {
        [self.user, self.nice, self.system, self.idle, self.iowait, self.irq, self.softirq, self.steal]
            .iter()
            .fold(0u64, |sum, v| sum.saturating_add(*v))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The aggregate "cpu" line.
    pub all: Option<CpuTimes>,
    /// "cpuN" lines by N. Offline CPUs have no line.
    pub cpus: BTreeMap<u32, CpuTimes>,
    pub skipped_lines: u64,
}

pub fn parse_proc_stat(text: &str) -> ProcStat {
    let mut stat = ProcStat::default();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(label) = fields.next() else { continue };
        let Some(suffix) = label.strip_prefix("cpu") else { continue };
        let mut values = [0u64; 10];
        let mut ok = true;
        for (slot, field) in values.iter_mut().zip(fields) {
            match field.parse() {
                Ok(v) => *slot = v,
                Err(_) => ok = false,
            }
        }
        if !ok {
            stat.skipped_lines += 1;
            continue;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice] = values;
        let times = CpuTimes { user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice };
        if suffix.is_empty() {
            stat.all = Some(times);
        } else {
            match suffix.parse::<u32>() {
                Ok(cpu) if cpu <= MAX_CPU_ID => {
                    stat.cpus.insert(cpu, times);
                }
                _ => stat.skipped_lines += 1,
            }
        }
    }
    stat
}

/// Header of a per-CPU table ("CPU0 CPU1 CPU4 ..."): the CPU id of each column. Offline
/// CPUs may be missing from /proc/interrupts, so columns are not assumed to be 0..n.
fn parse_cpu_header(line: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for token in line.split_ascii_whitespace() {
        let id: u32 = token.strip_prefix("CPU")?.parse().ok()?;
        if id > MAX_CPU_ID {
            return None;
        }
        cpus.push(id);
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Per-CPU NET_RX and NET_TX softirq counts from /proc/softirqs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetSoftirqs {
    pub net_rx: BTreeMap<u32, u64>,
    pub net_tx: BTreeMap<u32, u64>,
    pub skipped_lines: u64,
}

pub fn parse_softirqs(text: &str) -> NetSoftirqs {
    let mut out = NetSoftirqs::default();
    let mut lines = text.lines();
    let Some(columns) = lines.next().and_then(parse_cpu_header) else {
        out.skipped_lines += 1;
        return out;
    };
    for line in lines {
        let Some((name, counts)) = line.split_once(':') else {
            out.skipped_lines += 1;
            continue;
        };
        let target = match name.trim() {
            "NET_RX" => &mut out.net_rx,
            "NET_TX" => &mut out.net_tx,
            _ => continue,
        };
        for (cpu, field) in columns.iter().zip(counts.split_ascii_whitespace()) {
            match field.parse() {
                Ok(count) => {
                    target.insert(*cpu, count);
                }
                Err(_) => {
                    out.skipped_lines += 1;
                    break;
                }
            }
        }
    }
    out
}

/// One line of /proc/interrupts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterruptLine {
    /// The label before the colon: a number for device IRQs, "NMI", "LOC", ... otherwise.
    pub label: String,
    /// Count per CPU column, by CPU id.
    pub counts: Vec<(u32, u64)>,
    /// Everything after the counts: chip, hwirq, trigger, action names ("eth0-TxRx-3").
    pub description: String,
}

impl InterruptLine {
    pub fn irq_number(&self) -> Option<u32> {
        self.label.parse().ok()
    }

    /// The action names: the last whitespace-separated tokens of the description, split
    /// on the ", " the kernel puts between shared handlers.
    pub fn action_names(&self) -> Vec<&str> {
        // The chip/hwirq/trigger columns come first and contain no commas; action names
        // are the tail. Without a reliable column count, every token is a candidate and the
        // callers match on the shape of the name.
        self.description.split(|c: char| c.is_ascii_whitespace() || c == ',').filter(|t| !t.is_empty()).collect()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interrupts {
    pub lines: Vec<InterruptLine>,
    pub skipped_lines: u64,
}

/// Upper bound on kept lines: a machine has a few thousand IRQs at most.
pub const MAX_INTERRUPT_LINES: usize = 65_536;

pub fn parse_interrupts(text: &str) -> Interrupts {
    let mut out = Interrupts::default();
    let mut lines = text.lines();
    let Some(columns) = lines.next().and_then(parse_cpu_header) else {
        out.skipped_lines += 1;
        return out;
    };
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            out.skipped_lines += 1;
            continue;
        };
        if out.lines.len() >= MAX_INTERRUPT_LINES {
            out.skipped_lines += 1;
            continue;
        }
        let mut counts = Vec::with_capacity(columns.len());
        let mut remainder = rest;
        for cpu in &columns {
            let trimmed = remainder.trim_start();
            let end = trimmed.find(|c: char| c.is_ascii_whitespace()).unwrap_or(trimmed.len());
            let Ok(count) = trimmed[..end].parse::<u64>() else { break };
            counts.push((*cpu, count));
            remainder = &trimmed[end..];
        }
        out.lines.push(InterruptLine {
            label: label.trim().to_string(),
            counts,
            description: remainder.trim().to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_reads_known_columns_and_ignores_extra_ones() {
        let text = "cpu  10 1 20 300 4 5 6 7 0 0\n\
                    cpu0 5 1 10 150 2 3 3 4 0 0 99 98\n\
                    cpu3 5 0 10 150 2 2 3\n\
                    cpux 1 2\n\
                    cpu9 1 zz\n\
                    intr 123 0 0\n\
                    ctxt 42\n";
        let stat = parse_proc_stat(text);
        let all = stat.all.unwrap();
        assert_eq!(all.total(), 10 + 1 + 20 + 300 + 4 + 5 + 6 + 7);
        assert_eq!(stat.cpus.keys().copied().collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!(stat.cpus[&0].steal, 4);
        // An old kernel's short line: missing columns are zero.
        assert_eq!(stat.cpus[&3].softirq, 3);
        assert_eq!(stat.cpus[&3].steal, 0);
        assert_eq!(stat.skipped_lines, 2);
    }

    #[test]
    fn softirqs_follow_the_header_columns() {
        let text = "                    CPU0       CPU2       CPU5\n\
                    \x20         HI:          0          1          2\n\
                    \x20     NET_TX:          7          8          9\n\
                    \x20     NET_RX:        100        200        300\n\
                    \x20    NEW_ONE:          1          1          1\n";
        let s = parse_softirqs(text);
        assert_eq!(s.net_rx.iter().map(|(c, v)| (*c, *v)).collect::<Vec<_>>(), vec![(0, 100), (2, 200), (5, 300)]);
        assert_eq!(s.net_tx[&5], 9);
        assert_eq!(s.skipped_lines, 0);
        assert_eq!(parse_softirqs("garbage\n").skipped_lines, 1);
        assert_eq!(parse_softirqs(""), NetSoftirqs { skipped_lines: 1, ..Default::default() });
    }

    #[test]
    fn interrupts_split_counts_from_description() {
        let text = "           CPU0       CPU1\n\
                    \x2024:          1          0  IR-PCI-MSI 524288-edge      eth0-TxRx-0\n\
                    \x2030:          5          6  PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n\
                    NMI:          0          0   Non-maskable interrupts\n\
                    ERR:          0\n\
                    no colon here\n";
        let irqs = parse_interrupts(text);
        assert_eq!(irqs.lines.len(), 4);
        assert_eq!(irqs.skipped_lines, 1);
        let first = &irqs.lines[0];
        assert_eq!(first.irq_number(), Some(24));
        assert_eq!(first.counts, vec![(0, 1), (1, 0)]);
        assert_eq!(first.description, "IR-PCI-MSI 524288-edge      eth0-TxRx-0");
        assert_eq!(first.action_names().last(), Some(&"eth0-TxRx-0"));
        assert_eq!(irqs.lines[2].irq_number(), None);
        assert_eq!(irqs.lines[3].counts, vec![(0, 0)]);
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;
    use crate::tools::cpuset::CpuSet;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsers_never_panic(text in "(cpu[0-9]{0,3}|CPU[0-9]{0,6}|NET_RX:|[0-9]{1,25}|[ :,\\-\\n\\t]|[a-zA-Z@.]{1,6}|é){0,60}") {
            let _ = parse_proc_stat(&text);
            let _ = parse_softirqs(&text);
            for line in parse_interrupts(&text).lines {
                let _ = line.action_names();
            }
            let _ = CpuSet::parse_list(&text);
            let _ = CpuSet::parse_hex_mask(&text);
        }
    }
}
