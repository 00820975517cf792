//! A job's change, delivered as something a person reviews: suggestion comments on the pull
//! request's changed lines (one thread per suggestion across pushes: each carries a hidden key
//! of its job, file and text, and a key already on the pull request is not posted again), the
//! rest listed in the review's body; or a patch file.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::agent::Changes;
use crate::fates::{Event, Fate, Kind};
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

/// The fields of the automation marker (`job=… key=…`, `job=… report=…`) of each comment or
/// review in `items` that `login` wrote, with the item: the bot's own, in order.
fn markers<'a>(
    items: &'a [Value],
    login: &'a str,
) -> impl Iterator<Item = (&'a Value, Vec<&'a str>)> + 'a {
    items.iter().filter(move |c| c["user"]["login"].as_str() == Some(login)).filter_map(|c| {
        let body = c["body"].as_str()?;
        let at = body.rfind(MARKER)?;
        let fields = body[at + MARKER.len()..].split("-->").next()?;
        Some((c, fields.split_whitespace().collect()))
    })
}

/// The value of `name=` among a marker's `fields` (the first).
fn field<'a>(fields: &[&'a str], name: &str) -> Option<&'a str> {
    fields.iter().find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
}

/// The keys of the automation suggestions `login` already posted on the pull request (in
/// comments, or listed in a review's body).
fn posted_keys(comments: &[Value], login: &str) -> BTreeSet<String> {
    markers(comments, login)
        .flat_map(|(_, fields)| fields.into_iter().filter_map(|f| f.strip_prefix("key=")))
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
    recorder: &crate::fates::Recorder,
) -> Result<Posted, github::Error> {
    let mut seen =
        client.get_all(&pr.path(&format!("/pulls/{}/comments", pr.number)), "list the comments")?;
    seen.extend(
        client.get_all(&pr.path(&format!("/pulls/{}/reviews", pr.number)), "list the reviews")?,
    );
    let already = posted_keys(&seen, login);
    applied(root, &seen, login, job, recorder);
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
    for s in suggestions.iter().filter(|s| !already.contains(&s.key)) {
        recorder.record(
            Event::new(Kind::Automation, format!("{job}/{}", s.key), Fate::Shown)
                .rule(job)
                .path(&s.path),
        );
    }
    Ok(posted)
}

/// Records as taken each of `job`'s suggestions on the pull request whose text the head now
/// has at its place (committed from the pull request's page, or by hand): read from the bot's
/// comments (`seen`) and the working tree, once per suggestion.
fn applied(
    root: &std::path::Path,
    seen: &[Value],
    login: &str,
    job: &str,
    recorder: &crate::fates::Recorder,
) {
    let taken: BTreeSet<String> = recorded(root, Kind::Automation)
        .into_iter()
        .filter(|(_, fate)| *fate == Fate::Accepted)
        .map(|(id, _)| id)
        .collect();
    for (c, fields) in markers(seen, login) {
        let (Some(body), Some(path)) = (c["body"].as_str(), c["path"].as_str()) else { continue };
        if field(&fields, "job") != Some(job) {
            continue;
        }
        let Some(key) = field(&fields, "key") else { continue };
        let id = format!("{job}/{key}");
        let Some(text) = suggested(body) else { continue };
        if taken.contains(&id) {
            continue;
        }
        let Ok(now) = std::fs::read_to_string(root.join(path)) else { continue };
        if now.contains(&text) {
            recorder.record(Event::new(Kind::Automation, id, Fate::Accepted).rule(job).path(path));
        }
    }
}

/// The text of a comment's suggestion block.
fn suggested(body: &str) -> Option<String> {
    let start = body.find("suggestion\n")? + "suggestion\n".len();
    let rest = &body[start..];
    let end = rest.find("\n```")?;
    Some(rest[..end].to_owned())
}

