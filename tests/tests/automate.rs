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

const STEPS_JOB: &str = r#"
[[job]]
name = "steps"
on = "manual"
task = "Add the five steps to notes.txt."
checks = ["grep -q step5 notes.txt"]
deliver = "patch"
max_steps = 10

[[job]]
name = "short"
on = "manual"
task = "Add the five steps to notes.txt."
deliver = "patch"
max_steps = 2
"#;

/// A repository with the jobs that take several steps.
fn steps_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "notes.txt", "# end\n");
    write(root, ".sift/automations.toml", STEPS_JOB);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "jobs"]);
    dir
}

/// Step `i` of the scripted run: an edit that inserts a line before `# end` (run twice, it
/// would insert it twice), and after five of them, "done".
fn step(i: usize) -> Reply {
    if i > 5 {
        return Reply::text(&["All five steps are in."]);
    }
    let args =
        json!({"path": "notes.txt", "old_text": "# end", "new_text": format!("# step{i}\n# end")});
    Reply::tool_calls(&[(&format!("c{i}"), "edit", &args.to_string())])
}

fn automate_cmd(root: &Path, model: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = sift();
    // `automate SUBCOMMAND --path ROOT ARGS…`: the caller may add one more argument (a value
    // of the last of `args`).
    cmd.args(["automate", args[0], "--path"])
        .arg(root)
        .args(&args[1..])
        .env("XDG_CONFIG_HOME", root.join(".git/xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", model.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .env_remove("GITHUB_EVENT_PATH");
    cmd
}

fn status(root: &Path, model: &FakeServer) -> Vec<Value> {
    let out = automate_cmd(root, model, &["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A job's run killed with SIGKILL after step 3 of 6 resumes from its checkpoint and ends with
/// exactly the change of an uninterrupted run; no tool call before the kill runs again.
#[test]
fn a_killed_run_resumes_to_the_same_change_without_repeating_a_tool_call() {
    // The uninterrupted run.
    let whole = steps_repo();
    let out_dir = tempfile::tempdir().unwrap();
    let model = FakeServer::start((1..=6).map(step)).unwrap();
    let out = automate_cmd(whole.path(), &model, &["run", "--job", "steps", "--out"])
        .arg(out_dir.path().join("whole"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = std::fs::read_to_string(out_dir.path().join("whole/steps.patch")).unwrap();
    assert!(expected.contains("+# step5"), "{expected}");

    // The same job, killed while the model thinks about step 4.
    let dir = steps_repo();
    let root = dir.path();
    let model = FakeServer::start(
        (1..=3).map(step).chain([Reply::Stall(std::time::Duration::from_secs(120))]),
    )
    .unwrap();
    let mut child = automate_cmd(root, &model, &["run", "--job", "steps", "--out"])
        .arg(out_dir.path().join("killed"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while model.requests().len() < 4 {
        assert!(waited.elapsed().as_secs() < 120, "the run never reached step 4");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before step 4");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!out_dir.path().join("killed/steps.patch").exists(), "nothing delivered yet");
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "# end\n", "untouched");
    let runs = status(root, &model);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (runs[0]["job"].as_str(), runs[0]["state"].as_str()),
        (Some("steps"), Some("running"))
    );
    assert_eq!(runs[0]["steps"], 3, "three steps checkpointed: {runs:?}");
    let id = runs[0]["run"].as_str().unwrap().to_owned();

    // Resumed: the model is asked for step 4 with the three answers, each once.
    let model = FakeServer::start((4..=6).map(step)).unwrap();
    let out = automate_cmd(root, &model, &["resume", &id, "--out"])
        .arg(out_dir.path().join("killed"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("job steps: resuming run {id} (3 steps done)")),
        "{}",
        stderr(&out)
    );
    let resumed = std::fs::read_to_string(out_dir.path().join("killed/steps.patch")).unwrap();
    assert_eq!(resumed, expected, "the same final change as the uninterrupted run");
    let first = model.requests()[0].json();
    let answers: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(answers, ["c1", "c2", "c3"], "each call answered once, none run again");
    assert_eq!(model.requests().len(), 3, "steps 4 to 6 only");
    let transcript = std::fs::read_to_string(root.join(format!(".sift/agent/{id}.jsonl"))).unwrap();
    for i in 1..=5 {
        let answered = transcript
            .lines()
            .filter(|l| l.contains(&format!("\"tool_call_id\":\"c{i}\"")))
            .count();
        assert_eq!(answered, 1, "call c{i} ran once");
    }
    let runs = status(root, &model);
    assert_eq!(runs[0]["state"], "delivered", "{runs:?}");
    assert_eq!(runs[0]["steps"], 6, "{runs:?}");
    // Delivered: nothing left to resume.
    let again = automate_cmd(root, &model, &["resume", &id]).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("is delivered: nothing to resume"), "{}", stderr(&again));
}

/// A run whose budget runs out delivers nothing, even with a change, and says why.
#[test]
fn a_run_out_of_budget_delivers_nothing() {
    let dir = steps_repo();
    let root = dir.path();
    let out_dir = tempfile::tempdir().unwrap();
    let model = FakeServer::start((1..=6).map(step)).unwrap();
    let out = automate_cmd(root, &model, &["run", "--job", "short", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the step budget (2) ran out: nothing delivered"),
        "{}",
        stderr(&out)
    );
    assert!(!out_dir.path().join("short.patch").exists());
    assert_eq!(status(root, &model)[0]["state"], "out_of_budget");
    // A new trigger on the same commit starts again rather than resuming a spent run.
    let model = FakeServer::start((1..=6).map(step)).unwrap();
    let out = automate_cmd(root, &model, &["run", "--job", "short"]).output().unwrap();
    assert!(stderr(&out).contains("job short: running the agent"), "{}", stderr(&out));
}

const BRANCH_JOB: &str = r#"
[[job]]
name = "tidy"
on = "pull_request"
task = "Fix the review findings:\n{findings}"
checks = ["python3 -m py_compile {files}"]
deliver = "branch"
"#;

/// A job delivered as a branch and a pull request: the commit is made on the pull request's
/// head and pushed to `sift/<job>/pr-<n>` (never to the pull request's branch), the pull
/// request is opened against the pull request's branch, updated (not opened again) on the next
/// push, and its merge is recorded as the change taken.
#[test]
fn a_job_delivers_a_branch_and_a_pull_request_against_the_pull_requests_branch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "app.py", BASE);
    write(root, ".sift/automations.toml", BRANCH_JOB);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base with a job"]);
    git(root, &["checkout", "-q", "-b", "feature"]);
    push(root, &format!("{BASE}{FINDING}"));
    git(root, &["remote", "add", "origin", remote.path().to_str().unwrap()]);
    git(root, &["push", "-q", "origin", "main", "feature"]);
    let feature_before = rev(remote.path(), "feature");

    let standin = StandIn::start(TOKEN).unwrap();
    standin.with(|s| s.pull_example = Prism::example("pull-request"));
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let events = tempfile::tempdir().unwrap();
    let run = |model: &FakeServer| {
        let event = events.path().join("event.json");
        let body = json!({"pull_request": {
            "number": 3,
            "base": {"sha": rev(root, "main"), "ref": "main",
                     "repo": {"full_name": "o/r", "default_branch": "main"}},
            "head": {"sha": rev(root, "HEAD"), "ref": "feature", "repo": {"full_name": "o/r"}},
        }});
        std::fs::write(&event, body.to_string()).unwrap();
        sift()
            .args(["automate", "run", "--path"])
            .arg(root)
            .env("XDG_CONFIG_HOME", events.path().join("xdg"))
            .env("SIFT_MODEL_BACKEND", "openai")
            .env("SIFT_MODEL_BASE_URL", model.base_url())
            .env("SIFT_MODEL_NAME", "fixture-model")
            .env("GITHUB_EVENT_PATH", &event)
            .env("GITHUB_REPOSITORY", "o/r")
            .env("GITHUB_API_URL", &api.rest)
            .env("GITHUB_GRAPHQL_URL", &api.graphql)
            .env("GITHUB_TOKEN", TOKEN)
            .output()
            .unwrap()
    };
    let model = FakeServer::start(fix()).unwrap();
    let out = run(&model);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("job tidy: opened pull request #100 from sift/tidy/pr-3"),
        "{}",
        stderr(&out)
    );
    // The branch: one commit on the pull request's head, with the fix.
    let branch = "sift/tidy/pr-3";
    let parent = rev(remote.path(), &format!("{branch}^"));
    assert_eq!(parent, rev(root, "HEAD"));
    let show = Command::new("git")
        .arg("-C")
        .arg(remote.path())
        .args(["show", &format!("{branch}:app.py")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&show.stdout).contains("return y == 1"));
    assert_eq!(
        rev(remote.path(), "feature"),
        feature_before,
        "the pull request's branch is not pushed to"
    );
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), format!("{BASE}{FINDING}"));
    let pulls = standin.with(|s| s.pulls.clone());
    assert_eq!(pulls.len(), 1);
    assert_eq!(
        (pulls[0]["head"]["ref"].as_str(), pulls[0]["base"]["ref"].as_str()),
        (Some(branch), Some("feature"))
    );

    // The next push: the branch is pushed again and the open pull request updated.
    push(root, &format!("{BASE}{FINDING}# more\n"));
    git(root, &["push", "-q", "origin", "feature"]);
    let model = FakeServer::start(fix()).unwrap();
    let out = run(&model);
    assert!(stderr(&out).contains("job tidy: updated pull request #100"), "{}", stderr(&out));
    assert_eq!(standin.with(|s| s.pulls.len()), 1, "not opened twice");
    assert_eq!(rev(remote.path(), &format!("{branch}^")), rev(root, "HEAD"));

    // Merged: the next run records the change as taken; `sift stats` shows the job's figures.
    standin.close_pull(100, true);
    push(root, &format!("{BASE}{FINDING}# again\n"));
    let model = FakeServer::start(fix()).unwrap();
    let out = run(&model);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = sift().args(["stats", "--path"]).arg(root).output().unwrap();
    assert!(
        stdout(&stats).contains("automation tidy: 2 change(s) delivered, 1 taken"),
        "{}",
        stdout(&stats)
    );
    validated(&prism, &standin);
}

/// Each example of `examples/automations/` on a small Python repository, with a scripted model
/// doing what the job asks: the file parses, its template fills, its checks pass on the change,
/// and it delivers what it says (outside CI: a patch, or the report).
#[test]
fn the_examples_run_on_a_real_repository() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/automations");
    let mut jobs = String::new();
    for name in ["fix-review-findings", "docs-in-step", "regression-test", "security-pass"] {
        jobs.push_str(&std::fs::read_to_string(examples.join(format!("{name}.toml"))).unwrap());
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "src/app.py", BASE);
    write(root, "tests/__init__.py", "");
    write(root, "docs/api.md", "# API\n\n`old(x)` returns x.\n");
    write(root, ".sift/automations.toml", &jobs);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "a project with the example jobs"]);
    // The change the jobs look at (by hand: the working tree's).
    write(root, "src/app.py", format!("{BASE}{FINDING}"));

    let edit = |path: &str, old: &str, new: &str| {
        let args = json!({"path": path, "old_text": old, "new_text": new});
        Reply::tool_calls(&[("c1", "edit", &args.to_string())])
    };
    let test_file = "import unittest\n\nfrom src.app import g\n\n\nclass TestG(unittest.TestCase):\n    def test_one(self):\n        self.assertTrue(g(1))\n";
    let create = json!({"path": "tests/test_app.py", "text": test_file}).to_string();
    let cases: Vec<(&str, Vec<Reply>, &str, &str)> = vec![
        (
            "fix-review-findings",
            vec![edit("src/app.py", "return y is 1", "return y == 1"), Reply::text(&["Fixed."])],
            "fix-review-findings.patch",
            "+    return y == 1",
        ),
        (
            "docs-in-step",
            vec![
                edit("docs/api.md", "returns x.\n", "returns x.\n\n`g(y)` tells whether y is 1.\n"),
                Reply::text(&["Documented g."]),
            ],
            "docs-in-step.patch",
            "+`g(y)` tells whether y is 1.",
        ),
        (
            "regression-test",
            vec![Reply::tool_calls(&[("c1", "create", &create)]), Reply::text(&["Added a test."])],
            "regression-test.patch",
            "+class TestG(unittest.TestCase):",
        ),
        (
            "security-pass",
            vec![Reply::text(&["No security problem in src/app.py."])],
            "security-pass.md",
            "No security problem in src/app.py.",
        ),
    ];
    for (job, replies, file, expected) in cases {
        let out_dir = tempfile::tempdir().unwrap();
        let model = FakeServer::start(replies).unwrap();
        let out = automate_cmd(root, &model, &["run", "--job", job, "--out"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{job}: {}", stderr(&out));
        let delivered = std::fs::read_to_string(out_dir.path().join(file))
            .unwrap_or_else(|e| panic!("{job}: {e}: {}", stderr(&out)));
        assert!(delivered.contains(expected), "{job}: {delivered}");
        // The template was filled with the change.
        let asked = model.requests()[0].body.clone();
        assert!(!asked.contains("{files}") && !asked.contains("{diff}"), "{job}: {asked}");
        assert!(asked.contains("src/app.py"), "{job}: the task names the changed file");
        if job == "regression-test" {
            assert!(stderr(&out).contains("check `python3 -m unittest"), "{}", stderr(&out));
            assert!(stderr(&out).contains("passed"), "{}", stderr(&out));
        }
        if job == "security-pass" {
            assert!(!stderr(&out).contains("check `"), "a report runs no check");
        }
    }
    // Nothing was written to the repository by any of them.
    assert!(!root.join("tests/test_app.py").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("docs/api.md")).unwrap(),
        "# API\n\n`old(x)` returns x.\n"
    );
}

/// A job's checks run inside the sandbox's walls: no network (a listener on this machine's
/// loopback gets no connection), nothing written or read outside the workspace, no token.
#[test]
fn a_job_s_checks_stay_inside_the_sandbox() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "the-outside-secret").unwrap();
    let o = outside.path().display();
    let jobs = format!(
        r#"
[[job]]
name = "walls"
on = "manual"
task = "t"
deliver = "patch"
checks = [
  "test -z \"${{GITHUB_TOKEN:-}}\"",
  "! python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\"",
  "! cat {o}/secret.txt",
  "! sh -c 'echo x > {o}/written'",
]
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "app.py", BASE);
    write(root, ".sift/automations.toml", &jobs);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "a job"]);
    write(root, "app.py", format!("{BASE}{FINDING}"));
    let args = json!({"path": "app.py", "old_text": "return y is 1", "new_text": "return y == 1"});
    let model = FakeServer::start([
        Reply::tool_calls(&[("c1", "edit", &args.to_string())]),
        Reply::text(&["Fixed."]),
    ])
    .unwrap();
    let out = automate_cmd(root, &model, &["run", "--job", "walls"])
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "every wall held: {err}");
    assert_eq!(err.matches("passed").count(), 4, "{err}");
    assert!(listener.accept().is_err(), "no connection reached the listener");
    assert!(!outside.path().join("written").exists());
    assert!(!stdout(&out).contains("the-outside-secret") && !err.contains("the-outside-secret"));
    assert!(!err.contains(TOKEN) && !stdout(&out).contains(TOKEN));
}

