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
//! }], "total": 1, "suppressed": 0, "suppressed_by": {"dismissals": 0, "config": 0}}
//! ```
//!
//! `total` counts the findings before `max_findings` cut the list; `suppressed` counts those left
//! out because someone dismissed them (`.sift/feedback/`) or because the review configuration
//! silences them (`.sift/review.toml`: a disabled rule, a path left out…), and `suppressed_by`
//! splits it. With `--explain`, [`explain_json`] adds `"configuration"`, `"suppressions"` (each
//! left-out finding, in the shape above, with `"suppressed_by"`: why) and `"rerated"`. Fields may
//! be added; none of these will change meaning.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::finding::Finding;
use super::pack::RulePack;
use super::rule::Severity;
use super::suppression::{Counts, Rerated, Suppressed, Why};

/// Where SARIF consumers can read about sift.
pub const INFORMATION_URI: &str = "https://github.com/sift-dev/sift";

/// A fix as whole lines: lines `start_line..=end_line` (1-based) become `replacement`
/// ([`Fix::whole_lines`] makes one).
pub use crate::edit::LineEdit as LineFix;

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
/// by `max_findings` (`total` counts the findings before that cut), because someone dismissed
/// them (see [`feedback`](super::feedback)) or because the configuration silences them.
pub fn summary(items: &[ReportItem], total: usize, suppressed: Counts) -> String {
    let mut out = summary_of_kept(items, total);
    let Counts { dismissed, configured } = suppressed;
    let all = suppressed.total();
    if configured == 0 && dismissed > 0 {
        let _ = write!(
            out,
            "; {dismissed} suppressed by dismissals (.sift/feedback/; `sift feedback list`)"
        );
    } else if dismissed == 0 && configured > 0 {
        let _ = write!(
            out,
            "; {configured} suppressed by the review configuration (`sift review --explain` lists them)"
        );
    } else if all > 0 {
        let _ = write!(
            out,
            "; {all} suppressed ({dismissed} by dismissals, {configured} by the review configuration; `sift review --explain` lists them)"
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
pub fn to_json(items: &[ReportItem], total: usize, suppressed: Counts) -> Value {
    let findings: Vec<Value> =
        items.iter().map(|item| finding_json(&item.finding, item.fix.as_ref())).collect();
    json!({
        "findings": findings,
        "total": total,
        "suppressed": suppressed.total(),
        "suppressed_by": {"dismissals": suppressed.dismissed, "config": suppressed.configured},
    })
}

/// One finding in the JSON contract's shape.
fn finding_json(f: &Finding, fix: Option<&LineFix>) -> Value {
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
        "fix": fix.map(|x| json!({
            "start_line": x.start_line,
            "end_line": x.end_line,
            "replacement": x.replacement,
        })),
        "fingerprint": f.fingerprint,
    })
}

/// Why a finding was left out, as JSON: `{"kind": "dismissal", "fingerprint", "time", "reason",
/// "file", "revision"}` or `{"kind": "config", "key", "value", "file", "revision"}`, with
/// `"text"`, the reason in words; `revision` is `null` for the working tree.
fn why_json(why: &Why) -> Value {
    let mut value = match why {
        Why::Dismissed { dismissal, from } => json!({
            "kind": "dismissal",
            "fingerprint": dismissal.fingerprint,
            "time": dismissal.time,
            "reason": dismissal.reason,
            "file": from.file,
            "revision": from.revision,
        }),
        Why::Configured { silence, from } => json!({
            "kind": "config",
            "key": silence.key(),
            "value": silence.value(),
            "file": from.file,
            "revision": from.revision,
        }),
        Why::Learned { evidence, from } => json!({
            "kind": "learned",
            "evidence": evidence,
            "file": from.file,
            "revision": from.revision,
        }),
    };
    value["text"] = json!(why.to_string());
    value
}

/// What `--explain` adds to a report: where the review's configuration was read and every
/// finding it left out or re-rated, with the reason.
#[derive(Debug, Clone, Copy)]
pub struct Explanation<'a> {
    /// Where the configuration, project rules and dismissals were read, in words ("the working
    /// tree", "commit 1a2b3c4d5e6f, the merge-base of HEAD and main").
    pub settings: &'a str,
    /// The findings left out, and why.
    pub suppressed: &'a [Suppressed],
    /// The findings reported at a configured severity.
    pub rerated: &'a [Rerated],
}

