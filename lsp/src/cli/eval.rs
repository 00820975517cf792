//! `sift eval`: search quality on questions with known answers, lexical, semantic and hybrid
//! side by side, at file level.
//!
//! Each line of a queries file is `{"q": "...", "gold": ["path", ...]}` (paths relative to the
//! repository), optionally with `"id"` and `"split"` (`"tuning"` or `"held-out"`). A record
//! without a split is put in one by its id (or, without an id, its question): held-out when
//! the 64-bit FNV-1a hash of `<set>/<id>` is odd ([`split_of`]; `bench/eval/build_sets.py`
//! uses the same rule). Scores are printed per set and split: tune on `tuning`, report
//! `held-out`. A query's results are reduced to distinct files in rank order; recall@k is the
//! share of its gold files among the first k files, MRR the mean of 1/rank of the first gold
//! file (0 when none is in the first 10). Every query runs through the engine's one search
//! ([`sift_engine::search`]), the path `sift search` and the language server take.
//!
//! Beside that file ranking (100 chunks deep), the **shown list** is scored: the files of the
//! ten results `sift search` prints by default — what the CLI, `sift/search`, MCP's search
//! tool and the agent's search tool are given — in order (`shown_*`: R@5 and MRR over those
//! files, and how many distinct files the ten results hold). By default each result is a
//! file (its best chunk), so the ten hold ten files; with `--chunks` (as `sift search
//! --chunks`) or `--max-per-file`, each result is a chunk, a few files can fill the ten, and
//! the shown list then holds fewer files than the ranking.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use sift_engine::index::{Asides, Error, Fusion, Hit};
use sift_engine::{Mode, Query, Workspace};

use super::{RepoArgs, WalkArgs};

/// Arguments of `sift eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// JSONL files of `{"q": ..., "gold": [...]}` lines.
    #[arg(required = true, value_name = "QUERIES.jsonl")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    walk: WalkArgs,
    /// Use the index as it is (do not index or embed first).
    #[arg(long)]
    no_refresh: bool,
    /// Print one JSON object per set and mode instead of a table.
    #[arg(long)]
    json: bool,
    /// At most N results from one file, as `sift search --max-per-file N` (the shown list and
    /// the ranking both).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    max_per_file: Option<u16>,
    /// Score the shown list as `sift search --chunks` gives it (every chunk a result, a few
    /// files can fill the ten) instead of each file once.
    #[arg(long)]
    chunks: bool,
    /// Rank translation catalogs, lock files, minified, vendored and generated code like
    /// everything else (`[search] leave_aside = []`), in the shown list and the ranking.
    #[arg(long)]
    keep_aside: bool,
    /// Fusion: the rank constant of reciprocal-rank fusion.
    #[arg(long, value_name = "K")]
    fusion_k: Option<f32>,
    /// Fusion: weight of the lexical ranking.
    #[arg(long, value_name = "W")]
    lexical_weight: Option<f32>,
    /// Fusion: weight of the semantic ranking.
    #[arg(long, value_name = "W")]
    semantic_weight: Option<f32>,
    /// Fusion: how deep each ranking is read.
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
    /// Fusion: a convex combination of scaled scores with this lexical weight, instead of RRF
    /// (and instead of the weight measured for the model).
    #[arg(long, value_name = "A")]
    alpha: Option<f32>,
    /// Fusion: reciprocal-rank fusion even when the default is a convex combination.
    #[arg(long, conflicts_with = "alpha")]
    rrf: bool,
    /// Fusion: weight of the file-level BM25 score added to every chunk of a file (0: off).
    #[arg(long, value_name = "W")]
    file_weight: Option<f32>,
    /// Fusion: the same for queries kept in lexical order (identifier routing).
    #[arg(long, value_name = "W")]
    routed_file_weight: Option<f32>,
    /// Fusion: no identifier routing (fuse every query the same way).
    #[arg(long)]
    no_routing: bool,
    /// Fusion: scale semantic scores from the similarity at this quantile of the corpus.
    #[arg(long, value_name = "Q")]
    floor_quantile: Option<f32>,
    /// Print the queries whose gold file is not in the first 10 files.
    #[arg(long)]
    misses: bool,
    /// Print the queries that semantic or hybrid search ranks worse than lexical search (the
    /// rank of the first gold file), to see what fusion loses.
    #[arg(long)]
    regressions: bool,
    /// Only this split (`tuning` or `held-out`).
    #[arg(long, value_name = "SPLIT")]
    split: Option<String>,
    /// Write each query's lexical and semantic rankings (100 deep, with scores) to this JSONL
    /// file, to study fusions offline.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Question {
    q: String,
    gold: Vec<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    split: Option<String>,
}

