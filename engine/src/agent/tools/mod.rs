//! The agent's tools: each a name, a short description and a JSON schema for the model, and a
//! function over the [`Session`] that answers in bounded text (file names before contents,
//! windows of ~100 lines, an explicit line when there is nothing to show).
//!
//! Every path a tool takes goes through the sandbox's one [`Policy`] (confined to the
//! workspace after resolving `..`, absolute paths and symbolic links; secret files never read;
//! `.git/` and `.sift/` never written). Every text a tool reads is the agent's view: its own
//! pending edits first, then the editor's unsaved buffers, then the file on disk. Nothing is
//! written to disk here: edits go to [`Changes`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sift_runtime::llm::{Cancel, ToolSpec};
use sift_runtime::sandbox::Policy;

use super::changes::Changes;
use super::checkers::Checker;
use super::rules::Rules;
use crate::workspace::Workspace;

pub(crate) mod check;
mod command;
mod edit;
mod files;
mod history;
mod memory;
pub mod plugin;
pub mod registry;
pub(crate) mod review;
mod search;
pub mod served;

/// The most characters a tool answer carries; longer answers are cut with a note.
pub const MAX_OUTPUT_CHARS: usize = 12_000;

/// Files larger than this are not read into the conversation.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// What a tool answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text for the model.
    pub text: String,
    /// Whether the call failed (the text says why and what to do).
    pub error: bool,
}

impl ToolOutput {
    /// A successful answer, cut to [`MAX_OUTPUT_CHARS`].
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput { text: bounded(text.into()), error: false }
    }

    /// A failed call.
    pub fn fail(text: impl Into<String>) -> ToolOutput {
        ToolOutput { text: bounded(format!("error: {}", text.into())), error: true }
    }
}

fn bounded(mut text: String) -> String {
    if text.len() > MAX_OUTPUT_CHARS {
        let mut cut = MAX_OUTPUT_CHARS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let rest = text[cut..].lines().count();
        text.truncate(cut);
        text.push_str(&format!(
            "\n[output cut here: about {rest} more lines; narrow the request to see them]"
        ));
    }
    text
}

/// The tool specs offered to sift's agent, in order (the [`registry`]'s).
pub fn specs() -> Vec<ToolSpec> {
    registry::for_agent().map(registry::Tool::spec).collect()
}

/// What the tools work on: the workspace as the agent sees it, and the walls.
pub struct Session<'a> {
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// The agent's view: the workspace's index and embeddings with the agent's edits (and the
    /// editor's unsaved buffers) laid over them, so that search sees what the agent wrote.
    view: Workspace,
    /// The editor's unsaved buffers, the agent's starting point where they exist.
    unsaved: &'a BTreeMap<String, String>,
    /// The one policy for paths and commands.
    pub policy: &'a Policy,
    /// The agent's pending edits.
    pub changes: Changes,
    /// The checkers the `check` tool runs.
    pub checkers: &'a [Checker],
    /// Answers for the user when the model asks to run a command outside the sandbox
    /// ([`Refuse`](super::approval::Refuse) unless the front end set one up).
    pub approver: &'a dyn super::approval::Approver,
    /// `.sift/`, where requests to leave the sandbox are logged (none: not logged).
    pub store: Option<&'a sift_indexer::store::Store>,
    /// The rules files (those that apply to paths the agent touched are added as it goes).
    pub rules: Rules,
    /// The workspace's memory notes, when there are any to read or to add to.
    pub memory: Option<SessionMemory<'a>>,
    /// Notes the agent proposed with `remember` (written only when the user accepts).
    pub proposed: Vec<crate::memory::Note>,
    /// The task, for the origin of proposed notes.
    pub(crate) task: String,
    /// Tools the team's WebAssembly plugins export (none unless the front end loaded them).
    pub plugin_tools: Option<&'a plugin::PluginTools>,
}

/// The memory notes a session reads.
#[derive(Clone, Copy)]
pub struct SessionMemory<'a> {
    /// The notes and their states.
    pub book: &'a crate::memory::Notebook,
    /// The notes' embeddings, kept across sessions.
    pub vectors: &'a crate::memory::find::NoteVectors,
}

