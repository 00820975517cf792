//! Watching a tree for writes: the one file watcher behind `sift lsp` and `sift index --watch`.
//!
//! Reads are ignored (sift's own reads while indexing would otherwise trigger updates forever),
//! and so is anything under `.git/` or `.sift/` (sift's own writes). When the operating system's
//! queue overflows, the watcher asks for a full rescan: named paths would miss changes.
//!
//! On Linux the watcher is sift's own over inotify, with a mask that leaves reads out in the
//! kernel: notify's mask includes `IN_OPEN` and cannot be changed, so under notify every file a
//! `grep` or a build opened in the tree was an event, which cost the watcher tens of milliseconds
//! of CPU per `rg` over Django and slowed that `rg` by half. It does not watch `.git/` nor
//! `.sift/` (except `.sift/memory/`, the notes). Elsewhere notify's recommended watcher runs, and
//! reads are dropped as they arrive.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Instant;

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

/// What a backend saw, before gathering.
#[derive(Debug)]
enum Seen {
    /// This path was written, created, renamed or removed.
    Path(PathBuf),
    /// Events were lost.
    Rescan,
}

/// A running watcher; dropping it stops watching (and its threads).
pub struct TreeWatcher {
    #[cfg(target_os = "linux")]
    _backend: linux::Watcher,
    #[cfg(not(target_os = "linux"))]
    _backend: notify::RecommendedWatcher,
}

/// Watches `root` recursively and calls `on_change` (on a thread of its own) after writes.
pub fn watch_tree(
    root: &Path,
    on_change: impl FnMut(Change) + Send + 'static,
) -> notify::Result<TreeWatcher> {
    let (tx, rx) = channel::<Seen>();
    #[cfg(target_os = "linux")]
    let backend = linux::Watcher::start(root, tx).map_err(notify::Error::io)?;
    #[cfg(not(target_os = "linux"))]
    let backend = with_notify(root, tx)?;
    let base = root.to_path_buf();
    std::thread::Builder::new()
        .name("sift-watch-gather".into())
        .spawn(move || gather(&base, &rx, on_change))
        .map_err(notify::Error::io)?;
    Ok(TreeWatcher { _backend: backend })
}

/// notify's recommended watcher, reads dropped in its callback as they arrive.
#[cfg(not(target_os = "linux"))]
fn with_notify(
    root: &Path,
    tx: std::sync::mpsc::Sender<Seen>,
) -> notify::Result<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Errors (a folder that vanished while being added…) change nothing by themselves;
        // an overflow arrives as an event asking for a rescan.
        let Ok(event) = event else { return };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        if event.need_rescan() {
            let _ = tx.send(Seen::Rescan);
        }
        for path in event.paths {
            let _ = tx.send(Seen::Path(path));
        }
    })?;
    notify::Watcher::watch(&mut watcher, root, notify::RecursiveMode::Recursive)?;
    Ok(watcher)
}

#[cfg(target_os = "linux")]
mod linux {
    //! The inotify backend: one watch per folder, added for new folders as they appear.

    use std::collections::{HashMap, HashSet};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::Sender;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

    use super::Seen;

