//! `sift mcp` end to end: a real MCP client process (the MCP Python SDK, `tests/mcp/client.py`)
//! starts the server on a git repository and calls every tool; raw stdio checks what no SDK
//! client sends (lines that are not JSON, a batch, an overlong line) and that the server ends
//! when stdin closes.
//!
//! The client test needs a Python with the `mcp` package: `SIFT_MCP_PYTHON` names it (the
//! README's test command makes a virtual environment with `mcp` from PyPI and sets it, with
//! `SIFT_REQUIRE_MCP_CLIENT=1`, which makes a missing client a failure instead of a skip).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sift_test_support::guard::{Need, missing};
use sift_test_support::openai::{FakeServer, Reply};
use sift_tests::{git, sift, sift_bin, write};

const APP: &str = "\"\"\"The application.\"\"\"\n\n\ndef parse_config(path):\n    \"\"\"Parses the configuration file at path.\"\"\"\n    with open(path) as f:\n        return dict(line.split(\"=\", 1) for line in f)\n\n\nclass Server:\n    def start(self, config):\n        return config\n";

/// A git repository with `src/app.py` committed, a secret `.env`, and an uncommitted change
/// that the review flags (`y is 1`).
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    git(dir.path(), &["init", "-q", root.to_str().unwrap()]);
    write(&root, "src/app.py", APP);
    write(&root, ".env", "API_KEY=sk-live-very-secret\n");
    write(&root, ".gitignore", ".sift/\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "app"]);
    write(&root, "src/app.py", format!("{APP}\n\ndef check(y):\n    return y is 1\n"));
    write(dir.path(), "outside.txt", "not yours\n");
    dir
}

fn mcp_python() -> Option<String> {
    std::env::var("SIFT_MCP_PYTHON").ok().filter(|p| !p.is_empty())
}

#[test]
fn a_real_mcp_client_calls_every_tool_and_bad_calls_are_tool_errors() {
    let Some(python) = mcp_python() else {
        missing(
            Need::McpClient,
            "SIFT_MCP_PYTHON (a Python with the `mcp` package) is not set",
            "pip install mcp==2.3.0 and point SIFT_MCP_PYTHON at that Python",
        );
        return;
    };
    let dir = repository();
    let root = dir.path().join("repo");
    let report_path = dir.path().join("report.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(sift_bin())
        .arg(&root)
        .arg(&report_path)
        .env("SIFT_HOME", "/nonexistent/sift-test-home")
        .output()
        .expect("python runs");
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "the client failed: {}\n{}\nserver log:\n{log}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    eprintln!("protocol version negotiated: {}", report["protocol_version"]);
    assert_eq!(report["server_name"], "sift");

    // The tool list: the six tools, short descriptions, schemas that say what is required.
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "read", "outline", "review", "memory_search", "memory_add"]);
    let listed: usize = tools.iter().map(|t| t.to_string().len()).sum();
    // About four characters a token: the whole list (names, descriptions, schemas) is the cost
    // every turn of the client's model pays.
    eprintln!("tool list: {listed} characters, about {} tokens", listed / 4);
    assert!(listed / 4 < 1500, "the tool list costs about {} tokens", listed / 4);
    assert_eq!(tools[0]["schema"]["required"], json!(["query"]));
    assert!(tools.iter().all(|t| t["read_only"] == (t["name"] != "memory_add")));

    // search: ranked spans with path, lines and symbol, and the index's coverage.
    let search = &report["search"];
    let first = &search["structured"]["results"][0];
    assert_eq!(first["path"], "src/app.py", "{search}");
    assert_eq!(first["symbol"], "parse_config", "{search}");
    assert!(first["start_line"].as_u64().unwrap() <= 4 && first["end_line"].as_u64().unwrap() >= 7);
    assert_eq!(search["structured"]["coverage"]["state"], "ready");
    assert!(search["text"].as_str().unwrap().contains("src/app.py:"), "{search}");
    // The list the client was shown is recorded, as MCP's, without the query's words.
    let fates = std::fs::read_to_string(root.join(".sift/fates/fates.jsonl")).unwrap_or_default();
    let listed: Vec<Value> = fates.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        listed.iter().any(|r| r["kind"] == "search"
            && r["front"] == "mcp"
            && r["path"] == "src/app.py"
            && r.get("text").is_none()),
        "{fates}"
    );

    let symbols = &report["outline"]["structured"]["symbols"];
    let names: Vec<&str> =
        symbols.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"parse_config") && names.contains(&"Server"), "{symbols}");
    assert_eq!(report["read"]["structured"]["text"], "\"\"\"The application.\"\"\"\n\n\n");
    assert_eq!(report["read"]["structured"]["total_lines"], 16);

    // review: the uncommitted `y is 1`, from the engine's review with its JSON shape.
    let review = &report["review"];
    assert!(!review["is_error"].as_bool().unwrap(), "{review}");
    let findings = review["structured"]["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["rule"] == "python/is-literal" && f["start_line"] == 16),
        "{review}"
    );

    // memory: a note written through the engine, then found by its meaning.
    let added = &report["memory_add"];
    assert!(!added["is_error"].as_bool().unwrap(), "{added}");
    let slug = added["structured"]["slug"].as_str().unwrap();
    assert!(root.join(format!(".sift/memory/{slug}.md")).is_file());
    let found = &report["memory_search"]["structured"]["notes"];
    assert_eq!(found[0]["slug"], slug, "{found}");
    // A note about the task at hand, not the codebase, is refused (and nothing is written).
    let talk = &report["task_talk"];
    assert!(talk["is_error"].as_bool().unwrap(), "{talk}");
    assert!(talk["text"].as_str().unwrap().contains("not about the task at hand"), "{talk}");
    let written = std::fs::read_dir(root.join(".sift/memory")).unwrap().count();
    assert_eq!(written, 1, "only the first note was written");

    // Bad calls: tool errors that name the problem, and the server goes on.
    let missing = &report["missing_argument"];
    assert!(
        missing["is_error"].as_bool().unwrap()
            && missing["text"].as_str().unwrap().contains("query")
    );
    let wrong = &report["wrong_type"];
    assert!(
        wrong["is_error"].as_bool().unwrap() && wrong["text"].as_str().unwrap().contains("path")
    );
    for call in ["outside", "secret"] {
        let answer = &report[call];
        assert!(answer["is_error"].as_bool().unwrap(), "{call}: {answer}");
        assert!(!answer["text"].as_str().unwrap().contains("secret") || call == "secret");
        assert!(
            !answer.to_string().contains("sk-live") && !answer.to_string().contains("not yours")
        );
    }
    assert_eq!(report["unknown_tool"]["raised"], true);
    assert!(report["unknown_tool"]["message"].as_str().unwrap().contains("rm_rf"));
    assert!(!report["after"]["is_error"].as_bool().unwrap());
}

