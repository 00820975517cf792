//! The repository's fix history ([`FixHistory`]: lines its fix commits removed), mined from
//! `git log` once per `HEAD` and cached in `.sift/cache/history-<HEAD>.json`.
//!
//! The cache is a cache: git-ignored (sift's `.sift/.gitignore` keeps `cache/` out), replaced
//! when `HEAD` moves, written only where `.sift/` already exists (a review must not create
//! `.sift/` by itself), and a cache that cannot be written is a warning, not an error.

use std::path::Path;

use sift_runtime::rules::history::{self, FixHistory};

use super::git::{git, resolve};

/// What the fix commits up to `HEAD` removed; `None` outside git or without commits.
pub(crate) fn fix_history(root: &Path) -> Option<FixHistory> {
    let head = resolve(root, "HEAD").ok()?;
    let cache_dir = root.join(".sift").join("cache");
    let cache = cache_dir.join(format!("history-{head}.json"));
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(history) = serde_json::from_str::<FixHistory>(&text)
    {
        return Some(history);
    }
    let log = git(root, history::LOG_ARGS).ok()?;
    let history = FixHistory::from_git_log(&String::from_utf8_lossy(&log));
    if root.join(".sift").is_dir()
        && let Ok(store) = crate::store::open(root)
        && store.ensure().is_ok()
    {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            std::fs::create_dir_all(&cache_dir)?;
            for old in std::fs::read_dir(&cache_dir)?.flatten() {
                if old.file_name().to_string_lossy().starts_with("history-") {
                    let _ = std::fs::remove_file(old.path());
                }
            }
            let bytes = serde_json::to_vec(&history)?;
            Ok(sift_indexer::store::write_atomic(&cache, &bytes)?)
        };
        if let Err(e) = write() {
            tracing::warn!("cannot cache the fix history in {}: {e}", cache_dir.display());
        }
    }
    Some(history)
}
