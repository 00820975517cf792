//! `sift index`: build or update the index and say what was done.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use sift_indexer::{CodeIndex, OpenNotice, UpdateReport};

use super::progress::TerminalProgress;
use super::{RepoArgs, WalkArgs, human_bytes};
use crate::watch::{Change, watch_tree};

/// Arguments of `sift index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The repository root (same as --path) [default: the current directory].
    #[arg(value_name = "PATH", conflicts_with = "path")]
    positional: Option<PathBuf>,
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    walk: WalkArgs,
    /// Throw the existing index away and build it again from scratch.
    #[arg(long)]
    rebuild: bool,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Build the lexical index only; compute no embeddings.
    #[arg(long)]
    no_embed: bool,
    /// After indexing, keep watching the tree and update the index as files change (until
    /// interrupted). While it runs, `sift search` skips its own check for changes.
    #[arg(long, conflicts_with = "json")]
    watch: bool,
    /// With --watch: stop once no `sift search` has relied on this watcher for SECS seconds,
    /// and do nothing when another sift process keeps the index fresh already (what a search
    /// started with --keep-watching runs).
    #[arg(long, requires = "watch", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    idle_exit: Option<u64>,
}

/// Runs `sift index`.
pub fn run(args: IndexArgs) -> Result<ExitCode> {
    let root = args.positional.clone().unwrap_or_else(|| args.repo.root());
    let opts = super::update_options(&root, &args.walk)?;
    let store = sift_engine::store::open(&root)?;
    let idle = args.idle_exit.map(std::time::Duration::from_secs);
    // One watcher with an idle limit is enough: claim the lock before doing any work.
    let alone = match idle {
        Some(_) => match sift_indexer::Layout::new(&store).watch_alone()? {
            Some(guard) => Some(guard),
            None => {
                #[allow(clippy::print_stdout)]
                {
                    println!(
                        "another sift process keeps {} fresh already; not watching",
                        root.display()
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
        },
        None => None,
    };
    let (index, notice) = if args.rebuild {
        (CodeIndex::rebuild(&store)?, None)
    } else {
        CodeIndex::open_or_create(&store)?
    };
    announce(notice.as_ref());
    let progress = TerminalProgress::new(args.quiet || args.json);
    let report = index.update(&opts, &progress);
    progress.finish();
    let report = report?;
    if !args.json {
        print_report(&index, &report, opts.config.max_file_size);
    }
    // Embeddings come second: lexical search works from here on, whatever happens next.
    let mut embedded = None;
    if !args.no_embed {
        let config = super::semantic::embed_config(&root)?;
        if let Some(model) = super::semantic::load_model(&config, false, args.json)?
            && let Some((r, secs)) =
                super::semantic::embed_missing(&index, &model, &config, args.quiet || args.json)?
        {
            {
                if !args.json {
                    #[allow(clippy::print_stdout)]
                    {
                        println!("{}", super::semantic::describe_report(&r, secs, &model));
                    }
                }
                embedded = Some(r);
            }
        }
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["embeddings"] = serde_json::to_value(&embedded)?;
        #[allow(clippy::print_stdout)]
        {
            println!("{value}");
        }
    }
    if args.watch {
        let guard = match alone {
            Some(guard) => guard,
            None => index.layout().watch()?,
        };
        watch(&index, &opts, guard, idle)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Updates the index whenever files change, until the process is interrupted, or, with an
/// `idle` limit, until no search has relied on the watcher for that long.
#[allow(clippy::print_stdout)]
fn watch(
    index: &CodeIndex,
    opts: &sift_indexer::UpdateOptions,
    _guard: sift_indexer::WatchGuard,
    idle: Option<std::time::Duration>,
) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel::<Change>();
    let _watcher = watch_tree(index.root(), move |change| {
        // Notes are not indexed: nothing to update for them here.
        if change != Change::Notes {
            let _ = tx.send(change);
        }
    })?;
    // What changed after the update above and before the watcher started.
    if let Err(e) = index.refresh(opts, &sift_indexer::NoProgress) {
        eprintln!("warning: {e}");
    }
    match idle {
        None => println!("watching {} for changes (Ctrl-C to stop)", index.root().display()),
        Some(limit) => println!(
            "watching {} for changes until no search has used it for {} s",
            index.root().display(),
            limit.as_secs()
        ),
    }
    let started = std::time::SystemTime::now();
    let layout = index.layout();
    let idle_for = || {
        let last = layout.last_use().map_or(started, |used| used.max(started));
        last.elapsed().unwrap_or_default()
    };
    loop {
        // Checked before every wait, so that a tree that keeps changing does not keep it alive.
        if let Some(limit) = idle
            && idle_for() >= limit
        {
            println!("stopped watching: no search used this watcher for {} s", limit.as_secs());
            break;
        }
        let first = match idle {
            None => rx.recv().ok(),
            Some(limit) => match rx.recv_timeout(std::time::Duration::from_secs(1).min(limit)) {
                Ok(change) => Some(change),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            },
        };
        let Some(first) = first else { break };
        // Gather what else arrived meanwhile into one update.
        let mut rescan = false;
        let mut paths = Vec::new();
        for change in std::iter::once(first).chain(rx.try_iter()) {
            match change {
                Change::Rescan => rescan = true,
                Change::Paths(more) => paths.extend(more),
                Change::Notes => {}
            }
        }
        let result = if rescan {
            index.update(opts, &sift_indexer::NoProgress)
        } else {
            index.update_paths(&paths, opts, &sift_indexer::NoProgress)
        };
        match result {
            Ok(r) if r.changed_anything() => println!(
                "updated: {} added, {} changed, {} removed ({} ms)",
                r.added, r.changed, r.removed, r.elapsed_ms
            ),
            Ok(_) => {}
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    Ok(())
}

/// Tells the user when an outdated index is being replaced.
pub fn announce(notice: Option<&OpenNotice>) {
    if let Some(OpenNotice::Rebuilt { old_format }) = notice {
        eprintln!(
            "note: the index had format {old_format}, older than this sift's ({}); rebuilding it",
            sift_indexer::FORMAT_VERSION
        );
    }
}

/// Prints what an update did, for people.
#[allow(clippy::print_stdout)]
pub fn print_report(index: &CodeIndex, r: &UpdateReport, max_file_size: u64) {
    let secs = r.elapsed_ms as f64 / 1000.0;
    if r.changed_anything() {
        println!("indexed {} in {secs:.2} s", index.root().display());
        println!(
            "  {} added, {} changed, {} removed, {} touched (content unchanged), {} unchanged",
            r.added, r.changed, r.removed, r.touched, r.unchanged
        );
        println!(
            "  {} chunks written from {}; the index holds {} files, {} chunks",
            r.chunks_written,
            human_bytes(r.bytes_read),
            r.files_total,
            r.chunks_total
        );
    } else {
        let reread = match r.touched {
            0 => String::new(),
            n => format!("; {n} re-read, content unchanged"),
        };
        println!(
            "index of {} is up to date: {} files, {} chunks (checked in {secs:.2} s{reread})",
            index.root().display(),
            r.files_total,
            r.chunks_total
        );
    }
    let s = &r.skipped;
    if s.binary + s.too_large + s.symlink_loops + s.unreadable > 0 {
        println!(
            "  skipped: {} binary, {} over {}, {} symlink loops, {} unreadable",
            s.binary,
            s.too_large,
            human_bytes(max_file_size),
            s.symlink_loops,
            s.unreadable
        );
    }
    if s.outside_links + s.secrets > 0 {
        println!(
            "  left out by the sandbox's walls: {} symbolic link(s) leading outside the repository, {} secret file(s) ([index] outside_links and index_secrets opt in)",
            s.outside_links, s.secrets
        );
    }
    for (path, err) in &r.unreadable_examples {
        println!("    cannot read {path}: {err}");
    }
}
