//! The few GitHub REST calls the pull-request bot makes, in the request shapes of GitHub's
//! OpenAPI description (the tests send them through a mock that validates them against it),
//! with retries on server errors and on the rate limits, and a token that never leaves this
//! file: it is sent in the `Authorization` header and nowhere else, and neither its `Debug`
//! nor any error shows it.
//!
//! Plain HTTP (`ureq`, which the model client uses already) rather than a GitHub library: the
//! bot needs seven endpoints, the engine is synchronous, and the libraries that cover the whole
//! API bring an async runtime and an HTTP stack of their own.

use std::time::Duration;

use serde_json::Value;

/// A token, kept out of every `Debug`, log line and message.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Wraps `token`.
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Why a call failed, in one line that never carries the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 401, or 403 that is not a rate limit: the token is refused, or may not do this.
    #[error("GitHub refused to {what} ({status}): {message}")]
    Refused {
        /// What was asked.
        what: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
    },
    /// 422: the request was understood and refused (a comment on a line outside the diff).
    #[error("GitHub could not {what} (422): {message}")]
    Unprocessable {
        /// What was asked.
        what: String,
        /// GitHub's message and errors.
        message: String,
    },
    /// 404.
    #[error("GitHub found nothing to {what} (404): {message}")]
    NotFound {
        /// What was asked.
        what: String,
        /// GitHub's message.
        message: String,
    },
    /// Still rate limited, or still failing with a server error, after the retries.
    #[error("GitHub kept refusing to {what}: {message}")]
    GaveUp {
        /// What was asked.
        what: String,
        /// The last answer.
        message: String,
    },
    /// Any other status.
    #[error("GitHub answered {status} to {what}: {message}")]
    Status {
        /// What was asked.
        what: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
    },
    /// No answer: the network, the address.
    #[error("could not reach GitHub to {what}: {message}")]
    Network {
        /// What was asked.
        what: String,
        /// What went wrong.
        message: String,
    },
}

/// How the client retries.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the first retry of a server error; doubled each time.
    pub backoff: Duration,
    /// The longest wait the client accepts (a `retry-after` or a rate limit's reset further
    /// away gives up at once, saying when to try again).
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry { attempts: 4, backoff: Duration::from_secs(1), max_wait: Duration::from_secs(90) }
    }
}

/// A client of one GitHub API (`https://api.github.com`, or a GitHub Enterprise Server's).
#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    api: String,
    token: Token,
    retry: Retry,
}

/// An HTTP method the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
    Patch,
}

