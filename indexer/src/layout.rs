//! Where a repository's index lives in its `.sift/` store: the indexer's entries there, their
//! paths ([`Layout`]), and the lock held by the processes that keep the index fresh.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::store::{Entry, Store};

pub(crate) const MARKER: &str = "sift-index.json";

/// `.sift/index/`: the lexical index, known to be sift's by its format file.
pub const INDEX: Entry = Entry::cache_dir("indexer", "index").marked_by(MARKER);
/// `.sift/index.new-*/`: an index being created (see [`CodeIndex::open_or_create`]).
pub const INDEX_STAGING: Entry = Entry::cache_dir("indexer", "index.new-*");
/// `.sift/index.old-*/`: a discarded index being deleted.
pub const INDEX_DISCARDED: Entry = Entry::cache_dir("indexer", "index.old-*");
/// `.sift/vectors/`: the vectors per model (see [`crate::vectors`]).
pub const VECTORS: Entry = Entry::cache_dir("indexer", "vectors");
/// `.sift/watch.lock`: see [`Layout::watch`].
pub const WATCH_LOCK: Entry = Entry::cache_file("indexer", "watch.lock");

/// The indexer's entries in `.sift/`, for [`Store::open`].
pub const STORE_ENTRIES: &[Entry] =
    &[INDEX, INDEX_STAGING, INDEX_DISCARDED, VECTORS, WATCH_LOCK, crate::config::CONFIG];

/// Paths of a repository's index in its [`Store`].
#[derive(Debug, Clone)]
pub struct Layout {
    /// The repository root (absolute).
    pub root: PathBuf,
    /// `root/.sift`.
    pub sift_dir: PathBuf,
    /// `root/.sift/index`.
    pub index_dir: PathBuf,
}

impl Layout {
    /// The index's paths in `store`.
    pub fn new(store: &Store) -> Layout {
        Layout {
            root: store.root().to_path_buf(),
            sift_dir: store.dir().to_path_buf(),
            index_dir: store.path(&INDEX),
        }
    }

    /// `.sift/watch.lock`: held (shared) by every process that keeps the index fresh with a
    /// file watcher.
    pub fn watch_lock(&self) -> PathBuf {
        self.sift_dir.join(WATCH_LOCK.name)
    }

    /// Whether a live process (`sift lsp`, `sift index --watch`) keeps this index fresh with a
    /// file watcher. The lock is released by the operating system when such a process dies.
    pub fn is_watched(&self) -> bool {
        let Ok(file) = std::fs::File::open(self.watch_lock()) else { return false };
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        }
    }

    /// Declares that this process keeps the index fresh until the guard is dropped.
    pub fn watch(&self) -> Result<WatchGuard> {
        let (path, file) = self.open_watch_lock()?;
        file.lock_shared().map_err(|e| Error::io("lock", &path, e))?;
        Ok(WatchGuard { _file: file })
    }

    /// As [`Layout::watch`], but only when no other process keeps the index fresh already
    /// (`None` then): for a watcher that a search leaves behind, of which one is enough.
    pub fn watch_alone(&self) -> Result<Option<WatchGuard>> {
        let (path, file) = self.open_watch_lock()?;
        // A search's `is_watched` holds the lock for an instant: try a few times.
        let mut tries = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if tries < 3 => tries += 1,
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
            }
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        // Shared from here, so that `sift lsp` can join; a search meanwhile sees it held.
        file.lock_shared().map_err(|e| Error::io("lock", &path, e))?;
        Ok(Some(WatchGuard { _file: file }))
    }

    /// Records that a search relied on a watcher (the lock file's modification time), which
    /// keeps a watcher with an idle limit alive (see [`Layout::last_use`]). Best effort.
    pub fn note_use(&self) {
        let now = std::time::SystemTime::now();
        if let Ok(file) = std::fs::OpenOptions::new().write(true).open(self.watch_lock()) {
            let _ = file.set_modified(now);
        }
    }

    /// When a search last relied on a watcher ([`Layout::note_use`]), if ever.
    pub fn last_use(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.watch_lock()).and_then(|m| m.modified()).ok()
    }

    fn open_watch_lock(&self) -> Result<(PathBuf, std::fs::File)> {
        let path = self.watch_lock();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("create", &path, e))?;
        Ok((path, file))
    }
}

/// Held while a process watches the tree and keeps the index fresh (see [`Layout::watch`]).
#[derive(Debug)]
pub struct WatchGuard {
    _file: std::fs::File,
}
