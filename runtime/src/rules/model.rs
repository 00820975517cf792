//! The model reviewer: a language model reads each changed hunk, with the definitions of the
//! symbols it uses and the team's guidance (`.sift/REVIEW.md`), in several independent passes.
//! A finding is kept only when most passes agree on it (the same line, give or take one) and it
//! points at a line the change added. Precision first: a pass whose answer cannot be read
//! votes for nothing, and a finding off the change is dropped.
//!
//! Findings carry the rule id [`MODEL_RULE`], a confidence equal to the share of passes that
//! agreed, and a fingerprint from the path and the flagged line's text (not the model's
//! wording, which changes from run to run), so a dismissal sticks.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use serde::Deserialize;
use sift_indexer::{CodeIndex, SearchOptions};

use super::finding::Finding;
use super::rule::Severity;
use crate::llm::{Cancel, ChatRequest, GenerationParams, LanguageModel, Message};

/// The rule id of the model reviewer's findings.
pub const MODEL_RULE: &str = "model/review";

/// How the model reviewer works.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReviewConfig {
    /// Independent passes over each hunk; a finding needs more than half of them.
    pub passes: usize,
    /// Sampling temperature of the passes (with one pass, 0: greedy).
    pub temperature: f32,
    /// Unchanged lines shown around the added ones.
    pub context_lines: usize,
    /// The most added lines in one prompt (a longer hunk is split).
    pub max_hunk_lines: usize,
    /// The most hunks reviewed (the rest are counted as skipped).
    pub max_hunks: usize,
    /// The most definitions retrieved for one hunk.
    pub max_definitions: usize,
    /// The most tokens of one answer.
    pub max_tokens: u32,
    /// Base seed; pass `i` uses `seed + i`.
    pub seed: u64,
}

impl Default for ModelReviewConfig {
    fn default() -> Self {
        Self {
            passes: 3,
            temperature: 0.6,
            context_lines: 3,
            max_hunk_lines: 80,
            max_hunks: 40,
            max_definitions: 4,
            max_tokens: 600,
            seed: 7,
        }
    }
}

/// One file of the change, as the model reviewer needs it.
#[derive(Debug, Clone, Copy)]
pub struct ChangedSource<'a> {
    /// Repository-relative, `/`-separated path.
    pub path: &'a str,
    /// The file's new text.
    pub source: &'a str,
    /// The added lines, 1-based inclusive ranges, sorted.
    pub added: &'a [RangeInclusive<usize>],
}

/// A definition shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// Where it is.
    pub path: String,
    /// Its first line, 1-based.
    pub start_line: u64,
    /// Its text (cut to a few dozen lines).
    pub text: String,
}

/// Where definitions of the identifiers a hunk uses come from.
pub trait DefinitionSource {
    /// Definitions of `names` (best first), leaving out those in `path` at the lines shown.
    fn definitions(&self, names: &[String], path: &str, max: usize) -> Vec<Definition>;
}

/// No context: the hunk alone.
pub struct NoDefinitions;

impl DefinitionSource for NoDefinitions {
    fn definitions(&self, _: &[String], _: &str, _: usize) -> Vec<Definition> {
        Vec::new()
    }
}

/// Definitions from the code index: chunks that define a symbol of that exact name.
pub struct IndexDefinitions<'a> {
    /// The index.
    pub index: &'a CodeIndex,
}

/// The most lines of one definition shown.
const DEFINITION_LINES: usize = 30;

impl DefinitionSource for IndexDefinitions<'_> {
    fn definitions(&self, names: &[String], path: &str, max: usize) -> Vec<Definition> {
        let mut out: Vec<Definition> = Vec::new();
        let opts = SearchOptions::top(5);
        for name in names {
            if out.len() >= max {
                break;
            }
            let Ok(hits) = self.index.search(name, &opts) else { continue };
            let Some(hit) =
                hits.into_iter().find(|h| h.symbol.as_deref() == Some(name) && h.path != path)
            else {
                continue;
            };
            let file = self.index.root().join(&hit.path);
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            let lines: Vec<&str> = text
                .lines()
                .skip(hit.start_line.saturating_sub(1) as usize)
                .take((hit.end_line + 1 - hit.start_line) as usize)
                .take(DEFINITION_LINES)
                .collect();
            out.push(Definition {
                path: hit.path,
                start_line: hit.start_line,
                text: lines.join("\n"),
            });
        }
        out
    }
}