impl Client {
    /// A client of the API at `api` (no trailing slash needed) with `token`.
    pub fn new(api: &str, token: Token, retry: Retry) -> Client {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(20)))
            .timeout_global(Some(Duration::from_secs(120)))
            .user_agent(concat!("sift/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Client { agent, api: api.trim_end_matches('/').to_owned(), token, retry }
    }

    /// `GET path`.
    pub fn get(&self, path: &str, what: &str) -> Result<Value, ApiError> {
        self.send(Method::Get, &self.url(path), None, what)
    }

    /// Every item of a paginated list (`per_page=100`, pages until a short one).
    pub fn get_all(&self, path: &str, what: &str) -> Result<Vec<Value>, ApiError> {
        let mut items = Vec::new();
        let sep = if path.contains('?') { '&' } else { '?' };
        for page in 1.. {
            let answer = self.get(&format!("{path}{sep}per_page=100&page={page}"), what)?;
            let Value::Array(list) = answer else {
                return Err(ApiError::Status {
                    what: what.to_owned(),
                    status: 200,
                    message: "the answer is not a list".into(),
                });
            };
            let short = list.len() < 100;
            items.extend(list);
            // A hard stop far beyond any pull request's comments.
            if short || page == 100 {
                break;
            }
        }
        Ok(items)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value, what: &str) -> Result<Value, ApiError> {
        self.send(Method::Post, &self.url(path), Some(body), what)
    }

    /// `PATCH path` with a JSON body.
    pub fn patch(&self, path: &str, body: &Value, what: &str) -> Result<Value, ApiError> {
        self.send(Method::Patch, &self.url(path), Some(body), what)
    }

    /// A GraphQL request to `endpoint` (`GITHUB_GRAPHQL_URL`): its `data`, or GitHub's
    /// `errors` as an error. (Resolving a review thread is in GraphQL only.)
    pub fn graphql(
        &self,
        endpoint: &str,
        query: &str,
        variables: Value,
        what: &str,
    ) -> Result<Value, ApiError> {
        let body = serde_json::json!({"query": query, "variables": variables});
        let answer = self.send(Method::Post, endpoint, Some(&body), what)?;
        if let Some(errors) = answer["errors"].as_array().filter(|e| !e.is_empty()) {
            let messages: Vec<&str> = errors.iter().filter_map(|e| e["message"].as_str()).collect();
            return Err(ApiError::Status {
                what: what.to_owned(),
                status: 200,
                message: messages.join("; "),
            });
        }
        Ok(answer["data"].clone())
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.api)
    }

    fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Value, ApiError> {
        let mut backoff = self.retry.backoff;
        let mut last = String::new();
        for attempt in 1..=self.retry.attempts.max(1) {
            let answer = self.once(method, url, body);
            let (status, wait, text) = match answer {
                Ok(answer) => answer,
                Err(message) => {
                    // A connection that failed is worth one more try, like a 5xx.
                    last = message;
                    if attempt < self.retry.attempts {
                        tracing::warn!(target: "sift::github", "{what}: {last}; retrying in {backoff:?}");
                        std::thread::sleep(backoff);
                        backoff *= 2;
                        continue;
                    }
                    return Err(ApiError::Network { what: what.to_owned(), message: last });
                }
            };
            let message = || github_message(&text);
            match status {
                200..=299 => {
                    if text.trim().is_empty() {
                        return Ok(Value::Null);
                    }
                    return serde_json::from_str(&text).map_err(|e| ApiError::Status {
                        what: what.to_owned(),
                        status,
                        message: format!("the answer is not JSON: {e}"),
                    });
                }
                403 | 429 if wait.is_some() => {
                    let wait = wait.unwrap_or_default();
                    last = format!("rate limited ({status}, {})", message());
                    if wait > self.retry.max_wait {
                        return Err(ApiError::GaveUp {
                            what: what.to_owned(),
                            message: format!("{last}; try again in {} s", wait.as_secs()),
                        });
                    }
                    if attempt < self.retry.attempts {
                        tracing::warn!(target: "sift::github", "{what}: {last}; waiting {wait:?}");
                        std::thread::sleep(wait);
                        continue;
                    }
                }
                401 | 403 => {
                    return Err(ApiError::Refused {
                        what: what.to_owned(),
                        status,
                        message: message(),
                    });
                }
                404 => {
                    return Err(ApiError::NotFound { what: what.to_owned(), message: message() });
                }
                422 => {
                    return Err(ApiError::Unprocessable {
                        what: what.to_owned(),
                        message: message(),
                    });
                }
                500..=599 => {
                    last = format!("{status}, {}", message());
                    if attempt < self.retry.attempts {
                        tracing::warn!(target: "sift::github", "{what}: {last}; retrying in {backoff:?}");
                        std::thread::sleep(backoff);
                        backoff *= 2;
                        continue;
                    }
                }
                _ => {
                    return Err(ApiError::Status {
                        what: what.to_owned(),
                        status,
                        message: message(),
                    });
                }
            }
        }
        Err(ApiError::GaveUp {
            what: what.to_owned(),
            message: format!("{last}, after {} attempts", self.retry.attempts),
        })
    }

    /// One request: its status, how long GitHub asks to wait (a rate limit), and its body; or
    /// why no answer came.
    fn once(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Option<Duration>, String), String> {
        let auth = format!("Bearer {}", self.token.0);
        let with = |r: ureq::RequestBuilder<ureq::typestate::WithBody>| {
            let bytes = body.map(Value::to_string).unwrap_or_default();
            headers(r, &auth).header("Content-Type", "application/json").send(bytes.as_bytes())
        };
        let answer = match method {
            Method::Get => headers(self.agent.get(url), &auth).call(),
            Method::Post => with(self.agent.post(url)),
            Method::Patch => with(self.agent.patch(url)),
        };
        let mut response = answer.map_err(|e| describe(&e))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let wait = rate_limit_wait(
            header("retry-after").as_deref(),
            header("x-ratelimit-remaining").as_deref(),
            header("x-ratelimit-reset").as_deref(),
            crate::fates::now(),
        );
        let text = response.body_mut().read_to_string().map_err(|e| describe(&e))?;
        Ok((status, wait, text))
    }
}

