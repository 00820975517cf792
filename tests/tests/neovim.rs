//! End to end with a real editor: headless Neovim (0.7 or later) starts `sift lsp` through its
//! built-in LSP client, waits for indexing progress to end, and runs `workspace/symbol`,
//! `sift.status` and a search for text only in an unsaved buffer (`tests/nvim/e2e.lua` does the
//! editor side and writes a JSON report; this test judges it).
//!
//! Skipped (with a message) when `nvim` is not on PATH, unless `SIFT_REQUIRE_NVIM` is set (the
//! README's test command sets it after installing Neovim), in which case a missing `nvim` fails.

#![cfg(unix)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sift_test_support::guard::{Need, missing};
use sift_tests::{sift_bin, write};

/// How long Neovim may run in all before it is killed.
const NVIM_TIMEOUT: Duration = Duration::from_secs(90);

/// `nvim` on PATH, if any.
fn find_nvim() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("nvim")).find(|candidate| {
        std::fs::metadata(candidate)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

/// The last `max` bytes of a file, as text (empty when it cannot be read).
fn tail(path: &Path, max: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = bytes.len().saturating_sub(max);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

#[test]
fn neovim_indexes_searches_and_sees_unsaved_edits() {
    let Some(nvim) = find_nvim() else {
        missing(Need::Nvim, "`nvim` is not on PATH", "install Neovim 0.7+: apt-get install neovim");
        return;
    };
    let bin = sift_bin();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("nvim/e2e.lua");
    assert!(script.exists(), "{} is missing", script.display());

    let dir = tempfile::tempdir().unwrap();
    // Canonical, so the URIs Neovim builds and the ones sift answers name the same paths.
    let root = dir.path().join("workspace");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    write(
        &root,
        "src/config.rs",
        "//! Configuration.\n\n/// Reads the config file.\npub fn parse_config(path: &str) -> String { path.to_string() }\n",
    );
    write(
        &root,
        "src/main.rs",
        "mod config;\n\nfn main() {\n    let text = config::parse_config(\"sift.toml\");\n    println!(\"{text}\");\n}\n",
    );
    write(
        &root,
        "tools/report.py",
        "def render_report(rows):\n    \"\"\"Formats rows as a table.\"\"\"\n    return \"\\n\".join(str(r) for r in rows)\n",
    );
    write(
        &root,
        "web/app.ts",
        "export function startServer(port: number): string {\n  return `listening on ${port}`;\n}\n",
    );
    let file = root.join("src/config.rs");

    // Neovim's own state (its LSP log, where the server's stderr goes) stays in the temp dir.
    let xdg = dir.path().join("xdg");
    let out = dir.path().join("report.json");
    let nvim_stdout = dir.path().join("nvim.stdout");
    let nvim_stderr = dir.path().join("nvim.stderr");
    let mut cmd = Command::new(&nvim);
    cmd.args(["--headless", "--clean", "-u", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .current_dir(&root)
        .env("SIFT_BIN", &bin)
        .env("SIFT_E2E_ROOT", &root)
        .env("SIFT_E2E_FILE", &file)
        .env("SIFT_E2E_OUT", &out)
        .env("XDG_CACHE_HOME", xdg.join("cache"))
        .env("XDG_CONFIG_HOME", xdg.join("config"))
        .env("XDG_DATA_HOME", xdg.join("data"))
        .env("XDG_STATE_HOME", xdg.join("state"))
        .stdin(Stdio::null())
        .stdout(File::create(&nvim_stdout).unwrap())
        .stderr(File::create(&nvim_stderr).unwrap());
    for var in ["SIFT_LOG", "SIFT_THREADS", "SIFT_COMMIT_INTERVAL_MS"] {
        cmd.env_remove(var);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("nvim starts");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > NVIM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let elapsed = started.elapsed();

    let lsp_log = xdg.join("cache/nvim/lsp.log");
    let context = |report: &str| {
        format!(
            "nvim {} after {elapsed:.1?}\n--- report ({}) ---\n{report}\n--- nvim stdout ---\n{}\n\
             --- nvim stderr ---\n{}\n--- lsp.log (tail; the server's stderr) ---\n{}",
            match status {
                Some(s) => format!("exited with {s}"),
                None => format!("was killed after the {NVIM_TIMEOUT:?} timeout"),
            },
            out.display(),
            tail(&nvim_stdout, 4000),
            tail(&nvim_stderr, 4000),
            tail(&lsp_log, 8000),
        )
    };

    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => panic!("no readable JSON report ({e})\n{}", context(&text)),
    };
    let pretty = serde_json::to_string_pretty(&report).unwrap();

    let mut failures: Vec<String> = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            failures.push(what);
        }
    };

    check(report.get("error").is_none(), format!("the script failed: {}", report["error"]));
    check(status.is_some_and(|s| s.success()), "nvim did not exit successfully".to_string());

    // Progress: begin, then end, with 100% reached.
    let kinds: Vec<&str> = report["progress"]["kinds"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let begin = kinds.iter().position(|k| *k == "begin");
    let end = kinds.iter().position(|k| *k == "end");
    check(begin.is_some(), format!("no $/progress begin (kinds seen: {kinds:?})"));
    check(end.is_some(), format!("no $/progress end (kinds seen: {kinds:?})"));
    check(
        !matches!((begin, end), (Some(b), Some(e)) if e < b),
        format!("$/progress end came before begin: {kinds:?}"),
    );
    let max_percentage = report["progress"]["max_percentage"].as_f64().unwrap_or(-1.0);
    check(max_percentage >= 100.0, format!("$/progress never reached 100% (max {max_percentage})"));

    // Nothing changes on disk after the first run (the edit stays in the buffer and `.sift/` is
    // sift's own), so indexing runs once; a second run for files modified too recently to trust
    // their mtime is tolerated, an endless stream of runs is not.
    let runs = kinds.iter().filter(|k| **k == "begin").count();
    check(
        runs <= 2,
        format!(
            "the unchanged workspace was indexed {runs} times (progress begin/end cycles) in a few \
             seconds: spurious re-indexing"
        ),
    );
    check(
        report["quiet"] == true,
        "the server kept reporting indexing progress for 20 s after the first run ended"
            .to_string(),
    );

    // workspace/symbol: the definition first.
    let first = &report["symbols"][0];
    check(
        first["name"] == "parse_config",
        format!("workspace/symbol parse_config: first result is not named parse_config: {first}"),
    );
    let uri = first["location"]["uri"].as_str().unwrap_or_default();
    check(
        uri.starts_with("file://") && uri.ends_with("/src/config.rs"),
        format!(
            "workspace/symbol parse_config: first result's URI is {uri:?}, not …/src/config.rs"
        ),
    );

    // sift.status (once the server is quiet): one ready workspace with every file.
    let workspaces = report["status"]["workspaces"].as_array().cloned().unwrap_or_default();
    check(
        workspaces.len() == 1,
        format!("sift.status: expected 1 workspace, got {}", workspaces.len()),
    );
    if let Some(ws) = workspaces.first() {
        check(ws["state"] == "ready", format!("sift.status: state is {}, not ready", ws["state"]));
        let files = ws["files"].as_u64().unwrap_or(0);
        check(files >= 3, format!("sift.status: files = {files}, expected at least 3"));
    }

    // The unsaved edit is searchable, in the opened file.
    let unsaved = report["unsaved"].as_array().cloned().unwrap_or_default();
    check(
        unsaved.iter().any(|s| {
            s["name"] == "unsaved_marker_fn"
                && s["location"]["uri"].as_str().is_some_and(|u| u.ends_with("/src/config.rs"))
        }),
        "workspace/symbol unsaved_marker_fn: no result named unsaved_marker_fn in src/config.rs \
         (the unsaved buffer is not searchable)"
            .to_string(),
    );
    let searched = report["unsaved_search"]["results"].as_array().cloned().unwrap_or_default();
    check(
        searched.iter().any(|r| r["path"] == "src/config.rs" && r["unsaved"] == true),
        "sift.search unsaved_marker_fn: no result for src/config.rs with \"unsaved\": true"
            .to_string(),
    );

    // A clean shutdown: `shutdown` then `exit` ends the server with status 0.
    check(
        report["exit_code"] == 0,
        format!("the server's exit code after shutdown/exit is {}, not 0", report["exit_code"]),
    );

    // The saved file is untouched: the edit only lived in the buffer.
    let saved = std::fs::read_to_string(&file).unwrap();
    check(!saved.contains("unsaved_marker_fn"), "the unsaved edit reached the disk".to_string());

    assert!(failures.is_empty(), "{}\n\n{}", failures.join("\n"), context(&pretty));
    eprintln!("neovim e2e passed in {elapsed:.1?}:\n{pretty}");
}
