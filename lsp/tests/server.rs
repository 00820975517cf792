//! The language server driven in-process over an in-memory duplex, as an editor would drive it:
//! initialize, progress, searches, unsaved buffers, commands, malformed input, shutdown.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use sift_lsp::server::framing::{FrameReader, Incoming, encode};
use sift_lsp::server::{Ending, serve};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

/// A minimal LSP client. Dropping it without [`TestClient::shutdown`] fails the test: every test
/// must end with a clean shutdown.
struct TestClient {
    tx: WriteHalf<DuplexStream>,
    rx: FrameReader<ReadHalf<DuplexStream>>,
    server: Option<tokio::task::JoinHandle<Ending>>,
    next_id: i64,
    /// Notifications and server requests seen so far.
    seen: Vec<Value>,
    clean: bool,
}

const WAIT: Duration = Duration::from_secs(60);

impl TestClient {
    /// Starts a server and initializes it on `roots`.
    async fn start(roots: &[&Path], init_options: Value) -> TestClient {
        let (client_side, server_side) = tokio::io::duplex(1 << 20);
        let (server_rx, server_tx) = tokio::io::split(server_side);
        let server = tokio::spawn(serve(server_rx, server_tx));
        let (rx, tx) = tokio::io::split(client_side);
        let mut client = TestClient {
            tx,
            rx: FrameReader::new(rx, 64 << 20),
            server: Some(server),
            next_id: 1,
            seen: Vec::new(),
            clean: false,
        };
        let folders: Vec<Value> = roots
            .iter()
            .map(|r| json!({"uri": uri(r), "name": r.file_name().unwrap().to_string_lossy()}))
            .collect();
        let mut params = json!({
            "processId": null,
            "rootUri": null,
            "capabilities": {
                "window": {"workDoneProgress": true},
                "general": {"positionEncodings": ["utf-16"]}
            },
            "workspaceFolders": folders,
        });
        if let (Some(p), Some(extra)) = (params.as_object_mut(), init_options.as_object()) {
            for (k, v) in extra {
                p.insert(k.clone(), v.clone());
            }
        }
        let init = client.request("initialize", params).await;
        assert!(init.get("result").is_some(), "{init}");
        client.notify("initialized", json!({})).await;
        client
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&encode(&message)).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.tx.write_all(bytes).await.expect("server reads");
        self.tx.flush().await.unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Reads one message, answering server-to-client requests on the way.
    async fn read(&mut self) -> Value {
        loop {
            let item = tokio::time::timeout(WAIT, self.rx.next())
                .await
                .expect("the server answered in time")
                .expect("readable")
                .expect("the server is still talking");
            let Incoming::Message(message) = item else {
                panic!("server sent a malformed frame: {item:?}")
            };
            if message.get("method").is_some() && message.get("id").is_some() {
                // A request from the server (e.g. window/workDoneProgress/create): accept it.
                let id = message["id"].clone();
                let result = if message["method"] == "workspace/applyEdit" {
                    json!({"applied": true})
                } else {
                    Value::Null
                };
                self.seen.push(message);
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
                continue;
            }
            return message;
        }
    }

    /// Sends a request and returns the whole response object.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.response_to(json!(id)).await
    }

    async fn response_to(&mut self, id: Value) -> Value {
        loop {
            let message = self.read().await;
            if message.get("method").is_none() && message.get("id") == Some(&id) {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// Waits until a `$/progress` end notification has been seen.
    async fn wait_for_progress_end(&mut self) {
        while !self.progress_kinds().contains(&"end".to_string()) {
            let message = self.read().await;
            self.seen.push(message);
        }
    }

    fn progress_kinds(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "$/progress")
            .filter_map(|m| m["params"]["value"]["kind"].as_str().map(str::to_string))
            .collect()
    }

    async fn search(&mut self, query: &str) -> Value {
        let response = self.request("sift/search", json!({"query": query})).await;
        response.get("result").cloned().unwrap_or_else(|| panic!("{response}"))
    }

    /// Sends `shutdown` (with `"params": null`, as Emacs does) and `exit`; asserts a clean end.
    async fn shutdown(mut self) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "shutdown", "params": null})).await;
        let response = self.response_to(json!(id)).await;
        assert_eq!(response["result"], Value::Null, "{response}");
        assert!(response.get("error").is_none(), "{response}");
        self.notify("exit", json!(null)).await;
        // The input stays open: the server must end anyway.
        let ending = tokio::time::timeout(Duration::from_secs(10), self.server.take().unwrap())
            .await
            .expect("the server ends promptly after exit")
            .expect("the server task did not panic");
        assert_eq!(ending, Ending::Clean);
        self.clean = true;
    }
}

