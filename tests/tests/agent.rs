//! `sift agent` end to end: the real binary against a scripted OpenAI-compatible server on
//! 127.0.0.1. The agent's tool calls run on a real index; the change is printed as a diff and
//! written only with `--apply`; a finished run's change can be applied later from its
//! transcript without asking the model again.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use sift_test_support::openai::{FakeServer, Reply};
use std::time::Duration;

use sift_tests::{StdioServer, sift, stderr, stdout, write};

const CLAMP: &str = "def clamp(x, lo, hi):\n    \"\"\"Keep x between lo and hi.\"\"\"\n    return max(lo, min(x, hi))\n";

fn agent(dir: &Path, server: &FakeServer, args: &[&str]) -> Output {
    let mut cmd: Command = sift();
    cmd.env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", server.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .arg("agent")
        .arg("--path")
        .arg(dir.join("repo"))
        .args(args);
    cmd.output().unwrap()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("repo"), "util/clamp.py", CLAMP);
    write(&dir.path().join("repo"), "util/other.py", "def other():\n    return 1\n");
    dir
}

fn edit_call() -> Reply {
    let args = json!({"path": "util/clamp.py", "old_text": "return max(lo, min(x, hi))",
                      "new_text": "return min(hi, max(x, lo))"});
    Reply::tool_calls(&[("c2", "edit", &args.to_string())])
}

