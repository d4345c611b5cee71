//! `picket bench`: the engine's own speed on a capture preloaded into memory, so that disk
//! and page cache do not show. Reports packets/s and Gbit/s per run mode / worker count.

use super::args::RunArgs;
use super::resolve::{load_rules, resolve, CliError, Resolved};
use crate::capture::MemorySource;
use crate::dispatch::make_policy;
use crate::pipeline::{self, RunOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Capture to replay (read into memory once).
    pub file: PathBuf,
    /// Worker counts to measure, comma-separated; "single" measures the one-thread run mode.
    #[arg(long, default_value = "single,1,2", value_delimiter = ',')]
    pub workers: Vec<String>,
    /// Runs per configuration; the best is reported (the machine is shared and noisy).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Dispatch policy (as the main command's --dispatch).
    #[arg(long)]
    pub dispatch: Option<String>,
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    #[arg(short = 'k', value_name = "none|all|auto")]
    pub checksum: Option<String>,
    /// Rule files to run (as `-S`); the load and build time is reported, not counted.
    #[arg(short = 'S', value_name = "FILE", num_args = 1..)]
    pub rules: Vec<PathBuf>,
    /// Compare with a second configuration B: these settings (as --set, repeatable) on top
    /// of the first one, A. Both are loaded (rules twice) and run in turns, --repeat pairs
    /// per worker count, A first in one pair and B first in the next; each pair's
    /// packets/s ratio B/A is reported, which on a shared machine is steadier than the best
    /// of separate runs.
    #[arg(long = "against", value_name = "KEY=VALUE")]
    pub against: Vec<String>,
}

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    let mut source = MemorySource::load(&args.file)?;
    let mut sides = vec![prepare(args, args.set.clone())?];
    if !args.against.is_empty() {
        let set: Vec<String> = args.set.iter().chain(&args.against).cloned().collect();
        sides.push(prepare(args, set)?);
        println!("A: the configuration; B: A with {}", args.against.join(" "));
    }
    let runs = if sides.len() == 2 { "pairs of runs, in turns" } else { "runs each" };
    println!(
        "{}: {} packets, {:.1} MB preloaded; best of {} {runs}",
        args.file.display(),
        source.len(),
        source.byte_len() as f64 / 1e6,
        args.repeat
    );
    println!("{:<12} {:>14} {:>10} {:>12}  per-worker share %", "mode", "packets/s", "Gbit/s", "wall s");
    for spec in &args.workers {
        let (single, workers) = match spec.as_str() {
            "single" => (true, 1),
            n => (
                false,
                n.parse::<usize>().map_err(|_| CliError(format!("--workers: '{n}' is not a number or 'single'")))?,
            ),
        };
        let opts: Vec<RunOptions> = sides.iter().map(|base| run_options(base, single, workers)).collect();
        let mut best: Vec<Option<pipeline::RunSummary>> = sides.iter().map(|_| None).collect();
        // Packets/s of each side, per pair (or per run without --against).
        let mut rates: Vec<Vec<f64>> = sides.iter().map(|_| Vec::new()).collect();
        for round in 0..args.repeat.max(1) {
            let mut order: Vec<usize> = (0..sides.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for side in order {
                source.reset();
                let (mut eve, mut fast) = (std::io::sink(), std::io::sink());
                let logs = pipeline::LogWriters { eve: &mut eve, fast: &mut fast };
                let policy = make_policy(sides[side].policy, workers, opts[side].inspect.track_vlan);
                let s = pipeline::run(&mut source, policy, &opts[side], logs)?;
                rates[side].push(s.packets_read as f64 / s.wall.as_secs_f64().max(1e-9));
                if best[side].as_ref().is_none_or(|b| s.wall < b.wall) {
                    best[side] = Some(s);
                }
            }
        }
        let label = if single {
            "single".to_string()
        } else {
            format!("{workers} worker{}", if workers > 1 { "s" } else { "" })
        };
        for (side, s) in best.iter().enumerate() {
            let s = s.as_ref().expect("at least one run");
            let name = match sides.len() {
                1 => label.clone(),
                _ => format!("{label} {}", if side == 0 { "A" } else { "B" }),
            };
            print_row(&name, s);
        }
        if let [a, b] = rates.as_slice() {
            println!("{}", pair_summary(a, b));
        }
        for s in best.iter().flatten() {
            print_prefilter_profile(s);
        }
    }
    Ok(())
}

