//! Memory notes in the editor: hover on cited code shows its notes, a code lens above cited
//! definitions counts them, and the `sift.memory.*` commands list, add (for a selection),
//! verify and delete notes. The notes and their states are the workspace's
//! [`sift_engine::memory::Notebook`], checked again after every index update.

use std::sync::Arc;

use serde_json::{Value, json};
use sift_engine::memory::{self, Author, Note, State};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    CodeLens, CodeLensParams, Command as LspCommand, Hover, HoverContents, HoverParams,
    MarkupContent, MarkupKind, Position, Range, Uri,
};

use super::backend::Backend;
use super::guard::internal;
use sift_engine::live::Workspace;

/// The most notes one hover shows.
const HOVER_NOTES: usize = 5;

impl Backend {
    /// The workspace holding `uri` and the path relative to it.
    pub(super) fn locate(&self, uri: &Uri) -> Option<(Arc<Workspace>, String)> {
        super::documents::locate(&self.workspaces(), uri)
    }

    /// A note saved in the editor is read again (and checked) at once.
    pub(super) async fn memory_saved(&self, uri: &Uri) {
        let Some((ws, rel)) = self.locate(uri) else { return };
        if rel.starts_with(".sift/memory/") && rel.ends_with(".md") {
            let _ = tokio::task::spawn_blocking(move || ws.refresh_memory()).await;
        }
    }

    /// `textDocument/hover`: the notes citing the hovered line, stale ones flagged.
    pub(super) fn memory_hover(&self, params: HoverParams) -> Option<Hover> {
        let doc = params.text_document_position_params;
        let (ws, rel) = self.locate(&doc.text_document.uri)?;
        let book = ws.notebook();
        let book = book.as_ref()?;
        let line = doc.position.line as usize + 1;
        let notes = book.citing(&rel, line);
        if notes.is_empty() {
            return None;
        }
        let mut text = format!(
            "**sift memory**: {} note{} about this code\n",
            notes.len(),
            if notes.len() == 1 { "" } else { "s" }
        );
        for (note, state) in notes.iter().take(HOVER_NOTES) {
            text.push_str(&note_markdown(note, *state));
        }
        if notes.len() > HOVER_NOTES {
            text.push_str(&format!(
                "\n…and {} more (`sift memory list`)\n",
                notes.len() - HOVER_NOTES
            ));
        }
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: text,
            }),
            range: None,
        })
    }

    /// `textDocument/codeLens`: above each cited definition, how many notes cite it.
    pub(super) fn memory_lenses(&self, params: CodeLensParams) -> Vec<CodeLens> {
        let Some((ws, rel)) = self.locate(&params.text_document.uri) else { return Vec::new() };
        let book = ws.notebook();
        let Some(book) = book.as_ref() else { return Vec::new() };
        book.cited_in(&rel)
            .into_iter()
            .map(|(line, notes)| {
                let stale = notes
                    .iter()
                    .filter(|n| book.states.notes.get(&n.slug).is_some_and(|s| !s.is_fresh()))
                    .count();
                let mut title =
                    format!("{} sift note{}", notes.len(), if notes.len() == 1 { "" } else { "s" });
                if stale > 0 {
                    title.push_str(&format!(" ({stale} stale)"));
                }
                let slugs: Vec<Value> = notes.iter().map(|n| json!(n.slug)).collect();
                let at = Position { line: line.saturating_sub(1) as u32, character: 0 };
                CodeLens {
                    range: Range { start: at, end: at },
                    command: Some(LspCommand {
                        title,
                        command: "sift.memory.show".into(),
                        arguments: Some(vec![json!({ "slugs": slugs })]),
                    }),
                    data: None,
                }
            })
            .collect()
    }

    /// `sift.memory.list` (`[{root?, stale?}]`): every note with its state, per workspace.
    pub(super) fn memory_list(&self, args: &[Value]) -> Result<Value> {
        let only_stale = arg(args, "stale").and_then(Value::as_bool).unwrap_or(false);
        let mut out = Vec::new();
        for ws in self.workspaces() {
            let book = ws.notebook();
            let Some(book) = book.as_ref() else { continue };
            for note in &book.notes {
                let state = book.states.notes.get(&note.slug);
                if only_stale && state.is_none_or(State::is_fresh) {
                    continue;
                }
                out.push(note_json(&ws, note, state));
            }
        }
        Ok(json!({ "notes": out }))
    }

    /// `sift.memory.show` (`[{slugs}]`): those notes, in full.
    pub(super) fn memory_show(&self, args: &[Value]) -> Result<Value> {
        let slugs: Vec<String> = arg(args, "slugs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .or_else(|| arg(args, "slug").and_then(Value::as_str).map(|s| vec![s.to_string()]))
            .ok_or_else(|| Error::invalid_params("sift.memory.show takes [{slugs: [...]}]"))?;
        let mut out = Vec::new();
        for ws in self.workspaces() {
            let book = ws.notebook();
            let Some(book) = book.as_ref() else { continue };
            for slug in &slugs {
                if let Some((note, state)) = book.get(slug) {
                    out.push(note_json(&ws, note, state));
                }
            }
        }
        Ok(json!({ "notes": out }))
    }

    /// `sift.memory.add` (`[{uri, range?, text, title?, author?}]`): a note citing the selection
    /// (the definition it covers, else its lines; the whole file without a range); or
    /// (`[{uri, cite: [...], text, …}]`, `uri` any file of the workspace) citing those specs,
    /// as the agent proposed them. A user command: the client sends it only when the user asked
    /// for the note (or accepted the agent's proposal, `author: "agent"`).
    pub(super) async fn memory_add(&self, args: &[Value]) -> Result<Value> {
        let bad = || {
            Error::invalid_params(
                "sift.memory.add takes [{uri, range?, text, title?}] or [{uri, cite: [...], text, title?, origin?, scope?}]",
            )
        };
        let uri: Uri = arg(args, "uri")
            .and_then(Value::as_str)
            .and_then(|u| u.parse().ok())
            .ok_or_else(bad)?;
        let given: Option<Vec<String>> = match arg(args, "cite") {
            None => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(bad)?,
            ),
            Some(_) => return Err(bad()),
        };
        let text = arg(args, "text").and_then(Value::as_str).ok_or_else(bad)?.to_string();
        let title = arg(args, "title").and_then(Value::as_str).map(str::to_string);
        // A lesson from `sift.agent.discard` says where it came from and what it is about.
        let origin = arg(args, "origin").and_then(Value::as_str).map(str::to_string);
        let scope: Vec<String> = arg(args, "scope")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let author = match arg(args, "author").and_then(Value::as_str) {
            Some("agent") => Author::Agent,
            _ => Author::User,
        };
        let range: Option<Range> =
            arg(args, "range").and_then(|r| serde_json::from_value(r.clone()).ok());
        let (ws, rel) = self
            .locate(&uri)
            .ok_or_else(|| Error::invalid_params(format!("{} is in no workspace", uri.as_str())))?;
        let run = tokio::task::spawn_blocking(move || -> std::result::Result<Value, String> {
            let policy = ws.policy().ok_or("memory is not available here")?;
            let code = memory::IndexedCode::new(&ws.index, policy);
            let specs = given.unwrap_or_else(|| vec![selection_spec(&code, &rel, range)]);
            let draft = memory::Draft {
                title: title.as_deref(),
                author,
                origin,
                scope,
                ..memory::Draft::new(&text, &specs)
            };
            let (note, path) = ws.add_note(&code, draft)?;
            Ok(json!({ "slug": note.slug, "path": path, "cites": specs }))
        });
        run.await.map_err(|e| internal(e.to_string()))?.map_err(Error::invalid_params)
    }

    /// `sift.memory.delete` (`[{slug}]`) and `sift.memory.verify` (`[{slug}]`: the user
    /// confirms the note still holds; its citations are re-anchored).
    pub(super) async fn memory_change(&self, args: &[Value], delete: bool) -> Result<Value> {
        let slug = arg(args, "slug")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_params("takes [{slug}]"))?
            .to_string();
        let workspaces = self.workspaces();
        let run = tokio::task::spawn_blocking(move || -> std::result::Result<Value, String> {
            for ws in workspaces {
                let Some((policy, memory)) = ws.memory_parts() else { continue };
                if !memory.path(&slug).exists() {
                    continue;
                }
                if delete {
                    memory.remove(&slug).map_err(|e| e.to_string())?;
                } else {
                    let code = memory::IndexedCode::new(&ws.index, policy);
                    let mut note = memory.read(&slug).map_err(|e| e.to_string())?;
                    memory::reanchor(&mut note, &code).map_err(|e| e.to_string())?;
                    memory.write(&note).map_err(|e| e.to_string())?;
                }
                ws.refresh_memory();
                return Ok(json!({ "slug": slug, "deleted": delete, "verified": !delete }));
            }
            Err(format!("no note {slug:?} in any workspace"))
        });
        run.await.map_err(|e| internal(e.to_string()))?.map_err(Error::invalid_params)
    }
}

