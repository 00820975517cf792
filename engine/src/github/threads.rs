//! One thread per finding across pushes, decided without the network: which of the bot's
//! comments are its own (a hidden marker with the finding's fingerprint, written by the bot's
//! login), what each reply says, and the plan for this push — the comments to post, the ones
//! to edit (fixed, dismissed, moved, back again), what goes in the review's body instead.
//!
//! The fingerprint does not depend on the line (`sift_runtime::rules::finding::fingerprint`),
//! so a finding that moved keeps its thread. Everything the plan needs is on the pull request
//! itself, so a run needs no state of its own between pushes: CI runners start empty.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use sift_runtime::rules::report::{ReportItem, github_comment};

/// The start of every marker the bot writes.
const MARKER: &str = "<!-- sift-review ";

/// What a bot comment says of its finding now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The finding is raised.
    Open,
    /// The finding is gone from the change.
    Fixed,
    /// Someone with write access said it is wrong or noise (or it is dismissed in
    /// `.sift/feedback/`): never raised again on this pull request.
    Dismissed,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Fixed => "fixed",
            State::Dismissed => "dismissed",
        }
    }
}

/// One of the bot's inline comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotComment {
    /// GitHub's id of the comment.
    pub id: u64,
    /// The finding's fingerprint.
    pub fingerprint: String,
    /// The finding's rule.
    pub rule: String,
    /// The file it is on.
    pub path: String,
    /// The line it is anchored on in the commit it was posted on.
    pub line: Option<u64>,
    /// What it says of the finding.
    pub state: State,
    /// Its body as it is.
    pub body: String,
    /// How many 👎 it has.
    pub thumbs_down: u64,
}

/// A reply in one of the bot's threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The bot comment it answers.
    pub to: u64,
    /// Who wrote it.
    pub login: String,
    /// What it says, when it is a verdict.
    pub verdict: Option<Verdict>,
}

/// What a reply (or a 👎) says of a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Right but not worth raising (`/sift noise`, 👎), rather than wrong (`/sift wrong`).
    pub noise: bool,
    /// The reason given after the command.
    pub reason: Option<String>,
}

/// The replier's verdict, with who gave it: the input of [`plan`] once their write access is
/// checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Who.
    pub login: String,
    /// What they said.
    pub verdict: Verdict,
}

/// The bot's comments and the replies to them, out of a pull request's review comments: a
/// comment is the bot's when `login` wrote it and it carries the marker. Comments by others
/// that copy the marker are not the bot's.
pub fn read_comments(comments: &[Value], login: &str) -> (Vec<BotComment>, Vec<Reply>) {
    let mut bot = Vec::new();
    for c in comments {
        let (Some(id), Some(body)) = (c["id"].as_u64(), c["body"].as_str()) else { continue };
        if c["user"]["login"].as_str() != Some(login) || c["in_reply_to_id"].is_u64() {
            continue;
        }
        let Some(marker) = parse_marker(body) else { continue };
        bot.push(BotComment {
            id,
            fingerprint: marker.fingerprint,
            rule: marker.rule,
            path: c["path"].as_str().unwrap_or_default().to_owned(),
            line: c["line"].as_u64().or_else(|| c["original_line"].as_u64()),
            state: marker.state,
            body: body.to_owned(),
            thumbs_down: c["reactions"]["-1"].as_u64().unwrap_or(0),
        });
    }
    let ours: BTreeSet<u64> = bot.iter().map(|b| b.id).collect();
    let replies = comments
        .iter()
        .filter_map(|c| {
            let to = c["in_reply_to_id"].as_u64().filter(|to| ours.contains(to))?;
            // The bot's own replies are never verdicts.
            let by = c["user"]["login"].as_str().filter(|by| *by != login)?;
            Some(Reply {
                to,
                login: by.to_owned(),
                verdict: c["body"].as_str().and_then(parse_verdict),
            })
        })
        .collect();
    (bot, replies)
}