/// The run settings of `args` with `set`, and its rules loaded.
fn prepare(args: &BenchArgs, set: Vec<String>) -> Result<Resolved, CliError> {
    let run_args = RunArgs {
        read: None,
        log_dir: None,
        config: args.config.clone(),
        rules_exclusive: vec![],
        rules_extra: vec![],
        checksum: args.checksum.clone(),
        set,
        runmode: None,
        workers: None,
        dispatch: args.dispatch.clone(),
        no_pin: false,
        no_random: false,
        simulate_ips: false,
        verbose: 0,
        test_config: false,
        live: Default::default(),
        service: Default::default(),
        info: Default::default(),
        bpf_file: None,
        bpf: vec![],
    };
    let mut base = resolve(&run_args)?;
    if !args.rules.is_empty() {
        let sources = crate::rules::RuleSources { exclusive: args.rules.clone(), extra: vec![] };
        let loaded = load_rules(&base.config, &base.engine, &sources, false, false)?;
        println!("rules: {}", loaded.summary());
        base.options.inspect.detect = loaded.engine.map(std::sync::Arc::new);
    }
    Ok(base)
}

fn run_options(base: &Resolved, single: bool, workers: usize) -> RunOptions {
    RunOptions {
        workers,
        single,
        pin_cores: true,
        inspect: base.options.inspect.clone(),
        eve: base.options.eve.clone(),
        defrag: base.options.defrag,
        bpf_filter: base.options.bpf_filter.clone(),
        stop: None,
        adaptive: base.options.adaptive,
    }
}

fn print_row(label: &str, s: &pipeline::RunSummary) {
    let secs = s.wall.as_secs_f64().max(1e-9);
    let bytes: u64 = s.workers.iter().map(|w| w.bytes).sum();
    let shares: Vec<String> =
        s.workers.iter().map(|w| format!("{:.1}", 100.0 * w.packets as f64 / s.packets_read.max(1) as f64)).collect();
    println!(
        "{label:<12} {:>14.0} {:>10.2} {:>12.3}  {}",
        s.packets_read as f64 / secs,
        bytes as f64 * 8.0 / secs / 1e9,
        secs,
        shares.join(" / ")
    );
}

/// `B/A per pair: ...; median R (quartiles Q1-Q3), B faster in K of N`, from the two
/// sides' packets/s of each pair.
fn pair_summary(a: &[f64], b: &[f64]) -> String {
    let mut ratios: Vec<f64> = a.iter().zip(b).map(|(a, b)| b / a.max(1e-9)).collect();
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios.get(((ratios.len() - 1) as f64 * q).round() as usize).copied().unwrap_or(0.0);
    format!(
        "  B/A packets/s per pair: {}; median {:.3} (quartiles {:.3}-{:.3}), B faster in {} of {}",
        listed.join(" "),
        median(&ratios),
        at(0.25),
        at(0.75),
        ratios.iter().filter(|&&r| r > 1.0).count(),
        ratios.len()
    )
}

/// Median of sorted `values` (0 when empty).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// With `profiling.prefilter.enabled`, the run's prefilter scans by scan site (all workers
/// together), the most expensive first, with their share of the run's wall clock.
fn print_prefilter_profile(s: &pipeline::RunSummary) {
    let total = picket_core::counters::CounterSet::sum(s.workers.iter().map(|w| &w.counters));
    let mut rows: Vec<(&str, [u64; 3])> = Vec::new();
    for (name, value) in total.iter() {
        let Some(rest) = name.strip_prefix("detect.prefilter.") else { continue };
        let Some((site, field)) = rest.rsplit_once('.') else { continue };
        let column = match field {
            "scans" => 0,
            "bytes" => 1,
            "usec" => 2,
            _ => continue,
        };
        match rows.iter_mut().find(|(n, _)| *n == site) {
            Some((_, row)) => row[column] = value,
            None => {
                let mut row = [0; 3];
                row[column] = value;
                rows.push((site, row));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    rows.sort_by(|a, b| b.1[2].cmp(&a.1[2]).then(a.0.cmp(b.0)));
    let wall_us = s.wall.as_micros().max(1) as f64;
    println!("  prefilter (profiling.prefilter)        scans        MB       ms   us/scan  ns/byte  % of wall");
    for (site, [scans, bytes, usec]) in rows {
        println!(
            "  {site:<34} {scans:>10} {:>9.1} {:>8.1} {:>9.2} {:>8.2} {:>10.1}",
            bytes as f64 / 1e6,
            usec as f64 / 1e3,
            usec as f64 / scans.max(1) as f64,
            usec as f64 * 1e3 / bytes.max(1) as f64,
            100.0 * usec as f64 / wall_us
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_summary_reports_each_ratio_the_median_and_the_wins() {
        let line = pair_summary(&[100.0, 200.0, 100.0, 50.0], &[110.0, 180.0, 130.0, 60.0]);
        assert_eq!(
            line,
            "  B/A packets/s per pair: 1.100 0.900 1.300 1.200; median 1.150 (quartiles 1.100-1.200), B faster in 3 of 4"
        );
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
    }
}
