//! `sift`: the command-line interface and the language server of the sift code assistant.

use std::process::ExitCode;

use clap::Parser;
use sift_lsp::cli;

// Indexing allocates many small strings and vectors: mimalloc spends noticeably less time on
// them than the system allocator (see bench/index-bench.sh for the numbers).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(unsafe_code)] // the allocator hook (see sift_lsp::alloc) and one environment variable
fn main() -> ExitCode {
    // SAFETY: nothing has touched tree-sitter yet: this is the first thing the process does.
    unsafe { sift_lsp::alloc::use_mimalloc_for_tree_sitter() };
    // onnxruntime's PyPI build starts Microsoft's telemetry client and writes a usage database
    // under ~/.cache/Microsoft even when sift turns telemetry off through its API; only this
    // variable stops it (it is read when the runtime starts). A value the user set is kept.
    if sift_engine::env::get_os("ORT_DISABLE_TELEMETRY").is_none() {
        // SAFETY: no other thread exists yet, so nothing reads the environment concurrently.
        unsafe { std::env::set_var("ORT_DISABLE_TELEMETRY", "1") };
    }
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", sift_lsp::message::describe(&err));
            ExitCode::FAILURE
        }
    }
}
