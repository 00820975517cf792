//! `/sift-memory [QUERY]`: the arguments of `sift memory search --json` (or `sift memory list
//! --json` without a query) and how its JSON lines (one note per line, the shape of the
//! language server's `sift.memory.list`, docs/lsp.md) become the slash command's Markdown: each
//! note with its freshness, its citations and its text, one fold per note, stale notes flagged
//! and listed after the fresh ones. The notes and their states are sift's; this only shows them.

use std::fmt::Write as _;

use zed_extension_api::serde_json::{self, Value};

use crate::search::Section;

/// How many notes `/sift-memory QUERY` asks for.
pub const MEMORY_LIMIT: usize = 10;

/// One citation of a note, with what sift found when it checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// `path#symbol` or `path:lines`.
    pub label: String,
    /// `fresh`, `moved`, `changed`, `lost` (none when unchecked).
    pub status: Option<String>,
    /// Where the cited code is now (shown only when it moved).
    pub now: Option<String>,
    /// Why the citation is not fresh.
    pub reason: Option<String>,
}

/// One note, with the fields the slash command shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The note's name: `.sift/memory/<slug>.md`.
    pub slug: String,
    /// Its title.
    pub title: String,
    /// `fresh`, `moved` (fresh, its code is elsewhere), `stale` or `unchecked`.
    pub state: String,
    /// Why it is stale.
    pub stale: Option<String>,
    /// `user` or `agent`.
    pub author: String,
    /// Last changed, `YYYY-MM-DD`.
    pub updated: String,
    /// What it cites.
    pub citations: Vec<Citation>,
    /// The fact, in Markdown.
    pub text: String,
}

impl Note {
    /// Whether a citation's code changed or cannot be found.
    pub fn is_stale(&self) -> bool {
        self.state == "stale"
    }
}

