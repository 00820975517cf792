//! `check`: the project's own checkers in the loop, run on the agent's pending change through
//! the sandbox, their findings mapped to the lines the agent changed.
//!
//! The change is never written into the workspace for this: the checked files are copied into
//! a scratch folder with the pending edits applied, and the checker runs there under the
//! sandbox's policy for that folder (no network, time-limited, writes confined). Findings in
//! files the agent did not touch are counted, not shown: they were there before.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use sift_runtime::llm::Cancel;
use sift_runtime::rules::LineFilter;
use sift_runtime::sandbox::{self, Command, Policy};

use super::{Session, ToolOutput};
use crate::agent::checkers::{Checker, Format, Problem, cargo_env, parse};
use crate::review::changed_lines;

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
