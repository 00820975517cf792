//! How fast can indexing be at best? Measures, on one thread and over the same files that
//! `sift index` reads, the CPU time of the stages indexing cannot avoid, so the benchmark can show
//! sift's own rate beside the ceiling tree-sitter sets:
//!
//! - `read`: reading each file and checking its UTF-8 (what every indexer pays);
//! - `parse`: tree-sitter parsing alone (parse, then drop the tree), for the files sift parses:
//!   those with a grammar that do not look generated and are at most 256 KiB;
//! - `chunk`: sift's chunker (the same parse plus the walk over the tree that cuts chunks);
//! - `tokenize`: the code tokenizer over each file's whole text.
//!
//! Files are read into memory before the timed stages, so only `read` touches the disk. CPU time
//! is the thread's own (`/proc/thread-self/schedstat`), so other processes on the machine do not
//! inflate it; MB/CPU-s divides *all* the bytes sift reads (parsed or not) by a stage's CPU time,
//! the same way `bench/index_bench.py` computes sift's rate.
//!
//! ```text
//! cargo run --release -p sift-lsp --example parse_ceiling -- CORPUS [--json]
//! ```
//!
//! The process allocates as `sift` does: mimalloc for Rust and for tree-sitter
//! (`PARSE_CEILING_LIBC=1`: tree-sitter on libc's `malloc`, as before sift set its allocator).

use std::path::Path;
use std::time::{Duration, Instant};

use sift_engine::index::CodeTokenizer;
use sift_engine::index::looks_generated;
use sift_engine::index::walk;
use sift_engine::index::{Chunker, IndexConfig, Language};
use tantivy::tokenizer::{TokenStream, Tokenizer};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Bytes examined for NUL when deciding whether a file is binary (as `sift index` does).
const BINARY_SNIFF: usize = 8000;

/// This thread's CPU time so far (wall time where the kernel does not say).
fn cpu_now() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

struct Stage {
    name: &'static str,
    cpu: Duration,
    wall: Duration,
}

fn timed(name: &'static str, f: impl FnOnce()) -> Stage {
    let (cpu0, wall0) = (cpu_now(), Instant::now());
    f();
    let wall = wall0.elapsed();
    let cpu = match (cpu0, cpu_now()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall,
    };
    Stage { name, cpu, wall }
}

#[allow(unsafe_code, clippy::print_stdout)]
fn main() {
    // `PARSE_CEILING_LIBC=1` leaves tree-sitter on libc's allocator, to show what mimalloc saves.
    if std::env::var_os("PARSE_CEILING_LIBC").is_none() {
        // SAFETY: nothing has touched tree-sitter yet.
        unsafe { sift_lsp::alloc::use_mimalloc_for_tree_sitter() };
    }
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: parse_ceiling CORPUS [--json]");
        std::process::exit(2);
    };
    let json = args.any(|a| a == "--json");
    let root = Path::new(&root);

    let walked = walk(root, &IndexConfig::default());
    let mut files: Vec<(String, String)> = Vec::with_capacity(walked.files.len());
    // Bytes as read from disk (what `sift index` reports), before invalid UTF-8 is replaced.
    let mut bytes = 0usize;
    let read = timed("read", || {
        for f in &walked.files {
            let Ok(raw) = std::fs::read(&f.abs) else { continue };
            if memchr_nul(&raw[..raw.len().min(BINARY_SNIFF)]) {
                continue;
            }
            bytes += raw.len();
            let text = match String::from_utf8(raw) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            files.push((f.rel.clone(), text));
        }
    });

    let mut parsed_bytes = 0usize;
    let parse = timed("parse", || {
        let mut parsers: Vec<(Language, tree_sitter::Parser)> = Vec::new();
        for (rel, text) in &files {
            let Some(lang) = Language::from_path(Path::new(rel)) else { continue };
            if looks_generated(text) {
                continue;
            }
            let at = match parsers.iter().position(|(l, _)| *l == lang) {
                Some(at) => at,
                None => {
                    let mut p = tree_sitter::Parser::new();
                    if p.set_language(&lang.grammar()).is_err() {
                        continue;
                    }
                    parsers.push((lang, p));
                    parsers.len() - 1
                }
            };
            if parsers[at].1.parse(text, None).is_some() {
                parsed_bytes += text.len();
            }
        }
    });

    let mut chunks = 0usize;
    let chunk = timed("chunk", || {
        let mut chunker = Chunker::default();
        for (rel, text) in &files {
            chunks += chunker.chunk(Path::new(rel), text).chunks.len();
        }
    });

    let mut tokens = 0usize;
    let tokenize = timed("tokenize", || {
        let mut tokenizer = CodeTokenizer::default();
        for (_, text) in &files {
            let mut stream = tokenizer.token_stream(text);
            while stream.advance() {
                tokens += 1;
            }
        }
    });

    let stages = [read, parse, chunk, tokenize];
    let mb = bytes as f64 / 1e6;
    if json {
        let mut out = serde_json::json!({
            "files": files.len(),
            "bytes": bytes,
            "parsed_bytes": parsed_bytes,
            "chunks": chunks,
            "tokens": tokens,
        });
        for s in &stages {
            out[format!("{}_cpu_s", s.name)] = s.cpu.as_secs_f64().into();
            out[format!("{}_wall_s", s.name)] = s.wall.as_secs_f64().into();
            out[format!("{}_mb_per_cpu_s", s.name)] = (mb / s.cpu.as_secs_f64()).into();
        }
        println!("{out}");
        return;
    }
    println!(
        "{} files, {:.1} MB ({:.1} MB parsed by tree-sitter), {chunks} chunks, {tokens} tokens",
        files.len(),
        mb,
        parsed_bytes as f64 / 1e6
    );
    for s in &stages {
        println!(
            "{:<9} {:>8.2} CPU-s {:>8.2} s wall {:>8.1} MB per CPU-second",
            s.name,
            s.cpu.as_secs_f64(),
            s.wall.as_secs_f64(),
            mb / s.cpu.as_secs_f64()
        );
    }
}

fn memchr_nul(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}