/// A raw stdio client: lines in, lines out.
struct Raw {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Raw {
    fn start(root: &Path) -> Raw {
        Raw::start_with(root, &[])
    }

    fn start_with(root: &Path, args: &[&str]) -> Raw {
        let mut child = sift()
            .args(["mcp", "--path"])
            .arg(root)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sift mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the server wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Raw { child, lines: rx }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> Value {
        self.lines.recv_timeout(Duration::from_secs(20)).expect("the server answers")
    }
}

#[test]
fn malformed_lines_get_errors_and_the_server_lives_on_until_stdin_closes() {
    let dir = repository();
    let root = dir.path().join("repo");
    let mut server = Raw::start(&root);
    server.send(b"{this is not json\n");
    assert_eq!(server.next()["error"]["code"], -32700);
    server.send(b"\xff\xfe\x00garbage\n");
    let answer = server.next();
    assert!(answer["error"]["message"].as_str().unwrap().contains("UTF-8"), "{answer}");
    server.send(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    assert!(server.next()["error"]["message"].as_str().unwrap().contains("batch"));
    let mut long = vec![b' '; super_long()];
    long.extend_from_slice(b"1\n");
    server.send(&long);
    assert!(server.next()["error"]["message"].as_str().unwrap().contains("longer than"));

    // After all that, a normal session.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    server.send(format!("{init}\n").as_bytes());
    let answer = server.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18", "the client's revision is kept");
    server.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    server.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
    let listed = server.next();
    assert_eq!(listed["id"], 2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"memory_add"), "memory_add is opt-in: {names:?}");
    // A call with arguments of the wrong shape: a tool error, not a dead server.
    server.send(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"read\",\"arguments\":{\"path\":\"src/app.py\",\"start_line\":0}}}\n");
    let answer = server.next();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("start_line"));
    server.send(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"outline\",\"arguments\":{\"path\":\"src/app.py\"}}}\n");
    let answer = server.next();
    assert_eq!(answer["id"], 4);
    assert!(
        answer["result"]["content"][0]["text"].as_str().unwrap().contains("parse_config"),
        "{answer}"
    );

