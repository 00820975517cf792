//! One workspace folder being served (by `sift lsp` and `sift mcp` alike): its on-disk index,
//! its unsaved buffers, the task that keeps the index fresh and the watcher that asks it to.
//!
//! Updates are coalesced: a request to update while one runs marks the index dirty, and one more
//! update follows. When another process (a second editor window) holds the index's writer lock,
//! this one keeps reading what that process commits and retries later: one writer, no double
//! work.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use crate::embeddings::Semantic;
use crate::index::{CodeIndex, Error as IndexError, Progress, UpdateOptions};
use serde::Serialize;
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
    /// Chunks with an embedding of the model searches use now (searchable by meaning).
    pub embedded: u64,
    /// That model's: `off` (no model), `pending`, `embedding`, `ready`, `paused`, `waiting`
    /// (another process embeds) or `failed`.
    pub embed_state: &'static str,
    /// The id of the embedding model searches use now, when one is loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_model: Option<String>,
    /// Why semantic search is off, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_message: Option<String>,
    /// The progressive upgrade (`[embed] upgrade`), when one is configured and installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_upgrade: Option<UpgradeCoverage>,
}

/// Where the progressive upgrade stands.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeCoverage {
    /// The model's name.
    pub model: String,
    /// Chunks with its vector.
    pub embedded: u64,
    /// Whether searches use it now (once its vectors cover every chunk).
    pub in_use: bool,
    /// Its pass's state, as `embedState`.
    pub state: &'static str,
    /// Why it cannot run, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A message from an update to whoever shows progress.
#[derive(Debug, Clone)]
pub enum ProgressEvent {
    /// Work on `root` started: `total` files to index, or chunks to embed.
    Begin {
        /// Workspace root.
        root: PathBuf,
        /// `indexing` or `embedding`.
        what: &'static str,
        /// Steps to do.
        total: u64,
    },
    /// `done` of the steps are done.
    Report {
        /// Workspace root.
        root: PathBuf,
        /// `indexing` or `embedding`.
        what: &'static str,
        /// Steps done.
        done: u64,
        /// Steps to do.
        total: u64,
    },
    /// The work ended.
    End {
        /// Workspace root.
        root: PathBuf,
        /// `indexing` or `embedding`.
        what: &'static str,
        /// A one-line summary.
        message: String,
    },
}

/// A workspace folder being served: the engine's [`crate::Workspace`] (index, unsaved
/// buffers, embeddings; reached through `Deref`) and what keeps it fresh.
pub struct Workspace {
    core: crate::Workspace,
    coverage: Mutex<Coverage>,
    ready_once: std::sync::atomic::AtomicBool,
    /// What the next update must look at.
    pending: Mutex<Pending>,
    /// Tells `sift search` in other processes that this one keeps the index fresh.
    _watching: Option<crate::index::WatchGuard>,
    updates: mpsc::Sender<()>,
    /// The sandbox's policy (memory's citations are read through it) and the notes folder;
    /// `None` when `[sandbox]` is invalid.
    memory: Option<(crate::sandbox::Policy, crate::memory::Memory)>,
    /// The notes and their states, checked after every index update.
    notebook: RwLock<Option<crate::memory::Notebook>>,
    /// Bumped whenever the notes or their states changed (code lenses to redraw).
    memory_changed: tokio::sync::watch::Sender<u64>,
    /// Whether a watcher reports changes of the note files (else every check re-reads them).
    notes_watched: std::sync::atomic::AtomicBool,
    /// Whether a note file may have changed since the notes were last read.
    notes_unread: std::sync::atomic::AtomicBool,
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
    /// Opens (or creates) the index of `root` with its layered configuration (`overrides`: the
    /// editor's settings, when a client sent some). A bad `[embed]` turns semantic search off
    /// (and says why) and a bad `[sandbox]` turns memory notes off (logged): neither stops
    /// indexing.
    pub fn open_configured(
        root: &Path,
        overrides: Option<&serde_json::Value>,
        front: crate::fates::Front,
        progress: mpsc::UnboundedSender<ProgressEvent>,
    ) -> crate::Result<(Arc<Workspace>, Updater)> {
        let config = crate::config::for_editor(root, overrides)?;
        // A server commits often, so what it indexed is soon searchable from the CLI.
        let opts = config.update_options(Duration::from_millis(750))?;
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let walls = crate::config::policy(&canonical, &config)
            .map_err(|e| tracing::warn!("{}: memory notes off: {e}", root.display()))
            .ok();
        let embed = config.embed().map_err(|e| e.to_string());
        let aside = config.leave_aside().unwrap_or_else(|e| {
            tracing::warn!("{}: {e}; every kind is left aside", root.display());
            sift_indexer::Asides::ALL
        });
        let recorder = crate::fates::Recorder::configured(&canonical, &config, front);
        Workspace::open(root, opts, embed, walls, aside, recorder, progress)
    }

