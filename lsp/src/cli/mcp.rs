//! `sift mcp`: run the MCP server on stdin/stdout (see the `mcp` module).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::RepoArgs;

/// Arguments of `sift mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Offer the `memory_add` tool: the client's model may write memory notes into
    /// .sift/memory/ (off by default).
    #[arg(long)]
    allow_memory_add: bool,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// Serves until the client closes stdin.
pub fn run(args: McpArgs) -> Result<ExitCode> {
    let given = args.repo.root();
    let root = std::fs::canonicalize(&given)
        .with_context(|| format!("cannot serve {}: no such folder", given.display()))?;
    if !root.is_dir() {
        anyhow::bail!("cannot serve {}: not a folder", given.display());
    }
    let options = crate::mcp::Options { root, allow_memory_add: args.allow_memory_add };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served =
        runtime.block_on(crate::mcp::serve(options, tokio::io::stdin(), tokio::io::stdout()));
    // Background work (an index update, the watcher, a blocked stdin read) must not keep the
    // process alive: the index survives being stopped at any point.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served.map(|()| ExitCode::SUCCESS)
}
