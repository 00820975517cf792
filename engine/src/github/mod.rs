//! The pull-request bot: a review posted to a GitHub pull request as one review with inline
//! comments, one thread per finding across pushes, and replies that dismiss findings.
//!
//! - [`PullRequest::from_env`]: the pull request, out of what GitHub Actions sets
//!   (`GITHUB_EVENT_PATH`, `GITHUB_REPOSITORY`, `GITHUB_API_URL`, `GITHUB_TOKEN`).
//! - [`client`]: the REST calls, their retries, the token kept to itself.
//! - [`threads`]: which comments are the bot's, what replies say, and the plan for a push,
//!   decided without the network (unit-tested).
//! - [`post`]: a review of the pull request (made by [`crate::review`] against its base, with
//!   the settings of the base revision) put on it by that plan; writers' verdicts dismissed
//!   through [`crate::review::dismiss`], the one place dismissals are written, and every fate
//!   recorded.
//!
//! Nothing is stored between runs: the threads are the state, so each CI run starts empty.

pub mod client;
pub mod threads;
pub mod workflow;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};
use sift_runtime::rules::suppression::Why;

pub use client::{ApiError, Client, Retry, Token};

use crate::fates::{Event, Fate, Kind, Recorder};
use crate::review::Reviewed;
use threads::{Judged, Verdict};

/// What went wrong, in one line without the token.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not in a pull request's job, or its event cannot be read.
    #[error("{0}")]
    Event(String),
    /// The checkout is not the pull request's head.
    #[error(
        "HEAD is {head}, but the pull request's head is {expected}: check out the head commit (actions/checkout with `ref: ${{{{ github.event.pull_request.head.sha }}}}` and `fetch-depth: 0`), so the comments land on the lines GitHub shows"
    )]
    NotTheHead {
        /// `HEAD`.
        head: String,
        /// The pull request's head.
        expected: String,
    },
    /// A call to GitHub failed.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The review, or git.
    #[error(transparent)]
    Review(#[from] crate::review::Error),
}

/// A pull request, as its CI job sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// The API's address (no trailing `/`).
    pub api: String,
    /// The GraphQL endpoint (`GITHUB_GRAPHQL_URL`; resolving a thread is in GraphQL only).
    pub graphql: String,
    /// The repository's owner.
    pub owner: String,
    /// The repository's name.
    pub repo: String,
    /// The pull request's number.
    pub number: u64,
    /// The base branch's commit.
    pub base: String,
    /// The head commit.
    pub head: String,
    /// Whether the head is in another repository (a fork): GitHub gives such jobs no token
    /// that may write.
    pub fork: bool,
    /// Its labels.
    pub labels: Vec<String>,
    /// Its head branch's name (`pull_request.head.ref`), when the event says.
    pub head_ref: Option<String>,
    /// The repository's default branch, when the event says.
    pub default_branch: Option<String>,
    /// Whether it was merged (a `closed` event of a merged pull request).
    pub merged: bool,
}

