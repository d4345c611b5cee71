//! `picket top` and `picket tune` against fixture /proc and /sys trees, plus a smoke run
//! against this machine's real ones (parsing only, never writing).

use picket::tools::cpuset::CpuSet;
use picket::tools::snapshot::{write_snapshot_at, IpsSnapshot, WorkerSnapshot};
use picket::tools::top::sample::{read_sample, Sources};
use picket::tools::top::{table, CpuLoad, TopState, WorkerView};
use picket::tools::tune::inspect::{self, Roots};
use picket::tools::tune::plan::{make_plan, PlanOptions};
use picket::tools::tune::{tune, TuneArgs};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn put(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn read(root: &Path, relative: &str) -> String {
    fs::read_to_string(root.join(relative)).unwrap().trim().to_string()
}

// ---------------------------------------------------------------- top

const SOFTIRQS_1: &str = "                    CPU0       CPU1       CPU2\n\
          HI:          0          0          0\n\
      NET_TX:         10         20          0\n\
      NET_RX:       1000       2000          0\n\
     TASKLET:          5          5          5\n";
const SOFTIRQS_2: &str = "                    CPU0       CPU1       CPU2\n\
          HI:          0          0          0\n\
      NET_TX:         12         20          4\n\
      NET_RX:       1500       2000        300\n\
     TASKLET:          5          5          5\n";

fn top_fixture(root: &Path, stat: &str, softirqs: &str, eth0: [u64; 6]) {
    put(root, "proc/stat", stat);
    put(root, "proc/softirqs", softirqs);
    let names = ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped"];
    for (name, value) in names.iter().zip(eth0) {
        put(root, &format!("sys/class/net/eth0/statistics/{name}"), &format!("{value}\n"));
        put(root, &format!("sys/class/net/lo/statistics/{name}"), "7\n");
    }
}

fn sources(root: &Path, stats: Option<PathBuf>) -> Sources {
    Sources { proc_root: root.join("proc"), sys_root: root.join("sys"), stats_file: stats, ifaces: Vec::new() }
}

#[test]
fn top_deltas_give_exact_percentages_and_rates() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let stats_file = root.join("picket-stats.json");
    // CPU3 goes offline between the samples, CPU2 comes online: no delta for CPU2, no row for CPU3.
    let stat_1 = "cpu  1000 0 1000 1000 0 0 0 0 0 0\n\
                  cpu0 100 10 50 800 40 10 30 0 0 0\n\
                  cpu1 0 0 0 1000 0 0 0 0 0 0\n\
                  cpu3 5 5 5 5 5 5 5 5 5 5\n\
                  intr 1 2 3\n";
    // cpu0 over the interval: user+nice 100, system 50, irq 10, softirq 30, idle+iowait 10,
    // total 200 -> 50 / 25 / 5 / 15 / 5 %. cpu1: 400 ticks, all idle. An extra 11th column is ignored.
    let stat_2 = "cpu  1200 0 1200 1200 0 0 0 0 0 0\n\
                  cpu0 190 20 100 805 45 20 60 0 0 0 77\n\
                  cpu1 0 0 0 1400 0 0 0 0 0 0 77\n\
                  cpu2 1 1 1 1 1 1 1 1 0 0\n";
    top_fixture(root, stat_1, SOFTIRQS_1, [100, 50, 10_000, 5_000, 3, 0]);
    write_snapshot_at(
        &stats_file,
        1_000_000_000,
        &[WorkerSnapshot {
            name: "W#01".into(),
            packets: 100,
            bytes: 64_000,
            drops: 1,
            busy_ns: 0,
            ips: Some(IpsSnapshot { accepted: 90, blocked: 10, ..Default::default() }),
        }],
    )
    .unwrap();
    let mut state = TopState::new(read_sample(&sources(root, Some(stats_file.clone()))).unwrap());

    top_fixture(root, stat_2, SOFTIRQS_2, [300, 60, 30_000, 6_000, 7, 1]);
    // Snapshot written 2 s later: rates use the snapshot's own clock, not the 1 s sample.
    write_snapshot_at(
        &stats_file,
        3_000_000_000,
        &[WorkerSnapshot {
            name: "W#01".into(),
            packets: 2100,
            bytes: 1_064_000,
            drops: 5,
            busy_ns: 500_000_000,
            ips: Some(IpsSnapshot { accepted: 1990, blocked: 110, rejected: 4, fail_open: 3, tx_errors: 1 }),
        }],
    )
    .unwrap();
    let second = read_sample(&sources(root, Some(stats_file.clone()))).unwrap();
    let view = state.advance(second, Duration::from_secs(1), 3_500_000_000);

    let cpu0 = &view.cpus[0];
    assert_eq!(
        *cpu0,
        CpuLoad {
            cpu: Some(0),
            user: Some(50.0),
            system: Some(25.0),
            irq: Some(5.0),
            softirq: Some(15.0),
            idle: Some(5.0),
            net_rx_per_sec: Some(500.0),
            net_tx_per_sec: Some(2.0),
        }
    );
    assert_eq!(
        (view.cpus[1].idle, view.cpus[1].user, view.cpus[1].net_rx_per_sec),
        (Some(100.0), Some(0.0), Some(0.0))
    );
    assert_eq!(view.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), vec![Some(0), Some(1), Some(2)]);
    assert_eq!((view.cpus[2].idle, view.cpus[2].net_rx_per_sec), (None, Some(300.0)));
    let all = view.all.as_ref().unwrap();
    assert_eq!((all.user, all.system, all.idle), (Some(100.0 / 3.0), Some(100.0 / 3.0), Some(100.0 / 3.0)));
    assert_eq!((all.net_rx_per_sec, all.net_tx_per_sec), (Some(800.0), Some(6.0)));

    // lo is left out unless asked for.
    assert_eq!(view.ifaces.len(), 1);
    let eth0 = &view.ifaces[0];
    assert_eq!(eth0.name, "eth0");
    assert_eq!(
        (eth0.rx_packets_per_sec, eth0.rx_bits_per_sec, eth0.rx_drops_per_sec),
        (Some(200.0), Some(160_000.0), Some(4.0))
    );
    assert_eq!(
        (eth0.tx_packets_per_sec, eth0.tx_bits_per_sec, eth0.tx_drops_per_sec),
        (Some(10.0), Some(8_000.0), Some(1.0))
    );
    assert_eq!(eth0.total_drops, 8);

    let WorkerView::Workers { rows, age_secs, stale } = &view.workers else { panic!("{:?}", view.workers) };
    assert_eq!((*age_secs, *stale), (0.5, false));
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].packets_per_sec, rows[0].bits_per_sec, rows[0].drops_per_sec),
        (Some(1000.0), Some(4_000_000.0), Some(2.0))
    );
    assert_eq!((rows[0].busy, rows[0].packets, rows[0].drops), (Some(25.0), 2100, 5));
    // Inline verdicts: rates over the snapshots' 2 s.
    let ips = rows[0].ips.as_ref().unwrap();
    assert_eq!((ips.accepted_per_sec, ips.blocked_per_sec, ips.rejected_per_sec), (Some(950.0), Some(50.0), Some(2.0)));
    assert_eq!(view.anomalies, 0);

    // The plain tables (what --once prints) have the per-core table with these numbers.
    let mut out = Vec::new();
    table::write_view(&mut out, &view).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Per-core load over 1.00 s");
    assert_eq!(lines[1], "CPU  usr%  sys%  irq%  soft%  idle%  NET_RX/s  NET_TX/s");
    assert_eq!(lines[2], "all  33.3  33.3   0.0    0.0   33.3       800         6");
    assert_eq!(lines[3], "0    50.0  25.0   5.0   15.0    5.0       500         2");
    assert_eq!(lines[4], "1     0.0   0.0   0.0    0.0  100.0         0         0");
    assert_eq!(lines[5], "2       -     -     -      -      -       300         4");
    assert!(text.contains("eth0        200      160k          4        10     8.00k          1"), "{text}");
    assert!(text.contains("W#01    1.00k  4.00M       2   25.0     2100      5"), "{text}");
    assert!(text.contains("Inline verdicts"), "{text}");
    assert!(
        text.contains("W#01         950       50         2      1990      110         4          3          1"),
        "{text}"
    );
}

