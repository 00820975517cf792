//! `sift lsp` as a real process over stdio: lifecycle, exit behaviour, and a malformed-input
//! suite plus randomised mutations of valid traffic, with the server alive after each.

use std::time::Duration;

use serde_json::json;
use sift_tests::{StdioServer, write};

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/config.rs",
        "pub fn parse_config(path: &str) -> String {\n    path.to_string()\n}\n",
    );
    write(dir.path(), "app/main.py", "def main():\n    return parse_config('x')\n");
    dir
}

fn root(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path()).unwrap()
}

#[test]
fn a_session_over_stdio_ends_cleanly_even_with_stdin_open() {
    let dir = repo();
    let mut server = StdioServer::start(&["--stdio"]);
    let init = server.initialize(&root(&dir));
    assert_eq!(init["result"]["serverInfo"]["name"], "sift", "{init}");
    server.wait_for_progress_end();
    let symbols = server.request("workspace/symbol", json!({"query": "parse_config"}));
    assert_eq!(symbols["result"][0]["name"], "parse_config", "{symbols}");
    // Emacs' eglot sends `"params": null` with shutdown.
    let id = server.request_id("shutdown", serde_json::Value::Null);
    let id = json!(id);
    server.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "shutdown", "params": null}));
    let first = server.response_to(&id, Duration::from_secs(10)).expect("shutdown answered");
    assert!(first.get("error").is_none(), "{first}");
    server.notify("exit", serde_json::Value::Null);
    // stdin stays open; the process must end by itself.
    let status = server.wait_exit(Duration::from_secs(10)).expect("sift lsp exits after `exit`");
    assert!(status.success(), "{status:?}");
}

#[test]
fn closing_stdin_without_shutdown_ends_the_server_with_failure() {
    let dir = repo();
    let mut server = StdioServer::start(&[]);
    server.initialize(&root(&dir));
    server.close_stdin();
    let status = server.wait_exit(Duration::from_secs(10)).expect("sift lsp exits at end of input");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn logs_never_reach_stdout_and_go_to_the_log_file() {
    let dir = repo();
    let log = dir.path().join("sift.log");
    let mut server = StdioServer::start(&["--log-file", log.to_str().unwrap()]);
    server.initialize(&root(&dir));
    // A malformed frame makes the server log a warning.
    server.send_raw(b"garbage!\r\n");
    let error = server.read(Duration::from_secs(10)).expect("an error response");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let status = server.request("workspace/executeCommand", json!({"command": "sift.status"}));
    assert!(status.get("result").is_some());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("malformed"), "log file: {text:?}");
}

/// A tiny deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn frame(message: &serde_json::Value) -> Vec<u8> {
    let body = message.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[test]
fn mutated_traffic_never_kills_the_server() {
    let dir = repo();
    let mut server = StdioServer::start(&[]);
    server.initialize(&root(&dir));
    let valid = [
        json!({"jsonrpc": "2.0", "id": 5000, "method": "workspace/symbol", "params": {"query": "parse"}}),
        json!({"jsonrpc": "2.0", "id": 5001, "method": "sift/search", "params": {"query": "config", "k": 3}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///nowhere/x.rs", "languageId": "rust", "version": 1, "text": "fn x() {}"}}}),
        json!({"jsonrpc": "2.0", "id": 5002, "method": "workspace/executeCommand", "params": {"command": "sift.status"}}),
    ];
    let mut rng = Rng(0x5eed_cafe);
    for round in 0..150 {
        let mut bytes = frame(&valid[round % valid.len()]);
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes.insert(at, rng.below(256) as u8),
                2 => {
                    bytes.remove(at);
                }
                _ => bytes[at] = b"{}[]:\"\r\n0123456789"[rng.below(18)],
            }
        }
        server.send_raw(&bytes);
        // The sentinel: a valid request after the damage must be answered.
        let sentinel = 100_000 + round as i64;
        let sentinel_frame = frame(
            &json!({"jsonrpc": "2.0", "id": sentinel, "method": "workspace/executeCommand", "params": {"command": "sift.status"}}),
        );
        server.send_raw(&sentinel_frame);
        let mut answered = server.response_to(&json!(sentinel), Duration::from_secs(3));
        if answered.is_none() {
            // The damage declared a longer body than was sent, so the server is (rightly) still
            // reading it. A client that waits sends nothing more; the server resynchronises on
            // the header it finds inside that body.
            answered = server.response_to(&json!(sentinel), Duration::from_secs(10));
        }
        let answered = answered.unwrap_or_else(|| {
            panic!("round {round}: no answer after {:?}", String::from_utf8_lossy(&bytes))
        });
        assert!(answered.get("result").is_some(), "round {round}: {answered}");
        assert!(server.child.try_wait().unwrap().is_none(), "round {round}: the server died");
    }
}