/// The citation for a selection: the one definition it lies in or covers, else its lines.
fn selection_spec(code: &memory::IndexedCode<'_>, rel: &str, range: Option<Range>) -> String {
    use memory::Code as _;
    let Some(range) = range else { return rel.to_string() };
    let (start, end) = (range.start.line as usize + 1, range.end.line as usize + 1);
    let end = if range.end.character == 0 && end > start { end - 1 } else { end };
    if let Some(text) = code.text(rel) {
        let defs = memory::cite::definitions(rel, &text);
        // The smallest definition holding the selection whose name is unique in the file.
        let holding = defs
            .iter()
            .filter(|d| d.start <= start && end <= d.end)
            .filter(|d| memory::cite::matching(&defs, &d.qualified()).len() == 1)
            .min_by_key(|d| d.end - d.start);
        if let Some(d) = holding {
            return format!("{rel}#{}", d.qualified());
        }
    }
    format!("{rel}:{}", memory::note::format_lines(start, end))
}

fn arg<'a>(args: &'a [Value], key: &str) -> Option<&'a Value> {
    args.first().and_then(|a| a.get(key))
}

fn note_json(ws: &Workspace, note: &Note, state: Option<&State>) -> Value {
    let mut value = memory::to_json(note, state);
    value["root"] = json!(ws.root);
    value["path"] = json!(ws.memory_parts().map(|(_, m)| m.path(&note.slug)));
    value
}

fn note_markdown(note: &Note, state: Option<&State>) -> String {
    let flag = match state {
        Some(s) if !s.is_fresh() => {
            format!(" — ⚠ **stale**: {}", s.stale.as_deref().unwrap_or("the cited code changed"))
        }
        _ => String::new(),
    };
    format!(
        "\n---\n**{}**{flag}\n\n{}\n\n_`{}` · {} · {}_\n",
        note.front.title,
        note.body,
        note.slug,
        note.front.author.as_str(),
        note.front.updated
    )
}