impl PullRequest {
    /// The pull request of this job, from `GITHUB_EVENT_PATH` (a `pull_request` or
    /// `pull_request_target` event), `GITHUB_REPOSITORY` and `GITHUB_API_URL`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<PullRequest, Error> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let Some(path) = set("GITHUB_EVENT_PATH") else {
            return Err(Error::Event(
                "--post github runs in a GitHub Actions job of a pull request: GITHUB_EVENT_PATH is not set".into(),
            ));
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Event(format!("cannot read the event {path}: {e}")))?;
        let event: Value = serde_json::from_str(&text)
            .map_err(|e| Error::Event(format!("the event {path} is not JSON: {e}")))?;
        let api = set("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
        let repository = set("GITHUB_REPOSITORY")
            .or_else(|| event["repository"]["full_name"].as_str().map(str::to_owned));
        let mut pr = PullRequest::from_event(&event, repository.as_deref(), &api)
            .map_err(|e| Error::Event(format!("the event {path}: {e}")))?;
        if let Some(graphql) = set("GITHUB_GRAPHQL_URL") {
            pr.graphql = graphql.trim_end_matches('/').to_owned();
        }
        Ok(pr)
    }

    /// The pull request of an event's JSON.
    pub fn from_event(
        event: &Value,
        repository: Option<&str>,
        api: &str,
    ) -> Result<PullRequest, String> {
        let pr = &event["pull_request"];
        if !pr.is_object() {
            return Err("it is not a pull request's event (no `pull_request`): run the job `on: pull_request`".into());
        }
        let sha = |side: &str| {
            pr[side]["sha"]
                .as_str()
                .filter(|s| s.len() >= 7 && s.chars().all(|c| c.is_ascii_hexdigit()))
                .map(str::to_owned)
                .ok_or_else(|| format!("no commit in `pull_request.{side}.sha`"))
        };
        let number = pr["number"]
            .as_u64()
            .or_else(|| event["number"].as_u64())
            .ok_or("no `pull_request.number`")?;
        let repository = repository
            .or_else(|| pr["base"]["repo"]["full_name"].as_str())
            .ok_or("no repository: GITHUB_REPOSITORY is not set")?;
        let (owner, repo) = repository
            .split_once('/')
            .filter(|(o, r)| !o.is_empty() && !r.is_empty() && !r.contains('/'))
            .ok_or_else(|| format!("the repository {repository:?} is not owner/name"))?;
        let base_repo = pr["base"]["repo"]["full_name"].as_str();
        let head_repo = pr["head"]["repo"]["full_name"].as_str();
        let api = api.trim_end_matches('/');
        // GitHub Enterprise Server: REST at /api/v3, GraphQL at /api/graphql.
        let graphql = match api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{api}/graphql"),
        };
        Ok(PullRequest {
            api: api.to_owned(),
            graphql,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            number,
            base: sha("base")?,
            head: sha("head")?,
            fork: matches!((base_repo, head_repo), (Some(b), Some(h)) if b != h)
                || (base_repo.is_some() && pr["head"]["repo"].is_null()),
            labels: pr["labels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| l["name"].as_str().map(str::to_owned))
                .collect(),
            head_ref: pr["head"]["ref"].as_str().map(str::to_owned),
            merged: pr["merged"].as_bool().unwrap_or(false),
            default_branch: pr["base"]["repo"]["default_branch"]
                .as_str()
                .or_else(|| event["repository"]["default_branch"].as_str())
                .map(str::to_owned),
        })
    }

    /// The REST path of `rest` in the pull request's repository.
    pub fn path(&self, rest: &str) -> String {
        format!("/repos/{}/{}{rest}", self.owner, self.repo)
    }
}

/// A pull request's CI job, ready to post, or saying why it cannot.
#[derive(Debug)]
pub struct Job {
    /// The pull request.
    pub pr: PullRequest,
    /// The client to post with; `None` when it cannot post ([`Job::why_not`]).
    pub client: Option<Client>,
    /// Why the review cannot be posted (a fork, no token): it is printed instead.
    pub why_not: Option<String>,
    /// How to post: `[github]` of the base revision's configuration.
    pub options: Options,
    /// The configuration of the review, as the base revision holds it.
    pub config: crate::config::Config,
}

