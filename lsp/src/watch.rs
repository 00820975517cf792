//! Watching a tree for writes: the one file watcher behind `sift lsp` and `sift index --watch`.
//!
//! Reads are ignored (sift's own reads while indexing would otherwise trigger updates forever),
//! and so is anything under `.git/` or `.sift/` (sift's own writes). When the operating system's
//! queue overflows, the watcher asks for a full rescan: named paths would miss changes.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Instant;

/// A running watcher; dropping it stops watching (and its gathering thread, which ends when
/// the watcher's events stop).
pub struct TreeWatcher {
    _watcher: notify::RecommendedWatcher,
}

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

/// Watches `root` recursively and calls `on_change` (on a thread of its own) after writes.
///
/// The operating system reports every *open* too (notify's inotify mask includes it, and it
/// cannot be turned off): a `grep` or a build over the tree sends thousands. They are dropped
/// on the watcher's own thread as they arrive, before anything is queued or gathered (a
/// debouncer that kept them cost ~40 ms of CPU per `rg` over Django and slowed that `rg`
/// 1.4–1.6× on 2 cores).
pub fn watch_tree(
    root: &Path,
    on_change: impl FnMut(Change) + Send + 'static,
) -> notify::Result<TreeWatcher> {
    let (tx, rx) = channel::<notify::Event>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Errors (a folder that vanished while being added…) change nothing by themselves;
        // an overflow arrives as an event asking for a rescan.
        if let Ok(event) = event
            && !matches!(event.kind, notify::EventKind::Access(_))
        {
            let _ = tx.send(event);
        }
    })?;
    notify::Watcher::watch(&mut watcher, root, notify::RecursiveMode::Recursive)?;
    let base = root.to_path_buf();
    std::thread::Builder::new()
        .name("sift-watch".into())
        .spawn(move || gather(&base, &rx, on_change))
        .map_err(notify::Error::io)?;
    Ok(TreeWatcher { _watcher: watcher })
}

/// Reports what arrives on `rx` in batches: everything within [`DEBOUNCE`] of a batch's first
/// event is one change. Ends when the watcher is dropped.
fn gather(base: &Path, rx: &Receiver<notify::Event>, mut on_change: impl FnMut(Change)) {
    while let Ok(first) = rx.recv() {
        let deadline = Instant::now() + DEBOUNCE;
        let mut events = vec![first];
        let mut open = true;
        while open {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) => events.push(event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => open = false,
            }
        }
        report(base, &events, &mut on_change);
        if !open {
            return;
        }
    }
}

/// One batch of events as [`Change`]s: notes first, then a rescan or the paths.
fn report(base: &Path, events: &[notify::Event], on_change: &mut impl FnMut(Change)) {
    let mut rescan = false;
    let mut notes = false;
    let mut paths = Vec::new();
    for event in events {
        rescan |= event.need_rescan();
        notes |= event.paths.iter().any(|p| is_a_note(base, p));
        paths.extend(event.paths.iter().filter(|p| !is_sifts_own(base, p)).cloned());
    }
    paths.sort();
    paths.dedup();
    // A lost watcher may have lost note changes too.
    if notes || rescan {
        on_change(Change::Notes);
    }
    if rescan {
        on_change(Change::Rescan);
    } else if !paths.is_empty() {
        on_change(Change::Paths(paths));
    }
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

    /// Waits up to `secs` for the next change.
    fn next(rx: &std::sync::mpsc::Receiver<Change>, secs: u64) -> Option<Change> {
        rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
    }

    #[test]
    fn writes_are_reported_once_gathered_and_reads_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".sift/index")).unwrap();
        let files: Vec<PathBuf> = (0..50).map(|i| root.join(format!("src/f{i}.rs"))).collect();
        for f in &files {
            std::fs::write(f, "fn f() {}\n").unwrap();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let watcher = watch_tree(&root, move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        // Reading every file (what grep or the indexer does) and sift's own writes: nothing.
        for _ in 0..5 {
            for f in &files {
                std::fs::read(f).unwrap();
            }
        }
        std::fs::write(root.join(".sift/index/meta.json"), "{}").unwrap();
        assert_eq!(next(&rx, 1), None, "reads or .sift/ writes were reported");
        // Two writes and a new file close together: one change naming each path once.
        std::fs::write(&files[0], "fn g() {}\n").unwrap();
        std::fs::write(&files[0], "fn h() {}\n").unwrap();
        std::fs::write(root.join("src/new.rs"), "fn n() {}\n").unwrap();
        let mut seen = Vec::new();
        while let Some(change) = next(&rx, 10) {
            let Change::Paths(paths) = change else { panic!("{change:?}") };
            assert!(paths.windows(2).all(|w| w[0] < w[1]), "repeated or unsorted: {paths:?}");
            seen.extend(paths);
            if seen.contains(&files[0]) && seen.contains(&root.join("src/new.rs")) {
                break;
            }
        }
        assert!(seen.contains(&files[0]) && seen.contains(&root.join("src/new.rs")), "{seen:?}");
        // A note written: reported as such.
        std::fs::create_dir_all(root.join(".sift/memory")).unwrap();
        std::fs::write(root.join(".sift/memory/a.md"), "x").unwrap();
        let notes = std::iter::from_fn(|| next(&rx, 10)).any(|c| c == Change::Notes);
        assert!(notes);
        drop(watcher);
    }
}
