//! The output formats of a review: JSON, SARIF 2.1.0, a GitHub pull-request review, Markdown and
//! terminal text. Pure functions of the findings; reading files and git is the caller's business.
//!
//! # The JSON contract (`sift review --format json`)
//!
//! ```json
//! {"findings": [{
//!   "path": "src/a.py",            // relative to the repository root, '/'-separated
//!   "start_line": 3, "end_line": 3, // 1-based, inclusive
//!   "start_col": 9, "end_col": 16,  // 1-based, in characters; end_col is just past the end
//!   "rule": "python/is-literal",
//!   "severity": "error",            // "error" | "warning" | "info"
//!   "confidence": 0.95,             // 0..=1
//!   "message": "…", "rationale": "…",
//!   "fix": null,                    // or {"start_line", "end_line", "replacement"}: the new
//!                                   // text of those whole lines (no trailing newline)
//!   "fingerprint": "0123456789abcdef"
//! }], "total": 1, "suppressed": 0}
//! ```
//!
//! `total` counts the findings before `max_findings` cut the list; `suppressed` counts those left
//! out because someone dismissed them (`.sift/feedback/`). Fields may be added; none of
//! these will change meaning.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::finding::{Finding, Fix};
use super::pack::RulePack;
use super::rule::Severity;

/// Where SARIF consumers can read about sift.
pub const INFORMATION_URI: &str = "https://github.com/sift-dev/sift";

/// A fix as whole lines: lines `start_line..=end_line` (1-based) become `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFix {
    /// First replaced line, 1-based.
    pub start_line: usize,
    /// Last replaced line, 1-based, inclusive.
    pub end_line: usize,
    /// The new text of those lines, without the final line break.
    pub replacement: String,
}

impl LineFix {
    /// Widens `fix` to the whole lines it touches in `source`; `None` when its range does not fit
    /// `source`.
    pub fn from_fix(fix: &Fix, source: &str) -> Option<LineFix> {
        let lines = fix.whole_lines(source)?;
        Some(LineFix {
            start_line: lines.start_line,
            end_line: lines.end_line,
            replacement: lines.replacement,
        })
    }
}

/// One finding to report, with its fix as whole lines when it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportItem {
    /// The finding (its path relative to the repository root).
    pub finding: Finding,
    /// Its fix, widened to whole lines.
    pub fix: Option<LineFix>,
}

/// How many findings of each severity: (errors, warnings, infos).
pub fn counts(items: &[ReportItem]) -> (usize, usize, usize) {
    let n = |s: Severity| items.iter().filter(|i| i.finding.severity == s).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Info))
}

/// "3 findings (1 error, 2 warnings)", or "no findings", and how many findings were left out:
/// by `max_findings` (`total` counts the findings before that cut) and because someone dismissed
/// them (`suppressed`, see [`feedback`](super::feedback)).
pub fn summary(items: &[ReportItem], total: usize, suppressed: usize) -> String {
    let mut out = summary_of_kept(items, total);
    if suppressed > 0 {
        let _ = write!(
            out,
            "; {suppressed} suppressed by dismissals (.sift/feedback/; `sift feedback list`)"
        );
    }
    out
}