/// The verdict a reply's first line gives: `/sift wrong [reason]` or `/sift noise [reason]`
/// (case does not matter; a `:` or `-` may separate the reason).
pub fn parse_verdict(body: &str) -> Option<Verdict> {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lower = line.to_ascii_lowercase();
    let rest = lower.strip_prefix("/sift")?;
    let rest = rest.trim_start();
    let (noise, word) = if rest.starts_with("wrong") {
        (false, "wrong")
    } else if rest.starts_with("noise") {
        (true, "noise")
    } else {
        return None;
    };
    // The reason keeps the user's own case: cut the same number of bytes from the line.
    let cut = line.len() - rest.len() + word.len();
    let after = &line[cut..];
    if after.chars().next().is_some_and(char::is_alphanumeric) {
        return None; // `/sift wrongly…`
    }
    let reason = after.trim_start_matches([':', '-', ' ', '\t']).trim();
    Some(Verdict { noise, reason: (!reason.is_empty()).then(|| reason.to_owned()) })
}

/// `items` with each fingerprint made unique on the pull request: the second finding of one
/// rule on the same text in the same file (two `x=[]` defaults) is `<fingerprint>-2`, the
/// third `-3`, in the file's order, so each gets its own thread.
pub fn distinct(items: &[ReportItem]) -> Vec<ReportItem> {
    let mut order: Vec<&ReportItem> = items.iter().collect();
    order.sort_by_key(|i| (i.finding.path.as_str(), i.finding.start_line, i.finding.start_col));
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut renamed: BTreeMap<(String, usize, usize), String> = BTreeMap::new();
    for item in order {
        let f = &item.finding;
        let n = seen.entry(f.fingerprint.as_str()).or_default();
        *n += 1;
        if *n > 1 {
            let key = (f.path.clone(), f.start_line, f.start_col);
            renamed.insert(key, format!("{}-{n}", f.fingerprint));
        }
    }
    items
        .iter()
        .map(|i| {
            let mut i = i.clone();
            let key = (i.finding.path.clone(), i.finding.start_line, i.finding.start_col);
            if let Some(fp) = renamed.get(&key) {
                i.finding.fingerprint = fp.clone();
            }
            i
        })
        .collect()
}

/// The finding's own fingerprint of a thread's (`…-2` of [`distinct`] without its number).
pub fn base_fingerprint(fingerprint: &str) -> &str {
    match fingerprint.rsplit_once('-') {
        Some((base, n)) if n.parse::<usize>().is_ok() => base,
        _ => fingerprint,
    }
}

/// A marker's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marker {
    fingerprint: String,
    rule: String,
    state: State,
}

fn marker(fingerprint: &str, rule: &str, state: State) -> String {
    format!("{MARKER}fingerprint={fingerprint} rule={rule} state={} -->", state.as_str())
}

fn parse_marker(body: &str) -> Option<Marker> {
    let at = body.rfind(MARKER)?;
    let inner = body[at + MARKER.len()..].split("-->").next()?;
    let mut fingerprint = None;
    let mut rule = String::new();
    let mut state = State::Open;
    for field in inner.split_whitespace() {
        match field.split_once('=') {
            Some(("fingerprint", v)) => fingerprint = Some(v.to_owned()),
            Some(("rule", v)) => rule = v.to_owned(),
            Some(("state", "fixed")) => state = State::Fixed,
            Some(("state", "dismissed")) => state = State::Dismissed,
            _ => {}
        }
    }
    let fingerprint = fingerprint.filter(|f| !f.is_empty())?;
    Some(Marker { fingerprint, rule, state })
}

/// The state in a body's marker.
pub fn state_of(body: &str) -> Option<State> {
    parse_marker(body).map(|m| m.state)
}

/// The fingerprints a review body of the bot's listed (findings outside the diff).
pub fn body_fingerprints(body: &str) -> BTreeSet<String> {
    body.match_indices("<!-- sift-review listed=")
        .filter_map(|(at, m)| body[at + m.len()..].split("-->").next())
        .flat_map(|list| list.split(',').map(str::trim).filter(|f| !f.is_empty()))
        .map(str::to_owned)
        .collect()
}

const FOOTER: &str = "<sub>sift review · a reply of `/sift wrong <reason>` or `/sift noise <reason>` (or a 👎) from someone with write access dismisses it</sub>";

/// The body of the open comment of `item`.
fn open_body(item: &ReportItem, moved_to: Option<(&str, usize)>) -> String {
    let comment = github_comment(item);
    let f = &item.finding;
    let mut body = comment["body"].as_str().unwrap_or_default().to_owned();
    if let Some((head, line)) = moved_to {
        body.push_str(&format!("\n\n_Still raised at `{}:{line}` in `{head}`._", f.path));
    }
    format!("{body}\n\n{FOOTER}\n{}", marker(&f.fingerprint, &f.rule, State::Open))
}

