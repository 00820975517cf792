//! `review`: sift's bug-finder (the review use case, its rules and configuration) on the
//! agent's pending change, as texts in memory.

use std::fmt::Write as _;

use super::{Session, ToolOutput};
use crate::review::{self, Change, Request, TextChange};

/// The most findings shown to the model.
const MAX_FINDINGS: usize = 20;

/// `review {}`.
pub fn review(s: &Session<'_>) -> ToolOutput {
    assess(s).0
}

/// The review of the pending change: the tool's answer and the number of findings (`None`
/// when the review could not run).
pub fn assess(s: &Session<'_>) -> (ToolOutput, Option<usize>) {
    let files: Vec<TextChange> = s
        .changes
        .iter()
        .filter(|(_, p)| p.original != p.current)
        .filter_map(|(path, p)| {
            let new = p.current.clone()?;
            Some(TextChange { path: path.to_owned(), old: p.original.clone(), new })
        })
        .collect();
    if files.is_empty() {
        return (ToolOutput::ok("nothing to review: you have not changed any file yet"), Some(0));
    }
    let request = Request {
        change: Change::Texts(&files),
        max_findings: Some(MAX_FINDINGS),
        ..Request::default()
    };
    let reviewed = match review::review(&s.root, &request) {
        Ok(r) => r,
        Err(e) => return (ToolOutput::fail(format!("the review failed: {e}")), None),
    };
    if reviewed.items.is_empty() {
        let text = format!("review: no findings on the lines you changed ({} files)", files.len());
        return (ToolOutput::ok(text), Some(0));
    }
    let mut out = format!("review: {} findings on the lines you changed:\n", reviewed.total);
    for item in &reviewed.items {
        let f = &item.finding;
        let _ = writeln!(
            out,
            "{}:{}: {} [{}] {}",
            f.path,
            f.start_line,
            f.severity.as_str(),
            f.rule,
            f.message
        );
    }
    (ToolOutput::ok(out), Some(reviewed.total))
}
