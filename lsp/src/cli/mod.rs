//! Command-line parsing and the subcommands. One shape for all of them: every subcommand that
//! works on a repository takes `--path PATH` (default: the current directory).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

mod agent;
mod automate;
mod chart;
mod ci;
mod config;
mod doctor;
mod eval;
mod feedback;
mod index;
pub mod lsp;
mod mcp;
mod memory;
mod model;
mod plugin;
mod progress;
mod review;
mod sandbox;
mod search;
mod stats;
mod status;

/// sift: a local-first code assistant. Indexes a repository and searches it.
#[derive(Debug, Parser)]
#[command(name = "sift", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build or update the code index of a repository (incremental: only changed files are read).
    Index(index::IndexArgs),
    /// Search the code index (builds or refreshes it first when needed).
    Search(search::SearchArgs),
    /// Show what the index holds and whether it is up to date.
    Status(status::StatusArgs),
    /// Run the language server over stdio (for editors).
    Lsp(lsp::LspArgs),
    /// Run the MCP server over stdio: sift's search, review and memory as tools for other
    /// agents (Claude Code, Codex CLI, Cursor, Zed, VS Code).
    Mcp(mcp::McpArgs),
    /// Install the models, say which would be used, or ask the language model a question.
    Model(model::ModelArgs),
    /// Measure search quality on a file of questions with known answers.
    Eval(eval::EvalArgs),
    /// Review a change: findings on the lines it added.
    Review(review::ReviewArgs),
    /// Set up CI: the workflow that reviews every pull request and posts the review.
    Ci(ci::CiArgs),
    /// The team's agent jobs (.sift/automations.toml): run those a pull request triggers, and
    /// deliver their checked changes as suggestions or a patch.
    Automate(automate::AutomateArgs),
    /// The review findings marked as wrong (list, dismiss, forget), and the record of fates
    /// (reject an agent run, export, clear).
    Feedback(feedback::FeedbackArgs),
    /// What became of sift's suggestions here: agent runs taken and refused, findings
    /// dismissed per rule, searches shown (from the local record in .sift/fates/).
    Stats(stats::StatsArgs),
    /// Show the configuration in force and where each value came from, or its schema.
    Config(config::ConfigArgs),
    /// Run the coding agent on a task: it proposes a change as a diff; nothing is written
    /// without --apply.
    Agent(agent::AgentArgs),
    /// Run one command under exactly the agent's sandbox and report what it denied.
    Sandbox(sandbox::SandboxArgs),
    /// Say what this machine offers sift: the sandbox's walls and what holds each.
    Doctor(doctor::DoctorArgs),
    /// Memory notes: facts about this codebase in .sift/memory/, citing code; stale when that
    /// code changes.
    Memory(memory::MemoryArgs),
    /// The team's WebAssembly plugins: list those a review runs, check a component.
    Plugin(plugin::PluginArgs),
}

/// Options shared by every subcommand that works on a repository.
#[derive(Debug, Clone, Args)]
pub struct RepoArgs {
    /// The repository root [default: the current directory].
    #[arg(long = "path", value_name = "PATH", global = false)]
    pub path: Option<PathBuf>,
}

impl RepoArgs {
    /// The root to work on.
    pub fn root(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| PathBuf::from("."))
    }

    /// The root, which must be a folder, made canonical.
    pub fn folder(&self) -> Result<PathBuf> {
        let root = self.root();
        if !root.is_dir() {
            anyhow::bail!("{} is not a folder", root.display());
        }
        std::fs::canonicalize(&root)
            .map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", root.display()))
    }
}

/// Options that decide which files are indexed; they override `.sift/config.toml`.
#[derive(Debug, Clone, Default, Args)]
pub struct WalkArgs {
    /// Skip files larger than this (bytes, or a size such as `2MiB`) [default: 1 MiB, or
    /// `[index] max_file_size` in .sift/config.toml].
    #[arg(long, value_name = "SIZE", value_parser = parse_size_arg)]
    pub max_file_size: Option<u64>,
    /// Do not follow symbolic links.
    #[arg(long)]
    pub no_follow_symlinks: bool,
}

