//! The open documents: each one's text and version, held once, and the task that applies
//! `didOpen`/`didChange`/`didClose`/`didSave`/`didChangeWatchedFiles` strictly in arrival order.
//!
//! Versions are recorded synchronously as each notification arrives (so a request that comes
//! next already sees the newest version); texts are updated by [`DocumentActor`], which also
//! lays them over the workspace's index (the engine's unsaved buffers keep only a hash of the
//! text, not a second copy).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use futures::FutureExt;
use tokio::sync::mpsc;
use tower_lsp_server::ls_types::{TextDocumentContentChangeEvent, Uri};

use super::guard::panic_message;
use super::position::{Encoding, apply_change};
use sift_engine::live::Workspace;

/// The open documents' texts and versions.
#[derive(Default)]
pub struct Documents {
    /// Text as the document task last applied it.
    texts: Mutex<HashMap<Uri, String>>,
    /// The latest version the client announced (updated in arrival order).
    versions: Mutex<HashMap<Uri, i32>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Documents {
    /// The document's text as the user sees it: the open buffer, else the file on disk.
    pub fn text_of(&self, uri: &Uri) -> String {
        if let Some(text) = lock(&self.texts).get(uri) {
            return text.clone();
        }
        uri.to_file_path().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default()
    }

    /// The document's text as the user sees it, `None` when it is neither open nor a readable
    /// file.
    pub fn text_of_opt(&self, uri: &Uri) -> Option<String> {
        if let Some(text) = lock(&self.texts).get(uri) {
            return Some(text.clone());
        }
        uri.to_file_path().and_then(|p| std::fs::read_to_string(p).ok())
    }

    /// Every open document's text.
    pub fn open_texts(&self) -> Vec<(Uri, String)> {
        lock(&self.texts).iter().map(|(u, t)| (u.clone(), t.clone())).collect()
    }

    /// The latest version the client announced for `uri`, while it is open.
    pub fn version(&self, uri: &Uri) -> Option<i32> {
        lock(&self.versions).get(uri).copied()
    }

    /// Records the version the client just announced (called in arrival order, before the
    /// change reaches the document task).
    pub fn note_version(&self, uri: &Uri, version: i32) {
        lock(&self.versions).insert(uri.clone(), version);
    }

    /// Forgets the version of a closed document.
    pub fn forget_version(&self, uri: &Uri) {
        lock(&self.versions).remove(uri);
    }
}

/// A state-changing notification, in arrival order.
#[derive(Debug)]
pub enum DocEvent {
    /// `didOpen`.
    Open(Uri, String),
    /// `didChange`.
    Change(Uri, Vec<TextDocumentContentChangeEvent>),
    /// `didClose`.
    Close(Uri),
    /// `didSave`.
    Saved(Uri),
    /// `didChangeWatchedFiles`.
    FilesChanged,
}

/// Owns the text updates; applies notifications strictly in arrival order.
pub struct DocumentActor {
    workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
    rx: mpsc::UnboundedReceiver<DocEvent>,
    encoding: Encoding,
    documents: Arc<Documents>,
}

impl DocumentActor {
    /// The task over `rx`, updating `documents` and the workspaces' unsaved buffers.
    pub fn new(
        workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
        rx: mpsc::UnboundedReceiver<DocEvent>,
        encoding: Encoding,
        documents: Arc<Documents>,
    ) -> Self {
        DocumentActor { workspaces, rx, encoding, documents }
    }

    /// The workspace holding `uri` and the document's path relative to it.
    fn locate(&self, uri: &Uri) -> Option<(Arc<Workspace>, String)> {
        locate(&self.workspaces.read().unwrap_or_else(|e| e.into_inner()), uri)
    }

    /// Runs until the server drops the sender.
    pub async fn run(mut self) {
        while let Some(event) = self.rx.recv().await {
            let outcome = AssertUnwindSafe(self.apply(event)).catch_unwind().await;
            if let Err(panic) = outcome {
                tracing::error!("document update panicked: {}", panic_message(&panic));
            }
        }
    }

    async fn apply(&mut self, event: DocEvent) {
        let (uri, text) = match event {
            DocEvent::Open(uri, text) => {
                lock(&self.documents.texts).insert(uri.clone(), text.clone());
                (uri, Some(text))
            }
            DocEvent::Change(uri, changes) => {
                let mut texts = lock(&self.documents.texts);
                let Some(text) = texts.get_mut(&uri) else {
                    tracing::warn!("change to a document that is not open: {}", uri.as_str());
                    return;
                };
                for change in &changes {
                    apply_change(text, change, self.encoding);
                }
                let text = text.clone();
                drop(texts);
                (uri, Some(text))
            }
            DocEvent::Close(uri) => {
                lock(&self.documents.texts).remove(&uri);
                (uri, None)
            }
            DocEvent::Saved(uri) => {
                if let Some((ws, _)) = self.locate(&uri)
                    && let Some(path) = uri.to_file_path()
                {
                    ws.request_paths([path.into_owned()]);
                }
                return;
            }
            DocEvent::FilesChanged => {
                let workspaces = self.workspaces.read().unwrap_or_else(|e| e.into_inner()).clone();
                for ws in workspaces {
                    ws.request_update();
                }
                return;
            }
        };
        let Some((ws, rel)) = self.locate(&uri) else { return };
        let result =
            tokio::task::spawn_blocking(move || ws.set_unsaved(&rel, text.as_deref())).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("cannot index the unsaved buffer {}: {e}", uri.as_str()),
            Err(e) => tracing::error!("indexing the unsaved buffer {} crashed: {e}", uri.as_str()),
        }
    }
}

/// The innermost of `workspaces` holding `uri`, and the document's path relative to it.
pub(super) fn locate(workspaces: &[Arc<Workspace>], uri: &Uri) -> Option<(Arc<Workspace>, String)> {
    let path = uri.to_file_path()?.into_owned();
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    workspaces
        .iter()
        .filter_map(|ws| ws.relative(&path).map(|rel| (ws.clone(), rel)))
        .max_by_key(|(ws, _)| ws.root.as_os_str().len())
}
