//! An OpenAI-compatible endpoint (`POST {base_url}/chat/completions`) as a [`LanguageModel`]:
//! OpenAI itself, llama.cpp's `llama-server`, vLLM, Ollama and the like.
//!
//! Answers are streamed (`stream: true`, server-sent events): each `data:` line is one JSON
//! chunk whose `delta.content` goes to `on_text` through a [`StopMatcher`] (stop sequences are
//! also sent to the server, and enforced here too), and whose `delta.tool_calls[i]` fragments
//! are put together by index. A stream must end with `data: [DONE]` or a `finish_reason`: one
//! cut short is an error that says how much text arrived, never a truncated answer passed off
//! as complete.
//!
//! The blocking request runs on a worker thread that hands body lines over a channel; this
//! thread waits on the channel in short slices, so a [`Cancel`] is noticed within about
//! [`POLL`] even while the server is silent, and a stream that stalls for longer than the read
//! timeout ends in an error rather than a hang. An abandoned worker ends at its next read (the
//! socket's own read timeout bounds it).
//!
//! Rate limits (429), server errors (5xx) and failed connections are retried with exponential
//! backoff and jitter (honouring `Retry-After` seconds, capped), a bounded number of times, and
//! only before any text or tool call was streamed. A stalled server is not retried: it is slow,
//! not flaky, and retrying would multiply the wait.
//!
//! When the endpoint is not on loopback, every message (and every tool call's arguments) goes
//! through [`crate::redact::redact`] first: secret-looking strings are replaced, logged as a
//! warning with their kinds, and kept for the caller ([`LanguageModel::redactions`]).
//!
//! The API key is read from the environment variable named in the configuration, sent as
//! `Authorization: Bearer`, and never logged, written, or put in an error message (error bodies
//! that echo it are redacted).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    Cancel, ChatRequest, ChatResponse, FinishReason, LanguageModel, LlmError, Message,
    ModelDescription, Role, StopMatcher, TokenCount, ToolCall, Usage,
};

/// How often a waiting request looks at its [`Cancel`] token.
pub const POLL: Duration = Duration::from_millis(100);

/// The longest line accepted from a stream (a guard against a server that never ends a line).
const MAX_LINE: u64 = 8 << 20;

/// The most of an error body kept for the message.
const MAX_ERROR_BODY: u64 = 64 << 10;

/// The most stop sequences sent to the server (OpenAI refuses more than four); all of them are
/// enforced locally.
const MAX_SERVER_STOPS: usize = 4;

/// How to reach an OpenAI-compatible endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including the version (`http://127.0.0.1:8080/v1`).
    pub base_url: String,
    /// The model name sent in each request.
    pub model: String,
    /// The environment variable that holds the API key (none: no `Authorization` header).
    pub api_key_env: Option<String>,
    /// The model's context window in tokens.
    pub context_window: usize,
    /// How long to wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// How long the server may stay silent (before the answer starts, or mid-stream).
    pub read_timeout: Duration,
    /// Tries per request (1: no retries).
    pub max_attempts: u32,
    /// The first retry's wait (doubled each time, with jitter).
    pub backoff_initial: Duration,
    /// The longest wait between tries (also caps `Retry-After`).
    pub backoff_max: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: String::new(),
            api_key_env: None,
            context_window: 8192,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
            max_attempts: 4,
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(20),
        }
    }
}

/// An API key: its value never shows in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// A [`LanguageModel`] served by an OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    url: String,
    key: Option<ApiKey>,
    agent: ureq::Agent,
    /// Whether messages are redacted (the endpoint is not on loopback).
    redacts: bool,
    /// What was redacted, request after request.
    redactions: std::sync::Mutex<Vec<crate::redact::Redaction>>,
}

