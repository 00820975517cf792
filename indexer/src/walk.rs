//! Which files are indexed: the tree under the root, minus what ignore files exclude.
//!
//! Honours `.gitignore` (also outside git repositories), `.git/info/exclude`, the global git
//! excludes file, `.ignore`, and sift's own `.siftignore` plus `.cursorignore` (gitignore syntax,
//! negation included; these two take precedence, so `!path` in them re-includes a file that
//! `.gitignore` leaves out). Hidden files are indexed (`.github/` holds code too); version-control
//! directories and `.sift/` never are. Files over the size limit and symbolic-link loops are
//! skipped and counted.
//!
//! The index obeys the sandbox's walls, since what it holds reaches prompts through search:
//! a symbolic link whose target resolves outside the root is not followed (unless
//! `outside_links` names it), and files matching the secret patterns (also when a link inside
//! leads to one) are not indexed; both are skipped and counted.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use crate::config::IndexConfig;

/// Directory names that are never walked into.
pub const ALWAYS_SKIPPED_DIRS: &[&str] = &[".git", ".sift", ".hg", ".svn", ".jj"];

/// A file found by the walk.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    /// Absolute path.
    pub abs: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown).
    pub mtime_ns: i64,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct WalkOutcome {
    /// Files to consider, sorted by path.
    pub files: Vec<FoundFile>,
    /// Files skipped for their size.
    pub too_large: Vec<FoundFile>,
    /// Symbolic links skipped because they loop.
    pub symlink_loops: Vec<String>,
    /// Entries that could not be read (permissions, vanished while walking).
    pub unreadable: Vec<(String, String)>,
    /// Symbolic links skipped because their target resolves outside the root.
    pub outside_links: Vec<String>,
    /// Files skipped because they match the secret patterns.
    pub secrets: Vec<String>,
    /// The directories walked (the root is `""`) with their modification times (ns since the
    /// epoch), taken before their listing was read: what [`crate::fresh`] compares later.
    pub dirs: Vec<(String, i64)>,
}

/// Walks `root` with `config`'s rules.
pub fn walk(root: &Path, config: &IndexConfig) -> WalkOutcome {
    let mut builder = ignore::WalkBuilder::new(root);
    let outside = Arc::new(Mutex::new(Vec::new()));
    configure(&mut builder, root, config, Arc::clone(&outside), |_| true);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    builder.threads(threads);
    finish(collect(builder, root, config), outside)
}

/// Adds the links the filter skipped.
fn finish(mut outcome: WalkOutcome, outside: Arc<Mutex<Vec<String>>>) -> WalkOutcome {
    let mut links = std::mem::take(&mut *outside.lock().unwrap_or_else(|e| e.into_inner()));
    links.sort();
    links.dedup();
    outcome.outside_links = links;
    outcome
}

/// Looks at a few files only (absolute paths under `root`, e.g. from a file watcher), with the
/// same rules as [`walk`]. Returns what is indexable, plus the relative paths of those that
/// vanished or are excluded (ignored, too large, in a skipped folder).
///
/// It walks from `root` but only down the folders that lead to the named files, so every ignore
/// rule applies exactly as in a full walk (an ignored folder stays ignored) at the cost of a few
/// directory listings.
pub fn walk_paths(
    root: &Path,
    paths: &[std::path::PathBuf],
    config: &IndexConfig,
) -> (WalkOutcome, Vec<String>) {
    let mut targets = std::collections::HashSet::new();
    let mut ancestors = std::collections::HashSet::new();
    for path in paths {
        if path.strip_prefix(root).is_ok_and(|rel| !rel.as_os_str().is_empty()) {
            targets.insert(path.clone());
            let mut up = path.parent();
            while let Some(dir) = up {
                if !ancestors.insert(dir.to_path_buf()) || dir == root {
                    break;
                }
                up = dir.parent();
            }
        }
    }
    let mut builder = ignore::WalkBuilder::new(root);
    let outside = Arc::new(Mutex::new(Vec::new()));
    configure(&mut builder, root, config, Arc::clone(&outside), {
        let (targets, ancestors) = (targets.clone(), ancestors);
        move |entry: &ignore::DirEntry| {
            targets.contains(entry.path()) || ancestors.contains(entry.path())
        }
    });
    builder.threads(1);
    let outcome = finish(collect(builder, root, config), outside);
    let found: std::collections::HashSet<&str> =
        outcome.files.iter().map(|f| f.rel.as_str()).collect();
    let mut gone: Vec<String> = targets
        .iter()
        .map(|p| relative(root, p))
        .filter(|rel| !found.contains(rel.as_str()))
        .collect();
    gone.sort();
    (outcome, gone)
}