impl Drop for TestClient {
    fn drop(&mut self) {
        if !self.clean && !std::thread::panicking() {
            panic!("test ended without a clean shutdown: call TestClient::shutdown");
        }
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/config.rs",
        "/// Reads the configuration.\npub fn parse_config(path: &str) -> String {\n    path.to_string()\n}\n",
    );
    write(
        root,
        "web/login.py",
        "class LoginView:\n    def post(self, request):\n        return check_password(request)\n",
    );
    write(root, "README.md", "# Demo\n\nParses configuration files.\n");
    // Protocol tests are about the protocol: lexical ranking, no model (semantic search has
    // its own tests below and in runtime/ and tests/).
    write(root, ".sift/config.toml", "[embed]\nenabled = false\n");
    dir
}

fn canonical(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_on_start_with_progress_and_answers_workspace_symbol() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let kinds = client.progress_kinds();
    assert_eq!(kinds.first().map(String::as_str), Some("begin"), "{kinds:?}");
    assert!(client.seen.iter().any(|m| m["method"] == "window/workDoneProgress/create"));

    let response = client.request("workspace/symbol", json!({"query": "parseConfig"})).await;
    let symbols = response["result"].as_array().unwrap_or_else(|| panic!("{response}"));
    assert_eq!(symbols[0]["name"], "parse_config");
    assert_eq!(symbols[0]["kind"], 12, "function");
    assert!(symbols[0]["location"]["uri"].as_str().unwrap().ends_with("src/config.rs"));
    assert_eq!(symbols[0]["location"]["range"]["start"]["line"], 1);

    let empty = client.request("workspace/symbol", json!({"query": ""})).await;
    assert_eq!(empty["result"], json!([]));

    let status = client
        .request("workspace/executeCommand", json!({"command": "sift.status", "arguments": []}))
        .await;
    let ws = &status["result"]["workspaces"][0];
    // Small follow-up updates (files written a moment before start are re-hashed once) are not
    // shown: the state stays `ready` once the first update ended.
    assert_eq!(ws["state"], "ready", "{status}");
    assert_eq!(ws["files"], 3);
    assert_eq!(status["result"]["positionEncoding"], "utf-16");
    client.shutdown().await;
}