/// `--explain` in JSON: `{"configuration": "…", "suppressions": [finding + "suppressed_by"],
/// "rerated": [finding + "default_severity", "key", "file", "revision"]}`, to merge into the
/// report object.
pub fn explain_json(explanation: &Explanation<'_>) -> Value {
    let suppressions: Vec<Value> = explanation
        .suppressed
        .iter()
        .map(|s| {
            let mut value = finding_json(&s.finding, None);
            value["suppressed_by"] = why_json(&s.why);
            value
        })
        .collect();
    let rerated: Vec<Value> = explanation
        .rerated
        .iter()
        .map(|r| {
            let mut value = finding_json(&r.finding, None);
            value["default_severity"] = json!(r.default);
            match &r.learned {
                Some(evidence) => value["learned"] = json!(evidence),
                None => value["key"] = json!(format!("rules.severity.{:?}", r.pattern)),
            }
            value["file"] = json!(r.from.file);
            value["revision"] = json!(r.from.revision);
            value
        })
        .collect();
    json!({
        "configuration": explanation.settings,
        "suppressions": suppressions,
        "rerated": rerated,
    })
}

/// `--explain` as text, after the report: where the configuration was read, then each
/// left-out finding (`path:line:col: severity [rule] message`) with the reason indented below,
/// then each re-rated one.
pub fn explain_text(explanation: &Explanation<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nreview configuration: {}", explanation.settings);
    if explanation.suppressed.is_empty() {
        out.push_str("suppressed: none\n");
    } else {
        let _ = writeln!(out, "suppressed ({}):", explanation.suppressed.len());
        for s in explanation.suppressed {
            let f = &s.finding;
            let _ = writeln!(
                out,
                "  {}:{}:{}: {} [{}] {}\n      {}",
                f.path, f.start_line, f.start_col, f.severity, f.rule, f.message, s.why
            );
        }
    }
    if !explanation.rerated.is_empty() {
        let _ = writeln!(out, "re-rated ({}):", explanation.rerated.len());
        for r in explanation.rerated {
            let f = &r.finding;
            let why = match &r.learned {
                Some(evidence) => format!("demoted ({evidence}) in {}", r.from),
                None => format!("rules.severity.{:?} in {}", r.pattern, r.from),
            };
            let _ = writeln!(
                out,
                "  {}:{}:{}: [{}] {} instead of {}\n      {why}",
                f.path, f.start_line, f.start_col, f.rule, f.severity, r.default
            );
        }
    }
    out
}

