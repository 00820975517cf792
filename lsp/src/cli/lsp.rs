//! `sift lsp`: run the language server on stdin/stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::server::{self, Ending};

/// Arguments of `sift lsp`.
#[derive(Debug, Args)]
pub struct LspArgs {
    /// Speak LSP over stdin/stdout (the default and only transport; accepted for clients that
    /// pass it).
    #[arg(long)]
    pub stdio: bool,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// Runs the server until the client says `exit` or closes stdin.
pub fn run(_args: LspArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let ending = runtime.block_on(server::serve(tokio::io::stdin(), tokio::io::stdout()));
    // Background work (watchers, a blocked stdin read) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(match ending {
        Ending::Clean => ExitCode::SUCCESS,
        Ending::Abrupt => ExitCode::from(1),
    })
}
