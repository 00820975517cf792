//! `sift search`: refresh the index when needed, then print the best chunks.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use sift_engine::embeddings::Semantic;
use sift_engine::fates::Front;
use sift_engine::index::{CodeIndex, Error, Hit};
use sift_engine::{Mode, Query, Workspace};

use sift_engine::open;

use super::progress::Terminal;
use super::{RepoArgs, WalkArgs};

/// Arguments of `sift search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for: identifiers in any spelling, words, a path fragment.
    #[arg(required = true, value_name = "QUERY")]
    query: Vec<String>,
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    walk: WalkArgs,
    /// Number of results.
    #[arg(short = 'k', long = "limit", default_value_t = 10, value_name = "N")]
    k: usize,
    /// One JSON object per result per line (see docs/search.md).
    #[arg(long)]
    json: bool,
    /// Search mode [default: hybrid when embeddings exist, else lexical].
    #[arg(long, value_parser = super::parse_mode())]
    mode: Option<Mode>,
    /// Every matching chunk a result of its own, instead of each file once with its best chunk
    /// (the default).
    #[arg(long)]
    chunks: bool,
    /// At most N results from one file (each chunk a result, as with `--chunks`).
    #[arg(long, value_name = "N")]
    max_per_file: Option<usize>,
    /// Search the index as it is, without checking the tree for changes first.
    #[arg(long, conflicts_with = "keep_watching")]
    no_refresh: bool,
    /// After answering, leave a watcher (`sift index --watch`) running in the background so
    /// that later searches skip the check; it stops after SECS seconds without a search
    /// [default: `[index] keep_watching_secs`, 0: none].
    #[arg(long, value_name = "SECS")]
    keep_watching: Option<u64>,
}

/// Runs `sift search`.
pub fn run(args: SearchArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    let query = args.query.join(" ");
    // Refuse a query with no words (nothing to match, nothing to mean) before spending time on
    // the index.
    if sift_engine::index::tokenize(&query).is_empty() {
        return Err(Error::EmptyQuery(query).into());
    }
    // The model loads (and embeds the query) on the other core while the index is opened.
    let preload = match args.mode {
        Some(Mode::Lexical) => None,
        _ => open::preload(&root, &query),
    };
    let index = open_index(&root, &args.walk, args.no_refresh)?;
    let refresh = !args.no_refresh && !index.layout().is_watched();
    let semantic = match args.mode {
        Some(Mode::Lexical) => Semantic::off("lexical search was asked for"),
        mode => {
            let required = mode == Some(Mode::Semantic);
            open::for_search(&index, &root, refresh, required, preload, &Terminal)?
        }
    };
    let config = super::load_config(&root, &[])?;
    let workspace = Workspace::new(index, semantic)?.configured(&config, Front::CLI)?;
    let asked = Query { mode: args.mode, ..Query::new(&query, args.k) }
        .listed(args.chunks, args.max_per_file);
    let found = sift_engine::search(&[&workspace], &asked)?;
    sift_engine::search::shown(&[&workspace], &asked, &found);
    if let (Some(why), Some(_)) = (&found.fallback, args.mode) {
        eprintln!("note: hybrid search falls back to lexical: {why}");
    }
    let hits: Vec<(Hit, Vec<Hit>)> = found.hits.into_iter().map(|f| (f.hit, f.more)).collect();
    print_hits(&hits, args.json)?;
    if hits.is_empty() && !args.json {
        eprintln!("no results for {query:?}");
    }
    // The answer is out; only a search that checked the tree itself leaves a watcher.
    if refresh {
        keep_watching(&root, &args)?;
    }
    workspace.recorder.flush();
    // Nothing is left to write: the process ends without tearing the model and the index down
    // (onnxruntime's session and thread pools take tens of milliseconds to drop).
    std::mem::forget(workspace);
    Ok(ExitCode::SUCCESS)
}

