//! `edit`, `create` and `delete`: changes to the agent's pending edits, never to disk.
//!
//! After every change the file is parsed again with its tree-sitter grammar and a syntax error
//! the change introduced is reported at once, with its line, so the model fixes it in the next
//! step rather than at the end.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use sift_indexer::Language;

use super::{Session, ToolOutput, str_arg};
use crate::agent::matcher;

/// `edit {path, old_text, new_text}`.
pub fn edit(s: &mut Session<'_>, args: &Value) -> ToolOutput {
    let given = str_arg(args, "path").unwrap_or_default();
    let (old, new) =
        (str_arg(args, "old_text").unwrap_or_default(), str_arg(args, "new_text").unwrap_or(""));
    let rel = match s.writable(given) {
        Ok(rel) => rel,
        Err(e) => return e,
    };
    let text = match s.text(&rel) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return ToolOutput::fail(format!("{rel} does not exist: use create to make it"));
        }
        Err(e) => return e,
    };
    if old == new {
        return ToolOutput::fail("old_text and new_text are the same: nothing to change");
    }
    let located = match matcher::locate(&text, old, new) {
        Ok(l) => l,
        Err(e) => return ToolOutput::fail(format!("{rel}: {e}")),
    };
    let result = matcher::apply(&text, &located);
    let original = match s.original(&rel) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let old_count = text[located.start..located.end].lines().count().max(1);
    let new_count = located.replacement.lines().count();
    let mut out = format!(
        "edited {rel}: replaced {old_count} line{} at line {} with {new_count} line{}",
        plural(old_count),
        located.line,
        plural(new_count)
    );
    if let Some(note) = located.kind.note() {
        let _ = write!(out, " ({note})");
    }
    out.push('\n');
    out.push_str(&syntax_note(&rel, &text, &result));
    out.push_str(&around(&result, located.line, new_count));
    s.set_text(&rel, original, Some(result));
    ToolOutput::ok(out)
}

/// `create {path, text}`.
pub fn create(s: &mut Session<'_>, args: &Value) -> ToolOutput {
    let given = str_arg(args, "path").unwrap_or_default();
    let text = str_arg(args, "text").unwrap_or_default();
    let rel = match s.writable(given) {
        Ok(rel) if rel.is_empty() => return ToolOutput::fail("path names the workspace root"),
        Ok(rel) => rel,
        Err(e) => return e,
    };
    match s.text(&rel) {
        Ok(None) => {}
        Ok(Some(_)) => {
            return ToolOutput::fail(format!(
                "{rel} already exists: use edit to change it (or delete it first)"
            ));
        }
        Err(e) => return e,
    }
    if s.root.join(&rel).is_dir() {
        return ToolOutput::fail(format!("{rel} is a folder"));
    }
    let original = match s.original(&rel) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let mut out = format!("created {rel} ({} lines)\n", text.lines().count());
    out.push_str(&syntax_note(&rel, "", text));
    s.set_text(&rel, original, Some(text.to_owned()));
    ToolOutput::ok(out)
}

/// `delete {path}`.
pub fn delete(s: &mut Session<'_>, args: &Value) -> ToolOutput {
    let given = str_arg(args, "path").unwrap_or_default();
    let rel = match s.writable(given) {
        Ok(rel) => rel,
        Err(e) => return e,
    };
    match s.text(&rel) {
        Ok(Some(_)) => {}
        Ok(None) => return ToolOutput::fail(format!("{rel} does not exist")),
        Err(e) => return e,
    }
    let original = match s.original(&rel) {
        Ok(o) => o,
        Err(e) => return e,
    };
    s.set_text(&rel, original, None);
    ToolOutput::ok(format!("deleted {rel}"))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A line about a syntax error the change introduced (empty when there is none, or the file
/// had errors before, or there is no grammar for it).
fn syntax_note(rel: &str, before: &str, after: &str) -> String {
    let Some(language) = Language::from_path(Path::new(rel)) else { return String::new() };
    let first_error = |text: &str| -> Option<usize> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&language.grammar()).ok()?;
        let tree = parser.parse(text, None)?;
        let root = tree.root_node();
        if !root.has_error() {
            return None;
        }
        Some(first_error_row(root) + 1)
    };
    if first_error(before).is_some() && !before.is_empty() {
        return String::new();
    }
    match first_error(after) {
        Some(line) => format!(
            "warning: {rel} no longer parses as {}: syntax error at line {line}. Fix it before going on.\n",
            language.name()
        ),
        None => String::new(),
    }
}

/// The row of the first error or missing node, depth first.
fn first_error_row(node: tree_sitter::Node<'_>) -> usize {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.is_error() || child.is_missing() {
            return child.start_position().row;
        }
        if child.has_error() {
            return first_error_row(child);
        }
    }
    node.start_position().row
}

/// The edited lines with two lines of context, numbered, so the model sees the result.
fn around(text: &str, line: usize, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let first = line.saturating_sub(3).min(lines.len() - 1);
    let last = (line + count + 1).min(lines.len()).min(first + 30);
    let mut out = String::from("now:\n");
    for (i, l) in lines[first..last].iter().enumerate() {
        let _ = writeln!(out, "{:>5}  {l}", first + i + 1);
    }
    out
}
