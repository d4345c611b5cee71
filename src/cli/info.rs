//! Print-and-exit commands (`-V`, `--build-info`, `--list-keywords`, `--list-app-layer-protos`,
//! `--dump-config`, `--engine-analysis`) and `picket generate` (man page, completions).
//!
//! Everything printed here comes from the tables the program itself uses (the rule parser's
//! keyword table, the app-layer parsers, the loaded configuration tree, the built engine), so
//! the listings cannot drift from what picket does.

use super::args::RunArgs;
use super::resolve::{load_rules, resolve, warn, CliError};
use crate::applayer::AppProto;
use crate::config::Config;
use crate::detect::rule::header::APP_PROTOCOLS;
use crate::detect::rule::keywords::{all_keywords, KeywordEntry};
use crate::rules::RuleSources;
use clap::{Args, CommandFactory};
use serde_yaml::Value;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// What to write: man, or the completions of bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "man|bash|zsh|fish|elvish|powershell")]
    pub what: String,
    /// Directory to write into (default: standard output).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Suricata's spelling of a null node in `--dump-config`.
const DUMP_NULL: &str = "(null)";

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    match print_info(args) {
        // `picket --list-keywords | head` is not an error.
        Err(CliError(msg)) if msg.contains("Broken pipe") => Ok(()),
        other => other,
    }
}

fn print_info(args: &RunArgs) -> Result<(), CliError> {
    let info = &args.info;
    let mut out = io::stdout().lock();
    if info.version {
        writeln!(out, "{}", crate::service::version_string())?;
    }
    if info.build_info {
        write_build_info(&mut out)?;
    }
    if let Some(which) = &info.list_keywords {
        write_keywords(&mut out, which)?;
    }
    if info.list_app_layer_protos {
        write_app_layer_protos(&mut out)?;
    }
    if info.dump_config {
        let (config, warnings) = Config::load(args.config.as_deref(), &args.set)?;
        for w in warnings {
            warn(w);
        }
        write_config_dump(&mut out, config.root())?;
    }
    if info.engine_analysis {
        drop(out);
        engine_analysis(args)?;
    }
    Ok(())
}

