//! A stateful stand-in for the parts of GitHub's REST API the pull-request bot uses: one
//! repository's pull request, its review comments, reviews, reactions and collaborators, kept
//! in memory so a test can run the bot push after push and look at what is on the pull request.
//! Its answers carry the fields GitHub's OpenAPI description requires of them, so a validating
//! proxy in front of it (tests/tests/github.rs puts Prism there) passes them. Faults can be
//! queued: the next requests get them instead of an answer.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::guard::{Need, missing};

use serde_json::{Value, json};

pub use crate::openai::Recorded;

/// The login comments posted with Actions' token have.
pub const BOT: &str = "github-actions[bot]";

/// A queued fault: status, headers, body.
pub type Fault = (u16, Vec<(String, String)>, String);

/// What is on the pull request, and what the stand-in was asked.
#[derive(Debug, Default)]
pub struct State {
    /// Review comments, in the order they were made.
    pub comments: Vec<Value>,
    /// Reviews.
    pub reviews: Vec<Value>,
    /// Reactions by comment id: (login, content).
    pub reactions: BTreeMap<u64, Vec<(String, String)>>,
    /// Each user's permission (`admin`, `write`, `read`); others get `none`.
    pub permissions: BTreeMap<String, String>,
    /// Answered to the next requests, first to last, instead of the real answer.
    pub faults: VecDeque<Fault>,
    /// Every request, in order.
    pub requests: Vec<Recorded>,
    /// A review's comments on lines after this one are refused with 422 (a line outside the
    /// diff, as GitHub refuses them).
    pub refuse_lines_after: Option<u64>,
    /// The review threads resolved (GraphQL's `resolveReviewThread`), by their first comment.
    pub resolved: std::collections::BTreeSet<u64>,
    /// Pull requests opened through the API (an automation's branch delivery).
    pub pulls: Vec<Value>,
    /// What a new pull request looks like before its own fields are set: GitHub's own example
    /// ([`Prism::example`]) when there is one, so that its answers pass the description.
    pub pull_example: Option<Value>,
    next_id: u64,
}