impl OpenAiModel {
    /// A client for `config`, sending `key` (read by the caller from `config.api_key_env`).
    pub fn new(config: OpenAiConfig, key: Option<ApiKey>) -> Result<Self, LlmError> {
        let base = config.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "base_url {base:?} must start with http:// or https:// (for example http://127.0.0.1:8080/v1)"
            )));
        }
        if config.model.trim().is_empty() {
            return Err(LlmError::Config(
                "the openai backend needs a model name: set name in [model] or SIFT_MODEL_NAME"
                    .into(),
            ));
        }
        let url = format!("{base}/chat/completions");
        let mut builder = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(config.connect_timeout))
            // The waiting thread times out first and says so; this only ends an abandoned
            // worker.
            .timeout_per_read(Some(config.read_timeout + Duration::from_secs(2)))
            .user_agent(concat!("sift/", env!("CARGO_PKG_VERSION")));
        let local = is_loopback(base);
        if local {
            // A local server is never reached through a proxy from the environment.
            builder = builder.proxy(None);
        }
        let agent = builder.build().new_agent();
        Ok(Self { config, url, key, agent, redacts: !local, redactions: Default::default() })
    }

    /// A client for `config`, with the key read from the process environment.
    pub fn from_env(config: OpenAiConfig) -> Result<Self, LlmError> {
        let key = config
            .api_key_env
            .as_deref()
            .and_then(sift_env::named)
            .filter(|k| !k.is_empty())
            .map(ApiKey);
        Self::new(config, key)
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether messages are redacted before they are sent (the endpoint is not on loopback).
    pub fn redacts(&self) -> bool {
        self.redacts
    }

    /// `messages` as sent: redacted when the endpoint is remote.
    fn outgoing(&self, messages: &[Message]) -> Vec<Value> {
        if !self.redacts {
            return messages.iter().map(message_json).collect();
        }
        let mut found = Vec::new();
        let out: Vec<Value> = messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                let (content, r) = crate::redact::redact(&m.content);
                m.content = content;
                found.extend(r);
                for call in &mut m.tool_calls {
                    let (args, r) = crate::redact::redact(&call.arguments);
                    call.arguments = args;
                    found.extend(r);
                }
                message_json(&m)
            })
            .collect();
        if !found.is_empty() {
            let mut kinds: Vec<&str> = found.iter().map(|r| r.kind).collect();
            kinds.sort_unstable();
            kinds.dedup();
            tracing::warn!(
                "{} secret-looking string(s) redacted before sending to {} ({})",
                found.len(),
                self.config.base_url,
                kinds.join(", ")
            );
            self.redactions.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
        }
        out
    }

    /// The JSON body of a request.
    fn body(&self, request: &ChatRequest) -> Value {
        let messages = self.outgoing(&request.messages);
        let p = &request.params;
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
        });
        if let Some(seed) = p.seed {
            body["seed"] = json!(seed);
        }
        let stops: Vec<&String> =
            p.stop.iter().filter(|s| !s.is_empty()).take(MAX_SERVER_STOPS).collect();
        if !stops.is_empty() {
            body["stop"] = json!(stops);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
        }
        body
    }

    /// Replaces the API key wherever it appears in `text` (servers echo it in error bodies).
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(ApiKey(key)) if key.len() >= 4 => text.replace(key.as_str(), "<redacted>"),
            _ => text.to_owned(),
        }
    }

    /// Starts one HTTP exchange on a worker thread; its events arrive on the returned channel.
    fn start(&self, body: &str) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel();
        let agent = self.agent.clone();
        let url = self.url.clone();
        let auth = self.key.as_ref().map(|ApiKey(k)| format!("Bearer {k}"));
        let body = body.to_owned();
        let spawned = std::thread::Builder::new()
            .name("sift-openai".into())
            .spawn(move || exchange(&agent, &url, auth.as_deref(), &body, &tx));
        if let Err(e) = spawned {
            // The receiver sees the sender dropped; say why instead.
            let (tx, rx) = mpsc::channel();
            let _ = tx.send(Event::Failed(Failure::Other(format!("cannot start a thread: {e}"))));
            return rx;
        }
        rx
    }

    /// One try: `Err(Try::Retry)` when it may be tried again.
    fn attempt(
        &self,
        body: &str,
        request: &ChatRequest,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Try> {
        let events = self.start(body);
        let mut stream = Stream::new(request);
        let mut status = None;
        let mut last = Instant::now();
        loop {
            if cancel.is_cancelled() {
                return Ok(stream.cancelled(request));
            }
            let event = match events.recv_timeout(POLL) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if last.elapsed() < self.config.read_timeout {
                        continue;
                    }
                    let secs = self.config.read_timeout.as_secs_f32();
                    let reason = if stream.started {
                        format!(
                            "the stream stalled: no data for {secs}s after {} characters of text (timeout_secs in [model])",
                            stream.text.chars().count()
                        )
                    } else {
                        format!("no answer within {secs}s (timeout_secs in [model])")
                    };
                    return Err(Try::Fatal(self.connect_error(reason)));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Try::Fatal(LlmError::Protocol(
                        "the request ended without an answer".into(),
                    )));
                }
            };
            last = Instant::now();
            match event {
                Event::Head { status: s, retry_after } => status = Some((s, retry_after)),
                Event::Body(text) => {
                    return match status {
                        Some((200, _)) => {
                            stream.whole(&text, on_text).map_err(Try::Fatal)?;
                            Ok(stream.finish(request, on_text))
                        }
                        Some((s, retry_after)) => Err(self.status_error(s, retry_after, &text)),
                        None => {
                            Err(Try::Fatal(LlmError::Protocol("a body before a status".into())))
                        }
                    };
                }
                Event::Line(line) => match stream.line(&line, on_text) {
                    Ok(Flow::More) => {}
                    Ok(Flow::Done) => return Ok(stream.finish(request, on_text)),
                    Err(e) => return Err(Try::Fatal(e)),
                },
                Event::End => {
                    if stream.done || stream.finish.is_some() {
                        return Ok(stream.finish(request, on_text));
                    }
                    return Err(Try::Fatal(LlmError::Protocol(format!(
                        "the stream from {} ended early, after {} characters of text, without [DONE] or a finish_reason",
                        self.url,
                        stream.text.chars().count()
                    ))));
                }
                Event::Failed(failure) => return Err(self.failure(failure, &stream)),
            }
        }
    }

    fn connect_error(&self, reason: String) -> LlmError {
        LlmError::Connect { url: self.url.clone(), reason: self.redact(&reason) }
    }

    /// Maps a failed connection or read.
    fn failure(&self, failure: Failure, stream: &Stream) -> Try {
        if stream.started {
            let detail = match &failure {
                Failure::Connect(d) | Failure::Timeout(d) | Failure::Other(d) => d,
            };
            return Try::Fatal(LlmError::Protocol(format!(
                "the stream from {} ended early, after {} characters of text: {}",
                self.url,
                stream.text.chars().count(),
                self.redact(detail)
            )));
        }
        match failure {
            Failure::Connect(detail) => Try::Retry {
                error: self
                    .connect_error(format!("{detail}; is the server running? check base_url")),
                after: None,
            },
            Failure::Timeout(detail) => Try::Fatal(self.connect_error(detail)),
            Failure::Other(detail) => Try::Fatal(self.connect_error(detail)),
        }
    }

    /// Maps an error status and its body.
    fn status_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> Try {
        let inner = self.redact(&error_text(body));
        let said = if inner.is_empty() { String::new() } else { format!(" ({inner})") };
        let var = self.config.api_key_env.as_deref();
        let message = match (status, var, &self.key) {
            (401 | 403, Some(var), Some(_)) => format!("the API key in ${var} was rejected{said}"),
            (401 | 403, Some(var), None) => {
                format!("no API key was sent because ${var} is not set{said}")
            }
            (401 | 403, None, _) => format!(
                "the endpoint wants an API key{said}: set api_key_env in [model] to the variable that holds it"
            ),
            (404, _, _) => format!(
                "not found{said}: check base_url (it usually ends in /v1) and the model name {:?}",
                self.config.model
            ),
            (429, _, _) => format!("rate limited{said}"),
            _ if inner.is_empty() => "no error message".to_owned(),
            _ => inner,
        };
        let error = LlmError::Http { url: self.url.clone(), status, message };
        if status == 429 || status == 408 || (500..600).contains(&status) {
            Try::Retry { error, after: retry_after }
        } else {
            Try::Fatal(error)
        }
    }

    /// How long to wait before try `attempt + 1`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.config.backoff_max);
        }
        let exp = self
            .config
            .backoff_initial
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(self.config.backoff_max);
        // Full jitter over the upper half keeps clients that failed together apart.
        let half = exp / 2;
        half + half.mul_f64(random_unit())
    }
}

