//! Plain-text tables of a [`TopView`] (`picket top --once`), and the number formatting the
//! live view shares.

use super::{CpuLoad, TopView, WorkerView};
use std::io::{self, Write};

/// "12.5", or "-" without a value.
pub fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// A rate with an SI suffix: "950", "12.3k", "1.25M", "4.00G"; "-" without a value.
pub fn rate(value: Option<f64>) -> String {
    let Some(v) = value else { return "-".to_string() };
    let (scaled, suffix) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        return format!("{v:.0}");
    };
    if scaled >= 100.0 {
        format!("{scaled:.0}{suffix}")
    } else if scaled >= 10.0 {
        format!("{scaled:.1}{suffix}")
    } else {
        format!("{scaled:.2}{suffix}")
    }
}

pub const CPU_HEADER: [&str; 8] = ["CPU", "usr%", "sys%", "irq%", "soft%", "idle%", "NET_RX/s", "NET_TX/s"];
pub const IFACE_HEADER: [&str; 7] = ["IFACE", "rx pkt/s", "rx bit/s", "rx drop/s", "tx pkt/s", "tx bit/s", "tx drop/s"];
pub const WORKER_HEADER: [&str; 7] = ["WORKER", "pkt/s", "bit/s", "drop/s", "busy%", "packets", "drops"];

pub fn cpu_row(load: &CpuLoad) -> [String; 8] {
    [
        load.cpu.map_or_else(|| "all".to_string(), |c| c.to_string()),
        percent(load.user),
        percent(load.system),
        percent(load.irq),
        percent(load.softirq),
        percent(load.idle),
        rate(load.net_rx_per_sec),
        rate(load.net_tx_per_sec),
    ]
}

pub fn iface_rows(view: &TopView) -> Vec<[String; 7]> {
    view.ifaces
        .iter()
        .map(|i| {
            [
                i.name.clone(),
                rate(i.rx_packets_per_sec),
                rate(i.rx_bits_per_sec),
                rate(i.rx_drops_per_sec),
                rate(i.tx_packets_per_sec),
                rate(i.tx_bits_per_sec),
                rate(i.tx_drops_per_sec),
            ]
        })
        .collect()
}

/// The worker rows, or a one-line explanation of why there are none.
pub fn worker_rows(view: &TopView) -> Result<Vec<[String; 7]>, String> {
    match &view.workers {
        WorkerView::NotRequested => Err("no --stats file given (picket writes LOGDIR/picket-stats.json)".to_string()),
        WorkerView::Missing(path) => Err(format!("{}: not found (picket not running?)", path.display())),
        WorkerView::Unreadable(e) => Err(e.clone()),
        WorkerView::Workers { rows, .. } => Ok(rows
            .iter()
            .map(|w| {
                [
                    w.name.clone(),
                    rate(w.packets_per_sec),
                    rate(w.bits_per_sec),
                    rate(w.drops_per_sec),
                    percent(w.busy),
                    w.packets.to_string(),
                    w.drops.to_string(),
                ]
            })
            .collect()),
    }
}

pub const IPS_HEADER: [&str; 9] =
    ["WORKER", "accept/s", "block/s", "reject/s", "accepted", "blocked", "rejected", "fail-open", "tx errors"];

/// The inline verdict rows (empty unless picket runs inline).
pub const XDP_HEADER: [&str; 4] = ["XDP", "pkt/s", "packets", "bytes"];

/// The XDP program's counters, "seen" first, then where packets ended.
pub fn xdp_rows(view: &TopView) -> Vec<[String; 4]> {
    let mut rows: Vec<&super::XdpRate> = view.xdp.iter().collect();
    rows.sort_by_key(|r| (r.reason != "seen", r.reason.clone()));
    rows.into_iter()
        .map(|r| [r.reason.clone(), rate(r.packets_per_sec), r.packets.to_string(), r.bytes.to_string()])
        .collect()
}

pub fn ips_rows(view: &TopView) -> Vec<[String; 9]> {
    let WorkerView::Workers { rows, .. } = &view.workers else { return Vec::new() };
    rows.iter()
        .filter_map(|w| {
            let ips = w.ips.as_ref()?;
            let t = &ips.totals;
            Some([
                w.name.clone(),
                rate(ips.accepted_per_sec),
                rate(ips.blocked_per_sec),
                rate(ips.rejected_per_sec),
                t.accepted.to_string(),
                t.blocked.to_string(),
                t.rejected.to_string(),
                t.fail_open.to_string(),
                t.tx_errors.to_string(),
            ])
        })
        .collect()
}

/// First column left-aligned, the others right-aligned, each as wide as its widest cell.
fn write_table<const N: usize>(out: &mut dyn Write, header: [&str; N], rows: &[[String; N]]) -> io::Result<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let header_cells = header.map(str::to_string);
    for row in std::iter::once(&header_cells).chain(rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i == 0 {
                line.push_str(&format!("{cell:<width$}"));
            } else {
                line.push_str(&format!("  {cell:>width$}"));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

pub fn write_view(out: &mut dyn Write, view: &TopView) -> io::Result<()> {
    writeln!(out, "Per-core load over {:.2} s", view.interval_secs)?;
    let cpu_rows: Vec<[String; 8]> = view.all.iter().chain(&view.cpus).map(cpu_row).collect();
    write_table(out, CPU_HEADER, &cpu_rows)?;
    writeln!(out)?;
    writeln!(out, "Interfaces")?;
    write_table(out, IFACE_HEADER, &iface_rows(view))?;
    if view.ifaces_not_shown > 0 {
        writeln!(out, "({} more interfaces not shown; select with -i)", view.ifaces_not_shown)?;
    }
    writeln!(out)?;
    writeln!(out, "picket workers")?;
    match worker_rows(view) {
        Ok(rows) => {
            write_table(out, WORKER_HEADER, &rows)?;
            if let WorkerView::Workers { age_secs, stale, .. } = &view.workers {
                if *stale {
                    writeln!(out, "(snapshot {age_secs:.0} s old: picket stopped?)")?;
                }
            }
        }
        Err(why) => writeln!(out, "  {why}")?,
    }
    let ips = ips_rows(view);
    if !ips.is_empty() {
        writeln!(out)?;
        writeln!(out, "Inline verdicts")?;
        write_table(out, IPS_HEADER, &ips)?;
    }
    let xdp = xdp_rows(view);
    if !xdp.is_empty() {
        writeln!(out)?;
        writeln!(out, "Kernel fast path (XDP)")?;
        write_table(out, XDP_HEADER, &xdp)?;
    }
    if let Some(line) = &view.dispatch {
        writeln!(out)?;
        writeln!(out, "{line}")?;
    }
    if view.anomalies > 0 {
        writeln!(out, "\n{} unreadable lines or files in the sources", view.anomalies)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_scaled() {
        assert_eq!(rate(None), "-");
        assert_eq!(rate(Some(950.4)), "950");
        assert_eq!(rate(Some(12_345.0)), "12.3k");
        assert_eq!(rate(Some(1_250_000.0)), "1.25M");
        assert_eq!(rate(Some(400e9)), "400G");
        assert_eq!(percent(Some(12.26)), "12.3");
    }
}
