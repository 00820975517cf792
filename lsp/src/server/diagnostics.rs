//! Findings in the editor: the plumbing the bug-finder feeds. A producer hands in [`Finding`]s
//! for a file (positions in lines and UTF-8 byte columns, as the core crates count); this module
//! converts them to the client's position encoding, publishes them as diagnostics with source
//! `sift` and a stable code (the rule id), and answers code actions: apply the suggested fix (an
//! annotated `WorkspaceEdit` that asks the user to confirm), dismiss the finding, silence the
//! rule for the file. Requests about a document that changed since its findings were published
//! answer `ContentModified`.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::*;

use super::position::{Encoding, LineIndex};

/// A place in a file: 0-based lines, UTF-8 byte columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// First line.
    pub start_line: u32,
    /// Byte column in the first line.
    pub start_col: u32,
    /// Last line.
    pub end_line: u32,
    /// Byte column in the last line (exclusive).
    pub end_col: u32,
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A bug.
    Error,
    /// Probably a bug.
    Warning,
    /// Worth knowing.
    Info,
    /// A hint.
    Hint,
}

/// Another place that explains a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    /// The file (absolute path).
    pub path: std::path::PathBuf,
    /// Where in it.
    pub span: Span,
    /// What it shows.
    pub message: String,
}

/// A suggested replacement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// What the fix does, for the user.
    pub title: String,
    /// The text to replace.
    pub span: Span,
    /// The new text.
    pub replacement: String,
}

/// One finding of the bug-finder or the reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identity of this finding (rule, file and the code it points at).
    pub id: String,
    /// The rule that fired; published as the diagnostic's code.
    pub rule: String,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
    /// Other places that explain it.
    #[serde(default)]
    pub related: Vec<Related>,
    /// A suggested fix.
    #[serde(default)]
    pub fix: Option<Fix>,
}

/// The source name on every diagnostic sift publishes.
pub const SOURCE: &str = "sift";
const ANNOTATION: &str = "sift-fix";

/// Findings per document, with what the user dismissed or silenced.
#[derive(Default)]
pub struct Findings {
    by_uri: HashMap<Uri, (Option<i32>, Vec<Finding>)>,
    dismissed: HashSet<String>,
    silenced: HashSet<(Uri, String)>,
}

impl Findings {
    /// Replaces the findings of `uri` (published for document `version`); returns what to show.
    pub fn set(&mut self, uri: Uri, version: Option<i32>, findings: Vec<Finding>) -> Vec<Finding> {
        self.by_uri.insert(uri.clone(), (version, findings));
        self.visible(&uri)
    }

    /// The findings of `uri` that are neither dismissed nor silenced.
    pub fn visible(&self, uri: &Uri) -> Vec<Finding> {
        let Some((_, findings)) = self.by_uri.get(uri) else { return Vec::new() };
        findings
            .iter()
            .filter(|f| !self.dismissed.contains(&f.id))
            .filter(|f| !self.silenced.contains(&(uri.clone(), f.rule.clone())))
            .cloned()
            .collect()
    }

    /// Whether `uri` has findings (visible or not).
    pub fn has(&self, uri: &Uri) -> bool {
        self.by_uri.get(uri).is_some_and(|(_, f)| !f.is_empty())
    }

    /// The document version the findings of `uri` were computed for.
    pub fn version(&self, uri: &Uri) -> Option<i32> {
        self.by_uri.get(uri).and_then(|(v, _)| *v)
    }

    /// A finding by id.
    pub fn get(&self, uri: &Uri, id: &str) -> Option<&Finding> {
        self.by_uri.get(uri)?.1.iter().find(|f| f.id == id)
    }

    /// Remembers that the user dismissed finding `id`.
    pub fn dismiss(&mut self, id: &str) {
        self.dismissed.insert(id.to_string());
    }

    /// Remembers that the user silenced `rule` in `uri`.
    pub fn silence(&mut self, uri: &Uri, rule: &str) {
        self.silenced.insert((uri.clone(), rule.to_string()));
    }
}

fn range(index: &LineIndex, text: &str, span: Span, enc: Encoding) -> Range {
    let offset = |line: u32, col: u32| {
        index.offset(text, Position::new(line, 0), Encoding::Utf8) + col as usize
    };
    let start = index.position(text, offset(span.start_line, span.start_col), enc);
    let end = index.position(text, offset(span.end_line, span.end_col), enc);
    Range::new(start, end)
}

/// Converts findings to diagnostics in `enc`, given the document's `text`.
pub fn to_diagnostics(findings: &[Finding], text: &str, enc: Encoding) -> Vec<Diagnostic> {
    let index = LineIndex::new(text);
    findings
        .iter()
        .map(|f| Diagnostic {
            range: range(&index, text, f.span, enc),
            severity: Some(match f.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
                Severity::Info => DiagnosticSeverity::INFORMATION,
                Severity::Hint => DiagnosticSeverity::HINT,
            }),
            code: Some(NumberOrString::String(f.rule.clone())),
            source: Some(SOURCE.into()),
            message: f.message.clone(),
            related_information: related(f, enc),
            data: Some(serde_json::json!({ "id": f.id })),
            ..Default::default()
        })
        .collect()
}

fn related(f: &Finding, enc: Encoding) -> Option<Vec<DiagnosticRelatedInformation>> {
    if f.related.is_empty() {
        return None;
    }
    Some(
        f.related
            .iter()
            .filter_map(|r| {
                let uri = Uri::from_file_path(&r.path)?;
                let text = std::fs::read_to_string(&r.path).unwrap_or_default();
                let index = LineIndex::new(&text);
                Some(DiagnosticRelatedInformation {
                    location: Location::new(uri, range(&index, &text, r.span, enc)),
                    message: r.message.clone(),
                })
            })
            .collect(),
    )
}

