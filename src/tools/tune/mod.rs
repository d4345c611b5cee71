//! `picket tune IFACE`: shows how a NIC's queues, IRQs, RPS/RFS and XPS are spread over the
//! cores, then applies a plan that puts one queue per core, NUMA-local cores first (see
//! [`plan`] for the policy). `--dry-run` prints every write instead of doing it;
//! `--sysfs-root DIR` runs against a fake /sys + /proc tree.

pub mod inspect;
pub mod plan;

use crate::tools::cpuset::CpuSet;
use inspect::{CpuTopology, NicState, Roots};
use plan::{PlanOptions, PlannedWrite, TunePlan, DEFAULT_RFS_ENTRIES};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct TuneArgs {
    /// The interface to tune (eth0, ens1f0, ...).
    #[arg(value_name = "IFACE")]
    pub iface: String,
    /// Print every write (file and value) without writing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only show the current settings.
    #[arg(long)]
    pub show: bool,
    /// Use only these CPUs (cpulist, e.g. 2-15 to keep 0-1 for the system).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// RFS socket flow table size (/proc/sys/net/core/rps_sock_flow_entries).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RFS_ENTRIES)]
    pub rfs_entries: u64,
    /// Prefix for the /sys and /proc paths (tests, chroots): DIR/sys/..., DIR/proc/....
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

pub fn run_tune(args: &TuneArgs) -> Result<(), String> {
    let mut out = io::stdout().lock();
    tune(args, &mut out)
}

/// [`run_tune`] writing its report to `out`.
pub fn tune(args: &TuneArgs, out: &mut dyn Write) -> Result<(), String> {
    let changes_system = !args.dry_run && !args.show && args.sysfs_root.is_none();
    if changes_system && !running_as_root() {
        return Err(format!(
            "picket tune {}: changing IRQ affinity, RPS and XPS needs root; run it as root, or add --dry-run to see the plan",
            args.iface
        ));
    }
    if !(1..=1 << 30).contains(&args.rfs_entries) {
        return Err(format!("--rfs-entries {} out of range (1 to 2^30)", args.rfs_entries));
    }
    let cpus = match &args.cpus {
        Some(list) => Some(CpuSet::parse_list(list).map_err(|e| format!("--cpus: {e}"))?),
        None => None,
    };
    let roots = Roots::new(args.sysfs_root.as_deref());
    let topology = inspect::read_topology(&roots)?;
    let nic = inspect::read_nic(&roots, &args.iface)?;
    let io_err = |e: io::Error| format!("stdout: {e}");
    write_state(out, &nic, &topology).map_err(io_err)?;
    if args.show {
        return Ok(());
    }
    let plan = plan::make_plan(&nic, &topology, &PlanOptions { cpus, rfs_entries: args.rfs_entries })?;
    if inspect::irqbalance_running(&roots) && !nic.queue_irqs.is_empty() {
        writeln!(out, "\nwarning: irqbalance is running and will move these IRQs again; stop it, or ban them (irqbalance --banirq=N)")
            .map_err(io_err)?;
    }
    write_plan(out, &plan).map_err(io_err)?;
    if args.dry_run {
        writeln!(out, "dry run: nothing written").map_err(io_err)?;
        return Ok(());
    }
    apply(&roots, &plan, out)
}

/// The effective uid from /proc/self/status, so no FFI is needed.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| status_says_root(&status))
}

/// "Uid:\treal\teffective\tsaved\tfs": the effective one decides.
fn status_says_root(status: &str) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_ascii_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