/// `--build-info`: how this binary was made and what it can do.
fn write_build_info(out: &mut dyn Write) -> io::Result<()> {
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    writeln!(out, "This is picket version {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "{}", crate::service::version_string())?;
    writeln!(
        out,
        "Features: {}{}",
        if cfg!(feature = "hyperscan") { "HAVE_HYPERSCAN " } else { "" },
        if crate::xdp::XdpLayer::available() { "HAVE_XDP_PROGRAM AF_XDP" } else { "" }
    )?;
    writeln!(out, "Capture: pcap/pcapng files, AF_PACKET (TPACKET_V3), NFQUEUE, AF_PACKET bridge, AF_XDP")?;
    writeln!(out, "Hyperscan support: {}", yes_no(crate::matchers::HYPERSCAN_BUILT_IN))?;
    if crate::matchers::HYPERSCAN_BUILT_IN {
        writeln!(out, "  libhs version (pkg-config at build): {}", env!("PICKET_BUILD_LIBHS"))?;
        writeln!(out, "  usable on this CPU: {}", yes_no(crate::matchers::hyperscan_usable()))?;
    }
    writeln!(out, "PCRE2 version (pkg-config at build): {}", env!("PICKET_BUILD_PCRE2"))?;
    writeln!(
        out,
        "Allocator: jemalloc, transparent huge pages: {}",
        crate::heap::jemalloc_thp_mode().unwrap_or_else(|| "unknown".to_string())
    )?;
    writeln!(out, "XDP program embedded: {}", yes_no(crate::xdp::XdpLayer::available()))?;
    writeln!(out, "Rust compiler: {}", env!("PICKET_BUILD_RUSTC"))?;
    writeln!(out, "Target: {}", env!("PICKET_BUILD_TARGET"))?;
    writeln!(out, "Profile: {}", env!("PICKET_BUILD_PROFILE"))?;
    writeln!(out, "Debug assertions: {}", yes_no(cfg!(debug_assertions)))?;
    writeln!(
        out,
        "Pointer width: {}-bit, {} endian",
        usize::BITS,
        if cfg!(target_endian = "little") { "little" } else { "big" }
    )?;
    Ok(())
}

/// `--list-keywords[=all|KW]`: all keywords with one line each, or one keyword's details.
fn write_keywords(out: &mut dyn Write, which: &str) -> Result<(), CliError> {
    let all = all_keywords();
    if which == "all" || which.is_empty() {
        writeln!(out, "=====Supported keywords=====")?;
        for entry in &all {
            writeln!(out, "- {:<28} [{}] {}", entry.name(), entry.family().name(), entry.summary())?;
        }
        writeln!(out, "{} keywords", all.len())?;
        return Ok(());
    }
    let Some(entry) = all.iter().find(|e| e.name() == which) else {
        return Err(CliError(format!(
            "--list-keywords={which}: no such keyword; `picket --list-keywords` lists all {}",
            all.len()
        )));
    };
    writeln!(out, "= {} =", entry.name())?;
    writeln!(out, "Description: {}", entry.summary())?;
    writeln!(out, "Family: {}", entry.family().name())?;
    if let KeywordEntry::Sticky { buffer, .. } | KeywordEntry::Modifier { buffer, .. } = entry {
        writeln!(out, "Buffer: {}", buffer.name)?;
        writeln!(out, "Protocol: {}", buffer.app_proto.unwrap_or("any (packet/stream level)"))?;
        let mut names = vec![buffer.name];
        names.extend(buffer.sticky_aliases.iter().copied());
        writeln!(out, "Sticky buffer names: {}", names.join(", "))?;
        if let Some(m) = buffer.content_modifier {
            writeln!(out, "Content modifier: {m}")?;
        }
    }
    writeln!(out, "Example: {}", entry.example())?;
    Ok(())
}

/// `--list-app-layer-protos`: the protocols with a parser, then the other names rule headers
/// accept (rules on those load, but their flows are never detected as such).
fn write_app_layer_protos(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "=========Supported App Layer Protocols=========")?;
    for p in AppProto::ALL {
        let ports: Vec<String> = p.default_ports().iter().map(u16::to_string).collect();
        writeln!(out, "{:<8} {}; default ports {}", p.name(), app_proto_support(p), ports.join(","))?;
    }
    writeln!(out, "=========Accepted in rules, not parsed=========")?;
    for name in APP_PROTOCOLS.iter().filter(|n| !AppProto::ALL.iter().any(|p| p.name() == **n)) {
        writeln!(out, "{name}")?;
    }
    Ok(())
}

/// What picket does with a protocol: the parsed ones are named, everything else is
/// detected only (the FTP banner and the table in picket_core::applayer::detect_only).
fn app_proto_support(p: AppProto) -> &'static str {
    match p {
        AppProto::Http
        | AppProto::Http2
        | AppProto::Doh2
        | AppProto::Tls
        | AppProto::Dns
        | AppProto::Ssh
        | AppProto::Smtp => "detected, parsed (sticky buffers, eve records)",
        _ => "detected (app_proto, app-layer-protocol), not parsed",
    }
}