#[test]
fn top_worker_rates_survive_an_unchanged_snapshot_and_report_stale_or_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let stats_file = root.join("picket-stats.json");
    top_fixture(root, "cpu 1 1 1 1\ncpu0 1 1 1 1\n", SOFTIRQS_1, [0; 6]);
    let missing = read_sample(&sources(root, Some(stats_file.clone()))).unwrap();
    let mut state = TopState::new(missing.clone());
    let view = state.advance(missing, Duration::from_secs(1), 0);
    assert_eq!(view.workers, WorkerView::Missing(stats_file.clone()));

    let w = |packets| [WorkerSnapshot { name: "W#01".into(), packets, bytes: 0, drops: 0, busy_ns: 0, ips: None }];
    write_snapshot_at(&stats_file, 10_000_000_000, &w(0)).unwrap();
    let s = |st: &Path| read_sample(&sources(root, Some(st.to_path_buf()))).unwrap();
    state.advance(s(&stats_file), Duration::from_secs(1), 10_000_000_000);
    write_snapshot_at(&stats_file, 11_000_000_000, &w(500)).unwrap();
    state.advance(s(&stats_file), Duration::from_secs(1), 11_000_000_000);
    // The file was not rewritten during this interval: the last two snapshots still give the rate.
    let view = state.advance(s(&stats_file), Duration::from_secs(1), 12_000_000_000);
    let WorkerView::Workers { rows, .. } = &view.workers else { panic!() };
    assert_eq!(rows[0].packets_per_sec, Some(500.0));
    // Much later, picket has stopped writing it.
    let view = state.advance(s(&stats_file), Duration::from_secs(1), 60_000_000_000);
    assert!(matches!(view.workers, WorkerView::Workers { stale: true, .. }));

    fs::write(&stats_file, "not json").unwrap();
    let view = state.advance(s(&stats_file), Duration::from_secs(1), 0);
    assert!(matches!(view.workers, WorkerView::Unreadable(_)));
}

