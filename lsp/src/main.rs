//! `sift`: the command-line interface (and, later, the language server) of the sift code
//! assistant. This crate is the only one that knows about the terminal, the process and its exit
//! status; the work itself happens in `sift-indexer` and `sift-runtime`.

use std::process::ExitCode;

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_tracing();
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", cli::describe(&err));
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout belongs to results and, later, to the protocol). `SIFT_LOG` takes
/// an `env_logger`-style filter; the default shows warnings.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SIFT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}
