//! `sift`: the command-line interface and the language server of the sift code assistant.

use std::process::ExitCode;

use clap::Parser;
use sift_lsp::cli;

// Indexing allocates many small strings and vectors: mimalloc spends noticeably less time on
// them than the system allocator (see bench/index-bench.sh for the numbers).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", cli::describe(&err));
            ExitCode::FAILURE
        }
    }
}
