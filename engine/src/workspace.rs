//! One repository being served: its on-disk index, the unsaved buffers laid over it, and its
//! embeddings. The CLI opens one per command; the language server keeps one per workspace
//! folder and keeps it fresh.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use sift_indexer::{Asides, CodeIndex, Overlay};

use crate::embeddings::Semantic;

/// A repository's index, unsaved buffers and embeddings.
pub struct Workspace {
    /// The root folder (canonical).
    pub root: PathBuf,
    /// The on-disk index.
    pub index: Arc<CodeIndex>,
    /// Unsaved editor buffers, searched in place of their files on disk.
    overlay: Mutex<Overlay>,
    /// Embeddings (shared with [`Workspace::fork`]s).
    pub semantic: Arc<Semantic>,
    /// What its natural-language searches leave aside (`[search] leave_aside`; every kind
    /// unless the configuration says otherwise).
    pub leave_aside: Asides,
    /// Where the fates of what it suggests are recorded (off unless opened with one).
    pub recorder: Arc<crate::fates::Recorder>,
}

impl Workspace {
    /// A workspace over `index`, with no unsaved buffers.
    pub fn new(index: CodeIndex, semantic: Semantic) -> crate::Result<Workspace> {
        let root = index.root().to_path_buf();
        Ok(Workspace {
            root,
            index: Arc::new(index),
            overlay: Mutex::new(Overlay::new()?),
            semantic: Arc::new(semantic),
            leave_aside: Asides::ALL,
            recorder: Arc::new(crate::fates::Recorder::off()),
        })
    }

    /// This workspace as a command's `config` says (`[search] leave_aside`, `[feedback]`),
    /// recording the fates of what it shows for `front`.
    pub fn configured(
        self,
        config: &crate::config::Config,
        front: crate::fates::Front,
    ) -> crate::Result<Workspace> {
        let recorder = crate::fates::Recorder::configured(&self.root, config, front);
        Ok(self.with_leave_aside(config.leave_aside()?).with_recorder(recorder))
    }

    /// This workspace, recording fates with `recorder`.
    pub fn with_recorder(self, recorder: crate::fates::Recorder) -> Workspace {
        Workspace { recorder: Arc::new(recorder), ..self }
    }

    /// This workspace, leaving `aside` out of its natural-language searches.
    pub fn with_leave_aside(self, aside: Asides) -> Workspace {
        Workspace { leave_aside: aside, ..self }
    }

    /// The same index and embeddings with an overlay of its own, empty: the agent's view of
    /// the workspace, where its pending edits are searched without reaching the editor's.
    pub fn fork(&self) -> crate::Result<Workspace> {
        Ok(Workspace {
            root: self.root.clone(),
            index: Arc::clone(&self.index),
            overlay: Mutex::new(Overlay::new()?),
            semantic: Arc::clone(&self.semantic),
            leave_aside: self.leave_aside,
            recorder: Arc::clone(&self.recorder),
        })
    }

    /// The unsaved buffers (locked).
    pub fn overlay(&self) -> MutexGuard<'_, Overlay> {
        self.overlay.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the unsaved text of `rel` (a path relative to the root), or forgets it (`None`: the
    /// file on disk counts again).
    pub fn set_unsaved(&self, rel: &str, text: Option<&str>) -> crate::Result<()> {
        let mut overlay = self.overlay();
        match text {
            Some(text) => overlay.set(rel, text)?,
            None => overlay.remove(rel)?,
        }
        Ok(())
    }

    /// The path of `abs` relative to the root, `/`-separated, when it lies inside.
    pub fn relative(&self, abs: &Path) -> Option<String> {
        abs.strip_prefix(&self.root)
            .ok()
            .map(|rel| sift_indexer::walk::relative(Path::new(""), rel))
    }
}