/// Starts `sift index --watch --idle-exit SECS` in the background when the configuration (or
/// `--keep-watching`) asks for it: its own process group, no terminal, output to
/// `.sift/logs/watch.log`. A bad setting is a warning: the search has answered already.
fn keep_watching(root: &std::path::Path, args: &SearchArgs) -> Result<()> {
    let mut flags = args.walk.flags();
    if let Some(secs) = args.keep_watching {
        flags.push(sift_engine::config::Flag {
            section: "index",
            key: "keep_watching_secs",
            flag: "--keep-watching",
            value: toml::Value::Integer(i64::try_from(secs).unwrap_or(i64::MAX)),
        });
    }
    let idle = match super::load_config(root, &flags)?.keep_watching() {
        Ok(Some(idle)) => idle,
        Ok(None) => return Ok(()),
        Err(invalid) => {
            eprintln!("warning: {invalid}; no watcher left running");
            return Ok(());
        }
    };
    let store = sift_engine::store::open(root)?;
    let logs = store.path(&sift_engine::index::LOGS);
    std::fs::create_dir_all(&logs).map_err(|e| Error::io("create", &logs, e))?;
    let log_path = logs.join("watch.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| Error::io("open", &log_path, e))?;
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .args(["index", "--watch", "--quiet", "--idle-exit", &idle.as_secs().to_string()])
        .arg("--path")
        .arg(root);
    if let Some(max) = args.walk.max_file_size {
        command.args(["--max-file-size", &max.to_string()]);
    }
    if args.walk.no_follow_symlinks {
        command.arg("--no-follow-symlinks");
    }
    use std::os::unix::process::CommandExt;
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Not in the terminal's process group: Ctrl-C on a later command does not reach it.
        .process_group(0)
        .spawn()?;
    eprintln!(
        "note: left a watcher keeping the index fresh (pid {}; it stops after {} s without a search; log {})",
        child.id(),
        idle.as_secs(),
        log_path.display()
    );
    Ok(())
}

/// The index of `root`, brought up to date unless `no_refresh` (see
/// [`sift_engine::open::index`]), under the walk flags given.
pub(super) fn open_index(
    root: &std::path::Path,
    walk: &WalkArgs,
    no_refresh: bool,
) -> Result<CodeIndex> {
    Ok(open::index(root, no_refresh, || super::update_options(root, walk), &Terminal)?)
}

/// A result of `sift search --json`: the hit's fields, and the file's other matching chunks
/// when there are any.
#[derive(serde::Serialize)]
struct JsonHit<'a> {
    #[serde(flatten)]
    hit: &'a Hit,
    #[serde(skip_serializing_if = "<[Hit]>::is_empty")]
    more: &'a [Hit],
}

#[allow(clippy::print_stdout)]
fn print_hits(hits: &[(Hit, Vec<Hit>)], json: bool) -> Result<()> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (hit, more) in hits {
        if json {
            serde_json::to_writer(&mut out, &JsonHit { hit, more })?;
            writeln!(out)?;
            continue;
        }
        let what = match (&hit.symbol, &hit.container) {
            (Some(s), Some(c)) => format!("{} {s} (in {c})", hit.kind),
            (Some(s), None) => format!("{} {s}", hit.kind),
            (None, _) => hit.kind.clone(),
        };
        // Content natural-language ranking leaves aside, when a lexical search shows it.
        let what = match hit.aside {
            Some(aside) => format!("{what} ({})", aside.as_str()),
            None => what,
        };
        writeln!(
            out,
            "{}:{}-{}  {what}  [{:.2}]",
            hit.path, hit.start_line, hit.end_line, hit.score
        )?;
        let first = hit.match_line.saturating_sub(u64::from(hit.match_line > hit.start_line));
        for (i, line) in hit.snippet.lines().enumerate() {
            writeln!(out, "{:>6} │ {line}", first + i as u64)?;
        }
        if !more.is_empty() {
            writeln!(out, "{:>6} + {}", "", also(more))?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// The line under a file's best chunk naming its other matching chunks: `2 more in this file:
/// 120-140 function parse, 200-230 class Reader` (the first five, then a count).
fn also(more: &[Hit]) -> String {
    const NAMED: usize = 5;
    let named: Vec<String> = more
        .iter()
        .take(NAMED)
        .map(|h| match &h.symbol {
            Some(s) => format!("{}-{} {} {s}", h.start_line, h.end_line, h.kind),
            None => format!("{}-{}", h.start_line, h.end_line),
        })
        .collect();
    let rest = more.len().saturating_sub(NAMED);
    let tail = if rest > 0 { format!(", and {rest} more") } else { String::new() };
    format!("{} more in this file: {}{tail}", more.len(), named.join(", "))
}