#[test]
fn two_servers_on_one_repository_share_the_index() {
    let dir = tempfile::tempdir().unwrap();
    sift_tests::rust_corpus(dir.path(), 800);
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut a = StdioServer::start(&[]);
    let mut b = StdioServer::start(&[]);
    a.initialize(&root);
    b.initialize(&root);
    let ready = |server: &mut StdioServer| {
        for _ in 0..600 {
            let found = server.request("sift/search", json!({"query": "fn_799_5", "k": 1}));
            let result = &found["result"];
            let states: Vec<&str> = result["coverage"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["state"].as_str().unwrap())
                .collect();
            if states == ["ready"] && result["results"][0]["path"] == "src/m0/f799.rs" {
                return result["coverage"][0].clone();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the server never became ready with the full index");
    };
    let (ca, cb) = (ready(&mut a), ready(&mut b));
    assert_eq!(ca["files"], 800);
    assert_eq!(cb["files"], 800);
    assert_eq!(ca["chunks"], cb["chunks"]);
    // A change on disk reaches both.
    write(&root, "src/late.rs", "pub fn seen_by_both_windows() {}\n");
    for server in [&mut a, &mut b] {
        let mut seen = false;
        for _ in 0..300 {
            let found =
                server.request("sift/search", json!({"query": "seen_by_both_windows", "k": 1}));
            if found["result"]["results"][0]["path"] == "src/late.rs" {
                seen = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(seen, "a change on disk was not picked up by every window");
    }
    let status = sift_tests::run(&["status", "--path", root.to_str().unwrap(), "--json"]);
    let status: serde_json::Value =
        serde_json::from_str(sift_tests::stdout(&status).trim()).unwrap();
    assert_eq!(status["files"], 801);
}

/// `sift/stats` answers what `sift stats --json` prints, for an editor's view; a bad period is
/// the client's error, not a crash.
#[test]
fn sift_stats_answers_what_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    sift_tests::git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "README.md", "a project\n");
    sift_tests::git(&root, &["add", "-A"]);
    sift_tests::git(&root, &["commit", "-q", "-m", "base"]);
    write(&root, "app.py", "def f(x=[]):\n    x.append(1)\n    return x\n");
    // A review records its findings as shown.
    let out = sift_tests::run(&["review", "--path", root.to_str().unwrap()]);
    assert!(sift_tests::stdout(&out).contains("mutable-default"), "{}", sift_tests::stdout(&out));
    let cli = sift_tests::run(&["stats", "--json", "--all", "--path", root.to_str().unwrap()]);
    let cli: serde_json::Value = serde_json::from_str(&sift_tests::stdout(&cli)).unwrap();
    let mut server = StdioServer::start(&[]);
    server.initialize(&root);
    let answer = server.request("sift/stats", json!({"all": true}));
    let result = &answer["result"];
    assert_eq!(result["stats"]["rules"]["python/mutable-default-arg"]["shown"], 1, "{answer}");
    assert_eq!(result["stats"]["rules"], cli["stats"]["rules"], "the CLI's figures: {cli}");
    assert_eq!(result["record"]["events"], cli["record"]["events"]);
    let bad = server.request("sift/stats", json!({"since": "last tuesday"}));
    assert_eq!(bad["error"]["code"], -32602, "invalid params: {bad}");
    assert!(server.child.try_wait().unwrap().is_none(), "the server is still up");
}