    /// Opens (or creates) the index of `root`. The returned [`Updater`] must be run (see
    /// [`Workspace::run_updates`]) for the index to be built and kept fresh.
    pub fn open(
        root: &Path,
        opts: UpdateOptions,
        embed: Result<crate::embed::EmbedConfig, String>,
        policy: Option<crate::sandbox::Policy>,
        leave_aside: sift_indexer::Asides,
        recorder: crate::fates::Recorder,
        progress: mpsc::UnboundedSender<ProgressEvent>,
    ) -> crate::Result<(Arc<Workspace>, Updater)> {
        let store = crate::store::open(root)?;
        let memory = policy.map(|p| (p, crate::memory::Memory::open(&store)));
        let (index, _notice) = CodeIndex::open_or_create(&store)?;
        let manifest = index.manifest()?;
        let coverage = Coverage {
            root: index.root().display().to_string(),
            state: "indexing",
            files_done: 0,
            files_total: 0,
            files: manifest.files.values().filter(|r| r.skip.is_none()).count() as u64,
            chunks: index.num_chunks(),
            message: None,
            embedded: 0,
            embed_state: "off",
            embed_model: None,
            embed_message: None,
            embed_upgrade: None,
        };
        let semantic = Semantic::load(embed);
        let (tx, rx) = mpsc::channel(1);
        let watching = index.layout().watch().ok();
        let ws = Arc::new(Workspace {
            core: crate::Workspace::new(index, semantic)?
                .with_leave_aside(leave_aside)
                .with_recorder(recorder),
            coverage: Mutex::new(coverage),
            ready_once: Default::default(),
            pending: Mutex::new(Pending { full: true, paths: Vec::new() }),
            _watching: watching,
            updates: tx,
            memory,
            notebook: RwLock::new(None),
            memory_changed: tokio::sync::watch::Sender::new(0),
            notes_watched: Default::default(),
            notes_unread: std::sync::atomic::AtomicBool::new(true),
        });
        Ok((ws, Updater { rx, opts, progress }))
    }