pub fn write_state(out: &mut dyn Write, nic: &NicState, topology: &CpuTopology) -> io::Result<()> {
    let node = match nic.numa_node {
        Some(n) => format!("NUMA node {n}{}", topology.nodes.get(&n).map_or(String::new(), |c| format!(" (CPUs {c})"))),
        None => "no NUMA node".to_string(),
    };
    writeln!(
        out,
        "{}: driver {}, {node}, {} rx / {} tx queues",
        nic.iface,
        nic.driver.as_deref().unwrap_or("-"),
        nic.rx_queues.len(),
        nic.tx_queues.len()
    )?;
    let nodes: Vec<String> = topology.nodes.iter().map(|(n, c)| format!("node{n} {c}")).collect();
    writeln!(out, "online CPUs {}{}{}", topology.online, if nodes.is_empty() { "" } else { "; " }, nodes.join("; "))?;
    writeln!(out, "rps_sock_flow_entries {}", opt(nic.rps_sock_flow_entries))?;
    writeln!(out)?;
    if nic.queue_irqs.is_empty() {
        writeln!(out, "queue IRQs: none found")?;
    } else {
        writeln!(out, "{:<6} {:<6} {:<6} {:<24} affinity", "IRQ", "queue", "dir", "name")?;
        for q in &nic.queue_irqs {
            writeln!(
                out,
                "{:<6} {:<6} {:<6} {:<24} {}",
                q.irq,
                q.queue,
                q.kind.label(),
                q.name,
                opt(q.affinity.as_ref())
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "{:<8} {:<18} rps_flow_cnt", "queue", "rps_cpus")?;
    for q in &nic.rx_queues {
        let mask = q.rps_cpus.as_ref().map(|c| {
            format!(
                "{} ({})",
                c.to_hex_mask(topology.nr_cpu_ids),
                if c.is_empty() { "none".to_string() } else { c.to_list() }
            )
        });
        writeln!(out, "{:<8} {:<18} {}", format!("rx-{}", q.index), opt(mask), opt(q.rps_flow_cnt))?;
    }
    writeln!(out, "{:<8} xps_cpus", "queue")?;
    for q in &nic.tx_queues {
        let mask = q.xps_cpus.as_ref().map(|c| {
            format!(
                "{} ({})",
                c.to_hex_mask(topology.nr_cpu_ids),
                if c.is_empty() { "none".to_string() } else { c.to_list() }
            )
        });
        writeln!(out, "{:<8} {}", format!("tx-{}", q.index), opt(mask))?;
    }
    Ok(())
}

/// One line per write: `write PATH VALUE`, with the current value when it differs.
pub fn format_write(write: &PlannedWrite) -> String {
    let mut line = format!("write {} {}", write.path.display(), write.value);
    match (&write.current, write.unchanged) {
        (_, true) => line.push_str("   (unchanged)"),
        (Some(current), false) => line.push_str(&format!("   (now {current})")),
        (None, false) => {}
    }
    line
}

pub fn write_plan(out: &mut dyn Write, plan: &TunePlan) -> io::Result<()> {
    writeln!(out, "\nplan:")?;
    for note in &plan.notes {
        writeln!(out, "  {note}")?;
    }
    for write in &plan.writes {
        writeln!(out, "{}", format_write(write))?;
    }
    Ok(())
}

/// Writes every changed value; carries on past failures (a kernel-managed IRQ refuses new
/// affinity) and reports them all at the end.
pub fn apply(roots: &Roots, plan: &TunePlan, out: &mut dyn Write) -> Result<(), String> {
    let mut failures = Vec::new();
    let mut written = 0;
    for write in plan.writes.iter().filter(|w| !w.unchanged) {
        let file = roots.resolve(&write.path);
        // No create: a missing file means the kernel lacks the feature, not a file to make.
        let result = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .and_then(|mut f| f.write_all(write.value.as_bytes()));
        match result {
            Ok(()) => written += 1,
            Err(e) => failures.push(format!("{}: {e}", write.path.display())),
        }
    }
    let _ = writeln!(out, "wrote {written} value(s), {} failed", failures.len());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("picket tune: {} write(s) failed:\n  {}", failures.len(), failures.join("\n  ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_decides_root() {
        assert!(status_says_root("Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t0\n"));
        assert!(!status_says_root("Uid:\t0\t1000\t1000\t1000\n"));
        assert!(!status_says_root("Uid:\n"));
        assert!(!status_says_root(""));
    }
}
