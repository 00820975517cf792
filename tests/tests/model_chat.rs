//! `sift model chat` and the language-model section of `sift model info`, against a scripted
//! OpenAI-compatible server on 127.0.0.1.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sift_test_support::openai::{FakeServer, Reply, StreamEnd, text_events};
use sift_tests::{sift, stderr, stdout, write};

/// `sift model ARGS` aimed at `server`, with a private user configuration folder.
fn model_cmd(home: &Path, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = sift();
    cmd.env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", server.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .arg("model")
        .args(args);
    cmd
}

/// A stream of `pieces`, `gap` apart, ending as `then` says.
fn slow_stream(pieces: &[&str], gap: Duration, then: StreamEnd) -> Reply {
    let mut chunks: Vec<String> =
        text_events(pieces, 9).iter().map(|e| format!("data: {e}\n\n")).collect();
    if then == StreamEnd::Finish {
        chunks.push("data: [DONE]\n\n".into());
    } else {
        // Only the role chunk and the text: the answer is still being written.
        chunks.truncate(1 + pieces.len());
    }
    Reply::Stream { chunks, gap, then }
}

/// Reads the child's stdout until it holds `wanted`; the bytes read.
fn read_until(out: &mut impl Read, wanted: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(wanted) {
        let n = out.read(&mut buf).expect("read stdout");
        assert!(n > 0, "stdout ended before {wanted:?}: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn chat_streams_the_answer_as_it_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let pieces = ["The index", " lives", " in", " .sift/"];
    let server =
        FakeServer::start([slow_stream(&pieces, Duration::from_millis(250), StreamEnd::Finish)])
            .unwrap();
    let root = dir.path().to_str().unwrap();
    let args = [
        "chat",
        "--path",
        root,
        "--system",
        "be brief",
        "--max-tokens",
        "20",
        "--seed",
        "7",
        "where is the index?",
    ];
    let mut child = model_cmd(dir.path(), &server, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    // The first piece shows while the rest is still being written.
    let first = read_until(&mut out, "The index");
    assert!(child.try_wait().unwrap().is_none(), "the answer came all at once: {first:?}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(format!("{first}{rest}"), "The index lives in .sift/\n");
    assert!(err.contains("fixture-model via openai"), "{err}");
    assert!(err.contains("finish stop, 9 prompt + 4 completion tokens"), "{err}");

    let body = server.requests()[0].json();
    assert_eq!(body["model"], "fixture-model");
    assert_eq!(body["max_tokens"], 20);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "be brief");
    assert_eq!(body["messages"][1]["content"], "where is the index?");
}

#[test]
fn a_rejected_key_fails_with_one_line_naming_the_variable_not_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-e2e-secret-987654321";
    write(dir.path(), ".sift/config.toml", "[model]\napi_key_env = \"SIFT_E2E_KEY\"\n");
    let server = FakeServer::start([Reply::error(401, &format!("invalid key {key}"))]).unwrap();
    let out =
        model_cmd(dir.path(), &server, &["chat", "--path", dir.path().to_str().unwrap(), "hi"])
            .env("SIFT_E2E_KEY", key)
            .output()
            .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("the API key in $SIFT_E2E_KEY was rejected"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!err.contains(key) && !stdout(&out).contains(key), "{err}");
    assert_eq!(server.requests()[0].header("authorization"), Some(&*format!("Bearer {key}")));
}

#[test]
fn an_unreachable_endpoint_fails_naming_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = sift()
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("SIFT_MODEL_NAME", "m")
        .args(["model", "chat", "--path", dir.path().to_str().unwrap(), "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot reach http://127.0.0.1:{port}/v1/chat/completions")),
        "{err}"
    );
    assert!(err.contains("base_url"), "{err}");
}

#[test]
fn ctrl_c_stops_a_stalled_chat_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start([slow_stream(
        &["thinking"],
        Duration::ZERO,
        StreamEnd::Stall(Duration::from_secs(60)),
    )])
    .unwrap();
    let mut child =
        model_cmd(dir.path(), &server, &["chat", "--path", dir.path().to_str().unwrap(), "hi"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let mut out = child.stdout.take().unwrap();
    read_until(&mut out, "thinking");
    let start = Instant::now();
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "Ctrl-C did not stop sift model chat");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("finish cancelled") && err.contains("cancelled"), "{err}");
}

#[test]
fn model_info_says_which_language_model_and_where_each_value_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    write(
        &xdg,
        "sift/config.toml",
        "[model]\nbackend = \"openai\"\nname = \"user-model\"\napi_key_env = \"SIFT_E2E_INFO_KEY\"\n",
    );
    write(
        dir.path(),
        "repo/.sift/config.toml",
        "[model]\nname = \"repo-model\"\ncontext_window = 32768\n",
    );
    let root = dir.path().join("repo");
    let info = |key: Option<&str>| {
        let mut cmd = sift();
        cmd.env("XDG_CONFIG_HOME", &xdg)
            .env("SIFT_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
            .args(["model", "info", "--path", root.to_str().unwrap()]);
        match key {
            Some(k) => cmd.env("SIFT_E2E_INFO_KEY", k),
            None => cmd.env_remove("SIFT_E2E_INFO_KEY"),
        };
        cmd.output().unwrap()
    };
    let out = info(None);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let user_file = xdg.join("sift/config.toml").display().to_string();
    let repo_file = root.join(".sift/config.toml").display().to_string();
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in:\n{text}"))
            .to_owned()
    };
    assert!(text.contains("language model:"), "{text}");
    assert_eq!(line("backend:"), format!("  backend: openai (user config {user_file})"));
    assert_eq!(line("name:"), format!("  name: repo-model (repository config {repo_file})"));
    assert_eq!(
        line("base_url:"),
        "  base_url: http://127.0.0.1:9/v1 (environment SIFT_MODEL_BASE_URL)"
    );
    assert_eq!(
        line("api key:"),
        format!("  api key: $SIFT_E2E_INFO_KEY (not set) (user config {user_file})")
    );
    assert_eq!(
        line("context window:"),
        format!("  context window: 32768 tokens (repository config {repo_file})")
    );
    let secret = "sk-info-secret-1234";
    let text = stdout(&info(Some(secret)));
    assert!(text.contains("$SIFT_E2E_INFO_KEY (set)"), "{text}");
    assert!(!text.contains(secret), "{text}");
}

/// What `sift model info` prints for the repository `root`, with an empty user configuration.
fn model_info_without_user_config(root: &Path) -> String {
    let out = sift()
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .args(["model", "info", "--path", root.to_str().unwrap()])
        .output()
        .unwrap();
    stdout(&out)
}

#[test]
fn model_info_reports_a_bad_model_table_by_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".sift/config.toml", "[model]\nbackend = \"openai\"\ntemprature = 1\n");
    let text = model_info_without_user_config(dir.path());
    assert!(text.contains("configuration error"), "{text}");
    assert!(text.contains(".sift/config.toml: [model] temprature: unknown key"), "{text}");
}

#[test]
fn with_nothing_configured_info_names_the_local_default() {
    let dir = tempfile::tempdir().unwrap();
    let text = model_info_without_user_config(dir.path());
    assert!(text.contains("  backend: onnx (default)"), "{text}");
    assert!(text.contains("  context window: 8192 tokens (default)"), "{text}");
}