/// The job of this process's environment for the repository at `root` (see
/// [`PullRequest::from_env`]); the token is `GITHUB_TOKEN`.
pub fn job(root: &Path) -> Result<Job, Error> {
    let env = |name: &str| sift_env::get(name);
    let pr = PullRequest::from_env(&env)?;
    let config =
        crate::review::model::configuration(root, Some(&pr.base), &crate::config::process_env)?;
    let settings = config.github().map_err(|e| Error::Event(e.to_string()))?;
    let token = env("GITHUB_TOKEN").filter(|t| !t.trim().is_empty());
    let why_not = if pr.fork {
        Some("the pull request comes from a fork, and GitHub gives a fork's jobs no token that may write to the repository".to_owned())
    } else if token.is_none() {
        Some("GITHUB_TOKEN is not set (the workflow passes it with `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)".to_owned())
    } else {
        None
    };
    let client = match (&why_not, token) {
        (None, Some(token)) => Some(Client::new(&pr.api, Token::new(token), Retry::default())),
        _ => None,
    };
    Ok(Job { pr, client, why_not, options: Options { settings }, config })
}

/// The repository of a CI job that is not a pull request's (a scheduled run, a job started by
/// hand): `GITHUB_REPOSITORY`, `GITHUB_API_URL`, `GITHUB_TOKEN`, and the default branch from
/// the event (`GITHUB_EVENT_PATH`'s `repository.default_branch`) or `GITHUB_REF_NAME`.
#[derive(Debug)]
pub struct RepositoryJob {
    /// The owner.
    pub owner: String,
    /// The name.
    pub repo: String,
    /// The default branch, when known.
    pub default_branch: Option<String>,
    /// The client; `None` without a token.
    pub client: Option<Client>,
}

/// This process's [`RepositoryJob`]; `None` outside a CI job (no `GITHUB_REPOSITORY`).
pub fn repository_job() -> Result<Option<RepositoryJob>, Error> {
    let set = |name: &str| sift_env::get(name).filter(|v| !v.trim().is_empty());
    let Some(repository) = set("GITHUB_REPOSITORY") else { return Ok(None) };
    let (owner, repo) = repository
        .split_once('/')
        .filter(|(o, r)| !o.is_empty() && !r.is_empty() && !r.contains('/'))
        .ok_or_else(|| {
            Error::Event(format!("GITHUB_REPOSITORY {repository:?} is not owner/name"))
        })?;
    let event: Value = set("GITHUB_EVENT_PATH")
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let default_branch = event["repository"]["default_branch"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| set("GITHUB_REF_NAME"));
    let api = set("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
    let client = set("GITHUB_TOKEN")
        .map(|t| Client::new(api.trim_end_matches('/'), Token::new(t), Retry::default()));
    Ok(Some(RepositoryJob {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
        default_branch,
        client,
    }))
}

/// How [`post`] posts.
#[derive(Debug, Clone)]
pub struct Options {
    /// `[github]` of the base revision.
    pub settings: crate::config::GithubSettings,
}

/// What [`post`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Posted {
    /// The review posted (its id), when there was something new to say.
    pub review: Option<u64>,
    /// Inline comments posted.
    pub comments: usize,
    /// Findings listed in the review's body instead.
    pub in_body: usize,
    /// Comments edited (fixed, dismissed, moved, raised again).
    pub edited: usize,
    /// Threads of findings still raised.
    pub still_open: usize,
    /// Threads newly marked fixed.
    pub fixed: usize,
    /// Findings dismissed by a writer's reply in this run.
    pub dismissed: Vec<(String, String)>,
    /// What the user should know (a verdict from someone without write access, comments
    /// GitHub would not take inline).
    pub notes: Vec<String>,
}

/// A merged pull request: each of the bot's findings still open on it (not fixed, not
/// dismissed) went in with the flagged code untouched, and is recorded as `ignored` (once: the
/// merge's run is the last). Nothing is posted. Returns how many.
pub fn merged(
    pr: &PullRequest,
    client: &Client,
    recorder: &Recorder,
    options: &Options,
) -> Result<usize, Error> {
    let login = login(client, &options.settings)?;
    let comments =
        client.get_all(&pr.path(&format!("/pulls/{}/comments", pr.number)), "list the comments")?;
    let (bot, _) = threads::read_comments(&comments, &login);
    let open: Vec<&threads::BotComment> =
        bot.iter().filter(|c| c.state == threads::State::Open).collect();
    for c in &open {
        recorder.record(
            Event::new(Kind::Finding, &c.fingerprint, Fate::Ignored).rule(&c.rule).path(&c.path),
        );
    }
    Ok(open.len())
}

