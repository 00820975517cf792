//! Helpers for the end-to-end tests in `tests/tests/`: find the real `sift` binary, run it, make
//! corpora.
//!
//! The binary must be built before the tests run: `cargo test --workspace` builds it with the
//! tests (sift-lsp has integration tests of its own), as the README's test command and `.ci/run`
//! do; set `SIFT_BIN` to test another build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `sift` binary under test.
pub fn sift_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("SIFT_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let bin = target.join("debug").join(format!("sift{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo test --workspace --no-run` or `cargo build -p sift-lsp` (or set SIFT_BIN)",
        bin.display()
    );
    bin
}

/// A `sift` command with a clean environment for sift's own variables and no embedding model
/// (a model directory that does not exist), so that results are lexical and deterministic.
/// Tests of semantic search use [`sift_with_models`].
pub fn sift() -> Command {
    let mut cmd = sift_with_models();
    cmd.env("SIFT_HOME", "/nonexistent/sift-test-home");
    cmd
}

/// A `sift` command that sees the models `sift model install` put in the user's model
/// directory.
pub fn sift_with_models() -> Command {
    let mut cmd = Command::new(sift_bin());
    for var in [
        "SIFT_LOG",
        "SIFT_THREADS",
        "SIFT_COMMIT_INTERVAL_MS",
        "SIFT_EMBED_MODEL",
        "SIFT_EMBED_DEVICE",
        "SIFT_EMBED_UPGRADE",
        "ORT_DISABLE_TELEMETRY",
        "ORT_DYLIB_PATH",
        "SIFT_MODEL_BACKEND",
        "SIFT_MODEL_BASE_URL",
        "SIFT_MODEL_NAME",
        "SIFT_MODEL_PATH",
        "SIFT_MODEL_DEVICE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Whether the models are installed for [`sift_with_models`]; when they are not, a test that
/// needs them is skipped with a message, or fails when `SIFT_REQUIRE_MODEL=1`.
pub fn models_installed() -> bool {
    let out = sift_with_models().args(["model", "info"]).output().expect("sift runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ok = out.status.success() && !text.contains("not usable") && !text.contains("not found");
    if !ok {
        sift_test_support::guard::missing(
            sift_test_support::guard::Need::Model,
            &format!("the embedding models are not usable:\n{text}"),
            "run `sift model install`",
        );
    }
    ok
}

/// Runs `sift ARGS` and returns its output.
pub fn run(args: &[&str]) -> Output {
    sift().args(args).output().expect("sift runs")
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Parses every stdout line as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// stdout as one JSON value (a `--format json` review report, say).
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(out), stderr(out)))
}

/// (path, start_line, rule) of every finding of a JSON review report.
pub fn found(out: &Output) -> Vec<(String, u64, String)> {
    json(out)["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["start_line"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Writes `text` to `root/rel`, creating folders.
pub fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A synthetic source tree of `files` Rust files spread over folders, each with a few functions
/// whose names are unique (`fn_<file>_<n>`) and a shared word (`common_helper`).
pub fn rust_corpus(root: &Path, files: usize) {
    for f in 0..files {
        let mut text = format!("//! Module {f}.\nuse std::collections::HashMap;\n\n");
        for n in 0..6 {
            text.push_str(&format!(
                "/// Does step {n} of file {f}.\npub fn fn_{f}_{n}(input: &str) -> usize {{\n    let mut map = HashMap::new();\n    map.insert(input, {n});\n    common_helper(input.len() + {f})\n}}\n\n"
            ));
        }
        write(root, &format!("src/m{}/f{f}.rs", f % 17), text);
    }
}

/// A `sift lsp` process driven over real stdio by a minimal synchronous client.
pub struct StdioServer {
    /// The process.
    pub child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    frames: std::sync::mpsc::Receiver<serde_json::Value>,
    next_id: i64,
    /// Messages read while waiting for something else.
    pub seen: Vec<serde_json::Value>,
    /// The last 32 to 64 KiB of what the server wrote to stderr.
    log: std::sync::Arc<std::sync::Mutex<String>>,
    /// The button a `window/showMessageRequest` is answered with (`None`: the user dismissed
    /// the message, `null`).
    pub message_action: Option<String>,
    /// Whether `window/showMessageRequest` is answered at all (false: the user has not
    /// looked yet; the request is only kept in `seen`).
    pub answer_prompts: bool,
}

impl StdioServer {
    /// Starts `sift lsp` (extra arguments appended), without models.
    pub fn start(args: &[&str]) -> StdioServer {
        StdioServer::start_command(sift(), args)
    }

    /// Starts `sift lsp` without models, with extra environment variables (a model endpoint,
    /// say).
    pub fn start_env(args: &[&str], env: &[(&str, &str)]) -> StdioServer {
        let mut command = sift();
        command.envs(env.iter().copied());
        StdioServer::start_command(command, args)
    }

    /// Starts `sift lsp` with the installed models (see [`sift_with_models`]).
    pub fn start_with_models(args: &[&str]) -> StdioServer {
        StdioServer::start_command(sift_with_models(), args)
    }

    fn start_command(mut command: Command, args: &[&str]) -> StdioServer {
        let mut child = command
            .arg("lsp")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sift lsp starts");
        // Drained, or a chatty server would block on a full pipe; the tail is kept for messages.
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                    if log.len() > 64 * 1024 {
                        let cut = log.len() - 32 * 1024;
                        let cut = (cut..log.len()).find(|&i| log.is_char_boundary(i)).unwrap_or(0);
                        log.drain(..cut);
                    }
                }
            });
        }
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            while let Some(frame) = read_frame(&mut reader) {
                if tx.send(frame).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        StdioServer {
            child,
            stdin,
            frames: rx,
            next_id: 1,
            seen: Vec::new(),
            log,
            message_action: None,
            answer_prompts: true,
        }
    }

    /// Writes raw bytes to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("server reads");
        stdin.flush().expect("flush");
    }

    /// Sends one message as a frame.
    pub fn send(&mut self, message: &serde_json::Value) {
        let body = message.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: serde_json::Value) {
        self.send(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id.
    pub fn request_id(&mut self, method: &str, params: serde_json::Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        id
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.request_id(method, params);
        self.response_to(&serde_json::json!(id), std::time::Duration::from_secs(60))
            .unwrap_or_else(|| panic!("no response to {method} #{id}"))
    }

    /// The next message, answering server requests on the way (progress creation; a
    /// `workspace/applyEdit` is accepted, as a user who confirms would; a
    /// `window/showMessageRequest` gets [`StdioServer::message_action`]).
    pub fn read(&mut self, timeout: std::time::Duration) -> Option<serde_json::Value> {
        loop {
            let message = self.frames.recv_timeout(timeout).ok()?;
            if message.get("method").is_some() && message.get("id").is_some() {
                if message["method"] == "window/showMessageRequest" && !self.answer_prompts {
                    self.seen.push(message);
                    continue;
                }
                let id = message["id"].clone();
                let result = if message["method"] == "workspace/applyEdit" {
                    serde_json::json!({"applied": true})
                } else if message["method"] == "window/showMessageRequest" {
                    match &self.message_action {
                        Some(title) => serde_json::json!({"title": title}),
                        None => serde_json::Value::Null,
                    }
                } else {
                    serde_json::Value::Null
                };
                self.seen.push(message);
                self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}));
                continue;
            }
            return Some(message);
        }
    }

    /// Waits for the response with `id`; other messages go to `seen`.
    pub fn response_to(
        &mut self,
        id: &serde_json::Value,
        timeout: std::time::Duration,
    ) -> Option<serde_json::Value> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            let message = self.read(left)?;
            if message.get("method").is_none() && message.get("id") == Some(id) {
                return Some(message);
            }
            self.seen.push(message);
        }
    }

    /// Initializes on `root` with progress support.
    pub fn initialize(&mut self, root: &Path) -> serde_json::Value {
        let uri = format!("file://{}", root.display());
        let response = self.request(
            "initialize",
            serde_json::json!({
                "processId": null,
                "capabilities": {"window": {"workDoneProgress": true}},
                "workspaceFolders": [{"uri": uri, "name": "root"}],
            }),
        );
        self.notify("initialized", serde_json::json!({}));
        response
    }

    /// Waits for a `$/progress` end.
    pub fn wait_for_progress_end(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !self
            .seen
            .iter()
            .any(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end")
        {
            let left = deadline
                .checked_duration_since(std::time::Instant::now())
                .expect("progress ended in time");
            let message = self.read(left).expect("the server keeps talking");
            self.seen.push(message);
        }
    }

    /// The tail of the server's stderr so far.
    pub fn stderr_tail(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Closes stdin (the client went away).
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the process to end; `None` when it is still running after `timeout`.
    pub fn wait_exit(&mut self, timeout: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads one LSP frame (blocking); `None` at the end of the stream or on a broken frame.
pub fn read_frame(reader: &mut impl std::io::BufRead) -> Option<serde_json::Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    std::io::Read::read_exact(reader, &mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Runs `git ARGS` in `root` with a throwaway identity (no signing), asserting success; its
/// stdout.
pub fn git(root: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
