//! Running rules over one file: parse it, run each rule's query, apply its checks, and turn
//! matches into [`Finding`]s.

use std::fmt;

use rustc_hash::FxHashSet;
use sift_indexer::Language;
use tree_sitter::{Node, Parser, QueryCursor, StreamingIterator};

use super::check::Site;
use super::finding::{Finding, Fix, LineFilter, order};
use super::pack::RulePack;
use super::rule::{LangQuery, Rule};
use super::template;

/// Files larger than this are not reviewed: they are generated or vendored, and the bound keeps a
/// review fast.
pub const MAX_SOURCE_BYTES: usize = 2 << 20;

/// The most matches a query cursor tracks at once; more only happens on pathological input.
const MATCH_LIMIT: u32 = 4096;

/// Reviews one file: every rule of `pack` that runs on `language`, over `source`.
///
/// `path` is reported as given and matched against the pack's path filters (relative to the
/// project root, `/`-separated). With `lines`, only findings touching those lines are kept. Code
/// inside a syntax error is skipped rather than guessed at. The findings are deduplicated (one
/// per rule and range) and sorted by position, then rule id; [`RulePack::max_findings`] is left
/// to the caller, who sees all files (see [`keep_most_important`](super::keep_most_important)).
pub fn check_file(
    pack: &RulePack,
    path: &str,
    language: Language,
    source: &str,
    lines: Option<&LineFilter>,
) -> Vec<Finding> {
    if source.len() > MAX_SOURCE_BYTES
        || lines.is_some_and(LineFilter::is_empty)
        || !pack.includes_path(path)
    {
        return Vec::new();
    }
    let test_file = is_test_path(path);
    let rules: Vec<(&Rule, &LangQuery)> = pack
        .rules()
        .iter()
        .filter(|r| !(r.skip_tests && test_file))
        .filter(|r| !pack.disabled_in(&r.id, path))
        .filter_map(|r| r.query_for(language).map(|q| (r, q)))
        .collect();
    if rules.is_empty() {
        return Vec::new();
    }
    let mut parser = Parser::new();
    if let Err(e) = parser.set_language(&language.grammar()) {
        tracing::warn!("review: cannot load the {} grammar: {e}", language.name());
        return Vec::new();
    }
    let Some(tree) = parser.parse(source, None) else {
        return Vec::new();
    };
    let has_errors = tree.root_node().has_error();

    let mut findings = Vec::new();
    let mut seen = FxHashSet::default();
    let mut cursor = QueryCursor::new();
    cursor.set_match_limit(MATCH_LIMIT);
    for (rule, lq) in rules {
        let mut matches = cursor.matches(&lq.query, tree.root_node(), source.as_bytes());
        while let Some(m) = matches.next() {
            let captures = m.captures();
            let capture = |name: &str| -> Option<Node<'_>> {
                let index = lq.query.capture_index_for_name(name)?;
                captures.iter().find(|c| c.index == index).map(|c| c.node)
            };
            let Some(node) = m.nodes_for_capture_index(lq.finding).next() else {
                continue;
            };
            let mut sites = vec![Site { node, extra: Vec::new() }];
            for check in rule.checks.iter() {
                sites = check.apply(source, language, &capture, sites);
                if sites.is_empty() {
                    break;
                }
            }
            for site in sites {
                if has_errors && in_error(site.node) {
                    continue;
                }
                if !seen.insert((rule.id.as_str(), site.node.start_byte(), site.node.end_byte())) {
                    continue;
                }
                let text_of = |name: &str| -> Option<&str> {
                    let node = site
                        .extra
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, node)| *node)
                        .or_else(|| capture(name))?;
                    source.get(node.byte_range())
                };
                let message_template =
                    lq.pattern_message[m.pattern_index].as_deref().unwrap_or(&rule.message);
                let message = template::render(message_template, |n| text_of(n).map(short));
                let fix_template =
                    lq.pattern_fix[m.pattern_index].as_deref().or(rule.fix.as_deref());
                let fix = fix_template.map(|t| Fix {
                    start_byte: site.node.start_byte(),
                    end_byte: site.node.end_byte(),
                    replacement: template::render(t, |n| text_of(n).map(str::to_string)),
                });
                findings.push(finding(rule, path, source, site.node, message, fix));
            }
        }
    }
    if let Some(lines) = lines {
        findings.retain(|f| lines.overlaps(f.start_line, f.end_line));
    }
    findings.sort_by(order);
    findings
}

