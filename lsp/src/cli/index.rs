//! `sift index`: build or update the index and say what was done.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use sift_engine::embed::{EmbedConfig, LoadedModel};
use sift_engine::embeddings::{Semantic, UPGRADE_SCOPE};
use sift_engine::index::{CodeIndex, EmbedReport, Scope, UpdateReport};

use super::progress::{Terminal, TerminalProgress};
use super::{RepoArgs, WalkArgs, human_bytes};
use sift_engine::watch::{Change, watch_tree};

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
    /// Compute the first model's embeddings only, not the upgrade's (`[embed] upgrade`):
    /// searches use the first model's until a later `sift index` completes the upgrade.
    #[arg(long, conflicts_with = "no_embed")]
    no_upgrade: bool,
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
        Some(_) => match sift_engine::index::Layout::new(&store).watch_alone()? {
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
    sift_engine::open::announce(notice.as_ref(), &Terminal);
    let progress = TerminalProgress::new(args.quiet || args.json);
    let report = index.update(&opts, &progress);
    progress.finish();
    let report = report?;
    if !args.json {
        print_report(&index, &report, opts.config.max_file_size);
    }
    // Embeddings come second: lexical search works from here on, whatever happens next.
    // Then the upgrade's, slower (searches switch to them once they cover every chunk).
    let mut embedded = None;
    let mut upgraded = None;
    if !args.no_embed {
        let config = sift_engine::open::embed_config(&root)?;
        let quiet = args.quiet || args.json;
        let first = sift_engine::open::load_model(&config, false, args.json, &Terminal)?;
        if let Some(model) = &first {
            embedded = embed_with(&index, model, &config, Scope::All, quiet, !args.json)?;
        }
        if let (Some(_), Some(up), false) = (&first, config.upgrade_config(), args.no_upgrade) {
            upgraded = sift_engine::open::load_upgrade(&up, false, args.json, &Terminal)
                .map(|model| embed_with(&index, &model, &up, UPGRADE_SCOPE, quiet, !args.json))
                .transpose()?
                .flatten();
        }
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["embeddings"] = serde_json::to_value(&embedded)?;
        value["upgrade"] = serde_json::to_value(&upgraded)?;
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
        let semantic = (!args.no_embed).then(|| {
            let config = sift_engine::open::embed_config(&root).map_err(|e| e.to_string());
            let config = match config {
                Ok(c) if args.no_upgrade => Ok(EmbedConfig { upgrade: None, ..c }),
                other => other,
            };
            Semantic::load(config)
        });
        watch(&index, &opts, guard, idle, semantic.as_ref())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Embeds what `model` has no vector for yet and says so (`say`); the report, when it ran.
fn embed_with(
    index: &CodeIndex,
    model: &LoadedModel,
    config: &EmbedConfig,
    scope: Scope,
    quiet: bool,
    say: bool,
) -> Result<Option<EmbedReport>> {
    let Some((r, secs)) =
        sift_engine::open::embed_missing(index, model, config, scope, quiet, &Terminal)?
    else {
        return Ok(None);
    };
    if say {
        #[allow(clippy::print_stdout)]
        {
            println!("{}", sift_engine::open::describe_report(&r, secs, model));
        }
    }
    Ok(Some(r))
}

/// Updates the index whenever files change, until the process is interrupted, or, with an
/// `idle` limit, until no search has relied on the watcher for that long. With `semantic`,
/// the changed chunks get their embeddings after each update too (the upgrade's at low
/// priority), as in the language server: searches that trust the watcher do not embed.
#[allow(clippy::print_stdout)]
fn watch(
    index: &CodeIndex,
    opts: &sift_engine::index::UpdateOptions,
    _guard: sift_engine::index::WatchGuard,
    idle: Option<std::time::Duration>,
    semantic: Option<&Semantic>,
) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel::<Change>();
    let _watcher = watch_tree(index.root(), move |change| {
        // Notes are not indexed: nothing to update for them here.
        if change != Change::Notes {
            let _ = tx.send(change);
        }
    })?;
    // What changed after the update above and before the watcher started.
    if let Err(e) = index.refresh(opts, &sift_engine::index::NoProgress) {
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
            index.update(opts, &sift_engine::index::NoProgress)
        } else {
            index.update_paths(&paths, opts, &sift_engine::index::NoProgress)
        };
        match result {
            Ok(r) if r.changed_anything() => {
                println!(
                    "updated: {} added, {} changed, {} removed ({} ms)",
                    r.added, r.changed, r.removed, r.elapsed_ms
                );
                if let Some(semantic) = semantic {
                    semantic.run_pass(index, &sift_engine::index::NoProgress);
                    semantic.run_upgrade_pass(index, &sift_engine::index::NoProgress);
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    Ok(())
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