/// The login of GitHub Actions' own token.
pub const ACTIONS_LOGIN: &str = "github-actions[bot]";

/// Puts `reviewed` (a review of the pull request against its base) on the pull request: the
/// plan of [`threads::plan`], carried out (see the module doc).
pub fn post(
    root: &Path,
    pr: &PullRequest,
    client: &Client,
    reviewed: &Reviewed,
    recorder: &Recorder,
    options: &Options,
) -> Result<Posted, Error> {
    let head = crate::review::git::head(root)?;
    if !head.starts_with(&pr.head) && !pr.head.starts_with(&head) {
        return Err(Error::NotTheHead { head, expected: pr.head.clone() });
    }
    let short: String = pr.head.chars().take(7).collect();
    let login = login(client, &options.settings)?;
    let comments =
        client.get_all(&pr.path(&format!("/pulls/{}/comments", pr.number)), "list the comments")?;
    let reviews =
        client.get_all(&pr.path(&format!("/pulls/{}/reviews", pr.number)), "list the reviews")?;
    let listed: BTreeSet<String> = reviews
        .iter()
        .filter(|r| r["user"]["login"].as_str() == Some(login.as_str()))
        .filter_map(|r| r["body"].as_str())
        .flat_map(threads::body_fingerprints)
        .collect();
    let (bot, replies) = threads::read_comments(&comments, &login);
    let mut posted = Posted::default();
    let verdicts = judge(client, pr, &bot, &replies, &mut posted.notes)?;
    let dismissed_in_repo: BTreeSet<String> = reviewed
        .suppressed
        .iter()
        .filter(|s| matches!(s.why, Why::Dismissed { .. }))
        .map(|s| s.finding.fingerprint.clone())
        .collect();
    let hunks = commentable(root, pr)?;
    let commentable = |path: &str, start: usize, end: usize| {
        hunks.get(path).is_some_and(|h| h.iter().any(|(a, b)| *a <= start && end <= *b))
    };
    let items = threads::distinct(&reviewed.items);
    let plan = threads::plan(&threads::Inputs {
        items: &items,
        comments: &bot,
        verdicts: &verdicts,
        dismissed_in_repo: &dismissed_in_repo,
        listed: &listed,
        commentable: &commentable,
        head: &short,
        max_comments: options.settings.max_comments,
    });

    for (fingerprint, rule, path, who, verdict) in &plan.dismiss {
        let reason = Some(match &verdict.reason {
            Some(reason) => format!("{reason} (@{who} on pull request #{})", pr.number),
            None => format!("@{who} on pull request #{}", pr.number),
        });
        // A dismissal is of the finding's text in its file, every occurrence of it, as in
        // the editor.
        crate::review::dismiss::dismiss(
            root,
            recorder,
            threads::base_fingerprint(fingerprint),
            rule,
            path,
            reason,
            verdict.noise,
        )?;
        posted.dismissed.push((fingerprint.clone(), who.clone()));
    }
    for (id, body) in &plan.edit {
        client.patch(
            &pr.path(&format!("/pulls/comments/{id}")),
            &json!({ "body": body }),
            "edit a comment of sift's",
        )?;
    }
    for c in &bot {
        if plan.edit.iter().any(|(id, body)| *id == c.id && body.starts_with("✅ Fixed")) {
            recorder.record(
                Event::new(Kind::Finding, &c.fingerprint, Fate::Fixed).rule(&c.rule).path(&c.path),
            );
        }
    }
    resolve_threads(client, pr, &bot, &plan.edit, &mut posted.notes);
    posted.edited = plan.edit.len();
    posted.still_open = plan.still_open + plan.reopened;
    posted.fixed = plan.fixed;

    let new = plan.post.len() + plan.in_body.len();
    if new > 0 {
        let body = threads::review_body(&plan, &short, new);
        let review = json!({
            "commit_id": pr.head,
            "body": body,
            "event": "COMMENT",
            "comments": plan.post.iter().map(threads::comment).collect::<Vec<_>>(),
        });
        let path = pr.path(&format!("/pulls/{}/reviews", pr.number));
        let answer = match client.post(&path, &review, "post the review") {
            Err(ApiError::Unprocessable { message, .. }) if !plan.post.is_empty() => {
                // A line GitHub does not count as part of the diff: everything in the body.
                posted.notes.push(format!(
                    "GitHub would not take the inline comments ({message}); they are in the review's body"
                ));
                let mut all = plan.clone();
                all.in_body = plan.post.iter().chain(&plan.in_body).cloned().collect();
                all.post.clear();
                let body = threads::review_body(&all, &short, new);
                client.post(
                    &path,
                    &json!({"commit_id": pr.head, "body": body, "event": "COMMENT"}),
                    "post the review",
                )?;
                posted.in_body = all.in_body.len();
                None
            }
            other => {
                let answer = other?;
                posted.comments = plan.post.len();
                posted.in_body = plan.in_body.len();
                Some(answer)
            }
        };
        posted.review = answer.as_ref().and_then(|a| a["id"].as_u64());
        let shown: BTreeSet<&str> =
            plan.post.iter().chain(&plan.in_body).map(|i| i.finding.fingerprint.as_str()).collect();
        crate::review::record_shown(
            recorder,
            reviewed
                .items
                .iter()
                .map(|i| &i.finding)
                .filter(|f| shown.iter().any(|s| threads::base_fingerprint(s) == f.fingerprint)),
        );
    }
    Ok(posted)
}