/// The comment's first line (what the finding said), struck through.
fn struck(body: &str) -> String {
    let first = body.lines().next().unwrap_or("").trim();
    let first = first.trim_start_matches("✅ ").trim_start_matches("🚫 ");
    format!("~~{}~~", first.trim_matches('~'))
}

/// The last body of a comment whose finding is gone (fixed in `head`).
fn fixed_body(comment: &BotComment, head: &str) -> String {
    format!(
        "✅ Fixed in `{head}`.\n\n{}\n\n{}",
        struck(&comment.body),
        marker(&comment.fingerprint, &comment.rule, State::Fixed)
    )
}

/// The body of a comment whose finding was dismissed.
fn dismissed_body(comment: &BotComment, by: &str) -> String {
    format!(
        "🚫 Dismissed {by}.\n\n{}\n\n{}",
        struck(&comment.body),
        marker(&comment.fingerprint, &comment.rule, State::Dismissed)
    )
}

/// What this push does to the pull request's threads.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// New findings to comment on inline, most important first ([`comment`] makes each one's
    /// `comments[]` item of the review).
    pub post: Vec<ReportItem>,
    /// New findings that go in the review's body: on lines outside the diff (GitHub refuses
    /// comments there), or beyond the comment limit.
    pub in_body: Vec<ReportItem>,
    /// How many of `in_body` are beyond the limit (the rest are outside the diff).
    pub over_limit: usize,
    /// Comments to edit: (id, new body). Only those whose body changes.
    pub edit: Vec<(u64, String)>,
    /// Findings newly dismissed by a writer's reply: (fingerprint, rule, path, who, verdict).
    pub dismiss: Vec<(String, String, String, String, Verdict)>,
    /// Threads of findings still raised (moved ones included).
    pub still_open: usize,
    /// Threads newly marked fixed.
    pub fixed: usize,
    /// Threads raised again after they were marked fixed.
    pub reopened: usize,
    /// Findings not raised because they are dismissed (newly or before).
    pub dismissed: usize,
}

/// What the planner is told.
pub struct Inputs<'a> {
    /// Every finding of the change, most important first.
    pub items: &'a [ReportItem],
    /// The bot's comments.
    pub comments: &'a [BotComment],
    /// Writers' verdicts on the bot's comments, by comment id (replies first, then 👎).
    pub verdicts: &'a BTreeMap<u64, Judged>,
    /// Fingerprints dismissed in the repository's `.sift/feedback/` (of the base revision).
    pub dismissed_in_repo: &'a BTreeSet<String>,
    /// Fingerprints an earlier review body of the bot's listed already.
    pub listed: &'a BTreeSet<String>,
    /// Whether GitHub takes a comment on lines `start..=end` of `path` (they are in the diff).
    pub commentable: &'a dyn Fn(&str, usize, usize) -> bool,
    /// The head commit, short, for "fixed in".
    pub head: &'a str,
    /// The most new inline comments one push posts.
    pub max_comments: usize,
}

