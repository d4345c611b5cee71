//! Print-and-exit commands (`-V`, `--build-info`, `--list-keywords`, `--list-app-layer-protos`,
//! `--dump-config`, `--engine-analysis`) and `picket generate` (man page, completions).

use super::args::RunArgs;
use super::resolve::CliError;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// What to write: man, or the completions of bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "man|bash|zsh|fish|elvish|powershell")]
    pub what: String,
    /// Directory to write into (default: standard output).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    if args.info.version {
        println!("{}", crate::service::version_string());
        return Ok(());
    }
    Err(CliError("not implemented yet".into()))
}

pub fn generate(args: &GenerateArgs) -> Result<(), CliError> {
    Err(CliError(format!("generate {}: not implemented yet", args.what)))
}
