//! One search under every front end, with the real (installed) static model: `sift search
//! --json`, the server's `sift/search` and `workspace/symbol` rank the same files for the same
//! query, and a name that only an unsaved buffer holds comes first in the server even in a
//! repository where the query's other words are common. Skipped when the models are not
//! installed, unless `SIFT_REQUIRE_MODEL=1`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sift_tests::{StdioServer, json_lines, models_installed, sift_with_models, stderr, write};

/// `helper` and `unsaved` are rare words concentrated in a few files (as in Django's
/// `helpers.py` files).
fn corpus(root: &Path) {
    for i in 0..300 {
        write(
            root,
            &format!("app{}/mod{i}.py", i % 20),
            format!("def compute_{i}(x):\n    return x * {i} + offset(x)\n"),
        );
    }
    for i in 0..10 {
        write(
            root,
            &format!("pkg{i}/helpers.py"),
            format!(
                "def unsaved_helper_{i}(value):\n    \"\"\"A helper that keeps unsaved helper state.\"\"\"\n    return helper_state(value, {i})\n"
            ),
        );
    }
    write(
        root,
        "net/retry.py",
        "def backoff_delay(attempt):\n    \"\"\"Seconds to sleep before trying the request again.\"\"\"\n    return min(60, 2 ** attempt)\n",
    );
    write(
        root,
        "auth/login.py",
        "class LoginView:\n    def post(self, request):\n        return check_password(request.user, request.POST['password'])\n",
    );
}

/// `(path, first line)` of `sift search --json` (hybrid, the default).
fn cli(root: &Path, query: &str, k: usize) -> Vec<(String, u64)> {
    let out = sift_with_models()
        .args(["search", "--path", root.to_str().unwrap(), "--json", "-k", &k.to_string(), query])
        .output()
        .expect("sift runs");
    assert!(out.status.success(), "{}", stderr(&out));
    json_lines(&out)
        .iter()
        .map(|h| (h["path"].as_str().unwrap().to_string(), h["start_line"].as_u64().unwrap()))
        .collect()
}

/// Waits until the server's index and embeddings are ready, the progressive upgrade's
/// included (the CLI uses it once `sift index` has computed it); returns the status.
fn wait_ready(server: &mut StdioServer) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = server.request("workspace/executeCommand", json!({"command": "sift.status"}));
        let ws = &status["result"]["workspaces"][0];
        let upgraded = ws["embedUpgrade"].is_null() || ws["embedUpgrade"]["inUse"] == true;
        if ws["state"] == "ready" && ws["embedState"] == "ready" && upgraded {
            return ws.clone();
        }
        assert!(Instant::now() < deadline, "not ready: {status}\n{}", server.stderr_tail());
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn search(server: &mut StdioServer, query: &str, k: usize) -> Value {
    let response = server.request("sift/search", json!({"query": query, "k": k}));
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

fn symbols(server: &mut StdioServer, query: &str) -> Vec<(String, u64)> {
    let response = server.request("workspace/symbol", json!({"query": query}));
    response["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"))
        .iter()
        .map(|s| {
            let uri = s["location"]["uri"].as_str().unwrap();
            (uri.to_string(), s["location"]["range"]["start"]["line"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn the_cli_and_the_server_rank_alike_and_unsaved_names_come_first() {
    if !models_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    corpus(&root);
    let out = sift_with_models().args(["index", root.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let mut server = StdioServer::start_with_models(&[]);
    server.initialize(&root);
    let status = wait_ready(&mut server);
    // The default configuration's upgrade (the transformer, which `sift model install` puts
    // beside the static model) was computed by `sift index`: the server searches with it too.
    assert_eq!(status["embedUpgrade"]["model"], "all-minilm-l6-v2", "{status}");
    assert_eq!(status["embedUpgrade"]["state"], "ready", "{status}");
    assert!(
        status["embedModel"].as_str().unwrap().starts_with("all-MiniLM-L6-v2-int8"),
        "{status}"
    );
    for query in ["wait before trying the request again", "check_password", "helper state"] {
        let from_cli = cli(&root, query, 10);
        let result = search(&mut server, query, 10);
        assert_eq!(result["mode"], "hybrid", "{result}");
        let from_server: Vec<(String, u64)> = result["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let line = r["range"]["start"]["line"].as_u64().unwrap() + 1;
                (r["path"].as_str().unwrap().to_string(), line)
            })
            .collect();
        assert_eq!(from_cli, from_server, "{query:?}");
        // workspace/symbol: the same ranking (50 deep), each result at its best line.
        let files: Vec<String> = symbols(&mut server, query)
            .into_iter()
            .take(from_cli.len())
            .map(|(uri, _)| {
                uri.strip_prefix(&format!("file://{}/", root.display())).unwrap().into()
            })
            .collect();
        let cli_files: Vec<String> = from_cli.into_iter().map(|(p, _)| p).collect();
        assert_eq!(files, cli_files, "{query:?}");
    }

    // An unsaved buffer with a name found nowhere else.
    let uri = format!("file://{}/scratch/new.py", root.display());
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1,
            "text": "def qwzvbn_unsaved_helper():\n    return 1\n"}}),
    );
    let query = "qwzvbn_unsaved_helper";
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let result = search(&mut server, query, 5);
        if result["results"][0]["unsaved"] == true || Instant::now() > deadline {
            break result;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(result["results"][0]["path"], "scratch/new.py", "{result}");
    assert_eq!(result["results"][0]["unsaved"], true, "{result}");
    assert_eq!(result["mode"], "hybrid", "{result}");
    let first = symbols(&mut server, query).into_iter().next().unwrap();
    assert_eq!(first.0, uri);
    let response = server.request("shutdown", Value::Null);
    assert!(response.get("error").is_none(), "{response}");
    server.notify("exit", Value::Null);
}