/// The plan for this push (see the module doc).
pub fn plan(inputs: &Inputs<'_>) -> Plan {
    let mut plan = Plan::default();
    let current: BTreeMap<&str, &ReportItem> =
        inputs.items.iter().map(|i| (i.finding.fingerprint.as_str(), i)).collect();
    let mut threaded = BTreeSet::new();
    for comment in inputs.comments {
        // Two comments of one finding (an interrupted earlier run): the first is its thread.
        if !threaded.insert(comment.fingerprint.as_str()) {
            continue;
        }
        let item = current.get(comment.fingerprint.as_str());
        let body = if comment.state == State::Dismissed {
            plan.dismissed += usize::from(item.is_some());
            None
        } else if let Some(judged) = inputs.verdicts.get(&comment.id) {
            let kind = if judged.verdict.noise { "as noise" } else { "as wrong" };
            let mut by = format!("{kind} by @{}", judged.login);
            if let Some(reason) = &judged.verdict.reason {
                by.push_str(&format!(": {reason}"));
            }
            plan.dismiss.push((
                comment.fingerprint.clone(),
                comment.rule.clone(),
                item.map_or_else(|| comment.path.clone(), |i| i.finding.path.clone()),
                judged.login.clone(),
                judged.verdict.clone(),
            ));
            plan.dismissed += 1;
            Some(dismissed_body(comment, &by))
        } else if inputs.dismissed_in_repo.contains(base_fingerprint(&comment.fingerprint)) {
            plan.dismissed += 1;
            Some(dismissed_body(comment, "in the repository's `.sift/feedback/`"))
        } else if let Some(item) = item {
            let at = anchor(item).1;
            let moved = (comment.line != Some(at as u64)).then_some((inputs.head, at));
            if comment.state == State::Fixed {
                plan.reopened += 1;
            } else {
                plan.still_open += 1;
            }
            Some(open_body(item, moved))
        } else if comment.state == State::Open {
            plan.fixed += 1;
            Some(fixed_body(comment, inputs.head))
        } else {
            None
        };
        if let Some(body) = body.filter(|b| *b != comment.body) {
            plan.edit.push((comment.id, body));
        }
    }
    for item in inputs.items {
        let f = &item.finding;
        if threaded.contains(f.fingerprint.as_str()) || inputs.listed.contains(&f.fingerprint) {
            continue;
        }
        let (start, end) = anchor(item);
        if (inputs.commentable)(&f.path, start, end) {
            if plan.post.len() < inputs.max_comments {
                plan.post.push(item.clone());
            } else {
                plan.over_limit += 1;
                plan.in_body.push(item.clone());
            }
        } else {
            plan.in_body.push(item.clone());
        }
    }
    plan
}

/// The inline comment of a new finding (GitHub's `comments[]` item of a review), with its
/// marker.
pub fn comment(item: &ReportItem) -> Value {
    let mut comment = github_comment(item);
    comment["body"] = open_body(item, None).into();
    comment
}

/// The lines a finding's comment is on: its fix's, else its own.
fn anchor(item: &ReportItem) -> (usize, usize) {
    match &item.fix {
        Some(fix) => (fix.start_line, fix.end_line),
        None => (item.finding.start_line, item.finding.end_line),
    }
}

