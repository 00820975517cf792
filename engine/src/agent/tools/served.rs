//! The tools as a served workspace answers them to another agent (`sift mcp`): each call
//! checked against its schema in the [registry](super::registry), answered in the same bounded
//! text the agent gets and as data. The tools that only read run through a session of their own
//! (the workspace's walls, no pending change, the notes as last checked); `review` reviews a
//! revision, the index or a diff; `memory_add` writes a note where the user allowed it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Session, SessionMemory, ToolOutput};
use crate::live::Workspace;
use crate::memory::{self, Author, find::NoteVectors};
use crate::review::{self, Change, Request};
use crate::rules::report;

/// The most findings a `review` answer carries.
const MAX_FINDINGS: usize = 30;

/// What a call answered: text for the client's model, the same as data, and whether it failed.
#[derive(Debug)]
pub struct Answer {
    /// Compact text.
    pub text: String,
    /// The answer as data (none when the call failed).
    pub data: Option<Value>,
    /// Whether the call failed (the text says why).
    pub error: bool,
}

impl From<(ToolOutput, Option<Value>)> for Answer {
    fn from((out, data): (ToolOutput, Option<Value>)) -> Answer {
        Answer { text: out.text, data: data.filter(|_| !out.error), error: out.error }
    }
}

impl Answer {
    pub(super) fn fail(text: impl Into<String>) -> Answer {
        Answer { text: format!("error: {}", text.into()), data: None, error: true }
    }
}

/// A served workspace's tools, and what they share across calls.
pub struct Served {
    /// The workspace served.
    pub ws: Arc<Workspace>,
    /// The notes' embeddings, kept across calls.
    pub note_vectors: NoteVectors,
    /// Whether the tools that write (`memory_add`) are offered.
    pub allow_writes: bool,
}

/// No unsaved buffers: another agent's edits are on disk.
static NO_BUFFERS: BTreeMap<String, String> = BTreeMap::new();

impl Served {
    /// `f` over a session of its own (the workspace's walls, no pending change, the notes as
    /// last checked).
    pub(super) fn in_session(
        &self,
        f: impl FnOnce(&mut Session<'_>) -> (ToolOutput, Option<Value>),
    ) -> Answer {
        let Some(policy) = self.ws.policy() else {
            return Answer::fail(
                "the [sandbox] configuration is invalid, so no file can be read: run `sift config check`",
            );
        };
        let mut session = match Session::new(&self.ws, &NO_BUFFERS, policy, &[], Default::default())
        {
            Ok(session) => session,
            Err(e) => return Answer::fail(e.to_string()),
        };
        let book = self.ws.notebook();
        if let Some(book) = book.as_ref() {
            session = session.with_memory(SessionMemory { book, vectors: &self.note_vectors });
        }
        f(&mut session).into()
    }

    /// `review {base?, diff?, staged?}`: the review use case on the repository holding the
    /// workspace.
    pub(super) fn review(&self, args: &Value) -> Answer {
        let base = args.get("base").and_then(Value::as_str);
        let diff = args.get("diff").and_then(Value::as_str);
        let staged = args.get("staged").and_then(Value::as_bool).unwrap_or(false);
        if [base.is_some(), diff.is_some(), staged].iter().filter(|b| **b).count() > 1 {
            return Answer::fail("give at most one of base, diff and staged");
        }
        let change = match (base, diff) {
            (Some(base), _) => Change::Base(base),
            (_, Some(text)) => Change::Diff { text, name: "the diff argument" },
            _ if staged => Change::Staged,
            _ => Change::WorkingTree,
        };
        let request = Request { change, max_findings: Some(MAX_FINDINGS), ..Request::default() };
        let mut reviewed = match review::review(&self.ws.root, &request) {
            Ok(reviewed) => reviewed,
            Err(e) => return Answer::fail(format!("the review failed: {e}")),
        };
        // The walls hold here too: nothing of a secret file reaches the client.
        if let Some(policy) = self.ws.policy() {
            let before = reviewed.items.len();
            reviewed.items.retain(|i| !policy.is_secret(std::path::Path::new(&i.finding.path)));
            reviewed.total -= before - reviewed.items.len();
        }
        let suppressed = reviewed.suppressed_counts();
        let text = report::to_text(&reviewed.items, reviewed.total, suppressed, false);
        let data = report::to_json(&reviewed.items, reviewed.total, suppressed);
        Answer { text, data: Some(data), error: false }
    }

    /// `memory_add {text, title?, cite?}`: writes the note (the user allowed this tool).
    pub(super) fn memory_add(&self, args: &Value) -> Answer {
        if !self.allow_writes {
            return Answer::fail("writing notes is not allowed here");
        }
        let Some(policy) = self.ws.policy() else {
            return Answer::fail("memory notes are off: the [sandbox] configuration is invalid");
        };
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        let cites: Vec<String> = args
            .get("cite")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let code = memory::IndexedCode::new(&self.ws.index, policy);
        let draft = memory::Draft {
            title: args.get("title").and_then(Value::as_str),
            author: Author::Agent,
            origin: Some("mcp".into()),
            ..memory::Draft::new(text, &cites)
        };
        let (note, path) = match self.ws.add_note(&code, draft) {
            Ok(added) => added,
            Err(e) => return Answer::fail(e),
        };
        let shown = path.strip_prefix(&self.ws.root).unwrap_or(&path).display().to_string();
        Answer {
            text: format!("wrote {shown} ({} citations)", note.front.citations.len()),
            data: Some(memory::to_json(&note, None)),
            error: false,
        }
    }
}
