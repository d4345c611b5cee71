//! The control socket (Suricata's `unix-command`) and the `picket ctl` client.

use super::{Reply, Request, RuleReloader, RunInfo};
use crate::tools::snapshot::WorkerSnapshot;

/// Answers the requests that only read facts of the run (version, uptime, modes,
/// interfaces, ruleset stats, iface-stat).
pub fn answer_info(
    request: &Request,
    info: &RunInfo,
    reloader: Option<&dyn RuleReloader>,
    workers: &[WorkerSnapshot],
) -> Reply {
    let _ = (info, reloader, workers);
    Err(format!("{request:?}: not implemented yet"))
}

#[derive(clap::Args, Debug)]
pub struct CtlArgs {
    /// The control socket (default: the YAML's `unix-command.filename`, else the default path).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<std::path::PathBuf>,
    /// Suricata-format YAML to read `unix-command.filename` from.
    #[arg(short = 'c', value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// reload-rules, reopen-logs, stats, iface-stat [IFACE], iface-list, shutdown, version,
    /// uptime, running-mode, capture-mode, ruleset-stats.
    #[arg(value_name = "COMMAND")]
    pub command: String,
    #[arg(value_name = "ARG")]
    pub args: Vec<String>,
}

/// `picket ctl COMMAND`: sends one command and prints the answer.
pub fn run_client(args: &CtlArgs) -> Result<(), String> {
    Err(format!("ctl {}: not implemented yet", args.command))
}