fn finding(
    rule: &Rule,
    path: &str,
    source: &str,
    node: Node<'_>,
    message: String,
    fix: Option<Fix>,
) -> Finding {
    let (start, end) = (node.start_position(), node.end_position());
    let col = |byte: usize, column: usize| {
        source.get(byte - column..byte).map_or(column, |s| s.chars().count()) + 1
    };
    let text = source.get(node.byte_range()).unwrap_or("");
    Finding {
        rule: rule.id.clone(),
        severity: rule.severity,
        confidence: rule.confidence,
        path: path.to_string(),
        start_line: start.row + 1,
        end_line: end.row + 1,
        start_col: col(node.start_byte(), start.column),
        end_col: col(node.end_byte(), end.column),
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
        message,
        rationale: rule.rationale.clone(),
        fix,
        fingerprint: super::finding::fingerprint(&rule.id, path, text),
    }
}

/// Globs for the paths of test code, in the syntax of `[paths]` in `review.toml`.
pub const TEST_PATH_GLOBS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "testdata",
    "__tests__",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "*_test.go",
    "*.test.*",
    "*.spec.*",
    "*Test.java",
    "*Tests.java",
];

/// Whether `path` looks like test code: a file or directory matching [`TEST_PATH_GLOBS`]. Rules
/// with `skip_tests = true` do not run there.
pub fn is_test_path(path: &str) -> bool {
    TEST_PATH_GLOBS.iter().any(|g| super::glob::matches_path(g, path))
}

/// Whether `node` is, holds or lies inside a syntax error.
fn in_error(node: Node<'_>) -> bool {
    if node.has_error() {
        return true;
    }
    let mut parent = node.parent();
    while let Some(p) = parent {
        if p.is_error() {
            return true;
        }
        parent = p.parent();
    }
    false
}

/// A capture's text for a message: whitespace collapsed, at most 60 characters.
fn short(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &collapsed[..i]),
        None => collapsed,
    }
}

/// One embedded test case of a rule that did not raise the expected number of findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFailure {
    /// The rule's id.
    pub rule: String,
    /// The index of the case among the rule's `[[tests]]`.
    pub case: usize,
    /// The language it ran in.
    pub language: Language,
    /// How many findings the case expects.
    pub expected: usize,
    /// The findings the rule raised, as `line:col message`.
    pub got: Vec<String>,
    /// The case's code.
    pub code: String,
}

impl fmt::Display for TestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} case {} ({}): expected {} finding(s), got {}{}\n--- code ---\n{}",
            self.rule,
            self.case + 1,
            self.language.name(),
            self.expected,
            self.got.len(),
            self.got.iter().map(|g| format!("\n  {g}")).collect::<String>(),
            self.code
        )
    }
}

