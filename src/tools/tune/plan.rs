//! The tuning plan: which file gets which value. Pure: computed from [`NicState`] and
//! [`CpuTopology`] so tests can assert it exactly.
//!
//! Policy:
//! - CPUs are ordered NUMA-local first (the NIC's node, then the other nodes in order).
//! - Queue IRQs: queue k's vectors (rx+tx, or rx-k and tx-k) go to the k-th CPU of that
//!   order, wrapping when there are more queues than CPUs.
//! - RPS, when the NIC has fewer rx queues (with IRQs) than CPUs: the CPUs left without an
//!   IRQ are dealt out to the queues, preferring a queue whose IRQ CPU is on the same node.
//!   Each queue's IRQ CPU hands its packets' protocol work to its share, so every core
//!   works. RFS (`rps_sock_flow_entries`, `rps_flow_cnt` = entries / queues) keeps each
//!   flow on the CPU that consumes it.
//! - No queue IRQs at all (veth and other virtual devices: receive runs on the sending
//!   CPU): RPS alone, the CPUs dealt out over the rx queues (one queue: all of them).
//! - XPS: the CPU at position p of the order transmits on tx queue p mod (tx queues),
//!   which pairs each IRQ CPU with its own queue. One tx queue: nothing to choose.

use super::inspect::{CpuTopology, NicState, QueueKind};
use crate::tools::cpuset::CpuSet;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const DEFAULT_RFS_ENTRIES: u64 = 32768;

