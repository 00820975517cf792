//! `sift review` on real git repositories: only the lines a change added, every source of a
//! change, every format, exit codes and messages.

use std::path::Path;
use std::process::{Output, Stdio};

use sift_tests::{found, git, json, sift, stderr, stdout, write};

/// A file with a pre-existing bug (`is` with a literal, line 2) that changes must not report.
const BASE: &str = "def old(x):\n    if x is \"a\":\n        return 1\n    return 0\n";

/// A new function with a mutable default argument (a warning) on line 6.
const ADDED_WARNING: &str = "\ndef f(x=[]):\n    x.append(1)\n    return x\n";

/// A new `is` comparison with a literal (an error, with a fix).
const ADDED_ERROR: &str = "\ndef g(y):\n    return y is 1\n";

fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

/// A repository whose one commit holds `app.py` = [`BASE`].
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    write(dir.path(), "app.py", BASE);
    commit_all(dir.path(), "base");
    dir
}

fn review(root: &Path, args: &[&str]) -> Output {
    sift().arg("review").arg("--path").arg(root).args(args).output().expect("sift runs")
}

fn mutable_default(path: &str, line: u64) -> (String, u64, String) {
    (path.into(), line, "python/mutable-default-arg".into())
}

fn is_literal(path: &str, line: u64) -> (String, u64, String) {
    (path.into(), line, "python/is-literal".into())
}

#[test]
fn only_the_added_lines_are_reported() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}"));
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
    let finding = &json(&out)["findings"][0];
    assert_eq!(finding["severity"], "warning");
    assert_eq!(finding["end_line"], 6);
    assert!(finding["confidence"].is_number() && finding["rationale"].is_string());
    assert!(finding["fix"].is_null());

    // An untracked file is new: all of its lines count.
    write(dir.path(), "new.py", ADDED_ERROR);
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6), is_literal("new.py", 3)]);
    let fix = &json(&out)["findings"][1]["fix"];
    assert_eq!(fix["start_line"], 3);
    assert_eq!(fix["replacement"], "    return y == 1");
}

#[test]
fn fail_on_sets_the_exit_status() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}"));
    let code = |args: &[&str]| review(dir.path(), args).status.code();
    assert_eq!(code(&[]), Some(0));
    assert_eq!(code(&["--fail-on", "error"]), Some(0));
    assert_eq!(code(&["--fail-on", "warning"]), Some(1));
    assert_eq!(code(&["--fail-on", "never"]), Some(0));
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    assert_eq!(code(&[]), Some(1));
    assert_eq!(code(&["--fail-on", "never"]), Some(0));
    assert_eq!(code(&["--fail-on", "sometimes"]), Some(2));
    // No change, nothing to say.
    let clean = repo();
    assert_eq!(review(clean.path(), &["--fail-on", "warning"]).status.code(), Some(0));
}

#[test]
fn max_findings_keeps_the_most_severe() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    let out = review(dir.path(), &["--format", "json", "--max-findings", "1"]);
    assert_eq!(found(&out), vec![is_literal("app.py", 11)]);
    assert_eq!(json(&out)["total"], 2);
    write(dir.path(), ".sift/review.toml", "max_findings = 1\n");
    assert_eq!(found(&review(dir.path(), &["--format", "json"])).len(), 1);
    write(dir.path(), ".sift/review.toml", "[rules]\ndisable = [\"python/is-literal\"]\n");
    assert_eq!(
        found(&review(dir.path(), &["--format", "json"])),
        vec![mutable_default("app.py", 6)]
    );
}

#[test]
fn staged_reviews_the_index() {
    let dir = repo();
    write(dir.path(), "other.py", "x = 1\n");
    commit_all(dir.path(), "other");
    // Staged: an error in app.py. Then the working tree drops it again, and changes other.py.
    write(dir.path(), "app.py", format!("{BASE}{ADDED_ERROR}"));
    git(dir.path(), &["add", "app.py"]);
    write(dir.path(), "app.py", BASE);
    write(dir.path(), "other.py", format!("x = 1\n{ADDED_WARNING}"));
    let out = review(dir.path(), &["--staged", "--format", "json"]);
    assert_eq!(found(&out), vec![is_literal("app.py", 7)]);
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("other.py", 3)]);
}