/// The login the bot posts as: `[github] login`, else the token's user, else (Actions' token
/// may not read `/user`) `github-actions[bot]`.
pub fn login(client: &Client, settings: &crate::config::GithubSettings) -> Result<String, Error> {
    if let Some(login) = &settings.login {
        return Ok(login.clone());
    }
    match client.get("/user", "say who the token is") {
        Ok(user) => Ok(user["login"].as_str().unwrap_or(ACTIONS_LOGIN).to_owned()),
        Err(ApiError::Refused { status: 403, .. } | ApiError::NotFound { .. }) => {
            Ok(ACTIONS_LOGIN.to_owned())
        }
        Err(e) => Err(e.into()),
    }
}

/// The lines of each file GitHub takes comments on: the right side of the hunks of the pull
/// request's diff (its head against the merge-base with its base).
pub fn commentable(
    root: &Path,
    pr: &PullRequest,
) -> Result<BTreeMap<String, Vec<(usize, usize)>>, Error> {
    let head = crate::review::git::head(root)?;
    let merge_base = crate::review::git::merge_base(root, &pr.base, &head)?;
    diff_hunks(root, &merge_base, &head)
}

/// Resolves on GitHub the threads whose comment this push marked fixed or dismissed, and
/// unresolves those raised again (GraphQL: the REST API cannot). A failure is a note: the
/// comments say it already.
fn resolve_threads(
    client: &Client,
    pr: &PullRequest,
    bot: &[threads::BotComment],
    edits: &[(u64, String)],
    notes: &mut Vec<String>,
) {
    let mut wanted: BTreeMap<u64, bool> = BTreeMap::new();
    for (id, body) in edits {
        let Some(before) = bot.iter().find(|c| c.id == *id) else { continue };
        match threads::state_of(body) {
            Some(threads::State::Fixed | threads::State::Dismissed) => {
                wanted.insert(*id, true);
            }
            Some(threads::State::Open) if before.state != threads::State::Open => {
                wanted.insert(*id, false);
            }
            _ => {}
        }
    }
    if wanted.is_empty() {
        return;
    }
    let done = || -> Result<(), ApiError> {
        let mut after: Option<String> = None;
        let mut ids: BTreeMap<u64, (String, bool)> = BTreeMap::new();
        loop {
            let data = client.graphql(
                &pr.graphql,
                THREADS_QUERY,
                json!({"owner": pr.owner, "repo": pr.repo, "number": pr.number, "after": after}),
                "list the review threads",
            )?;
            let page = &data["repository"]["pullRequest"]["reviewThreads"];
            for thread in page["nodes"].as_array().into_iter().flatten() {
                let first = thread["comments"]["nodes"][0]["databaseId"].as_u64();
                if let (Some(first), Some(id)) = (first, thread["id"].as_str()) {
                    ids.insert(first, (id.to_owned(), thread["isResolved"] == true));
                }
            }
            match page["pageInfo"]["endCursor"].as_str() {
                Some(cursor) if page["pageInfo"]["hasNextPage"] == true => {
                    after = Some(cursor.to_owned());
                }
                _ => break,
            }
        }
        for (comment, resolve) in &wanted {
            let Some((thread, resolved)) = ids.get(comment) else { continue };
            if resolved == resolve {
                continue;
            }
            let mutation = if *resolve { RESOLVE } else { UNRESOLVE };
            client.graphql(&pr.graphql, mutation, json!({"id": thread}), "resolve a thread")?;
        }
        Ok(())
    };
    if let Err(e) = done() {
        notes.push(format!("the threads were not resolved on GitHub ({e}); their comments say so"));
    }
}