/// `--explain` in Markdown: a collapsed section with a table of the left-out and re-rated
/// findings.
pub fn explain_markdown(explanation: &Explanation<'_>) -> String {
    let mut out = format!(
        "\n<details><summary>{} suppressed, {} re-rated (review configuration: {})</summary>\n\n",
        explanation.suppressed.len(),
        explanation.rerated.len(),
        cell(explanation.settings)
    );
    if !(explanation.suppressed.is_empty() && explanation.rerated.is_empty()) {
        out.push_str("| Location | Rule | Why |\n|---|---|---|\n");
    }
    for s in explanation.suppressed {
        let f = &s.finding;
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} |",
            cell(&format!("{}:{}", f.path, f.start_line)),
            f.rule,
            cell(&s.why.to_string())
        );
    }
    for r in explanation.rerated {
        let f = &r.finding;
        let why = match &r.learned {
            Some(evidence) => {
                format!(
                    "{} instead of {}: demoted ({evidence}) in {}",
                    f.severity, r.default, r.from
                )
            }
            None => format!(
                "{} instead of {}: rules.severity.{:?} in {}",
                f.severity, r.default, r.pattern, r.from
            ),
        };
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} |",
            cell(&format!("{}:{}", f.path, f.start_line)),
            f.rule,
            cell(&why)
        );
    }
    out.push_str("\n</details>\n");
    out
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
/// (descriptions from `pack`), locations are relative to `%SRCROOT%`. The `suppressed` findings
/// (none unless `--explain`) are results too, each with a SARIF `suppressions` entry (`kind`
/// `external`, `status` `accepted`, the reason as `justification`), which code-scanning tools
/// show as suppressed.
pub fn to_sarif(items: &[ReportItem], pack: &RulePack, suppressed: &[Suppressed]) -> Value {
    let all: Vec<(&Finding, Option<&LineFix>, Option<&Why>)> = items
        .iter()
        .map(|i| (&i.finding, i.fix.as_ref(), None))
        .chain(suppressed.iter().map(|s| (&s.finding, None, Some(&s.why))))
        .collect();
    let mut rule_ids: Vec<&str> = all.iter().map(|(f, _, _)| f.rule.as_str()).collect();
    rule_ids.sort_unstable();
    rule_ids.dedup();
    let rules: Vec<Value> = rule_ids
        .iter()
        .map(|id| {
            let found = all.iter().find(|(f, _, _)| f.rule == *id).map(|(f, _, _)| *f);
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
    let results: Vec<Value> = all
        .iter()
        .map(|&(f, fix, why)| {
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
            if let Some(why) = why {
                result["suppressions"] = json!([{
                    "kind": "external",
                    "status": "accepted",
                    "justification": why.to_string(),
                }]);
            }
            if let Some(fix) = fix {
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
pub fn to_github(items: &[ReportItem], total: usize, suppressed: Counts) -> Value {
    let comments: Vec<Value> = items.iter().map(github_comment).collect();
    json!({
        "event": "COMMENT",
        "body": format!("**sift review**: {}.", summary(items, total, suppressed)),
        "comments": comments,
    })
}

/// One inline comment of a pull-request review (GitHub's `comments[]` item): the finding on the
/// right side of its lines (its fix's lines, with the fix as a suggestion block, when it has
/// one).
pub fn github_comment(item: &ReportItem) -> Value {
    let f = &item.finding;
    let mut body = format!("**{}** `{}`: {}\n\n{}", f.severity, f.rule, f.message, f.rationale);
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
}

/// Escapes text for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `--format markdown`: a summary comment with the counts and a table of the findings.
pub fn to_markdown(items: &[ReportItem], total: usize, suppressed: Counts) -> String {
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
pub fn to_text(items: &[ReportItem], total: usize, suppressed: Counts, color: bool) -> String {
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
    use crate::rules::Fix;

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
        let line = fix.whole_lines(source).unwrap();
        assert_eq!(
            line,
            LineFix { start_line: 2, end_line: 2, replacement: "if a == 'b':".into() }
        );
        assert_eq!(Fix { start_byte: 99, ..fix }.whole_lines(source), None);
    }

    fn counts(dismissed: usize, configured: usize) -> Counts {
        Counts { dismissed, configured }
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
            summary(&items, 3, Counts::default()),
            "2 findings (1 error, 1 warning); 1 more not shown (max_findings)"
        );
        assert!(
            summary(&[], 0, counts(2, 0))
                .ends_with("; 2 suppressed by dismissals (.sift/feedback/; `sift feedback list`)")
        );
        assert!(summary(&[], 0, counts(0, 1)).ends_with(
            "; 1 suppressed by the review configuration (`sift review --explain` lists them)"
        ));
        assert!(summary(&[], 0, counts(1, 2)).ends_with(
            "; 3 suppressed (1 by dismissals, 2 by the review configuration; `sift review --explain` lists them)"
        ));
        let json = to_json(&items, 2, counts(1, 3));
        assert_eq!(json["suppressed"], 4);
        assert_eq!(json["suppressed_by"], json!({"dismissals": 1, "config": 3}));
        let sarif = to_sarif(&items, &RulePack::default(), &[]);
        let result = &sarif["runs"][0]["results"][0];
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "a%20b.py"
        );
        assert_eq!(
            sarif["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"]["text"],
            "First."
        );
        let github = to_github(&items, 2, Counts::default());
        assert_eq!(github["comments"][1]["start_line"], 2);
        assert_eq!(github["comments"][1]["line"], 3);
        assert!(
            github["comments"][1]["body"].as_str().unwrap().contains("```suggestion\na\nb\n```")
        );
        assert!(to_markdown(&items, 2, Counts::default()).contains("m \\| x"));
        assert!(!to_text(&items, 2, Counts::default(), false).contains('\x1b'));
        assert!(to_text(&items, 2, Counts::default(), true).contains('\x1b'));
        assert_eq!(fence_for("a ```` b"), "`````");
    }

    #[test]
    fn explanations_say_what_left_each_finding_out_and_where_it_was_read() {
        use crate::rules::Silence;
        use crate::rules::feedback::Dismissal;
        use crate::rules::suppression::Provenance;
        let at = |file: &str| Provenance {
            file: file.into(),
            revision: Some("0123456789abcdef".into()),
        };
        let suppressed = vec![
            Suppressed {
                finding: finding(Severity::Error),
                why: Why::Dismissed {
                    dismissal: Dismissal {
                        fingerprint: "00".into(),
                        rule: "python/is-literal".into(),
                        path: "a b.py".into(),
                        time: "2025-01-31T12:00:00Z".into(),
                        reason: Some("an enum".into()),
                    },
                    from: at(".sift/feedback/dismissed.jsonl"),
                },
            },
            Suppressed {
                finding: finding(Severity::Warning),
                why: Why::Configured {
                    silence: Silence::Disabled { pattern: "python/*".into() },
                    from: Provenance { file: ".sift/review.toml".into(), revision: None },
                },
            },
        ];
        let rerated = vec![Rerated {
            finding: finding(Severity::Info),
            default: Severity::Error,
            pattern: "python/is-literal".into(),
            from: at(".sift/review.toml"),
            learned: None,
        }];
        let explanation = Explanation {
            settings: "the working tree",
            suppressed: &suppressed,
            rerated: &rerated,
        };
        let text = explain_text(&explanation);
        assert!(
            text.contains("review configuration: the working tree\nsuppressed (2):\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  a b.py:2:4: error [python/is-literal] m | x\n      dismissed (00, 2025-01-31T12:00:00Z: \"an enum\") in .sift/feedback/dismissed.jsonl at 0123456789ab\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("rules.disable = \"python/*\" in .sift/review.toml in the working tree"),
            "{text}"
        );
        assert!(
            text.contains("info instead of error\n      rules.severity.\"python/is-literal\" in .sift/review.toml at 0123456789ab"),
            "{text}"
        );
        let json = explain_json(&explanation);
        let by = &json["suppressions"][0]["suppressed_by"];
        assert_eq!(by["kind"], "dismissal");
        assert_eq!(by["reason"], "an enum");
        assert_eq!(by["revision"], "0123456789abcdef");
        let by = &json["suppressions"][1]["suppressed_by"];
        assert_eq!(
            (by["kind"].as_str(), by["key"].as_str()),
            (Some("config"), Some("rules.disable"))
        );
        assert_eq!(by["value"], "python/*");
        assert!(by["revision"].is_null());
        assert_eq!(json["suppressions"][1]["fingerprint"], "00");
        assert_eq!(json["rerated"][0]["default_severity"], "error");
        let md = explain_markdown(&explanation);
        assert!(md.contains("<details><summary>2 suppressed, 1 re-rated"), "{md}");
        let sarif = to_sarif(&[], &RulePack::default(), &suppressed);
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[1]["suppressions"][0]["kind"], "external");
        assert!(
            results[1]["suppressions"][0]["justification"]
                .as_str()
                .unwrap()
                .contains("rules.disable")
        );
        let none = explain_text(&Explanation { settings: "x", suppressed: &[], rerated: &[] });
        assert!(none.contains("suppressed: none"), "{none}");
    }
}