/// The editor's settings (`initializationOptions`) are a layer of the configuration over the
/// repository's file, `[model]` included; a bad value names the layer and the key and fails only
/// its section.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_settings_are_laid_over_the_repository_file() {
    let dir = repo();
    let root = canonical(&dir);
    let init = json!({"initializationOptions": {
        "index": {"max_file_size": 60},
        "embed": {"enabled": true, "device": "tpu"},
        "model": {"backend": "openai", "api_key_env": "SIFT_EDITOR_KEY"},
    }});
    let mut client = TestClient::start(&[&root], init).await;
    client.wait_for_progress_end().await;
    // src/config.rs (over 60 bytes) was skipped, README.md was not.
    let response = client.request("workspace/symbol", json!({"query": "parseConfig"})).await;
    let found = response["result"].as_array().unwrap_or_else(|| panic!("{response}"));
    let uris: Vec<&str> = found.iter().filter_map(|s| s["location"]["uri"].as_str()).collect();
    assert!(uris.iter().any(|u| u.ends_with("README.md")), "{response}");
    assert!(!uris.iter().any(|u| u.ends_with("config.rs")), "{response}");
    let status = client
        .request("workspace/executeCommand", json!({"command": "sift.status", "arguments": []}))
        .await;
    let ws = &status["result"]["workspaces"][0];
    assert_eq!(ws["embedState"], "off", "{status}");
    let message = ws["embedMessage"].as_str().unwrap_or_else(|| panic!("{status}"));
    assert!(
        message.contains(
            "editor settings (initializationOptions): [embed] device: \"tpu\" is not a device"
        ),
        "{message}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sift_search_returns_the_documented_shape() {
    let dir = repo();
    let root = canonical(&dir);
    write(
        &root,
        "web/tokens.py",
        "def refresh_token(token):\n    return rotate(token)\n\n\ndef revoke_token(token):\n    return forget(token)\n",
    );
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let found = client.search("check password").await;
    let top = &found["results"][0];
    assert_eq!(top["path"], "web/login.py");
    assert_eq!(top["uri"], uri(&root.join("web/login.py")));
    assert_eq!(top["range"]["start"], json!({"line": 0, "character": 0}));
    assert_eq!(top["range"]["end"], json!({"line": 3, "character": 0}));
    assert_eq!(top["matchLine"], 2);
    assert_eq!(top["kind"], "class");
    assert_eq!(top["unsaved"], false);
    assert_eq!(found["mode"], "lexical");
    assert_eq!(found["coverage"][0]["state"], "ready");
    assert!(top.get("more").is_none(), "absent when the file has no other match: {top}");

    // A file's other matching chunks come with it: where they are, no snippet.
    let found = client.search("token").await;
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "one result per file: {found}");
    let more = results[0]["more"].as_array().unwrap_or_else(|| panic!("{found}"));
    assert_eq!(more.len(), 1, "{found}");
    let other =
        if results[0]["symbol"] == "refresh_token" { "revoke_token" } else { "refresh_token" };
    assert_eq!(more[0]["symbol"], other, "{found}");
    assert_eq!(more[0]["kind"], "function");
    assert!(more[0]["range"]["start"]["line"].is_u64() && more[0]["matchLine"].is_u64());
    assert!(more[0].get("snippet").is_none() && more[0].get("path").is_none(), "{found}");

    let via_command = client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.search", "arguments": ["check password", 1]}),
        )
        .await;
    assert_eq!(via_command["result"]["results"][0]["path"], "web/login.py");
    assert_eq!(via_command["result"]["results"].as_array().unwrap().len(), 1);

    let bad = client.request("sift/search", json!({"query": "x", "mode": "semantic"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let bad = client.request("workspace/executeCommand", json!({"command": "sift.nope"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsaved_buffers_are_searchable_as_typed_and_forgotten_on_close() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let file = uri(&root.join("src/config.rs"));
    let text = std::fs::read_to_string(root.join("src/config.rs")).unwrap();
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": file, "languageId": "rust", "version": 1, "text": text}}))
        .await;
    // An incremental edit: insert a function at the top.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": file, "version": 2}, "contentChanges": [{
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "text": "fn typed_but_unsaved() {}\n"
            }]}),
        )
        .await;
    let mut found = Value::Null;
    for _ in 0..50 {
        found = client.search("typed_but_unsaved").await;
        if found["results"][0]["path"] == "src/config.rs" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let top = &found["results"][0];
    assert_eq!(top["path"], "src/config.rs", "{found}");
    assert_eq!(top["unsaved"], true);
    assert_eq!(top["range"]["start"]["line"], 0);
    // The saved chunks of that file give way to the buffer's: no duplicate of parse_config.
    let found = client.search("parse_config").await;
    let config_hits: Vec<&Value> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"] == "src/config.rs")
        .collect();
    assert!(config_hits.iter().all(|r| r["unsaved"] == true), "{found}");

    client.notify("textDocument/didClose", json!({"textDocument": {"uri": file}})).await;
    let mut gone = false;
    for _ in 0..50 {
        let found = client.search("typed_but_unsaved").await;
        if found["results"].as_array().unwrap().iter().all(|r| r["path"] != "src/config.rs") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "closing the buffer brings back the saved file");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_and_external_changes_are_reindexed_by_the_watcher() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    write(&root, "src/added_later.rs", "pub fn appeared_on_disk() {}\n");
    let mut found = Value::Null;
    for _ in 0..200 {
        found = client.search("appeared_on_disk").await;
        if found["results"][0]["path"] == "src/added_later.rs" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found["results"][0]["path"], "src/added_later.rs", "{found}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_root_workspaces_are_all_indexed() {
    let (a, b) = (repo(), tempfile::tempdir().unwrap());
    write(b.path(), "lib/other.go", "package lib\n\nfunc OtherRootFunc() {}\n");
    let (ra, rb) = (canonical(&a), canonical(&b));
    let mut client = TestClient::start(&[&ra, &rb], json!({})).await;
    let mut found = Value::Null;
    for _ in 0..200 {
        found = client.search("OtherRootFunc").await;
        let states: Vec<&Value> =
            found["coverage"].as_array().unwrap().iter().map(|c| &c["state"]).collect();
        if states.iter().all(|s| *s == "ready") && !found["results"].as_array().unwrap().is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found["coverage"].as_array().unwrap().len(), 2);
    assert_eq!(found["results"][0]["uri"], uri(&rb.join("lib/other.go")), "{found}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_get_errors_and_the_next_request_is_answered() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        ("garbage", b"hello there\r\n".to_vec(), -32700),
        ("bad length", b"Content-Length: nope\r\n\r\n{}".to_vec(), -32700),
        ("invalid json", b"Content-Length: 9\r\n\r\n{\"a\": tru".to_vec(), -32700),
        ("invalid utf-8", b"Content-Length: 4\r\n\r\n\"\xff\xfe\"".to_vec(), -32700),
        ("batch", b"Content-Length: 2\r\n\r\n[]".to_vec(), -32600),
        ("absurd length", b"Content-Length: 999999999999\r\n\r\n".to_vec(), -32600),
    ];
    for (name, bytes, _code) in &cases {
        client.send_raw(bytes).await;
        let error = client.read().await;
        assert!(error.get("error").is_some(), "{name}: {error}");
        assert_eq!(error["id"], Value::Null, "{name}: {error}");
        // The next valid request is answered.
        let status = client
            .request("workspace/executeCommand", json!({"command": "sift.status", "arguments": []}))
            .await;
        assert!(status.get("result").is_some(), "after {name}: {status}");
    }
    // A request with bad params is answered with an error carrying its id.
    let bad = client.request("workspace/symbol", json!({"query": 42})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_without_shutdown_ends_abruptly_but_promptly() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.notify("exit", json!(null)).await;
    let ending = tokio::time::timeout(Duration::from_secs(10), client.server.take().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ending, Ending::Abrupt);
    client.clean = true;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_answers_internal_error_and_the_server_lives_on() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client =
        TestClient::start(&[&root], json!({"initializationOptions": {"siftTestHooks": true}}))
            .await;
    let crashed =
        client.request("workspace/executeCommand", json!({"command": "sift.test.panic"})).await;
    assert_eq!(crashed["error"]["code"], -32603, "{crashed}");
    assert!(crashed["error"]["message"].as_str().unwrap().contains("a test asked for a panic"));
    let status =
        client.request("workspace/executeCommand", json!({"command": "sift.status"})).await;
    assert!(status.get("result").is_some(), "{status}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_answers_request_cancelled() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client =
        TestClient::start(&[&root], json!({"initializationOptions": {"siftTestHooks": true}}))
            .await;
    let id = 900;
    client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand", "params": {"command": "sift.test.sleep", "arguments": [30000]}}))
        .await;
    client.notify("$/cancelRequest", json!({"id": id})).await;
    let started = std::time::Instant::now();
    let response = client.response_to(json!(id)).await;
    assert_eq!(response["error"]["code"], -32800, "{response}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "cancelled work must stop, not run to the end"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_hooks_are_off_unless_asked_for() {
    let dir = repo();
    let root = canonical(&dir);
    let mut client = TestClient::start(&[&root], json!({})).await;
    let refused =
        client.request("workspace/executeCommand", json!({"command": "sift.test.panic"})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    client.shutdown().await;
}

/// Waits for the next `textDocument/publishDiagnostics` for `uri`.
async fn next_diagnostics(client: &mut TestClient, uri: &str) -> Value {
    let matches =
        |m: &Value| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
    if let Some(at) = client.seen.iter().position(matches) {
        return client.seen.remove(at)["params"].clone();
    }
    loop {
        let message = client.read().await;
        if message["method"] == "textDocument/publishDiagnostics" && message["params"]["uri"] == uri
        {
            return message["params"].clone();
        }
        client.seen.push(message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_become_diagnostics_with_fix_dismiss_and_silence_actions() {
    let dir = repo();
    let root = canonical(&dir);
    write(&root, "web/check.py", "x = 1\nif x == None:\n    pass\nif x == None:\n    pass\n");
    let mut client =
        TestClient::start(&[&root], json!({"initializationOptions": {"siftTestHooks": true}}))
            .await;
    let file = uri(&root.join("web/check.py"));
    let text = std::fs::read_to_string(root.join("web/check.py")).unwrap();
    client.notify("textDocument/didOpen", json!({"textDocument": {"uri": file, "languageId": "python", "version": 1, "text": text}})).await;
    let finding = |id: &str, line: u32| {
        json!({
            "id": id, "rule": "none-comparison", "severity": "warning",
            "message": "use `is None`", "span": {"start_line": line, "start_col": 3, "end_line": line, "end_col": 12},
            "related": [{"path": root.join("web/check.py"), "span": {"start_line": 0, "start_col": 0, "end_line": 0, "end_col": 1}, "message": "x is set here"}],
            "fix": {"title": "Replace with `x is None`", "span": {"start_line": line, "start_col": 3, "end_line": line, "end_col": 12}, "replacement": "x is None"}
        })
    };
    let published = client
        .request("workspace/executeCommand", json!({"command": "sift.test.publish", "arguments": [file, 1, [finding("f1", 1), finding("f2", 3)]]}))
        .await;
    assert_eq!(published["result"], true, "{published}");
    let diags = next_diagnostics(&mut client, &file).await;
    assert_eq!(diags["version"], 1);
    let list = diags["diagnostics"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["source"], "sift");
    assert_eq!(list[0]["code"], "none-comparison");
    assert_eq!(list[0]["severity"], 2);
    assert_eq!(
        list[0]["range"],
        json!({"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 12}})
    );
    assert_eq!(list[0]["relatedInformation"][0]["message"], "x is set here");

    let actions = client
        .request("textDocument/codeAction", json!({"textDocument": {"uri": file}, "range": list[0]["range"], "context": {"diagnostics": [list[0]]}}))
        .await;
    let actions = actions["result"].as_array().unwrap_or_else(|| panic!("{actions}")).clone();
    let titles: Vec<&str> = actions.iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        [
            "Replace with `x is None`",
            "Dismiss this sift finding",
            "Silence sift rule none-comparison in this file"
        ]
    );
    let annotations = &actions[0]["edit"]["changeAnnotations"]["sift-fix"];
    assert_eq!(annotations["needsConfirmation"], true, "{}", actions[0]);
    assert_eq!(actions[0]["edit"]["documentChanges"][0]["edits"][0]["newText"], "x is None");

    // The server-initiated path: workspace/applyEdit with an annotation that asks to confirm.
    let applied = client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.applyFix", "arguments": [file, "f1"]}),
        )
        .await;
    assert_eq!(applied["result"]["applied"], true, "{applied}");
    let request = client
        .seen
        .iter()
        .find(|m| m["method"] == "workspace/applyEdit")
        .expect("applyEdit sent")
        .clone();
    assert_eq!(
        request["params"]["edit"]["changeAnnotations"]["sift-fix"]["needsConfirmation"],
        true
    );

    // Dismiss one: it is republished without it.
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.dismiss", "arguments": [file, "f1"]}),
        )
        .await;
    let diags = next_diagnostics(&mut client, &file).await;
    let ids: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["data"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["f2"]);
    // Silence the rule: nothing left.
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.silence", "arguments": [file, "none-comparison"]}),
        )
        .await;
    let diags = next_diagnostics(&mut client, &file).await;
    assert_eq!(diags["diagnostics"], json!([]));

    // After an edit, actions for the old findings answer ContentModified.
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.test.publish", "arguments": [file, 1, [finding("f3", 1)]]}),
        )
        .await;
    client
        .notify("textDocument/didChange", json!({"textDocument": {"uri": file, "version": 2}, "contentChanges": [{"text": "y = 2\n"}]}))
        .await;
    let stale = client
        .request("textDocument/codeAction", json!({"textDocument": {"uri": file}, "range": list[0]["range"], "context": {"diagnostics": [list[0]]}}))
        .await;
    assert_eq!(stale["error"]["code"], -32801, "{stale}");
    client.shutdown().await;
}

/// Status of the first workspace, through the `sift.status` command.
async fn first_workspace(client: &mut TestClient) -> Value {
    let status =
        client.request("workspace/executeCommand", json!({"command": "sift.status"})).await;
    status["result"]["workspaces"][0].clone()
}

/// Polls the status until `done` says so (or the wait runs out).
async fn wait_status(client: &mut TestClient, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let ws = first_workspace(client).await;
        if done(&ws) {
            return ws;
        }
        assert!(start.elapsed() < WAIT, "waited too long for {what}: {ws}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_fill_in_the_background_and_hybrid_search_uses_them() {
    if !sift_engine::embed::install::is_installed() {
        sift_test_support::guard::missing(
            sift_test_support::guard::Need::Model,
            "the embedding models are not installed",
            "run `sift model install`",
        );
        return;
    }
    let dir = repo();
    let root = canonical(&dir);
    // This test is about embeddings: turn them back on.
    std::fs::remove_file(root.join(".sift/config.toml")).unwrap();
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let ws = wait_status(&mut client, "embeddings", |ws| ws["embedState"] == "ready").await;
    assert_eq!(ws["embedded"], ws["chunks"], "{ws}");
    assert!(ws["embedModel"].as_str().unwrap().contains("static"), "{ws}");

    let found = client.search("check password").await;
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert_eq!(found["results"][0]["path"], "web/login.py", "{found}");
    let semantic =
        client.request("sift/search", json!({"query": "verify a login", "mode": "semantic"})).await;
    assert_eq!(semantic["result"]["mode"], "semantic", "{semantic}");
    assert!(!semantic["result"]["results"].as_array().unwrap().is_empty(), "{semantic}");
    let lexical =
        client.request("sift/search", json!({"query": "check password", "mode": "lexical"})).await;
    assert_eq!(lexical["result"]["mode"], "lexical", "{lexical}");

    // Pause: a new file is indexed (lexically searchable) but not embedded until resumed.
    let paused = client
        .request("workspace/executeCommand", json!({"command": "sift.embeddings.pause"}))
        .await;
    assert!(paused.get("result").is_some(), "{paused}");
    let before = first_workspace(&mut client).await["embedded"].as_u64().unwrap();
    write(&root, "src/cache.rs", "/// Keeps recent answers.\npub fn remember(key: &str) {}\n");
    let ws = wait_status(&mut client, "the new file", |ws| {
        ws["chunks"].as_u64() > Some(before) && ws["embedState"] == "paused"
    })
    .await;
    assert_eq!(ws["embedded"].as_u64(), Some(before), "paused: nothing embedded: {ws}");
    client.request("workspace/executeCommand", json!({"command": "sift.embeddings.resume"})).await;
    let ws = wait_status(&mut client, "resumed embeddings", |ws| {
        ws["embedState"] == "ready" && ws["embedded"] == ws["chunks"]
    })
    .await;
    assert!(ws["embedded"].as_u64() > Some(before), "{ws}");
    client.shutdown().await;
}

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t"])
        .args(args)
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_command_publishes_findings_on_added_lines_and_clears_them_next_time() {
    let dir = repo();
    let root = canonical(&dir);
    let old = "def check(x):\n    return x is 'a'\n";
    write(&root, "app/checks.py", old);
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "base"]);
    // The change adds one bug; the old one on an untouched line is not the change's.
    write(&root, "app/checks.py", &format!("{old}\ndef other(y):\n    return y is 'b'\n"));
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let file = uri(&root.join("app/checks.py"));

    let answer =
        client.request("workspace/executeCommand", json!({"command": "sift.review"})).await;
    assert_eq!(answer["result"]["findings"], 1, "{answer}");
    let published = next_diagnostics(&mut client, &file).await;
    let diagnostics = published["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{published}");
    assert_eq!(diagnostics[0]["source"], "sift");
    assert_eq!(diagnostics[0]["code"], "python/is-literal");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 4, "{published}");

    // Fixed and reviewed again: the file's diagnostics are cleared.
    write(&root, "app/checks.py", &format!("{old}\ndef other(y):\n    return y == 'b'\n"));
    let answer =
        client.request("workspace/executeCommand", json!({"command": "sift.review"})).await;
    assert_eq!(answer["result"]["findings"], 0, "{answer}");
    let published = next_diagnostics(&mut client, &file).await;
    assert_eq!(published["diagnostics"], json!([]), "{published}");
    client.shutdown().await;
}

/// A repository with one commit, for the review tests.
fn committed_repo(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = repo();
    let root = canonical(&dir);
    for (path, text) in files {
        write(&root, path, text);
    }
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "base"]);
    (dir, root)
}

/// The ids (fingerprints) of the diagnostics in a publishDiagnostics' params.
fn ids(published: &Value) -> Vec<String> {
    published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["data"]["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dismissals_and_silences_outlive_the_server() {
    let (dir, root) = committed_repo(&[("app/a.py", "A = 1\n"), ("app/b.py", "B = 1\n")]);
    write(&root, "app/a.py", "A = 1\n\ndef f(x):\n    return x is 'a'\n");
    write(&root, "app/b.py", "B = 1\n\ndef g(y):\n    return y is 'b'\n");
    let (a, b) = (uri(&root.join("app/a.py")), uri(&root.join("app/b.py")));
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let review = json!({"command": "sift.review"});
    let answer = client.request("workspace/executeCommand", review.clone()).await;
    assert_eq!(answer["result"]["findings"], 2, "{answer}");
    let id = ids(&next_diagnostics(&mut client, &a).await)[0].clone();
    next_diagnostics(&mut client, &b).await;

    // Dismiss a's finding, with a reason; silence the rule in b.
    let dismissed = client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.dismiss", "arguments": [a, id, "a is a sentinel"]}),
        )
        .await;
    assert_eq!(dismissed["result"]["remembered"], true, "{dismissed}");
    assert_eq!(next_diagnostics(&mut client, &a).await["diagnostics"], json!([]));
    let silenced = client
        .request(
            "workspace/executeCommand",
            json!({"command": "sift.silence", "arguments": [b, "python/is-literal"]}),
        )
        .await;
    assert_eq!(silenced["result"]["remembered"], true, "{silenced}");
    assert_eq!(next_diagnostics(&mut client, &b).await["diagnostics"], json!([]));
    let feedback = std::fs::read_to_string(root.join(".sift/feedback/dismissed.jsonl")).unwrap();
    assert!(feedback.contains(&format!("\"fingerprint\":\"{id}\"")), "{feedback}");
    assert!(feedback.contains("\"path\":\"app/a.py\"") && feedback.contains("a is a sentinel"));
    let config = std::fs::read_to_string(root.join(".sift/config.toml")).unwrap();
    assert!(
        config.contains("[review.rules.per_path_disable]\n\"/app/b.py\" = [\"python/is-literal\"]"),
        "{config}"
    );
    assert!(!root.join(".sift/review.toml").exists(), "the deprecated file is not created");

    // Reviewed again: neither comes back.
    let answer = client.request("workspace/executeCommand", review.clone()).await;
    assert_eq!(answer["result"]["findings"], 0, "{answer}");
    // Both are counted: one dismissal, one finding the per-path setting silences.
    assert_eq!(answer["result"]["suppressed"], 2, "{answer}");
    assert_eq!(answer["result"]["suppressed_by"], json!({"dismissals": 1, "config": 1}));
    let message = answer["result"]["message"].as_str().unwrap();
    assert!(
        message.contains("1 dismissed earlier and 1 silenced by the review rules"),
        "{message}"
    );
    client.shutdown().await;

    // A new session (the editor restarted): still gone.
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let answer = client.request("workspace/executeCommand", review.clone()).await;
    assert_eq!(answer["result"]["findings"], 0, "{answer}");
    // A new bug in a is a new finding.
    write(
        &root,
        "app/a.py",
        "A = 1\n\ndef f(x):\n    return x is 'a'\n\ndef h(z):\n    return z is 3\n",
    );
    let answer = client.request("workspace/executeCommand", review).await;
    assert_eq!(answer["result"]["findings"], 1, "{answer}");
    client.shutdown().await;
    drop(dir);
}

/// Sends didChange (whole text) and didSave for `rel`, after writing it to disk.
async fn save(client: &mut TestClient, root: &Path, rel: &str, version: i32, text: &str) {
    write(root, rel, text);
    let file = uri(&root.join(rel));
    client
        .notify("textDocument/didChange", json!({"textDocument": {"uri": file, "version": version}, "contentChanges": [{"text": text}]}))
        .await;
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": file}})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saving_a_file_reviews_its_diff_from_head() {
    let old = "def check(x):\n    return x is 'a'\n";
    let (_dir, root) = committed_repo(&[("app/checks.py", old)]);
    let mut client = TestClient::start(&[&root], json!({})).await;
    client.wait_for_progress_end().await;
    let file = uri(&root.join("app/checks.py"));
    client.notify("textDocument/didOpen", json!({"textDocument": {"uri": file, "languageId": "python", "version": 1, "text": old}})).await;

    // A bug on an added line appears on save; the old one on an untouched line does not.
    let buggy = format!("{old}\ndef other(y):\n    return y is 'b'\n");
    save(&mut client, &root, "app/checks.py", 2, &buggy).await;
    let published = next_diagnostics(&mut client, &file).await;
    let list = published["diagnostics"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{published}");
    assert_eq!(list[0]["code"], "python/is-literal");
    assert_eq!(list[0]["range"]["start"]["line"], 4, "{published}");
    assert_eq!(published["version"], 2, "{published}");

    // Fixed and saved: cleared.
    save(&mut client, &root, "app/checks.py", 3, &buggy.replace("y is 'b'", "y == 'b'")).await;
    let published = next_diagnostics(&mut client, &file).await;
    assert_eq!(published["diagnostics"], json!([]), "{published}");

    // A burst of saves: what is published describes the last one.
    save(&mut client, &root, "app/checks.py", 4, &buggy).await;
    let last = format!("{old}\n\n\ndef other(y):\n    return y is 'b'\n");
    save(&mut client, &root, "app/checks.py", 5, &last).await;
    // Usually one publication (the saves are coalesced); on a loaded machine the first save may
    // be reviewed alone, but never published after the second one's.
    let mut published = next_diagnostics(&mut client, &file).await;
    while published["version"] != 5 {
        assert_eq!(published["version"], 4, "{published}");
        published = next_diagnostics(&mut client, &file).await;
    }
    assert_eq!(published["diagnostics"][0]["range"]["start"]["line"], 6, "{published}");

    // An untracked new file: all of its lines are new.
    let new = uri(&root.join("app/new.py"));
    write(&root, "app/new.py", "def n(v):\n    return v is 1\n");
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": new}})).await;
    let published = next_diagnostics(&mut client, &new).await;
    assert_eq!(published["diagnostics"][0]["range"]["start"]["line"], 1, "{published}");
    client.shutdown().await;
}