const THREADS_QUERY: &str = "query($owner: String!, $repo: String!, $number: Int!, $after: String) { repository(owner: $owner, name: $repo) { pullRequest(number: $number) { reviewThreads(first: 100, after: $after) { pageInfo { hasNextPage endCursor } nodes { id isResolved comments(first: 1) { nodes { databaseId } } } } } } }";
const RESOLVE: &str = "mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }";
const UNRESOLVE: &str = "mutation($id: ID!) { unresolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }";

/// The verdict of each of the bot's threads that has one from someone with write access: the
/// first such reply, else a 👎 of theirs. Verdicts from others are noted and ignored.
fn judge(
    client: &Client,
    pr: &PullRequest,
    bot: &[threads::BotComment],
    replies: &[threads::Reply],
    notes: &mut Vec<String>,
) -> Result<BTreeMap<u64, Judged>, Error> {
    let mut access: BTreeMap<String, bool> = BTreeMap::new();
    let mut writes = |login: &str, notes: &mut Vec<String>| -> Result<bool, Error> {
        if let Some(known) = access.get(login) {
            return Ok(*known);
        }
        let path = pr.path(&format!("/collaborators/{login}/permission"));
        let can = match client.get(&path, "check a replier's access") {
            Ok(answer) => {
                matches!(answer["permission"].as_str(), Some("admin" | "write"))
                    || matches!(answer["role_name"].as_str(), Some("admin" | "maintain" | "write"))
            }
            Err(ApiError::NotFound { .. } | ApiError::Refused { status: 403, .. }) => false,
            Err(e) => return Err(e.into()),
        };
        if !can {
            notes.push(format!("@{login} has no write access: their verdict is ignored"));
        }
        access.insert(login.to_owned(), can);
        Ok(can)
    };
    let mut verdicts = BTreeMap::new();
    for comment in bot.iter().filter(|c| c.state != threads::State::Dismissed) {
        for reply in replies.iter().filter(|r| r.to == comment.id) {
            let Some(verdict) = &reply.verdict else { continue };
            if writes(&reply.login, notes)? {
                verdicts.insert(
                    comment.id,
                    Judged { login: reply.login.clone(), verdict: verdict.clone() },
                );
                break;
            }
        }
        if verdicts.contains_key(&comment.id) || comment.thumbs_down == 0 {
            continue;
        }
        let path = pr.path(&format!("/pulls/comments/{}/reactions?content=-1", comment.id));
        for reaction in client.get_all(&path, "list a comment's reactions")? {
            let Some(login) = reaction["user"]["login"].as_str() else { continue };
            if writes(login, notes)? {
                let verdict = Verdict { noise: true, reason: Some("👎".into()) };
                verdicts.insert(comment.id, Judged { login: login.to_owned(), verdict });
                break;
            }
        }
    }
    Ok(verdicts)
}

