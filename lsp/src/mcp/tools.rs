//! The MCP server's tools: their names, short descriptions and JSON schemas, and how each call
//! reaches the engine. `search`, `outline`, `read` and `memory_search` are the agent's own tools
//! (the engine's [`Session::answer`]: the same walls, the same bounded text, plus the answer as
//! data); `review` is the review use case; `memory_add` writes a note through the engine's
//! memory. Nothing here searches, ranks or reads files by itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use sift_engine::agent::tools::{Session, SessionMemory, ToolOutput};
use sift_engine::memory::{self, Author, find::NoteVectors};
use sift_engine::review::{self, Change, Request};
use sift_engine::rules::report;

use crate::live::Workspace;

/// One tool as offered to clients.
pub struct Spec {
    /// Its name.
    pub name: &'static str,
    /// What it does, in a sentence or two (every description is sent to the client's model on
    /// every turn: kept short).
    pub description: &'static str,
    /// Its arguments' JSON schema (checked before the call).
    pub schema: Value,
    /// Whether it only reads.
    pub read_only: bool,
}

/// The most findings a `review` answer carries.
const MAX_FINDINGS: usize = 30;

/// The tools offered; `memory_add` only when the user allowed it (`--allow-memory-add`).
pub fn specs(allow_memory_add: bool) -> Vec<Spec> {
    let path = json!({"type": "string", "description": "path relative to the workspace root"});
    let mut specs = vec![
        Spec {
            name: "search",
            description: "Search the codebase by meaning and identifiers (hybrid: lexical + embeddings). \
                          Returns ranked code spans: path, lines, symbol, one line of snippet.",
            schema: json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1},
                "k": {"type": "integer", "minimum": 1, "maximum": 30, "description": "results (default 8)"}
            }, "required": ["query"], "additionalProperties": false}),
            read_only: true,
        },
        Spec {
            name: "outline",
            description: "The symbols (classes, functions, methods) of a file with their line ranges.",
            schema: json!({"type": "object", "properties": {"path": path},
                           "required": ["path"], "additionalProperties": false}),
            read_only: true,
        },
        Spec {
            name: "read",
            description: "Read lines of a file (100 by default, at most 400), with line numbers.",
            schema: json!({"type": "object", "properties": {
                "path": path,
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            }, "required": ["path"], "additionalProperties": false}),
            read_only: true,
        },
        Spec {
            name: "review",
            description: "sift's bug-finder (rules + fix history) on the uncommitted changes, on the \
                          changes since a base revision, or on a unified diff. Findings on changed lines only.",
            schema: json!({"type": "object", "properties": {
                "base": {"type": "string", "description": "review what a pull request into this revision would change"},
                "diff": {"type": "string", "description": "a unified diff to review instead"},
                "staged": {"type": "boolean", "description": "only what is staged"}
            }, "additionalProperties": false}),
            read_only: true,
        },
        Spec {
            name: "memory_search",
            description: "Search the project's memory notes: facts people confirmed about this codebase, \
                          each citing code. Stale notes cite code that changed since.",
            schema: json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1},
                "k": {"type": "integer", "minimum": 1, "maximum": 20}
            }, "required": ["query"], "additionalProperties": false}),
            read_only: true,
        },
    ];
    if allow_memory_add {
        specs.push(Spec {
            name: "memory_add",
            description: "Write a memory note: one lasting fact about this codebase (a convention, an \
                          invariant, a pitfall), citing code as PATH, PATH:LINES or PATH#SYMBOL. Not for task progress.",
            schema: json!({"type": "object", "properties": {
                "text": {"type": "string", "minLength": 1},
                "title": {"type": "string"},
                "cite": {"type": "array", "items": {"type": "string"}}
            }, "required": ["text"], "additionalProperties": false}),
            read_only: false,
        });
    }
    specs
}

/// What a call answered: text for the client's model, the same as data, and whether it failed.
pub struct Answer {
    /// Compact text.
    pub text: String,
    /// The answer as data (`structuredContent`).
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
    fn fail(text: impl Into<String>) -> Answer {
        Answer { text: format!("error: {}", text.into()), data: None, error: true }
    }
}

/// What the tools share across calls.
pub struct Tools {
    /// The workspace served.
    pub ws: Arc<Workspace>,
    /// The notes' embeddings, kept across calls.
    pub note_vectors: NoteVectors,
    /// Whether `memory_add` is offered.
    pub allow_memory_add: bool,
}

/// No unsaved buffers: an MCP client's edits are on disk.
static NO_BUFFERS: BTreeMap<String, String> = BTreeMap::new();

impl Tools {
    /// Runs tool `name` with `args` (already checked against its schema). Blocking.
    pub fn call(&self, name: &str, args: &Value) -> Answer {
        match name {
            "search" | "outline" | "read" | "memory_search" => self.read_only(name, args),
            "review" => self.review(args),
            "memory_add" if self.allow_memory_add => self.memory_add(args),
            other => Answer::fail(format!("there is no tool named {other:?}")),
        }
    }

    /// The agent's read-only tools, through a session of their own (the workspace's walls, no
    /// pending change, the notes as last checked).
    fn read_only(&self, name: &str, args: &Value) -> Answer {
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
        let engine_name = if name == "memory_search" { "recall" } else { name };
        session.answer(engine_name, args).into()
    }

    /// `review {base?, diff?, staged?}`: the review use case on the repository holding the
    /// workspace.
    fn review(&self, args: &Value) -> Answer {
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
    fn memory_add(&self, args: &Value) -> Answer {
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
