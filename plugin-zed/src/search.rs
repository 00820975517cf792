//! Turns the output of `sift search --json` (one JSON object per line, see the README's
//! "search --json") into the text and sections of the `/sift-search` slash command.

use std::{fmt::Write as _, ops::Range};

use zed_extension_api::serde_json::{self, Value};

/// One search result, with the fields the slash command shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// The line that matched best, 1-based.
    pub match_line: u64,
    /// The defined name when the chunk is a definition.
    pub symbol: Option<String>,
    /// `function`, `method`, `struct`, `lines`, ...
    pub kind: Option<String>,
    /// The enclosing symbol (a method's class, impl or trait).
    pub container: Option<String>,
    /// `rust`, `python`, ... or a text label such as `markdown`.
    pub language: Option<String>,
    /// Up to three lines around the matching line.
    pub snippet: String,
}

/// A part of the output that Zed folds into a labelled crease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Byte range in [`Output::text`].
    pub range: Range<usize>,
    /// The crease's label.
    pub label: String,
}

/// What the slash command inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Markdown text.
    pub text: String,
    /// One section per result (or one for the "no results" message).
    pub sections: Vec<Section>,
}

/// Parses one line of `sift search --json`; `None` for a line that is not a result object.
pub fn parse_hit(line: &str) -> Option<Hit> {
    let value: Value = serde_json::from_str(line).ok()?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Some(Hit {
        path: text("path")?,
        match_line: value
            .get("match_line")
            .or_else(|| value.get("start_line"))
            .and_then(Value::as_u64)
            .unwrap_or(1),
        symbol: text("symbol"),
        kind: text("kind"),
        container: text("container"),
        language: text("language"),
        snippet: text("snippet").unwrap_or_default(),
    })
}

/// Parses the whole standard output. Blank lines are skipped; errors when there are lines but
/// none of them is a result (the output is not what this extension understands).
pub fn parse_hits(stdout: &str) -> Result<Vec<Hit>, String> {
    let lines: Vec<&str> = stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let hits: Vec<Hit> = lines.iter().filter_map(|line| parse_hit(line)).collect();
    if hits.is_empty() && !lines.is_empty() {
        let first: String = lines[0].chars().take(200).collect();
        return Err(format!("cannot read the output of `sift search --json`: {first}"));
    }
    Ok(hits)
}

/// The label of a result: `path:line symbol`.
pub fn label(hit: &Hit) -> String {
    let mut label = format!("{}:{}", hit.path, hit.match_line);
    match (&hit.container, &hit.symbol) {
        (Some(container), Some(symbol)) => {
            label.push(' ');
            label.push_str(container);
            label.push_str("::");
            label.push_str(symbol);
        }
        (None, Some(symbol)) => {
            label.push(' ');
            label.push_str(symbol);
        }
        _ => {}
    }
    label
}

/// Formats the results as Markdown, one section per result.
pub fn format_output(query: &str, hits: &[Hit]) -> Output {
    if hits.is_empty() {
        let text = format!("sift found nothing for `{query}`.\n");
        let sections = vec![Section { range: 0..text.len(), label: format!("sift: {query}") }];
        return Output { text, sections };
    }
    let mut sections = Vec::with_capacity(hits.len());
    let plural = if hits.len() == 1 { "" } else { "s" };
    let mut text = format!("sift results for `{query}` ({} result{plural}):\n\n", hits.len());
    for hit in hits {
        let start = text.len();
        let kind = hit.kind.as_ref().map(|kind| format!(" ({kind})")).unwrap_or_default();
        let fence = fence_for(&hit.snippet);
        let language = hit.language.as_deref().unwrap_or("");
        let snippet = hit.snippet.trim_end_matches('\n');
        // Writing to a String cannot fail.
        let _ = write!(text, "`{}`{kind}\n{fence}{language}\n{snippet}\n{fence}\n", label(hit));
        sections.push(Section { range: start..text.len(), label: label(hit) });
        text.push('\n');
    }
    Output { text, sections }
}

/// A code fence longer than any run of backticks in the snippet.
fn fence_for(snippet: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in snippet.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"path":"lsp/src/server/backend.rs","start_line":166,"end_line":172,"score":31.5,"symbol":"text_of","kind":"method","container":"Backend","language":"rust","match_line":167,"snippet":"    /// The document's text.\n    fn text_of(&self, uri: &Uri) -> String {"}"#;

    #[test]
    fn parses_the_documented_json_line() {
        let hit = parse_hit(LINE).unwrap();
        assert_eq!(hit.path, "lsp/src/server/backend.rs");
        assert_eq!(hit.match_line, 167);
        assert_eq!(hit.symbol.as_deref(), Some("text_of"));
        assert_eq!(hit.container.as_deref(), Some("Backend"));
        assert_eq!(hit.kind.as_deref(), Some("method"));
        assert_eq!(hit.language.as_deref(), Some("rust"));
        assert!(hit.snippet.contains("fn text_of"));
        assert_eq!(label(&hit), "lsp/src/server/backend.rs:167 Backend::text_of");
    }

    #[test]
    fn null_fields_and_missing_match_line() {
        let hit = parse_hit(
            r#"{"path":"README.md","start_line":4,"end_line":9,"symbol":null,"container":null,"kind":"lines","language":"markdown","snippet":"x"}"#,
        )
        .unwrap();
        assert_eq!(hit.match_line, 4);
        assert_eq!(hit.symbol, None);
        assert_eq!(label(&hit), "README.md:4");
    }

    #[test]
    fn output_has_one_section_per_result_on_char_boundaries() {
        let mut second = parse_hit(LINE).unwrap();
        second.path = "src/größe.rs".to_string();
        second.snippet = "let s = \"héllo\";\n".to_string();
        let hits = vec![parse_hit(LINE).unwrap(), second];
        let output = format_output("text of", &hits);
        assert!(output.text.starts_with("sift results for `text of` (2 results):"));
        assert_eq!(output.sections.len(), 2);
        for (section, hit) in output.sections.iter().zip(&hits) {
            assert!(output.text.is_char_boundary(section.range.start));
            assert!(output.text.is_char_boundary(section.range.end));
            let body = &output.text[section.range.clone()];
            assert!(body.starts_with(&format!("`{}`", label(hit))), "{body}");
            assert!(body.contains("```rust\n"), "{body}");
            assert!(body.ends_with("```\n"), "{body}");
        }
        assert!(output.sections[0].range.end <= output.sections[1].range.start);
    }

    #[test]
    fn no_results_is_a_message_not_an_error() {
        let output = format_output("nothing", &parse_hits("\n").unwrap());
        assert_eq!(output.text, "sift found nothing for `nothing`.\n");
        assert_eq!(output.sections.len(), 1);
        assert_eq!(output.sections[0].range, 0..output.text.len());
    }

    #[test]
    fn unreadable_output_is_an_error() {
        let err = parse_hits("error: something else\n").unwrap_err();
        assert!(err.contains("something else"), "{err}");
        // Stray lines among results are skipped.
        assert_eq!(parse_hits(&format!("junk\n{LINE}\n")).unwrap().len(), 1);
    }

    #[test]
    fn fences_outgrow_backticks_in_the_snippet() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("/// ```rust"), "````");
        let mut hit = parse_hit(LINE).unwrap();
        hit.snippet = "/// ```\n/// x\n/// ```".to_string();
        let output = format_output("q", &[hit]);
        assert!(output.text.contains("````rust\n/// ```\n"), "{}", output.text);
    }
}
