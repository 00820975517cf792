//! `sift config`: the configuration in force for a repository with the layer each value came
//! from (`show`), and what the configuration may hold (`schema`, a JSON Schema with `--json`).
//! Both come from `sift_engine::config`, the loader every command and the server use.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use sift_engine::config::{self, Config, Inputs, SECTIONS, Source, schema};

use super::{RepoArgs, WalkArgs};

/// Arguments of `sift config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the configuration in force for a repository, each value with the layer that set
    /// it (default, user config, repository config, editor settings, environment, flag).
    Show(ShowArgs),
    /// Print every table and key the configuration may hold; `--json`: as a JSON Schema.
    Schema {
        /// Print the JSON Schema.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `sift config show`.
#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Flags to show in force, as `sift index` would apply them.
    #[command(flatten)]
    walk: WalkArgs,
    /// Editor settings to lay over the files, as `sift lsp` would: an `initializationOptions`
    /// object, as JSON (`{"index": {"max_file_size": "2 MiB"}}`).
    #[arg(long, value_name = "JSON")]
    editor: Option<String>,
    /// Print one JSON object: `root`, `files`, `sections` (every key's `value` and `source`),
    /// `errors`, `ignored`.
    #[arg(long)]
    json: bool,
}

/// Runs `sift config`.
pub fn run(args: ConfigArgs) -> Result<ExitCode> {
    match args.command {
        ConfigCommand::Show(args) => show(&args),
        ConfigCommand::Schema { json } => {
            if json {
                print_json(&schema::json_schema())?;
            } else {
                emit(&reference())?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes `text` to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(()),
    }
}

fn print_json(value: &serde_json::Value) -> Result<()> {
    emit(&(serde_json::to_string_pretty(value)? + "\n"))
}

/// `sift config show`: exit status 1 when a value is invalid (each is printed on stderr).
fn show(args: &ShowArgs) -> Result<ExitCode> {
    let editor: Option<serde_json::Value> = match &args.editor {
        Some(text) => {
            let value: serde_json::Value =
                serde_json::from_str(text).context("--editor: not a JSON object")?;
            anyhow::ensure!(value.is_object(), "--editor: not a JSON object");
            Some(value)
        }
        None => None,
    };
    let root = args.repo.root();
    let flags = args.walk.flags();
    let config = Config::load(&Inputs {
        editor: editor.as_ref(),
        flags: &flags,
        ..Inputs::new(Some(&root), &config::process_env)
    })?;
    if args.json {
        print_json(&config.to_json())?;
    } else {
        emit(&human(&config))?;
    }
    for error in config.errors() {
        eprintln!("error: {error}");
    }
    Ok(if config.errors().is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The human table: the files, then per section each key, its value and where it came from.
fn human(config: &Config) -> String {
    let mut out = String::new();
    if let Some(root) = config.root() {
        out += &format!("root: {}\n", root.display());
    }
    for file in config.files() {
        let found = if file.found { "" } else { " (not found)" };
        out += &format!("{file}{found}\n", file = file.source);
    }
    let width = SECTIONS.iter().flat_map(|s| s.keys).map(|k| k.name.len()).max().unwrap_or(0);
    let mut section = "";
    let mut rows: Vec<(String, String, &Source)> = Vec::new();
    let flush = |rows: &mut Vec<(String, String, &Source)>, out: &mut String| {
        let values = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0).min(40);
        for (key, value, source) in rows.drain(..) {
            *out += &format!("{key:<width$}  {value:<values$}  {source}\n");
        }
    };
    for (spec, key, setting) in config.entries() {
        if spec.name != section {
            flush(&mut rows, &mut out);
            section = spec.name;
            out += &format!("\n[{section}]\n");
        }
        let value = setting.value.as_ref().map_or_else(|| "(unset)".to_owned(), |v| v.to_string());
        rows.push((key.name.to_owned(), value, &setting.source));
    }
    flush(&mut rows, &mut out);
    if !config.ignored().is_empty() {
        out += "\nignored (sift does not read these):\n";
        for ignored in config.ignored() {
            out += &format!("  {ignored}\n");
        }
    }
    out
}

/// `sift config schema` without `--json`: every key with its kind, default, variable and what
/// it does.
fn reference() -> String {
    let mut out = String::new();
    for section in SECTIONS {
        out += &format!("[{}]  {}\n", section.name, section.doc);
        for key in section.keys {
            let env = key.env.map(|v| format!("; {v}")).unwrap_or_default();
            let only = if key.in_files { "" } else { " only" };
            out += &format!(
                "  {} = {} (default: {}{env}{only})\n      {}\n",
                key.name,
                key.kind.describe(),
                schema::default_text(key),
                key.doc
            );
        }
        out += "\n";
    }
    out
}