/// Applies sift's walking rules; `keep` can prune further (it sees every entry below the root).
/// Links leading outside the root are pruned and their paths pushed to `outside`.
fn configure(
    builder: &mut ignore::WalkBuilder,
    root: &Path,
    config: &IndexConfig,
    outside: Arc<Mutex<Vec<String>>>,
    keep: impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static,
) {
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let root = root.to_owned();
    let allowed = config.clone();
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(config.follow_symlinks)
        .add_custom_ignore_filename(".siftignore")
        .add_custom_ignore_filename(".cursorignore")
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            let skipped = entry.file_type().is_some_and(|t| t.is_dir())
                && entry.file_name().to_str().is_some_and(|n| ALWAYS_SKIPPED_DIRS.contains(&n));
            if skipped || !keep(entry) {
                return false;
            }
            if entry.path_is_symlink() {
                // A dangling link is left to the walk (it reports it unreadable).
                let leads_out =
                    entry.path().canonicalize().is_ok_and(|target| !target.starts_with(&real_root));
                let rel = relative(&root, entry.path());
                if leads_out && !allowed.may_lead_outside(&rel) {
                    outside.lock().unwrap_or_else(|e| e.into_inner()).push(rel);
                    return false;
                }
            }
            true
        });
}

fn collect(builder: ignore::WalkBuilder, root: &Path, config: &IndexConfig) -> WalkOutcome {
    let max = config.max_file_size;
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let outcome = Mutex::new(WalkOutcome::default());
    builder.build_parallel().run(|| {
        let outcome = &outcome;
        let real_root = &real_root;
        Box::new(move |result| {
            use ignore::WalkState::Continue;
            let entry = match result {
                Ok(entry) => entry,
                Err(err) => {
                    let mut out = outcome.lock().unwrap_or_else(|e| e.into_inner());
                    if is_loop(&err) {
                        out.symlink_loops.push(error_path(&err, root));
                    } else {
                        out.unreadable.push((error_path(&err, root), err.to_string()));
                    }
                    return Continue;
                }
            };
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                let mtime_ns = entry.metadata().map_or(0, |m| mtime_of(&m));
                let rel = relative(root, entry.path());
                outcome.lock().unwrap_or_else(|e| e.into_inner()).dirs.push((rel, mtime_ns));
                return Continue;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return Continue;
            }
            let rel = relative(root, entry.path());
            // A secret by its own name, or by the name of the file a link inside leads to.
            let secret = config.is_secret(Path::new(&rel))
                || (entry.path_is_symlink()
                    && entry.path().canonicalize().ok().is_some_and(|target| {
                        target.strip_prefix(real_root).is_ok_and(|t| config.is_secret(t))
                    }));
            if secret {
                outcome.lock().unwrap_or_else(|e| e.into_inner()).secrets.push(rel);
                return Continue;
            }
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(err) => {
                    let mut out = outcome.lock().unwrap_or_else(|e| e.into_inner());
                    out.unreadable.push((rel, err.to_string()));
                    return Continue;
                }
            };
            let mtime_ns = mtime_of(&meta);
            let found = FoundFile { rel, abs: entry.into_path(), size: meta.len(), mtime_ns };
            let mut out = outcome.lock().unwrap_or_else(|e| e.into_inner());
            if found.size > max {
                out.too_large.push(found);
            } else {
                out.files.push(found);
            }
            Continue
        })
    });
    let mut outcome = outcome.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    // A file reached twice through links keeps its first path.
    outcome.files.dedup_by(|a, b| a.rel == b.rel);
    outcome.too_large.sort_by(|a, b| a.rel.cmp(&b.rel));
    outcome.symlink_loops.sort();
    outcome.unreadable.sort();
    outcome.secrets.sort();
    outcome.dirs.sort();
    outcome.dirs.dedup_by(|a, b| a.0 == b.0);
    outcome
}

/// A file's modification time in nanoseconds since the epoch (0 when unknown).
pub(crate) fn mtime_of(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// `path` relative to `root`, `/`-separated.
pub fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for (i, part) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&part.as_os_str().to_string_lossy());
    }
    out
}

fn is_loop(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        ignore::Error::Partial(errs) => errs.iter().any(is_loop),
        _ => false,
    }
}

fn error_path(err: &ignore::Error, root: &Path) -> String {
    match err {
        ignore::Error::Loop { child, .. } => relative(root, child),
        ignore::Error::WithPath { path, .. } => relative(root, path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err, root)
        }
        _ => String::from("?"),
    }
}
