//! One workspace folder: its on-disk index, its unsaved buffers, its file watcher and the task
//! that keeps the index fresh.
//!
//! Updates are coalesced: a request to update while one runs marks the index dirty, and one more
//! update follows. When another process (a second editor window) holds the index's writer lock,
//! this one keeps reading what that process commits and retries later: one writer, no double
//! work.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use sift_indexer::{CodeIndex, Error as IndexError, Overlay, Progress, UpdateOptions};
use tokio::sync::mpsc;

/// How far indexing of a workspace has come.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    /// The workspace root.
    pub root: String,
    /// `indexing`, `ready`, `waiting` (another process is writing the index) or `failed`.
    pub state: &'static str,
    /// Files processed so far in the running update.
    pub files_done: u64,
    /// Files the running update has to process.
    pub files_total: u64,
    /// Files in the committed index.
    pub files: u64,
    /// Chunks in the committed index.
    pub chunks: u64,
    /// What went wrong, when `state` is `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A message from an update to whoever shows progress.
#[derive(Debug, Clone)]
pub enum ProgressEvent {
    /// An update of `root` started processing `total` files.
    Begin {
        /// Workspace root.
        root: PathBuf,
        /// Files to process.
        total: u64,
    },
    /// `done` of the files are processed.
    Report {
        /// Workspace root.
        root: PathBuf,
        /// Files processed.
        done: u64,
        /// Files to process.
        total: u64,
    },
    /// The update ended.
    End {
        /// Workspace root.
        root: PathBuf,
        /// A one-line summary.
        message: String,
    },
}

/// A workspace folder being served.
pub struct Workspace {
    /// The root folder (canonical).
    pub root: PathBuf,
    /// The on-disk index.
    pub index: Arc<CodeIndex>,
    /// Unsaved buffers.
    pub overlay: Mutex<Overlay>,
    coverage: Mutex<Coverage>,
    ready_once: std::sync::atomic::AtomicBool,
    /// What the next update must look at.
    pending: Mutex<Pending>,
    /// Tells `sift search` in other processes that this one keeps the index fresh.
    _watching: Option<sift_indexer::WatchGuard>,
    updates: mpsc::Sender<()>,
}

/// Work requested since the last update started.
#[derive(Default)]
struct Pending {
    /// Walk the whole tree.
    full: bool,
    /// Only these files changed (absolute paths).
    paths: Vec<PathBuf>,
}

/// Everything a workspace needs to run its updates.
pub struct Updater {
    rx: mpsc::Receiver<()>,
    opts: UpdateOptions,
    progress: mpsc::UnboundedSender<ProgressEvent>,
}

impl Workspace {
    /// Opens (or creates) the index of `root`. The returned [`Updater`] must be run (see
    /// [`Workspace::run_updates`]) for the index to be built and kept fresh.
    pub fn open(
        root: &Path,
        opts: UpdateOptions,
        progress: mpsc::UnboundedSender<ProgressEvent>,
    ) -> anyhow::Result<(Arc<Workspace>, Updater)> {
        let (index, _notice) = CodeIndex::open_or_create(root)?;
        let root = index.root().to_path_buf();
        let manifest = index.manifest()?;
        let coverage = Coverage {
            root: root.display().to_string(),
            state: "indexing",
            files_done: 0,
            files_total: 0,
            files: manifest.files.values().filter(|r| r.skip.is_none()).count() as u64,
            chunks: index.num_chunks(),
            message: None,
        };
        let (tx, rx) = mpsc::channel(1);
        let watching = index.layout().watch().ok();
        let ws = Arc::new(Workspace {
            root,
            index: Arc::new(index),
            overlay: Mutex::new(Overlay::new()?),
            coverage: Mutex::new(coverage),
            ready_once: Default::default(),
            pending: Mutex::new(Pending { full: true, paths: Vec::new() }),
            _watching: watching,
            updates: tx,
        });
        Ok((ws, Updater { rx, opts, progress }))
    }