/// A report job on a pull request: its answer is posted as one review, not again while it says
/// the same, and nothing it changed is delivered.
#[test]
fn a_report_is_posted_once_while_it_says_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "app.py", BASE);
    let job = "[[job]]\nname = \"audit\"\non = \"pull_request\"\ntask = \"Audit {files}\"\ndeliver = \"report\"\n";
    write(root, ".sift/automations.toml", job);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    git(root, &["checkout", "-q", "-b", "feature"]);
    push(root, &format!("{BASE}{FINDING}"));
    let standin = StandIn::start(TOKEN).unwrap();
    let prism = Prism::start(&standin.url());
    let api = through(&prism, &standin);
    let events = tempfile::tempdir().unwrap();
    // The model edits (a report job drops it) and reports.
    let args = json!({"path": "app.py", "old_text": "return y is 1", "new_text": "return 0"});
    let report = || {
        [
            Reply::tool_calls(&[("c1", "edit", &args.to_string())]),
            Reply::text(&["app.py:5 compares with `is`: use `==`."]),
        ]
    };
    for _ in 0..2 {
        let model = FakeServer::start(report()).unwrap();
        let out = automate(root, events.path(), &api, &model);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let reviews = standin.with(|s| s.reviews.clone());
    assert_eq!(reviews.len(), 1, "posted once: {reviews:?}");
    let body = reviews[0]["body"].as_str().unwrap();
    assert!(body.contains("app.py:5 compares with `is`: use `==`."), "{body}");
    assert!(suggestions(&standin).is_empty(), "a report delivers no change");
    validated(&prism, &standin);
}

