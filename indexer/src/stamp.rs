//! The tree stamp: what a full walk saw beyond the manifest (the directories it entered with
//! their times, the files it skipped for their size, the ignore files and sources), written
//! after the walk so that [`crate::fresh`] can tell whether the tree changed without walking it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::IndexConfig;
use crate::manifest::Manifest;
use crate::walk::{WalkOutcome, mtime_of};

/// The stamp's file name in the index folder.
pub const STAMP_FILE: &str = "tree-stamp.json";

/// File names whose change changes what the walk keeps.
pub(crate) const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".siftignore", ".cursorignore"];

/// Times closer than this to the walk are not trusted (as [`crate::update`]'s racy window).
pub(crate) const RACY_NS: i64 = 2_000_000_000;

/// What a full walk saw, beyond the manifest's files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TreeStamp {
    /// The manifest of the commit this stamp goes with.
    pub manifest: String,
    /// The walking rules it was made under.
    pub rules: String,
    /// Directories walked, relative (`""`: the root), with their modification times.
    pub dirs: Vec<(String, i64)>,
    /// Other paths whose change matters, absolute, with size and modification time (`-1`:
    /// absent): files over the size limit, ignore files that are not indexed, ignore sources
    /// outside the tree.
    pub others: Vec<(PathBuf, i64, i64)>,
}

pub(crate) fn rules_of(config: &IndexConfig) -> String {
    format!("{config:?}")
}

pub(crate) fn stat(path: &Path, follow: bool) -> Option<std::fs::Metadata> {
    if follow { std::fs::metadata(path) } else { std::fs::symlink_metadata(path) }.ok()
}

/// `(size, mtime)` of `path`, `(-1, -1)` when it does not exist.
pub(crate) fn size_and_time(path: &Path) -> (i64, i64) {
    stat(path, true).map_or((-1, -1), |m| (m.len() as i64, mtime_of(&m)))
}

/// Ignore sources outside the tree that the walk reads.
pub(crate) fn outside_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join(".git/info/exclude"), root.join(".git/config")];
    let home = sift_env::get_os("HOME").map(PathBuf::from);
    match sift_env::get_os("XDG_CONFIG_HOME") {
        Some(x) if !x.is_empty() => out.push(PathBuf::from(x).join("git/ignore")),
        _ => {
            if let Some(h) = &home {
                out.push(h.join(".config/git/ignore"));
            }
        }
    }
    if let Some(h) = &home {
        out.push(h.join(".gitconfig"));
    }
    out
}

/// The stamp of a full walk, or `None` when one cannot be trusted (unreadable entries, times
/// too close to `scan_start_ns`).
pub(crate) fn stamp_of(
    root: &Path,
    walked: &WalkOutcome,
    manifest: &Manifest,
    config: &IndexConfig,
    scan_start_ns: i64,
) -> Option<TreeStamp> {
    if !walked.unreadable.is_empty() || !walked.symlink_loops.is_empty() {
        return None;
    }
    if walked.dirs.iter().any(|(_, t)| *t == 0 || *t > scan_start_ns - RACY_NS) {
        return None;
    }
    let mut others: Vec<(PathBuf, i64, i64)> = Vec::new();
    for file in &walked.too_large {
        others.push((file.abs.clone(), file.size as i64, file.mtime_ns));
    }
    for (dir, _) in &walked.dirs {
        for name in IGNORE_FILES {
            let rel = if dir.is_empty() { (*name).to_string() } else { format!("{dir}/{name}") };
            // One that is absent needs no entry: creating it changes the folder's time.
            if !manifest.files.contains_key(&rel) {
                let abs = root.join(&rel);
                let (size, time) = size_and_time(&abs);
                if time != -1 {
                    others.push((abs, size, time));
                }
            }
        }
    }
    for path in outside_sources(root) {
        let (size, time) = size_and_time(&path);
        others.push((path, size, time));
    }
    if others.iter().any(|(_, _, t)| *t > scan_start_ns - RACY_NS) {
        return None;
    }
    Some(TreeStamp {
        manifest: String::new(),
        rules: rules_of(config),
        dirs: walked.dirs.clone(),
        others,
    })
}
