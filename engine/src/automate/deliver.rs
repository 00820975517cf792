//! A job's change, delivered as something a person reviews: suggestion comments on the pull
//! request's changed lines (one thread per suggestion across pushes: each carries a hidden key
//! of its job, file and text, and a key already on the pull request is not posted again), the
//! rest listed in the review's body; or a patch file.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::agent::Changes;
use crate::github::{self, ApiError, Client, PullRequest};

const MARKER: &str = "<!-- sift-automation ";

/// One suggested replacement of lines of a file as the pull request's head has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The file.
    pub path: String,
    /// The first line replaced (1-based).
    pub start: usize,
    /// The last line replaced.
    pub end: usize,
    /// The lines that replace them.
    pub text: String,
    /// What identifies it across pushes: a hash of the job, the file, the old and new lines.
    pub key: String,
}

/// The suggestions of `changes` (files the job modified; created and deleted files have no
/// lines to suggest on and are left to the patch).
pub fn suggestions(job: &str, changes: &Changes) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for (path, pending) in changes.iter() {
        let (Some(old), Some(new)) = (&pending.original, &pending.current) else { continue };
        if old == new {
            continue;
        }
        let old_lines: Vec<&str> = old.lines().collect();
        let new_lines: Vec<&str> = new.lines().collect();
        let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
        for group in similar::group_diff_ops(ops, 0) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
            let (old_start, old_end) = (first.old_range().start, last.old_range().end);
            let (new_start, new_end) = (first.new_range().start, last.new_range().end);
            // A pure insertion is suggested on the line before it (kept, then the new lines).
            let (start, end, text) = if old_start == old_end {
                if old_start == 0 {
                    continue;
                }
                let anchor = old_lines[old_start - 1];
                let added = new_lines[new_start..new_end].join("\n");
                (old_start, old_start, format!("{anchor}\n{added}"))
            } else {
                (old_start + 1, old_end, new_lines[new_start..new_end].join("\n"))
            };
            let old_text = old_lines[start - 1..end].join("\n");
            let key = blake3::hash(format!("{job}\0{path}\0{old_text}\0{text}").as_bytes())
                .to_hex()[..16]
                .to_owned();
            out.push(Suggestion { path: path.to_owned(), start, end, text, key });
        }
    }
    out
}

/// A suggestion's comment body.
fn body(job: &str, s: &Suggestion) -> String {
    let fence = if s.text.contains("```") { "````" } else { "```" };
    format!(
        "**sift automation** `{job}` suggests:\n\n{fence}suggestion\n{}\n{fence}\n\n<sub>Commit the suggestion to take it; it was checked by the job's checks.</sub>\n{MARKER}job={job} key={} -->",
        s.text, s.key
    )
}

/// The keys of the automation suggestions `login` already posted on the pull request (in
/// comments, or listed in a review's body).
fn posted_keys(comments: &[Value], login: &str) -> BTreeSet<String> {
    comments
        .iter()
        .filter(|c| c["user"]["login"].as_str() == Some(login))
        .filter_map(|c| c["body"].as_str())
        .filter_map(|b| b.rfind(MARKER).map(|at| &b[at + MARKER.len()..]))
        .filter_map(|m| m.split("-->").next())
        .flat_map(|m| m.split_whitespace().filter_map(|f| f.strip_prefix("key=")))
        .map(str::to_owned)
        .collect()
}

/// What [`post`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Posted {
    /// Suggestions posted inline.
    pub inline: usize,
    /// Suggestions on lines outside the diff, listed in the review's body.
    pub in_body: usize,
    /// Suggestions already on the pull request (an earlier push's): not posted again.
    pub already: usize,
}