#[test]
fn the_agent_proposes_a_diff_and_writes_only_with_apply() {
    let dir = repo();
    let search = json!({"query": "clamp between lo and hi"}).to_string();
    let server = FakeServer::start([
        Reply::tool_calls(&[("c1", "search", &search)]),
        edit_call(),
        Reply::text(&["Rewrote clamp in util/clamp.py."]),
    ])
    .unwrap();
    let out = agent(dir.path(), &server, &["--json", "make clamp read better"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["stop"], "done");
    assert_eq!(result["files"], json!(["util/clamp.py"]));
    assert_eq!(result["applied"], false);
    let diff = result["diff"].as_str().unwrap();
    assert!(
        diff.contains("-    return max(lo, min(x, hi))\n+    return min(hi, max(x, lo))\n"),
        "{diff}"
    );
    // Nothing was written.
    assert_eq!(std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap(), CLAMP);
    // The progress on stderr names each tool call.
    let err = stderr(&out);
    assert!(err.contains("search query=clamp between lo and hi"), "{err}");
    assert!(err.contains("edit path=util/clamp.py"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");

    // What the model was sent: the tools, and after the search its results.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].json();
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"edit") && tools.contains(&"search") && tools.contains(&"check"),
        "{tools:?}"
    );
    let second = requests[1].json();
    let search_answer =
        second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        search_answer["content"].as_str().unwrap().contains("util/clamp.py:1-3"),
        "{search_answer}"
    );

    // The finished run's change, applied from its transcript: the model is not asked again.
    let id = result["transcript"].as_str().unwrap();
    let out = agent(dir.path(), &server, &["--resume", id, "--apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 3);
    let now = std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap();
    assert!(now.contains("return min(hi, max(x, lo))"), "{now}");
}

#[test]
fn one_agent_run_loads_its_configuration_once() {
    let dir = repo();
    let search = json!({"query": "clamp"}).to_string();
    let server = FakeServer::start([
        Reply::tool_calls(&[("c1", "search", &search)]),
        edit_call(),
        Reply::text(&["Done."]),
    ])
    .unwrap();
    let mut cmd: Command = sift();
    cmd.env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", server.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .env("SIFT_LOG", "warn,sift::config=debug")
        .args(["agent", "--json", "--path"])
        .arg(dir.path().join("repo"))
        .arg("make clamp read better");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let loads = err.lines().filter(|l| l.contains("configuration loaded for")).count();
    // The run indexed the repository, searched it and edited: every part of it used the one
    // configuration the command read (the index's options, the model, [embed], the sandbox).
    assert_eq!(loads, 1, "{err}");
}

#[test]
fn a_file_changed_meanwhile_is_not_overwritten() {
    let dir = repo();
    let server = FakeServer::start([edit_call(), Reply::text(&["done"])]).unwrap();
    let out = agent(dir.path(), &server, &["--json", "t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    // The user edits the file before accepting.
    std::fs::write(dir.path().join("repo/util/clamp.py"), "# mine\n").unwrap();
    let id = result["transcript"].as_str().unwrap();
    let out = agent(dir.path(), &server, &["--resume", id, "--apply"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("changed on disk since the agent read it"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap(), "# mine\n");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = repo();
    let server = FakeServer::start([]).unwrap();
    let out = agent(dir.path(), &server, &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("say what the agent should do"), "{}", stderr(&out));
    let out = agent(dir.path(), &server, &["--resume", "no-such-run"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot resume the run no-such-run"), "{}", stderr(&out));
    // The model's failure ends the run with its reason and exit code 2, not a crash.
    write(&dir.path().join("repo"), ".sift/config.toml", "[model]\nmax_attempts = 1\n");
    let server = FakeServer::start([Reply::error(500, "boom")]).unwrap();
    let out = agent(dir.path(), &server, &["do it"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the model failed"), "{}", stderr(&out));
}

fn lsp_for(dir: &Path, server: &FakeServer) -> StdioServer {
    let url = server.base_url();
    let xdg = dir.join("xdg");
    let mut lsp = StdioServer::start_env(
        &[],
        &[
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
            ("SIFT_MODEL_BACKEND", "openai"),
            ("SIFT_MODEL_BASE_URL", &url),
            ("SIFT_MODEL_NAME", "fixture-model"),
        ],
    );
    lsp.initialize(&dir.join("repo").canonicalize().unwrap());
    lsp.wait_for_progress_end();
    lsp
}

#[test]
fn the_language_server_streams_the_steps_and_applies_only_when_confirmed() {
    let dir = repo();
    let search = json!({"query": "clamp between lo and hi"}).to_string();
    let server = FakeServer::start([
        Reply::tool_calls(&[("c1", "search", &search)]),
        edit_call(),
        Reply::text(&["Rewrote clamp."]),
    ])
    .unwrap();
    let mut lsp = lsp_for(dir.path(), &server);
    let id = lsp.request_id(
        "sift/agent",
        json!({"task": "make clamp read better", "workDoneToken": "w1", "partialResultToken": "p1"}),
    );
    let response = lsp.response_to(&json!(id), Duration::from_secs(60)).expect("an answer");
    let result = &response["result"];
    assert_eq!(result["stop"], "done", "{response} {}", lsp.stderr_tail());
    assert_eq!(result["answer"], "Rewrote clamp.");
    let file = &result["files"][0];
    assert_eq!(file["path"], "util/clamp.py");
    assert_eq!(file["kind"], "modify");
    assert_eq!(file["original"], CLAMP);
    assert!(file["proposed"].as_str().unwrap().contains("return min(hi, max(x, lo))"));
    // The steps came as partial results and as work-done progress.
    let partial: Vec<&Value> = lsp
        .seen
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == "p1")
        .flat_map(|m| m["params"]["value"]["events"].as_array().unwrap().iter())
        .collect();
    let tools: Vec<&str> = partial
        .iter()
        .filter(|e| e["kind"] == "tool")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["search", "edit"]);
    let reports: Vec<&str> = lsp
        .seen
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == "w1")
        .filter_map(|m| m["params"]["value"]["message"].as_str())
        .collect();
    assert!(
        reports.iter().any(|r| r.starts_with("step 2: edit path=util/clamp.py")),
        "{reports:?}"
    );
    // Nothing was written, and no edit was sent before the user accepted.
    assert_eq!(std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap(), CLAMP);
    assert!(!lsp.seen.iter().any(|m| m["method"] == "workspace/applyEdit"));

    let applied = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.agent.apply", "arguments": [{"id": result["id"]}]}),
    );
    assert_eq!(applied["result"]["applied"], true, "{applied}");
    let edit = lsp
        .seen
        .iter()
        .find(|m| m["method"] == "workspace/applyEdit")
        .expect("the change was sent for confirmation");
    let edit = &edit["params"]["edit"];
    assert_eq!(edit["changeAnnotations"]["sift-agent"]["needsConfirmation"], true, "{edit}");
    let change = &edit["documentChanges"][0];
    assert!(change["textDocument"]["uri"].as_str().unwrap().ends_with("/repo/util/clamp.py"));
    assert_eq!(change["edits"][0]["annotationId"], "sift-agent");
    assert_eq!(change["edits"][0]["newText"], "    return min(hi, max(x, lo))\n");
    assert_eq!(change["edits"][0]["range"]["start"], json!({"line": 2, "character": 0}));
    // A run applies once.
    let again = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.agent.apply", "arguments": [{"id": result["id"]}]}),
    );
    assert!(
        again["error"]["message"].as_str().unwrap().contains("no pending agent run"),
        "{again}"
    );
}

/// Best-of-N runs the same way from the terminal and the editor (one engine call): the attempts
/// are ranked, the one that changed something first, and the ranking is recorded with the
/// attempt the user took (the CLI's `--apply`), or none yet (the editor decides later).
#[test]
fn best_of_n_ranks_the_attempts_and_records_the_pick_from_either_front_end() {
    let script = || {
        FakeServer::start([
            Reply::text(&["Nothing to change."]),
            edit_call(),
            Reply::text(&["Rewrote clamp."]),
        ])
        .unwrap()
    };
    let dir = repo();
    let server = script();
    let out = agent(dir.path(), &server, &["--n", "2", "--apply", "make clamp read better"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = stdout(&out);
    let first = listing.find("=== #1 attempt 2:").unwrap_or_else(|| panic!("{listing}"));
    let second = listing.find("=== #2 attempt 1:").unwrap_or_else(|| panic!("{listing}"));
    assert!(first < second && listing.contains("(no change)"), "{listing}");
    assert!(stderr(&out).contains("applied attempt 2: wrote util/clamp.py"), "{}", stderr(&out));
    let now = std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap();
    assert!(now.contains("return min(hi, max(x, lo))"), "{now}");

    std::fs::write(dir.path().join("repo/util/clamp.py"), CLAMP).unwrap();
    let server = script();
    let mut lsp = lsp_for(dir.path(), &server);
    let response = lsp.request("sift/agent", json!({"task": "make clamp read better", "n": 2}));
    let result = &response["result"];
    assert_eq!(result["attempts"].as_array().map(Vec::len), Some(2), "{response}");
    assert_eq!(result["attempts"][0]["index"], 1, "{response}");
    assert_eq!(result["files"][0]["path"], "util/clamp.py", "{response}");
    assert_eq!(std::fs::read_to_string(dir.path().join("repo/util/clamp.py")).unwrap(), CLAMP);

    let picks: Vec<Value> =
        std::fs::read_to_string(dir.path().join("repo/.sift/agent/picks.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(picks.len(), 2, "{picks:?}");
    assert_eq!((&picks[0]["ranked_first"], &picks[0]["picked"]), (&json!(1), &json!(1)));
    assert_eq!((&picks[1]["ranked_first"], &picks[1]["picked"]), (&json!(1), &Value::Null));
    assert!(picks.iter().all(|p| p["task"] == "make clamp read better"), "{picks:?}");
    lsp.request("shutdown", Value::Null);
    drop(lsp);

    // The CLI's choice is exported as a preference pair with the ranking's features.
    let out = sift_in(dir.path(), &["feedback", "export"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pairs: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "pair")
        .collect();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_documented("feedback-export.schema.json", &pairs);
    assert_documented("fates.schema.json", &fates(dir.path()));
    assert_eq!((&pairs[0]["chosen"], &pairs[0]["rejected"]), (&json!(1), &json!([0])));
    let features = pairs[0]["features"].as_array().unwrap();
    let order: Vec<&Value> = features.iter().map(|f| &f["attempt"]).collect();
    assert_eq!(order, [&json!(1), &json!(0)], "best-ranked first: {pairs:?}");
    assert_eq!(features[0]["files_changed"], 1, "{pairs:?}");
    assert_eq!(features[1]["files_changed"], 0, "{pairs:?}");
}

#[test]
fn cancelling_sift_agent_stops_the_run_and_the_server_lives_on() {
    let dir = repo();
    // The model never answers.
    let server = FakeServer::start([Reply::Stall(Duration::from_secs(120))]).unwrap();
    let mut lsp = lsp_for(dir.path(), &server);
    let id = lsp.request_id("sift/agent", json!({"task": "t"}));
    // Once the model was asked, cancel.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    lsp.notify("$/cancelRequest", json!({"id": id}));
    let response = lsp.response_to(&json!(id), Duration::from_secs(60)).expect("an answer");
    assert_eq!(response["error"]["code"], -32800, "{response}");
    let status = lsp.request("workspace/executeCommand", json!({"command": "sift.status"}));
    assert!(status["result"]["workspaces"].is_array(), "{status}");
    let bad = lsp.request("sift/agent", json!({"task": "  "}));
    assert!(bad["error"]["message"].as_str().unwrap().contains("task is empty"), "{bad}");
}

/// The repository, and a file of notes beside it (outside it).
fn repo_and_outside_notes() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = repo();
    let outside = dir.path().join("outside-notes.txt");
    std::fs::write(&outside, "OUTSIDE-NOTES-5e2a\n").unwrap();
    (dir, outside)
}

/// A model that asks to run `cat OUTSIDE` outside the sandbox, then finishes.
fn escape_script(outside: &Path) -> FakeServer {
    let args = json!({"command": format!("cat {}", outside.display()),
                      "outside_sandbox": true, "why": "the notes are outside the repository"});
    FakeServer::start([
        Reply::tool_calls(&[("c1", "run", &args.to_string())]),
        Reply::text(&["done"]),
    ])
    .unwrap()
}

/// What the model was told about its `run` call (the tool message of the second request).
fn run_answer(server: &FakeServer) -> String {
    let requests = server.requests();
    let second = requests[1].json();
    let tool = second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool");
    tool.expect("the run call was answered")["content"].as_str().unwrap().to_owned()
}

/// The records of a JSONL log under `dir/repo/.sift/` (none when it does not exist).
fn jsonl(dir: &Path, log: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join("repo/.sift").join(log))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn unsandboxed_log(dir: &Path) -> Vec<Value> {
    jsonl(dir, "agent/unsandboxed.jsonl")
}

/// The log after a refused request and an approved one (approved `by`).
fn refused_then_approved(dir: &Path, by: &str) -> Vec<Value> {
    let log = unsandboxed_log(dir);
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0]["decision"], "refused");
    assert_eq!(log[1]["decision"], "approved");
    assert_eq!(log[1]["detail"], by);
    log
}

#[test]
fn a_command_leaves_the_sandbox_only_with_allow_unsandboxed_and_is_logged() {
    let (dir, outside) = repo_and_outside_notes();

    // Without the flag: refused, the model is told why, nothing ran.
    let server = escape_script(&outside);
    let out = agent(dir.path(), &server, &["read my notes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = run_answer(&server);
    assert!(answer.contains("not run") && answer.contains("--allow-unsandboxed"), "{answer}");
    assert!(!answer.contains("OUTSIDE-NOTES-5e2a"), "{answer}");
    assert!(stderr(&out).contains("run command=cat"), "{}", stderr(&out));

    // With it: announced on stderr, run outside (the file outside the repository is read).
    let server = escape_script(&outside);
    let out = agent(dir.path(), &server, &["--allow-unsandboxed", "read my notes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer = run_answer(&server);
    assert!(answer.contains("OUTSIDE-NOTES-5e2a"), "{answer}");
    assert!(answer.contains("approved by --allow-unsandboxed"), "{answer}");
    let err = stderr(&out);
    assert!(err.contains("running outside the sandbox (--allow-unsandboxed)"), "{err}");
    assert!(err.contains("because: the notes are outside the repository"), "{err}");

    let log = refused_then_approved(dir.path(), "--allow-unsandboxed");
    assert_eq!(log[1]["status"], 0);
    assert_eq!(log[1]["task"], "read my notes");
}

#[test]
fn the_editor_asks_the_user_before_a_command_leaves_the_sandbox() {
    let (dir, outside) = repo_and_outside_notes();

    // The user dismisses the prompt: refused.
    let server = escape_script(&outside);
    let mut lsp = lsp_for(dir.path(), &server);
    let response = lsp.request("sift/agent", json!({"task": "read my notes"}));
    assert_eq!(response["result"]["stop"], "done", "{response} {}", lsp.stderr_tail());
    assert_eq!(response["result"]["redactions"], json!([]), "a loopback endpoint gets it whole");
    let asked = lsp
        .seen
        .iter()
        .find(|m| m["method"] == "window/showMessageRequest")
        .expect("the user was asked");
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(message.contains("OUTSIDE the sandbox") && message.contains("outside-notes.txt"));
    assert!(message.contains("the notes are outside the repository"), "{message}");
    let titles: Vec<&str> = asked["params"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Run outside the sandbox", "Keep it in the sandbox"]);
    let answer = run_answer(&server);
    assert!(answer.contains("not run") && answer.contains("said no"), "{answer}");
    drop(lsp);

    // The user chooses to let it out: it runs outside, once.
    let server = escape_script(&outside);
    let mut lsp = lsp_for(dir.path(), &server);
    lsp.message_action = Some("Run outside the sandbox".into());
    let response = lsp.request("sift/agent", json!({"task": "read my notes"}));
    assert_eq!(response["result"]["stop"], "done", "{response}");
    let answer = run_answer(&server);
    assert!(answer.contains("OUTSIDE-NOTES-5e2a"), "{answer}");
    refused_then_approved(dir.path(), "the user, in the editor's prompt");
    drop(lsp);

    // The user has not answered yet and cancels the run: it stops at once, refused and logged.
    let server = escape_script(&outside);
    let mut lsp = lsp_for(dir.path(), &server);
    lsp.answer_prompts = false;
    let id = lsp.request_id("sift/agent", json!({"task": "read my notes"}));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !lsp.seen.iter().any(|m| m["method"] == "window/showMessageRequest") {
        assert!(std::time::Instant::now() < deadline, "the user was never asked");
        if let Some(m) = lsp.read(Duration::from_millis(200)) {
            lsp.seen.push(m);
        }
    }
    lsp.notify("$/cancelRequest", json!({"id": id}));
    let response = lsp.response_to(&json!(id), Duration::from_secs(10)).expect("an answer");
    assert_eq!(response["error"]["code"], -32800, "{response}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while unsandboxed_log(dir.path()).len() < 3 {
        assert!(std::time::Instant::now() < deadline, "the cancelled request was not logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let last = &unsandboxed_log(dir.path())[2];
    assert_eq!(last["decision"], "refused");
    assert!(last["detail"].as_str().unwrap().contains("cancelled"), "{last}");
}

#[test]
fn agent_configuration_sets_the_checkers_and_the_budget() {
    let dir = repo();
    write(
        &dir.path().join("repo"),
        ".sift/config.toml",
        "[agent]\ncheckers = [\"echo util/clamp.py:3: error: flagged by the configured checker\"]\nmax_steps = 3\n",
    );
    let server = FakeServer::start([
        edit_call(),
        Reply::tool_calls(&[("c3", "check", "{}")]),
        Reply::text(&["done"]),
        Reply::text(&["never asked"]),
    ])
    .unwrap();
    let out = agent(dir.path(), &server, &["tidy clamp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    let third = requests[2].json();
    let check = third["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool");
    let check = check.unwrap()["content"].as_str().unwrap();
    assert!(
        check.contains("echo: 1 problems on the lines you changed")
            && check.contains("util/clamp.py:3: error: flagged by the configured checker"),
        "{check}"
    );

    // max_steps = 3 is the run's budget; --max-steps overrides it. A model that looks around
    // three times, then answers:
    let looks_around = || {
        FakeServer::start([
            Reply::tool_calls(&[("c1", "list", "{}")]),
            Reply::tool_calls(&[("c2", "list", "{}")]),
            Reply::tool_calls(&[("c3", "list", "{}")]),
            Reply::text(&["done"]),
        ])
        .unwrap()
    };
    let server = looks_around();
    let out = agent(dir.path(), &server, &["look around"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the step budget (3) ran out"), "{}", stderr(&out));
    let server = looks_around();
    let out = agent(dir.path(), &server, &["--max-steps", "4", "look around"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn sift_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd: Command = sift();
    cmd.env("XDG_CONFIG_HOME", dir.join("xdg")).args(args).arg("--path").arg(dir.join("repo"));
    cmd.output().unwrap()
}

fn fates(dir: &Path) -> Vec<Value> {
    jsonl(dir, "fates/fates.jsonl")
}

/// What became of each suggestion is recorded by whichever front end decided it, through the
/// engine: runs shown, applied (`--apply`), refused (`sift feedback reject`, the editor's
/// `sift.agent.discard` with a reason), searches shown; `sift stats` sums them, `sift feedback
/// export` writes the decisions, `sift feedback clear` deletes them, `[feedback] record =
/// false` records nothing.
#[test]
fn the_fate_of_each_run_is_recorded_from_either_front_end_and_summed_by_stats() {
    let dir = repo();
    let run = |apply: bool| {
        let server = FakeServer::start([edit_call(), Reply::text(&["Done."])]).unwrap();
        let mut args = vec!["--json", "make clamp read better"];
        if apply {
            args.insert(0, "--apply");
        }
        let out = agent(dir.path(), &server, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        result["transcript"].as_str().unwrap().to_owned()
    };
    let refused = run(false);
    let out =
        sift_in(dir.path(), &["feedback", "reject", &refused, "--reason", "rename it instead"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sift_in(dir.path(), &["feedback", "reject", "no-such-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no agent run no-such-run"), "{}", stderr(&out));
    let taken = run(true);
    // What it wrote is kept for measuring its retention (engine/src/agent/retention.rs).
    let snapshot = dir.path().join(format!("repo/.sift/fates/retention/{taken}.json"));
    let snapshot: Value = serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    assert_eq!(snapshot["files"]["util/clamp.py"].as_array().map(Vec::len), Some(1), "{snapshot}");
    std::fs::write(dir.path().join("repo/util/clamp.py"), CLAMP).unwrap();

    let server = FakeServer::start([edit_call(), Reply::text(&["Done."])]).unwrap();
    let mut lsp = lsp_for(dir.path(), &server);
    let response = lsp.request("sift/agent", json!({"task": "make clamp read better"}));
    let in_editor = response["result"]["id"].as_str().unwrap().to_owned();
    let discarded = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.agent.discard",
               "arguments": [{"id": in_editor, "reason": "not what I asked"}]}),
    );
    assert_eq!(discarded["result"]["discarded"], true, "{discarded}");
    let listed = lsp.request("sift/search", json!({"query": "clamp", "k": 3}));
    assert!(listed.get("error").is_none(), "{listed}");
    lsp.request("shutdown", Value::Null); // writes what is queued
    drop(lsp);
    let out = sift_in(dir.path(), &["search", "keep x between lo and hi"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let records = fates(dir.path());
    assert_documented("fates.schema.json", &records);
    let of = |id: &str| -> Vec<(String, String, Value)> {
        records
            .iter()
            .filter(|r| r["id"] == id)
            .map(|r| {
                (
                    r["fate"].as_str().unwrap().into(),
                    r["front"].as_str().unwrap().into(),
                    r["reason"].clone(),
                )
            })
            .collect()
    };
    let (shown, cli, lsp_) = ("shown".to_string(), "cli".to_string(), "lsp".to_string());
    assert_eq!(
        of(&refused),
        [
            (shown.clone(), cli.clone(), Value::Null),
            ("rejected".into(), cli.clone(), json!("rename it instead"))
        ]
    );
    assert_eq!(
        of(&taken),
        [(shown.clone(), cli.clone(), Value::Null), ("accepted".into(), cli.clone(), Value::Null)]
    );
    assert_eq!(
        of(&in_editor),
        [(shown, lsp_.clone(), Value::Null), ("rejected".into(), lsp_, json!("not what I asked"))]
    );
    // Searches the user was shown, not the agent's own; no query text by default.
    let searches: Vec<&Value> = records.iter().filter(|r| r["kind"] == "search").collect();
    assert_eq!(searches.len(), 2, "{searches:?}");
    assert!(searches.iter().all(|r| r.get("text").is_none() && r["count"].as_u64() > Some(0)));
    assert_eq!(searches[1]["path"], "util/clamp.py", "{searches:?}");

    let out = sift_in(dir.path(), &["stats", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let agent_ = &stats["stats"]["agent"];
    assert_eq!(
        (&agent_["shown"], &agent_["accepted"], &agent_["rejected"]),
        (&json!(3), &json!(1), &json!(2)),
        "{stats}"
    );
    assert_eq!(stats["stats"]["models"]["fixture-model"]["shown"], 3, "{stats}");
    assert_eq!(stats["stats"]["searches"], json!({"cli": 1, "lsp": 1}), "{stats}");
    assert_eq!(stats["record"]["events"], records.len(), "{stats}");
    let text = stdout(&sift_in(dir.path(), &["stats"]));
    assert!(text.contains("taken of shown") && text.contains("33 %"), "{text}");
    assert!(text.contains(".sift/fates"), "{text}");
    // The chart: a valid PNG of the documented size, with the three runs' bars drawn.
    let chart = dir.path().join("stats.png");
    let out = sift_in(dir.path(), &["stats", "--png", chart.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("taken of shown"), "the table is still printed");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&chart).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1000, 900));
    // The agent panel's bars are pure blue (plotters' BLUE), nothing else in the chart is.
    let blue = pixels.chunks(3).filter(|p| p == &[0, 0, 255]).count();
    assert!(blue > 2_000, "{blue} blue pixels");
    let missing = dir.path().join("no-such-dir/stats.png");
    let out = sift_in(dir.path(), &["stats", "--png", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));
    let bad = sift_in(dir.path(), &["stats", "--since", "last week"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("use a span such as 7d"), "{}", stderr(&bad));

    let out = sift_in(dir.path(), &["feedback", "export", "--format", "jsonl"]);
    let lines: Vec<Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_documented("feedback-export.schema.json", &lines);
    let decided: Vec<(&str, &str)> =
        lines.iter().map(|l| (l["run"].as_str().unwrap(), l["fate"].as_str().unwrap())).collect();
    assert_eq!(
        decided,
        [
            (refused.as_str(), "rejected"),
            (taken.as_str(), "accepted"),
            (in_editor.as_str(), "rejected")
        ]
    );
    assert!(lines.iter().all(|l| l["kind"] == "run" && l["model"] == "fixture-model"), "{lines:?}");

    let out = sift_in(dir.path(), &["feedback", "clear"]);
    assert!(out.status.success() && stdout(&out).contains("cleared"), "{}", stderr(&out));
    assert!(fates(dir.path()).is_empty());
    std::fs::write(dir.path().join("repo/.sift/config.toml"), "[feedback]\nrecord = false\n")
        .unwrap();
    let out = sift_in(dir.path(), &["search", "clamp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fates(dir.path()).is_empty(), "recording off");
    // A repository cannot opt its users in to recording text.
    std::fs::write(dir.path().join("repo/.sift/config.toml"), "[feedback]\ntext = true\n").unwrap();
    let out = sift_in(dir.path(), &["search", "clamp"]);
    assert!(stderr(&out).contains("a repository cannot opt its users in"), "{}", stderr(&out));
    assert!(fates(dir.path()).is_empty());
}

/// The JSON Schema `docs/schema/NAME` documents, compiled.
fn documented(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema").join(name);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(jsonschema::meta::is_valid(&schema), "{name} is not a valid JSON Schema");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// Each of `values` is valid against the documented schema `name`.
fn assert_documented(name: &str, values: &[Value]) {
    let validator = documented(name);
    for value in values {
        let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{value} is not as {name} documents: {errors:?}");
    }
}

/// Everything the model was sent in a run's first request, as one text.
fn first_prompt(server: &FakeServer) -> String {
    let first = server.requests()[0].json();
    first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Touch the hot stove once: run 1's edit is refused with a reason; the lesson it proposes is
/// kept; run 2, on a related task, is given it in its messages; once the cited code changes the
/// lesson is stale and no longer given. The editor's discard proposes the same lesson as
/// `sift.memory.add`'s arguments.
#[test]
fn a_refused_edit_teaches_later_runs_until_its_code_changes() {
    let dir = repo();
    let server = FakeServer::start([edit_call(), Reply::text(&["Done."])]).unwrap();
    let out = agent(dir.path(), &server, &["--json", "make clamp read better"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let run = run["transcript"].as_str().unwrap().to_owned();
    let reason = "clamp keeps max(lo, min(x, hi)): callers rely on its NaN handling";

    // Without --lesson (and no terminal) the lesson is shown, not written.
    let out = sift_in(dir.path(), &["feedback", "reject", &run, "--reason", reason]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("proposed lesson"), "{}", stdout(&out));
    assert!(stdout(&out).contains("cites util/clamp.py:3 (lines 3)"), "{}", stdout(&out));
    assert!(stdout(&out).contains("not written: pass --lesson"), "{}", stdout(&out));
    assert!(
        !dir.path().join("repo/.sift/memory").exists()
            || std::fs::read_dir(dir.path().join("repo/.sift/memory")).unwrap().next().is_none()
    );
    let out = sift_in(dir.path(), &["feedback", "reject", &run, "--reason", reason, "--lesson"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("later runs about that code get it"), "{}", stdout(&out));
    let notes: Vec<_> =
        std::fs::read_dir(dir.path().join("repo/.sift/memory")).unwrap().flatten().collect();
    assert_eq!(notes.len(), 1);
    let note = std::fs::read_to_string(notes[0].path()).unwrap();
    assert!(note.contains("origin = \"lesson: agent run") && note.contains(reason), "{note}");

    // Run 2, about the same code: the lesson is in what the model receives.
    let server = FakeServer::start([Reply::text(&["Nothing to do."])]).unwrap();
    let out = agent(dir.path(), &server, &["--json", "make clamp faster"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = first_prompt(&server);
    assert!(prompt.contains(reason), "the lesson is given: {prompt}");

    // The cited line changes (someone rewrote clamp): the lesson is stale, no longer given.
    let rewritten =
        CLAMP.replace("return max(lo, min(x, hi))", "return lo if x < lo else min(x, hi)");
    std::fs::write(dir.path().join("repo/util/clamp.py"), rewritten).unwrap();
    let server = FakeServer::start([Reply::text(&["Nothing to do."])]).unwrap();
    let out = agent(dir.path(), &server, &["--json", "make clamp faster"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = first_prompt(&server);
    assert!(!prompt.contains(reason), "a stale lesson is not given: {prompt}");
    std::fs::write(dir.path().join("repo/util/clamp.py"), CLAMP).unwrap();

    // The editor: a discard with a reason answers with the lesson, ready for sift.memory.add.
    let server = FakeServer::start([edit_call(), Reply::text(&["Done."])]).unwrap();
    let mut lsp = lsp_for(dir.path(), &server);
    let response = lsp.request("sift/agent", json!({"task": "make clamp read better"}));
    let id = response["result"]["id"].as_str().unwrap().to_owned();
    let discarded = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.agent.discard", "arguments": [{"id": id, "reason": "keep the max/min order"}]}),
    );
    let lesson = &discarded["result"]["lesson"];
    assert_eq!(lesson["cite"], json!(["util/clamp.py:3-3"]), "{discarded}");
    assert!(lesson["text"].as_str().unwrap().contains("keep the max/min order"), "{lesson}");
    let added = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.memory.add", "arguments": [lesson]}),
    );
    assert!(added.get("error").is_none(), "{added}");
    lsp.request("shutdown", Value::Null);
    drop(lsp);
    let notes = std::fs::read_dir(dir.path().join("repo/.sift/memory")).unwrap().count();
    assert_eq!(notes, 2, "the editor's lesson was kept too");
    let kept = std::fs::read_dir(dir.path().join("repo/.sift/memory"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .find(|n| n.contains("keep the max/min order"))
        .unwrap();
    assert!(
        kept.contains("origin = \"lesson: agent run"),
        "the editor's lesson says where it came from: {kept}"
    );
}

/// The other hot stove: run 1's edit is applied, then the user rewrites those lines their own
/// way. Retention's first look, an hour on, records the run as edited (`replaced`) and proposes
/// a lesson citing the user's lines: in `sift stats`, and in the editor's `sift/stats` as
/// `sift.memory.add`'s arguments. Kept, it is given to run 2. (The hour cannot pass in a test:
/// the test moves the snapshot's acceptance time back.)
#[test]
fn an_applied_edit_the_user_replaces_proposes_a_lesson() {
    let dir = repo();
    let server = FakeServer::start([edit_call(), Reply::text(&["Done."])]).unwrap();
    let out = agent(dir.path(), &server, &["--apply", "--json", "make clamp read better"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let run = run["transcript"].as_str().unwrap().to_owned();
    let clamp = dir.path().join("repo/util/clamp.py");
    assert!(std::fs::read_to_string(&clamp).unwrap().contains("min(hi, max(x, lo))"));
    let mine = CLAMP.replace("return max(lo, min(x, hi))", "return lo if x < lo else min(x, hi)");
    std::fs::write(&clamp, &mine).unwrap();
    let snapshot = dir.path().join(format!("repo/.sift/fates/retention/{run}.json"));
    let mut kept: Value = serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    kept["at"] = json!(kept["at"].as_u64().unwrap() - 2 * 3600);
    std::fs::write(&snapshot, kept.to_string()).unwrap();

    let out = sift_in(dir.path(), &["stats", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let runs = &stats["stats"]["agent"];
    assert_eq!((&runs["accepted"], &runs["edited"]), (&json!(0), &json!(1)), "{stats}");
    assert_eq!(stats["lessons"][0]["run"], run.as_str(), "{stats}");
    assert_eq!(stats["lessons"][0]["cite"], json!(["util/clamp.py:3-3"]), "{stats}");
    let edited: Vec<Value> =
        fates(dir.path()).into_iter().filter(|r| r["fate"] == "edited").collect();
    assert_eq!(edited.len(), 1, "{edited:?}");
    assert_eq!((&edited[0]["reason"], &edited[0]["count"]), (&json!("replaced"), &json!(0)));
    let text = stdout(&sift_in(dir.path(), &["stats"]));
    assert!(text.contains("lessons proposed") && text.contains(&run), "{text}");

    // The editor gets the same lesson, ready for sift.memory.add.
    let idle = FakeServer::start([]).unwrap();
    let mut lsp = lsp_for(dir.path(), &idle);
    let answer = lsp.request("sift/stats", json!({}));
    let lesson = &answer["result"]["lessons"][0];
    assert!(lesson["uri"].as_str().unwrap().ends_with("/repo/util/clamp.py"), "{answer}");
    assert_eq!(lesson["origin"], format!("lesson: agent run {run} replaced"), "{answer}");
    let added = lsp.request(
        "workspace/executeCommand",
        json!({"command": "sift.memory.add", "arguments": [lesson]}),
    );
    assert!(added.get("error").is_none(), "{added}");
    let answer = lsp.request("sift/stats", json!({}));
    assert_eq!(answer["result"]["lessons"], json!([]), "kept in the editor: {answer}");
    lsp.request("shutdown", Value::Null);
    drop(lsp);
    let memory = dir.path().join("repo/.sift/memory");
    let notes: Vec<_> = std::fs::read_dir(&memory).unwrap().flatten().collect();
    assert_eq!(notes.len(), 1);
    let note = std::fs::read_to_string(notes[0].path()).unwrap();
    assert!(note.contains("replaced by the user's own version"), "{note}");
    std::fs::remove_file(notes[0].path()).unwrap();

    // Deleted, it is proposed again. The CLI shows it, and writes it with --keep.
    let out = sift_in(dir.path(), &["feedback", "lesson", &run]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cites util/clamp.py:3 (lines 3)"), "{}", stdout(&out));
    assert!(stdout(&out).contains("not written: pass --keep"), "{}", stdout(&out));
    let out = sift_in(dir.path(), &["feedback", "lesson", &run, "--keep"]);
    assert!(stdout(&out).contains("later runs about that code get it"), "{}", stdout(&out));
    let stats: Value =
        serde_json::from_str(stdout(&sift_in(dir.path(), &["stats", "--json"])).trim()).unwrap();
    assert_eq!(stats["lessons"], json!([]), "kept: {stats}");
    let out = sift_in(dir.path(), &["feedback", "lesson", &run]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no lesson is proposed for run"), "{}", stderr(&out));

    // Run 2, about the same code: the lesson is in what the model receives.
    let server = FakeServer::start([Reply::text(&["Nothing to do."])]).unwrap();
    let out = agent(dir.path(), &server, &["--json", "make clamp faster"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = first_prompt(&server);
    assert!(prompt.contains("replaced by the user's own version"), "the lesson is given: {prompt}");
}
