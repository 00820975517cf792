//! `sift automate run` end to end: the real binary on a real git repository, the agent against
//! a scripted model on 127.0.0.1, the suggestions posted to the GitHub stand-in of
//! `tests/tests/github.rs` (`sift_test_support::github`) through Prism and GitHub's OpenAPI
//! description.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use sift_test_support::github::{Api, Prism, StandIn, through, validated};
use sift_test_support::openai::{FakeServer, Reply};
use sift_tests::{git, sift, stderr, stdout, write};

const TOKEN: &str = "ghs_automation_canary_51c2";
const BASE: &str = "def old(x):\n    return x\n";
const FINDING: &str = "\ndef g(y):\n    return y is 1\n";

const JOBS: &str = r#"
[[job]]
name = "fix-findings"
on = "pull_request"
paths = ["*.py"]
task = "Fix the review findings of this pull request:\n{findings}"
# The second check passes only if the job's commands cannot see the token.
checks = ["python3 -m py_compile {files}", "test -z \"${GITHUB_TOKEN:-}\""]

[[job]]
name = "never-passes"
on = "pull_request"
paths = ["*.py"]
task = "Fix the review findings:\n{findings}"
checks = ["false"]
"#;

fn rev(root: &Path, name: &str) -> String {
    let out = Command::new("git").arg("-C").arg(root).args(["rev-parse", name]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository whose `main` has the jobs, on a branch that adds a finding.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "app.py", BASE);
    write(root, ".sift/automations.toml", JOBS);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base with jobs"]);
    git(root, &["checkout", "-q", "-b", "feature"]);
    push(root, &format!("{BASE}{FINDING}"));
    dir
}

fn push(root: &Path, app: &str) {
    write(root, "app.py", app);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "push"]);
}

fn event(root: &Path, dir: &Path) -> PathBuf {
    let file = dir.join("event.json");
    let body = json!({"pull_request": {
        "number": 3,
        "base": {"sha": rev(root, "main"), "repo": {"full_name": "o/r"}},
        "head": {"sha": rev(root, "HEAD"), "repo": {"full_name": "o/r"}},
        "labels": [{"name": "bot-ok"}],
    }});
    std::fs::write(&file, body.to_string()).unwrap();
    file
}

/// The scripted model's answers for one job: the fix, then "done".
fn fix() -> [Reply; 2] {
    let args = json!({"path": "app.py", "old_text": "return y is 1", "new_text": "return y == 1"});
    [Reply::tool_calls(&[("c1", "edit", &args.to_string())]), Reply::text(&["Fixed."])]
}

fn automate(root: &Path, events: &Path, api: &Api, model: &FakeServer) -> Output {
    sift()
        .args(["automate", "run", "--post", "github", "--path"])
        .arg(root)
        .env("XDG_CONFIG_HOME", events.join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", model.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .env("GITHUB_EVENT_PATH", event(root, events))
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_API_URL", &api.rest)
        .env("GITHUB_GRAPHQL_URL", &api.graphql)
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .expect("sift runs")
}

fn suggestions(standin: &StandIn) -> Vec<Value> {
    standin
        .bot_comments()
        .into_iter()
        .filter(|c| c["body"].as_str().unwrap().contains("sift-automation"))
        .collect()
}

/// A pull request adds a finding: the "fix findings" job runs, its check passes, one
/// suggestion is posted on the finding's line; the job whose check fails delivers nothing; the
/// next push does not post the suggestion again; a job the pull request adds does not run.
#[test]
fn a_job_suggests_its_checked_fix_once_and_a_pull_request_cannot_add_jobs() {
    let dir = repo();
    let root = dir.path();
    let events = tempfile::tempdir().unwrap();
    let standin = StandIn::start(TOKEN).unwrap();
    // Every request through Prism, against GitHub's OpenAPI description (see tests/github.rs).
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let model = FakeServer::start(fix().into_iter().chain(fix())).unwrap();

    let out = automate(root, events.path(), &api, &model);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "a failed check fails the job: {err}");
    assert!(
        err.contains("job fix-findings: check `python3 -m py_compile 'app.py'` passed"),
        "{err}"
    );
    assert!(
        err.contains("check `test -z \"${GITHUB_TOKEN:-}\"` passed"),
        "the checks do not see the token: {err}"
    );
    assert!(err.contains("job fix-findings: 1 suggestion(s) posted"), "{err}");
    assert!(err.contains("job never-passes: a check failed: nothing delivered"), "{err}");
    let posted = suggestions(&standin);
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0]["path"], "app.py");
    assert_eq!(posted[0]["line"], 5, "on the finding's line");
    assert!(posted[0]["body"].as_str().unwrap().contains("```suggestion\n    return y == 1\n```"));
    // The model was asked with the findings in the task.
    let first = model.requests()[0].json();
    let asked = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(asked.contains("python/is-literal"), "{asked}");
    // The checks saw the change; the working tree is as it was.
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), format!("{BASE}{FINDING}"));

    // The next push: the same suggestion is not posted again.
    push(root, &format!("{BASE}{FINDING}# more\n"));
    let model = FakeServer::start(fix().into_iter().chain(fix())).unwrap();
    let out = automate(root, events.path(), &api, &model);
    assert!(
        stderr(&out).contains(
            "0 suggestion(s) posted, 0 in the review's body, 1 already on the pull request"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(suggestions(&standin).len(), 1);

    // A job the pull request adds (or changes) does not run on it.
    write(
        root,
        ".sift/automations.toml",
        format!("{JOBS}\n[[job]]\nname = \"mine\"\non = \"pull_request\"\ntask = \"anything\"\n"),
    );
    git(root, &["commit", "-q", "-am", "add a job"]);
    let model = FakeServer::start(fix().into_iter().chain(fix())).unwrap();
    let out = automate(root, events.path(), &api, &model);
    assert!(
        stderr(&out).contains("not run: job mine is added or changed by this pull request"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("job mine: running"), "{}", stderr(&out));
    // The token is in nothing sift printed, nor in what the model was sent.
    assert!(!stdout(&out).contains(TOKEN) && !stderr(&out).contains(TOKEN));
    assert!(
        model.requests().iter().all(|r| !r.body.contains(TOKEN)),
        "the model never sees the token"
    );
    validated(&prism, &standin);
}

#[test]
fn by_hand_a_job_is_a_patch() {
    let dir = repo();
    let root = dir.path();
    let out_dir = tempfile::tempdir().unwrap();
    let model = FakeServer::start(fix()).unwrap();
    let out = sift()
        .args(["automate", "run", "--job", "fix-findings", "--out"])
        .arg(out_dir.path())
        .arg("--path")
        .arg(root)
        .env("XDG_CONFIG_HOME", out_dir.path().join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", model.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let patch = std::fs::read_to_string(out_dir.path().join("fix-findings.patch")).unwrap();
    assert!(patch.contains("+    return y == 1"), "{patch}");
    let none = sift()
        .args(["automate", "run", "--path"])
        .arg(root)
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("say which job"), "{}", stderr(&none));
}
