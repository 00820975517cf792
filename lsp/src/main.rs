//! `sift`: the command-line interface and the language server of the sift code assistant.

use std::process::ExitCode;

use clap::Parser;
use sift_lsp::cli;

// Indexing allocates many small strings and vectors: mimalloc spends noticeably less time on
// them than the system allocator (see bench/index-bench.sh for the numbers).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(unsafe_code)] // the one call that needs it; see sift_lsp::alloc
fn main() -> ExitCode {
    // SAFETY: nothing has touched tree-sitter yet: this is the first thing the process does.
    unsafe { sift_lsp::alloc::use_mimalloc_for_tree_sitter() };
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", sift_lsp::message::describe(&err));
            ExitCode::FAILURE
        }
    }
}
