//! `picket bench`: the engine's own speed on a capture preloaded into memory, so that disk
//! and page cache do not show. Reports packets/s and Gbit/s per run mode / worker count.

use super::args::RunArgs;
use super::resolve::{load_rules, resolve, CliError};
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
}

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    let mut source = MemorySource::load(&args.file)?;
    let run_args = RunArgs {
        read: None,
        log_dir: None,
        config: args.config.clone(),
        rules_exclusive: vec![],
        rules_extra: vec![],
        checksum: args.checksum.clone(),
        set: args.set.clone(),
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
    println!(
        "{}: {} packets, {:.1} MB preloaded; best of {} runs each",
        args.file.display(),
        source.len(),
        source.byte_len() as f64 / 1e6,
        args.repeat
    );
    println!("{:<10} {:>14} {:>10} {:>12}  per-worker share %", "mode", "packets/s", "Gbit/s", "wall s");
    for spec in &args.workers {
        let (single, workers) = match spec.as_str() {
            "single" => (true, 1),
            n => (
                false,
                n.parse::<usize>().map_err(|_| CliError(format!("--workers: '{n}' is not a number or 'single'")))?,
            ),
        };
        let opts = RunOptions {
            workers,
            single,
            pin_cores: true,
            inspect: base.options.inspect.clone(),
            eve: base.options.eve.clone(),
            defrag: base.options.defrag,
            bpf_filter: base.options.bpf_filter.clone(),
            stop: None,
            adaptive: base.options.adaptive,
        };
        let mut best: Option<pipeline::RunSummary> = None;
        for _ in 0..args.repeat.max(1) {
            source.reset();
            let (mut eve, mut fast) = (std::io::sink(), std::io::sink());
            let logs = pipeline::LogWriters { eve: &mut eve, fast: &mut fast };
            let s = pipeline::run(
                &mut source,
                make_policy(base.policy, opts.workers, opts.inspect.track_vlan),
                &opts,
                logs,
            )?;
            if best.as_ref().is_none_or(|b| s.wall < b.wall) {
                best = Some(s);
            }
        }
        let s = best.expect("at least one run");
        let secs = s.wall.as_secs_f64().max(1e-9);
        let bytes: u64 = s.workers.iter().map(|w| w.bytes).sum();
        let shares: Vec<String> = s
            .workers
            .iter()
            .map(|w| format!("{:.1}", 100.0 * w.packets as f64 / s.packets_read.max(1) as f64))
            .collect();
        let label = if single {
            "single".to_string()
        } else {
            format!("{workers} worker{}", if workers > 1 { "s" } else { "" })
        };
        println!(
            "{label:<10} {:>14.0} {:>10.2} {:>12.3}  {}",
            s.packets_read as f64 / secs,
            bytes as f64 * 8.0 / secs / 1e9,
            secs,
            shares.join(" / ")
        );
        print_prefilter_profile(&s);
    }
    Ok(())
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