fn headers<B>(request: ureq::RequestBuilder<B>, auth: &str) -> ureq::RequestBuilder<B> {
    request
        .header("Authorization", auth)
        .header("Accept", "application/vnd.github+json")
        .header("X-GitHub-Api-Version", "2022-11-28")
}

/// What went wrong with a request that got no answer, without its URL's credentials (there
/// are none: the token is a header) or the token.
fn describe(error: &ureq::Error) -> String {
    match error {
        ureq::Error::HostNotFound => "the host name was not found (check GITHUB_API_URL)".into(),
        ureq::Error::ConnectionFailed => "the connection failed".into(),
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::Io(e) => e.to_string(),
        other => other.to_string(),
    }
}

/// How long a 403 or 429 asks to wait: `retry-after` (the secondary rate limit), else the
/// primary limit's reset time when none is left; `None` when it is no rate limit.
pub(crate) fn rate_limit_wait(
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
    now: u64,
) -> Option<Duration> {
    if let Some(seconds) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if remaining.map(str::trim) == Some("0") {
        let reset = reset.and_then(|v| v.trim().parse::<u64>().ok())?;
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    None
}

/// GitHub's `message` (and its `errors`, for a 422) out of an error body; the body's start
/// when it is not GitHub's JSON.
fn github_message(text: &str) -> String {
    let Ok(json) = serde_json::from_str::<Value>(text) else {
        let line = text.lines().next().unwrap_or("").trim();
        return if line.is_empty() {
            "no message".into()
        } else {
            line.chars().take(200).collect()
        };
    };
    // A proxy's problem document (RFC 9457) has a title and details instead.
    let mut message = json["message"]
        .as_str()
        .or_else(|| json["title"].as_str())
        .unwrap_or("no message")
        .to_owned();
    if let Some(details) = json["validation"].as_array() {
        let details: Vec<&str> = details.iter().filter_map(|d| d["message"].as_str()).collect();
        if !details.is_empty() {
            message = format!("{message}: {}", details.join("; "));
        }
    }
    if let Some(errors) = json["errors"].as_array() {
        let errors: Vec<String> = errors
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other["message"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| other.to_string()),
            })
            .collect();
        if !errors.is_empty() {
            message = format!("{message}: {}", errors.join("; "));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_waits_as_github_says() {
        assert_eq!(rate_limit_wait(Some("7"), None, None, 0), Some(Duration::from_secs(7)));
        assert_eq!(
            rate_limit_wait(None, Some("0"), Some("1010"), 1000),
            Some(Duration::from_secs(11))
        );
        // A 403 with requests left and no retry-after is a refusal, not a limit.
        assert_eq!(rate_limit_wait(None, Some("4999"), Some("1010"), 1000), None);
        assert_eq!(rate_limit_wait(None, None, None, 1000), None);
    }

    #[test]
    fn messages_come_from_githubs_error_body() {
        let body = r#"{"message":"Validation Failed","errors":["Line could not be resolved"]}"#;
        assert_eq!(github_message(body), "Validation Failed: Line could not be resolved");
        let body = r#"{"message":"Bad credentials","documentation_url":"https://docs.github.com"}"#;
        assert_eq!(github_message(body), "Bad credentials");
        assert_eq!(
            github_message("<html>502 Bad Gateway</html>\n"),
            "<html>502 Bad Gateway</html>"
        );
    }

    #[test]
    fn the_token_is_never_shown() {
        let token = Token::new("ghs_canary_secret");
        assert!(!format!("{token:?}").contains("canary"));
        let client = Client::new("http://127.0.0.1:9", token, Retry::default());
        assert!(!format!("{client:?}").contains("canary"));
    }
}