fn summary_of_kept(items: &[ReportItem], total: usize) -> String {
    if items.is_empty() {
        return "no findings on the lines this change added".into();
    }
    let (e, w, i) = counts(items);
    let mut parts = Vec::new();
    for (n, one, many) in [(e, "error", "errors"), (w, "warning", "warnings"), (i, "info", "infos")]
    {
        if n > 0 {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    }
    let mut out = format!(
        "{} finding{} ({})",
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        parts.join(", ")
    );
    if total > items.len() {
        let _ = write!(out, "; {} more not shown (max_findings)", total - items.len());
    }
    out
}

/// `--format json`: see the module documentation for the contract.
pub fn to_json(items: &[ReportItem], total: usize, suppressed: usize) -> Value {
    let findings: Vec<Value> = items
        .iter()
        .map(|item| {
            let f = &item.finding;
            json!({
                "path": f.path,
                "start_line": f.start_line,
                "end_line": f.end_line,
                "start_col": f.start_col,
                "end_col": f.end_col,
                "rule": f.rule,
                "severity": f.severity,
                "confidence": f.confidence,
                "message": f.message,
                "rationale": f.rationale,
                "fix": item.fix.as_ref().map(|x| json!({
                    "start_line": x.start_line,
                    "end_line": x.end_line,
                    "replacement": x.replacement,
                })),
                "fingerprint": f.fingerprint,
            })
        })
        .collect();
    json!({ "findings": findings, "total": total, "suppressed": suppressed })
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A relative path as a URI reference: everything but unreserved characters and `/` escaped.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The first sentence of `text`.
fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

/// `--format sarif`: a SARIF 2.1.0 log with one run; `rules` lists the rules that have results
/// (descriptions from `pack`), locations are relative to `%SRCROOT%`.
pub fn to_sarif(items: &[ReportItem], pack: &RulePack) -> Value {
    let mut rule_ids: Vec<&str> = items.iter().map(|i| i.finding.rule.as_str()).collect();
    rule_ids.sort_unstable();
    rule_ids.dedup();
    let rules: Vec<Value> = rule_ids
        .iter()
        .map(|id| {
            let found = items.iter().find(|i| i.finding.rule == *id).map(|i| &i.finding);
            let (severity, rationale) = match pack.rule(id) {
                Some(rule) => (rule.severity(), rule.rationale().to_string()),
                None => found.map_or((Severity::Warning, String::new()), |f| {
                    (f.severity, f.rationale.clone())
                }),
            };
            json!({
                "id": id,
                "name": id,
                "shortDescription": {"text": first_sentence(&rationale)},
                "fullDescription": {"text": rationale},
                "defaultConfiguration": {"level": sarif_level(severity)},
            })
        })
        .collect();
    let results: Vec<Value> = items
        .iter()
        .map(|item| {
            let f = &item.finding;
            let uri = uri_path(&f.path);
            let mut result = json!({
                "ruleId": f.rule,
                "ruleIndex": rule_ids.binary_search(&f.rule.as_str()).unwrap_or(0),
                "level": sarif_level(f.severity),
                "message": {"text": f.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": f.start_line,
                            "endLine": f.end_line,
                            "startColumn": f.start_col,
                            "endColumn": f.end_col,
                        },
                    },
                }],
                "partialFingerprints": {"sift/v1": f.fingerprint},
                "properties": {"confidence": f.confidence},
            });
            if let Some(fix) = &item.fix {
                result["fixes"] = json!([{
                    "description": {"text": format!("Apply the fix suggested by {}", f.rule)},
                    "artifactChanges": [{
                        "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                        // A region of whole lines: no columns = from the start of startLine to
                        // the end of endLine, line break excluded.
                        "replacements": [{
                            "deletedRegion": {"startLine": fix.start_line, "endLine": fix.end_line},
                            "insertedContent": {"text": fix.replacement},
                        }],
                    }],
                }]);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "sift",
                "informationUri": INFORMATION_URI,
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            // Columns count Unicode scalar values, not UTF-16 code units.
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The repository root"}}},
            "results": results,
        }],
    })
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// `--format github`: the body of `POST /repos/{owner}/{repo}/pulls/{n}/reviews`, one comment per
/// finding on the right side of the diff; a finding with a fix gets a `suggestion` block for the
/// lines the fix replaces (and is placed on those lines).
pub fn to_github(items: &[ReportItem], total: usize, suppressed: usize) -> Value {
    let comments: Vec<Value> = items
        .iter()
        .map(|item| {
            let f = &item.finding;
            let mut body =
                format!("**{}** `{}`: {}\n\n{}", f.severity, f.rule, f.message, f.rationale);
            let (start, end) = match &item.fix {
                Some(fix) => {
                    let fence = fence_for(&fix.replacement);
                    let _ = write!(body, "\n\n{fence}suggestion\n{}\n{fence}", fix.replacement);
                    (fix.start_line, fix.end_line)
                }
                None => (f.start_line, f.end_line),
            };
            let mut comment = json!({"path": f.path, "line": end, "side": "RIGHT", "body": body});
            if start < end {
                comment["start_line"] = json!(start);
                comment["start_side"] = json!("RIGHT");
            }
            comment
        })
        .collect();
    json!({
        "event": "COMMENT",
        "body": format!("**sift review**: {}.", summary(items, total, suppressed)),
        "comments": comments,
    })
}