/// Records a patch delivered for `job`'s run `run` (its fate is not known to sift: a patch
/// shown and never taken stays undecided).
pub fn patch_shown(recorder: &crate::fates::Recorder, job: &str, run: &str, files: usize) {
    recorder.record(
        Event::new(Kind::Automation, format!("{job}/patch/{run}"), Fate::Shown)
            .rule(job)
            .count(files),
    );
}

/// Posts `job`'s `report` on the pull request as a review comment, unless the bot's latest
/// report of that job says the same (its hash is in its marker). `Ok(false)`: not posted
/// again.
pub fn report(
    pr: &PullRequest,
    client: &Client,
    login: &str,
    job: &str,
    text: &str,
    recorder: &crate::fates::Recorder,
) -> Result<bool, github::Error> {
    let hash = blake3::hash(text.trim().as_bytes()).to_hex()[..16].to_owned();
    let reviews =
        client.get_all(&pr.path(&format!("/pulls/{}/reviews", pr.number)), "list the reviews")?;
    let latest = markers(&reviews, login)
        .filter(|(_, fields)| field(fields, "job") == Some(job))
        .filter_map(|(_, fields)| field(&fields, "report"))
        .last();
    if latest == Some(hash.as_str()) {
        return Ok(false);
    }
    let body = format!(
        "**sift automation** `{job}` reports on `{}`:\n\n{}\n\n{MARKER}job={job} report={hash} -->",
        &pr.head[..pr.head.len().min(7)],
        text.trim()
    );
    let review = json!({"commit_id": pr.head, "body": body, "event": "COMMENT"});
    client.post(&pr.path(&format!("/pulls/{}/reviews", pr.number)), &review, "post the report")?;
    recorder.record(
        Event::new(Kind::Automation, format!("{job}/report/{hash}"), Fate::Shown).rule(job),
    );
    Ok(true)
}

/// Where a branch delivery goes: the repository, and the branch its pull request is opened
/// against.
#[derive(Debug)]
pub struct Target {
    /// The client (a token that may push and open pull requests).
    pub client: Client,
    /// The repository's owner.
    pub owner: String,
    /// Its name.
    pub repo: String,
    /// The branch the pull request is opened against: a pull request's own head branch (the
    /// job's change then shows alone, and merging it puts it into that pull request), else the
    /// default branch.
    pub base: String,
    /// The commit the change was made on.
    pub head: String,
    /// Branches never pushed to, whatever the job is called: the pull request's own branch and
    /// the default branch.
    pub protected: Vec<String>,
    /// The pull request the job ran on (for the name and the body), if any.
    pub pull_request: Option<u64>,
    /// The git remote pushed to (`origin`: the checkout's, with the job's credentials).
    pub remote: String,
}

/// What [`branch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branched {
    /// The branch pushed.
    pub branch: String,
    /// The pull request's number.
    pub number: u64,
    /// Its page.
    pub url: String,
    /// Whether it was opened now (else an open one was updated).
    pub opened: bool,
}

/// The branch of `job`'s change: `sift/<job>/pr-<n>` on a pull request, else
/// `sift/<job>/<date>`.
pub fn branch_name(job: &str, pull_request: Option<u64>, date: &str) -> String {
    match pull_request {
        Some(n) => format!("sift/{job}/pr-{n}"),
        None => format!("sift/{job}/{date}"),
    }
}