/// The arguments for `/sift-memory`: `memory list --json --path ROOT` without a query, else
/// `memory search --json --path ROOT -k N -- QUERY…` (the words after `--`, so a query that
/// starts with `-` is not an option). `memory list --json` and `memory search --json` must stay
/// first: the extension's `process:exec` capabilities allow only those prefixes.
pub fn memory_args(worktree_root: &str, query: &[String]) -> Vec<String> {
    let words: Vec<String> =
        query.iter().flat_map(|arg| arg.split_whitespace()).map(str::to_string).collect();
    let strings = |items: &[&str]| items.iter().map(|a| (*a).to_string()).collect::<Vec<_>>();
    if words.is_empty() {
        return strings(&["memory", "list", "--json", "--path", worktree_root]);
    }
    let mut args = strings(&["memory", "search", "--json", "--path", worktree_root, "-k"]);
    args.push(MEMORY_LIMIT.to_string());
    args.push("--".to_string());
    args.extend(words);
    args
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Parses one line of `sift memory list --json` / `search --json`; `None` for a line that is
/// not a note.
pub fn parse_note(line: &str) -> Option<Note> {
    let value: Value = serde_json::from_str(line).ok()?;
    let citations = value
        .get("citations")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| {
                    Some(Citation {
                        label: text(c, "label")?,
                        status: text(c, "status"),
                        now: text(c, "now"),
                        reason: text(c, "reason"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Note {
        slug: text(&value, "slug")?,
        title: text(&value, "title")?,
        state: text(&value, "state").unwrap_or_else(|| "unchecked".to_string()),
        stale: text(&value, "stale"),
        author: text(&value, "author").unwrap_or_default(),
        updated: text(&value, "updated").unwrap_or_default(),
        citations,
        text: text(&value, "text").unwrap_or_default(),
    })
}

/// Parses the whole standard output; errors when there are lines but none is a note.
pub fn parse_notes(stdout: &str) -> Result<Vec<Note>, String> {
    let lines: Vec<&str> = stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let notes: Vec<Note> = lines.iter().filter_map(|line| parse_note(line)).collect();
    if notes.is_empty() && !lines.is_empty() {
        let first: String = lines[0].chars().take(200).collect();
        return Err(format!("cannot read the output of `sift memory --json`: {first}"));
    }
    Ok(notes)
}

/// The fold's label: the title and the state (`stale` flagged).
pub fn label(note: &Note) -> String {
    if note.is_stale() {
        format!("⚠ stale: {}", note.title)
    } else {
        format!("{} ({})", note.title, note.state)
    }
}

/// What the slash command inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Markdown text.
    pub text: String,
    /// One section per note (or one for the "no notes" message).
    pub sections: Vec<Section>,
}

/// Formats the notes: a heading line, then each note (fresh ones first, in sift's order; stale
/// ones after, flagged with the reason) with its citations, text, name, author and date.
pub fn format_output(query: &str, notes: &[Note]) -> Output {
    let about = if query.is_empty() { String::new() } else { format!(" about `{query}`") };
    if notes.is_empty() {
        let text = if query.is_empty() {
            "sift has no memory notes in this project yet (`sift memory add --cite PATH#SYMBOL TEXT` writes one).\n".to_string()
        } else {
            format!("sift has no memory notes{about}.\n")
        };
        let sections = vec![Section { range: 0..text.len(), label: format!("sift memory{about}") }];
        return Output { text, sections };
    }
    let mut ordered: Vec<&Note> = notes.iter().filter(|n| !n.is_stale()).collect();
    ordered.extend(notes.iter().filter(|n| n.is_stale()));
    let stale = notes.iter().filter(|n| n.is_stale()).count();
    let plural = if notes.len() == 1 { "" } else { "s" };
    let mut text =
        format!("sift memory notes{about} ({} note{plural}, {stale} stale):\n\n", notes.len());
    let mut sections = Vec::with_capacity(ordered.len());
    for note in ordered {
        let start = text.len();
        let state = if note.is_stale() {
            format!("⚠ **stale**: {}", note.stale.as_deref().unwrap_or("the cited code changed"))
        } else {
            note.state.clone()
        };
        let _ = writeln!(text, "**{}** — {state}\n", note.title);
        for c in &note.citations {
            let status = c.status.as_deref().unwrap_or("unchecked");
            // sift reports where every citation is now; it is news only when the code moved.
            let now = c
                .now
                .as_deref()
                .filter(|_| status == "moved")
                .map(|n| format!(", now at {n}"))
                .unwrap_or_default();
            let why = c.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            let _ = writeln!(text, "- cites `{}` ({status}{now}{why})", c.label);
        }
        if !note.citations.is_empty() {
            text.push('\n');
        }
        let _ = writeln!(text, "{}\n", note.text.trim());
        let _ = writeln!(
            text,
            "_`.sift/memory/{}.md` · {} · {}_",
            note.slug, note.author, note.updated
        );
        sections.push(Section { range: start..text.len(), label: label(note) });
        text.push('\n');
    }
    Output { text, sections }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two lines of `sift memory list --json` (`to_json` of the engine): a fresh note and a
    /// stale one.
    const FRESH: &str = r#"{"slug":"totals-round-once","title":"Totals are rounded once","state":"fresh","stale":null,"scope":[],"author":"user","origin":null,"created":"2026-12-02","updated":"2026-12-02","citations":[{"label":"billing/invoice.py#compute_invoice_total","path":"billing/invoice.py","lines":"13-16","symbol":"compute_invoice_total","hash":"b3:5d0e8f1c2a4b6d70","status":"fresh","now":null,"reason":null}],"text":"Totals are rounded once, at the end."}"#;
    const STALE: &str = r#"{"slug":"discounts-are-capped","title":"Discounts are capped at 100 percent","state":"stale","stale":"billing/discounts.py#apply_discount: the cited code changed","scope":[],"author":"agent","origin":"task: x","created":"2026-12-01","updated":"2026-12-01","citations":[{"label":"billing/discounts.py#apply_discount","path":"billing/discounts.py","lines":"4-7","symbol":"apply_discount","hash":"b3:0000000000000000","status":"changed","now":null,"reason":"the cited code changed"}],"text":"A discount above 100 percent is refused."}"#;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn args_list_without_a_query_search_with_one() {
        assert_eq!(
            memory_args("/repo", &[]),
            strings(&["memory", "list", "--json", "--path", "/repo"])
        );
        assert_eq!(
            memory_args("/repo", &strings(&["  "]))[..3],
            strings(&["memory", "list", "--json"])
        );
        let args = memory_args("/repo", &strings(&["rounding totals", "-x"]));
        assert_eq!(
            args,
            strings(&[
                "memory", "search", "--json", "--path", "/repo", "-k", "10", "--", "rounding",
                "totals", "-x"
            ])
        );
    }

    #[test]
    fn parses_the_cli_json_lines() {
        let notes = parse_notes(&format!("{FRESH}\n\n{STALE}\n")).unwrap();
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].slug, "totals-round-once");
        assert!(!notes[0].is_stale());
        assert!(notes[1].is_stale());
        assert_eq!(
            notes[1].stale.as_deref(),
            Some("billing/discounts.py#apply_discount: the cited code changed")
        );
        assert_eq!(notes[1].citations[0].status.as_deref(), Some("changed"));
        assert_eq!(notes[0].citations[0].now, None);
        assert!(parse_notes("").unwrap().is_empty());
        assert!(parse_notes("error: not a folder\n").unwrap_err().contains("not a folder"));
    }

    #[test]
    fn stale_notes_come_last_flagged_with_the_reason() {
        let notes = parse_notes(&format!("{STALE}\n{FRESH}\n")).unwrap();
        let out = format_output("", &notes);
        assert!(out.text.starts_with("sift memory notes (2 notes, 1 stale):\n\n"), "{}", out.text);
        assert_eq!(
            out.sections.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(),
            ["Totals are rounded once (fresh)", "⚠ stale: Discounts are capped at 100 percent"]
        );
        let fresh = &out.text[out.sections[0].range.clone()];
        assert!(fresh.starts_with("**Totals are rounded once** — fresh\n"), "{fresh}");
        assert!(fresh.contains("- cites `billing/invoice.py#compute_invoice_total` (fresh)\n"));
        // sift says where a fresh citation is too; only a moved one's place is shown.
        let located = FRESH.replace(r#""now":null"#, r#""now":"billing/invoice.py:13-16""#);
        let out2 = format_output("", &parse_notes(&located).unwrap());
        assert!(out2.text.contains("(fresh)\n"), "{}", out2.text);
        assert!(fresh.contains("Totals are rounded once, at the end.\n"));
        assert!(fresh.contains("_`.sift/memory/totals-round-once.md` · user · 2026-12-02_"));
        let stale = &out.text[out.sections[1].range.clone()];
        assert!(
            stale.starts_with(
                "**Discounts are capped at 100 percent** — ⚠ **stale**: billing/discounts.py#apply_discount: the cited code changed\n"
            ),
            "{stale}"
        );
        assert!(stale.contains("(changed: the cited code changed)"));
        for s in &out.sections {
            assert!(
                out.text.is_char_boundary(s.range.start) && out.text.is_char_boundary(s.range.end)
            );
        }
        assert!(out.sections[0].range.end <= out.sections[1].range.start);
    }

    #[test]
    fn a_moved_citation_says_where_its_code_is() {
        let line = FRESH.replace(r#""state":"fresh""#, r#""state":"moved""#).replace(
            r#""status":"fresh","now":null"#,
            r#""status":"moved","now":"billing/invoice.py:20-23""#,
        );
        let out = format_output("totals", &parse_notes(&line).unwrap());
        assert!(out.text.starts_with("sift memory notes about `totals` (1 note, 0 stale):"));
        assert!(out.text.contains("**Totals are rounded once** — moved\n"));
        assert!(out.text.contains("(moved, now at billing/invoice.py:20-23)"), "{}", out.text);
    }

    #[test]
    fn no_notes_is_a_message_not_an_error() {
        let out = format_output("", &[]);
        assert!(out.text.starts_with("sift has no memory notes in this project yet"));
        assert_eq!(out.sections[0].range, 0..out.text.len());
        let out = format_output("cache", &[]);
        assert_eq!(out.text, "sift has no memory notes about `cache`.\n");
        assert_eq!(out.sections[0].label, "sift memory about `cache`");
    }
}
