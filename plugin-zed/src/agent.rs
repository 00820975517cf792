//! `/sift-agent TASK`: the arguments of `sift agent --json` (which proposes a change and writes
//! nothing) and how its one JSON object (the README's `sift agent … --json`) becomes the slash
//! command's Markdown: the answer, the changed files and the diff, each in its own fold.

use std::fmt::Write as _;

use zed_extension_api::serde_json::{self, Value};

use crate::search::Section;

/// What `sift agent --json` printed, with the fields the slash command shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRun {
    /// `done`, `max_steps`, `max_tokens`, `max_duration`, `cancelled`, `model_failed`.
    pub stop: String,
    /// The stop in words (`done`, `stopped after 30 steps (--max-steps)`, ...).
    pub detail: String,
    /// What the agent says it did.
    pub answer: String,
    /// The proposed change as a unified diff (empty when nothing changed).
    pub diff: String,
    /// The changed paths, relative to the worktree.
    pub files: Vec<String>,
    /// The model that ran.
    pub model: String,
    /// The run's id (`sift agent --resume ID --apply` writes its change).
    pub transcript: String,
    /// Model turns.
    pub steps: u64,
    /// The rules files that applied.
    pub rules: Vec<String>,
}

/// The arguments of `sift agent` for `/sift-agent`: `agent --json --path ROOT -- TASK…`.
///
/// Never `--apply`: the slash command only shows the proposal. `agent --json` must stay first:
/// the extension's `process:exec` capability allows only that prefix. Errors when the task is
/// empty.
pub fn agent_args(worktree_root: &str, task: &[String]) -> Result<Vec<String>, String> {
    let words: Vec<String> =
        task.iter().flat_map(|arg| arg.split_whitespace()).map(str::to_string).collect();
    if words.is_empty() {
        return Err("usage: /sift-agent TASK (what the agent should do)".to_string());
    }
    let mut args: Vec<String> = ["agent", "--json", "--path", worktree_root, "--"]
        .iter()
        .map(|a| (*a).to_string())
        .collect();
    args.extend(words);
    Ok(args)
}

/// Parses the standard output of `sift agent --json`: the last line that is a JSON object with
/// a `stop` field.
pub fn parse_run(stdout: &str) -> Result<AgentRun, String> {
    let value = stdout
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|v| v.get("stop").is_some())
        .ok_or_else(|| {
            let first: String = stdout.trim().chars().take(200).collect();
            format!("cannot read the output of `sift agent --json`: {first}")
        })?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let list = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| {
                        item.as_str()
                            .or_else(|| item.get("path").and_then(Value::as_str))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(AgentRun {
        stop: text("stop"),
        detail: text("detail"),
        answer: text("answer"),
        diff: text("diff"),
        files: list("files"),
        model: text("model"),
        transcript: text("transcript"),
        steps: value.get("steps").and_then(Value::as_u64).unwrap_or(0),
        rules: list("rules"),
    })
}

/// What the slash command inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Markdown text.
    pub text: String,
    /// The answer's fold and, when something changed, the diff's fold.
    pub sections: Vec<Section>,
}

/// Formats a run: a heading line, the answer, the changed files, the diff in a `diff` fence, and
/// how to write the change (nothing was written).
pub fn format_output(task: &str, root: &str, run: &AgentRun) -> Output {
    let mut text = String::new();
    let mut sections = Vec::new();
    let start = text.len();
    let plural = if run.steps == 1 { "" } else { "s" };
    let _ = writeln!(
        text,
        "sift agent: `{task}`: {} ({} step{plural}, model {})\n",
        if run.detail.is_empty() { &run.stop } else { &run.detail },
        run.steps,
        run.model
    );
    let answer = run.answer.trim();
    if !answer.is_empty() {
        let _ = writeln!(text, "{answer}\n");
    }
    if !run.rules.is_empty() {
        let _ = writeln!(text, "Rules applied: {}\n", run.rules.join(", "));
    }
    sections.push(Section { range: start..text.len(), label: format!("sift agent: {task}") });
    if run.diff.trim().is_empty() {
        text.push_str("No file changed.\n");
        return Output { text, sections };
    }
    let start = text.len();
    let files = run.files.len();
    let _ = writeln!(
        text,
        "Proposed change ({files} file{}): {}\n",
        if files == 1 { "" } else { "s" },
        run.files.join(", ")
    );
    let fence = fence_for(&run.diff);
    let _ = writeln!(text, "{fence}diff\n{}\n{fence}", run.diff.trim_end_matches('\n'));
    sections.push(Section {
        range: start..text.len(),
        label: format!("sift agent diff: {}", run.files.join(", ")),
    });
    let _ = writeln!(
        text,
        "\nNothing was written. To write this change: `sift agent --path {root} --resume {} --apply`",
        run.transcript
    );
    Output { text, sections }
}