#[test]
fn top_once_prints_the_per_core_table_from_fixture_roots() {
    let dir = tempfile::tempdir().unwrap();
    top_fixture(dir.path(), "cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\n", SOFTIRQS_1, [0; 6]);
    let view = picket::tools::top::sample_once(&sources(dir.path(), None), Duration::from_millis(10)).unwrap();
    let mut out = Vec::new();
    table::write_view(&mut out, &view).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("CPU  usr%  sys%  irq%  soft%  idle%  NET_RX/s  NET_TX/s\n"), "{text}");
    // Files unchanged between the samples: no time passed for the CPUs, rates are zero.
    assert!(text.contains("\n0       -     -     -      -      -         0         0\n"), "{text}");
    assert!(text.contains("\n1       -"), "{text}");
    assert!(text.contains("no --stats file given"), "{text}");
    // A missing /proc/stat is an error, not an empty table.
    let empty = tempfile::tempdir().unwrap();
    assert!(read_sample(&sources(empty.path(), None)).is_err());
}

#[test]
fn top_args_parse_like_the_subcommand_will() {
    use clap::Parser;
    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        top: picket::tools::TopArgs,
    }
    let w = Wrapper::try_parse_from([
        "top",
        "--once",
        "--interval",
        "0.5",
        "--proc-root",
        "/x/proc",
        "--stats",
        "/l/picket-stats.json",
        "-i",
        "eth1",
    ])
    .unwrap();
    assert!(w.top.once);
    assert_eq!(w.top.interval, 0.5);
    assert_eq!(w.top.sys_root, PathBuf::from("/sys"));
    assert_eq!(w.top.ifaces, vec!["eth1".to_string()]);
    let bad = Wrapper::try_parse_from(["top", "--interval", "0"]).unwrap();
    assert!(picket::tools::run_top(&bad.top).is_err());
}

// ---------------------------------------------------------------- tune

