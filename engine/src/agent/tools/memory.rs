//! `recall` and `remember`: the project's memory notes for the agent. `recall` searches them
//! (the engine's note retrieval: fresh notes first, stale ones flagged); `remember` *proposes*
//! a note, with citations resolved against the code as it is now: it is written only when the
//! user accepts it (the CLI asks, the editor shows it for confirmation).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Session, ToolOutput, str_arg};
use crate::memory::{self, Author, find};

/// `recall {query}`: the notes about `query`, with their citations and state.
pub fn recall(s: &Session<'_>, args: &Value) -> ToolOutput {
    recall_answer(s, args).0
}

/// [`recall`]'s answer, and the same as data: `{notes: [...]}`, each note as
/// [`memory::to_json`] shows it (with its state), fresh ones first.
pub fn recall_answer(s: &Session<'_>, args: &Value) -> (ToolOutput, Option<Value>) {
    let Some(query) = str_arg(args, "query").filter(|q| !q.trim().is_empty()) else {
        return (ToolOutput::fail("recall needs a query"), None);
    };
    let k = super::usize_arg(args, "k").unwrap_or(5).clamp(1, 20);
    let Some(mem) = &s.memory else {
        let none = json!({"notes": []});
        return (ToolOutput::ok("no memory notes in this workspace"), Some(none));
    };
    let ask = find::Ask { text: query, paths: &[], k, fresh_only: false };
    let answers =
        find::find(&mem.book.notes, &mem.book.states, &ask, Some((s.semantic(), mem.vectors)));
    let data = json!({
        "notes": answers.iter().map(|a| memory::to_json(a.note, a.state)).collect::<Vec<_>>(),
    });
    if answers.is_empty() {
        return (ToolOutput::ok(format!("no notes about {query:?}")), Some(data));
    }
    let mut out = format!("{} note(s); stale ones cite code that changed since:\n", answers.len());
    out.push_str(&find::for_prompt(&answers, super::MAX_OUTPUT_CHARS - 200));
    (ToolOutput::ok(out), Some(data))
}

/// `remember {text, title?, cite?}`: proposes a note (see the module documentation).
pub fn remember(s: &mut Session<'_>, args: &Value) -> ToolOutput {
    let Some(text) = str_arg(args, "text").filter(|t| !t.trim().is_empty()) else {
        return ToolOutput::fail("remember needs the fact as text");
    };
    let Some(mem) = &s.memory else {
        return ToolOutput::fail("memory notes are not available in this workspace");
    };
    let cites: Vec<String> = match args.get("cite") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(spec) => out.push(spec.to_string()),
                    None => return ToolOutput::fail("cite is a list of strings"),
                }
            }
            out
        }
        Some(_) => return ToolOutput::fail("cite is a list of strings"),
    };
    if s.proposed.len() >= 5 {
        return ToolOutput::fail("five notes proposed already: keep only the most useful");
    }
    let code = memory::IndexedCode::new(&s.view.index, s.policy);
    let draft = memory::Draft {
        title: str_arg(args, "title"),
        author: Author::Agent,
        origin: Some(format!("task: {}", s.task_summary())),
        ..memory::Draft::new(text, &cites)
    };
    let note = match memory::new_note(&mem.book.memory, &code, draft) {
        Ok(note) => note,
        Err(e) => return ToolOutput::fail(e.to_string()),
    };
    let mut out =
        format!("proposed note {:?}: the user decides whether it is written\n", note.front.title);
    for c in &note.front.citations {
        let _ =
            writeln!(out, "  cites {} (lines {})", c.label(), c.lines.as_deref().unwrap_or("?"));
    }
    s.proposed.push(note);
    ToolOutput::ok(out)
}