#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Restrict to these CPUs (e.g. keep CPU 0 for the system); `None`: all online.
    pub cpus: Option<CpuSet>,
    pub rfs_entries: u64,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        PlanOptions { cpus: None, rfs_entries: DEFAULT_RFS_ENTRIES }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedWrite {
    /// Logical absolute path ("/proc/irq/24/smp_affinity_list"), mapped under the roots
    /// when applied.
    pub path: PathBuf,
    pub value: String,
    /// The current value as the kernel shows it, when known.
    pub current: Option<String>,
    /// The current value already means the same thing: applying skips it.
    pub unchanged: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TunePlan {
    /// CPUs in the order queues are given to them.
    pub cpu_order: Vec<u32>,
    /// IRQ CPU of each rx queue that has an IRQ.
    pub irq_cpu_of_rx_queue: BTreeMap<u32, u32>,
    pub writes: Vec<PlannedWrite>,
    /// What the plan does and why, and what it had to leave out.
    pub notes: Vec<String>,
}

fn cpu_write(path: String, planned: &CpuSet, current: Option<&CpuSet>, as_mask_of: Option<u32>) -> PlannedWrite {
    let render = |set: &CpuSet| match as_mask_of {
        Some(nr_cpu_ids) => set.to_hex_mask(nr_cpu_ids),
        None => set.to_list(),
    };
    PlannedWrite {
        path: PathBuf::from(path),
        value: render(planned),
        current: current.map(render),
        unchanged: current == Some(planned),
    }
}

fn number_write(path: String, planned: u64, current: Option<u64>) -> PlannedWrite {
    PlannedWrite {
        path: PathBuf::from(path),
        value: planned.to_string(),
        current: current.map(|c| c.to_string()),
        unchanged: current == Some(planned),
    }
}

/// CPUs NUMA-local to `node` first, then the other nodes' in node order, then CPUs no
/// node lists.
pub fn numa_cpu_order(usable: &CpuSet, topology: &CpuTopology, node: Option<u32>) -> Vec<u32> {
    let mut order: Vec<u32> = Vec::with_capacity(usable.len());
    let mut placed = CpuSet::new();
    let local = node.and_then(|n| topology.nodes.get(&n));
    let groups = local.into_iter().chain(topology.nodes.values());
    for group in groups {
        for cpu in usable.iter().filter(|c| group.contains(*c)) {
            if !placed.contains(cpu) {
                placed.insert(cpu);
                order.push(cpu);
            }
        }
    }
    order.extend(usable.iter().filter(|c| !placed.contains(*c)));
    order
}

pub fn make_plan(nic: &NicState, topology: &CpuTopology, options: &PlanOptions) -> Result<TunePlan, String> {
    let usable = match &options.cpus {
        Some(chosen) => CpuSet::from_ids(chosen.iter().filter(|c| topology.online.contains(*c))),
        None => topology.online.clone(),
    };
    if usable.is_empty() {
        return Err("none of the chosen CPUs is online".to_string());
    }
    let order = numa_cpu_order(&usable, topology, nic.numa_node);
    let cpu_count = order.len();
    let iface = &nic.iface;
    let mut plan = TunePlan { cpu_order: order.clone(), ..TunePlan::default() };
    let local_note = match nic.numa_node.and_then(|n| topology.nodes.get(&n).map(|cpus| (n, cpus))) {
        Some((node, cpus)) => format!("NUMA node {node} (CPUs {cpus}) first"),
        None => "no NUMA node for the device".to_string(),
    };
    let order_text: Vec<String> = order.iter().map(u32::to_string).collect();
    plan.notes.push(format!("CPU order: {} ({local_note})", order_text.join(",")));

    // Queue IRQs: the k-th distinct queue number goes to the k-th CPU.
    let queue_numbers: Vec<u32> = {
        let mut q: Vec<u32> = nic.queue_irqs.iter().map(|q| q.queue).collect();
        q.sort_unstable();
        q.dedup();
        q
    };
    for irq in &nic.queue_irqs {
        let position = queue_numbers.iter().position(|q| *q == irq.queue).unwrap_or(0);
        let Some(&cpu) = order.get(position % cpu_count) else { continue };
        if matches!(irq.kind, QueueKind::Combined | QueueKind::Rx) {
            plan.irq_cpu_of_rx_queue.insert(irq.queue, cpu);
        }
        if irq.affinity.is_none() {
            plan.notes.push(format!("IRQ {} ({}): no readable smp_affinity_list, left alone", irq.irq, irq.name));
            continue;
        }
        plan.writes.push(cpu_write(
            format!("/proc/irq/{}/smp_affinity_list", irq.irq),
            &CpuSet::from_ids([cpu]),
            irq.affinity.as_ref(),
            None,
        ));
    }
    if nic.queue_irqs.is_empty() {
        plan.notes.push(format!(
            "{iface} has no queue IRQs{}: receive work runs where packets arrive, so the plan uses RPS only",
            if nic.device_irqs.is_empty() { " (virtual device)" } else { " named per queue" }
        ));
    } else if queue_numbers.len() > cpu_count {
        plan.notes.push(format!("{} queues on {cpu_count} CPUs: queues share CPUs", queue_numbers.len()));
    }
    if !nic.other_irqs.is_empty() {
        let list: Vec<String> = nic.other_irqs.iter().map(|(irq, name)| format!("{irq} ({name})")).collect();
        plan.notes.push(format!("IRQs serving no queue left alone: {}", list.join(", ")));
    }

    plan_rps(nic, topology, options, &order, &mut plan);
    plan_xps(nic, topology, &order, &mut plan);
    Ok(plan)
}

fn plan_rps(nic: &NicState, topology: &CpuTopology, options: &PlanOptions, order: &[u32], plan: &mut TunePlan) {
    let rx_count = nic.rx_queues.len();
    if rx_count == 0 {
        plan.notes.push(format!("{} has no rx queues in sysfs: no RPS", nic.iface));
        return;
    }
    let mut rps: BTreeMap<u32, CpuSet> = nic.rx_queues.iter().map(|q| (q.index, CpuSet::new())).collect();
    if plan.irq_cpu_of_rx_queue.is_empty() {
        // No IRQ to start from: deal every CPU out over the queues.
        for (position, cpu) in order.iter().enumerate() {
            if let Some(queue) = nic.rx_queues.get(position % rx_count) {
                rps.entry(queue.index).or_default().insert(*cpu);
            }
        }
    } else {
        let irq_cpus: Vec<u32> = plan.irq_cpu_of_rx_queue.values().copied().collect();
        let spare: Vec<u32> = order.iter().copied().filter(|c| !irq_cpus.contains(c)).collect();
        for cpu in spare {
            let node = topology.node_of(cpu);
            // Fewest helpers first; a queue whose IRQ CPU shares the node wins over one that
            // does not; then the lower queue number.
            let target = plan
                .irq_cpu_of_rx_queue
                .iter()
                .filter(|(queue, _)| rps.contains_key(queue))
                .min_by_key(|(queue, irq_cpu)| {
                    let same_node = node.is_some() && topology.node_of(**irq_cpu) == node;
                    (!same_node, rps.get(queue).map_or(0, CpuSet::len), **queue)
                })
                .map(|(queue, _)| *queue);
            if let Some(queue) = target {
                rps.entry(queue).or_default().insert(cpu);
            }
        }
    }
    let rps_used = rps.values().any(|set| !set.is_empty());
    if rps_used {
        plan.notes.push(match plan.irq_cpu_of_rx_queue.is_empty() {
            true => format!("RPS: {} rx queue(s) spread over {} CPU(s)", rx_count, order.len()),
            false => format!(
                "RPS: {} rx queue(s) with IRQs for {} CPUs: the CPUs without an IRQ take protocol work from a queue",
                plan.irq_cpu_of_rx_queue.len(),
                order.len()
            ),
        });
    } else {
        plan.notes.push("RPS off: every CPU has a queue IRQ".to_string());
    }
    let per_queue_flows = if rps_used { options.rfs_entries / rx_count as u64 } else { 0 };
    for queue in &nic.rx_queues {
        let dir = format!("/sys/class/net/{}/queues/rx-{}", nic.iface, queue.index);
        match &queue.rps_cpus {
            Some(current) => {
                let planned = rps.get(&queue.index).cloned().unwrap_or_default();
                plan.writes.push(cpu_write(
                    format!("{dir}/rps_cpus"),
                    &planned,
                    Some(current),
                    Some(topology.nr_cpu_ids),
                ));
            }
            None => plan.notes.push(format!("rx-{}: no rps_cpus (kernel without RPS?)", queue.index)),
        }
        if queue.rps_flow_cnt.is_some() {
            plan.writes.push(number_write(format!("{dir}/rps_flow_cnt"), per_queue_flows, queue.rps_flow_cnt));
        }
    }
    if rps_used {
        match nic.rps_sock_flow_entries {
            Some(current) => {
                plan.notes
                    .push(format!("RFS: {} socket flow entries, {per_queue_flows} per rx queue", options.rfs_entries));
                plan.writes.push(number_write(
                    "/proc/sys/net/core/rps_sock_flow_entries".to_string(),
                    options.rfs_entries,
                    Some(current),
                ));
            }
            None => plan.notes.push("no /proc/sys/net/core/rps_sock_flow_entries: RFS unavailable".to_string()),
        }
    }
}

fn plan_xps(nic: &NicState, topology: &CpuTopology, order: &[u32], plan: &mut TunePlan) {
    let tx_count = nic.tx_queues.len();
    if tx_count <= 1 {
        plan.notes.push(format!("XPS: {tx_count} tx queue(s), nothing to map"));
        return;
    }
    let mut xps: BTreeMap<u32, CpuSet> = nic.tx_queues.iter().map(|q| (q.index, CpuSet::new())).collect();
    for (position, cpu) in order.iter().enumerate() {
        if let Some(queue) = nic.tx_queues.get(position % tx_count) {
            xps.entry(queue.index).or_default().insert(*cpu);
        }
    }
    plan.notes.push(format!("XPS: CPU at position p of the order sends on tx-(p mod {tx_count})"));
    for queue in &nic.tx_queues {
        let path = format!("/sys/class/net/{}/queues/tx-{}/xps_cpus", nic.iface, queue.index);
        match &queue.xps_cpus {
            Some(current) => {
                let planned = xps.get(&queue.index).cloned().unwrap_or_default();
                plan.writes.push(cpu_write(path, &planned, Some(current), Some(topology.nr_cpu_ids)));
            }
            None => plan.notes.push(format!("tx-{}: no xps_cpus (kernel without XPS?)", queue.index)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::inspect::{QueueIrq, RxQueue, TxQueue};
    use super::*;

    fn topology_two_nodes() -> CpuTopology {
        CpuTopology {
            online: CpuSet::parse_list("0-7").unwrap(),
            nr_cpu_ids: 8,
            nodes: [(0, CpuSet::parse_list("0-3").unwrap()), (1, CpuSet::parse_list("4-7").unwrap())].into(),
        }
    }

    fn nic(queues: u32, irq_kinds: &[QueueKind], numa_node: Option<u32>) -> NicState {
        let mut irq = 100;
        let mut queue_irqs = Vec::new();
        for queue in 0..queues {
            for kind in irq_kinds {
                irq += 1;
                queue_irqs.push(QueueIrq {
                    irq,
                    kind: *kind,
                    queue,
                    name: format!("eth0-{}-{queue}", kind.label()),
                    affinity: Some(CpuSet::parse_list("0-7").unwrap()),
                });
            }
        }
        NicState {
            iface: "eth0".into(),
            numa_node,
            rx_queues: (0..queues)
                .map(|index| RxQueue { index, rps_cpus: Some(CpuSet::new()), rps_flow_cnt: Some(0) })
                .collect(),
            tx_queues: (0..queues).map(|index| TxQueue { index, xps_cpus: Some(CpuSet::new()) }).collect(),
            queue_irqs,
            rps_sock_flow_entries: Some(0),
            ..NicState::default()
        }
    }

    fn value_of<'p>(plan: &'p TunePlan, path: &str) -> Option<&'p str> {
        plan.writes.iter().find(|w| w.path.as_path() == std::path::Path::new(path)).map(|w| w.value.as_str())
    }

    #[test]
    fn spare_cpus_help_queues_on_their_own_node() {
        // 6 queues, device on node 0 (CPUs 0-3): queues 4 and 5 land on node 1 (CPUs 4, 5),
        // and the spare CPUs 6 and 7 (node 1) must help them, not queues 0 and 1.
        let plan = make_plan(&nic(6, &[QueueKind::Combined], Some(0)), &topology_two_nodes(), &PlanOptions::default())
            .unwrap();
        assert_eq!(plan.cpu_order, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(plan.irq_cpu_of_rx_queue.values().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), Some("00"));
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/rx-4/rps_cpus"), Some("40"));
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/rx-5/rps_cpus"), Some("80"));
        // 32768 / 6 queues.
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt"), Some("5461"));
    }

    #[test]
    fn separate_rx_and_tx_vectors_of_a_queue_share_a_cpu() {
        let plan = make_plan(
            &nic(2, &[QueueKind::Rx, QueueKind::Tx], Some(1)),
            &topology_two_nodes(),
            &PlanOptions::default(),
        )
        .unwrap();
        let irq_writes: Vec<(String, String)> = plan
            .writes
            .iter()
            .filter(|w| w.path.starts_with("/proc/irq"))
            .map(|w| (w.path.display().to_string(), w.value.clone()))
            .collect();
        let expected = [(101, "4"), (102, "4"), (103, "5"), (104, "5")]
            .map(|(irq, cpu)| (format!("/proc/irq/{irq}/smp_affinity_list"), cpu.to_string()));
        assert_eq!(irq_writes, expected.to_vec());
    }

    #[test]
    fn as_many_queues_as_cpus_turns_rps_off() {
        let mut nic = nic(8, &[QueueKind::Combined], None);
        nic.rx_queues[3].rps_cpus = Some(CpuSet::from_ids([1, 2]));
        let plan = make_plan(&nic, &topology_two_nodes(), &PlanOptions::default()).unwrap();
        let rx3 = plan.writes.iter().find(|w| w.path.ends_with("rx-3/rps_cpus")).unwrap();
        assert_eq!((rx3.value.as_str(), rx3.current.as_deref(), rx3.unchanged), ("00", Some("06"), false));
        assert!(plan.writes.iter().all(|w| !w.path.ends_with("rps_sock_flow_entries")));
        assert!(plan.notes.iter().any(|n| n.contains("RPS off")));
        // XPS: one CPU per tx queue.
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/tx-7/xps_cpus"), Some("80"));
    }

    #[test]
    fn cpu_restriction_and_offline_choice() {
        let options = PlanOptions { cpus: Some(CpuSet::parse_list("2-3,9").unwrap()), ..PlanOptions::default() };
        let plan = make_plan(&nic(1, &[QueueKind::Combined], Some(0)), &topology_two_nodes(), &options).unwrap();
        assert_eq!(plan.cpu_order, vec![2, 3]);
        assert_eq!(value_of(&plan, "/proc/irq/101/smp_affinity_list"), Some("2"));
        assert_eq!(value_of(&plan, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), Some("08"));
        let offline = PlanOptions { cpus: Some(CpuSet::from_ids([9])), ..PlanOptions::default() };
        assert!(make_plan(&nic(1, &[QueueKind::Combined], None), &topology_two_nodes(), &offline).is_err());
    }
}
