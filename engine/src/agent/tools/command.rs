//! `run {command, timeout_secs?, outside_sandbox?, why?}`: a shell command (the project's
//! tests, a script, a build) on a scratch copy of the workspace with the pending change
//! applied, under the sandbox's one policy: no network unless `[sandbox] allow_net` lists the
//! host, writes confined to the copy, limits and a deadline. Nothing it does reaches the
//! workspace.
//!
//! `outside_sandbox: true` (with `why`) only asks: the front end's
//! [`Approver`](crate::agent::approval::Approver) answers for the user, and every request is
//! logged (`.sift/agent/unsandboxed.jsonl`). Refused, the model gets the reason as the
//! tool's error.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;
use sift_runtime::llm::Cancel;
use sift_runtime::sandbox::{self, Command, Output};

use super::check::Scratch;
use super::{Session, ToolOutput, str_arg, usize_arg};
use crate::agent::approval::{self, Decision, Escape, Logged};
use crate::agent::checkers::cargo_env;

/// Lines of each stream shown (the last ones: where errors and test summaries are).
const TAIL_LINES: usize = 60;

/// The `run` tool.
pub fn run(s: &Session<'_>, args: &Value, cancel: &Cancel) -> ToolOutput {
    let Some(line) = str_arg(args, "command").map(str::trim).filter(|c| !c.is_empty()) else {
        return ToolOutput::fail("command is empty: give a shell command line");
    };
    let outside = args.get("outside_sandbox").and_then(Value::as_bool).unwrap_or(false);
    let why = str_arg(args, "why").unwrap_or("").trim();
    let limit = s.policy.limits().timeout;
    let timeout = usize_arg(args, "timeout_secs")
        .map_or(Duration::from_secs(120), |t| Duration::from_secs(t as u64))
        .min(limit);

    let escape = Escape { command: line.to_owned(), why: why.to_owned(), task: s.task_summary() };
    let mut record = Logged {
        time: crate::agent::transcript::now(),
        task: escape.task.clone(),
        command: escape.command.clone(),
        why: escape.why.clone(),
        decision: String::new(),
        detail: String::new(),
        status: None,
    };
    let approved_by = if outside {
        if why.is_empty() {
            return ToolOutput::fail(
                "outside_sandbox needs why: say what the sandbox prevents and why the command needs it",
            );
        }
        match s.approver.decide(&escape, cancel) {
            Decision::Approved { by } => {
                record.decision = "approved".into();
                record.detail = by.clone();
                Some(by)
            }
            Decision::Refused { why } => {
                record.decision = "refused".into();
                record.detail = why.clone();
                approval::log(s.store, &record);
                return ToolOutput::fail(format!(
                    "not run: the user did not let this command leave the sandbox: {why}. Run it \
                     in the sandbox, do without it, or tell the user in your answer what they \
                     should run themselves."
                ));
            }
        }
    } else {
        None
    };

    let scratch = match Scratch::build(s) {
        Ok(scratch) => scratch,
        Err(e) => return ToolOutput::fail(format!("cannot prepare the copy to run in: {e}")),
    };
    let (env, writable) =
        if s.root.join("Cargo.toml").is_file() { cargo_env(&s.root) } else { Default::default() };
    let command = Command {
        program: "sh".into(),
        args: vec!["-c".into(), line.to_owned()],
        cwd: scratch.path().to_path_buf(),
        env,
        timeout,
        writable,
    };
    let ran = s.policy.for_root(scratch.path()).map_err(|e| e.to_string()).and_then(|policy| {
        let stop = || cancel.is_cancelled();
        match approved_by {
            Some(_) => sandbox::run_outside(&policy, &command, &stop),
            None => sandbox::run(&policy, &command, &stop),
        }
        .map_err(|e| e.to_string())
    });
    if approved_by.is_some() {
        record.status = ran.as_ref().ok().and_then(|o| o.status);
        approval::log(s.store, &record);
    }
    match ran {
        Ok(out) if out.cancelled => ToolOutput::fail("cancelled"),
        Ok(out) => ToolOutput::ok(describe(&out, approved_by.as_deref())),
        Err(e) => ToolOutput::fail(format!("could not run it: {e}")),
    }
}

/// The answer: status first, then the tails of both streams, then what the walls refused.
fn describe(out: &Output, approved_by: Option<&str>) -> String {
    let mut text = String::new();
    let secs = out.elapsed.as_secs_f64();
    let status = match (out.status, out.signal) {
        _ if out.timed_out => "timed out: the command was killed".to_owned(),
        (Some(0), _) => "exit status 0".to_owned(),
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "ended without a status".to_owned(),
    };
    let _ = write!(text, "{status} ({secs:.1} s");
    match approved_by {
        Some(by) => {
            let _ = write!(text, ", outside the sandbox: approved by {by}");
        }
        None => text.push_str(", in the sandbox"),
    }
    text.push(')');
    if out.stdout.trim().is_empty() && out.stderr.trim().is_empty() {
        text.push_str(if out.status == Some(0) {
            "\nran successfully, no output"
        } else {
            "\nno output"
        });
    }
    for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if stream.trim().is_empty() {
            continue;
        }
        let lines: Vec<&str> = stream.lines().collect();
        let shown = lines.len().min(TAIL_LINES);
        if shown < lines.len() {
            let _ = write!(text, "\n--- {name} (last {shown} of {} lines) ---", lines.len());
        } else {
            let _ = write!(text, "\n--- {name} ---");
        }
        for l in &lines[lines.len() - shown..] {
            text.push('\n');
            text.push_str(l);
        }
    }
    for n in out.network.iter().filter(|n| n.starts_with("allowed")) {
        let _ = write!(text, "\nnetwork: {n}");
    }
    for d in &out.denied {
        let _ = write!(text, "\nthe sandbox stopped: {d}");
    }
    if approved_by.is_none() && out.status != Some(0) {
        text.push_str(
            "\n(It ran in the sandbox: no network beyond [sandbox] allow_net, writes only in a \
             copy of the workspace. If that is why it failed, you may ask for outside_sandbox \
             with why; the user decides.)",
        );
    }
    text
}
