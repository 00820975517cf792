//! `/sift-stats [PERIOD]`: what `sift stats --json` says (the engine's one report, the same
//! figures as the CLI's table, the language server's `sift/stats` and VS Code's *Show Stats*),
//! and how it becomes Markdown: one fold for the agent's runs, one for the review rules, and one
//! for the lessons proposed (accepted runs the user replaced with their own code), when there
//! are any.

use std::fmt::Write as _;

use zed_extension_api::serde_json::{self, Value};

use crate::search::{Output, Section};

/// The arguments of `sift stats` for `/sift-stats`: `stats --json --path ROOT`, then `--all` for
/// `all`, `--since PERIOD` for anything else (`7d`, `2026-12-01`; the CLI checks it), nothing
/// for the default 30 days. `stats --json` must stay first: the manifest's capability allows
/// only that prefix.
pub fn stats_args(worktree_root: &str, args: &[String]) -> Vec<String> {
    let mut out: Vec<String> =
        ["stats", "--json", "--path", worktree_root].iter().map(|a| (*a).to_string()).collect();
    let period: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    match period.as_slice() {
        [] => {}
        ["all"] => out.push("--all".to_string()),
        words => {
            out.push("--since".to_string());
            out.push(words.join(" "));
        }
    }
    out
}

fn count(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn percent(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_f64)
        .map_or("-".to_string(), |r| format!("{:.0} %", r * 100.0))
}

/// The Markdown of `sift stats --json`'s object; an error when it is not one.
pub fn format_output(stdout: &str, period: &str) -> Result<Output, String> {
    let report: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("sift stats printed something other than its JSON report: {e}"))?;
    let stats = report.get("stats").ok_or("sift stats' report has no figures (\"stats\")")?;
    let period = if period.is_empty() { "the last 30 days" } else { period };
    let mut text = format!("# sift stats, {period}: {} record(s)\n\n", count(stats, "events"));
    let mut sections = Vec::new();

    let start = text.len();
    let agent = stats.get("agent").cloned().unwrap_or(Value::Null);
    let _ = writeln!(
        text,
        "| agent runs | shown | taken | edited | refused | undecided | taken of shown |"
    );
    let _ = writeln!(text, "|---|---:|---:|---:|---:|---:|---:|");
    let mut row = |name: &str, d: &Value| {
        let _ = writeln!(
            text,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            count(d, "shown"),
            count(d, "accepted"),
            count(d, "edited"),
            count(d, "rejected"),
            count(d, "undecided"),
            percent(d, "acceptance")
        );
    };
    row("all", &agent);
    if let Some(models) = stats.get("models").and_then(Value::as_object) {
        for (model, d) in models {
            row(&format!("`{model}`"), d);
        }
    }
    text.push('\n');
    sections.push(Section { range: start..text.len(), label: "agent runs".to_string() });

    let start = text.len();
    let rules = stats.get("rules").and_then(Value::as_object);
    let _ = writeln!(text, "| review rule | shown | dismissed | fixed | ignored | resolved |");
    let _ = writeln!(text, "|---|---:|---:|---:|---:|---:|");
    match rules {
        Some(rules) if !rules.is_empty() => {
            for (rule, r) in rules {
                let _ = writeln!(
                    text,
                    "| `{rule}` | {} | {} | {} | {} | {} |",
                    count(r, "shown"),
                    count(r, "dismissed_wrong") + count(r, "dismissed_noise"),
                    count(r, "fixed"),
                    count(r, "ignored"),
                    percent(r, "resolution")
                );
            }
        }
        _ => text.push_str("| (none recorded) | | | | | |\n"),
    }
    text.push('\n');
    sections.push(Section { range: start..text.len(), label: "review rules".to_string() });

    let lessons = report.get("lessons").and_then(Value::as_array).filter(|l| !l.is_empty());
    if let Some(lessons) = lessons {
        let start = text.len();
        text.push_str(
            "Lessons proposed (accepted agent changes you replaced with your own code):\n\n",
        );
        for lesson in lessons {
            let run = lesson.get("run").and_then(Value::as_str).unwrap_or("?");
            let cites: Vec<&str> = lesson
                .get("cite")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "- run `{run}`, citing `{}`: keep it with `sift feedback lesson {run} --keep`, decline with `--drop`",
                cites.join("`, `")
            );
        }
        text.push('\n');
        sections.push(Section { range: start..text.len(), label: "lessons proposed".to_string() });
    }

    if let Some(record) = report.get("record") {
        let path = record.get("path").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(
            text,
            "The record: `{path}` ({} bytes; on this machine only).",
            count(record, "bytes")
        );
    }
    Ok(Output { text, sections })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn args_keep_the_capability_prefix_and_pass_the_period() {
        assert_eq!(stats_args("/w", &[]), strings(&["stats", "--json", "--path", "/w"]));
        assert_eq!(
            stats_args("/w", &strings(&["all"])),
            strings(&["stats", "--json", "--path", "/w", "--all"])
        );
        assert_eq!(
            stats_args("/w", &strings(&["7d"])),
            strings(&["stats", "--json", "--path", "/w", "--since", "7d"])
        );
    }

    #[test]
    fn the_report_becomes_two_folded_tables() {
        let json = r#"{"record":{"path":"/w/.sift/fates","bytes":120,"events":9,"skipped":0},
            "stats":{"events":9,"agent":{"shown":3,"accepted":1,"edited":0,"rejected":2,"undecided":0,"acceptance":0.3333},
            "models":{"m":{"shown":3,"accepted":1,"rejected":2,"acceptance":0.3333}},
            "rules":{"python/bare-except":{"shown":4,"dismissed_wrong":1,"dismissed_noise":1,"fixed":1,"ignored":1,"resolution":0.5}}}}"#;
        let out = format_output(json, "7d").unwrap();
        assert!(out.text.starts_with("# sift stats, 7d: 9 record(s)"), "{}", out.text);
        assert!(out.text.contains("| all | 3 | 1 | 0 | 2 | 0 | 33 % |"), "{}", out.text);
        assert!(
            out.text.contains("| `python/bare-except` | 4 | 2 | 1 | 1 | 50 % |"),
            "{}",
            out.text
        );
        assert!(out.text.contains("`/w/.sift/fates` (120 bytes"), "{}", out.text);
        let labels: Vec<&str> = out.sections.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["agent runs", "review rules"]);
        assert!(out.text[out.sections[1].range.clone()].contains("bare-except"));
    }

    #[test]
    fn proposed_lessons_get_a_fold_of_their_own() {
        let json =
            r#"{"stats":{"events":2},"lessons":[{"run":"r7","cite":["calc.py:2-4"],"text":"t"}]}"#;
        let out = format_output(json, "").unwrap();
        let labels: Vec<&str> = out.sections.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["agent runs", "review rules", "lessons proposed"]);
        let fold = &out.text[out.sections[2].range.clone()];
        assert!(fold.contains("run `r7`, citing `calc.py:2-4`"), "{fold}");
        assert!(fold.contains("sift feedback lesson r7 --keep"), "{fold}");
        let none = format_output(r#"{"stats":{"events":0},"lessons":[]}"#, "").unwrap();
        assert_eq!(none.sections.len(), 2, "no fold without lessons");
    }

    #[test]
    fn an_empty_record_and_bad_output_are_said_plainly() {
        let out = format_output(r#"{"stats":{"events":0}}"#, "").unwrap();
        assert!(out.text.contains("the last 30 days: 0 record(s)"), "{}", out.text);
        assert!(out.text.contains("(none recorded)"), "{}", out.text);
        assert!(format_output("error: nope", "").unwrap_err().contains("JSON report"));
    }
}