/// A number in [0, 1) from the standard library's randomly keyed hasher.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether a URL's host is this machine.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The error message in an error body (`error.message`, `error`, `message`), else its first
/// line, shortened.
fn error_text(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().lines().next().unwrap_or("").to_owned());
    shorten(&text, 300)
}

/// `text` cut to `max` characters, marked when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

fn message_json(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = json!({"role": role, "content": m.content});
    if !m.tool_calls.is_empty() {
        if m.content.is_empty() {
            out["content"] = Value::Null;
        }
        out["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        out["tool_call_id"] = json!(id);
    }
    out
}

/// The outcome of a failed try.
enum Try {
    /// Worth another try (after `after`, when the server said).
    Retry { error: LlmError, after: Option<Duration> },
    /// Final.
    Fatal(LlmError),
}

/// What the worker thread reports.
enum Event {
    /// The status line and the headers that matter.
    Head { status: u16, retry_after: Option<Duration> },
    /// The whole body: an error status's, or a plain JSON answer.
    Body(String),
    /// One line of a streamed body, without its line ending.
    Line(String),
    /// The streamed body ended.
    End,
    /// The exchange failed.
    Failed(Failure),
}

/// Why an exchange failed.
enum Failure {
    /// No connection, or it broke: worth a retry when nothing was streamed yet.
    Connect(String),
    /// The socket's read timeout.
    Timeout(String),
    /// Anything else.
    Other(String),
}

fn classify(error: ureq::Error) -> Failure {
    match error {
        ureq::Error::Io(e) => classify_io(&e),
        ureq::Error::Timeout(ureq::Timeout::Connect) => {
            Failure::Connect("the connection timed out".into())
        }
        ureq::Error::Timeout(t) => Failure::Timeout(format!("timed out ({t})")),
        ureq::Error::ConnectionFailed => Failure::Connect("the connection failed".into()),
        ureq::Error::HostNotFound => {
            Failure::Other("the host name was not found; check base_url".into())
        }
        other => Failure::Other(other.to_string()),
    }
}

fn classify_io(e: &std::io::Error) -> Failure {
    use std::io::ErrorKind::*;
    let text = match e.kind() {
        ConnectionRefused => "connection refused".to_owned(),
        _ => e.to_string(),
    };
    match e.kind() {
        TimedOut | WouldBlock => Failure::Timeout(text),
        ConnectionRefused | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
        | NotConnected => Failure::Connect(text),
        _ => {
            // ureq wraps its own errors (a read timeout) in io errors.
            match e.get_ref().and_then(|inner| inner.downcast_ref::<ureq::Error>()) {
                Some(ureq::Error::Timeout(t)) => Failure::Timeout(format!("timed out ({t})")),
                _ => Failure::Other(text),
            }
        }
    }
}

/// The worker thread: sends the request and reports what comes back. It stops as soon as the
/// receiver is gone.
fn exchange(
    agent: &ureq::Agent,
    url: &str,
    auth: Option<&str>,
    body: &str,
    tx: &mpsc::Sender<Event>,
) {
    let mut request = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "text/event-stream");
    if let Some(auth) = auth {
        request = request.header("Authorization", auth);
    }
    let response = match request.send(body.as_bytes()) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Event::Failed(classify(e)));
            return;
        }
    };
    let status = response.status().as_u16();
    let header =
        |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let retry_after =
        header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
    let json = header("content-type").is_some_and(|t| t.to_ascii_lowercase().contains("json"));
    if tx.send(Event::Head { status, retry_after }).is_err() {
        return;
    }
    let mut reader = BufReader::new(response.into_body().into_reader());
    if status != 200 || json {
        let mut bytes = Vec::new();
        let event = match reader.take(MAX_ERROR_BODY).read_to_end(&mut bytes) {
            Ok(_) => Event::Body(String::from_utf8_lossy(&bytes).into_owned()),
            Err(_) if status != 200 => Event::Body(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => Event::Failed(classify_io(&e)),
        };
        let _ = tx.send(event);
        return;
    }
    loop {
        let mut line = Vec::new();
        let event = match reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) => Event::End,
            Ok(n) if n as u64 == MAX_LINE && !line.ends_with(b"\n") => Event::Failed(
                Failure::Other(format!("a line of the stream is longer than {MAX_LINE} bytes")),
            ),
            Ok(_) => {
                while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    line.pop();
                }
                Event::Line(String::from_utf8_lossy(&line).into_owned())
            }
            Err(e) => Event::Failed(classify_io(&e)),
        };
        let last = !matches!(event, Event::Line(_));
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

