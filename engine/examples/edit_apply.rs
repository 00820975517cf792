//! Applies search/replace edits through the agent's `edit` matcher, for the edit benchmark
//! (`bench/edit-bench.sh`): reads one JSON case per line on stdin, `{"id", "old", "new",
//! "edits": [[old_text, new_text], …]}`, applies the edits in order to `old`, and prints one
//! JSON line per case: whether every edit applied, whether the result is exactly `new`, and
//! the first error (and with `"show": true` in the case, the resulting text).

use std::io::{BufRead, Write};

use serde_json::{Value, json};
use sift_engine::agent::matcher::{self, MatchKind};

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                writeln!(stdout, "{}", json!({"error": format!("bad case: {e}")}))?;
                continue;
            }
        };
        let mut text = case["old"].as_str().unwrap_or_default().to_owned();
        let mut error = None;
        let mut relaxed = 0;
        for edit in case["edits"].as_array().into_iter().flatten() {
            let (old, new) = (edit[0].as_str().unwrap_or(""), edit[1].as_str().unwrap_or(""));
            match matcher::locate(&text, old, new) {
                Ok(located) => {
                    if located.kind != MatchKind::Exact {
                        relaxed += 1;
                    }
                    text = matcher::apply(&text, &located);
                }
                Err(e) => {
                    error = Some(e.to_string().lines().next().unwrap_or("").to_owned());
                    break;
                }
            }
        }
        let applied = error.is_none();
        let exact = applied && text == case["new"].as_str().unwrap_or_default();
        let mut answer = json!({"id": case["id"], "applied": applied, "exact": exact,
                                "relaxed": relaxed, "error": error});
        if case["show"] == true {
            answer["text"] = json!(text);
        }
        writeln!(stdout, "{answer}")?;
    }
    Ok(())
}