impl<'a> Session<'a> {
    /// A session over `workspace` starting from the editor's `unsaved` buffers.
    pub fn new(
        workspace: &Workspace,
        unsaved: &'a BTreeMap<String, String>,
        policy: &'a Policy,
        checkers: &'a [Checker],
        rules: Rules,
    ) -> crate::Result<Session<'a>> {
        let view = workspace.fork()?;
        for (rel, text) in unsaved {
            view.set_unsaved(rel, Some(text))?;
        }
        Ok(Session {
            root: workspace.root.clone(),
            view,
            unsaved,
            policy,
            changes: Changes::new(),
            checkers,
            approver: &super::approval::Refuse,
            store: None,
            rules,
            memory: None,
            proposed: Vec::new(),
            task: String::new(),
            plugin_tools: None,
        })
    }

    /// The same session reading (and proposing) memory notes.
    pub fn with_memory(mut self, memory: SessionMemory<'a>) -> Session<'a> {
        self.memory = Some(memory);
        self
    }

    /// The tools offered to the model: sift's own ([`specs`]), then the plugins'.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = specs();
        specs.extend(self.plugin_tools.into_iter().flat_map(|t| t.specs().cloned()));
        specs
    }

    /// The embeddings of the agent's view (for note retrieval).
    pub(crate) fn semantic(&self) -> &crate::embeddings::Semantic {
        &self.view.semantic
    }

    /// The task's first line, cut at 100 characters.
    pub(crate) fn task_summary(&self) -> String {
        let line = self.task.lines().next().unwrap_or("").trim();
        if line.chars().count() <= 100 {
            line.to_string()
        } else {
            format!("{}...", line.chars().take(97).collect::<String>())
        }
    }

    /// The fresh notes most relevant to `task`, for the start of the conversation.
    pub(crate) fn notes_for(&self, task: &str) -> String {
        let Some(mem) = &self.memory else { return String::new() };
        let ask = crate::memory::find::Ask { text: task, paths: &[], k: 3, fresh_only: true };
        let answers = crate::memory::find::find(
            &mem.book.notes,
            &mem.book.states,
            &ask,
            Some((self.semantic(), mem.vectors)),
        );
        crate::memory::find::for_prompt(&answers, 3000)
    }

    /// The same session with `changes` as its pending edits (a resumed run).
    pub fn with_changes(mut self, changes: Changes) -> crate::Result<Session<'a>> {
        for (rel, pending) in changes.iter() {
            self.view.set_unsaved(rel, pending.current.as_deref())?;
        }
        self.changes = changes;
        Ok(self)
    }

    /// Runs tool `name` with checked `args`.
    pub fn call(&mut self, name: &str, args: &Value, cancel: &Cancel) -> ToolOutput {
        let out = match registry::agent_tool(name).and_then(|t| t.agent) {
            Some(handler) => handler(self, args, cancel),
            None => match self.plugin_tools.and_then(|tools| tools.call(name, args)) {
                Some(out) => out,
                None => ToolOutput::fail(format!("there is no tool named {name:?}")),
            },
        };
        // Rules files that apply to a path the model just touched are shown to it once.
        match args.get("path").and_then(Value::as_str) {
            Some(path) if !out.error => match self.rules.newly_applying(&self.root, path) {
                Some(note) => ToolOutput { text: format!("{}\n\n{note}", out.text), ..out },
                None => out,
            },
            _ => out,
        }
    }

    /// Resolves a path the model gave for reading: its workspace-relative form.
    pub(crate) fn readable(&self, path: &str) -> Result<String, ToolOutput> {
        let abs = self.policy.resolve_read(path).map_err(|d| ToolOutput::fail(d.to_string()))?;
        self.relative(&abs, path)
    }

    /// Resolves a path the model gave for writing.
    pub(crate) fn writable(&self, path: &str) -> Result<String, ToolOutput> {
        let abs = self.policy.resolve_write(path).map_err(|d| ToolOutput::fail(d.to_string()))?;
        self.relative(&abs, path)
    }

    fn relative(&self, abs: &Path, given: &str) -> Result<String, ToolOutput> {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => Ok(String::new()),
            Ok(rel) => Ok(sift_indexer::walk::relative(Path::new(""), rel)),
            Err(_) => Err(ToolOutput::fail(format!("{given} is outside the workspace"))),
        }
    }

    /// The text of `rel` as the agent sees it: `Ok(None)` when it does not exist (or the agent
    /// deleted it); an error for binary, non-UTF-8 or huge files.
    pub(crate) fn text(&self, rel: &str) -> Result<Option<String>, ToolOutput> {
        if let Some(pending) = self.changes.get(rel) {
            return Ok(pending.current.clone());
        }
        if let Some(text) = self.unsaved.get(rel) {
            return Ok(Some(text.clone()));
        }
        let abs = self.root.join(rel);
        match std::fs::symlink_metadata(&abs) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ToolOutput::fail(format!("cannot read {rel}: {e}"))),
        }
        // Opened through the policy: a link swapped in since the path was checked leads
        // nowhere outside the workspace.
        let mut file = self.policy.open_read(rel).map_err(|d| ToolOutput::fail(d.to_string()))?;
        let meta =
            file.metadata().map_err(|e| ToolOutput::fail(format!("cannot read {rel}: {e}")))?;
        if meta.is_dir() {
            return Err(ToolOutput::fail(format!("{rel} is a folder: use list")));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(ToolOutput::fail(format!(
                "{rel} is {} bytes, too large to read whole; use grep or search to find the part you need",
                meta.len()
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .map_err(|e| ToolOutput::fail(format!("cannot read {rel}: {e}")))?;
        if bytes.iter().take(8192).any(|&b| b == 0) {
            return Err(ToolOutput::fail(format!("{rel} is a binary file")));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ToolOutput::fail(format!("{rel} is not UTF-8 text")))
    }

    /// Records the agent's new text of `rel` (`None`: deleted) and updates the search view.
    pub(crate) fn set_text(&mut self, rel: &str, original: Option<String>, text: Option<String>) {
        self.changes.set(rel, original, text.clone());
        let result = match &text {
            Some(text) => self.view.set_unsaved(rel, Some(text)),
            // A deleted file's hits are filtered out of search results.
            None => self.view.set_unsaved(rel, None),
        };
        if let Err(e) = result {
            tracing::warn!("agent: cannot update the search view of {rel}: {e}");
        }
    }

    /// The original text of `rel` for [`Session::set_text`]: the agent's starting point.
    pub(crate) fn original(&self, rel: &str) -> Result<Option<String>, ToolOutput> {
        match self.changes.get(rel) {
            Some(pending) => Ok(pending.original.clone()),
            None => self.text(rel),
        }
    }

    /// Every file the agent can see: the indexed ones, plus those it created, minus those it
    /// deleted; sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = match self.view.index.manifest() {
            Ok(m) => m.files.into_keys().collect(),
            Err(e) => {
                tracing::warn!("agent: cannot read the index manifest: {e}");
                Vec::new()
            }
        };
        files.retain(|f| self.changes.get(f).is_none_or(|p| p.current.is_some()));
        for (path, p) in self.changes.iter() {
            if p.current.is_some() && p.original.is_none() {
                files.push(path.to_owned());
            }
        }
        files.retain(|f| !self.policy.is_secret(Path::new(f)));
        files.sort();
        files.dedup();
        files
    }

    /// The agent's view of the workspace (for search).
    pub(crate) fn view(&self) -> &Workspace {
        &self.view
    }
}

/// A string argument (the schema was checked: required ones are there).
pub(crate) fn str_arg<'v>(args: &'v Value, name: &str) -> Option<&'v str> {
    args.get(name).and_then(Value::as_str)
}

/// An integer argument.
pub(crate) fn usize_arg(args: &Value, name: &str) -> Option<usize> {
    args.get(name).and_then(Value::as_u64).map(|n| n as usize)
}