/// The review's body for a plan that posts something: the counts, the findings it lists, and
/// the marker of what it listed (so the next push does not list them again).
pub fn review_body(plan: &Plan, head: &str, total: usize) -> String {
    let mut out = format!("**sift review** of `{head}`: ");
    let mut parts = vec![format!("{} new finding{}", total, if total == 1 { "" } else { "s" })];
    if plan.still_open + plan.reopened > 0 {
        parts.push(format!("{} still open", plan.still_open + plan.reopened));
    }
    if plan.fixed > 0 {
        parts.push(format!("{} fixed", plan.fixed));
    }
    if plan.dismissed > 0 {
        parts.push(format!("{} dismissed", plan.dismissed));
    }
    out.push_str(&parts.join(", "));
    out.push_str(".\n");
    if !plan.in_body.is_empty() {
        let over = plan.over_limit;
        out.push_str(&format!(
            "\n{} not commented inline ({} on lines outside the diff, {over} beyond the limit of comments per push):\n\n",
            plan.in_body.len(),
            plan.in_body.len() - over
        ));
        for item in &plan.in_body {
            let f = &item.finding;
            out.push_str(&format!(
                "- **{}** `{}` at `{}:{}`: {}\n",
                f.severity,
                f.rule,
                f.path,
                f.start_line,
                f.message.replace('\n', " ")
            ));
        }
        let listed: Vec<&str> =
            plan.in_body.iter().map(|i| i.finding.fingerprint.as_str()).collect();
        out.push_str(&format!("\n<!-- sift-review listed={} -->\n", listed.join(",")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sift_runtime::rules::Severity;
    use sift_runtime::rules::finding::Finding;

    fn item(fp: &str, path: &str, line: usize) -> ReportItem {
        ReportItem {
            finding: Finding {
                rule: "no-todo".into(),
                severity: Severity::Warning,
                confidence: 1.0,
                path: path.into(),
                start_line: line,
                end_line: line,
                start_col: 1,
                end_col: 2,
                start_byte: 0,
                end_byte: 1,
                message: format!("finding {fp}"),
                rationale: "why".into(),
                fix: None,
                fingerprint: fp.into(),
            },
            fix: None,
        }
    }

    fn api_comment(id: u64, login: &str, body: &str, line: u64) -> Value {
        serde_json::json!({"id": id, "user": {"login": login}, "body": body, "path": "a.py", "line": line, "reactions": {"-1": 0}})
    }

    fn bot(id: u64, item: &ReportItem) -> BotComment {
        let body = open_body(item, None);
        let (mut c, _) =
            read_comments(&[api_comment(id, "bot", &body, item.finding.start_line as u64)], "bot");
        c.remove(0)
    }

    fn run(
        items: &[ReportItem],
        comments: &[BotComment],
        verdicts: &BTreeMap<u64, Judged>,
    ) -> Plan {
        plan(&Inputs {
            items,
            comments,
            verdicts,
            dismissed_in_repo: &BTreeSet::new(),
            listed: &BTreeSet::new(),
            commentable: &|_, start, _| start < 1000,
            head: "abc1234",
            max_comments: 2,
        })
    }

    #[test]
    fn verdicts_are_read_from_the_first_line() {
        assert_eq!(parse_verdict("/sift wrong"), Some(Verdict { noise: false, reason: None }));
        assert_eq!(
            parse_verdict("\n  /SIFT Noise: We Allow This here\nmore"),
            Some(Verdict { noise: true, reason: Some("We Allow This here".into()) })
        );
        assert_eq!(
            parse_verdict("/sift wrong - not a secret"),
            Some(Verdict { noise: false, reason: Some("not a secret".into()) })
        );
        assert_eq!(parse_verdict("/sift wrongly flagged?"), None);
        assert_eq!(parse_verdict("I think /sift wrong"), None);
        assert_eq!(parse_verdict("thanks!"), None);
    }

    #[test]
    fn only_the_bots_own_marked_comments_are_its_threads() {
        let a = item("aaaa", "a.py", 3);
        let body = open_body(&a, None);
        let comments = [
            api_comment(1, "bot", &body, 3),
            // Someone else pasted the marker.
            api_comment(2, "mallory", &body, 3),
            // The bot's comment without a marker (not sift's).
            api_comment(3, "bot", "hello", 3),
            serde_json::json!({"id": 4, "in_reply_to_id": 1, "user": {"login": "ann"}, "body": "/sift noise style"}),
            serde_json::json!({"id": 5, "in_reply_to_id": 2, "user": {"login": "ann"}, "body": "/sift wrong"}),
            serde_json::json!({"id": 6, "in_reply_to_id": 1, "user": {"login": "bot"}, "body": "/sift wrong"}),
        ];
        let (bot, replies) = read_comments(&comments, "bot");
        assert_eq!(bot.iter().map(|b| b.id).collect::<Vec<_>>(), [1]);
        assert_eq!(bot[0].fingerprint, "aaaa");
        assert_eq!(bot[0].rule, "no-todo");
        assert_eq!(bot[0].state, State::Open);
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(replies[0].to, 1);
        assert_eq!(replies[0].verdict, Some(Verdict { noise: true, reason: Some("style".into()) }));
    }

    #[test]
    fn a_push_posts_only_whats_new_and_edits_what_changed() {
        let (a, b, c) = (item("aaaa", "a.py", 3), item("bbbb", "a.py", 5), item("cccc", "a.py", 7));
        let first = run(&[a.clone(), b.clone()], &[], &BTreeMap::new());
        assert_eq!(first.post.len(), 2);
        assert!(first.edit.is_empty());
        // Push 2: a fixed, b unchanged, c new.
        let comments = [bot(10, &a), bot(11, &b)];
        let second = run(&[b.clone(), c.clone()], &comments, &BTreeMap::new());
        assert_eq!(second.post.len(), 1);
        assert!(comment(&second.post[0])["body"].as_str().unwrap().contains("fingerprint=cccc"));
        assert_eq!(second.edit.len(), 1, "only a's comment changes: {:?}", second.edit);
        assert_eq!(second.edit[0].0, 10);
        assert!(second.edit[0].1.starts_with("✅ Fixed in `abc1234`"));
        assert!(second.edit[0].1.contains("state=fixed"));
        assert_eq!((second.fixed, second.still_open), (1, 1));
        // b moved by 200 lines: the same thread, told where it is now.
        let moved = item("bbbb", "a.py", 205);
        let third = run(&[moved], &comments[1..], &BTreeMap::new());
        assert!(third.post.is_empty());
        assert_eq!(third.edit.len(), 1);
        assert!(third.edit[0].1.contains("Still raised at `a.py:205`"), "{}", third.edit[0].1);
    }

    #[test]
    fn a_fixed_finding_that_comes_back_reopens_its_thread() {
        let a = item("aaaa", "a.py", 3);
        let mut fixed = bot(10, &a);
        fixed.body = fixed_body(&fixed, "abc1234");
        fixed.state = State::Fixed;
        let plan = run(std::slice::from_ref(&a), &[fixed], &BTreeMap::new());
        assert!(plan.post.is_empty());
        assert_eq!(plan.reopened, 1);
        assert!(plan.edit[0].1.contains("state=open"));
        // Gone again and already fixed: nothing to edit.
        let mut fixed = bot(10, &a);
        fixed.body = fixed_body(&fixed, "abc1234");
        fixed.state = State::Fixed;
        assert_eq!(run(&[], &[fixed], &BTreeMap::new()), Plan::default());
    }

    #[test]
    fn a_writers_verdict_dismisses_for_good() {
        let a = item("aaaa", "a.py", 3);
        let verdicts = BTreeMap::from([(
            10,
            Judged {
                login: "ann".into(),
                verdict: Verdict { noise: false, reason: Some("test data".into()) },
            },
        )]);
        let plan = run(std::slice::from_ref(&a), &[bot(10, &a)], &verdicts);
        assert!(plan.post.is_empty());
        assert_eq!(plan.dismiss.len(), 1);
        assert_eq!(plan.dismiss[0].0, "aaaa");
        assert!(plan.edit[0].1.starts_with("🚫 Dismissed as wrong by @ann: test data."));
        // The next push: the comment says dismissed; the finding is still there; nothing.
        let mut done = bot(10, &a);
        done.body = plan.edit[0].1.clone();
        done.state = State::Dismissed;
        let next = run(&[a], &[done], &BTreeMap::new());
        assert!(next.post.is_empty() && next.edit.is_empty() && next.dismiss.is_empty());
    }

    #[test]
    fn outside_the_diff_or_over_the_limit_goes_in_the_body_once() {
        let items = [
            item("aaaa", "a.py", 3),
            item("bbbb", "a.py", 4),
            item("cccc", "a.py", 5),
            item("dddd", "a.py", 2000),
        ];
        let plan = run(&items, &[], &BTreeMap::new());
        assert_eq!(plan.post.len(), 2);
        assert_eq!(plan.in_body.len(), 2);
        assert_eq!(plan.over_limit, 1);
        let body = review_body(&plan, "abc1234", 4);
        assert!(body.contains("1 on lines outside the diff, 1 beyond the limit"), "{body}");
        let listed = body_fingerprints(&body);
        assert_eq!(listed, BTreeSet::from(["cccc".to_string(), "dddd".to_string()]));
        let again = plan_with_listed(&items[2..], &listed);
        assert!(again.post.is_empty() && again.in_body.is_empty(), "{again:?}");
    }

    #[test]
    fn the_same_text_twice_in_a_file_gets_two_threads() {
        // Fingerprints hash the rule, the path and the flagged text: the same text twice in a
        // file has one fingerprint.
        let items = [item("aaaa", "a.py", 9), item("aaaa", "a.py", 3), item("bbbb", "b.py", 1)];
        let distinct = distinct(&items);
        let fps: Vec<&str> = distinct.iter().map(|i| i.finding.fingerprint.as_str()).collect();
        // In the file's order: line 3 is the first, line 9 the second.
        assert_eq!(fps, ["aaaa-2", "aaaa", "bbbb"]);
        assert_eq!(base_fingerprint("aaaa-2"), "aaaa");
        assert_eq!(base_fingerprint("aaaa"), "aaaa");
        assert_eq!(run(&distinct, &[], &BTreeMap::new()).post.len(), 2);
    }

    fn plan_with_listed(items: &[ReportItem], listed: &BTreeSet<String>) -> Plan {
        plan(&Inputs {
            items,
            comments: &[],
            verdicts: &BTreeMap::new(),
            dismissed_in_repo: &BTreeSet::new(),
            listed,
            commentable: &|_, _, _| true,
            head: "abc1234",
            max_comments: 10,
        })
    }
}