/// The stand-in's server.
pub struct StandIn {
    port: u16,
    token: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl StandIn {
    /// Serves pull request `number` of `owner/repo` on a free port of 127.0.0.1; requests
    /// without `Authorization: Bearer {token}` get 401.
    pub fn start(token: &str) -> std::io::Result<StandIn> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State { next_id: 1000, ..State::default() }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, halt, token_) = (state.clone(), stop.clone(), token.to_owned());
        std::thread::Builder::new().name("github-stand-in".into()).spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (st, token) = (st.clone(), token_.clone());
                        std::thread::spawn(move || serve(stream, &st, &token, port));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        })?;
        Ok(StandIn { port, token: token.to_owned(), state, stop })
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, for `GITHUB_API_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The token it accepts.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Runs `f` on the state.
    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// `login` replies `body` to comment `to`.
    pub fn reply(&self, to: u64, login: &str, body: &str) -> u64 {
        self.with(|s| {
            s.next_id += 1;
            let id = s.next_id;
            let parent = s.comments.iter().find(|c| c["id"] == to).cloned().unwrap_or_default();
            let mut c =
                comment(id, login, body, &parent["path"], parent["line"].as_u64(), self.port);
            c["in_reply_to_id"] = to.into();
            s.comments.push(c);
            id
        })
    }

    /// Closes pull request `number`, merged or not.
    pub fn close_pull(&self, number: u64, merged: bool) {
        self.with(|s| {
            if let Some(p) = s.pulls.iter_mut().find(|p| p["number"] == number) {
                p["state"] = "closed".into();
                p["closed_at"] = "2026-12-07T01:00:00Z".into();
                p["merged"] = merged.into();
                p["merged_at"] = if merged { "2026-12-07T01:00:00Z".into() } else { Value::Null };
            }
        });
    }

    /// `login` reacts to comment `id` with `content` (`-1` for 👎).
    pub fn react(&self, id: u64, login: &str, content: &str) {
        self.with(|s| {
            s.reactions.entry(id).or_default().push((login.into(), content.into()));
        });
    }

    /// The bot's top-level comments (not replies).
    pub fn bot_comments(&self) -> Vec<Value> {
        self.with(|s| {
            s.comments
                .iter()
                .filter(|c| c["user"]["login"] == BOT && c["in_reply_to_id"].is_null())
                .cloned()
                .collect()
        })
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn user(login: &str, port: u16) -> Value {
    let bot = login.ends_with("[bot]");
    let base =
        format!("http://127.0.0.1:{port}/users/{}", login.replace('[', "%5B").replace(']', "%5D"));
    let url = |rest: &str| format!("{base}{rest}");
    json!({
        "login": login, "id": 1, "node_id": "U_1", "avatar_url": url("/avatar.png"),
        "gravatar_id": "", "url": url(""), "html_url": url("/html"),
        "followers_url": url("/followers"), "following_url": url("/following{/other_user}"),
        "gists_url": url("/gists{/gist_id}"), "starred_url": url("/starred{/owner}{/repo}"),
        "subscriptions_url": url("/subscriptions"), "organizations_url": url("/orgs"),
        "repos_url": url("/repos"), "events_url": url("/events{/privacy}"),
        "received_events_url": url("/received_events"), "type": if bot { "Bot" } else { "User" },
        "site_admin": false,
    })
}

fn comment(id: u64, login: &str, body: &str, path: &Value, line: Option<u64>, port: u16) -> Value {
    let url = format!("http://127.0.0.1:{port}/repos/o/r/pulls/comments/{id}");
    json!({
        "url": url, "pull_request_review_id": 1, "id": id, "node_id": format!("C_{id}"),
        "diff_hunk": "@@ -1 +1 @@", "path": path.as_str().unwrap_or(""),
        "commit_id": "0".repeat(40), "original_commit_id": "0".repeat(40),
        "user": user(login, port), "body": body,
        "created_at": "2026-12-07T00:00:00Z", "updated_at": "2026-12-07T00:00:00Z",
        "html_url": url, "pull_request_url": url, "author_association": "MEMBER",
        "_links": {"self": {"href": url}, "html": {"href": url}, "pull_request": {"href": url}},
        "line": line, "original_line": line, "side": "RIGHT",
        "reactions": {"url": url, "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "confused": 0,
                      "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0},
    })
}

/// A query value, percent-decoded.
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn respond(out: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status} Stand-in\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    let _ = out.write_all(format!("{head}\r\n{body}").as_bytes());
    let _ = out.flush();
}

fn serve(stream: TcpStream, state: &Mutex<State>, token: &str, port: u16) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(read) = stream.try_clone() else { return };
    let Some(request) = crate::openai::read_request(&mut BufReader::new(read)) else { return };
    let mut out = stream;
    let (status, headers, body) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.requests.push(request.clone());
        match s.faults.pop_front() {
            Some(fault) => fault,
            None if request.header("authorization") != Some(format!("Bearer {token}").as_str()) => {
                (401, vec![], json!({"message": "Bad credentials"}).to_string())
            }
            // What GitHub's description does not say but GitHub checks (Prism does not).
            None if request.header("x-github-api-version") != Some("2022-11-28")
                || request.header("accept") != Some("application/vnd.github+json") =>
            {
                (400, vec![], json!({"message": "the stand-in wants Accept: application/vnd.github+json and X-GitHub-Api-Version: 2022-11-28"}).to_string())
            }
            None => {
                let (status, body) = answer(&mut s, &request, port);
                (status, vec![], body.to_string())
            }
        }
    };
    respond(&mut out, status, &headers, &body);
    let _ = out.shutdown(std::net::Shutdown::Both);
}

fn answer(s: &mut State, r: &Recorded, port: u16) -> (u16, Value) {
    let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
    let page = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("page="))
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1);
    let per_page = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("per_page="))
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(30);
    let paged = |items: Vec<Value>| -> Value {
        items.into_iter().skip((page - 1) * per_page).take(per_page).collect()
    };
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let not_found = (404, json!({"message": "Not Found"}));
    match (r.method.as_str(), parts.as_slice()) {
        // Actions' token may not read /user.
        ("GET", ["user"]) => (403, json!({"message": "Resource not accessible by integration"})),
        ("GET", ["repos", _, _, "pulls", _, "comments"]) => {
            let mut comments = s.comments.clone();
            for c in &mut comments {
                let id = c["id"].as_u64().unwrap_or(0);
                let down =
                    s.reactions.get(&id).map_or(0, |r| r.iter().filter(|(_, k)| k == "-1").count());
                c["reactions"]["-1"] = down.into();
                c["reactions"]["total_count"] = s.reactions.get(&id).map_or(0, Vec::len).into();
            }
            (200, paged(comments))
        }
        ("GET", ["repos", _, _, "pulls", _, "reviews"]) => (200, paged(s.reviews.clone())),
        ("POST", ["repos", _, _, "pulls", _, "reviews"]) => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            let comments = body["comments"].as_array().cloned().unwrap_or_default();
            let sides = ["LEFT", "RIGHT"].map(Value::from);
            if comments.iter().any(|c| {
                !sides.contains(&c["side"])
                    || (c.get("start_side").is_some() && !sides.contains(&c["start_side"]))
            }) {
                return (
                    422,
                    json!({"message": "Validation Failed", "errors": ["side must be LEFT or RIGHT"]}),
                );
            }
            let refused = |max: u64| comments.iter().any(|c| c["line"].as_u64().unwrap_or(0) > max);
            if s.refuse_lines_after.is_some_and(refused) {
                return (
                    422,
                    json!({"message": "Unprocessable Entity", "errors": ["Line could not be resolved"], "documentation_url": "https://docs.github.com/rest"}),
                );
            }
            s.next_id += 1;
            let review_id = s.next_id;
            for c in &comments {
                s.next_id += 1;
                let id = s.next_id;
                let mut made = comment(
                    id,
                    BOT,
                    c["body"].as_str().unwrap_or(""),
                    &c["path"],
                    c["line"].as_u64(),
                    port,
                );
                made["pull_request_review_id"] = review_id.into();
                made["commit_id"] = body["commit_id"].clone();
                if let Some(start) = c["start_line"].as_u64() {
                    made["start_line"] = start.into();
                }
                s.comments.push(made);
            }
            let url = format!("http://127.0.0.1:{port}/repos/o/r/pulls/1/reviews/{review_id}");
            let review = json!({
                "id": review_id, "node_id": format!("R_{review_id}"), "user": user(BOT, port),
                "body": body["body"].as_str().unwrap_or(""), "state": "COMMENTED",
                "html_url": url, "pull_request_url": url,
                "_links": {"html": {"href": url}, "pull_request": {"href": url}},
                "submitted_at": "2026-12-07T00:00:00Z", "commit_id": body["commit_id"].clone(),
                "author_association": "NONE",
            });
            s.reviews.push(review.clone());
            (200, review)
        }
        ("PATCH", ["repos", _, _, "pulls", "comments", id]) => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            let id = id.parse::<u64>().unwrap_or(0);
            match s.comments.iter_mut().find(|c| c["id"] == id) {
                Some(c) => {
                    c["body"] = body["body"].clone();
                    (200, c.clone())
                }
                None => not_found,
            }
        }
        ("GET", ["repos", _, _, "pulls", "comments", id, "reactions"]) => {
            let id = id.parse::<u64>().unwrap_or(0);
            let wanted = query.split('&').find_map(|kv| kv.strip_prefix("content="));
            let list: Vec<Value> = s
                .reactions
                .get(&id)
                .into_iter()
                .flatten()
                .filter(|(_, k)| wanted.is_none_or(|w| w == k))
                .enumerate()
                .map(|(n, (login, content))| {
                    json!({"id": n + 1, "node_id": format!("RE_{n}"), "user": user(login, port),
                           "content": content, "created_at": "2026-12-07T00:00:00Z"})
                })
                .collect();
            (200, paged(list))
        }
        // GraphQL (not in the REST description, so not through Prism): the review threads,
        // and resolving them.
        ("POST", ["graphql"]) => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            let query = body["query"].as_str().unwrap_or("");
            if query.contains("unresolveReviewThread") || query.contains("resolveReviewThread") {
                let id = body["variables"]["id"].as_str().unwrap_or("");
                let Some(first) = id.strip_prefix("T_").and_then(|n| n.parse::<u64>().ok()) else {
                    return (200, json!({"errors": [{"message": format!("no thread {id}")}]}));
                };
                let resolve = !query.contains("unresolveReviewThread");
                if resolve {
                    s.resolved.insert(first);
                } else {
                    s.resolved.remove(&first);
                }
                let field = if resolve { "resolveReviewThread" } else { "unresolveReviewThread" };
                return (
                    200,
                    json!({"data": {field: {"thread": {"id": id, "isResolved": resolve}}}}),
                );
            }
            let nodes: Vec<Value> = s
                .comments
                .iter()
                .filter(|c| c["in_reply_to_id"].is_null())
                .filter_map(|c| c["id"].as_u64())
                .map(|id| {
                    json!({"id": format!("T_{id}"), "isResolved": s.resolved.contains(&id),
                                 "comments": {"nodes": [{"databaseId": id}]}})
                })
                .collect();
            (
                200,
                json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
                "pageInfo": {"hasNextPage": false, "endCursor": null}, "nodes": nodes}}}}}),
            )
        }
        ("GET", ["repos", _, _, "pulls"]) => {
            let field = |name: &str| {
                query.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}=")[..]))
            };
            let state = field("state").unwrap_or("open");
            let head = field("head").map(decode);
            let list: Vec<Value> = s
                .pulls
                .iter()
                .filter(|p| state == "all" || p["state"] == state)
                .filter(|p| {
                    head.as_ref().is_none_or(|h| h.split(':').nth(1) == p["head"]["ref"].as_str())
                })
                .cloned()
                .collect();
            (200, paged(list))
        }
        ("POST", ["repos", _, _, "pulls"]) => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            s.next_id += 1;
            let number = s.pulls.len() as u64 + 100;
            let url = format!("http://127.0.0.1:{port}/o/r/pull/{number}");
            let mut p = s.pull_example.clone().unwrap_or_else(|| json!({"head": {}, "base": {}}));
            p["id"] = s.next_id.into();
            p["number"] = number.into();
            p["state"] = "open".into();
            p["title"] = body["title"].clone();
            p["body"] = body["body"].clone();
            p["html_url"] = url.into();
            p["merged"] = false.into();
            p["merged_at"] = Value::Null;
            p["closed_at"] = Value::Null;
            p["head"]["ref"] = body["head"].clone();
            p["base"]["ref"] = body["base"].clone();
            p["user"] = user(BOT, port);
            // (GitHub's own example lists a team without the `type` its description requires.)
            p["requested_teams"] = json!([]);
            p["requested_reviewers"] = json!([]);
            s.pulls.push(p.clone());
            (201, p)
        }
        ("PATCH", ["repos", _, _, "pulls", number]) => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            let number = number.parse::<u64>().unwrap_or(0);
            match s.pulls.iter_mut().find(|p| p["number"] == number) {
                Some(p) => {
                    if let Some(text) = body.get("body") {
                        p["body"] = text.clone();
                    }
                    (200, p.clone())
                }
                None => not_found,
            }
        }
        ("GET", ["repos", _, _, "collaborators", login, "permission"]) => {
            let permission = s.permissions.get(*login).cloned().unwrap_or_else(|| "none".into());
            let role = if permission == "none" { "none".to_string() } else { permission.clone() };
            let mut collaborator = user(login, port);
            collaborator["role_name"] = role.clone().into();
            (200, json!({"permission": permission, "role_name": role, "user": collaborator}))
        }
        _ => not_found,
    }
}

/// Prism in front of `upstream`, validating requests against GitHub's description; `None`
/// (the skip logged, or the test failed when Prism is required) when it is not installed.
pub struct Prism {
    child: Child,
    port: u16,
    log: tempfile::NamedTempFile,
}

impl Prism {
    /// Starts it (the launcher `SIFT_PRISM` names: `run UPSTREAM PORT`) and waits until it
    /// listens.
    pub fn start(upstream: &str) -> Option<Prism> {
        let Some(launcher) = std::env::var_os("SIFT_PRISM").filter(|v| !v.is_empty()) else {
            missing(
                Need::Prism,
                "Prism and GitHub's OpenAPI description are not installed",
                "scripts/test.sh installs them from npm into target/prism and sets SIFT_PRISM",
            );
            return None;
        };
        let port = free_port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(launcher)
            .args([upstream, &port.to_string()])
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("the Prism launcher runs");
        let prism = Prism { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "Prism did not start within 120 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(prism)
    }

    /// Its address.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// GitHub's own example `name` from the description Prism validates with (beside its
    /// launcher: `github.json`), e.g. `pull-request`.
    pub fn example(name: &str) -> Option<Value> {
        let launcher = std::env::var_os("SIFT_PRISM")?;
        let spec = std::path::Path::new(&launcher).parent()?.join("github.json");
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(spec).ok()?).ok()?;
        spec["components"]["examples"][name]["value"].as_object().map(|o| Value::Object(o.clone()))
    }

    /// Every request Prism received validated against GitHub's description and went on to
    /// the stand-in: none refused as invalid (422 `UNPROCESSABLE_ENTITY`), on a path or with a
    /// method GitHub does not have, or answered with a response GitHub's description does not
    /// allow; as many requests received as the stand-in saw.
    pub fn assert_all_valid(&self, standin: &StandIn) {
        let log = std::fs::read_to_string(self.log.path()).unwrap();
        let received = log.lines().filter(|l| l.contains("Request received")).count();
        for refusal in
            ["UNPROCESSABLE_ENTITY", "VIOLATIONS", "NO_PATH_MATCHED", "NO_METHOD_MATCHED"]
        {
            let bad: Vec<&str> = log.lines().filter(|l| l.contains(refusal)).collect();
            assert!(bad.is_empty(), "Prism refused requests: {bad:#?}");
        }
        assert!(received > 0, "Prism saw no request: {log}");
        let rest = standin.with(|s| s.requests.iter().filter(|r| r.path != "/graphql").count());
        assert_eq!(received, rest, "every REST request went through Prism to the stand-in");
    }
}

/// Runs [`Prism::assert_all_valid`] when Prism is in front.
pub fn validated(prism: &Option<Prism>, standin: &StandIn) {
    if let Some(prism) = prism {
        prism.assert_all_valid(standin);
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
            let errors: Vec<&str> =
                log.lines().filter(|l| l.contains('✖') || l.contains("Violation")).collect();
            eprintln!("Prism's errors and violations:\n{}", errors.join("\n"));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Where a test's bot sends its requests: REST through Prism in front of the stand-in when
/// Prism is installed (else to the stand-in itself), GraphQL (not in the REST description)
/// straight to the stand-in.
pub struct Api {
    /// `GITHUB_API_URL`.
    pub rest: String,
    /// `GITHUB_GRAPHQL_URL`.
    pub graphql: String,
}

impl Api {
    /// The stand-in itself, for both.
    pub fn direct(standin: &StandIn) -> Api {
        Api { rest: standin.url(), graphql: format!("{}/graphql", standin.url()) }
    }
}

/// REST through `prism` when there is one.
pub fn through(prism: &Option<Prism>, standin: &StandIn) -> Api {
    Api { rest: prism.as_ref().map_or_else(|| standin.url(), Prism::url), ..Api::direct(standin) }
}
