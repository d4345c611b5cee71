//! Reads what `picket tune` needs to know about a NIC and the machine: queues, their IRQs
//! and affinities, RPS/RFS/XPS settings, NUMA layout.

use crate::tools::cpuset::CpuSet;
use crate::tools::procfs::{self, InterruptLine};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Where /proc and /sys are: `/proc` and `/sys`, or both under a test prefix.
#[derive(Clone, Debug)]
pub struct Roots {
    pub proc: PathBuf,
    pub sys: PathBuf,
}

impl Roots {
    pub fn new(prefix: Option<&Path>) -> Roots {
        let prefix = prefix.unwrap_or(Path::new("/"));
        Roots { proc: prefix.join("proc"), sys: prefix.join("sys") }
    }

    /// Maps a logical absolute path ("/proc/irq/24/smp_affinity_list") to the file.
    pub fn resolve(&self, logical: &Path) -> PathBuf {
        let relative = logical.strip_prefix("/").unwrap_or(logical);
        if let Ok(rest) = relative.strip_prefix("proc") {
            self.proc.join(rest)
        } else if let Ok(rest) = relative.strip_prefix("sys") {
            self.sys.join(rest)
        } else {
            logical.to_path_buf()
        }
    }

    fn read(&self, logical: &str) -> Option<String> {
        fs::read_to_string(self.resolve(Path::new(logical))).ok().map(|s| s.trim().to_string())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueKind {
    /// One vector for an rx/tx queue pair ("eth0-TxRx-3", "mlx5_comp3").
    Combined,
    Rx,
    Tx,
}

impl QueueKind {
    pub fn label(self) -> &'static str {
        match self {
            QueueKind::Combined => "rx+tx",
            QueueKind::Rx => "rx",
            QueueKind::Tx => "tx",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueIrq {
    pub irq: u32,
    pub kind: QueueKind,
    pub queue: u32,
    /// The action name in /proc/interrupts.
    pub name: String,
    /// Current smp_affinity_list; `None` when the file is missing or unreadable.
    pub affinity: Option<CpuSet>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxQueue {
    pub index: u32,
    /// `None`: no rps_cpus file (kernel without RPS) or unreadable.
    pub rps_cpus: Option<CpuSet>,
    pub rps_flow_cnt: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxQueue {
    pub index: u32,
    /// `None`: no xps_cpus file (kernel without XPS) or unreadable.
    pub xps_cpus: Option<CpuSet>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NicState {
    pub iface: String,
    pub driver: Option<String>,
    /// `None` for virtual devices and machines without NUMA information (numa_node -1).
    pub numa_node: Option<u32>,
    pub rx_queues: Vec<RxQueue>,
    pub tx_queues: Vec<TxQueue>,
    /// IRQs listed in device/msi_irqs.
    pub device_irqs: Vec<u32>,
    pub queue_irqs: Vec<QueueIrq>,
    /// The device's IRQs that serve no queue (link state, mailbox): left alone.
    pub other_irqs: Vec<(u32, String)>,
    pub rps_sock_flow_entries: Option<u64>,
    /// IRQ names that looked like a queue already seen.
    pub duplicate_irq_names: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTopology {
    pub online: CpuSet,
    /// Width of kernel cpu masks: highest possible CPU + 1.
    pub nr_cpu_ids: u32,
    pub nodes: BTreeMap<u32, CpuSet>,
}

impl CpuTopology {
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.nodes.iter().find(|(_, cpus)| cpus.contains(cpu)).map(|(node, _)| *node)
    }
}

/// At most this many queues of each direction are read (real NICs have up to a few hundred).
pub const MAX_QUEUES: usize = 4096;
pub const MAX_NUMA_NODES: usize = 1024;

pub fn read_topology(roots: &Roots) -> Result<CpuTopology, String> {
    let online = match roots.read("/sys/devices/system/cpu/online") {
        Some(text) => CpuSet::parse_list(&text).map_err(|e| format!("/sys/devices/system/cpu/online: {e}"))?,
        // No sysfs cpu directory: fall back to the CPUs /proc/stat lists.
        None => {
            let stat = roots.read("/proc/stat").ok_or("cannot read /sys/devices/system/cpu/online nor /proc/stat")?;
            CpuSet::from_ids(procfs::parse_proc_stat(&stat).cpus.keys().copied())
        }
    };
    if online.is_empty() {
        return Err("no online CPUs found".to_string());
    }
    let possible = roots.read("/sys/devices/system/cpu/possible").and_then(|t| CpuSet::parse_list(&t).ok());
    let nr_cpu_ids = possible.as_ref().and_then(CpuSet::max).max(online.max()).map_or(1, |m| m + 1);

    let mut nodes = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(roots.resolve(Path::new("/sys/devices/system/node"))) {
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_prefix("node")).and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if nodes.len() >= MAX_NUMA_NODES {
                break;
            }
            let list = fs::read_to_string(entry.path().join("cpulist")).unwrap_or_default();
            if let Ok(cpus) = CpuSet::parse_list(&list) {
                nodes.insert(id, cpus);
            }
        }
    }
    Ok(CpuTopology { online, nr_cpu_ids, nodes })
}

/// Directory entries "prefix-N" of `dir`, sorted by N.
fn numbered_entries(dir: &Path, prefix: &str) -> Vec<u32> {
    let mut found: Vec<u32> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix(prefix)).and_then(|n| n.parse().ok()))
            .take(MAX_QUEUES)
            .collect(),
        Err(_) => Vec::new(),
    };
    found.sort_unstable();
    found
}

/// Interface names become path components: refuse anything that could leave class/net.
pub fn valid_iface_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

pub fn read_nic(roots: &Roots, iface: &str) -> Result<NicState, String> {
    if !valid_iface_name(iface) {
        return Err(format!("{iface:?} is not an interface name"));
    }
    let base = format!("/sys/class/net/{iface}");
    if !roots.resolve(Path::new(&base)).is_dir() {
        return Err(format!("no interface {iface} ({base} does not exist)"));
    }
    let mut nic = NicState { iface: iface.to_string(), ..NicState::default() };
    nic.driver = fs::read_link(roots.resolve(Path::new(&format!("{base}/device/driver"))))
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string));
    // virtio-net's `device` is the virtio device; its PCI function (NUMA node, MSI
    // vectors) is the parent directory.
    let read_numa = |dir: &str| roots.read(&format!("{dir}/numa_node")).and_then(|t| t.parse::<i64>().ok());
    let numa = read_numa(&format!("{base}/device")).or_else(|| read_numa(&format!("{base}/device/..")));
    nic.numa_node = numa.and_then(|n| u32::try_from(n).ok());

