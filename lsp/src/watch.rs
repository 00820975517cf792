//! Watching a tree for writes: the one file watcher behind `sift lsp` and `sift index --watch`.
//!
//! Reads are ignored (sift's own reads while indexing would otherwise trigger updates forever),
//! and so is anything under `.git/` or `.sift/` (sift's own writes). When the operating system's
//! queue overflows, the watcher asks for a full rescan: named paths would miss changes.

use std::path::{Path, PathBuf};

/// A running watcher; dropping it stops watching.
pub type TreeWatcher = notify_debouncer_full::Debouncer<
    notify::RecommendedWatcher,
    notify_debouncer_full::RecommendedCache,
>;

/// What changed under the watched root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The watcher lost track: walk the whole tree.
    Rescan,
    /// These files (absolute paths) were written, created, renamed or removed.
    Paths(Vec<PathBuf>),
    /// Something under `.sift/memory/` (the memory notes) changed.
    Notes,
}

/// How long changes are gathered before they are reported.
const DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(50);

/// Watches `root` recursively and calls `on_change` (on the watcher's thread) after writes.
pub fn watch_tree(
    root: &Path,
    mut on_change: impl FnMut(Change) + Send + 'static,
) -> notify::Result<TreeWatcher> {
    let base = root.to_path_buf();
    let mut debouncer = notify_debouncer_full::new_debouncer(
        DEBOUNCE,
        None,
        move |result: notify_debouncer_full::DebounceEventResult| {
            let Ok(events) = result else { return };
            let mut rescan = false;
            let mut notes = false;
            let mut paths = Vec::new();
            for event in events.iter().filter(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
                rescan |= event.need_rescan();
                notes |= event.paths.iter().any(|p| is_a_note(&base, p));
                paths.extend(event.paths.iter().filter(|p| !is_sifts_own(&base, p)).cloned());
            }
            // A lost watcher may have lost note changes too.
            if notes || rescan {
                on_change(Change::Notes);
            }
            if rescan {
                on_change(Change::Rescan);
            } else if !paths.is_empty() {
                on_change(Change::Paths(paths));
            }
        },
    )?;
    debouncer.watch(root, notify::RecursiveMode::Recursive)?;
    Ok(debouncer)
}

/// Whether `path` lies under `.sift/memory/` of `root`.
fn is_a_note(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| rel.starts_with(".sift/memory"))
}

/// Whether `path` lies under `.git/` or `.sift/` of `root`.
fn is_sifts_own(root: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().any(|c| c.as_os_str() == ".git" || c.as_os_str() == ".sift")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_and_sift_folders_are_not_changes() {
        let root = Path::new("/repo");
        assert!(is_sifts_own(root, Path::new("/repo/.sift/index/meta.json")));
        assert!(is_sifts_own(root, Path::new("/repo/sub/.git/HEAD")));
        assert!(!is_sifts_own(root, Path::new("/repo/src/gitignore.rs")));
        assert!(!is_sifts_own(root, Path::new("/repo/.github/ci.yml")));
        assert!(is_a_note(root, Path::new("/repo/.sift/memory/cache-order.md")));
        assert!(is_a_note(root, Path::new("/repo/.sift/memory")));
        assert!(!is_a_note(root, Path::new("/repo/.sift/memory-state.json")));
        assert!(!is_a_note(root, Path::new("/repo/docs/.sift/memory/x.md")));
    }
}