/// Whether a stream goes on.
enum Flow {
    More,
    Done,
}

/// The state of one streamed answer.
struct Stream {
    matcher: StopMatcher,
    text: String,
    /// Content deltas received (each usually one token).
    pieces: u32,
    max_tokens: u32,
    calls: BTreeMap<u64, ToolCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// `[DONE]`, a stop sequence or `max_tokens` ended it.
    done: bool,
    /// Text or a tool call arrived (no retry after that).
    started: bool,
}

impl Stream {
    fn new(request: &ChatRequest) -> Self {
        Self {
            matcher: StopMatcher::new(&request.params.stop),
            text: String::new(),
            pieces: 0,
            max_tokens: request.params.max_tokens,
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
            done: false,
            started: false,
        }
    }

    /// One line of the event stream.
    fn line(&mut self, line: &str, on_text: &mut dyn FnMut(&str)) -> Result<Flow, LlmError> {
        let Some(data) = line.strip_prefix("data:") else {
            // Comments (`: ping`), `event:`, `id:`, `retry:` and blank lines carry nothing;
            // some servers send an error object bare.
            if line.starts_with('{')
                && let Ok(v) = serde_json::from_str::<Value>(line)
                && v.get("error").is_some()
            {
                return Err(server_error(&v));
            }
            return Ok(Flow::More);
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Protocol(format!("a stream chunk is not JSON ({e}): {}", shorten(line, 200)))
        })?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(server_error(&chunk));
        }
        self.take_usage(&chunk);
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(Flow::More);
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                self.tool_fragment(position, call)?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
        if let Some(content) = delta.get("content").and_then(Value::as_str)
            && !content.is_empty()
            && self.content(content, on_text)
        {
            return Ok(Flow::Done);
        }
        Ok(Flow::More)
    }

    /// A piece of text; true when it ended the answer (a stop sequence, `max_tokens`).
    fn content(&mut self, content: &str, on_text: &mut dyn FnMut(&str)) -> bool {
        self.started = true;
        self.pieces += 1;
        if self.pieces > self.max_tokens {
            // The server ignored max_tokens.
            self.finish = Some(FinishReason::Length);
            self.done = true;
            return true;
        }
        let released = self.matcher.push(content);
        if !released.text.is_empty() {
            on_text(&released.text);
            self.text.push_str(&released.text);
        }
        if released.stopped {
            self.finish = Some(FinishReason::StopSequence);
            self.done = true;
        }
        released.stopped
    }

    /// A fragment of a tool call: `{index, id?, function: {name?, arguments?}}`.
    fn tool_fragment(&mut self, position: usize, fragment: &Value) -> Result<(), LlmError> {
        self.started = true;
        let index = fragment.get("index").and_then(Value::as_u64).unwrap_or(position as u64);
        let call = self.calls.entry(index).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = fragment.get("id").and_then(Value::as_str)
            && !id.is_empty()
        {
            call.id = id.to_owned();
        }
        let function = fragment.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(Value::as_str)
            && call.name != name
        {
            // Most servers send the name once; some repeat it, a few split it.
            call.name.push_str(name);
        }
        match function.get("arguments") {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // A few servers send the arguments as an object.
            Some(v @ Value::Object(_)) => call.arguments.push_str(&v.to_string()),
            _ => {}
        }
        Ok(())
    }

    fn take_usage(&mut self, chunk: &Value) {
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
            self.usage = Some(Usage {
                prompt_tokens: n("prompt_tokens"),
                completion_tokens: n("completion_tokens"),
            });
        }
    }

    /// A whole (non-streamed) answer, from a server that ignored `stream: true`.
    fn whole(&mut self, body: &str, on_text: &mut dyn FnMut(&str)) -> Result<(), LlmError> {
        let v: Value = serde_json::from_str(body).map_err(|e| {
            LlmError::Protocol(format!("the answer is not JSON ({e}): {}", shorten(body, 200)))
        })?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(server_error(&v));
        }
        self.take_usage(&v);
        let choice = v.pointer("/choices/0").ok_or_else(|| {
            LlmError::Protocol(format!("the answer has no choices: {}", shorten(body, 200)))
        })?;
        if let Some(calls) = choice.pointer("/message/tool_calls").and_then(Value::as_array) {
            for (i, call) in calls.iter().enumerate() {
                self.tool_fragment(i, call)?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
        if let Some(content) = choice.pointer("/message/content").and_then(Value::as_str)
            && !content.is_empty()
        {
            self.content(content, on_text);
        }
        self.done = true;
        Ok(())
    }

    /// The finished turn.
    fn finish(mut self, request: &ChatRequest, on_text: &mut dyn FnMut(&str)) -> ChatResponse {
        if !self.matcher.stopped() {
            let rest = self.matcher.finish();
            if !rest.is_empty() {
                on_text(&rest);
                self.text.push_str(&rest);
            }
        }
        let stopped_early = matches!(self.finish, Some(FinishReason::StopSequence));
        let tool_calls: Vec<ToolCall> =
            if stopped_early { Vec::new() } else { super::name_calls(self.calls.into_values()) };
        let finish = match self.finish {
            Some(FinishReason::Length) => FinishReason::Length,
            Some(FinishReason::StopSequence) => FinishReason::StopSequence,
            _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
            Some(f) => f,
            None => FinishReason::Stop,
        };
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: request.estimated_prompt_tokens() as u32,
            completion_tokens: self.pieces,
        });
        ChatResponse {
            message: Message { tool_calls, ..Message::new(Role::Assistant, self.text) },
            finish,
            usage,
        }
    }

    /// What was generated so far, cancelled (a tool call may be incomplete: none is returned).
    fn cancelled(self, request: &ChatRequest) -> ChatResponse {
        ChatResponse {
            message: Message::new(Role::Assistant, self.text),
            finish: FinishReason::Cancelled,
            usage: self.usage.unwrap_or(Usage {
                prompt_tokens: request.estimated_prompt_tokens() as u32,
                completion_tokens: self.pieces,
            }),
        }
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

fn server_error(v: &Value) -> LlmError {
    LlmError::Runtime(format!("the server reported an error: {}", error_text(&v.to_string())))
}

/// Waits `wait`, looking at `cancel` every [`POLL`]; false when cancelled.
fn sleep_unless_cancelled(wait: Duration, cancel: &Cancel) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(POLL / 2));
    }
}