    let queues_dir = roots.resolve(Path::new(&format!("{base}/queues")));
    for index in numbered_entries(&queues_dir, "rx-") {
        let dir = format!("{base}/queues/rx-{index}");
        nic.rx_queues.push(RxQueue {
            index,
            rps_cpus: roots.read(&format!("{dir}/rps_cpus")).and_then(|t| CpuSet::parse_hex_mask(&t).ok()),
            rps_flow_cnt: roots.read(&format!("{dir}/rps_flow_cnt")).and_then(|t| t.parse().ok()),
        });
    }
    for index in numbered_entries(&queues_dir, "tx-") {
        let dir = format!("{base}/queues/tx-{index}");
        nic.tx_queues.push(TxQueue {
            index,
            xps_cpus: roots.read(&format!("{dir}/xps_cpus")).and_then(|t| CpuSet::parse_hex_mask(&t).ok()),
        });
    }
    nic.rps_sock_flow_entries = roots.read("/proc/sys/net/core/rps_sock_flow_entries").and_then(|t| t.parse().ok());

    let mut device_irqs = numbered_entries(&roots.resolve(Path::new(&format!("{base}/device/msi_irqs"))), "");
    if device_irqs.is_empty() {
        device_irqs = numbered_entries(&roots.resolve(Path::new(&format!("{base}/device/../msi_irqs"))), "");
    }
    device_irqs.dedup();
    nic.device_irqs = device_irqs;

    let interrupts = roots.read("/proc/interrupts").map(|t| procfs::parse_interrupts(&t)).unwrap_or_default();
    find_queue_irqs(roots, &mut nic, &interrupts.lines);
    Ok(nic)
}

/// A queue vector recognised from its action name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqName {
    Queue(QueueKind, u32),
    /// Names the interface but no queue (link/misc vector).
    Misc,
}

/// Recognises queue IRQ names. With `iface`, the name must contain it as a whole word
/// ("eth0-TxRx-3", "i40e-eth0-TxRx-0", "eth0-rx-1", but not "eth01-rx-1"), and whatever
/// follows says the queue. Without it (virtio, mlx5 name vectors after the device, not the
/// interface; used only for the device's own msi_irqs) a queue keyword and a trailing
/// number are required ("virtio0-input.0", "mlx5_comp3@pci:0000:3b:00.0").
pub fn classify_irq_name(name: &str, iface: Option<&str>) -> Option<IrqName> {
    let name = name.split('@').next().unwrap_or(name);
    let rest = match iface {
        Some(iface) => {
            let is_word = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            let mut found = None;
            for (start, _) in name.match_indices(iface) {
                let before = name[..start].chars().next_back();
                let after_text = &name[start + iface.len()..];
                if is_word(before) && is_word(after_text.chars().next()) {
                    found = Some(after_text);
                    break;
                }
            }
            let rest = found?;
            if rest.is_empty() {
                return Some(IrqName::Misc);
            }
            rest
        }
        None => name,
    };
    let digits_start = rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let queue: Option<u32> = rest[digits_start..].parse().ok();
    let lower = rest[..digits_start].to_ascii_lowercase();
    let kind = if ["txrx", "rxtx", "comp", "combined"].iter().any(|k| lower.contains(k)) {
        Some(QueueKind::Combined)
    } else if lower.contains("rx") || lower.contains("input") {
        Some(QueueKind::Rx)
    } else if lower.contains("tx") || lower.contains("output") {
        Some(QueueKind::Tx)
    } else {
        None
    };
    match (kind, queue, iface) {
        (Some(kind), Some(queue), _) => Some(IrqName::Queue(kind, queue)),
        // "eth0-3": some drivers number vectors without a direction.
        (None, Some(queue), Some(_)) => Some(IrqName::Queue(QueueKind::Combined, queue)),
        (_, _, Some(_)) => Some(IrqName::Misc),
        _ => None,
    }
}