    // Closing stdin ends the server, successfully, and soon.
    drop(server.child.stdin.take());
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the server outlived its stdin");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One byte more than the server accepts on a line (its `MAX_LINE`).
fn super_long() -> usize {
    (16 << 20) + 1
}

#[test]
fn a_missing_folder_is_one_clear_error() {
    let out = sift()
        .args(["mcp", "--path", "/nonexistent/nowhere"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/nowhere") && err.lines().count() == 1, "{err}");
}

/// The command line a snippet of docs/mcp.md starts (`sift` first).
fn snippet_command(kind: &str, body: &str) -> Vec<String> {
    match kind {
        "sh" => {
            let (_, command) =
                body.trim().split_once(" -- ").expect("claude mcp add NAME -- COMMAND");
            command.split_whitespace().map(str::to_string).collect()
        }
        "toml" => {
            let table: toml::Table = toml::from_str(body).expect("the TOML snippet parses");
            let server = &table["mcp_servers"]["sift"];
            let mut line = vec![server["command"].as_str().unwrap().to_string()];
            line.extend(
                server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()),
            );
            line
        }
        "json" => {
            let value: Value = serde_json::from_str(body).expect("the JSON snippet parses");
            let servers = ["mcpServers", "context_servers", "servers"]
                .iter()
                .find_map(|key| value.get(key))
                .expect("a known servers key");
            let server = &servers["sift"];
            let mut line = vec![server["command"].as_str().unwrap().to_string()];
            line.extend(
                server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()),
            );
            line
        }
        other => panic!("a snippet of kind {other}"),
    }
}

#[test]
fn the_readme_snippets_start_a_server_that_answers() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/mcp.md"))
            .unwrap();
    let dir = repository();
    let root = dir.path().join("repo");
    let mut tried = Vec::new();
    for (i, _) in readme.match_indices("<!-- mcp-snippet: ") {
        let rest = &readme[i..];
        let name = rest["<!-- mcp-snippet: ".len()..].split_once(' ').unwrap().0.to_string();
        let fence = rest.find("```").unwrap();
        let after = &rest[fence + 3..];
        let (kind, after) = after.split_once('\n').unwrap();
        let body = &after[..after.find("```").unwrap()];
        let line = snippet_command(kind, body);
        assert_eq!(line[0], "sift", "{name}: the snippet runs sift");
        let args: Vec<String> = line[1..]
            .iter()
            .map(|a| a.replace("${workspaceFolder}", root.to_str().unwrap()))
            .collect();
        // Clients start the server in the project folder.
        let mut child = sift()
            .args(&args)
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": name, "version": "0"}}});
        writeln!(stdin, "{init}").unwrap();
        writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}")
            .unwrap();
        writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}}").unwrap();
        stdin.flush().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(first["result"]["serverInfo"]["name"], "sift", "{name}: {first}");
        let listed: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 5, "{name}: {listed}");
        drop(stdin);
        assert!(child.wait().unwrap().success(), "{name}");
        tried.push(name);
    }
    assert_eq!(tried, ["claude", "codex", "cursor", "zed", "vscode"]);
}

/// The tools `sift agent` offers its model, by name: (description, parameters).
fn agent_tools(dir: &Path) -> std::collections::BTreeMap<String, (Value, Value)> {
    let server = FakeServer::start([Reply::text(&["Nothing to do."])]).unwrap();
    let out = sift()
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", server.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .args(["agent", "--path"])
        .arg(dir.join("repo"))
        .arg("say hello")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let request = server.requests()[0].json();
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            (
                f["name"].as_str().unwrap().to_string(),
                (f["description"].clone(), f["parameters"].clone()),
            )
        })
        .collect()
}

#[test]
fn the_agent_and_mcp_serve_their_common_tools_from_one_registry() {
    let dir = repository();
    let agent = agent_tools(dir.path());
    let mut server = Raw::start_with(&dir.path().join("repo"), &["--allow-memory-add"]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    server.send(format!("{init}\n").as_bytes());
    server.next();
    server.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    server.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
    let listed = server.next();
    let mcp = listed["result"]["tools"].as_array().unwrap();
    let by_name = |name: &str| mcp.iter().find(|t| t["name"] == name).cloned();

    // A tool offered to both under one name: the same description, the same schema.
    let mut shared = Vec::new();
    for tool in mcp {
        let name = tool["name"].as_str().unwrap();
        if let Some((description, parameters)) = agent.get(name) {
            if name == "review" {
                continue; // two tools: the agent's reviews its pending change, MCP's a revision
            }
            assert_eq!(&tool["description"], description, "{name}");
            assert_eq!(&tool["inputSchema"], parameters, "{name}");
            shared.push(name);
        }
    }
    assert_eq!(shared, ["search", "read", "outline"], "{listed}");
    // The agent's `recall` is MCP's `memory_search`: one entry, one schema.
    let recall = by_name("memory_search").unwrap();
    assert_eq!(recall["inputSchema"], agent["recall"].1);
    assert_eq!(recall["description"], agent["recall"].0);
    // What edits, runs or proposes is the agent's alone.
    for name in ["edit", "create", "delete", "run", "check", "remember"] {
        assert!(agent.contains_key(name), "{name}");
        assert!(by_name(name).is_none(), "{name} reached MCP");
    }
    assert_ne!(by_name("review").unwrap()["inputSchema"], agent["review"].1);
}
