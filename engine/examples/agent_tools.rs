//! Times the agent's `search`, `read` and `outline` tools on an indexed repository, as the
//! language server runs them (the session built once, each call timed alone), and prints the
//! p50 and p95 of each in milliseconds. Usage: `agent_tools ROOT [CALLS]` (index ROOT first
//! with `sift index`): `cargo run --release -p sift-engine --example agent_tools -- ROOT`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use sift_engine::Workspace;
use sift_engine::agent::Session;
use sift_engine::agent::rules::Rules;
use sift_engine::embeddings::Semantic;
use sift_indexer::CodeIndex;
use sift_runtime::llm::Cancel;
use sift_runtime::sandbox::{Policy, SandboxSettings};

const QUERIES: &[&str] = &[
    "where are sessions saved to the database",
    "csrf token check on form submission",
    "QuerySet.select_related",
    "how are migrations squashed",
    "password hashing iterations",
    "cache key versioning",
    "template autoescape filter",
    "url resolver reverse with arguments",
];

fn percentile(mut times: Vec<f64>, p: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[i]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().expect("usage: agent_tools ROOT [CALLS]"));
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(40);
    let root = root.canonicalize().expect("the root exists");
    let store = sift_engine::store::open(&root).expect("opens .sift/");
    let index = CodeIndex::open(&store).expect("opens").expect("run `sift index` first");
    // The configured embedding model and the vectors `sift index` computed: hybrid search,
    // as the agent gets it.
    let embed = sift_engine::config::for_cli(&root, &[])
        .map_err(|e| e.to_string())
        .and_then(|c| c.embed().map_err(|e| e.to_string()));
    let semantic = Semantic::load(embed);
    semantic.run_pass(&index, &sift_indexer::NoProgress);
    eprintln!("semantic search: {}", semantic.unavailable().unwrap_or("on"));
    let workspace = Workspace::new(index, semantic).unwrap();
    let policy = Policy::for_workspace(&root, &SandboxSettings::default()).unwrap();
    let unsaved = BTreeMap::new();
    let files: Vec<String> = {
        let mut f: Vec<String> = workspace
            .index
            .manifest()
            .unwrap()
            .files
            .into_keys()
            .filter(|p| p.ends_with(".py") || p.ends_with(".rs"))
            .collect();
        f.sort();
        f
    };
    let mut session =
        Session::new(&workspace, &unsaved, &policy, &[], Rules::load(&root, &files)).unwrap();
    let cancel = Cancel::new();
    let mut table: Vec<(&str, Vec<f64>)> = Vec::new();
    for tool in ["search", "read", "outline"] {
        let mut times = Vec::with_capacity(calls);
        for i in 0..calls {
            let args = match tool {
                "search" => json!({"query": QUERIES[i % QUERIES.len()]}),
                "read" => json!({"path": files[(i * 37) % files.len()], "start_line": 1}),
                _ => json!({"path": files[(i * 53) % files.len()]}),
            };
            let started = Instant::now();
            let out = session.call(tool, &args, &cancel);
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(!out.error, "{tool} failed: {}", out.text);
        }
        table.push((tool, times));
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "tool     calls   p50 ms   p95 ms");
    for (tool, times) in table {
        let n = times.len();
        let _ = writeln!(
            out,
            "{tool:<8} {n:>5} {:>8.2} {:>8.2}",
            percentile(times.clone(), 0.5),
            percentile(times, 0.95)
        );
    }
}