fn find_queue_irqs(roots: &Roots, nic: &mut NicState, lines: &[InterruptLine]) {
    let by_iface: Vec<(u32, &str, IrqName)> = lines
        .iter()
        .filter_map(|line| {
            let irq = line.irq_number()?;
            line.action_names().into_iter().find_map(|n| classify_irq_name(n, Some(&nic.iface)).map(|c| (irq, n, c)))
        })
        .collect();
    let matches = if by_iface.iter().any(|(_, _, c)| matches!(c, IrqName::Queue(..))) {
        by_iface
    } else {
        // Vectors named after the device rather than the interface: trust only the
        // device's own IRQs.
        lines
            .iter()
            .filter_map(|line| {
                let irq = line.irq_number()?;
                if !nic.device_irqs.contains(&irq) {
                    return None;
                }
                let found =
                    line.action_names().into_iter().find_map(|n| classify_irq_name(n, None).map(|c| (irq, n, c)));
                Some(found.unwrap_or((irq, line.action_names().last().copied().unwrap_or(""), IrqName::Misc)))
            })
            .collect()
    };
    let mut seen = std::collections::BTreeSet::new();
    for (irq, name, class) in matches {
        match class {
            IrqName::Queue(kind, queue) if seen.insert((kind, queue)) => {
                let affinity =
                    roots.read(&format!("/proc/irq/{irq}/smp_affinity_list")).and_then(|t| CpuSet::parse_list(&t).ok());
                nic.queue_irqs.push(QueueIrq { irq, kind, queue, name: name.to_string(), affinity });
            }
            IrqName::Queue(..) => nic.duplicate_irq_names += 1,
            IrqName::Misc => nic.other_irqs.push((irq, name.to_string())),
        }
    }
    nic.queue_irqs.sort_by_key(|q| (q.queue, q.kind, q.irq));
}

/// Whether an irqbalance process is running (it would undo IRQ affinity changes).
pub fn irqbalance_running(roots: &Roots) -> bool {
    let Ok(entries) = fs::read_dir(&roots.proc) else { return false };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .any(|e| fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "irqbalance"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irq_names_with_the_interface() {
        let q = |name| classify_irq_name(name, Some("eth0"));
        assert_eq!(q("eth0-TxRx-3"), Some(IrqName::Queue(QueueKind::Combined, 3)));
        assert_eq!(q("i40e-eth0-TxRx-12"), Some(IrqName::Queue(QueueKind::Combined, 12)));
        assert_eq!(q("eth0-rx-1"), Some(IrqName::Queue(QueueKind::Rx, 1)));
        assert_eq!(q("eth0-tx-0"), Some(IrqName::Queue(QueueKind::Tx, 0)));
        assert_eq!(q("eth0-5"), Some(IrqName::Queue(QueueKind::Combined, 5)));
        assert_eq!(q("eth0"), Some(IrqName::Misc));
        assert_eq!(q("eth0-link"), Some(IrqName::Misc));
        assert_eq!(q("eth01-rx-1"), None);
        assert_eq!(q("veth0-rx-1"), None);
        assert_eq!(q("ahci[0000:00:17.0]"), None);
    }

    #[test]
    fn irq_names_of_the_device() {
        let q = |name| classify_irq_name(name, None);
        assert_eq!(q("virtio0-input.2"), Some(IrqName::Queue(QueueKind::Rx, 2)));
        assert_eq!(q("virtio0-output.2"), Some(IrqName::Queue(QueueKind::Tx, 2)));
        assert_eq!(q("mlx5_comp7@pci:0000:3b:00.0"), Some(IrqName::Queue(QueueKind::Combined, 7)));
        assert_eq!(q("virtio0-config"), None);
        assert_eq!(q("nvme0q1"), None);
    }

    #[test]
    fn resolve_maps_proc_and_sys_under_the_prefix() {
        let roots = Roots::new(Some(Path::new("/tmp/x")));
        assert_eq!(
            roots.resolve(Path::new("/proc/irq/5/smp_affinity_list")),
            PathBuf::from("/tmp/x/proc/irq/5/smp_affinity_list")
        );
        assert_eq!(roots.resolve(Path::new("/sys/class/net")), PathBuf::from("/tmp/x/sys/class/net"));
        assert_eq!(Roots::new(None).resolve(Path::new("/sys/class/net")), PathBuf::from("/sys/class/net"));
    }
}
