//! Memory notes through the real binary: `sift memory` add / list / show / edit / verify / rm /
//! search with clear errors, and the language server over stdio: hover on cited code, the code
//! lens above it, a note going stale after the cited code changes on disk, and the
//! `sift.memory.*` commands (a note added for a selection, verified, deleted).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sift_tests::{StdioServer, json_lines, run, stderr, stdout, write};

const CACHE: &str = "class Cache:\n    \"\"\"An LRU cache.\"\"\"\n\n    def get(self, key):\n        value = self.items.pop(key)\n        self.items[key] = value\n        return value\n\n\ndef backoff(attempt):\n    return min(60, 2 ** attempt)\n";

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app/cache.py", CACHE);
    write(dir.path(), ".env", "TOKEN=abc\n");
    dir
}

fn sift_in(root: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![args[0], args[1], "--path", root.to_str().unwrap()];
    all.extend_from_slice(&args[2..]);
    run(&all)
}

#[test]
fn the_cli_adds_lists_verifies_and_removes_notes() {
    let dir = repo();
    let root = dir.path();
    let out = sift_in(
        root,
        &[
            "memory",
            "add",
            "--cite",
            "app/cache.py#Cache.get",
            "get moves the key to the end: the LRU order",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let slug = "get-moves-the-key-to-the-end-the-lru-order";
    assert!(stdout(&out).contains(slug), "{}", stdout(&out));
    assert!(root.join(format!(".sift/memory/{slug}.md")).exists());

    // Citations that do not resolve are refused, saying why, and nothing is written.
    for (spec, why) in [
        ("app/cache.py#put", "it defines Cache, Cache.get, backoff"),
        ("app/cache.py:90", "has 11 lines"),
        (".env", "secret"),
        ("../elsewhere.py", "outside"),
    ] {
        let out = sift_in(root, &["memory", "add", "--cite", spec, "a note"]);
        assert!(!out.status.success(), "{spec}");
        assert!(stderr(&out).contains(why), "{spec}: {}", stderr(&out));
    }
    assert_eq!(std::fs::read_dir(root.join(".sift/memory")).unwrap().count(), 1);

    let list = sift_in(root, &["memory", "list", "--json"]);
    let notes = json_lines(&list);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["state"], "fresh");
    assert_eq!(notes[0]["citations"][0]["lines"], "4-7");

    // The cited code changes: stale, with the reason; verify exits 1 while it is.
    let path = root.join("app/cache.py");
    std::fs::write(&path, CACHE.replace("return value", "return value or None")).unwrap();
    let list = json_lines(&sift_in(root, &["memory", "list", "--json", "--stale"]));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["state"], "stale");
    assert!(list[0]["stale"].as_str().unwrap().contains("changed"), "{}", list[0]);
    let verify = sift_in(root, &["memory", "verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    // Confirming the note re-anchors it.
    let verify = sift_in(root, &["memory", "verify", slug]);
    assert!(verify.status.success(), "{}", stderr(&verify));
    let shown = json_lines(&sift_in(root, &["memory", "show", slug, "--json"]));
    assert_eq!(shown[0]["state"], "fresh");

    // Lines added above: moved; verify without names follows it and rewrites the hint only.
    std::fs::write(&path, format!("import os\n\n{}", std::fs::read_to_string(&path).unwrap()))
        .unwrap();
    assert_eq!(json_lines(&sift_in(root, &["memory", "list", "--json"]))[0]["state"], "moved");
    assert!(sift_in(root, &["memory", "verify"]).status.success());
    let shown = json_lines(&sift_in(root, &["memory", "show", slug, "--json"]));
    assert_eq!(shown[0]["state"], "fresh");
    assert_eq!(shown[0]["citations"][0]["lines"], "6-9");

    // Edit without an editor, search, remove.
    let out = sift_in(
        root,
        &["memory", "edit", slug, "--text", "Cache.get keeps LRU order by re-inserting the key."],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let found = json_lines(&sift_in(root, &["memory", "search", "--json", "LRU", "order"]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0]["text"].as_str().unwrap().contains("re-inserting"));
    let out = sift_in(root, &["memory", "rm", "no-such-note"]);
    assert!(stderr(&out).contains("no note"), "{}", stderr(&out));
    let out = sift_in(root, &["memory", "rm", "../../etc"]);
    assert!(stderr(&out).contains("not a note's name"), "{}", stderr(&out));
    assert!(sift_in(root, &["memory", "rm", slug]).status.success());
    assert!(stdout(&sift_in(root, &["memory", "list"])).contains("0 notes"));
}

/// Waits until the server has indexed (and so checked the notes).
fn ready(server: &mut StdioServer) {
    server.wait_for_progress_end();
}

fn hover(server: &mut StdioServer, uri: &str, line: u32) -> Value {
    server.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": 8}}),
    )
}

/// Whether the server asked for a code-lens refresh (seen already, or within `wait`).
fn lens_refresh_within(server: &mut StdioServer, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        if server.seen.iter().any(|m| m["method"] == "workspace/codeLens/refresh") {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        if let Some(message) = server.read(Duration::from_millis(100)) {
            server.seen.push(message);
        }
    }
}

fn command(server: &mut StdioServer, name: &str, args: Value) -> Value {
    server.request("workspace/executeCommand", json!({"command": name, "arguments": [args]}))
}

#[test]
fn the_server_shows_notes_on_hover_and_in_code_lenses_and_flags_stale_ones() {
    let dir = repo();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let out = sift_in(
        &root,
        &["memory", "add", "--cite", "app/cache.py#Cache.get", "get re-inserts the key: LRU order"],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let mut server = StdioServer::start(&[]);
    // A client that re-asks for code lenses when told to (VS Code does).
    let init = server.request(
        "initialize",
        json!({
            "processId": null,
            "capabilities": {
                "window": {"workDoneProgress": true},
                "workspace": {"codeLens": {"refreshSupport": true}},
            },
            "workspaceFolders": [{"uri": format!("file://{}", root.display()), "name": "root"}],
        }),
    );
    server.notify("initialized", json!({}));
    assert_eq!(init["result"]["capabilities"]["hoverProvider"], true, "{init}");
    assert!(init["result"]["capabilities"]["codeLensProvider"].is_object());
    ready(&mut server);
    let uri = format!("file://{}/app/cache.py", root.display());

    // Hover inside the cited method (0-based line 4 is `value = …`), and outside it.
    let started = Instant::now();
    let answer = hover(&mut server, &uri, 4);
    let took = started.elapsed();
    let text = answer["result"]["contents"]["value"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("get re-inserts the key"), "{answer}");
    assert!(!text.contains("stale"), "{text}");
    assert!(hover(&mut server, &uri, 10)["result"].is_null(), "backoff has no note");
    eprintln!("hover with notes answered in {took:?} (over stdio, debug build)");

    let lenses = server.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}}));
    let lenses = lenses["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(lenses.len(), 1, "{lenses:?}");
    assert_eq!(lenses[0]["range"]["start"]["line"], 3);
    assert_eq!(lenses[0]["command"]["title"], "1 sift note");
    assert_eq!(lenses[0]["command"]["command"], "sift.memory.show");

    // The cited code changes on disk; after the watcher's update the note is stale.
    std::fs::write(
        root.join("app/cache.py"),
        CACHE.replace("return value", "return value or None"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = hover(&mut server, &uri, 4)["result"]["contents"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if text.contains("stale") {
            assert!(text.contains("changed"), "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "the note never went stale: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let listed = command(&mut server, "sift.memory.list", json!({"stale": true}));
    let notes = listed["result"]["notes"].as_array().cloned().unwrap_or_default();
    assert_eq!(notes.len(), 1, "{listed}");
    let slug = notes[0]["slug"].as_str().unwrap().to_string();
    let lenses = server.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}}));
    assert_eq!(lenses["result"][0]["command"]["title"], "1 sift note (1 stale)");

    // Verify (the user confirms it): fresh again.
    let verified = command(&mut server, "sift.memory.verify", json!({"slug": slug}));
    assert_eq!(verified["result"]["verified"], true, "{verified}");
    let listed = command(&mut server, "sift.memory.list", json!({}));
    assert_eq!(listed["result"]["notes"][0]["state"], "fresh", "{listed}");

    // A note for a selection inside `backoff` cites the function; bad input is an error.
    server.seen.clear();
    let added = command(
        &mut server,
        "sift.memory.add",
        json!({
            "uri": uri,
            "range": {"start": {"line": 10, "character": 4}, "end": {"line": 10, "character": 10}},
            "text": "Backoff is capped at a minute.",
        }),
    );
    assert_eq!(added["result"]["cites"][0], "app/cache.py#backoff", "{added}");
    // The new note's lens needs no edit of the document: the server asks the client to refresh.
    assert!(lens_refresh_within(&mut server, Duration::from_secs(20)), "a lens refresh in time");
    let bad = command(
        &mut server,
        "sift.memory.add",
        json!({"uri": uri, "cite": ["app/cache.py#nothing"], "text": "x"}),
    );
    assert!(bad["error"]["message"].as_str().unwrap().contains("not defined"), "{bad}");
    let bad = command(&mut server, "sift.memory.add", json!({"text": "no uri"}));
    assert!(bad["error"].is_object(), "{bad}");
    let text = hover(&mut server, &uri, 10)["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(text.contains("capped at a minute"), "{text}");

    server.seen.clear();
    let deleted = command(&mut server, "sift.memory.delete", json!({"slug": slug}));
    assert_eq!(deleted["result"]["deleted"], true, "{deleted}");
    assert!(!root.join(format!(".sift/memory/{slug}.md")).exists());
    let listed = command(&mut server, "sift.memory.list", json!({}));
    assert_eq!(listed["result"]["notes"].as_array().map(Vec::len), Some(1), "{listed}");
    assert!(lens_refresh_within(&mut server, Duration::from_secs(20)), "deleting redraws");

    // An index update that changes no note or state asks for no redraw.
    let files = |server: &mut StdioServer| {
        command(server, "sift.status", json!({}))["result"]["workspaces"][0]["files"].as_u64()
    };
    let before = files(&mut server).expect("sift.status counts files");
    server.seen.clear();
    std::fs::write(root.join("app/other.py"), "def unrelated():\n    return 2\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while files(&mut server) == Some(before) {
        assert!(Instant::now() < deadline, "app/other.py was never indexed");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The notes are checked right after the commit: a refresh would come within the second.
    assert!(
        !lens_refresh_within(&mut server, Duration::from_secs(1)),
        "no lens refresh for an update that changed no note: {:?}",
        server.seen
    );

    // A note written in a terminal while the server runs: the watcher sees it, the lenses
    // redraw, and the hover shows it without any index update.
    let out = sift_in(
        &root,
        &["memory", "add", "--cite", "app/other.py#unrelated", "unrelated returns a constant."],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(lens_refresh_within(&mut server, Duration::from_secs(20)), "the watcher saw the note");
    let other = format!("file://{}/app/other.py", root.display());
    let lenses = server.request("textDocument/codeLens", json!({"textDocument": {"uri": other}}));
    assert_eq!(lenses["result"][0]["command"]["title"], "1 sift note", "{lenses}");
    server.close_stdin();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some(), "{}", server.stderr_tail());
}