/// Commits `changes` on top of the target's head (without touching the working tree, the
/// index or a local branch), pushes the commit to the job's own branch, and opens a pull
/// request from it against the target's base, or updates the one open. Before that, the fates
/// of the job's earlier pull requests from that branch (merged: taken; closed: refused) are
/// recorded, once each.
pub fn branch(
    root: &std::path::Path,
    target: &Target,
    job: &str,
    run: &str,
    changes: &Changes,
    recorder: &crate::fates::Recorder,
) -> Result<Branched, github::Error> {
    let date = crate::memory::today();
    let name = branch_name(job, target.pull_request, &date);
    if !name.starts_with("sift/") || target.protected.contains(&name) {
        return Err(github::Error::Event(format!(
            "job {job}: will not push to {name}: it is a protected branch"
        )));
    }
    let repo = format!("/repos/{}/{}", target.owner, target.repo);
    let head_filter = format!("{}:{name}", target.owner);
    let earlier = target.client.get_all(
        &format!("{repo}/pulls?state=all&head={}", encode(&head_filter)),
        "list the job's pull requests",
    )?;
    record_decided(root, &earlier, job, recorder);
    let files: Vec<(String, Option<String>)> =
        changes.iter().map(|(path, p)| (path.to_owned(), p.current.clone())).collect();
    let message = format!(
        "sift automation {job}{}\n\nMade by the job's agent run {run}; its checks passed.",
        target.pull_request.map_or(String::new(), |n| format!(" for #{n}"))
    );
    let scratch = std::env::temp_dir();
    let commit = crate::review::git::commit_files(root, &target.head, &files, &message, &scratch)
        .map_err(|e| github::Error::Event(format!("job {job}: commit the change: {e}")))?;
    let refspec = format!("{commit}:refs/heads/{name}");
    crate::review::git::git(root, &["push", "--force", "--quiet", &target.remote, &refspec])
        .map_err(|e| github::Error::Event(format!("job {job}: push {name}: {e}")))?;
    let body = format!(
        "**sift automation** `{job}`{}: its agent's change, checked by the job's checks.\n\nMerge it to take the change; close it to refuse it (sift records either).\n\n{MARKER}job={job} branch={name} -->",
        target.pull_request.map_or(String::new(), |n| format!(" on #{n}"))
    );
    let open = earlier.iter().find(|p| p["state"] == "open");
    let (pull, opened) = match open {
        Some(p) => {
            let number = p["number"].as_u64().unwrap_or(0);
            let path = format!("{repo}/pulls/{number}");
            (
                target.client.patch(
                    &path,
                    &json!({"body": body}),
                    "update the job's pull request",
                )?,
                false,
            )
        }
        None => {
            let title = format!(
                "sift: {job}{}",
                target.pull_request.map_or(String::new(), |n| format!(" for #{n}"))
            );
            let request = json!({"title": title, "head": name, "base": target.base, "body": body});
            (
                target.client.post(
                    &format!("{repo}/pulls"),
                    &request,
                    "open the job's pull request",
                )?,
                true,
            )
        }
    };
    let number = pull["number"].as_u64().unwrap_or(0);
    if opened {
        recorder.record(
            Event::new(Kind::Automation, format!("{job}/pull/{number}"), Fate::Shown)
                .rule(job)
                .count(files.len()),
        );
    }
    Ok(Branched {
        branch: name,
        number,
        url: pull["html_url"].as_str().unwrap_or_default().to_owned(),
        opened,
    })
}

/// Records the fates of `job`'s closed pull requests not recorded yet: merged, taken; closed
/// without merging, refused.
fn record_decided(
    root: &std::path::Path,
    pulls: &[Value],
    job: &str,
    recorder: &crate::fates::Recorder,
) {
    let known = recorded(root, Kind::Automation);
    for p in pulls.iter().filter(|p| p["state"] == "closed") {
        let id = format!("{job}/pull/{}", p["number"].as_u64().unwrap_or(0));
        let fate = if p["merged_at"].is_string() { Fate::Accepted } else { Fate::Rejected };
        if !known.contains(&(id.clone(), fate)) {
            recorder.record(Event::new(Kind::Automation, id, fate).rule(job));
        }
    }
}

/// The (id, fate) pairs of `kind` already in the record.
fn recorded(root: &std::path::Path, kind: Kind) -> BTreeSet<(String, Fate)> {
    let events = crate::store::open(root).ok().and_then(|s| crate::fates::read(&s).ok());
    events
        .map(|r| r.records)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| (e.id, e.fate))
        .collect()
}

/// `text` for a URL's query.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
