//! One rule: a tree-sitter query plus what to say about each match, read from a TOML file.
//!
//! A rule file holds `id`, `languages`, `severity`, `confidence`, `message`, `rationale`,
//! `query`, and optionally `check`, `fix`, `enabled` and `[[tests]]`; the format is described in
//! the [module documentation](super). Loading a rule compiles its query once per language, and
//! checks everything that can be checked before a file is reviewed: the query compiles for every
//! language, every pattern captures `@finding`, only predicates the engine evaluates are used,
//! and every `{name}` in a template and every capture a check names exists. An error names the
//! file and line.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use sift_indexer::Language;
use tree_sitter::Query;

use super::check::Check;
use super::error::{Result, ReviewError};
use super::template;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look; may be intended.
    Info,
    /// Probably a bug.
    Warning,
    /// Almost certainly a bug.
    Error,
}

impl Severity {
    /// The lowercase name (`"error"`, `"warning"`, `"info"`), as written in rule files and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One embedded test case of a rule: a snippet and how many findings the rule must raise on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleTest {
    /// The source code to check.
    pub code: String,
    /// How many findings the rule must raise on `code`.
    pub expect: usize,
    /// The languages to run the case in; all of the rule's languages when the file names none.
    pub languages: Vec<Language>,
}

/// A loaded rule, its query compiled for each of its languages. Cheap to clone.
#[derive(Clone)]
pub struct Rule {
    pub(crate) id: String,
    pub(crate) languages: Vec<Language>,
    pub(crate) severity: Severity,
    pub(crate) confidence: f32,
    pub(crate) enabled_by_default: bool,
    pub(crate) skip_tests: bool,
    pub(crate) message: String,
    pub(crate) rationale: String,
    pub(crate) fix: Option<String>,
    pub(crate) tests: Vec<RuleTest>,
    pub(crate) origin: String,
    pub(crate) checks: Arc<[Check]>,
    pub(crate) queries: Arc<QuerySet>,
}

/// A rule's query text and its compiled form per language. Built-in rules compile a language's
/// query the first time a file of that language is reviewed (the JavaScript-family grammars are
/// slow to compile queries for); rules loaded with [`Rule::from_toml`] are compiled up front, so
/// that errors surface at load time.
pub(crate) struct QuerySet {
    text: String,
    first_line: usize,
    slots: Vec<(Language, OnceLock<Option<LangQuery>>)>,
}

impl QuerySet {
    fn get(&self, language: Language, rule: &str) -> Option<&LangQuery> {
        let (_, slot) = self.slots.iter().find(|(l, _)| *l == language)?;
        slot.get_or_init(|| match compile_query(language, &self.text, self.first_line) {
            Ok(q) => Some(q),
            Err((line, message)) => {
                tracing::error!(
                    "review: rule {rule} does not run on {}: line {line}: {message}",
                    language.name()
                );
                None
            }
        })
        .as_ref()
    }
}

/// A rule's query compiled for one language, with what each pattern overrides.
pub(crate) struct LangQuery {
    pub(crate) language: Language,
    pub(crate) query: Query,
    /// The index of the `@finding` capture.
    pub(crate) finding: u32,
    /// Per pattern: a `(#set! fix "…")` that replaces the rule's `fix`.
    pub(crate) pattern_fix: Vec<Option<String>>,
    /// Per pattern: a `(#set! message "…")` that replaces the rule's `message`.
    pub(crate) pattern_message: Vec<Option<String>>,
}

impl Rule {
    /// The rule's id, `<language>/<name>` (for example `python/mutable-default-arg`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The languages the rule runs on.
    pub fn languages(&self) -> &[Language] {
        &self.languages
    }

    /// The severity of its findings (after any override from the configuration).
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// How sure the rule is that a finding is a real bug, from 0 to 1.
    pub fn confidence(&self) -> f32 {
        self.confidence
    }

    /// Whether the rule runs when the configuration does not mention it.
    pub fn enabled_by_default(&self) -> bool {
        self.enabled_by_default
    }

    /// Whether the rule skips test files (see [`is_test_path`](super::is_test_path)), because tests
    /// write its pattern on purpose (comparing a value with itself to test `__eq__`…).
    pub fn skips_tests(&self) -> bool {
        self.skip_tests
    }

    /// The message template; `{name}` stands for the text of capture `name`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Why a finding is a bug, in a sentence or two.
    pub fn rationale(&self) -> &str {
        &self.rationale
    }

    /// The replacement template for the `@finding` range, when the rule offers a fix.
    pub fn fix(&self) -> Option<&str> {
        self.fix.as_deref()
    }