/// `--dump-config`: one `key = value` line per node, in Suricata's format (`(null)` for a
/// mapping or list, list items by index).
fn write_config_dump(out: &mut dyn Write, root: &Value) -> io::Result<()> {
    fn walk(out: &mut dyn Write, key: &str, node: &Value) -> io::Result<()> {
        let child = |k: &str| if key.is_empty() { k.to_string() } else { format!("{key}.{k}") };
        match node {
            Value::Mapping(map) => {
                if !key.is_empty() {
                    writeln!(out, "{key} = {DUMP_NULL}")?;
                }
                for (k, v) in map {
                    walk(out, &child(&scalar_text(k)), v)?;
                }
            }
            Value::Sequence(items) => {
                writeln!(out, "{key} = {DUMP_NULL}")?;
                for (i, v) in items.iter().enumerate() {
                    walk(out, &child(&i.to_string()), v)?;
                }
            }
            Value::Tagged(tagged) => walk(out, key, &tagged.value)?,
            scalar => writeln!(out, "{key} = {}", scalar_text(scalar))?,
        }
        Ok(())
    }
    match root {
        Value::Null => Ok(()),
        root => walk(out, "", root),
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null => DUMP_NULL.to_string(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other).unwrap_or_default().trim().to_string(),
    }
}

/// `--engine-analysis`: loads the rules as a run would, writes `rules_fast_pattern.txt` and
/// `rules_analysis.txt` into the log directory and prints a summary.
fn engine_analysis(args: &RunArgs) -> Result<(), CliError> {
    let mut resolved = resolve(args)?;
    // The analysis prints each rule's text.
    resolved.engine.keep_rule_text = true;
    let sources = RuleSources { exclusive: args.rules_exclusive.clone(), extra: args.rules_extra.clone() };
    let loaded = load_rules(&resolved.config, &resolved.engine, &sources, false, false)?;
    let log_dir = args
        .log_dir
        .clone()
        .or_else(|| resolved.config.get_str("default-log-dir").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    fs::create_dir_all(&log_dir)
        .map_err(|e| CliError(format!("cannot create log directory {}: {e}", log_dir.display())))?;
    // Without rule files the engine is built empty (for the app-layer records of a run):
    // there is nothing to analyse.
    let Some(engine) = loaded.engine.filter(|e| e.rule_count() > 0) else {
        return Err(CliError("--engine-analysis: no rules loaded (give rules with -S FILE or rule-files:)".into()));
    };
    let analysis = engine.analysis();
    let fp_path = log_dir.join("rules_fast_pattern.txt");
    let an_path = log_dir.join("rules_analysis.txt");
    write_file(&fp_path, &analysis.fast_patterns_text())?;
    write_file(&an_path, &analysis.rules_text())?;
    let mut out = io::stdout().lock();
    write!(out, "{}", analysis.summary_text())?;
    writeln!(out, "picket: wrote {} and {}", fp_path.display(), an_path.display())?;
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    fs::write(path, text).map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))
}

/// `picket generate man|bash|zsh|fish|elvish|powershell [--out DIR]`, from the real command
/// line definition ([`super::Cli`]).
pub fn generate(args: &GenerateArgs) -> Result<(), CliError> {
    use clap_complete::Shell;
    let mut cmd = super::Cli::command();
    let name = cmd.get_name().to_string();
    let (file_name, bytes) = match args.what.as_str() {
        "man" => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            (format!("{name}.1"), buf)
        }
        shell => {
            let shell: Shell = shell.parse().map_err(|_| {
                CliError(format!("generate {shell}: unknown target; give man, bash, zsh, fish, elvish or powershell"))
            })?;
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, &name, &mut buf);
            (completion_file_name(shell, &name), buf)
        }
    };
    match &args.out {
        None => io::stdout().lock().write_all(&bytes)?,
        Some(dir) => {
            fs::create_dir_all(dir).map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
            let path = dir.join(file_name);
            fs::write(&path, &bytes).map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?;
            eprintln!("picket: wrote {}", path.display());
        }
    }
    Ok(())
}

/// The file name each shell looks for (bash-completion: `picket`; zsh: `_picket`; fish:
/// `picket.fish`; ...), as clap_complete names them.
fn completion_file_name(shell: clap_complete::Shell, name: &str) -> String {
    use clap_complete::Generator;
    match shell {
        clap_complete::Shell::Bash => name.to_string(),
        other => other.file_name(name),
    }
}