/// The right-side line ranges of each file's hunks in `git diff base head` (GitHub takes
/// comments on the lines of its hunks, context lines included).
fn diff_hunks(
    root: &Path,
    base: &str,
    head: &str,
) -> Result<BTreeMap<String, Vec<(usize, usize)>>, Error> {
    let out = crate::review::git::git(
        root,
        &["diff", "--no-color", "--no-ext-diff", "-U3", "--find-renames", base, head],
    )?;
    Ok(hunks_of(&String::from_utf8_lossy(&out)))
}

/// [`diff_hunks`] of a diff's text.
pub(crate) fn hunks_of(diff: &str) -> BTreeMap<String, Vec<(usize, usize)>> {
    let mut hunks: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    let mut file: Option<String> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            file = path.strip_prefix("b/").map(str::to_owned);
        } else if let (Some(rest), Some(path)) = (line.strip_prefix("@@ -"), &file) {
            let Some(new) = rest.split_whitespace().nth(1).and_then(|s| s.strip_prefix('+')) else {
                continue;
            };
            let (start, len) = match new.split_once(',') {
                Some((s, l)) => (s.parse().unwrap_or(0), l.parse().unwrap_or(0)),
                None => (new.parse().unwrap_or(0), 1),
            };
            if len > 0 {
                hunks.entry(path.clone()).or_default().push((start, start + len - 1));
            }
        }
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pull_request_comes_from_the_event() {
        let event = json!({
            "number": 7,
            "pull_request": {
                "number": 7,
                "base": {"sha": "a".repeat(40), "repo": {"full_name": "o/r"}},
                "head": {"sha": "b".repeat(40), "repo": {"full_name": "o/r"}},
            }
        });
        let pr = PullRequest::from_event(&event, Some("o/r"), "http://127.0.0.1:1/").unwrap();
        assert_eq!((pr.owner.as_str(), pr.repo.as_str(), pr.number), ("o", "r", 7));
        assert_eq!(pr.api, "http://127.0.0.1:1");
        assert_eq!(pr.graphql, "http://127.0.0.1:1/graphql");
        let ghes =
            PullRequest::from_event(&event, Some("o/r"), "https://git.example/api/v3").unwrap();
        assert_eq!(ghes.graphql, "https://git.example/api/graphql");
        assert!(!pr.fork);
        let mut fork = event.clone();
        fork["pull_request"]["head"]["repo"]["full_name"] = "someone/r".into();
        assert!(PullRequest::from_event(&fork, Some("o/r"), "x").unwrap().fork);
        let push = json!({"ref": "refs/heads/main"});
        let err = PullRequest::from_event(&push, Some("o/r"), "x").unwrap_err();
        assert!(err.contains("not a pull request's event"), "{err}");
        assert!(
            PullRequest::from_event(&event, Some("nobody"), "x")
                .unwrap_err()
                .contains("owner/name")
        );
    }

    #[test]
    fn hunks_are_the_right_sides_lines() {
        let diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -40 +41,0 @@\n-gone\n@@ -50,2 +50,2 @@ def f():\n-x\n+y\n z\ndiff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+new\n";
        let hunks = hunks_of(diff);
        assert_eq!(hunks["x.py"], [(1, 4), (50, 51)]);
        assert_eq!(hunks["new.py"], [(1, 1)]);
    }
}