/// Escapes text for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `--format markdown`: a summary comment with the counts and a table of the findings.
pub fn to_markdown(items: &[ReportItem], total: usize, suppressed: usize) -> String {
    let mut out = String::from("## sift review\n\n");
    let _ = writeln!(out, "**{}**", capitalize(&summary(items, total, suppressed)));
    if items.is_empty() {
        return out;
    }
    out.push_str("\n| Severity | Location | Rule | Message |\n|---|---|---|---|\n");
    for item in items {
        let f = &item.finding;
        let location = if f.end_line > f.start_line {
            format!("{}:{}-{}", f.path, f.start_line, f.end_line)
        } else {
            format!("{}:{}", f.path, f.start_line)
        };
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | {} |",
            f.severity,
            cell(&location),
            f.rule,
            cell(&f.message)
        );
    }
    out
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `--format text`: `path:line:col: severity [rule] message`, the rationale indented below, and a
/// summary line; ANSI colours only when `color`.
pub fn to_text(items: &[ReportItem], total: usize, suppressed: usize, color: bool) -> String {
    let paint = |code: &str, text: &str| {
        if color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    };
    let mut out = String::new();
    for item in items {
        let f = &item.finding;
        let severity_color = match f.severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
        };
        let _ = writeln!(
            out,
            "{}: {} [{}] {}",
            paint("1", &format!("{}:{}:{}", f.path, f.start_line, f.start_col)),
            paint(severity_color, f.severity.as_str()),
            f.rule,
            f.message
        );
        let _ = writeln!(out, "    {}", f.rationale);
        if let Some(fix) = &item.fix {
            let _ = writeln!(out, "    fix: {}", fix.replacement.trim());
        }
        let _ = writeln!(out, "    {}", paint("2", &format!("fingerprint {}", f.fingerprint)));
    }
    if !items.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "{}", summary(items, total, suppressed));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity) -> Finding {
        Finding {
            rule: "python/is-literal".into(),
            severity,
            confidence: 0.9,
            path: "a b.py".into(),
            start_line: 2,
            end_line: 2,
            start_col: 4,
            end_col: 12,
            start_byte: 9,
            end_byte: 17,
            message: "m | x".into(),
            rationale: "First. Second.".into(),
            fix: None,
            fingerprint: "00".into(),
        }
    }

    #[test]
    fn line_fix_widens_to_whole_lines() {
        let source = "x = 1\nif a is 'b':\n    pass\n";
        let start = source.find("a is").unwrap();
        let fix = Fix { start_byte: start, end_byte: start + 8, replacement: "a == 'b'".into() };
        let line = LineFix::from_fix(&fix, source).unwrap();
        assert_eq!(
            line,
            LineFix { start_line: 2, end_line: 2, replacement: "if a == 'b':".into() }
        );
        assert_eq!(LineFix::from_fix(&Fix { start_byte: 99, ..fix }, source), None);
    }

    #[test]
    fn formats_have_their_shapes() {
        let items = vec![
            ReportItem { finding: finding(Severity::Error), fix: None },
            ReportItem {
                finding: finding(Severity::Warning),
                fix: Some(LineFix { start_line: 2, end_line: 3, replacement: "a\nb".into() }),
            },
        ];
        assert_eq!(
            summary(&items, 3, 0),
            "2 findings (1 error, 1 warning); 1 more not shown (max_findings)"
        );
        assert!(
            summary(&[], 0, 2)
                .ends_with("; 2 suppressed by dismissals (.sift/feedback/; `sift feedback list`)")
        );
        assert_eq!(to_json(&items, 2, 4)["suppressed"], 4);
        let sarif = to_sarif(&items, &RulePack::default());
        let result = &sarif["runs"][0]["results"][0];
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "a%20b.py"
        );
        assert_eq!(
            sarif["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"]["text"],
            "First."
        );
        let github = to_github(&items, 2, 0);
        assert_eq!(github["comments"][1]["start_line"], 2);
        assert_eq!(github["comments"][1]["line"], 3);
        assert!(
            github["comments"][1]["body"].as_str().unwrap().contains("```suggestion\na\nb\n```")
        );
        assert!(to_markdown(&items, 2, 0).contains("m \\| x"));
        assert!(!to_text(&items, 2, 0, false).contains('\x1b'));
        assert!(to_text(&items, 2, 0, true).contains('\x1b'));
        assert_eq!(fence_for("a ```` b"), "`````");
    }
}
