//! `sift plugin list` and `sift plugin check FILE.wasm`: the team's WebAssembly plugins, as a
//! review would run them. Thin: discovery, loading and inspection are the engine's
//! (`sift_engine::review::plugins`); this prints them.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use sift_engine::review::plugins;

use super::RepoArgs;

/// Arguments of `sift plugin`.
#[derive(Debug, Args)]
pub struct PluginArgs {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// The plugins a review runs (`.sift/plugins/*.wasm` and `[[review.plugins]]` in
    /// `.sift/config.toml`), their grants and limits, and whether each loads.
    List {
        #[command(flatten)]
        repo: RepoArgs,
        /// The plugins a `sift review --base REV` runs: those of the merge-base with REV.
        #[arg(long, value_name = "REV")]
        base: Option<String>,
    },
    /// Check a component: the sift:plugin interface version it was built for, what it exports
    /// and imports, its agent tools, and whether this sift accepts it (exit status 1 if not).
    Check {
        /// The component (`.wasm`).
        file: PathBuf,
    },
}

/// Runs `sift plugin`.
#[allow(clippy::print_stdout)]
pub fn run(args: PluginArgs) -> Result<ExitCode> {
    match args.command {
        PluginCommand::List { repo, base } => {
            let listed = plugins::list(&repo.root(), base.as_deref())?;
            let mut out = String::new();
            if listed.is_empty() {
                out.push_str("no plugins (put components in .sift/plugins/, or list them in [[review.plugins]] of .sift/config.toml)\n");
            }
            let mut failed = false;
            for p in &listed {
                let grants: Vec<&str> = p.entry.grants.iter().map(|g| g.as_str()).collect();
                let limits = p.entry.limits();
                let _ = writeln!(
                    out,
                    "{}  {}\n  grants: {}\n  limits: deadline {} ms, fuel {}, memory {} MiB, reads {} MiB",
                    p.name,
                    p.from,
                    if grants.is_empty() { "none".to_string() } else { grants.join(", ") },
                    limits.deadline.as_millis(),
                    limits.fuel,
                    limits.memory_bytes >> 20,
                    limits.read_bytes >> 20,
                );
                match &p.status {
                    Ok(interface) => {
                        let _ = writeln!(
                            out,
                            "  ok: sift:plugin@{}",
                            interface.version().unwrap_or("?")
                        );
                    }
                    Err(e) => {
                        failed = true;
                        let _ = writeln!(out, "  not run: {e}");
                    }
                }
            }
            print!("{out}");
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        PluginCommand::Check { file } => {
            let checked = plugins::check(&file)?;
            let mut out = String::new();
            let version = checked.interface.version().unwrap_or("none");
            let _ = writeln!(out, "{}: built for sift:plugin@{version}", file.display());
            for (title, items) in
                [("exports", &checked.interface.exports), ("imports", &checked.interface.imports)]
            {
                let _ = writeln!(out, "{title}:");
                if items.is_empty() {
                    let _ = writeln!(out, "  (none)");
                }
                for (name, funcs) in items {
                    let _ = writeln!(out, "  {name}: {}", funcs.join(", "));
                }
            }
            if !checked.tools.is_empty() {
                let _ = writeln!(out, "tools:");
                for tool in &checked.tools {
                    let _ = writeln!(out, "  {}: {}", tool.name, tool.description);
                }
            }
            match &checked.refusal {
                None => {
                    let _ = writeln!(out, "accepted: sift {} runs it", env!("CARGO_PKG_VERSION"));
                    print!("{out}");
                    Ok(ExitCode::SUCCESS)
                }
                Some(reason) => {
                    print!("{out}");
                    eprintln!("error: refused: {reason}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