/// Posts `suggestions` of `job` to the pull request as one review (nothing when all are
/// there already).
pub fn post(
    root: &std::path::Path,
    pr: &PullRequest,
    client: &Client,
    login: &str,
    job: &str,
    suggestions: &[Suggestion],
) -> Result<Posted, github::Error> {
    let mut seen =
        client.get_all(&pr.path(&format!("/pulls/{}/comments", pr.number)), "list the comments")?;
    seen.extend(
        client.get_all(&pr.path(&format!("/pulls/{}/reviews", pr.number)), "list the reviews")?,
    );
    let already = posted_keys(&seen, login);
    let hunks = github::commentable(root, pr)?;
    let inside = |s: &Suggestion| {
        hunks.get(&s.path).is_some_and(|h| h.iter().any(|(a, b)| *a <= s.start && s.end <= *b))
    };
    let mut posted = Posted::default();
    let mut inline = Vec::new();
    let mut listed = Vec::new();
    for s in suggestions {
        if already.contains(&s.key) {
            posted.already += 1;
        } else if inside(s) {
            let mut comment =
                json!({"path": s.path, "line": s.end, "side": "RIGHT", "body": body(job, s)});
            if s.start < s.end {
                comment["start_line"] = json!(s.start);
                comment["start_side"] = json!("RIGHT");
            }
            inline.push(comment);
        } else {
            listed.push(s);
        }
    }
    if inline.is_empty() && listed.is_empty() {
        return Ok(posted);
    }
    let mut text = format!(
        "**sift automation** `{job}`: {} suggestion{} for this push.",
        inline.len() + listed.len(),
        if inline.len() + listed.len() == 1 { "" } else { "s" }
    );
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    if !listed.is_empty() {
        text.push_str(
            "\n\nOn lines outside the diff (GitHub takes suggestions on changed lines only):\n",
        );
        for s in &listed {
            text.push_str(&format!(
                "\n`{}:{}-{}`:\n```\n{}\n```\n",
                s.path, s.start, s.end, s.text
            ));
            keys.insert(&s.key);
        }
        // The listed ones are not listed again: their keys, as the inline ones carry theirs.
        let list: Vec<&str> = keys.into_iter().collect();
        text.push_str(&format!("\n{MARKER}job={job} key={} -->\n", list.join(" key=")));
    }
    let review =
        json!({"commit_id": pr.head, "body": text, "event": "COMMENT", "comments": inline});
    let path = pr.path(&format!("/pulls/{}/reviews", pr.number));
    match client.post(&path, &review, "post the job's suggestions") {
        Ok(_) => {}
        Err(ApiError::Unprocessable { .. }) => {
            return Err(github::Error::Event(
                "GitHub would not take the suggestions (422): the pull request moved on; run the job again on its head".into(),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    posted.inline = inline.len();
    posted.in_body = listed.len();
    Ok(posted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_becomes_suggestions_on_the_lines_it_replaces() {
        let mut c = Changes::new();
        c.set(
            "a.py",
            Some("def g(y):\n    return y is 1\n\n\ndef h():\n    pass\n".into()),
            Some("def g(y):\n    return y == 1\n\n\ndef h():\n    pass\n    # done\n".into()),
        );
        c.set("new.py", None, Some("x = 1\n".into()));
        let s = suggestions("fix", &c);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].start, s[0].end, s[0].text.as_str()), (2, 2, "    return y == 1"));
        // An insertion after line 6: suggested on line 6, kept, then the new line.
        assert_eq!((s[1].start, s[1].end, s[1].text.as_str()), (6, 6, "    pass\n    # done"));
        // The same change, the same keys: one thread across pushes.
        assert_eq!(suggestions("fix", &c), s);
        assert_ne!(suggestions("other-job", &c)[0].key, s[0].key);
        let b = body("fix", &s[0]);
        assert!(b.contains("```suggestion\n    return y == 1\n```"), "{b}");
        let comments = [
            json!({"user": {"login": "bot"}, "body": b}),
            json!({"user": {"login": "eve"}, "body": body("fix", &s[1])}),
        ];
        assert_eq!(posted_keys(&comments, "bot"), BTreeSet::from([s[0].key.clone()]));
    }
}