/// 8 CPUs on two NUMA nodes (0-3, 4-7); eth0 on node 1 with 4 combined queues (IRQs 41-44)
/// and a link IRQ (40); veth0 with one queue and no IRQs.
fn tune_fixture(root: &Path) {
    put(root, "sys/devices/system/cpu/online", "0-7\n");
    put(root, "sys/devices/system/cpu/possible", "0-7\n");
    put(root, "sys/devices/system/node/node0/cpulist", "0-3\n");
    put(root, "sys/devices/system/node/node1/cpulist", "4-7\n");
    put(root, "sys/devices/system/node/possible", "0-1\n");
    put(root, "sys/class/net/eth0/device/numa_node", "1\n");
    for irq in 40..=44 {
        put(root, &format!("sys/class/net/eth0/device/msi_irqs/{irq}"), "msix\n");
        put(root, &format!("proc/irq/{irq}/smp_affinity_list"), "0-7\n");
    }
    for q in 0..4 {
        put(root, &format!("sys/class/net/eth0/queues/rx-{q}/rps_cpus"), "00\n");
        put(root, &format!("sys/class/net/eth0/queues/rx-{q}/rps_flow_cnt"), "0\n");
        put(root, &format!("sys/class/net/eth0/queues/tx-{q}/xps_cpus"), "00\n");
    }
    put(root, "sys/class/net/veth0/queues/rx-0/rps_cpus", "00\n");
    put(root, "sys/class/net/veth0/queues/rx-0/rps_flow_cnt", "0\n");
    put(root, "sys/class/net/veth0/queues/tx-0/xps_cpus", "00\n");
    put(root, "proc/sys/net/core/rps_sock_flow_entries", "0\n");
    let cols = "0          0          0          0          0          0          0          0";
    let mut interrupts =
        String::from("            CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7\n");
    interrupts.push_str(&format!("  0:         {cols}   IO-APIC   2-edge      timer\n"));
    interrupts.push_str(&format!(" 40:         {cols}  IR-PCI-MSIX-0000:3b:00.0    0-edge      eth0\n"));
    for q in 0..4 {
        interrupts.push_str(&format!(
            " {}:         {cols}  IR-PCI-MSIX-0000:3b:00.0    {}-edge      eth0-TxRx-{q}\n",
            41 + q,
            q + 1
        ));
    }
    // Another port of the same card: must not be taken for eth0's.
    interrupts.push_str(&format!(" 50:         {cols}  IR-PCI-MSIX-0000:3b:00.1    1-edge      eth01-TxRx-0\n"));
    interrupts.push_str(" NMI:          0          0          0          0          0          0          0          0   Non-maskable interrupts\n");
    interrupts.push_str(" ERR:          0\n");
    put(root, "proc/interrupts", &interrupts);
}

const ETH0_WRITES: &[&str] = &[
    "write /proc/irq/41/smp_affinity_list 4   (now 0-7)",
    "write /proc/irq/42/smp_affinity_list 5   (now 0-7)",
    "write /proc/irq/43/smp_affinity_list 6   (now 0-7)",
    "write /proc/irq/44/smp_affinity_list 7   (now 0-7)",
    "write /sys/class/net/eth0/queues/rx-0/rps_cpus 01   (now 00)",
    "write /sys/class/net/eth0/queues/rx-0/rps_flow_cnt 8192   (now 0)",
    "write /sys/class/net/eth0/queues/rx-1/rps_cpus 02   (now 00)",
    "write /sys/class/net/eth0/queues/rx-1/rps_flow_cnt 8192   (now 0)",
    "write /sys/class/net/eth0/queues/rx-2/rps_cpus 04   (now 00)",
    "write /sys/class/net/eth0/queues/rx-2/rps_flow_cnt 8192   (now 0)",
    "write /sys/class/net/eth0/queues/rx-3/rps_cpus 08   (now 00)",
    "write /sys/class/net/eth0/queues/rx-3/rps_flow_cnt 8192   (now 0)",
    "write /proc/sys/net/core/rps_sock_flow_entries 32768   (now 0)",
    "write /sys/class/net/eth0/queues/tx-0/xps_cpus 11   (now 00)",
    "write /sys/class/net/eth0/queues/tx-1/xps_cpus 22   (now 00)",
    "write /sys/class/net/eth0/queues/tx-2/xps_cpus 44   (now 00)",
    "write /sys/class/net/eth0/queues/tx-3/xps_cpus 88   (now 00)",
];

fn tune_args(root: &Path, iface: &str, dry_run: bool) -> TuneArgs {
    TuneArgs {
        iface: iface.into(),
        dry_run,
        show: false,
        cpus: None,
        rfs_entries: 32768,
        sysfs_root: Some(root.to_path_buf()),
    }
}

fn run(args: &TuneArgs) -> (Result<(), String>, String) {
    let mut out = Vec::new();
    let result = tune(args, &mut out);
    (result, String::from_utf8(out).unwrap())
}

