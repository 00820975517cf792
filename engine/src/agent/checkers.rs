//! The project's own checkers in the loop: detected from the workspace (or configured), run on
//! the agent's pending change through the sandbox, their findings mapped to the lines the agent
//! changed.
//!
//! The change is never written into the workspace for this: the checked files are copied into
//! a scratch folder with the pending edits applied, and the checker runs there under the
//! sandbox's policy for that folder (no network, time-limited, writes confined). Findings in
//! files the agent did not touch are counted, not shown: they were there before.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use sift_runtime::llm::Cancel;
use sift_runtime::rules::LineFilter;
use sift_runtime::sandbox::{self, Command, Policy};

use super::tools::{Session, ToolOutput};
pub use crate::config::{Checker, Format};
use crate::review::changed_lines;

/// One problem a checker reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, relative to the root.
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// The message (first line).
    pub message: String,
}

/// The checkers that fit `root`: `cargo check` for a Cargo workspace, `ruff` for Python
/// projects when it is installed, `tsc` for TypeScript with a `tsconfig.json`, `go vet` for
/// a Go module.
pub fn detect(root: &Path) -> Vec<Checker> {
    let mut out = Vec::new();
    let has = |name: &str| root.join(name).is_file();
    let checker = |name: &str, command: &[&str], format| Checker {
        name: name.into(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        format,
        timeout_secs: crate::config::checker_timeout(),
    };
    if has("Cargo.toml") && on_path("cargo") {
        out.push(checker(
            "cargo",
            &["cargo", "check", "--offline", "--quiet", "--message-format=json"],
            Format::CargoJson,
        ));
    }
    if (has("pyproject.toml") || has("setup.py") || has("setup.cfg") || has("ruff.toml"))
        && on_path("ruff")
    {
        out.push(checker(
            "ruff",
            &["ruff", "check", "--no-cache", "--output-format=json", "."],
            Format::RuffJson,
        ));
    }
    if has("tsconfig.json") {
        let local = root.join("node_modules/.bin/tsc");
        if local.is_file() {
            out.push(checker(
                "tsc",
                &["node_modules/.bin/tsc", "--noEmit", "--pretty", "false"],
                Format::Tsc,
            ));
        } else if on_path("tsc") {
            out.push(checker("tsc", &["tsc", "--noEmit", "--pretty", "false"], Format::Tsc));
        }
    }
    if has("go.mod") && on_path("go") {
        out.push(checker("go", &["go", "vet", "./..."], Format::Lines));
    }
    out
}

fn on_path(program: &str) -> bool {
    sift_env::get_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// `check {}`: every checker on the pending change.
pub fn check(s: &Session<'_>, cancel: &Cancel) -> ToolOutput {
    assess(s, cancel).0
}

/// Every checker on the pending change: the tool's answer, and how many problems they found
/// on the changed lines (`None` when no checker ran).
pub fn assess(s: &Session<'_>, cancel: &Cancel) -> (ToolOutput, Option<usize>) {
    if s.checkers.is_empty() {
        let text = "no checkers are configured or detected for this project (none of cargo, ruff, \
             tsc, go vet applies); use review, or read the code again";
        return (ToolOutput::ok(text), None);
    }
    let changed: BTreeMap<String, LineFilter> = s
        .changes
        .iter()
        .filter(|(_, p)| p.original != p.current)
        .filter_map(|(path, p)| {
            let new = p.current.as_deref()?;
            Some((path.to_owned(), changed_lines(p.original.as_deref(), new, true)))
        })
        .collect();
    let scratch = match Scratch::build(s) {
        Ok(scratch) => scratch,
        Err(e) => {
            return (ToolOutput::fail(format!("cannot prepare the files to check: {e}")), None);
        }
    };
    let mut out = String::new();
    let mut failed = false;
    let mut counted: Option<usize> = None;
    for checker in s.checkers {
        if cancel.is_cancelled() {
            return (ToolOutput::fail("cancelled"), None);
        }
        match run_one(s.policy, &scratch, checker, &s.root, cancel) {
            Ok(problems) => {
                let (mine, elsewhere): (Vec<&Problem>, Vec<&Problem>) =
                    problems.iter().partition(|p| {
                        changed.get(&p.path).is_some_and(|lines| lines.contains(p.line))
                    });
                let in_changed_files =
                    elsewhere.iter().filter(|p| changed.contains_key(&p.path)).count();
                *counted.get_or_insert(0) += mine.len();
                if mine.is_empty() {
                    let _ = writeln!(out, "{}: no problems on the lines you changed", checker.name);
                } else {
                    failed = true;
                    let _ = writeln!(
                        out,
                        "{}: {} problems on the lines you changed:",
                        checker.name,
                        mine.len()
                    );
                    for p in mine.iter().take(20) {
                        let _ = writeln!(out, "{}:{}: {}", p.path, p.line, p.message);
                    }
                }
                if in_changed_files > 0 {
                    let _ = writeln!(
                        out,
                        "  ({in_changed_files} more in the files you changed, on other lines)"
                    );
                    for p in elsewhere.iter().filter(|p| changed.contains_key(&p.path)).take(5) {
                        let _ = writeln!(out, "  {}:{}: {}", p.path, p.line, p.message);
                    }
                }
                let others = elsewhere.len() - in_changed_files;
                if others > 0 {
                    let _ = writeln!(out, "  ({others} in files you did not change; not shown)");
                }
            }
            Err(e) => {
                let _ = writeln!(out, "{}: could not run: {e}", checker.name);
            }
        }
    }
    if failed {
        out.push_str("Fix the problems on your lines, then check again.\n");
    }
    (ToolOutput::ok(out), counted)
}

/// The workspace's files with the pending change applied, in a temporary folder: where the
/// checkers and the `run` tool's commands work, so that nothing they do reaches the workspace.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// The most files copied (a bigger workspace is not copied for a check).
    const MAX_FILES: usize = 50_000;

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn build(s: &Session<'_>) -> std::io::Result<Scratch> {
        let dir = tempfile::Builder::new().prefix("sift-check-").tempdir()?;
        let files = s.files();
        if files.len() > Self::MAX_FILES {
            return Err(std::io::Error::other(format!(
                "the workspace has {} files, more than the {} a check copies",
                files.len(),
                Self::MAX_FILES
            )));
        }
        for rel in files {
            let target = dir.path().join(&rel);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match s.changes.get(&rel) {
                Some(p) => {
                    if let Some(text) = &p.current {
                        std::fs::write(&target, text)?;
                    }
                }
                None => {
                    if let Err(e) = std::fs::copy(s.root.join(&rel), &target) {
                        tracing::debug!("check: not copied {rel}: {e}");
                    }
                }
            }
        }
        // What checkers need beside the sources, when the index left it out.
        for name in ["Cargo.lock", "package.json", "tsconfig.json", "go.sum", "pyproject.toml"] {
            let (from, to) = (s.root.join(name), dir.path().join(name));
            if from.is_file() && !to.exists() {
                std::fs::copy(from, to)?;
            }
        }
        if s.root.join("node_modules").is_dir() {
            symlink_dir(&s.root.join("node_modules"), &dir.path().join("node_modules"))?;
        }
        Ok(Scratch { dir })
    }
}

#[cfg(unix)]
fn symlink_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn symlink_dir(_from: &Path, _to: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Runs one checker in the scratch folder under the sandbox and parses what it printed.
fn run_one(
    policy: &Policy,
    scratch: &Scratch,
    checker: &Checker,
    root: &Path,
    cancel: &Cancel,
) -> Result<Vec<Problem>, String> {
    let Some((program, args)) = checker.command.split_first() else {
        return Err("the checker has an empty command".into());
    };
    let (env, writable) = if checker.format == Format::CargoJson {
        cargo_env(root)
    } else {
        (Vec::new(), Vec::new())
    };
    let policy = policy.for_root(scratch.dir.path()).map_err(|e| e.to_string())?;
    let command = Command {
        program: program.clone(),
        args: args.to_vec(),
        cwd: scratch.dir.path().to_path_buf(),
        env,
        timeout: Duration::from_secs(checker.timeout_secs),
        writable,
    };
    let output =
        sandbox::run(&policy, &command, &|| cancel.is_cancelled()).map_err(|e| e.to_string())?;
    if output.cancelled {
        return Err("cancelled".into());
    }
    if output.timed_out {
        return Err(format!("timed out after {} s", checker.timeout_secs));
    }
    let problems = parse(checker.format, &output.stdout, &output.stderr, scratch.dir.path());
    if problems.is_empty() && output.status != Some(0) && checker.format != Format::RuffJson {
        let tail: String = output.stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
        return Err(format!(
            "exited with {:?} and reported nothing parseable: {tail}",
            output.status
        ));
    }
    Ok(problems)
}

/// For cargo in a scratch copy: build artifacts go to the workspace's own target folder, so a
/// check reuses them (the variables to pass and the folder to make writable).
pub(crate) fn cargo_env(root: &Path) -> (Vec<(String, String)>, Vec<PathBuf>) {
    let target = root.join("target");
    let mut env = vec![("CARGO_TARGET_DIR".to_owned(), target.display().to_string())];
    if let Some(home) = sift_env::get_os("CARGO_HOME") {
        env.push(("CARGO_HOME".to_owned(), home.to_string_lossy().into_owned()));
    }
    (env, vec![target])
}

/// The problems in a checker's output; paths made relative to `dir`.
pub fn parse(format: Format, stdout: &str, stderr: &str, dir: &Path) -> Vec<Problem> {
    let rel = |p: &str| -> String {
        let p = Path::new(p);
        let p = p.strip_prefix(dir).unwrap_or(p);
        p.to_string_lossy().trim_start_matches("./").replace('\\', "/")
    };
    let mut out = Vec::new();
    match format {
        Format::CargoJson => {
            for line in stdout.lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
                if v["reason"] != "compiler-message" {
                    continue;
                }
                let msg = &v["message"];
                let level = msg["level"].as_str().unwrap_or("");
                if level != "error" && level != "warning" {
                    continue;
                }
                let text = msg["message"].as_str().unwrap_or("").to_owned();
                let code =
                    msg["code"]["code"].as_str().map(|c| format!("[{c}]")).unwrap_or_default();
                for span in msg["spans"].as_array().into_iter().flatten() {
                    if span["is_primary"] != true {
                        continue;
                    }
                    out.push(Problem {
                        path: rel(span["file_name"].as_str().unwrap_or("")),
                        line: span["line_start"].as_u64().unwrap_or(0) as usize,
                        message: format!("{level}{code}: {text}"),
                    });
                }
            }
        }
        Format::RuffJson => {
            let Ok(Value::Array(items)) = serde_json::from_str::<Value>(stdout.trim()) else {
                return out;
            };
            for item in items {
                out.push(Problem {
                    path: rel(item["filename"].as_str().unwrap_or("")),
                    line: item["location"]["row"].as_u64().unwrap_or(0) as usize,
                    message: format!(
                        "{} {}",
                        item["code"].as_str().unwrap_or(""),
                        item["message"].as_str().unwrap_or("")
                    ),
                });
            }
        }
        Format::Tsc => {
            for line in stdout.lines().chain(stderr.lines()) {
                let Some((head, message)) = line.split_once("): ") else { continue };
                let Some((path, pos)) = head.rsplit_once('(') else { continue };
                let Some(row) = pos.split(',').next().and_then(|r| r.parse().ok()) else {
                    continue;
                };
                out.push(Problem { path: rel(path), line: row, message: message.to_owned() });
            }
        }
        Format::Lines => {
            for line in stdout.lines().chain(stderr.lines()) {
                let mut parts = line.splitn(4, ':');
                let (Some(path), Some(row)) = (parts.next(), parts.next()) else { continue };
                let Ok(row) = row.trim().parse::<usize>() else { continue };
                let rest: Vec<&str> = parts.collect();
                // `PATH:LINE:COL: msg` or `PATH:LINE: msg` (the message may hold colons).
                let message = match rest.split_first() {
                    Some((col, msg)) if col.trim().parse::<usize>().is_ok() => msg.join(":"),
                    Some(_) => rest.join(":"),
                    None => continue,
                };
                let message = message.trim();
                if message.is_empty() {
                    continue;
                }
                out.push(Problem { path: rel(path), line: row, message: message.to_owned() });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_json_gives_the_primary_spans() {
        let line = r#"{"reason":"compiler-message","message":{"level":"error","message":"mismatched types","code":{"code":"E0308"},"spans":[{"file_name":"src/lib.rs","line_start":3,"is_primary":true},{"file_name":"src/lib.rs","line_start":1,"is_primary":false}]}}"#;
        let got = parse(Format::CargoJson, line, "", Path::new("/tmp/x"));
        assert_eq!(
            got,
            [Problem {
                path: "src/lib.rs".into(),
                line: 3,
                message: "error[E0308]: mismatched types".into()
            }]
        );
    }

    #[test]
    fn ruff_tsc_and_plain_lines_are_read() {
        let ruff = r#"[{"filename":"/tmp/x/pkg/a.py","location":{"row":2,"column":1},"code":"F401","message":"`os` imported but unused"}]"#;
        let got = parse(Format::RuffJson, ruff, "", Path::new("/tmp/x"));
        assert_eq!(got[0].path, "pkg/a.py");
        assert_eq!(got[0].line, 2);
        assert!(got[0].message.starts_with("F401"));

        let tsc = "src/a.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.";
        let got = parse(Format::Tsc, tsc, "", Path::new("/tmp/x"));
        assert_eq!((got[0].path.as_str(), got[0].line), ("src/a.ts", 4));

        let vet = "./main.go:12:2: unreachable code\nnot a finding\na.py:3: error: x: y\n";
        let got = parse(Format::Lines, "", vet, Path::new("/tmp/x"));
        assert_eq!(
            got[0],
            Problem { path: "main.go".into(), line: 12, message: "unreachable code".into() }
        );
        assert_eq!(got[1].message, "error: x: y");
    }

    #[test]
    fn configured_checkers_are_read_by_what_they_name() {
        let c = Checker::from_command_line("cargo clippy --message-format=json -q");
        assert_eq!((c.name.as_str(), c.format), ("cargo", Format::CargoJson));
        assert_eq!(c.command, ["sh", "-c", "cargo clippy --message-format=json -q"]);
        let c = Checker::from_command_line("ruff check --output-format json .");
        assert_eq!(c.format, Format::RuffJson);
        assert_eq!(Checker::from_command_line("ruff check .").format, Format::Lines);
        assert_eq!(
            Checker::from_command_line("node_modules/.bin/tsc --noEmit").format,
            Format::Tsc
        );
        let c = Checker::from_command_line("mypy --strict src");
        assert_eq!((c.name.as_str(), c.format), ("mypy", Format::Lines));
    }

    #[test]
    fn changed_lines_are_those_that_differ() {
        let lines = changed_lines(Some("a\nb\nc\n"), "a\nB\nc\nd\n", true);
        assert_eq!(lines.ranges(), [2..=2, 4..=4]);
        let new = changed_lines(None, "x\ny\n", true);
        assert!(new.contains(1) && new.contains(2));
        // Where lines were removed, the line that follows counts for a checker, not a review.
        assert_eq!(changed_lines(Some("a\nb\nc\n"), "a\nc\n", true).ranges(), [2..=2]);
        assert!(changed_lines(Some("a\nb\nc\n"), "a\nc\n", false).is_empty());
    }
}