    /// Writes, creations, deletions, renames and metadata changes; never opens or reads.
    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::EXCL_UNLINK
    }

    /// The watched folders: what each watch descriptor stands for.
    struct Folders {
        root: PathBuf,
        watches: Watches,
        paths: HashMap<WatchDescriptor, PathBuf>,
    }

    impl Folders {
        /// Whether a folder is watched: not `.git/` anywhere, and of `.sift/` only the root's
        /// `.sift` itself (so that `memory/` is seen appearing) and `.sift/memory/`.
        fn wanted(&self, dir: &Path) -> bool {
            let Ok(rel) = dir.strip_prefix(&self.root) else { return false };
            let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
            if parts.iter().any(|p| *p == ".git") {
                return false;
            }
            match parts.iter().position(|p| *p == ".sift") {
                None => true,
                Some(0) => parts.len() == 1 || parts[1] == "memory",
                Some(_) => false,
            }
        }

        /// Watches `dir` and every folder below it (following symbolic links to folders,
        /// each folder once). An error only for the first folder, or when the system's limit
        /// on watches is reached.
        fn add_tree(&mut self, dir: &Path, seen: &mut HashSet<PathBuf>) -> std::io::Result<()> {
            if !self.wanted(dir) {
                return Ok(());
            }
            let Ok(real) = dir.canonicalize() else { return Ok(()) };
            if !seen.insert(real) {
                return Ok(());
            }
            match self.watches.add(dir, mask()) {
                Ok(wd) => {
                    self.paths.insert(wd, dir.to_path_buf());
                }
                // ENOSPC from inotify_add_watch: the per-user limit on watches.
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!(
                            "cannot watch {}: the system's limit on inotify watches is reached \
                             (raise fs.inotify.max_user_watches)",
                            dir.display()
                        ),
                    ));
                }
                // A folder that vanished or cannot be read: nothing to watch there.
                Err(e) if dir != self.root => {
                    tracing::debug!("not watching {}: {e}", dir.display());
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
            let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
            for entry in entries.flatten() {
                let path = entry.path();
                if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                    self.add_tree(&path, seen)?;
                }
            }
            Ok(())
        }
    }

    /// A running inotify watcher. Dropping it stops its thread: the root's watch is removed,
    /// and the event that removal queues wakes the thread to see the stop flag.
    pub(super) struct Watcher {
        stop: Arc<AtomicBool>,
        watches: Watches,
        root_wd: Option<WatchDescriptor>,
    }

    impl Drop for Watcher {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(wd) = self.root_wd.take() {
                let _ = self.watches.remove(wd);
            }
        }
    }

    impl Watcher {
        /// Watches `root`, sending what it sees to `tx`.
        pub(super) fn start(root: &Path, tx: Sender<Seen>) -> std::io::Result<Watcher> {
            let mut inotify = Inotify::init()?;
            let mut folders = Folders {
                root: root.to_path_buf(),
                watches: inotify.watches(),
                paths: HashMap::new(),
            };
            folders.add_tree(root, &mut HashSet::new())?;
            let root_wd = folders.paths.iter().find(|(_, p)| *p == root).map(|(wd, _)| wd.clone());
            let stop = Arc::new(AtomicBool::new(false));
            let watcher = Watcher { stop: stop.clone(), watches: inotify.watches(), root_wd };
            std::thread::Builder::new().name("sift-watch".into()).spawn(move || {
                let mut buffer = vec![0u8; 64 * 1024];
                loop {
                    let events: Vec<(WatchDescriptor, EventMask, Option<PathBuf>)> =
                        match inotify.read_events_blocking(&mut buffer) {
                            Ok(events) => {
                                events.map(|e| (e.wd, e.mask, e.name.map(PathBuf::from))).collect()
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                tracing::warn!("the file watcher stopped: {e}");
                                return;
                            }
                        };
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    for (wd, mask, name) in events {
                        if !handle(&mut folders, &tx, wd, mask, name) {
                            return;
                        }
                    }
                }
            })?;
            Ok(watcher)
        }
    }

    /// One event: what it says to `tx`, new folders watched. `false` once nobody listens.
    fn handle(
        folders: &mut Folders,
        tx: &Sender<Seen>,
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<PathBuf>,
    ) -> bool {
        if mask.contains(EventMask::Q_OVERFLOW) {
            return tx.send(Seen::Rescan).is_ok();
        }
        if mask.contains(EventMask::IGNORED) {
            folders.paths.remove(&wd);
            return true;
        }
        let Some(dir) = folders.paths.get(&wd) else { return true };
        let path = match name {
            Some(name) => dir.join(name),
            None => dir.clone(),
        };
        if mask.contains(EventMask::ISDIR)
            && mask.intersects(EventMask::CREATE | EventMask::MOVED_TO)
            && let Err(e) = folders.add_tree(&path, &mut HashSet::new())
        {
            // Out of watches: changes below would be missed, so walk instead.
            tracing::warn!("{e}");
            return tx.send(Seen::Rescan).is_ok();
        }
        tx.send(Seen::Path(path)).is_ok()
    }
}

/// Reports what arrives on `rx` in batches: everything within [`DEBOUNCE`] of a batch's first
/// event is one change. Ends when the watcher is dropped.
fn gather(base: &Path, rx: &Receiver<Seen>, mut on_change: impl FnMut(Change)) {
    while let Ok(first) = rx.recv() {
        let deadline = Instant::now() + DEBOUNCE;
        let mut seen = vec![first];
        let mut open = true;
        while open {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) => seen.push(event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => open = false,
            }
        }
        report(base, &seen, &mut on_change);
        if !open {
            return;
        }
    }
}

/// One batch as [`Change`]s: notes first, then a rescan or the paths.
fn report(base: &Path, seen: &[Seen], on_change: &mut impl FnMut(Change)) {
    let mut rescan = false;
    let mut notes = false;
    let mut paths = Vec::new();
    for event in seen {
        match event {
            Seen::Rescan => rescan = true,
            Seen::Path(p) => {
                notes |= is_a_note(base, p);
                if !is_sifts_own(base, p) {
                    paths.push(p.clone());
                }
            }
        }
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
        // A folder made after the watcher started is watched too: a file written in it later
        // is reported (the folder itself when it appears).
        std::fs::create_dir_all(root.join("src/made/later")).unwrap();
        let made = root.join("src/made/later/x.rs");
        let mut seen = Vec::new();
        for attempt in 0..50 {
            // Written until reported: the watch on the new folder is added as it appears.
            std::fs::write(&made, format!("fn x{attempt}() {{}}\n")).unwrap();
            match next(&rx, 1) {
                Some(Change::Paths(paths)) => seen.extend(paths),
                Some(other) => panic!("{other:?}"),
                None => {}
            }
            if seen.contains(&made) {
                break;
            }
        }
        assert!(seen.contains(&made), "{seen:?}");
        // .git is not a change, even a new folder in it.
        std::fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
        std::fs::write(root.join(".git/refs/heads/main"), "abc").unwrap();
        while let Some(change) = next(&rx, 1) {
            let Change::Paths(paths) = change else { panic!("{change:?}") };
            assert!(paths.iter().all(|p| p.starts_with(root.join("src/made"))), "{paths:?}");
        }
        // A note written: reported as such.
        std::fs::create_dir_all(root.join(".sift/memory")).unwrap();
        std::fs::write(root.join(".sift/memory/a.md"), "x").unwrap();
        let notes = std::iter::from_fn(|| next(&rx, 10)).any(|c| c == Change::Notes);
        assert!(notes);
        drop(watcher);
    }
}
