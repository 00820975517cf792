//! `sift agent` end to end: the real binary against a scripted OpenAI-compatible server on
//! 127.0.0.1. The agent's tool calls run on a real index; the change is printed as a diff and
//! written only with `--apply`; a finished run's change can be applied later from its
//! transcript without asking the model again.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use sift_test_support::openai::{FakeServer, Reply};
use sift_tests::{sift, stderr, stdout, write};

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