/// What the model reviewer did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReview {
    /// The findings most passes agreed on, in file and line order.
    pub findings: Vec<Finding>,
    /// Hunks reviewed.
    pub hunks: usize,
    /// Hunks not reviewed (over `max_hunks`, or cancelled).
    pub hunks_skipped: usize,
    /// Findings raised by some pass but kept by no majority.
    pub disagreed: usize,
    /// Findings that pointed outside the added lines.
    pub off_change: usize,
    /// Passes whose answer could not be read, or that failed (with why).
    pub failed_passes: Vec<String>,
}

impl ModelReview {
    /// One line for people: what the model pass did.
    pub fn summary(&self, model: &str, passes: usize) -> String {
        let mut s = format!(
            "model review ({model}, {passes} passes): {} hunks, {} findings kept",
            self.hunks,
            self.findings.len()
        );
        if self.disagreed > 0 {
            s.push_str(&format!(", {} dropped for lack of agreement", self.disagreed));
        }
        if self.off_change > 0 {
            s.push_str(&format!(", {} off the changed lines", self.off_change));
        }
        if self.hunks_skipped > 0 {
            s.push_str(&format!(", {} hunks skipped", self.hunks_skipped));
        }
        if !self.failed_passes.is_empty() {
            s.push_str(&format!(", {} passes unreadable or failed", self.failed_passes.len()));
        }
        s
    }
}

/// One hunk: lines `start..=end` of a file shown, of which `added` were added.
struct Hunk {
    start: usize,
    end: usize,
    added: Vec<RangeInclusive<usize>>,
}

/// Groups a file's added ranges into hunks with context, each at most `max_lines` added lines.
fn hunks(
    added: &[RangeInclusive<usize>],
    total_lines: usize,
    cfg: &ModelReviewConfig,
) -> Vec<Hunk> {
    let ctx = cfg.context_lines;
    let mut out: Vec<Hunk> = Vec::new();
    let mut pieces: Vec<RangeInclusive<usize>> = Vec::new();
    for r in added {
        let (mut a, b) = (*r.start(), (*r.end()).min(total_lines.max(1)));
        while a <= b {
            let e = (a + cfg.max_hunk_lines.max(1) - 1).min(b);
            pieces.push(a..=e);
            a = e + 1;
        }
    }
    for r in pieces {
        let count = |h: &Hunk| h.added.iter().map(|x| x.end() - x.start() + 1).sum::<usize>();
        match out.last_mut() {
            Some(h)
                if *r.start() <= h.end + ctx + 1
                    && count(h) + (r.end() - r.start() + 1) <= cfg.max_hunk_lines =>
            {
                h.end = (*r.end() + ctx).min(total_lines);
                h.added.push(r);
            }
            _ => out.push(Hunk {
                start: r.start().saturating_sub(ctx).max(1),
                end: (*r.end() + ctx).min(total_lines),
                added: vec![r],
            }),
        }
    }
    out
}

/// Identifiers the added lines use, most frequent first (at least 3 characters, not keywords).
fn identifiers(lines: &[&str]) -> Vec<String> {
    const COMMON: &[&str] = &[
        "and",
        "not",
        "for",
        "while",
        "return",
        "def",
        "class",
        "self",
        "None",
        "True",
        "False",
        "let",
        "mut",
        "pub",
        "fn",
        "impl",
        "use",
        "const",
        "var",
        "function",
        "this",
        "new",
        "else",
        "elif",
        "try",
        "except",
        "finally",
        "with",
        "import",
        "from",
        "match",
        "case",
        "struct",
        "enum",
        "type",
        "interface",
        "public",
        "private",
        "static",
        "void",
        "int",
        "string",
        "str",
        "bool",
        "true",
        "false",
        "null",
        "nil",
        "func",
        "package",
        "await",
        "async",
        "yield",
        "lambda",
        "pass",
        "raise",
        "throw",
        "catch",
        "break",
        "continue",
    ];
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for line in lines {
        let mut word = String::new();
        for c in line.chars().chain(std::iter::once(' ')) {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                if word.len() >= 3
                    && !word.starts_with(|c: char| c.is_ascii_digit())
                    && !COMMON.contains(&word.as_str())
                {
                    *count.entry(std::mem::take(&mut word)).or_default() += 1;
                }
                word.clear();
            }
        }
    }
    let mut names: Vec<(String, usize)> = count.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    names.into_iter().map(|(n, _)| n).collect()
}

