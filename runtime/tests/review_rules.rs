//! The built-in rule pack against its own test cases and against real code.
//!
//! - Every built-in rule's `[[tests]]` cases pass, in every language the case names.
//! - Every rule has at least two positive and two negative cases.
//! - Real code is a negative corpus: on Django's source (present in `bench/work/` once the
//!   benchmarks have run) the pack must stay under its false-positive budget. Set
//!   `SIFT_REVIEW_CORPUS=dir1:dir2` to scan other trees too, and `SIFT_REVIEW_SHOW=1` to print
//!   every finding (`cargo test -p sift-runtime --test review_rules -- --nocapture`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sift_runtime::indexer::Language;
use sift_runtime::rules::{Finding, Rule, RulePack, check_file, run_rule_tests};

/// Every rule file loads; all errors are listed at once (the built-in pack stops at the first).
#[test]
fn builtin_rule_files_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let mut files = Vec::new();
    walk_ext(&dir, "toml", &mut files);
    assert!(!files.is_empty());
    let started = std::time::Instant::now();
    let errors: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            Rule::from_toml(&f.display().to_string(), &text).err().map(|e| e.to_string())
        })
        .collect();
    eprintln!("{} rule files loaded and compiled in {:.1?}", files.len(), started.elapsed());
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn builtin_rules_pass_their_tests() {
    let pack = RulePack::builtin_all();
    assert!(pack.len() >= 30, "the built-in pack has {} rules", pack.len());
    let failures: Vec<String> =
        pack.rules().iter().flat_map(run_rule_tests).map(|f| f.to_string()).collect();
    assert!(
        failures.is_empty(),
        "{} failing case(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Every fix a built-in rule offers on its own positive cases parses and removes its finding.
#[test]
fn fixes_parse_and_remove_their_findings() {
    let mut checked = 0;
    for rule in RulePack::builtin_all().rules() {
        let pack = RulePack::from_rules(vec![rule.clone()]);
        for case in rule.tests().iter().filter(|t| t.expect > 0) {
            for &language in &case.languages {
                let before = check_file(&pack, "case", language, &case.code, None);
                for finding in &before {
                    let Some(fix) = &finding.fix else { continue };
                    let fixed = fix.apply(&case.code).unwrap();
                    let mut parser = tree_sitter::Parser::new();
                    parser.set_language(&language.grammar()).unwrap();
                    let tree = parser.parse(&fixed, None).unwrap();
                    assert!(
                        !tree.root_node().has_error(),
                        "{}: the fix does not parse:\n{fixed}",
                        rule.id()
                    );
                    let after = check_file(&pack, "case", language, &fixed, None);
                    assert!(
                        after.len() < before.len(),
                        "{}: the fix leaves its finding:\n{fixed}",
                        rule.id()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} fixes checked");
}

#[test]
fn every_rule_has_positive_and_negative_cases() {
    for rule in RulePack::builtin_all().rules() {
        let positive = rule.tests().iter().filter(|t| t.expect > 0).count();
        let negative = rule.tests().iter().filter(|t| t.expect == 0).count();
        assert!(
            positive >= 2 && negative >= 2,
            "{}: {positive} positive and {negative} negative cases",
            rule.id()
        );
    }
}

#[test]
fn every_language_has_rules() {
    let pack = RulePack::builtin();
    for language in [
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::Rust,
    ] {
        let n = pack.rules().iter().filter(|r| r.applies_to(language)).count();
        assert!(n >= 3, "{} has {n} rules", language.name());
    }
}

/// Findings per file on real code, which is assumed to be (nearly) free of the bugs the rules look
/// for: each finding is counted as a false positive unless shown otherwise.
#[test]
fn real_code_stays_quiet() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut corpora: Vec<PathBuf> = vec![root.join("bench/work/django/django")];
    if let Ok(extra) = std::env::var("SIFT_REVIEW_CORPUS") {
        corpora.extend(std::env::split_paths(&extra));
    }
    if !corpora[0].is_dir() {
        // scripts/test.sh prepares it (the Django wheel from PyPI) and sets SIFT_REQUIRE_CORPUS.
        sift_test_support::guard::missing(
            sift_test_support::guard::Need::Corpus,
            &format!("no Django corpus at {}", corpora[0].display()),
            "bash scripts/test.sh fetches the Django 5.1.4 wheel from PyPI",
        );
    }
    let show = std::env::var_os("SIFT_REVIEW_SHOW").is_some();
    let pack = RulePack::builtin();
    for corpus in corpora.iter().filter(|c| c.is_dir()) {
        let started = std::time::Instant::now();
        let mut files = Vec::new();
        walk(corpus, &mut files);
        let mut per_rule: BTreeMap<String, usize> = BTreeMap::new();
        let mut per_language: BTreeMap<&str, usize> = BTreeMap::new();
        let mut all: Vec<Finding> = Vec::new();
        for (path, language) in &files {
            let Ok(source) = std::fs::read_to_string(path) else { continue };
            *per_language.entry(language.name()).or_default() += 1;
            let rel = path.strip_prefix(corpus).unwrap_or(path).to_string_lossy().into_owned();
            for finding in check_file(&pack, &rel, *language, &source, None) {
                *per_rule.entry(finding.rule.clone()).or_default() += 1;
                all.push(finding);
            }
        }
        let files_seen: usize = per_language.values().sum();
        eprintln!(
            "{}: {files_seen} files {per_language:?}, {} findings in {:.1?}",
            corpus.display(),
            all.len(),
            started.elapsed()
        );
        for (rule, n) in &per_rule {
            eprintln!("  {n:5}  {rule}");
        }
        if show {
            for f in &all {
                eprintln!(
                    "{}:{}:{}: {} [{}] {}",
                    f.path, f.start_line, f.start_col, f.severity, f.rule, f.message
                );
            }
        }
        // The budget is 0.1 false findings per clean diff, and a whole file is far more than a
        // diff; Django is clean and linted, so it gets a much tighter bound. Extra corpora are
        // reported, not judged: their findings need a human to tell bugs from false positives.
        if *corpus == corpora[0] {
            let rate = all.len() as f64 / files_seen.max(1) as f64;
            assert!(
                rate < 0.01,
                "{}: {} findings on {files_seen} files",
                corpus.display(),
                all.len()
            );
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Language)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "node_modules" || n == ".git") {
                continue;
            }
            walk(&path, out);
        } else if let Some(language) = Language::from_path(&path) {
            out.push((path, language));
        }
    }
}

/// A tool for rule authors: prints the syntax tree of the file named by `SIFT_REVIEW_DUMP`
/// (language from its extension), with field names, so queries can be written against it.
#[test]
fn dump_syntax_tree() {
    let Some(path) = std::env::var_os("SIFT_REVIEW_DUMP").map(PathBuf::from) else { return };
    let language = Language::from_path(&path).expect("a file with a known extension");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language.grammar()).unwrap();
    let tree = parser.parse(&source, None).unwrap();
    let mut cursor = tree.walk();
    let mut depth = 0;
    loop {
        let node = cursor.node();
        let field = cursor.field_name().map(|f| format!("{f}: ")).unwrap_or_default();
        let kind =
            if node.is_named() { node.kind().to_string() } else { format!("{:?}", node.kind()) };
        let text = if node.child_count() == 0 && node.is_named() {
            format!(" {:?}", &source[node.byte_range()])
        } else {
            String::new()
        };
        eprintln!("{}{field}{kind}{text}", "  ".repeat(depth));
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}

fn walk_ext(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk_ext(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out.sort();
}