/// The split of a record without one: `held-out` when the FNV-1a hash of `<set>/<id>` is odd.
fn split_of(set: &str, id: &str) -> &'static str {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in set.bytes().chain(std::iter::once(b'/')).chain(id.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    if h % 2 == 1 { "held-out" } else { "tuning" }
}

/// One set's scores in one mode.
#[derive(Debug, Serialize)]
struct Scores {
    set: String,
    split: String,
    mode: &'static str,
    queries: usize,
    recall_at_1: f64,
    recall_at_5: f64,
    recall_at_10: f64,
    mrr: f64,
    /// Share of queries with at least one gold file among the first five (Acc@5, how
    /// issue-localisation benchmarks such as SWE-bench's count a hit).
    acc_at_5: f64,
    /// R@5 of the shown list (see the module doc).
    shown_recall_at_5: f64,
    /// MRR of the shown list (0 when no gold file is in it).
    shown_mrr: f64,
    /// Distinct files in the shown list, on average (at most [`SHOWN`]).
    shown_files: f64,
    /// Mean time per query, in milliseconds (informative only; the ranking's search alone).
    ms_per_query: f64,
}

/// How many results the shown list holds: `sift search`'s default `-k`.
const SHOWN: usize = 10;

/// Runs `sift eval`.
#[allow(clippy::print_stdout)]
pub fn run(args: EvalArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    let mut sets = Vec::new();
    for file in &args.files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut queries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let mut q: Question = serde_json::from_str(line).with_context(|| {
                format!("{}:{}: not a {{\"q\", \"gold\"}} line", file.display(), i + 1)
            })?;
            if q.gold.is_empty() {
                anyhow::bail!("{}:{}: \"gold\" is empty", file.display(), i + 1);
            }
            let split = match q.split.take() {
                Some(s) if s == "tuning" || s == "held-out" => s,
                Some(s) => anyhow::bail!(
                    "{}:{}: split {s:?} is neither \"tuning\" nor \"held-out\"",
                    file.display(),
                    i + 1
                ),
                None => split_of(&name, q.id.as_deref().unwrap_or(&q.q)).to_string(),
            };
            if args.split.as_ref().is_some_and(|want| *want != split) {
                continue;
            }
            q.split = Some(split);
            queries.push(q);
        }
        for split in ["tuning", "held-out"] {
            let (part, rest): (Vec<Question>, Vec<Question>) =
                queries.into_iter().partition(|q| q.split.as_deref() == Some(split));
            queries = rest;
            if !part.is_empty() {
                sets.push((name.clone(), split, part));
            }
        }
    }
    let index = super::search::open_index(&root, &args.walk, args.no_refresh)?;
    // The model and vectors `sift search` would use (the upgrade's once complete).
    let semantic = sift_engine::open::for_search(
        &index,
        &root,
        !args.no_refresh,
        false,
        None,
        &super::progress::Terminal,
    )?;
    let model_id = semantic.model_id().map(str::to_string);
    if model_id.is_none() {
        eprintln!(
            "note: semantic search is off ({}); only lexical search is scored",
            semantic.unavailable().unwrap_or("no embeddings yet")
        );
    }
    // The same engine search as `sift search` and the language server run.
    let workspace = Workspace::new(index, semantic)?
        .with_leave_aside(super::load_config(&root, &[])?.leave_aside()?);
    let defaults = Fusion::default();
    let fusion = Fusion {
        k: args.fusion_k.unwrap_or(defaults.k),
        lexical: args.lexical_weight.unwrap_or(defaults.lexical),
        semantic: args.semantic_weight.unwrap_or(defaults.semantic),
        depth: args.depth.unwrap_or(defaults.depth),
        alpha: if args.rrf { None } else { args.alpha.or(defaults.alpha) },
        identifier_routing: !args.no_routing && defaults.identifier_routing,
        floor_quantile: args.floor_quantile.unwrap_or(defaults.floor_quantile),
        file_weight: args.file_weight.unwrap_or(defaults.file_weight),
        routed_file_weight: args.routed_file_weight.unwrap_or(defaults.routed_file_weight),
        // An explicit --alpha is what is measured, not the model's weight.
        per_model: args.alpha.is_none() && defaults.per_model,
    };
    let mut dump = match &args.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => None,
    };
    let max_per_file = args.max_per_file.map(usize::from);
    // The configuration's (`[search] leave_aside`), or nothing with --keep-aside.
    let leave_aside = args.keep_aside.then_some(Asides::NONE);
    let mut all = Vec::new();
    for (name, split, queries) in &sets {
        if let (Some(out), true) = (dump.as_mut(), model_id.is_some()) {
            for q in queries {
                write_dump(out, &workspace, name, split, q)?;
            }
        }
        let modes: &[Mode] = if model_id.is_some() {
            &[Mode::Lexical, Mode::Semantic, Mode::Hybrid]
        } else {
            &[Mode::Lexical]
        };
        // The first gold file's rank per query in lexical search, for --regressions.
        let mut lexical_ranks: Vec<Option<usize>> = Vec::new();
        for &mode in modes {
            let mut sums = [0f64; 8];
            let mut searching = std::time::Duration::ZERO;
            for (qi, q) in queries.iter().enumerate() {
                let start = Instant::now();
                let hits = ranked(
                    &workspace,
                    &Query {
                        mode: Some(mode),
                        fusion,
                        max_per_file,
                        leave_aside,
                        ..Query::chunks(&q.q, 100)
                    },
                )?;
                searching += start.elapsed();
                let files = distinct_files(&hits);
                // The list a user is shown: the default ten results, searched as `sift search`
                // searches them.
                let shown =
                    Query { mode: Some(mode), fusion, leave_aside, ..Query::new(&q.q, SHOWN) }
                        .listed(args.chunks, max_per_file);
                let shown = distinct_files(&ranked(&workspace, &shown)?);
                let in_shown = |k: usize| {
                    let top = &shown[..shown.len().min(k)];
                    q.gold.iter().filter(|g| top.contains(g)).count() as f64 / q.gold.len() as f64
                };
                sums[5] += in_shown(5);
                sums[6] += shown
                    .iter()
                    .position(|f| q.gold.contains(f))
                    .map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
                sums[7] += shown.len() as f64;
                let found = |k: usize| {
                    let top = &files[..files.len().min(k)];
                    q.gold.iter().filter(|g| top.contains(g)).count() as f64 / q.gold.len() as f64
                };
                sums[0] += found(1);
                sums[1] += found(5);
                sums[2] += found(10);
                sums[4] += f64::from(u8::from(found(5) > 0.0));
                let full_rank = files.iter().position(|f| q.gold.contains(f));
                if mode == Mode::Lexical {
                    lexical_ranks.push(full_rank);
                } else if args.regressions
                    && let Some(Some(lex)) = lexical_ranks.get(qi)
                    && full_rank.is_none_or(|r| r > *lex)
                {
                    let mode = mode.as_str();
                    eprintln!(
                        "worse [{name} {mode}] {:?} → {:?}: lexical #{}, {mode} {}",
                        q.q,
                        q.gold,
                        lex + 1,
                        full_rank.map_or("not found".into(), |r| format!("#{}", r + 1))
                    );
                }
                let rank = files.iter().take(10).position(|f| q.gold.contains(f));
                sums[3] += rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
                if args.misses && rank.is_none() {
                    eprintln!(
                        "miss [{name} {}] {:?} → want {:?}, got {:?}",
                        mode.as_str(),
                        q.q,
                        q.gold,
                        &files[..files.len().min(3)]
                    );
                }
            }
            let n = queries.len().max(1) as f64;
            all.push(Scores {
                set: name.clone(),
                split: split.to_string(),
                mode: mode.as_str(),
                queries: queries.len(),
                recall_at_1: sums[0] / n,
                recall_at_5: sums[1] / n,
                recall_at_10: sums[2] / n,
                mrr: sums[3] / n,
                acc_at_5: sums[4] / n,
                shown_recall_at_5: sums[5] / n,
                shown_mrr: sums[6] / n,
                shown_files: sums[7] / n,
                ms_per_query: searching.as_secs_f64() * 1000.0 / n,
            });
        }
    }
    if args.json {
        for s in &all {
            println!("{}", serde_json::to_string(s)?);
        }
    } else {
        if let Some(id) = &model_id {
            let how = match fusion.for_model(id).alpha {
                Some(a) => format!("scores, alpha={a} floor_quantile={}", fusion.floor_quantile),
                None => format!(
                    "rrf, k={} lexical={} semantic={}",
                    fusion.k, fusion.lexical, fusion.semantic
                ),
            };
            println!(
                "model: {}; fusion: {how} depth={} routing={}",
                id, fusion.depth, fusion.identifier_routing
            );
        }
        println!(
            "{:<34} {:<8} {:<9} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
            "set",
            "split",
            "mode",
            "n",
            "R@1",
            "R@5",
            "R@10",
            "MRR",
            "A@5",
            "sR@5",
            "sMRR",
            "files",
            "ms/q"
        );
        for s in &all {
            println!(
                "{:<34} {:<8} {:<9} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.1} {:>8.1}",
                s.set,
                s.split,
                s.mode,
                s.queries,
                s.recall_at_1,
                s.recall_at_5,
                s.recall_at_10,
                s.mrr,
                s.acc_at_5,
                s.shown_recall_at_5,
                s.shown_mrr,
                s.shown_files,
                s.ms_per_query
            );
        }
        println!(
            "sR@5, sMRR: the shown list (the files of the default {SHOWN} results, as `sift search` prints them); files: distinct files in it"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One query's lexical and semantic rankings for `--dump`: each hit's path, first line, score
/// and symbol, and for the lexical hits their similarity where the semantic ranking (1,000
/// deep) has them.
fn write_dump(
    out: &mut impl std::io::Write,
    workspace: &Workspace,
    set: &str,
    split: &str,
    q: &Question,
) -> Result<()> {
    let run = |mode: Mode, k: usize| -> Result<Vec<Hit>> {
        ranked(workspace, &Query { mode: Some(mode), ..Query::chunks(&q.q, k) })
    };
    let lexical = run(Mode::Lexical, 100)?;
    let semantic = run(Mode::Semantic, 1000)?;
    let sim: std::collections::HashMap<(&str, u64), f32> =
        semantic.iter().map(|h| ((h.path.as_str(), h.start_line), h.score)).collect();
    let row = |h: &Hit| {
        serde_json::json!([
            h.path,
            h.start_line,
            h.score,
            h.symbol,
            h.container,
            sim.get(&(h.path.as_str(), h.start_line))
        ])
    };
    let record = serde_json::json!({
        "set": set, "split": split, "q": q.q, "gold": q.gold,
        "identifiers": sift_engine::index::query_identifiers(&q.q),
        "lexical": lexical.iter().map(row).collect::<Vec<_>>(),
        "semantic": semantic.iter().take(100).map(row).collect::<Vec<_>>(),
        "semantic_scores": semantic.iter().map(|h| h.score).collect::<Vec<_>>(),
    });
    writeln!(out, "{record}")?;
    Ok(())
}

/// The results of `query` through the engine's one search (none for a query without words).
fn ranked(workspace: &Workspace, query: &Query<'_>) -> Result<Vec<Hit>> {
    match sift_engine::search(&[workspace], query) {
        Ok(found) => Ok(found.hits.into_iter().map(|f| f.hit).collect()),
        Err(sift_engine::Error::Index(Error::EmptyQuery(_))) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The distinct files of a ranking, in order of first appearance.
fn distinct_files(hits: &[Hit]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    hits.iter().filter(|h| seen.insert(h.path.as_str())).map(|h| h.path.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bench/eval/build_sets.py` writes each record's split with the same rule `sift eval`
    /// applies to records without one: the two must agree, or a set rebuilt without splits
    /// would move records between tuning and held-out.
    #[test]
    fn the_split_rule_matches_the_generator() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/eval");
        let mut checked = 0;
        for set in ["django-docs", "django-issues", "tantivy-identifiers"] {
            let text = std::fs::read_to_string(root.join(format!("{set}.jsonl"))).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let id = v["id"].as_str().unwrap();
                assert_eq!(split_of(set, id), v["split"].as_str().unwrap(), "{set}/{id}");
                checked += 1;
            }
        }
        assert!(checked >= 1000, "{checked}");
    }
}