/// The annotated edit that applies `fix` to `uri` (at document `version`), asking the user to
/// confirm.
pub fn fix_edit(
    uri: &Uri,
    version: Option<i32>,
    fix: &Fix,
    text: &str,
    enc: Encoding,
) -> WorkspaceEdit {
    let index = LineIndex::new(text);
    let edit = AnnotatedTextEdit {
        text_edit: TextEdit::new(range(&index, text, fix.span, enc), fix.replacement.clone()),
        annotation_id: ANNOTATION.into(),
    };
    WorkspaceEdit {
        changes: None,
        document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version },
            edits: vec![OneOf::Right(edit)],
        }])),
        change_annotations: Some(HashMap::from([(
            ANNOTATION.to_string(),
            ChangeAnnotation {
                label: fix.title.clone(),
                needs_confirmation: Some(true),
                description: Some("a fix suggested by sift".into()),
            },
        )])),
    }
}

/// The code actions for the sift diagnostics in `diagnostics`.
pub fn code_actions(
    findings: &Findings,
    uri: &Uri,
    diagnostics: &[Diagnostic],
    text: &str,
    enc: Encoding,
) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    for diagnostic in diagnostics.iter().filter(|d| d.source.as_deref() == Some(SOURCE)) {
        let Some(id) = diagnostic.data.as_ref().and_then(|d| d.get("id")).and_then(|v| v.as_str())
        else {
            continue;
        };
        let Some(finding) = findings.get(uri, id) else { continue };
        if let Some(fix) = &finding.fix {
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(fix_edit(uri, findings.version(uri), fix, text, enc)),
                is_preferred: Some(true),
                ..Default::default()
            }));
        }
        let args =
            |second: &str| Some(vec![serde_json::json!(uri.as_str()), serde_json::json!(second)]);
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: "Dismiss this sift finding".into(),
            kind: Some(CodeActionKind::QUICKFIX),
            diagnostics: Some(vec![diagnostic.clone()]),
            command: Some(Command::new(
                "Dismiss this sift finding".into(),
                super::protocol::Command::Dismiss.name().into(),
                args(id),
            )),
            ..Default::default()
        }));
        let title = format!("Silence sift rule {} in this file", finding.rule);
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: title.clone(),
            kind: Some(CodeActionKind::QUICKFIX),
            diagnostics: Some(vec![diagnostic.clone()]),
            command: Some(Command::new(
                title,
                super::protocol::Command::Silence.name().into(),
                args(&finding.rule),
            )),
            ..Default::default()
        }));
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(id: &str, rule: &str, line: u32) -> Finding {
        Finding {
            id: id.into(),
            rule: rule.into(),
            severity: Severity::Warning,
            message: format!("{rule} fired"),
            span: Span { start_line: line, start_col: 4, end_line: line, end_col: 9 },
            related: Vec::new(),
            fix: Some(Fix {
                title: "use is None".into(),
                span: Span { start_line: line, start_col: 4, end_line: line, end_col: 9 },
                replacement: "x is None".into(),
            }),
        }
    }

    #[test]
    fn byte_columns_become_utf16_columns() {
        let text = "é = 1\nif x == None:\n";
        let mut f = finding("a", "none-eq", 0);
        f.span = Span { start_line: 0, start_col: 0, end_line: 0, end_col: 2 };
        let d = &to_diagnostics(&[f], text, Encoding::Utf16)[0];
        assert_eq!(d.range, Range::new(Position::new(0, 0), Position::new(0, 1)));
        assert_eq!(d.source.as_deref(), Some("sift"));
        assert_eq!(d.code, Some(NumberOrString::String("none-eq".into())));
    }

    #[test]
    fn dismissed_and_silenced_findings_are_hidden() {
        let uri: Uri = "file:///r/a.py".parse().unwrap();
        let mut all = Findings::default();
        let shown = all.set(
            uri.clone(),
            Some(1),
            vec![finding("a", "r1", 0), finding("b", "r1", 1), finding("c", "r2", 2)],
        );
        assert_eq!(shown.len(), 3);
        all.dismiss("a");
        assert_eq!(all.visible(&uri).iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["b", "c"]);
        all.silence(&uri, "r1");
        assert_eq!(all.visible(&uri).iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["c"]);
    }

    #[test]
    fn actions_offer_fix_dismiss_and_silence_with_a_confirmed_edit() {
        let uri: Uri = "file:///r/a.py".parse().unwrap();
        let text = "x = 1\nif x == None:\n";
        let mut all = Findings::default();
        all.set(uri.clone(), Some(3), vec![finding("a", "none-eq", 1)]);
        let diagnostics = to_diagnostics(&all.visible(&uri), text, Encoding::Utf16);
        let actions = code_actions(&all, &uri, &diagnostics, text, Encoding::Utf16);
        assert_eq!(actions.len(), 3);
        let CodeActionOrCommand::CodeAction(fix) = &actions[0] else { panic!() };
        let edit = fix.edit.as_ref().unwrap();
        let annotation = &edit.change_annotations.as_ref().unwrap()[ANNOTATION];
        assert_eq!(annotation.needs_confirmation, Some(true));
        let Some(DocumentChanges::Edits(edits)) = &edit.document_changes else { panic!() };
        assert_eq!(edits[0].text_document.version, Some(3));
        let CodeActionOrCommand::CodeAction(silence) = &actions[2] else { panic!() };
        assert_eq!(
            silence.command.as_ref().unwrap().command,
            super::super::protocol::Command::Silence.name()
        );
    }
}