#[test]
fn base_reviews_everything_since_the_merge_base() {
    let dir = repo();
    let base = git(dir.path(), &["rev-parse", "HEAD"]).trim().to_string();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}"));
    commit_all(dir.path(), "feature");
    assert_eq!(found(&review(dir.path(), &["--format", "json"])), vec![]);
    let out = review(dir.path(), &["--base", &base, "--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
    let out = review(dir.path(), &["--base", "HEAD~1", "--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
}

#[test]
fn renamed_files_count_their_changed_lines_only() {
    let dir = repo();
    let body: String = (0..12).map(|i| format!("v{i} = {i}\n")).collect();
    write(dir.path(), "before.py", format!("{BASE}{body}"));
    commit_all(dir.path(), "more");
    git(dir.path(), &["mv", "before.py", "after.py"]);
    write(dir.path(), "after.py", format!("{BASE}{body}").replace("v3 = 3", "v3 = v is 3"));
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(found(&out), vec![is_literal("after.py", 8)]);
}

#[test]
fn deleted_and_binary_files_are_skipped() {
    let dir = repo();
    write(dir.path(), "gone.py", ADDED_ERROR);
    write(dir.path(), "blob.py", b"x = 1\n\0\x01\x02\n");
    commit_all(dir.path(), "more");
    std::fs::remove_file(dir.path().join("gone.py")).unwrap();
    write(dir.path(), "blob.py", b"x = 1\n\0\x01\x02\ny is 1\n\xff\n");
    write(dir.path(), "image.png", b"\x89PNG\r\n\x1a\n\0\0");
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(found(&out), vec![]);
}

#[test]
fn sarif_has_the_required_shape() {
    let dir = repo();
    // A new file: all of its lines are added.
    write(dir.path(), "src/app.py", ADDED_ERROR);
    let out = review(dir.path(), &["--format", "sarif"]);
    assert_eq!(out.status.code(), Some(1));
    let log = json(&out);
    assert!(log["$schema"].as_str().unwrap().contains("sarif"));
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "sift");
    assert!(driver["informationUri"].is_string());
    let rule = &driver["rules"][0];
    assert_eq!(rule["id"], "python/is-literal");
    assert!(rule["shortDescription"]["text"].is_string());
    assert!(rule["fullDescription"]["text"].is_string());
    assert_eq!(rule["defaultConfiguration"]["level"], "error");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let result = &results[0];
    assert_eq!(result["ruleId"], "python/is-literal");
    assert_eq!(result["level"], "error");
    assert!(result["message"]["text"].is_string());
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/app.py");
    assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    for key in ["startLine", "endLine", "startColumn", "endColumn"] {
        assert!(location["region"][key].as_u64().is_some_and(|n| n >= 1), "{key}");
    }
    assert_eq!(location["region"]["startLine"], 3);
    assert!(result["partialFingerprints"]["sift/v1"].is_string());
    let replacement = &result["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(replacement["deletedRegion"]["startLine"], 3);
    assert_eq!(replacement["insertedContent"]["text"], "    return y == 1");
}

#[test]
fn github_is_a_review_body_with_suggestions() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    let out = review(dir.path(), &["--format", "github"]);
    let body = json(&out);
    assert_eq!(body["event"], "COMMENT");
    assert!(body["body"].as_str().unwrap().contains("2 findings"));
    let comments = body["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 2);
    for c in comments {
        assert_eq!(c["path"], "app.py");
        assert_eq!(c["side"], "RIGHT");
        assert!(c["line"].is_u64() && c.get("start_line").is_none());
    }
    assert_eq!(comments[0]["line"], 6);
    assert!(!comments[0]["body"].as_str().unwrap().contains("suggestion"));
    assert_eq!(comments[1]["line"], 11);
    let text = comments[1]["body"].as_str().unwrap();
    assert!(text.contains("python/is-literal"), "{text}");
    assert!(text.contains("```suggestion\n    return y == 1\n```"), "{text}");
}

#[test]
fn markdown_and_text_summaries() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    let md = stdout(&review(dir.path(), &["--format", "markdown"]));
    assert!(md.contains("2 findings (1 error, 1 warning)"), "{md}");
    assert!(md.contains("`app.py:11`") && md.contains("`app.py:6`"), "{md}");
    let out = review(dir.path(), &[]);
    let text = stdout(&out);
    assert!(!text.contains('\x1b'), "colour in a pipe: {text:?}");
    assert!(text.contains("app.py:6:9: warning [python/mutable-default-arg] "), "{text}");
    assert!(text.contains("app.py:11:12: error [python/is-literal] "), "{text}");
    assert!(text.contains("\n    "), "the rationale is indented: {text}");
    let clean = repo();
    let md = stdout(&review(clean.path(), &["--format", "markdown"]));
    assert!(md.contains("No findings"), "{md}");
}

#[test]
fn bad_input_is_one_line_and_status_1() {
    let plain = tempfile::tempdir().unwrap();
    let out = review(plain.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("error: not a git repository"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let dir = repo();
    let out = review(dir.path(), &["--base", "no-such-branch"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.trim_end(), "error: unknown revision `no-such-branch`");

    let out = review(dir.path(), &["--diff", "/no/such/file.diff"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: cannot read /no/such/file.diff"), "{}", stderr(&out));
    write(dir.path(), "notes.txt", "just some words\n");
    let notes = dir.path().join("notes.txt");
    let out = review(dir.path(), &["--diff", notes.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a unified diff"), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);

    assert_eq!(review(dir.path(), &["--staged", "--base", "HEAD"]).status.code(), Some(2));
}

#[test]
fn diff_from_stdin() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}"));
    let diff = git(dir.path(), &["diff", "HEAD"]);
    let mut child = sift()
        .arg("review")
        .arg("--path")
        .arg(dir.path())
        .args(["--diff", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sift runs");
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(diff.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
}

/// The fingerprint of the finding of `rule` in a JSON report.
fn fingerprint_of(out: &Output, rule: &str) -> String {
    json(out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding: {}", stdout(out)))["fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

fn feedback(root: &Path, args: &[&str]) -> Output {
    sift().arg("feedback").args(args).arg("--path").arg(root).output().expect("sift runs")
}

#[test]
fn dismissed_findings_stay_dismissed_for_that_code() {
    let dir = repo();
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6), is_literal("app.py", 11)]);
    let fp = fingerprint_of(&out, "python/is-literal");
    // The text report shows the fingerprint to dismiss.
    assert!(stdout(&review(dir.path(), &[])).contains(&format!("fingerprint {fp}")));

    let out = feedback(dir.path(), &["dismiss", &fp, "--reason", "y is an enum member"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("python/is-literal in app.py"), "{}", stdout(&out));
    let record =
        std::fs::read_to_string(dir.path().join(".sift/feedback/dismissed.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(record.trim()).unwrap();
    assert_eq!(record["kind"], "dismiss");
    assert_eq!(record["fingerprint"], fp.as_str());
    assert_eq!(record["rule"], "python/is-literal");
    assert_eq!(record["path"], "app.py");
    assert_eq!(record["reason"], "y is an enum member");
    assert!(record["time"].as_str().unwrap().ends_with('Z'), "{record}");

    // Every format leaves it out and says so; the exit status no longer fails on it.
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
    assert_eq!(json(&out)["suppressed"], 1);
    let text = stdout(&review(dir.path(), &[]));
    assert!(text.contains("1 suppressed by dismissals"), "{text}");
    let md = stdout(&review(dir.path(), &["--format", "markdown"]));
    assert!(md.contains("1 suppressed by dismissals"), "{md}");
    let sarif = json(&review(dir.path(), &["--format", "sarif"]));
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    let github = json(&review(dir.path(), &["--format", "github"]));
    assert_eq!(github["comments"].as_array().unwrap().len(), 1);

    // The same code moved down the file, by a line or by 300 lines of unrelated edits, is
    // still the dismissed finding…
    write(dir.path(), "app.py", format!("{BASE}\nz = 0\n{ADDED_WARNING}{ADDED_ERROR}"));
    assert_eq!(found(&review(dir.path(), &["--format", "json"])).len(), 1);
    let unrelated: String = (0..300).map(|n| format!("v{n} = {n}\n")).collect();
    write(dir.path(), "app.py", format!("{BASE}{unrelated}{ADDED_WARNING}{ADDED_ERROR}"));
    let moved = review(dir.path(), &["--format", "json"]);
    assert_eq!(found(&moved), vec![mutable_default("app.py", 306)]);
    assert_eq!(json(&moved)["suppressed"], 1);
    // …but other code is reviewed afresh.
    write(dir.path(), "app.py", format!("{BASE}{ADDED_ERROR}").replace("y is 1", "y is 2"));
    assert_eq!(found(&review(dir.path(), &["--format", "json"])), vec![is_literal("app.py", 7)]);

    let list = feedback(dir.path(), &["list"]);
    assert!(stdout(&list).contains(&fp) && stdout(&list).contains("y is an enum member"));
    assert!(stdout(&list).contains("1 dismissed finding"), "{}", stdout(&list));
    let forgot = feedback(dir.path(), &["forget", &fp]);
    assert_eq!(forgot.status.code(), Some(0), "{}", stderr(&forgot));
    write(dir.path(), "app.py", format!("{BASE}{ADDED_ERROR}"));
    assert_eq!(found(&review(dir.path(), &["--format", "json"])), vec![is_literal("app.py", 7)]);
    assert!(stdout(&feedback(dir.path(), &["list"])).contains("0 dismissed findings"));

    // Unknown fingerprints are errors that say what to do.
    let out = feedback(dir.path(), &["dismiss", "0000000000000000"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sift review"), "{}", stderr(&out));
    let out = feedback(dir.path(), &["forget", "0000000000000000"]);
    assert_eq!(out.status.code(), Some(1));
}

/// The official SARIF 2.1.0 schema (see `tests/data/sarif/PROVENANCE.md`).
fn sarif_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sarif/sarif-schema-2.1.0.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

fn assert_valid_sarif(validator: &jsonschema::Validator, log: &serde_json::Value) {
    let errors: Vec<String> = validator.iter_errors(log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0: {errors:#?}\n{log:#}");
}

#[test]
fn sarif_validates_against_the_official_schema_and_suits_code_scanning() {
    let validator = sarif_validator();
    // The schema check has teeth: a log missing what SARIF requires is rejected.
    let broken = serde_json::json!({"version": "2.1.0", "runs": [{"results": []}]});
    assert!(!validator.is_valid(&broken), "a run without a tool must not validate");

    let dir = repo();
    // Several rules and files, fixes, a multi-line finding, odd characters in a path.
    write(dir.path(), "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    write(dir.path(), "src/café x.py", "def h(v):\n    é = v is 'a'\n    return é\n");
    write(
        dir.path(),
        "web/dup.js",
        "const cfg = {\n  retries: 1,\n  timeout: 2,\n  retries: 3,\n};\nif (x === x) {}\n",
    );
    let out = review(dir.path(), &["--format", "sarif"]);
    let log = json(&out);
    assert_valid_sarif(&validator, &log);

    // What GitHub code scanning reads.
    let run = &log["runs"][0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run["results"].as_array().unwrap();
    assert!(results.len() >= 4, "{log:#}");
    let rule_ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut seen_rules = std::collections::BTreeSet::new();
    for result in results {
        let rule_id = result["ruleId"].as_str().expect("ruleId");
        seen_rules.insert(rule_id);
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rule_ids[index], rule_id, "ruleIndex points at its rule");
        assert!(["error", "warning", "note"].contains(&result["level"].as_str().unwrap()));
        assert!(!result["message"]["text"].as_str().unwrap().is_empty());
        let fingerprint = result["partialFingerprints"]["sift/v1"].as_str().unwrap();
        assert_eq!(fingerprint.len(), 16);
        let location = &result["locations"][0]["physicalLocation"];
        let uri = location["artifactLocation"]["uri"].as_str().unwrap();
        assert!(!uri.starts_with('/') && !uri.contains(' '), "a relative URI reference: {uri}");
        let region = &location["region"];
        let (start, end) = (region["startLine"].as_u64().unwrap(), region["endLine"].as_u64());
        assert!(start >= 1 && end.unwrap() >= start);
    }
    // Every rule listed has results, and every result's rule is listed.
    assert_eq!(seen_rules.into_iter().collect::<Vec<_>>(), rule_ids);
    let uris: Vec<&str> = results
        .iter()
        .map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"src/caf%C3%A9%20x.py"), "{uris:?}");
    assert!(uris.contains(&"web/dup.js"), "{uris:?}");

    // No findings is still a valid log, with the tool and an empty result list.
    let clean = repo();
    let log = json(&review(clean.path(), &["--format", "sarif"]));
    assert_valid_sarif(&validator, &log);
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
}

#[test]
fn a_line_a_past_fix_removed_is_flagged_with_the_fix_cited() {
    let dir = repo();
    let page = "def page(first, size):\n    last = first + size + 1\n    return last\n";
    write(dir.path(), "page.py", page);
    commit_all(dir.path(), "Add pagination");
    write(dir.path(), "page.py", page.replace(" + 1", ""));
    commit_all(dir.path(), "Fix off-by-one in the last page");
    let fix = git(dir.path(), &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::create_dir_all(dir.path().join(".sift")).unwrap();

    // A change elsewhere brings the removed line back (indented differently).
    write(
        dir.path(),
        "other.py",
        "def tail(first, size):\n  last  =  first + size + 1\n  return last\n",
    );
    let out = review(dir.path(), &["--format", "json"]);
    assert_eq!(found(&out), vec![("other.py".into(), 2, "history/reintroduced-fix".into())]);
    let message = json(&out)["findings"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains(&fix[..10]) && message.contains("off-by-one"), "{message}");
    assert!(message.contains("page.py"), "{message}");
    // Mined once per HEAD, cached where git does not see it.
    let head_cache = dir.path().join(format!(".sift/cache/history-{fix}.json"));
    assert!(head_cache.is_file());
    assert!(!git(dir.path(), &["status", "--porcelain"]).contains("cache"));
    // Lines the fix did not remove, or that only a non-fix commit removed, are not flagged.
    write(dir.path(), "other.py", "def tail(first, size):\n    return first + size - 1\n");
    assert_eq!(found(&review(dir.path(), &["--format", "json"])), vec![]);
    // It is a rule like the others: review.toml turns it off.
    write(dir.path(), "other.py", "def tail(first, size):\n    last = first + size + 1\n");
    assert_eq!(found(&review(dir.path(), &["--format", "json"])).len(), 1);
    write(dir.path(), ".sift/review.toml", "[rules]\ndisable = [\"history/reintroduced-fix\"]\n");
    assert_eq!(found(&review(dir.path(), &["--format", "json"])), vec![]);
}

/// The review's settings a branch may try to change: a configuration that turns the rule off, a
/// project rule that replaces it with one that never fires, and a dismissal of its finding.
fn silence_mutable_defaults(root: &Path, fingerprint: &str) {
    write(root, ".sift/review.toml", "[rules]\ndisable = [\"python/mutable-default-arg\"]\n");
    write(
        root,
        ".sift/rules/mutable-default-arg.toml",
        "id = \"python/mutable-default-arg\"\nlanguages = [\"python\"]\nseverity = \"info\"\nconfidence = 0.5\nmessage = \"m\"\nrationale = \"r\"\nquery = '((identifier) @finding (#eq? @finding \"never_used_anywhere\"))'\n",
    );
    write(
        root,
        ".sift/feedback/dismissed.jsonl",
        format!(
            "{{\"kind\":\"dismiss\",\"fingerprint\":\"{fingerprint}\",\"rule\":\"python/mutable-default-arg\",\"path\":\"app.py\",\"time\":\"2025-01-31T12:00:00Z\"}}\n"
        ),
    );
}

#[test]
fn a_branch_cannot_silence_its_own_review() {
    let dir = repo();
    let root = dir.path();
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}"));
    let fp = fingerprint_of(&review(root, &["--format", "json"]), "python/mutable-default-arg");
    silence_mutable_defaults(root, &fp);
    commit_all(root, "feature, and a quieter review");

    // Reviewed as CI reviews a pull request: the settings are the base's, and the branch's
    // edits to them are findings of their own.
    let out = review(root, &["--base", &base, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let changed = |path: &str| (path.to_string(), 1, "sift/review-config-changed".to_string());
    assert_eq!(
        found(&out),
        vec![
            changed(".sift/feedback/dismissed.jsonl"),
            changed(".sift/review.toml"),
            changed(".sift/rules/mutable-default-arg.toml"),
            mutable_default("app.py", 6),
        ]
    );
    let report = json(&out);
    let config_finding = &report["findings"][1];
    assert_eq!(config_finding["severity"], "warning");
    let message = config_finding["message"].as_str().unwrap();
    assert!(message.contains("edits") || message.contains("adds"), "{message}");
    assert!(message.contains("does not apply it") && message.contains(&base[..12]), "{message}");
    assert_eq!(report["suppressed"], 0);
    // The same when the edits are only in the working tree, or only staged.
    git(root, &["reset", "-q", "--soft", &base]);
    assert_eq!(found(&review(root, &["--base", &base, "--format", "json"])).len(), 4);
    git(root, &["reset", "-q", "--mixed", &base]);
    assert_eq!(found(&review(root, &["--base", &base, "--format", "json"])).len(), 4);
    let text = stdout(&review(root, &["--base", &base]));
    assert!(text.contains("[sift/review-config-changed]"), "{text}");

    // The working tree (and the editor) use the working tree's settings, as the person
    // configuring is the one reviewed.
    assert_eq!(found(&review(root, &["--format", "json"])), vec![]);

    // Once merged, the settings hold for the changes after them.
    commit_all(root, "merged");
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}\ndef h(y=[]):\n    y.append(2)\n"));
    let out = review(root, &["--base", "HEAD", "--format", "json"]);
    assert_eq!(found(&out), vec![], "{}", stdout(&out));
}

#[test]
fn a_base_review_reads_rules_and_their_errors_from_the_base_revision() {
    let dir = repo();
    let root = dir.path();
    // The base has a project rule (flags `print`) and a configuration that names it.
    write(
        root,
        ".sift/rules/no-print.toml",
        "id = \"python/no-print\"\nlanguages = [\"python\"]\nseverity = \"warning\"\nconfidence = 0.9\nmessage = \"print\"\nrationale = \"use logging\"\nquery = '((call function: (identifier) @f) @finding (#eq? @f \"print\"))'\n",
    );
    write(root, ".sift/review.toml", "[rules.severity]\n\"python/no-print\" = \"error\"\n");
    commit_all(root, "a project rule");
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "app.py", format!("{BASE}\nprint(1)\n"));
    // The branch breaks both files: its review still runs, on the base's settings.
    write(root, ".sift/review.toml", "[rules]\ndisabel = []\n");
    std::fs::remove_file(root.join(".sift/rules/no-print.toml")).unwrap();
    let out = review(root, &["--base", &base, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "the rule is an error at the base: {}", stderr(&out));
    let changed = |path: &str| (path.to_string(), 1, "sift/review-config-changed".to_string());
    assert_eq!(
        found(&out),
        vec![
            changed(".sift/review.toml"),
            changed(".sift/rules/no-print.toml"),
            ("app.py".into(), 6, "python/no-print".into()),
        ]
    );
    let deleted = &json(&out)["findings"][1]["message"];
    assert!(deleted.as_str().unwrap().contains("deletes"), "{deleted}");
    // The working tree's broken configuration is the working tree review's error.
    let out = review(root, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(".sift/review.toml:2:"), "{}", stderr(&out));

    // A broken configuration at the base is an error that names the revision and the line.
    git(root, &["checkout", "-q", "-f", "feature"]);
    git(root, &["checkout", "-q", &base]);
    git(root, &["checkout", "-q", "-b", "broken"]);
    write(root, ".sift/review.toml", "max_findings = \"many\"\n");
    commit_all(root, "broken config");
    let broken = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    git(root, &["checkout", "-q", "-b", "next"]);
    let out = review(root, &["--base", &broken]);
    assert_eq!(out.status.code(), Some(1));
    let all = stderr(&out);
    // The old file's deprecation note, then the error in one line.
    let (note, err) = all.split_once('\n').unwrap();
    assert!(note.contains(".sift/review.toml: this file is deprecated"), "{all}");
    assert!(err.starts_with(&format!("error: {}:.sift/review.toml:1: ", &broken[..12])), "{all}");
    assert_eq!(err.trim_end().lines().count(), 1, "{all}");
}

#[test]
fn a_dismissal_made_on_a_branch_says_when_a_base_review_applies_it() {
    let dir = repo();
    let root = dir.path();
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}"));
    let out = review(root, &["--base", &base, "--format", "json"]);
    let fp = fingerprint_of(&out, "python/mutable-default-arg");
    let out = feedback(root, &["dismiss", &fp, "--base", &base]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("once it is committed and merged"), "{}", stdout(&out));
    // Not by this review: the dismissal is the change's own.
    let out = review(root, &["--base", &base, "--format", "json"]);
    assert!(found(&out).contains(&mutable_default("app.py", 6)), "{}", stdout(&out));
    assert!(found(&out).contains(&(
        ".sift/feedback/dismissed.jsonl".into(),
        1,
        "sift/review-config-changed".into()
    )));
    // The working tree review applies it at once.
    assert_eq!(found(&review(root, &["--format", "json"])), vec![]);
}

#[test]
fn explain_lists_every_left_out_finding_with_its_dismissal_or_setting_and_revision() {
    let dir = repo();
    let root = dir.path();
    // The team's settings on the base: `is` with literals off, one mutable default dismissed.
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    let fp = fingerprint_of(&review(root, &["--format", "json"]), "python/mutable-default-arg");
    write(root, "app.py", BASE);
    write(root, ".sift/review.toml", "[rules]\ndisable = [\"python/is-literal\"]\n");
    write(
        root,
        ".sift/feedback/dismissed.jsonl",
        format!(
            "{{\"kind\":\"dismiss\",\"fingerprint\":\"{fp}\",\"rule\":\"python/mutable-default-arg\",\"path\":\"app.py\",\"time\":\"2025-01-31T12:00:00Z\",\"reason\":\"a sentinel\"}}\n"
        ),
    );
    commit_all(root, "team settings");
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    let short = &base[..12];
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    commit_all(root, "feature");

    let out = review(root, &["--base", &base, "--explain"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("no findings on the lines this change added; 2 suppressed (1 by dismissals, 1 by the review configuration;"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "review configuration: commit {short}, the merge-base of HEAD and {base}\nsuppressed (2):\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "  app.py:6:9: warning [python/mutable-default-arg] mutable default `[]` for `x`"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "      dismissed ({fp}, 2025-01-31T12:00:00Z: \"a sentinel\") in .sift/feedback/dismissed.jsonl at {short}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[python/is-literal] `is` compares identity with the literal `1`; use `==` to compare values\n      rules.disable = \"python/is-literal\" in .sift/review.toml at {short}\n"
        )),
        "{text}"
    );

    // JSON: the counts always; the list and where the settings came from with --explain.
    let plain = json(&review(root, &["--base", &base, "--format", "json"]));
    assert_eq!(plain["suppressed"], 2);
    assert_eq!(plain["suppressed_by"], serde_json::json!({"dismissals": 1, "config": 1}));
    assert!(plain.get("suppressions").is_none(), "only with --explain: {plain}");
    let explained = json(&review(root, &["--base", &base, "--format", "json", "--explain"]));
    assert_eq!(explained["findings"], plain["findings"]);
    let list = explained["suppressions"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{explained:#}");
    let by_rule =
        |rule: &str| list.iter().find(|s| s["rule"] == rule).unwrap()["suppressed_by"].clone();
    let dismissal = by_rule("python/mutable-default-arg");
    assert_eq!(dismissal["kind"], "dismissal");
    assert_eq!(dismissal["fingerprint"], fp.as_str());
    assert_eq!(dismissal["reason"], "a sentinel");
    assert_eq!(dismissal["file"], ".sift/feedback/dismissed.jsonl");
    assert_eq!(dismissal["revision"], base.as_str());
    let setting = by_rule("python/is-literal");
    assert_eq!(
        (setting["kind"].as_str(), setting["key"].as_str()),
        (Some("config"), Some("rules.disable"))
    );
    assert_eq!(setting["value"], "python/is-literal");
    assert_eq!(
        (setting["file"].as_str(), setting["revision"].as_str()),
        (Some(".sift/review.toml"), Some(base.as_str()))
    );

    // SARIF: left-out findings are results with a SARIF suppression, only with --explain.
    let validator = sarif_validator();
    let sarif = json(&review(root, &["--base", &base, "--format", "sarif", "--explain"]));
    assert_valid_sarif(&validator, &sarif);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["suppressions"][0]["kind"] == "external"), "{sarif:#}");
    let sarif = json(&review(root, &["--base", &base, "--format", "sarif"]));
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));
    let md = stdout(&review(root, &["--base", &base, "--format", "markdown", "--explain"]));
    assert!(md.contains("<details><summary>2 suppressed, 0 re-rated"), "{md}");

    // The working tree's review counts and explains what the working tree's settings silence:
    // here a rule turned off in one file, and another file left out of the review.
    write(
        root,
        ".sift/review.toml",
        "[rules]\ndisable = [\"python/is-literal\"]\n[rules.per_path_disable]\n\"/app.py\" = [\"python/mutable-default-arg\"]\n[paths]\nexclude = [\"vendor\"]\n[rules.severity]\n\"python/mutable-default-arg\" = \"error\"\n",
    );
    write(root, "vendor/lib.py", "def v(a={}):\n    a[1] = 2\n");
    write(root, "other.py", "def o(b=[]):\n    b.append(3)\n");
    let out = review(root, &["--format", "json", "--explain"]);
    assert_eq!(found(&out), vec![("other.py".into(), 1, "python/mutable-default-arg".into())]);
    let report = json(&out);
    assert_eq!(report["configuration"], "the working tree");
    assert_eq!(report["suppressed_by"], serde_json::json!({"dismissals": 0, "config": 1}));
    let setting = &report["suppressions"][0]["suppressed_by"];
    assert_eq!(
        (setting["key"].as_str(), setting["value"].as_str()),
        (Some("paths.exclude"), Some("vendor"))
    );
    assert!(setting["revision"].is_null());
    assert_eq!(report["rerated"][0]["default_severity"], "warning");
    assert_eq!(report["rerated"][0]["key"], "rules.severity.\"python/mutable-default-arg\"");
    let text = stdout(&review(root, &["--explain"]));
    assert!(text.contains("review configuration: the working tree\n"), "{text}");
    assert!(
        text.contains("paths.exclude = \"vendor\" in .sift/review.toml in the working tree"),
        "{text}"
    );
    assert!(text.contains("error instead of warning"), "{text}");
}

#[test]
fn a_branch_cannot_redirect_or_turn_off_the_model_reviewer() {
    let dir = repo();
    let root = dir.path();
    let run = |args: &[&str]| {
        sift()
            .env("XDG_CONFIG_HOME", root.join(".xdg"))
            .arg("review")
            .arg("--path")
            .arg(root)
            .args(args)
            .output()
            .expect("sift runs")
    };
    write(root, ".sift/config.toml", "[index]\nmax_file_size = 100000\n");
    commit_all(root, "index settings");
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}"));
    // The index's settings are the change's business…
    write(root, ".sift/config.toml", "[index]\nmax_file_size = 200000\n");
    let out = run(&["--base", &base, "--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)], "{}", stderr(&out));
    // …the model reviewer's are not: a [model] the base does not have is reported, not used
    // (its endpoint is never contacted).
    write(
        root,
        ".sift/config.toml",
        "[index]\nmax_file_size = 200000\n\n[model]\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let out = run(&["--base", &base, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        found(&out),
        vec![
            (".sift/config.toml".into(), 4, "sift/review-config-changed".into()),
            mutable_default("app.py", 6),
        ]
    );
    let message = json(&out)["findings"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("edits `[model]` in `.sift/config.toml`"), "{message}");
    assert!(stderr(&out).contains("model review skipped"), "{}", stderr(&out));
    // The working tree's review uses it (and says the endpoint failed).
    let out = run(&["--format", "json"]);
    assert!(!stderr(&out).contains("model review skipped"), "{}", stderr(&out));
}

#[test]
fn the_review_rules_are_a_section_of_the_configuration_and_the_old_file_still_works() {
    let dir = repo();
    let root = dir.path();
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}{ADDED_ERROR}"));
    // `[review]` of .sift/config.toml: the old file's tables, one level down.
    write(
        root,
        ".sift/config.toml",
        "[review]\non_save = false\nmax_findings = 5\n\n[review.rules]\ndisable = [\"python/is-literal\"]\n",
    );
    let out = review(root, &["--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)], "{}", stderr(&out));
    assert!(!stderr(&out).contains("deprecated"), "{}", stderr(&out));
    // The layered configuration knows those keys: nothing is listed as ignored.
    let shown = sift().args(["config", "show", "--json", "--path"]).arg(root).output().unwrap();
    assert_eq!(json(&shown)["ignored"], serde_json::json!([]), "{}", stdout(&shown));
    // --explain names the file and the key that left the finding out.
    let text = stdout(&review(root, &["--explain"]));
    assert!(text.contains("rules.disable = \"python/is-literal\" in .sift/config.toml"), "{text}");
    // A bad value names the file, the table and the key.
    write(root, ".sift/config.toml", "[review.rules]\ndisabel = []\n");
    let out = review(root, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(".sift/config.toml [review]") && stderr(&out).contains("disabel")
    );

    // The old file is read while [review] sets no rule, with a note saying where to move it.
    write(root, ".sift/config.toml", "[review]\non_save = false\n");
    write(root, ".sift/review.toml", "[rules]\ndisable = [\"python/mutable-default-arg\"]\n");
    let out = review(root, &["--format", "json"]);
    assert_eq!(found(&out), vec![is_literal("app.py", 11)]);
    let err = stderr(&out);
    assert!(
        err.contains(".sift/review.toml: this file is deprecated")
            && err.contains("[review.rules]"),
        "{err}"
    );
    // Both: the configuration's section wins, and the old file is said to be unread.
    write(root, ".sift/config.toml", "[review.rules]\ndisable = [\"python/is-literal\"]\n");
    let out = review(root, &["--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)]);
    assert!(stderr(&out).contains(".sift/review.toml is not read"), "{}", stderr(&out));
}

#[test]
fn a_branch_cannot_change_its_review_through_the_configuration_section() {
    let dir = repo();
    let root = dir.path();
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "app.py", format!("{BASE}{ADDED_WARNING}"));
    // An index setting is the change's business; a review rule is not.
    write(root, ".sift/config.toml", "[index]\nmax_file_size = \"2 MiB\"\n");
    commit_all(root, "index setting");
    let out = review(root, &["--base", &base, "--format", "json"]);
    assert_eq!(found(&out), vec![mutable_default("app.py", 6)], "{}", stdout(&out));
    write(
        root,
        ".sift/config.toml",
        "[index]\nmax_file_size = \"2 MiB\"\n\n[review.rules]\ndisable = [\"python/mutable-default-arg\"]\n",
    );
    commit_all(root, "and a quieter review");
    let out = review(root, &["--base", &base, "--format", "json"]);
    assert_eq!(
        found(&out),
        vec![
            (".sift/config.toml".to_string(), 4, "sift/review-config-changed".to_string()),
            mutable_default("app.py", 6),
        ],
        "{}",
        stdout(&out)
    );
    let message = json(&out)["findings"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("`[review]` in `.sift/config.toml`"), "{message}");
    // The working tree's own review applies it.
    assert_eq!(found(&review(root, &["--format", "json"])), vec![]);
}

/// `sift feedback learn`: a rule whose findings the repository keeps dismissing is proposed for
/// demotion with its evidence, written to `.sift/learned.toml` only with `--write`; the review
/// then reports it one step lower and `--explain` says why; a `--base` review reads the file
/// from the base revision only; a lapsed entry, or one that would make a rule louder, does
/// nothing.
#[test]
fn rules_the_repository_keeps_dismissing_are_demoted_with_their_evidence() {
    let dir = repo();
    let root = dir.path();
    let sift_in =
        |args: &[&str]| sift().args(args).arg("--path").arg(root).output().expect("sift runs");
    // Five distinct `is` comparisons, each dismissed as noise by someone.
    let added: String = (1..=5).map(|n| format!("\ndef g{n}(y):\n    return y is {n}\n")).collect();
    write(root, "app.py", format!("{BASE}{added}"));
    let out = review(root, &["--format", "json"]);
    let fingerprints: Vec<String> = json(&out)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fingerprint"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fingerprints.len(), 5);
    for (n, fp) in fingerprints.iter().enumerate() {
        let out =
            sift_in(&["feedback", "dismiss", fp, "--reason", "we compare small ints on purpose"]);
        assert!(out.status.success(), "{}", stderr(&out));
        // Four are not enough.
        if n == 3 {
            let out = sift_in(&["feedback", "learn"]);
            assert!(stdout(&out).contains("no demotion proposed"), "{}", stdout(&out));
        }
    }
    let out = sift_in(&["feedback", "learn"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("proposed: python/is-literal → warning (5 findings dismissed between"),
        "{}",
        stdout(&out)
    );
    assert!(!root.join(".sift/learned.toml").exists(), "nothing written without --write");
    let out = sift_in(&["feedback", "learn", "--write"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let learned = std::fs::read_to_string(root.join(".sift/learned.toml")).unwrap();
    assert!(
        learned.contains("rule = \"python/is-literal\"") && learned.contains("to = \"warning\""),
        "{learned}"
    );
    assert!(learned.contains("dismissed = 5"), "{learned}");

    // A new finding of the rule: a warning now, and --explain shows the evidence.
    write(root, "app.py", format!("{BASE}{added}\ndef h(z):\n    return z is 7\n"));
    let out = review(root, &["--format", "json"]);
    assert_eq!(found(&out), vec![is_literal("app.py", 22)]);
    assert_eq!(json(&out)["findings"][0]["severity"], "warning");
    assert_eq!(out.status.code(), Some(0), "no longer an error: --fail-on error passes");
    let out = review(root, &["--explain"]);
    let text = stdout(&out);
    assert!(text.contains("warning instead of error"), "{text}");
    assert!(
        text.contains("demoted (5 findings dismissed between")
            && text.contains(".sift/learned.toml in the working tree"),
        "{text}"
    );

    // A pull request cannot demote its own findings: --base reads the base revision's file.
    std::fs::remove_file(root.join(".sift/learned.toml")).unwrap();
    commit_all(root, "the dismissals and their code");
    git(root, &["branch", "-M", "main"]);
    git(root, &["checkout", "-q", "-b", "pr"]);
    std::fs::write(root.join(".sift/learned.toml"), &learned).unwrap();
    commit_all(root, "the pull request adds a learned file");
    write(
        root,
        "app.py",
        format!("{BASE}{added}\ndef h(z):\n    return z is 7\n\ndef k(w):\n    return w is 8\n"),
    );
    let out = review(root, &["--base", "main", "--format", "json"]);
    let findings = json(&out)["findings"].as_array().unwrap().clone();
    let k = findings
        .iter()
        .find(|f| f["rule"] == "python/is-literal" && f["start_line"] == 25)
        .unwrap();
    assert_eq!(
        k["severity"], "error",
        "the pull request's learned.toml is not applied: {findings:?}"
    );
    assert!(findings.iter().any(|f| f["rule"] == "sift/review-config-changed"), "{findings:?}");

    // A lapsed entry does nothing, and nor does one that would make a rule louder.
    git(root, &["checkout", "-q", "main"]);
    let lapsed = learned.replace(
        &learned.lines().find(|l| l.starts_with("expires")).unwrap().to_string(),
        "expires = \"2020-01-01\"",
    );
    std::fs::write(root.join(".sift/learned.toml"), &lapsed).unwrap();
    let out = review(root, &["--format", "json"]);
    assert_eq!(json(&out)["findings"][0]["severity"], "error", "lapsed");
    write(root, ".sift/config.toml", "[review.rules.severity]\n\"python/is-literal\" = \"info\"\n");
    std::fs::write(root.join(".sift/learned.toml"), &learned).unwrap();
    let out = review(root, &["--format", "json"]);
    assert_eq!(json(&out)["findings"][0]["severity"], "info", "never louder");
    // A learned file that does not parse is an error naming it.
    std::fs::write(root.join(".sift/learned.toml"), "[[demote]]\nrule = 3\n").unwrap();
    let out = review(root, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(".sift/learned.toml"), "{}", stderr(&out));
}