/// Runs a rule's embedded `[[tests]]` cases, each in each of its languages; the failures.
pub fn run_rule_tests(rule: &Rule) -> Vec<TestFailure> {
    let pack = RulePack::from_rules(vec![rule.clone()]);
    let mut failures = Vec::new();
    for (case, test) in rule.tests().iter().enumerate() {
        for &language in &test.languages {
            let found = check_file(&pack, "case", language, &test.code, None);
            if found.len() != test.expect {
                failures.push(TestFailure {
                    rule: rule.id.clone(),
                    case,
                    language,
                    expected: test.expect,
                    got: found
                        .iter()
                        .map(|f| format!("{}:{} {}", f.start_line, f.start_col, f.message))
                        .collect(),
                    code: test.code.clone(),
                });
            }
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        Rule::from_toml("test", text).unwrap()
    }

    const SELF_CMP: &str = r#"
id = "python/demo"
languages = ["python"]
severity = "warning"
confidence = 0.9
message = "`{left}` is compared with itself"
rationale = "Always true."
fix = "True"
query = '''
((comparison_operator (identifier) @left "==" (identifier) @right) @finding
 (#eq? @left @right))
'''
"#;

    #[test]
    fn reports_positions_messages_and_fixes() {
        let pack = RulePack::from_rules(vec![rule(SELF_CMP)]);
        let src = "a = 1\nif é and x == x:\n    pass\nif x == y: pass\n";
        let found = check_file(&pack, "m.py", Language::Python, src, None);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!((f.start_line, f.end_line, f.start_col, f.end_col), (2, 2, 10, 16));
        assert_eq!(&src[f.start_byte..f.end_byte], "x == x");
        assert_eq!(f.message, "`x` is compared with itself");
        assert_eq!(
            f.fix.as_ref().unwrap().apply(src).unwrap(),
            "a = 1\nif é and True:\n    pass\nif x == y: pass\n"
        );
        assert_eq!(f.fingerprint.len(), 16);
        // The fingerprint does not depend on the line.
        let moved = check_file(&pack, "m.py", Language::Python, &format!("\n\n{src}"), None);
        assert_eq!(moved[0].fingerprint, f.fingerprint);
        // Line filters keep only findings that touch the lines.
        assert!(
            check_file(&pack, "m.py", Language::Python, src, Some(&LineFilter::from_lines([1, 3])))
                .is_empty()
        );
        assert_eq!(
            check_file(&pack, "m.py", Language::Python, src, Some(&LineFilter::new([2..=2]))).len(),
            1
        );
        // Other languages are not touched.
        assert!(check_file(&pack, "m.go", Language::Go, "x == x", None).is_empty());
    }

    #[test]
    fn skips_code_inside_syntax_errors() {
        let pack = RulePack::from_rules(vec![rule(SELF_CMP)]);
        let found =
            check_file(&pack, "m.py", Language::Python, "def f(:\n    x == x ) ) )\n", None);
        assert!(found.is_empty(), "{found:?}");
        let ok = check_file(&pack, "m.py", Language::Python, "x == x\ndef f(:\n", None);
        assert_eq!(ok.len(), 1, "an error elsewhere does not hide a finding: {ok:?}");
    }

    #[test]
    fn pattern_settings_override_message_and_fix() {
        let text = SELF_CMP.replace(
            "(#eq? @left @right)",
            "(#eq? @left @right)\n(#set! message \"same {right}\")\n(#set! fix \"ok\")",
        );
        let pack = RulePack::from_rules(vec![rule(&text)]);
        let found = check_file(&pack, "m.py", Language::Python, "x == x", None);
        assert_eq!(found[0].message, "same x");
        assert_eq!(found[0].fix.as_ref().unwrap().replacement, "ok");
    }

    #[test]
    fn duplicate_keys_move_the_finding_to_each_repeat() {
        let text = r#"
id = "python/dup"
languages = ["python"]
severity = "error"
confidence = 1.0
message = "key {key} repeats"
rationale = "The later value wins."
check = "duplicate-keys:dict"
query = '''
(dictionary) @dict @finding
'''
"#;
        let pack = RulePack::from_rules(vec![rule(text)]);
        let py = "d = {'a': 1, \"a\": 2, b'a': 3, f'a': 4, x: 5, x: 6, g(): 7, g(): 8, 'a': 9}";
        let found = check_file(&pack, "m.py", Language::Python, py, None);
        let keys: Vec<&str> = found.iter().map(|f| &py[f.start_byte..f.end_byte]).collect();
        assert_eq!(keys, vec!["\"a\"", "x", "'a'"]);
        assert_eq!(found[0].message, "key \"a\" repeats");
        let js_rule = text
            .replace("python/dup", "javascript/dup")
            .replace("[\"python\"]", "[\"javascript\"]")
            .replace("(dictionary)", "(object)");
        let pack = RulePack::from_rules(vec![rule(&js_rule)]);
        let js = "const o = {a: 1, 'a': 2, [k]: 3, [k]: 4, b, b: 5, ...s, c: 6};";
        let found = check_file(&pack, "m.js", Language::JavaScript, js, None);
        let keys: Vec<&str> = found.iter().map(|f| &js[f.start_byte..f.end_byte]).collect();
        assert_eq!(keys, vec!["'a'", "b"]);
    }

    #[test]
    fn path_filters_and_size_limit_apply() {
        let mut pack = RulePack::from_rules(vec![rule(SELF_CMP)]);
        let config =
            super::super::ReviewConfig::from_toml("r", "[paths]\nexclude = [\"vendor\"]").unwrap();
        pack.apply_config(&config).unwrap();
        assert!(check_file(&pack, "vendor/m.py", Language::Python, "x == x", None).is_empty());
        assert_eq!(check_file(&pack, "src/m.py", Language::Python, "x == x", None).len(), 1);
        let huge = "x == x\n".repeat(MAX_SOURCE_BYTES / 7 + 1);
        assert!(check_file(&pack, "src/m.py", Language::Python, &huge, None).is_empty());
    }

    #[test]
    fn test_paths() {
        for path in [
            "tests/a.py",
            "pkg/test/x.py",
            "test_a.py",
            "a/b_test.go",
            "src/x.spec.ts",
            "src/__tests__/x.js",
            "src/test/java/FooTest.java",
            "FooTests.java",
            "a/testdata/x.go",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in
            ["src/a.py", "latest/x.py", "contest.py", "attestation/x.go", "src/testing_utils.py"]
        {
            assert!(!is_test_path(path), "{path}");
        }
        let text = SELF_CMP.replace("fix = \"True\"", "fix = \"True\"\nskip_tests = true");
        let pack = RulePack::from_rules(vec![rule(&text)]);
        assert!(check_file(&pack, "tests/m.py", Language::Python, "x == x", None).is_empty());
        assert_eq!(check_file(&pack, "src/m.py", Language::Python, "x == x", None).len(), 1);
    }

    #[test]
    fn short_collapses_and_truncates() {
        assert_eq!(short("a\n   b"), "a b");
        assert_eq!(short(&"x".repeat(70)).chars().count(), 61);
    }
}