    /// The rule's embedded test cases.
    pub fn tests(&self) -> &[RuleTest] {
        &self.tests
    }

    /// Where the rule was loaded from: a path, or `builtin:<lang>/<file>.toml`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the rule runs on `language`.
    pub fn applies_to(&self, language: Language) -> bool {
        self.languages.contains(&language)
    }

    pub(crate) fn query_for(&self, language: Language) -> Option<&LangQuery> {
        self.queries.get(language, &self.id)
    }

    /// Parses and compiles a rule from the text of a rule file; `origin` names the file in errors.
    /// The query is compiled for every language and checked against the templates and checks.
    pub fn from_toml(origin: &str, text: &str) -> Result<Rule> {
        Rule::parse(origin, text, true)
    }

    /// Parses a rule whose query is known to be good (a built-in one, checked by the tests) and
    /// leaves compiling it for each language to its first use.
    pub(crate) fn from_toml_lazy(origin: &str, text: &str) -> Result<Rule> {
        Rule::parse(origin, text, false)
    }

    fn parse(origin: &str, text: &str, eager: bool) -> Result<Rule> {
        let err = |span: Option<Range<usize>>, message: String| ReviewError::Rule {
            origin: origin.to_string(),
            line: span.map_or(1, |s| line_of(text, s.start)),
            message,
        };
        let file: RuleFile =
            toml::from_str(text).map_err(|e| err(e.span(), e.message().trim_end().to_string()))?;

        let id = file.id.get_ref().clone();
        if !valid_id(&id) {
            return Err(err(
                Some(file.id.span()),
                format!(
                    "rule id `{id}` must look like `<language>/<name>`: lowercase letters, digits and `-`"
                ),
            ));
        }
        let mut languages = Vec::new();
        for name in file.languages.get_ref() {
            let Some(lang) = language_from_name(name) else {
                return Err(err(Some(file.languages.span()), unknown_language(name)));
            };
            if !languages.contains(&lang) {
                languages.push(lang);
            }
        }
        if languages.is_empty() {
            return Err(err(Some(file.languages.span()), "`languages` is empty".into()));
        }
        let confidence = *file.confidence.get_ref();
        if !(0.0..=1.0).contains(&confidence) {
            return Err(err(
                Some(file.confidence.span()),
                format!("confidence {confidence} is outside 0..=1"),
            ));
        }

        let mut checks = Vec::new();
        let check_span = file.check.as_ref().map(|c| c.span());
        for spec in file.check.map(|c| c.into_inner().into_vec()).unwrap_or_default() {
            checks.push(Check::parse(&spec).map_err(|m| err(check_span.clone(), m))?);
        }

        let query_text = file.query.get_ref();
        let query_line = query_first_line(text, file.query.span());
        let mut queries = Vec::new();
        for &language in languages.iter().filter(|_| eager) {
            let q =
                compile_query(language, query_text, query_line).map_err(|(line, message)| {
                    ReviewError::Rule { origin: origin.to_string(), line, message }
                })?;
            queries.push(q);
        }

        // Every name a template or a check uses must be a capture of the query or provided by a check.
        let captures: &[&str] =
            queries.first().map_or(&[], |q: &LangQuery| q.query.capture_names());
        let mut names: Vec<&str> = captures.to_vec();
        names.extend(checks.iter().flat_map(|c| c.provides().iter().copied()));
        for check in checks.iter().filter(|_| eager) {
            for capture in check.captures() {
                if !captures.contains(&capture) {
                    return Err(err(
                        check_span.clone(),
                        format!(
                            "check `{check}` names capture `@{capture}`, which the query does not have"
                        ),
                    ));
                }
            }
        }
        let check_template = |what: &str, t: &str, span: Option<Range<usize>>| -> Result<()> {
            for name in template::names(t).map_err(|m| err(span.clone(), format!("{what}: {m}")))? {
                if eager && !names.contains(&name) {
                    return Err(err(
                        span.clone(),
                        format!("{what} uses `{{{name}}}`, but there is no capture `@{name}`"),
                    ));
                }
            }
            Ok(())
        };
        check_template("message", file.message.get_ref(), Some(file.message.span()))?;
        if let Some(fix) = &file.fix {
            check_template("fix", fix.get_ref(), Some(fix.span()))?;
        }
        for q in &queries {
            for t in q.pattern_fix.iter().chain(&q.pattern_message).flatten() {
                check_template("a `#set!` template", t, Some(file.query.span()))?;
            }
        }

        let mut tests = Vec::new();
        for case in file.tests {
            let mut langs = Vec::new();
            for name in &case.languages {
                match language_from_name(name) {
                    Some(l) if languages.contains(&l) => langs.push(l),
                    Some(_) => {
                        return Err(err(
                            None,
                            format!(
                                "test case language `{name}` is not one of the rule's languages"
                            ),
                        ));
                    }
                    None => return Err(err(None, unknown_language(name))),
                }
            }
            if langs.is_empty() {
                langs = languages.clone();
            }
            tests.push(RuleTest { code: case.code, expect: case.expect, languages: langs });
        }

        let slots = languages
            .iter()
            .map(|&language| {
                let slot = OnceLock::new();
                if let Some(i) = queries.iter().position(|q| q.language == language) {
                    let _ = slot.set(Some(queries.swap_remove(i)));
                }
                (language, slot)
            })
            .collect();
        let queries =
            Arc::new(QuerySet { text: query_text.clone(), first_line: query_line, slots });
        Ok(Rule {
            id,
            languages,
            severity: file.severity,
            confidence,
            enabled_by_default: file.enabled,
            skip_tests: file.skip_tests,
            message: file.message.into_inner(),
            rationale: file.rationale.trim().to_string(),
            fix: file.fix.map(|f| f.into_inner()),
            tests,
            origin: origin.to_string(),
            checks: checks.into(),
            queries,
        })
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("id", &self.id)
            .field("languages", &self.languages)
            .field("severity", &self.severity)
            .field("confidence", &self.confidence)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// The language whose [`Language::name`] is `name`.
pub fn language_from_name(name: &str) -> Option<Language> {
    Language::ALL.into_iter().find(|l| l.name() == name)
}

fn unknown_language(name: &str) -> String {
    let known: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
    format!("unknown language `{name}`; known: {}", known.join(", "))
}

fn valid_id(id: &str) -> bool {
    let mut parts = id.split('/');
    let ok_part = |p: &str| {
        !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None) if ok_part(a) && ok_part(b))
}

/// 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The line of the rule file on which row 0 of the query text lies, from the span of the TOML
/// string (quotes included): a multi-line string drops a newline right after its opening quotes.
fn query_first_line(text: &str, span: Range<usize>) -> usize {
    let raw = &text[span.start.min(text.len())..];
    let mut start = span.start;
    if raw.starts_with("'''") || raw.starts_with("\"\"\"") {
        start += 3;
        let rest = &raw[3..];
        if rest.starts_with('\n') {
            start += 1;
        } else if rest.starts_with("\r\n") {
            start += 2;
        }
    } else {
        start += 1;
    }
    line_of(text, start)
}

/// The predicates tree-sitter's query cursor evaluates by itself.
const TEXT_PREDICATES: &str = "#eq?, #not-eq?, #any-eq?, #any-not-eq?, #match?, #not-match?, \
                               #any-match?, #any-not-match?, #any-of?, #not-any-of?";

/// Compiles `text` for `language`; on error, the 1-based line in the rule file and a message.
fn compile_query(
    language: Language,
    text: &str,
    first_line: usize,
) -> std::result::Result<LangQuery, (usize, String)> {
    let query = Query::new(&language.grammar(), text).map_err(|e| {
        (
            first_line + e.row,
            format!(
                "query does not compile for {} ({:?} error at column {}): {}",
                language.name(),
                e.kind,
                e.column + 1,
                e.message.lines().next().unwrap_or("").trim()
            ),
        )
    })?;
    let Some(finding) = query.capture_index_for_name("finding") else {
        return Err((
            first_line,
            "query has no `@finding` capture; it marks what a finding reports".into(),
        ));
    };
    let mut pattern_fix = Vec::new();
    let mut pattern_message = Vec::new();
    let count = query.pattern_count();
    for i in 0..count {
        let start = query.start_byte_for_pattern(i);
        let end = if i + 1 < count { query.start_byte_for_pattern(i + 1) } else { text.len() };
        let line = first_line + text[..start].matches('\n').count();
        if !text[start..end].contains("@finding") {
            return Err((
                line,
                "this pattern has no `@finding` capture (predicates go inside the pattern's \
                 parentheses: `((node) @finding (#eq? @finding \"x\"))`)"
                    .into(),
            ));
        }
        if let Some(p) = query.general_predicates(i).first() {
            return Err((
                line,
                format!(
                    "unknown predicate `#{}`; the engine evaluates {TEXT_PREDICATES}, and Rust checks go in `check =`",
                    p.operator
                ),
            ));
        }
        if !query.property_predicates(i).is_empty() {
            return Err((line, "`#is?` and `#is-not?` are not evaluated; use `check =`".into()));
        }
        let (mut fix, mut message) = (None, None);
        for setting in query.property_settings(i) {
            let value = setting.value.as_deref().map(str::to_string);
            match &*setting.key {
                "fix" => fix = value,
                "message" => message = value,
                other => {
                    return Err((
                        line,
                        format!(
                            "`#set! {other}` is not understood; only `fix` and `message` can be set"
                        ),
                    ));
                }
            }
        }
        pattern_fix.push(fix);
        pattern_message.push(message);
    }
    Ok(LangQuery { language, query, finding, pattern_fix, pattern_message })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: toml::Spanned<String>,
    languages: toml::Spanned<Vec<String>>,
    severity: Severity,
    confidence: toml::Spanned<f32>,
    #[serde(default = "default_enabled")]
    enabled: bool,
    #[serde(default)]
    skip_tests: bool,
    message: toml::Spanned<String>,
    rationale: String,
    query: toml::Spanned<String>,
    check: Option<toml::Spanned<OneOrMany>>,
    fix: Option<toml::Spanned<String>>,
    #[serde(default)]
    tests: Vec<TestFile>,
}

fn default_enabled() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFile {
    code: String,
    expect: usize,
    #[serde(default)]
    languages: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
id = "python/demo"
languages = ["python"]
severity = "warning"
confidence = 0.9
message = "compares {left} with itself"
rationale = "Always true."
query = '''
((comparison_operator
  (identifier) @left
  (identifier) @right) @finding
 (#eq? @left @right))
'''

[[tests]]
code = "x == x"
expect = 1
"#;

    fn error_of(text: &str) -> String {
        Rule::from_toml("rules/demo.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_good_rule_loads() {
        let rule = Rule::from_toml("x", GOOD).unwrap();
        assert_eq!(rule.id(), "python/demo");
        assert_eq!(rule.severity(), Severity::Warning);
        assert_eq!(rule.tests().len(), 1);
        assert_eq!(rule.tests()[0].languages, vec![Language::Python]);
        assert!(rule.enabled_by_default());
    }

    #[test]
    fn a_query_error_names_file_and_line() {
        let bad = GOOD.replace("(identifier) @right)", "(no_such_node) @right)");
        let msg = error_of(&bad);
        // `(no_such_node)` is on line 11 of the file (line 1 is the empty line after `r#"`).
        assert!(msg.starts_with("rules/demo.toml:11: query does not compile for python"), "{msg}");
    }

    #[test]
    fn toml_errors_name_the_line() {
        let msg = error_of(&GOOD.replace("severity = \"warning\"", "severity = \"fatal\""));
        assert!(msg.starts_with("rules/demo.toml:4:"), "{msg}");
        let msg = error_of(&GOOD.replace("confidence = 0.9", "confidence = 0.9\ncolour = 1"));
        assert!(msg.contains("colour"), "{msg}");
    }

    #[test]
    fn templates_and_checks_must_name_captures() {
        let msg = error_of(&GOOD.replace("{left} with", "{lft} with"));
        assert!(msg.contains("`{lft}`") && msg.starts_with("rules/demo.toml:6:"), "{msg}");
        let with_check = GOOD.replace("query =", "check = \"mentions:left,nope\"\nquery =");
        assert!(error_of(&with_check).contains("`@nope`"));
        let unknown = GOOD.replace("query =", "check = \"frobnicate:left\"\nquery =");
        assert!(error_of(&unknown).contains("unknown check"));
    }

    #[test]
    fn unknown_predicates_and_missing_finding_are_rejected() {
        let msg = error_of(&GOOD.replace("#eq? @left @right", "#same? @left @right"));
        assert!(msg.contains("unknown predicate `#same?`"), "{msg}");
        let msg = error_of(&GOOD.replace(") @finding", ")"));
        assert!(msg.contains("`@finding`"), "{msg}");
        // A predicate outside the pattern's parentheses is a pattern of its own.
        let msg = error_of(&GOOD.replace(") @finding\n (#eq?", ") @finding)\n((#eq?"));
        assert!(msg.contains("predicates go inside"), "{msg}");
        let msg = error_of(&GOOD.replace("#eq? @left @right", "#set! colour \"red\""));
        assert!(msg.contains("`#set! colour`"), "{msg}");
    }

    #[test]
    fn ids_and_languages_are_validated() {
        assert!(error_of(&GOOD.replace("python/demo", "Demo")).contains("rule id"));
        assert!(
            error_of(&GOOD.replace("[\"python\"]", "[\"cobol\"]"))
                .contains("unknown language `cobol`")
        );
        assert!(error_of(&GOOD.replace("0.9", "1.5")).contains("outside 0..=1"));
    }
}