/// Best-of-N: the first-ranked attempt whose checks pass is the one delivered.
#[test]
fn best_of_n_delivers_the_attempt_whose_checks_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "notes.txt", "# end\n");
    let job = "[[job]]\nname = \"two\"\non = \"manual\"\ntask = \"t\"\nattempts = 2\ndeliver = \"patch\"\nchecks = [\"grep -q good notes.txt\"]\n";
    write(root, ".sift/automations.toml", job);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "a job"]);
    let attempt = |word: &str| {
        let args =
            json!({"path": "notes.txt", "old_text": "# end", "new_text": format!("{word}\n# end")});
        [Reply::tool_calls(&[("c1", "edit", &args.to_string())]), Reply::text(&["Done."])]
    };
    let model = FakeServer::start(attempt("bad").into_iter().chain(attempt("good"))).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = automate_cmd(root, &model, &["run", "--job", "two", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let patch = std::fs::read_to_string(out_dir.path().join("two.patch")).unwrap();
    assert!(patch.contains("+good") && !patch.contains("+bad"), "{patch}");
    assert_eq!(model.requests().len(), 4, "both attempts ran");
    let picks = std::fs::read_to_string(root.join(".sift/agent/picks.jsonl")).unwrap();
    assert!(picks.contains("\"ranked_first\":0,\"picked\":1"), "the pick is recorded: {picks}");
}