const SYSTEM: &str = "You review code changes for real bugs. Report only defects you are confident \
about: wrong logic, crashes, wrong API use, security holes, resource leaks, race conditions. Never \
report style, naming, formatting, missing comments, missing tests or speculative concerns. Answer \
with a JSON array and nothing else. Each item: {\"line\": <the number of an added line>, \
\"severity\": \"error\" or \"warning\", \"message\": \"<one sentence naming the defect>\", \
\"rationale\": \"<why it is a bug>\"}. Answer [] when the change has no such defect.";

fn prompt(file: &ChangedSource<'_>, lines: &[&str], hunk: &Hunk, defs: &[Definition]) -> String {
    let mut p = format!("File: {}\n\n", file.path);
    if !defs.is_empty() {
        p.push_str("Definitions the change uses:\n");
        for d in defs {
            p.push_str(&format!("```{}:{}\n{}\n```\n", d.path, d.start_line, d.text));
        }
        p.push('\n');
    }
    p.push_str(
        "The change. Lines marked + were added; the number is the line in the new file:\n```\n",
    );
    for n in hunk.start..=hunk.end {
        let mark = if hunk.added.iter().any(|r| r.contains(&n)) { '+' } else { ' ' };
        p.push_str(&format!("{mark}{n:>5} {}\n", lines.get(n - 1).unwrap_or(&"")));
    }
    p.push_str("```\n");
    p
}

#[derive(Debug, Deserialize)]
struct RawFinding {
    line: usize,
    #[serde(default)]
    severity: Option<String>,
    message: String,
    #[serde(default)]
    rationale: Option<String>,
}

/// Reads a pass's answer: the JSON array in it (code fences and prose around it are tolerated).
fn parse_answer(text: &str) -> Result<Vec<RawFinding>, String> {
    let (Some(a), Some(b)) = (text.find('['), text.rfind(']')) else {
        return Err(format!("no JSON array in the answer: {:?}", cut(text)));
    };
    if b < a {
        return Err(format!("no JSON array in the answer: {:?}", cut(text)));
    }
    serde_json::from_str::<Vec<RawFinding>>(&text[a..=b])
        .map_err(|e| format!("unreadable answer ({e}): {:?}", cut(text)))
}

fn cut(text: &str) -> String {
    text.chars().take(120).collect()
}