    /// Asks for an update of the whole tree; coalesces with one already pending.
    pub fn request_update(&self) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).full = true;
        self.semantic.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.updates.try_send(());
    }

    /// Asks for an update of these files only (absolute paths from a watcher or a save).
    pub fn request_paths(&self, paths: impl IntoIterator<Item = PathBuf>) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).paths.extend(paths);
        self.semantic.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.updates.try_send(());
    }

    /// The memory notes as last checked (`None` before the first index update, or when memory
    /// is off).
    pub fn notebook(&self) -> RwLockReadGuard<'_, Option<crate::memory::Notebook>> {
        self.notebook.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The sandbox's policy for this workspace (`None` when `[sandbox]` is invalid).
    pub fn policy(&self) -> Option<&crate::sandbox::Policy> {
        self.memory.as_ref().map(|(p, _)| p)
    }

    /// The policy memory reads through and the notes folder.
    pub fn memory_parts(&self) -> Option<(&crate::sandbox::Policy, &crate::memory::Memory)> {
        self.memory.as_ref().map(|(p, m)| (p, m))
    }

    /// Writes a new memory note (`code`: this workspace's index, through its policy) and reads
    /// the notes again, so the next hover, lens or search sees it (blocking). Its file's path.
    pub fn add_note(
        &self,
        code: &crate::memory::IndexedCode<'_>,
        draft: crate::memory::Draft<'_>,
    ) -> Result<(crate::memory::Note, PathBuf), String> {
        let (_, memory) = self.memory_parts().ok_or("memory notes are not available here")?;
        let note = crate::memory::new_note(memory, code, draft).map_err(|e| e.to_string())?;
        let path = memory.write(&note).map_err(|e| e.to_string())?;
        self.refresh_memory();
        Ok((note, path))
    }

    /// Reads the notes again, checks them against the committed index and saves their states
    /// (blocking): after a note was written or the watcher saw one change. When what is shown
    /// of the notes changed, [`Workspace::memory_changes`] hear of it.
    pub fn refresh_memory(&self) {
        self.check_memory(true);
        self.save_memory();
    }

    /// After an index update: checks the notes again, reading the note files again only when
    /// the watcher saw one change (or there is no watcher). Saving is left to
    /// [`Workspace::save_memory`], once the update is announced.
    fn recheck_memory(&self) {
        self.check_memory(false);
    }

    fn check_memory(&self, reread: bool) {
        let Some((policy, memory)) = &self.memory else { return };
        // Cleared before reading: a note written meanwhile is read by the next check.
        let unread = self.notes_unread.swap(false, std::sync::atomic::Ordering::SeqCst);
        let reread =
            reread || unread || !self.notes_watched.load(std::sync::atomic::Ordering::SeqCst);
        let code = crate::memory::IndexedCode::new(&self.index, policy);
        // Checked in place, under the lock: hovers wait the few milliseconds of a check rather
        // than the notebook being copied at every update.
        let mut slot = self.notebook.write().unwrap_or_else(|e| e.into_inner());
        let changed = match slot.as_mut() {
            Some(book) if reread => book.reload(&code),
            Some(book) => book.recheck_code(&code),
            None => {
                let book = crate::memory::Notebook::load(memory.clone(), &code);
                let any = !book.notes.is_empty();
                *slot = Some(book);
                any
            }
        };
        let Some(book) = slot.as_ref() else { return };
        if reread {
            for broken in &book.broken {
                tracing::warn!("memory note .sift/memory/{broken}");
            }
        }
        // With notes, the next update keeps the definitions it parses for their check.
        self.index.keep_definitions(!book.notes.is_empty());
        drop(slot);
        if changed {
            self.memory_changed.send_modify(|n| *n += 1);
        }
    }

    /// Writes the notes' states for the next process when they changed (blocking).
    pub fn save_memory(&self) {
        if let Some(book) = self.notebook.write().unwrap_or_else(|e| e.into_inner()).as_mut() {
            book.save();
        }
    }

    /// Changes whenever the notes or their states changed (after an index update, a note
    /// written or removed): what shows notes (code lenses) redraws then, and only then.
    pub fn memory_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.memory_changed.subscribe()
    }

    /// A snapshot of how complete the index is.
    pub fn coverage(&self) -> Coverage {
        let mut c = self.coverage.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let active = self.semantic.active();
        c.embedded = active.embedded.load(std::sync::atomic::Ordering::Relaxed);
        c.embed_state = active.state();
        c.embed_model = active.model_id().map(str::to_string);
        c.embed_message = self.semantic.unavailable().map(str::to_string);
        c.embed_upgrade = self.semantic.upgrade().map(|u| UpgradeCoverage {
            model: u.model,
            embedded: u.embedded,
            in_use: u.in_use,
            state: u.state,
            message: u.unavailable,
        });
        c
    }

    /// Pauses background embedding (the running pass stops after its batch).
    pub fn pause_embedding(&self) {
        self.semantic.paused.store(true, std::sync::atomic::Ordering::Relaxed);
        self.semantic.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether an embedding pass (the model's or its upgrade's) is in a batch now.
    pub fn embedding_running(&self) -> bool {
        self.semantic.state() == "embedding"
            || self.semantic.upgrade().is_some_and(|u| u.state == "embedding")
    }

    /// Resumes background embedding where it stopped.
    pub fn resume_embedding(&self) {
        self.semantic.paused.store(false, std::sync::atomic::Ordering::Relaxed);
        let _ = self.updates.try_send(());
    }

    /// Whether an update has completed since the server started.
    fn has_been_ready(&self) -> bool {
        self.ready_once.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set_coverage(&self, f: impl FnOnce(&mut Coverage)) {
        f(&mut self.coverage.lock().unwrap_or_else(|e| e.into_inner()));
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
                    // The notes' citations are checked against what was just committed,
                    // before the update is announced as done.
                    let ws = self.clone();
                    let _ = tokio::task::spawn_blocking(move || ws.recheck_memory()).await;
                    let _ = updater.progress.send(ProgressEvent::End {
                        root: self.root.clone(),
                        what: "indexing",
                        message: summary,
                    });
                    let ws = self.clone();
                    let _ = tokio::task::spawn_blocking(move || ws.save_memory()).await;
                    self.clone().embed_pass(updater.progress.clone()).await;
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
                        what: "indexing",
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
                        what: "indexing",
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

/// Watches a served workspace's root: named files update by themselves, a lost watcher walks
/// the tree. Dropping the watcher stops it; it never keeps the workspace alive.
pub fn watch(ws: &Arc<Workspace>) -> notify::Result<crate::watch::TreeWatcher> {
    let weak = Arc::downgrade(ws);
    let watcher = crate::watch::watch_tree(&ws.root, move |change| {
        let Some(ws) = weak.upgrade() else { return };
        match change {
            crate::watch::Change::Rescan => ws.request_update(),
            crate::watch::Change::Paths(paths) => ws.request_paths(paths),
            // A note written by hand, by `sift memory` or by git: read again at once.
            crate::watch::Change::Notes => {
                ws.notes_unread.store(true, std::sync::atomic::Ordering::SeqCst);
                ws.refresh_memory();
            }
        }
    })?;
    // From now on the watcher says when notes change; until now nobody did.
    ws.notes_unread.store(true, std::sync::atomic::Ordering::SeqCst);
    ws.notes_watched.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(watcher)
}

impl std::ops::Deref for Workspace {
    type Target = crate::Workspace;

    fn deref(&self) -> &crate::Workspace {
        &self.core
    }
}

impl Workspace {
    /// Embeds what the last update added (on a blocking thread), unless another update is
    /// already waiting: that one goes first, and the pass after it picks up from there. Then
    /// the progressive upgrade's pass, when one is configured (at low priority, see
    /// [`Semantic::run_upgrade_pass`]).
    async fn embed_pass(self: Arc<Self>, sink: mpsc::UnboundedSender<ProgressEvent>) {
        if !self.semantic.available() {
            return;
        }
        self.semantic.stop.store(false, std::sync::atomic::Ordering::Relaxed);
        let ws = self.clone();
        let root = self.root.clone();
        let result = tokio::task::spawn_blocking(move || {
            ws.embed_with_progress(&sink, "embedding", |p| ws.semantic.run_pass(&ws.index, p));
            ws.embed_with_progress(&sink, "upgrading embeddings", |p| {
                ws.semantic.run_upgrade_pass(&ws.index, p)
            });
        })
        .await;
        if let Err(e) = result {
            tracing::error!(root = %root.display(), "embedding crashed: {e}");
        }
    }

    /// Runs one embedding pass with its progress shown as `what`, and ends that progress.
    fn embed_with_progress(
        &self,
        sink: &mpsc::UnboundedSender<ProgressEvent>,
        what: &'static str,
        pass: impl FnOnce(&EmbedProgress) -> Option<crate::index::EmbedReport>,
    ) {
        let progress = EmbedProgress {
            root: self.root.clone(),
            what,
            tx: sink.clone(),
            shown: Default::default(),
            total: Default::default(),
            done: Default::default(),
        };
        let report = pass(&progress);
        if progress.shown.load(std::sync::atomic::Ordering::Relaxed)
            && let Some(r) = &report
        {
            let message =
                format!("{} of {} chunks embedded ({})", r.with_vectors, r.chunks, r.model);
            let _ = sink.send(ProgressEvent::End { root: self.root.clone(), what, message });
        }
    }
}

/// Embedding passes over fewer chunks than this are not shown as progress.
const VISIBLE_EMBEDDING: u64 = 256;

/// Sends embedding progress to the protocol side.
struct EmbedProgress {
    root: PathBuf,
    /// `embedding` or `upgrading embeddings`.
    what: &'static str,
    tx: mpsc::UnboundedSender<ProgressEvent>,
    shown: std::sync::atomic::AtomicBool,
    total: std::sync::atomic::AtomicU64,
    done: std::sync::atomic::AtomicU64,
}

impl Progress for EmbedProgress {
    fn phase(&self, _name: &'static str, total: Option<u64>) {
        if let Some(total) = total.filter(|&t| t >= VISIBLE_EMBEDDING) {
            self.shown.store(true, std::sync::atomic::Ordering::Relaxed);
            self.total.store(total, std::sync::atomic::Ordering::Relaxed);
            let _ = self.tx.send(ProgressEvent::Begin {
                root: self.root.clone(),
                what: self.what,
                total,
            });
        }
    }

    fn advance(&self, n: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let done = self.done.fetch_add(n, Relaxed) + n;
        if self.shown.load(Relaxed) {
            let total = self.total.load(Relaxed);
            let _ = self.tx.send(ProgressEvent::Report {
                root: self.root.clone(),
                what: self.what,
                done,
                total,
            });
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
                let _ = self.tx.send(ProgressEvent::Begin {
                    root: self.root.clone(),
                    what: "indexing",
                    total,
                });
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
        let _ = self.tx.send(ProgressEvent::Report {
            root: self.root.clone(),
            what: "indexing",
            done,
            total,
        });
    }
}