    /// Asks for an update of the whole tree; coalesces with one already pending.
    pub fn request_update(&self) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).full = true;
        let _ = self.updates.try_send(());
    }

    /// Asks for an update of these files only (absolute paths from a watcher or a save).
    pub fn request_paths(&self, paths: impl IntoIterator<Item = PathBuf>) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).paths.extend(paths);
        let _ = self.updates.try_send(());
    }

    /// A snapshot of how complete the index is.
    pub fn coverage(&self) -> Coverage {
        self.coverage.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether an update has completed since the server started.
    fn has_been_ready(&self) -> bool {
        self.ready_once.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set_coverage(&self, f: impl FnOnce(&mut Coverage)) {
        f(&mut self.coverage.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The path of `abs` relative to the root, `/`-separated, when it lies inside.
    pub fn relative(&self, abs: &Path) -> Option<String> {
        abs.strip_prefix(&self.root)
            .ok()
            .map(|rel| sift_indexer::walk::relative(Path::new(""), rel))
    }

    /// Runs updates for as long as the workspace lives: one at once, coalesced, and retried
    /// while another process holds the writer.
    pub async fn run_updates(self: Arc<Self>, mut updater: Updater) {
        let mut retry = Duration::from_secs(1);
        loop {
            let ws = self.clone();
            let opts = updater.opts.clone();
            let sink = updater.progress.clone();
            let result = tokio::task::spawn_blocking(move || {
                let progress = ChannelProgress {
                    root: ws.root.clone(),
                    tx: sink,
                    ws: ws.clone(),
                    total: Default::default(),
                };
                let pending =
                    std::mem::take(&mut *ws.pending.lock().unwrap_or_else(|e| e.into_inner()));
                if pending.full || pending.paths.is_empty() {
                    ws.index.update(&opts, &progress)
                } else {
                    ws.index.update_paths(&pending.paths, &opts, &progress)
                }
            })
            .await;
            let mut waiting = false;
            match result {
                Ok(Ok(report)) => {
                    retry = Duration::from_secs(1);
                    self.ready_once.store(true, std::sync::atomic::Ordering::Relaxed);
                    self.set_coverage(|c| {
                        c.state = "ready";
                        c.files = report.files_total;
                        c.chunks = report.chunks_total;
                        c.files_done = c.files_total;
                        c.message = None;
                    });
                    let summary = format!(
                        "{} files, {} chunks ({} added, {} changed, {} removed)",
                        report.files_total,
                        report.chunks_total,
                        report.added,
                        report.changed,
                        report.removed
                    );
                    let _ = updater
                        .progress
                        .send(ProgressEvent::End { root: self.root.clone(), message: summary });
                }
                Ok(Err(IndexError::Locked { .. })) => {
                    // What was asked for is still to do when the writer is free again.
                    self.pending.lock().unwrap_or_else(|e| e.into_inner()).full = true;
                    // Another sift writes this index: read what it commits, try again later.
                    waiting = true;
                    let _ = self.index.reload();
                    self.set_coverage(|c| {
                        c.state = "waiting";
                        c.chunks = self.index.num_chunks();
                    });
                }
                Ok(Err(e)) => {
                    tracing::error!(root = %self.root.display(), "index update failed: {e}");
                    self.set_coverage(|c| {
                        c.state = "failed";
                        c.message = Some(e.to_string());
                    });
                    let _ = updater.progress.send(ProgressEvent::End {
                        root: self.root.clone(),
                        message: format!("failed: {e}"),
                    });
                }
                Err(join) => {
                    tracing::error!(root = %self.root.display(), "index update panicked: {join}");
                    self.set_coverage(|c| {
                        c.state = "failed";
                        c.message = Some("the index update crashed; see the log".into());
                    });
                    let _ = updater.progress.send(ProgressEvent::End {
                        root: self.root.clone(),
                        message: "failed".into(),
                    });
                }
            }
            if waiting {
                tokio::select! {
                    got = updater.rx.recv() => if got.is_none() { return },
                    () = tokio::time::sleep(retry) => {}
                }
                retry = (retry * 2).min(Duration::from_secs(30));
                continue;
            }
            if updater.rx.recv().await.is_none() {
                return;
            }
        }
    }
}

/// Updates with fewer files than this, after the first, are not shown as progress.
const VISIBLE_UPDATE: u64 = 50;

/// Sends update progress to the protocol side and keeps the coverage current.
struct ChannelProgress {
    root: PathBuf,
    tx: mpsc::UnboundedSender<ProgressEvent>,
    ws: Arc<Workspace>,
    total: std::sync::atomic::AtomicU64,
}

impl Progress for ChannelProgress {
    fn committed(&self, files: u64, chunks: u64) {
        self.ws.set_coverage(|c| {
            c.files = files;
            c.chunks = chunks;
        });
    }

    fn phase(&self, name: &'static str, total: Option<u64>) {
        // Small updates (a saved file, a few files touched by a checkout) finish in moments:
        // they change neither the state shown nor the progress UI, so editors do not flicker.
        if name == "indexing"
            && let Some(total) = total
            && (total >= VISIBLE_UPDATE || !self.ws.has_been_ready())
        {
            self.total.store(total, std::sync::atomic::Ordering::Relaxed);
            self.ws.set_coverage(|c| {
                c.state = "indexing";
                c.files_done = 0;
                c.files_total = total;
            });
            if total > 0 {
                let _ = self.tx.send(ProgressEvent::Begin { root: self.root.clone(), total });
            }
        }
    }

    fn advance(&self, n: u64) {
        let total = self.total.load(std::sync::atomic::Ordering::Relaxed);
        if total == 0 {
            return; // a small update: not shown
        }
        let mut done = 0;
        self.ws.set_coverage(|c| {
            c.files_done += n;
            done = c.files_done;
        });
        let _ = self.tx.send(ProgressEvent::Report { root: self.root.clone(), done, total });
    }
}