fn parse_size_arg(text: &str) -> std::result::Result<u64, String> {
    sift_engine::index::parse_size(text)
}

/// `--mode`: the engine's search modes, by the names the engine parses.
fn parse_mode() -> impl clap::builder::TypedValueParser<Value = sift_engine::Mode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new([
        clap::builder::PossibleValue::new("lexical").help("BM25 over code-aware tokens"),
        clap::builder::PossibleValue::new("semantic")
            .help("Embedding similarity (needs embeddings)"),
        clap::builder::PossibleValue::new("hybrid").help("Lexical and semantic fused"),
    ])
    .map(|s| s.parse::<sift_engine::Mode>().expect("the possible values are the engine's modes"))
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    init_tracing(match &cli.command {
        Command::Lsp(args) => args.log_file.as_deref(),
        Command::Mcp(args) => args.log_file.as_deref(),
        _ => None,
    })?;
    match cli.command {
        Command::Index(args) => index::run(args),
        Command::Search(args) => search::run(args),
        Command::Status(args) => status::run(args),
        Command::Lsp(args) => lsp::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Model(args) => model::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Review(args) => review::run(args),
        Command::Ci(args) => ci::run(args),
        Command::Automate(args) => automate::run(args),
        Command::Feedback(args) => feedback::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Config(args) => config::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Sandbox(args) => sandbox::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Memory(args) => memory::run(args),
        Command::Plugin(args) => plugin::run(args),
    }
}

/// Logs go to stderr, or to `log_file` (stdout belongs to results and to the protocol).
/// `SIFT_LOG` takes a tracing filter; the default shows warnings.
fn init_tracing(log_file: Option<&Path>) -> Result<()> {
    let filter = sift_engine::env::get("SIFT_LOG")
        .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(log_file.is_none());
    match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| sift_engine::index::Error::io("open the log file", path, e))?;
            builder.with_writer(std::sync::Mutex::new(file)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

/// The configuration of `root` for a command: the user's and the repository's files and the
/// process environment, with `flags` over them (see `sift_engine::config`).
pub fn load_config(
    root: &Path,
    flags: &[sift_engine::config::Flag],
) -> Result<sift_engine::config::Config> {
    Ok(sift_engine::config::for_cli(root, flags)?)
}

impl WalkArgs {
    /// The flags given, as configuration flags (they override every other layer).
    pub fn flags(&self) -> Vec<sift_engine::config::Flag> {
        let mut flags = Vec::new();
        if let Some(max) = self.max_file_size {
            flags.push(sift_engine::config::Flag {
                section: "index",
                key: "max_file_size",
                flag: "--max-file-size",
                value: toml::Value::Integer(i64::try_from(max).unwrap_or(i64::MAX)),
            });
        }
        if self.no_follow_symlinks {
            flags.push(sift_engine::config::Flag {
                section: "index",
                key: "follow_symlinks",
                flag: "--no-follow-symlinks",
                value: toml::Value::Boolean(false),
            });
        }
        flags
    }
}

/// The update options for `root`: `[index]` with the flags over it, and the environment's
/// tuning knobs (`SIFT_THREADS`, `SIFT_COMMIT_INTERVAL_MS`; a command commits every 10 s
/// otherwise).
pub fn update_options(
    root: &Path,
    walk: &WalkArgs,
) -> sift_engine::Result<sift_engine::index::UpdateOptions> {
    let every = sift_engine::index::UpdateOptions::default().commit_interval;
    Ok(sift_engine::config::for_cli(root, &walk.flags())?.update_options(every)?)
}

/// Human-readable byte count.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// Tells the user on stderr what was redacted before the model's endpoint saw it (nothing
/// when nothing was, or the model is local).
pub fn report_redactions(model: &dyn sift_engine::llm::LanguageModel) {
    let redactions = model.redactions();
    if redactions.is_empty() {
        return;
    }
    let about = model.describe();
    eprintln!(
        "{} secret-looking string(s) were replaced by [REDACTED:…] before anything was sent to {} at {}:",
        redactions.len(),
        about.name,
        about.device
    );
    for line in sift_engine::redact::describe(&redactions, 20) {
        eprintln!("  {line}");
    }
}