/// Reviews the change with `model`. Errors of single passes are counted, not fatal: the review
/// goes on with the passes that answered.
pub fn review_with_model(
    model: &dyn LanguageModel,
    files: &[ChangedSource<'_>],
    guidance: Option<&str>,
    definitions: &dyn DefinitionSource,
    cfg: &ModelReviewConfig,
    cancel: &Cancel,
) -> ModelReview {
    let mut out = ModelReview::default();
    let passes = cfg.passes.max(1);
    let mut system = SYSTEM.to_string();
    if let Some(g) = guidance.map(str::trim).filter(|g| !g.is_empty()) {
        system.push_str("\n\nThe team's review guidance (from .sift/REVIEW.md):\n");
        system.push_str(g);
    }
    let mut budget = cfg.max_hunks;
    for file in files {
        let lines: Vec<&str> = file.source.lines().collect();
        for hunk in hunks(file.added, lines.len(), cfg) {
            if budget == 0 || cancel.is_cancelled() {
                out.hunks_skipped += 1;
                continue;
            }
            budget -= 1;
            out.hunks += 1;
            let added_text: Vec<&str> = hunk
                .added
                .iter()
                .flat_map(|r| r.clone())
                .filter_map(|n| lines.get(n - 1).copied())
                .collect();
            let defs =
                definitions.definitions(&identifiers(&added_text), file.path, cfg.max_definitions);
            let user = prompt(file, &lines, &hunk, &defs);
            // line -> (votes, first finding raised for it)
            let mut votes: BTreeMap<usize, Vec<(usize, RawFinding)>> = BTreeMap::new();
            for pass in 0..passes {
                let request = ChatRequest {
                    messages: vec![Message::system(system.clone()), Message::user(user.clone())],
                    tools: Vec::new(),
                    params: GenerationParams {
                        max_tokens: cfg.max_tokens,
                        temperature: if passes == 1 { 0.0 } else { cfg.temperature },
                        top_p: 0.95,
                        seed: Some(cfg.seed + pass as u64),
                        stop: Vec::new(),
                    },
                };
                let answer = match model.chat(&request, cancel, &mut |_| {}) {
                    Ok(r) => r.message.content,
                    Err(e) => {
                        out.failed_passes.push(format!("{}: {e}", file.path));
                        continue;
                    }
                };
                match parse_answer(&answer) {
                    Ok(found) => {
                        let mut seen = Vec::new();
                        for f in found {
                            if !hunk.added.iter().any(|r| r.contains(&f.line)) {
                                out.off_change += 1;
                                continue;
                            }
                            if !seen.contains(&f.line) {
                                seen.push(f.line);
                                votes.entry(f.line).or_default().push((pass, f));
                            }
                        }
                    }
                    Err(e) => out.failed_passes.push(format!("{}: {e}", file.path)),
                }
            }
            out.findings.extend(agree(&votes, passes, file, &lines, &mut out.disagreed));
        }
    }
    out.findings.sort_by(|a, b| (&a.path, a.start_line).cmp(&(&b.path, b.start_line)));
    out
}

/// The findings a majority of passes raised, lines within one of each other counting as one.
fn agree(
    votes: &BTreeMap<usize, Vec<(usize, RawFinding)>>,
    passes: usize,
    file: &ChangedSource<'_>,
    lines: &[&str],
    disagreed: &mut usize,
) -> Vec<Finding> {
    let mut kept: Vec<Finding> = Vec::new();
    let mut used: Vec<usize> = Vec::new();
    // Lines with the most votes first, so a cluster is named after its strongest line.
    let mut order: Vec<usize> = votes.keys().copied().collect();
    order.sort_by_key(|l| std::cmp::Reverse(votes[l].len()));
    for line in order {
        if used.contains(&line) {
            continue;
        }
        let cluster: Vec<usize> = (line.saturating_sub(1)..=line + 1)
            .filter(|l| votes.contains_key(l) && !used.contains(l))
            .collect();
        let mut voters: Vec<usize> =
            cluster.iter().flat_map(|l| votes[l].iter().map(|(p, _)| *p)).collect();
        voters.sort_unstable();
        voters.dedup();
        used.extend(&cluster);
        if voters.len() * 2 <= passes {
            *disagreed += 1;
            continue;
        }
        let (_, raw) = &votes[&line][0];
        kept.push(finding(file, lines, line, raw, voters.len() as f32 / passes as f32));
    }
    kept
}

fn finding(
    file: &ChangedSource<'_>,
    lines: &[&str],
    line: usize,
    raw: &RawFinding,
    confidence: f32,
) -> Finding {
    let text = lines.get(line - 1).copied().unwrap_or("");
    let line_start: usize = lines.iter().take(line - 1).map(|l| l.len() + 1).sum();
    let indent = text.len() - text.trim_start().len();
    let severity = match raw.severity.as_deref() {
        Some("error") => Severity::Error,
        _ => Severity::Warning,
    };
    Finding {
        rule: MODEL_RULE.to_string(),
        severity,
        confidence,
        path: file.path.to_string(),
        start_line: line,
        end_line: line,
        start_col: text[..indent].chars().count() + 1,
        end_col: text.chars().count() + 1,
        start_byte: line_start + indent,
        end_byte: line_start + text.len(),
        message: raw.message.trim().to_string(),
        rationale: raw.rationale.clone().unwrap_or_default().trim().to_string(),
        fix: None,
        fingerprint: super::finding::fingerprint(MODEL_RULE, file.path, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Role;
    use crate::llm::scripted::{ScriptedModel, ScriptedTurn};

    /// A model that answers the passes with these texts, in order.
    fn answers(texts: &[&str]) -> ScriptedModel {
        ScriptedModel::new(texts.iter().map(|t| ScriptedTurn::text(t)))
    }

    /// Reviews `files` with `model` and the default configuration, no definitions, no guidance.
    fn review(model: &ScriptedModel, files: &[ChangedSource<'_>]) -> ModelReview {
        let cfg = ModelReviewConfig::default();
        review_with_model(model, files, None, &NoDefinitions, &cfg, &Cancel::new())
    }

    const SRC: &str = "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s / len(xs)\n\ndef other():\n    return 1\n";

    fn file(added: &[RangeInclusive<usize>]) -> ChangedSource<'_> {
        ChangedSource { path: "m.py", source: SRC, added }
    }

    #[test]
    fn a_finding_most_passes_agree_on_is_kept_with_their_share_as_confidence() {
        let model = answers(&[
            r#"[{"line": 5, "severity": "error", "message": "division by zero on an empty list", "rationale": "len(xs) can be 0"}]"#,
            "```json\n[{\"line\": 5, \"message\": \"empty input divides by zero\"}]\n```",
            "[]",
        ]);
        let added = [5..=5];
        let r = review_with_model(
            &model,
            &[file(&added)],
            Some("We care about empty inputs."),
            &NoDefinitions,
            &ModelReviewConfig::default(),
            &Cancel::new(),
        );
        assert_eq!(r.hunks, 1);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        let f = &r.findings[0];
        assert_eq!((f.rule.as_str(), f.start_line, f.severity), (MODEL_RULE, 5, Severity::Error));
        assert!((f.confidence - 2.0 / 3.0).abs() < 1e-6);
        assert_eq!(f.message, "division by zero on an empty list");
        assert_eq!(&SRC[f.start_byte..f.end_byte], "return s / len(xs)");
        // The prompt shows the hunk with its added line marked, and the team's guidance.
        let prompts = model.requests();
        assert_eq!(prompts.len(), 3);
        let user = &prompts[0].messages[1];
        assert_eq!(user.role, Role::User);
        assert!(user.content.contains("+    5     return s / len(xs)"), "{}", user.content);
        assert!(user.content.contains("     4         s += x"));
        assert!(prompts[0].messages[0].content.contains("We care about empty inputs."));
        // Independent passes: different seeds.
        assert_ne!(prompts[0].params.seed, prompts[1].params.seed);
    }

    #[test]
    fn a_finding_one_pass_of_three_raises_is_dropped() {
        let model = answers(&[r#"[{"line": 5, "message": "maybe wrong"}]"#, "[]", "[]"]);
        let r = review(&model, &[file(&[5..=5])]);
        assert!(r.findings.is_empty());
        assert_eq!(r.disagreed, 1);
    }

    #[test]
    fn findings_off_the_added_lines_and_unreadable_passes_vote_for_nothing() {
        let model = ScriptedModel::new([
            ScriptedTurn::text(
                r#"[{"line": 8, "message": "unchanged code"}, {"line": 4, "message": "adjacent line"}]"#,
            ),
            ScriptedTurn::text("I think the code is fine."),
            ScriptedTurn::text("").failing("scripted failure"),
        ]);
        let r = review(&model, &[file(&[4..=4])]);
        assert!(r.findings.is_empty(), "{r:?}");
        assert_eq!(r.off_change, 1);
        assert_eq!(r.failed_passes.len(), 2, "{:?}", r.failed_passes);
        assert!(r.summary("m", 3).contains("2 passes unreadable or failed"));
    }

    #[test]
    fn neighbouring_lines_count_as_one_finding() {
        let model = answers(&[
            r#"[{"line": 4, "message": "a"}]"#,
            r#"[{"line": 5, "message": "b"}]"#,
            r#"[{"line": 5, "message": "c"}]"#,
        ]);
        let r = review(&model, &[file(&[3..=5])]);
        assert_eq!(r.findings.len(), 1);
        assert_eq!((r.findings[0].start_line, r.findings[0].message.as_str()), (5, "b"));
        assert!((r.findings[0].confidence - 1.0).abs() < 1e-6);
    }

    #[test]
    fn the_fingerprint_ignores_the_models_wording_and_the_line_number() {
        let run = |answer: &str, src: &'static str, line: usize| {
            let added = [line..=line];
            let f = ChangedSource { path: "m.py", source: src, added: &added };
            review(&answers(&[answer, answer, answer]), &[f]).findings[0].fingerprint.clone()
        };
        let a = run(r#"[{"line": 5, "message": "one wording"}]"#, SRC, 5);
        let moved: &'static str = Box::leak(format!("# header\n{SRC}").into_boxed_str());
        let b = run(r#"[{"line": 6, "message": "another wording"}]"#, moved, 6);
        assert_eq!(a, b);
    }

    #[test]
    fn long_changes_are_split_and_capped() {
        let src: &'static str = Box::leak(
            (1..=300).map(|i| format!("x{i} = {i}\n")).collect::<String>().into_boxed_str(),
        );
        let added = [1..=300];
        let model = answers(&["[]", "[]"]);
        let cfg = ModelReviewConfig {
            passes: 1,
            max_hunk_lines: 100,
            max_hunks: 2,
            ..Default::default()
        };
        let f = ChangedSource { path: "big.py", source: src, added: &added };
        let r = review_with_model(&model, &[f], None, &NoDefinitions, &cfg, &Cancel::new());
        assert_eq!((r.hunks, r.hunks_skipped), (2, 1));
        // One pass: greedy.
        assert_eq!(model.requests()[0].params.temperature, 0.0);
    }

    #[test]
    fn a_cancelled_review_skips_the_remaining_hunks() {
        let model = answers(&[]);
        let cancel = Cancel::new();
        cancel.cancel();
        let added = [1..=1, 7..=7];
        let cfg = ModelReviewConfig { context_lines: 0, ..Default::default() };
        let r = review_with_model(&model, &[file(&added)], None, &NoDefinitions, &cfg, &cancel);
        assert_eq!((r.hunks, r.hunks_skipped), (0, 2));
    }

    #[test]
    fn definitions_come_from_the_index_by_exact_symbol_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tax.py"),
            "def compute_tax(items):\n    return sum(i.price for i in items) * 0.2\n\n\ndef compute_total(items):\n    return 0\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("m.py"), "x = compute_tax(items)\n").unwrap();
        let store = sift_indexer::Store::open(dir.path(), &[sift_indexer::STORE_ENTRIES]).unwrap();
        let (index, _) = CodeIndex::open_or_create(&store).unwrap();
        index.update(&sift_indexer::UpdateOptions::default(), &sift_indexer::NoProgress).unwrap();
        let source = IndexDefinitions { index: &index };
        let defs = source.definitions(&["items".into(), "compute_tax".into()], "m.py", 4);
        assert_eq!(defs.len(), 1, "{defs:?}");
        assert_eq!((defs[0].path.as_str(), defs[0].start_line), ("tax.py", 1));
        assert!(defs[0].text.starts_with("def compute_tax(items):"));
        assert!(!defs[0].text.contains("compute_total"));
        // A definition in the reviewed file itself is already in view.
        assert!(source.definitions(&["compute_tax".into()], "tax.py", 4).is_empty());
    }

    #[test]
    fn identifiers_skip_keywords_and_short_words() {
        let ids = identifiers(&["    return self.total(items) + compute_tax(items)"]);
        assert_eq!(ids, vec!["items", "compute_tax", "total"]);
    }
}