impl LanguageModel for OpenAiModel {
    fn describe(&self) -> ModelDescription {
        ModelDescription {
            backend: "openai".into(),
            name: self.config.model.clone(),
            device: self.config.base_url.clone(),
            context_window: self.config.context_window,
        }
    }

    fn count_tokens(&self, text: &str) -> TokenCount {
        TokenCount::estimate(text)
    }

    /// Everything redacted so far, oldest first (for the user to see).
    fn redactions(&self) -> Vec<crate::redact::Redaction> {
        self.redactions.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn chat(
        &self,
        request: &ChatRequest,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError> {
        let body = self.body(request).to_string();
        let attempts = self.config.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            if cancel.is_cancelled() {
                return Ok(Stream::new(request).cancelled(request));
            }
            match self.attempt(&body, request, cancel, on_text) {
                Ok(response) => return Ok(response),
                Err(Try::Fatal(error)) => return Err(error),
                Err(Try::Retry { error, after }) if attempt < attempts => {
                    let wait = self.backoff(attempt, after);
                    tracing::warn!(
                        "{error}; retrying in {:.1}s (attempt {} of {attempts})",
                        wait.as_secs_f32(),
                        attempt + 1
                    );
                    if !sleep_unless_cancelled(wait, cancel) {
                        return Ok(Stream::new(request).cancelled(request));
                    }
                    attempt += 1;
                }
                Err(Try::Retry { error, .. }) => return Err(gave_up(error, attempts)),
            }
        }
    }
}

/// Adds the number of tries to a retryable error's message.
fn gave_up(error: LlmError, attempts: u32) -> LlmError {
    let note =
        if attempts == 1 { String::new() } else { format!(" (gave up after {attempts} attempts)") };
    match error {
        LlmError::Http { url, status, message } => {
            LlmError::Http { url, status, message: format!("{message}{note}") }
        }
        LlmError::Connect { url, reason } => {
            LlmError::Connect { url, reason: format!("{reason}{note}") }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