#[test]
fn tune_reads_the_nic_and_plans_one_queue_per_numa_local_core() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let roots = Roots::new(Some(dir.path()));
    let topology = inspect::read_topology(&roots).unwrap();
    assert_eq!(topology.nr_cpu_ids, 8);
    let nic = inspect::read_nic(&roots, "eth0").unwrap();
    assert_eq!(nic.numa_node, Some(1));
    assert_eq!((nic.rx_queues.len(), nic.tx_queues.len()), (4, 4));
    assert_eq!(nic.device_irqs, vec![40, 41, 42, 43, 44]);
    assert_eq!(
        nic.queue_irqs.iter().map(|q| (q.irq, q.queue)).collect::<Vec<_>>(),
        vec![(41, 0), (42, 1), (43, 2), (44, 3)]
    );
    assert_eq!(nic.other_irqs, vec![(40, "eth0".to_string())]);

    let plan = make_plan(&nic, &topology, &PlanOptions::default()).unwrap();
    assert_eq!(plan.cpu_order, vec![4, 5, 6, 7, 0, 1, 2, 3]);
    let writes: Vec<String> = plan.writes.iter().map(picket::tools::tune::format_write).collect();
    assert_eq!(writes, ETH0_WRITES);
}

#[test]
fn tune_dry_run_prints_every_write_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let (result, out) = run(&tune_args(dir.path(), "eth0", true));
    result.unwrap();
    let write_lines: Vec<&str> = out.lines().filter(|l| l.starts_with("write ")).collect();
    assert_eq!(write_lines, ETH0_WRITES);
    assert!(out.contains("eth0: driver -, NUMA node 1 (CPUs 4-7), 4 rx / 4 tx queues"), "{out}");
    assert!(out.contains("41     0      rx+tx  eth0-TxRx-0              0-7"), "{out}");
    assert!(out.contains("IRQs serving no queue left alone: 40 (eth0)"), "{out}");
    assert!(out.trim_end().ends_with("dry run: nothing written"), "{out}");
    assert_eq!(read(dir.path(), "proc/irq/41/smp_affinity_list"), "0-7");
    assert_eq!(read(dir.path(), "sys/class/net/eth0/queues/rx-0/rps_cpus"), "00");
    assert_eq!(read(dir.path(), "proc/sys/net/core/rps_sock_flow_entries"), "0");
}

#[test]
fn tune_applies_under_sysfs_root_and_a_second_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let (result, out) = run(&tune_args(dir.path(), "eth0", false));
    result.unwrap();
    assert!(out.contains("wrote 17 value(s), 0 failed"), "{out}");
    assert_eq!(read(dir.path(), "proc/irq/41/smp_affinity_list"), "4");
    assert_eq!(read(dir.path(), "proc/irq/44/smp_affinity_list"), "7");
    assert_eq!(read(dir.path(), "proc/irq/40/smp_affinity_list"), "0-7");
    assert_eq!(read(dir.path(), "sys/class/net/eth0/queues/rx-3/rps_cpus"), "08");
    assert_eq!(read(dir.path(), "sys/class/net/eth0/queues/rx-3/rps_flow_cnt"), "8192");
    assert_eq!(read(dir.path(), "sys/class/net/eth0/queues/tx-1/xps_cpus"), "22");
    assert_eq!(read(dir.path(), "proc/sys/net/core/rps_sock_flow_entries"), "32768");

    let (result, out) = run(&tune_args(dir.path(), "eth0", false));
    result.unwrap();
    assert!(out.contains("wrote 0 value(s), 0 failed"), "{out}");
    assert_eq!(out.lines().filter(|l| l.ends_with("(unchanged)")).count(), 17, "{out}");
}

#[test]
fn tune_single_queue_veth_uses_rps_only_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let (result, out) = run(&tune_args(dir.path(), "veth0", true));
    result.unwrap();
    let write_lines: Vec<&str> = out.lines().filter(|l| l.starts_with("write ")).collect();
    assert_eq!(
        write_lines,
        [
            "write /sys/class/net/veth0/queues/rx-0/rps_cpus ff   (now 00)",
            "write /sys/class/net/veth0/queues/rx-0/rps_flow_cnt 32768   (now 0)",
            "write /proc/sys/net/core/rps_sock_flow_entries 32768   (now 0)",
        ]
    );
    assert!(out.contains("veth0 has no queue IRQs (virtual device): receive work runs where packets arrive, so the plan uses RPS only"), "{out}");
    assert!(out.contains("XPS: 1 tx queue(s), nothing to map"), "{out}");
    assert!(out.contains("queue IRQs: none found"), "{out}");
}

