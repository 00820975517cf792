//! The one tool registry: every tool sift offers to a model — its own agent's, or another
//! agent's through `sift mcp` — as one entry: its name, its description, its JSON schema, what
//! it does to the workspace, and the handler each front end calls. The agent loop offers
//! [`for_agent`], the MCP server lists [`for_mcp`], and both dispatch here, so a tool added
//! once is offered wherever its entry says, with one schema and one handler.

use serde_json::{Value, json};
use sift_runtime::llm::{Cancel, ToolSpec};

use super::served::{Answer, Served};
use super::{Session, ToolOutput};

/// What a call does beyond reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Only reads the workspace.
    Reads,
    /// Proposes something the user confirms: an edit of the pending change, a memory note.
    Proposes,
    /// Runs something in the sandbox (a checker, a command) on a copy of the workspace.
    Runs,
    /// Writes into `.sift/` without asking (offered only where the user allowed it).
    Writes,
}

/// A handler over the agent's [`Session`] (its walls, its pending change, its view).
pub type SessionCall = fn(&mut Session<'_>, &Value, &Cancel) -> ToolOutput;

/// How a tool answers a client that reads structure (the MCP server).
#[derive(Clone, Copy)]
pub enum DataCall {
    /// Through a session of its own (no pending change): the very answer the agent gets, and
    /// the same as data.
    Session(fn(&mut Session<'_>, &Value) -> (ToolOutput, Option<Value>)),
    /// Over the served workspace itself (review of a revision, writing a note).
    Served(fn(&Served, &Value) -> Answer),
}

/// One tool.
pub struct Tool {
    /// Its name for sift's agent.
    pub name: &'static str,
    /// Its name as the MCP server lists it (clients know some tools by a name of their own).
    pub mcp_name: &'static str,
    /// What it does, in a sentence or two (sent to the model on every turn: kept short).
    pub description: &'static str,
    /// Its arguments' JSON schema (checked before the call).
    pub schema: fn() -> Value,
    /// What it does beyond reading.
    pub effect: Effect,
    /// Its handler for sift's agent; `None`: not offered to it.
    pub agent: Option<SessionCall>,
    /// Its handler for MCP clients; `None`: not offered to them.
    pub mcp: Option<DataCall>,
}

impl Tool {
    /// Its spec for sift's agent.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: self.description.into(),
            parameters: (self.schema)(),
        }
    }
}

/// Every tool, in the order they are offered.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "search",
        mcp_name: "search",
        description: "Search the codebase by meaning and identifiers (hybrid: lexical + embeddings). \
                      Returns ranked files, each by its best span (path, lines, symbol, one line of \
                      snippet) with the file's other matching spans.",
        schema: || {
            json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1},
                "k": {"type": "integer", "minimum": 1, "maximum": 30, "description": "results (default 8)"}
            }, "required": ["query"], "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::search::search(s, args)),
        mcp: Some(DataCall::Session(|s, args| super::search::answer_shown(s, args))),
    },
    Tool {
        name: "grep",
        mcp_name: "grep",
        description: "Regular-expression search over the indexed files. Lists matching files first, then lines.",
        schema: || {
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": {"type": "string", "description": "only files under this folder or matching this glob"},
                "ignore_case": {"type": "boolean"}
            }, "required": ["pattern"], "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, cancel| super::files::grep(s, args, cancel)),
        mcp: None,
    },
    Tool {
        name: "read",
        mcp_name: "read",
        description: "Read lines of a file (100 by default, at most 400), with line numbers.",
        schema: || {
            json!({"type": "object", "properties": {
                "path": path(),
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            }, "required": ["path"], "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::files::read(s, args)),
        mcp: Some(DataCall::Session(|s, args| super::files::read_answer(s, args))),
    },
    Tool {
        name: "outline",
        mcp_name: "outline",
        description: "The symbols (classes, functions, methods) of a file with their line ranges.",
        schema: || {
            json!({"type": "object", "properties": {"path": path()},
                   "required": ["path"], "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::files::outline(s, args)),
        mcp: Some(DataCall::Session(|s, args| super::files::outline_answer(s, args))),
    },
    Tool {
        name: "list",
        mcp_name: "list",
        description: "List the files under a folder (default: the root).",
        schema: || {
            json!({"type": "object", "properties": {"path": path()},
                   "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::files::list(s, args)),
        mcp: None,
    },
    Tool {
        name: "edit",
        mcp_name: "edit",
        description: "Replace old_text, which must occur exactly once in the file, by new_text. Quote old_text exactly, with enough lines to be unique.",
        schema: || {
            json!({"type": "object", "properties": {
                "path": path(),
                "old_text": {"type": "string"},
                "new_text": {"type": "string"}
            }, "required": ["path", "old_text", "new_text"], "additionalProperties": false})
        },
        effect: Effect::Proposes,
        agent: Some(|s, args, _| super::edit::edit(s, args)),
        mcp: None,
    },
    Tool {
        name: "create",
        mcp_name: "create",
        description: "Create a new file with this text.",
        schema: || {
            json!({"type": "object", "properties": {"path": path(), "text": {"type": "string"}},
                   "required": ["path", "text"], "additionalProperties": false})
        },
        effect: Effect::Proposes,
        agent: Some(|s, args, _| super::edit::create(s, args)),
        mcp: None,
    },
    Tool {
        name: "delete",
        mcp_name: "delete",
        description: "Delete a file.",
        schema: || {
            json!({"type": "object", "properties": {"path": path()},
                   "required": ["path"], "additionalProperties": false})
        },
        effect: Effect::Proposes,
        agent: Some(|s, args, _| super::edit::delete(s, args)),
        mcp: None,
    },
    Tool {
        name: "check",
        mcp_name: "check",
        description: "Run the project's checkers (compiler, linters) on your pending change; reports problems on the lines you changed.",
        schema: no_arguments,
        effect: Effect::Runs,
        agent: Some(|s, _, cancel| super::check::check(s, cancel)),
        mcp: None,
    },
    Tool {
        name: "run",
        mcp_name: "run",
        description: "Run a shell command (tests, a script) on a copy of the workspace with your pending change, in the sandbox: no network, writes stay in the copy. outside_sandbox (with why) asks the user to let it out.",
        schema: || {
            json!({"type": "object", "properties": {
                "command": {"type": "string", "minLength": 1},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600},
                "outside_sandbox": {"type": "boolean"},
                "why": {"type": "string"}
            }, "required": ["command"], "additionalProperties": false})
        },
        effect: Effect::Runs,
        agent: Some(|s, args, cancel| super::command::run(s, args, cancel)),
        mcp: None,
    },
    Tool {
        name: "review",
        mcp_name: "review",
        description: "Run sift's bug-finder on your pending change.",
        schema: no_arguments,
        effect: Effect::Reads,
        agent: Some(|s, _, _| super::review::review(s)),
        mcp: None,
    },
    // The same use case for a client with no pending change: a revision, the index or a diff.
    Tool {
        name: "review_change",
        mcp_name: "review",
        description: "sift's bug-finder (rules + fix history) on the uncommitted changes, on the \
                      changes since a base revision, or on a unified diff. Findings on changed lines only.",
        schema: || {
            json!({"type": "object", "properties": {
                "base": {"type": "string", "description": "review what a pull request into this revision would change"},
                "diff": {"type": "string", "description": "a unified diff to review instead"},
                "staged": {"type": "boolean", "description": "only what is staged"}
            }, "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: None,
        mcp: Some(DataCall::Served(Served::review)),
    },
    Tool {
        name: "recall",
        mcp_name: "memory_search",
        description: "Search the project's memory notes: facts people confirmed about this codebase, \
                      each citing code. Stale notes cite code that changed since.",
        schema: || {
            json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "notes (default 5)"}
            }, "required": ["query"], "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::memory::recall(s, args)),
        mcp: Some(DataCall::Session(|s, args| super::memory::recall_answer(s, args))),
    },
    Tool {
        name: "remember",
        mcp_name: "remember",
        description: "Propose a memory note: one lasting fact about this codebase (a convention, an invariant, a pitfall) that would help future tasks, citing code as PATH, PATH:LINES or PATH#SYMBOL. Never notes about this task's progress. The user decides whether it is kept.",
        schema: note_arguments,
        effect: Effect::Proposes,
        agent: Some(|s, args, _| super::memory::remember(s, args)),
        mcp: None,
    },
    // An MCP client's model writes the note itself, where the user allowed it.
    Tool {
        name: "memory_add",
        mcp_name: "memory_add",
        description: "Write a memory note: one lasting fact about this codebase (a convention, an \
                      invariant, a pitfall), citing code as PATH, PATH:LINES or PATH#SYMBOL. Not for task progress.",
        schema: note_arguments,
        effect: Effect::Writes,
        agent: None,
        mcp: Some(DataCall::Served(Served::memory_add)),
    },
    Tool {
        name: "history",
        mcp_name: "history",
        description: "Recent commits of a path (or the repository), or who last changed some lines and why.",
        schema: || {
            json!({"type": "object", "properties": {
                "path": path(),
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            }, "additionalProperties": false})
        },
        effect: Effect::Reads,
        agent: Some(|s, args, _| super::history::history(s, args)),
        mcp: None,
    },
];

/// How `sift mcp` serves the table: the tools a served workspace offers, and a call dispatched
/// to its handler.
impl Served {
    /// The tools offered, in order.
    pub fn tools(&self) -> impl Iterator<Item = &'static Tool> {
        for_mcp(self.allow_writes)
    }

    /// The tool offered as `name`.
    pub fn tool(&self, name: &str) -> Option<&'static Tool> {
        self.tools().find(|t| t.mcp_name == name)
    }

    /// Runs the tool offered as `name` with `args`, checked against its schema first (a bad
    /// argument is an answer naming it, for the model to fix). Blocking.
    pub fn call(&self, name: &str, args: &Value) -> Answer {
        let Some(tool) = self.tool(name) else {
            return Answer::fail(format!("there is no tool named {name:?}"));
        };
        if let Err(why) = crate::llm::validate_arguments(&(tool.schema)(), args) {
            return Answer::fail(why);
        }
        match tool.mcp {
            Some(DataCall::Session(answer)) => self.in_session(|session| answer(session, args)),
            Some(DataCall::Served(call)) => call(self, args),
            None => Answer::fail(format!("{name:?} is not offered here")),
        }
    }
}

fn path() -> Value {
    json!({"type": "string", "description": "path relative to the workspace root"})
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn note_arguments() -> Value {
    json!({"type": "object", "properties": {
        "text": {"type": "string", "minLength": 1},
        "title": {"type": "string"},
        "cite": {"type": "array", "items": {"type": "string"}}
    }, "required": ["text"], "additionalProperties": false})
}

/// The tools offered to sift's agent, in order.
pub fn for_agent() -> impl Iterator<Item = &'static Tool> {
    TOOLS.iter().filter(|t| t.agent.is_some())
}

/// The tools an MCP client is offered: those that only read, and those that write when
/// `allow_writes` (`sift mcp --allow-memory-add`).
pub fn for_mcp(allow_writes: bool) -> impl Iterator<Item = &'static Tool> {
    TOOLS.iter().filter(move |t| t.mcp.is_some() && (allow_writes || t.effect != Effect::Writes))
}

/// The agent's tool called `name`.
pub fn agent_tool(name: &str) -> Option<&'static Tool> {
    for_agent().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_on_each_surface() {
        let mut agent: Vec<_> = for_agent().map(|t| t.name).collect();
        let mut mcp: Vec<_> = for_mcp(true).map(|t| t.mcp_name).collect();
        for names in [&mut agent, &mut mcp] {
            let count = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), count, "a name offered twice: {names:?}");
        }
        let mut all: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), TOOLS.len(), "two entries share a name");
    }

    #[test]
    fn every_schema_is_an_object_that_refuses_unknown_arguments() {
        for tool in TOOLS {
            let schema = (tool.schema)();
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            assert!(tool.agent.is_some() || tool.mcp.is_some(), "{} is offered nowhere", tool.name);
        }
    }

    #[test]
    fn mcp_offers_what_writes_only_when_allowed() {
        assert!(for_mcp(false).all(|t| t.effect == Effect::Reads));
        assert!(for_mcp(true).any(|t| t.effect == Effect::Writes));
        // Nothing that changes the pending change or runs a command reaches another agent.
        assert!(for_mcp(true).all(|t| !matches!(t.effect, Effect::Proposes | Effect::Runs)));
    }
}