/// A code fence longer than any run of backticks in the text.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sift agent --json` prints (tests/tests/agent.rs in the sift repository).
    const RUN: &str = r#"{"answer":"Invoice numbers now have six digits.","applied":false,"compactions":0,"detail":"done","diff":"--- a/billing/invoice.py\n+++ b/billing/invoice.py\n@@ -17,4 +17,4 @@\n \n \n def format_invoice_number(year, sequence):\n-    return f\"INV-{year}-{sequence:05d}\"\n+    return f\"INV-{year}-{sequence:06d}\"\n","files":["billing/invoice.py"],"model":"x","rules":[],"steps":2,"stop":"done","tokens":280,"transcript":"1796174837-31801"}"#;

    #[test]
    fn args_never_apply_and_keep_the_capability_prefix() {
        let args = agent_args("/repo", &["cap the".into(), " delay  ".into()]).unwrap();
        assert_eq!(args, ["agent", "--json", "--path", "/repo", "--", "cap", "the", "delay"]);
        assert!(!args.iter().any(|a| a == "--apply"));
        // A task that starts with a dash is not an option.
        let args = agent_args("/repo", &["--apply".into()]).unwrap();
        assert_eq!(args[4..], ["--", "--apply"]);
        assert!(agent_args("/repo", &[" ".into()]).unwrap_err().contains("usage: /sift-agent"));
    }

    #[test]
    fn parses_the_cli_json() {
        let run = parse_run(&format!("indexed 6 files\n{RUN}\n")).unwrap();
        assert_eq!(run.stop, "done");
        assert_eq!(run.files, ["billing/invoice.py"]);
        assert_eq!(run.steps, 2);
        assert_eq!(run.transcript, "1796174837-31801");
        assert!(run.diff.contains("+    return f\"INV-{year}-{sequence:06d}\""));
        // Files as objects (the language server's shape) are read too.
        let run = parse_run(r#"{"stop":"done","files":[{"path":"a.py"}]}"#).unwrap();
        assert_eq!(run.files, ["a.py"]);
        assert!(parse_run("error: no model\n").unwrap_err().contains("no model"));
    }

    #[test]
    fn output_has_the_answer_and_the_diff_in_folds() {
        let run = parse_run(RUN).unwrap();
        let out = format_output("six digits", "/repo", &run);
        assert!(
            out.text.starts_with("sift agent: `six digits`: done (2 steps, model x)\n"),
            "{}",
            out.text
        );
        assert!(out.text.contains("Invoice numbers now have six digits.\n"));
        assert!(out.text.contains("```diff\n--- a/billing/invoice.py\n"));
        assert!(out.text.contains("`sift agent --path /repo --resume 1796174837-31801 --apply`"));
        assert_eq!(out.sections.len(), 2);
        assert_eq!(out.sections[1].label, "sift agent diff: billing/invoice.py");
        let diff = &out.text[out.sections[1].range.clone()];
        assert!(diff.starts_with("Proposed change (1 file): billing/invoice.py"));
        assert!(diff.ends_with("```\n"));
        assert!(out.sections[0].range.end <= out.sections[1].range.start);
    }

    #[test]
    fn no_change_is_said_plainly() {
        let run = parse_run(r#"{"stop":"max_steps","detail":"stopped after 30 steps (--max-steps)","answer":"","diff":"","files":[],"model":"m","steps":30,"transcript":"t"}"#).unwrap();
        let out = format_output("t", "/r", &run);
        assert!(out.text.contains("stopped after 30 steps (--max-steps) (30 steps, model m)"));
        assert!(out.text.ends_with("No file changed.\n"));
        assert_eq!(out.sections.len(), 1);
        assert!(!out.text.contains("--apply"));
    }

    #[test]
    fn fences_outgrow_backticks_in_the_diff() {
        assert_eq!(fence_for("+ ```rust"), "````");
        assert_eq!(fence_for("plain"), "```");
    }
}