#[test]
fn tune_refuses_bad_input_clearly() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let (result, _) = run(&tune_args(dir.path(), "eth9", true));
    assert!(result.unwrap_err().contains("no interface eth9"));
    let (result, _) = run(&tune_args(dir.path(), "../../etc", true));
    assert!(result.is_err());
    let mut args = tune_args(dir.path(), "eth0", true);
    args.cpus = Some("7-3".into());
    assert!(run(&args).0.unwrap_err().starts_with("--cpus"));
    // An unreadable affinity file: that IRQ is left alone and the plan says so.
    fs::remove_file(dir.path().join("proc/irq/42/smp_affinity_list")).unwrap();
    fs::create_dir_all(dir.path().join("proc/irq/42/smp_affinity_list")).unwrap();
    let (result, out) = run(&tune_args(dir.path(), "eth0", false));
    result.unwrap();
    assert!(out.contains("IRQ 42 (eth0-TxRx-1): no readable smp_affinity_list, left alone"), "{out}");
    assert_eq!(read(dir.path(), "proc/irq/43/smp_affinity_list"), "6");
}

#[test]
fn tune_apply_carries_on_past_a_failed_write_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let roots = Roots::new(Some(dir.path()));
    let nic = inspect::read_nic(&roots, "eth0").unwrap();
    let plan = make_plan(&nic, &inspect::read_topology(&roots).unwrap(), &PlanOptions::default()).unwrap();
    // The file vanishes between planning and applying (a kernel without the feature would
    // not have it at all): no file is created, the error names it, the rest is written.
    fs::remove_file(dir.path().join("sys/class/net/eth0/queues/rx-1/rps_cpus")).unwrap();
    let mut out = Vec::new();
    let error = picket::tools::tune::apply(&roots, &plan, &mut out).unwrap_err();
    assert!(
        error.contains("1 write(s) failed") && error.contains("/sys/class/net/eth0/queues/rx-1/rps_cpus"),
        "{error}"
    );
    assert!(String::from_utf8(out).unwrap().contains("wrote 16 value(s), 1 failed"));
    assert!(!dir.path().join("sys/class/net/eth0/queues/rx-1/rps_cpus").exists());
    assert_eq!(read(dir.path(), "sys/class/net/eth0/queues/rx-2/rps_cpus"), "04");
}

#[test]
fn tune_show_only_reads() {
    let dir = tempfile::tempdir().unwrap();
    tune_fixture(dir.path());
    let mut args = tune_args(dir.path(), "eth0", false);
    args.show = true;
    let (result, out) = run(&args);
    result.unwrap();
    assert!(!out.contains("write "), "{out}");
    assert!(out.contains("rx-0     00 (none)          0"), "{out}");
    assert_eq!(read(dir.path(), "proc/irq/41/smp_affinity_list"), "0-7");
}

// ---------------------------------------------------------------- this machine

#[test]
fn smoke_real_proc_and_sys_parse() {
    let real = Sources { proc_root: "/proc".into(), sys_root: "/sys".into(), stats_file: None, ifaces: Vec::new() };
    let Ok(first) = read_sample(&real) else { return }; // no /proc (not Linux): nothing to check
    assert!(!first.stat.cpus.is_empty());
    let mut state = TopState::new(first);
    std::thread::sleep(Duration::from_millis(50));
    let view = state.advance(read_sample(&real).unwrap(), Duration::from_millis(50), 0);
    assert!(!view.cpus.is_empty());
    let mut out = Vec::new();
    table::write_view(&mut out, &view).unwrap();

    // Read-only: the plan is computed for every interface, never applied.
    let roots = Roots::new(None);
    let topology = inspect::read_topology(&roots).unwrap();
    assert!(!topology.online.is_empty());
    for entry in fs::read_dir("/sys/class/net").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let nic = inspect::read_nic(&roots, &name).unwrap();
        let plan = make_plan(&nic, &topology, &PlanOptions::default()).unwrap();
        assert!(plan.writes.iter().all(|w| CpuSet::parse_list("0").is_ok() && !w.value.is_empty()));
    }
}
