//! What the agent's runs in one workspace share besides the model: the sandbox's policy (from
//! the `[sandbox]` configuration, which nothing the model says reaches), the checkers
//! (`[agent] checkers`, else detected), the default budget, the rules files and the `.sift/`
//! store their transcripts go to. The CLI and the language server build it here, so a run
//! starts the same way from either.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use sift_indexer::store::Store;
use sift_runtime::sandbox::Policy;

use super::approval::{Approver, Refuse};
use super::checkers::{self, Checker};
use super::rules::Rules;
use super::tools::Session;
use crate::workspace::Workspace;

pub use crate::config::{PolicyError, policy};

/// The shared part of the agent's runs in one workspace.
pub struct Setup {
    /// The one policy for the runs' paths and commands.
    pub policy: Policy,
    /// The checkers the `check` tool runs (`[agent] checkers`, else detected).
    pub checkers: Vec<Checker>,
    /// The default budget of a run (`[agent]`; front ends override it with their flags).
    pub budget: super::Budget,
    /// `.sift/`, where transcripts and picks go.
    pub store: Store,
    /// Answers for the user when a run asks to leave the sandbox (refuses unless the front end
    /// set one up with [`Setup::with_approver`]).
    approver: Box<dyn Approver>,
    root: PathBuf,
    /// Read once, on the first session: every session starts from the same rules.
    rules: OnceLock<Rules>,
    /// The memory notes, read and checked on the first session.
    notebook: OnceLock<crate::memory::Notebook>,
    /// The notes' embeddings.
    note_vectors: crate::memory::find::NoteVectors,
    /// The working tree's plugins' tools, loaded on the first session.
    plugin_tools: OnceLock<super::tools::plugin::PluginTools>,
}

impl Setup {
    /// The setup for the workspace at `root` (canonical) under `config`.
    pub fn new(
        root: &std::path::Path,
        config: &crate::config::Config,
    ) -> Result<Setup, SetupError> {
        let agent = config.agent().map_err(|e| SetupError::Config(e.to_string()))?;
        Ok(Setup {
            policy: policy(root, config)?,
            checkers: agent.checkers.unwrap_or_else(|| checkers::detect(root)),
            budget: agent.budget,
            store: crate::store::open(root)?,
            approver: Box::new(Refuse),
            root: root.to_path_buf(),
            rules: OnceLock::new(),
            notebook: OnceLock::new(),
            note_vectors: Default::default(),
            plugin_tools: OnceLock::new(),
        })
    }

    /// The workspace it is for.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// The same setup starting its sessions from notes already read and checked (the language
    /// server's, re-checked after every index update) instead of reading them again.
    pub fn with_notebook(self, book: crate::memory::Notebook) -> Setup {
        let _ = self.notebook.set(book);
        self
    }

    /// The same setup under another sandbox `policy` (an automation's, with its own hosts).
    pub fn with_policy(mut self, policy: Policy) -> Setup {
        self.policy = policy;
        self
    }

    /// The same setup with the front end's approver for commands outside the sandbox (the
    /// CLI's `--allow-unsandboxed`, the editor's prompt).
    pub fn with_approver(mut self, approver: Box<dyn Approver>) -> Setup {
        self.approver = approver;
        self
    }

    /// A fresh session (its own overlay, no pending change) over `workspace`, starting from
    /// the editor's `unsaved` buffers.
    pub fn session<'a>(
        &'a self,
        workspace: &Workspace,
        unsaved: &'a BTreeMap<String, String>,
    ) -> crate::Result<Session<'a>> {
        let rules = self.rules.get_or_init(|| {
            let files: Vec<String> = match workspace.index.manifest() {
                Ok(m) => m.files.into_keys().collect(),
                Err(e) => {
                    tracing::warn!("agent: cannot list the files for nested rules: {e}");
                    Vec::new()
                }
            };
            Rules::load(&self.root, &files)
        });
        let mut session =
            Session::new(workspace, unsaved, &self.policy, &self.checkers, rules.clone())?;
        session.approver = &*self.approver;
        session.store = Some(&self.store);
        session.plugin_tools = Some(self.plugin_tools.get_or_init(|| {
            let tools = super::tools::plugin::PluginTools::load(&self.root, &self.policy);
            for problem in &tools.problems {
                tracing::warn!("agent: {problem}");
            }
            tools
        }));
        let book = self.notebook.get_or_init(|| {
            let memory = crate::memory::Memory::open(&self.store);
            let code = crate::memory::IndexedCode::new(&workspace.index, &self.policy);
            crate::memory::Notebook::load(memory, &code)
        });
        Ok(session
            .with_memory(crate::agent::tools::SessionMemory { book, vectors: &self.note_vectors }))
    }

    /// The memory notes the sessions read (after the first session).
    pub fn notebook(&self) -> Option<&crate::memory::Notebook> {
        self.notebook.get()
    }
}

/// Why a [`Setup`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The walls.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// `.sift/`.
    #[error(transparent)]
    Store(#[from] sift_indexer::Error),
    /// The `[agent]` configuration is invalid.
    #[error("{0}")]
    Config(String),
}
