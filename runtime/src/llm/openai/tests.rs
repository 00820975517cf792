//! The OpenAI backend against the scripted local server of `sift_test_support::openai`.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::llm::{GenerationParams, ToolSpec};
use sift_test_support::openai::{FakeServer, Reply, StreamEnd, text_events};

fn config(server: &FakeServer) -> OpenAiConfig {
    OpenAiConfig {
        base_url: server.base_url(),
        model: "test-model".into(),
        api_key_env: Some("SIFT_TEST_KEY".into()),
        read_timeout: Duration::from_secs(5),
        backoff_initial: Duration::from_millis(5),
        backoff_max: Duration::from_millis(50),
        ..OpenAiConfig::default()
    }
}

fn model(server: &FakeServer) -> OpenAiModel {
    OpenAiModel::new(config(server), Some(ApiKey::new("sk-test-0123456789"))).unwrap()
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest { messages: vec![Message::user(text)], ..ChatRequest::default() }
}

/// Runs one chat, returning the pieces `on_text` saw and the result.
fn chat(
    model: &OpenAiModel,
    request: &ChatRequest,
) -> (Vec<String>, Result<ChatResponse, LlmError>) {
    let mut seen = Vec::new();
    let result = model.chat(request, &Cancel::new(), &mut |t| seen.push(t.to_owned()));
    (seen, result)
}

fn search_tool() -> ToolSpec {
    ToolSpec {
        name: "search".into(),
        description: "search the code".into(),
        parameters: json!({"type": "object", "properties": {"query": {"type": "string"}},
            "required": ["query"]}),
    }
}

fn tool_delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> serde_json::Value {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
}

#[test]
fn streamed_text_arrives_in_pieces_with_the_servers_usage() {
    let server = FakeServer::start([Reply::text(&["The index", " lives in", " .sift/"])]).unwrap();
    let (seen, result) = chat(&model(&server), &ask("where is the index?"));
    let response = result.unwrap();
    assert_eq!(seen, ["The index", " lives in", " .sift/"]);
    assert_eq!(response.message.content, "The index lives in .sift/");
    assert_eq!(response.message.role, Role::Assistant);
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(response.usage, Usage { prompt_tokens: 11, completion_tokens: 3 });
}

#[test]
fn the_request_carries_the_model_messages_tools_params_and_key() {
    let server = FakeServer::start([Reply::text(&["ok"])]).unwrap();
    let request = ChatRequest {
        messages: vec![
            Message::system("be brief"),
            Message::user("find chunking"),
            Message {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "search".into(),
                    arguments: r#"{"query":"chunk"}"#.into(),
                }],
                ..Message::assistant("")
            },
            Message::tool_result("c1", "indexer/src/chunk.rs"),
        ],
        tools: vec![search_tool()],
        params: GenerationParams {
            max_tokens: 77,
            temperature: 0.25,
            top_p: 0.5,
            seed: Some(42),
            stop: vec!["</a>".into()],
        },
    };
    chat(&model(&server), &request).1.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-0123456789"));
    assert!(sent.header("content-type").unwrap().starts_with("application/json"));
    let body = sent.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["max_tokens"], 77);
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["seed"], 42);
    assert_eq!(body["stop"], json!(["</a>"]));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "search",
            "description": "search the code", "parameters": search_tool().parameters}}])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[2]["content"], serde_json::Value::Null);
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "search");
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "indexer/src/chunk.rs",
        "tool_call_id": "c1"})
    );
}

#[test]
fn no_key_configured_means_no_authorization_header() {
    let server = FakeServer::start([Reply::text(&["ok"])]).unwrap();
    let model = OpenAiModel::new(OpenAiConfig { api_key_env: None, ..config(&server) }, None);
    chat(&model.unwrap(), &ask("hi")).1.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn tool_calls_split_across_chunks_are_put_together_by_index() {
    let events = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]}),
        tool_delta(0, Some("call_a"), Some("search"), ""),
        tool_delta(0, None, None, r#"{"que"#),
        tool_delta(1, Some("call_b"), Some("search"), r#"{"query": "#),
        tool_delta(0, None, None, r#"ry": "chunk"}"#),
        // The second call's arguments are cut: malformed JSON, reported by `checked`.
        tool_delta(1, None, None, r#""bm2"#),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let server = FakeServer::start([Reply::events(&events)]).unwrap();
    let request = ChatRequest { tools: vec![search_tool()], ..ask("find chunking") };
    let (seen, result) = chat(&model(&server), &request);
    let response = result.unwrap();
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(response.finish, FinishReason::ToolCalls);
    let calls = &response.message.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_a", "search"));
    assert_eq!(calls[0].arguments, r#"{"query": "chunk"}"#);
    assert_eq!(calls[0].checked(&request.tools).unwrap()["query"], "chunk");
    assert_eq!(calls[1].id, "call_b");
    let err = calls[1].checked(&request.tools).unwrap_err();
    assert_eq!(err.call_id, "call_b");
    assert!(err.reason.contains("not valid JSON"), "{}", err.reason);
}

#[test]
fn a_stop_sequence_split_across_chunks_is_cut_locally() {
    // The server ignores `stop`: the client still cuts, and never shows part of it.
    let server =
        FakeServer::start([Reply::text(&["x = 1", "\n<", "/co", "de>", " and more"])]).unwrap();
    let mut request = ask("code please");
    request.params.stop = vec!["</code>".into()];
    let (seen, result) = chat(&model(&server), &request);
    let response = result.unwrap();
    assert_eq!(seen.concat(), "x = 1\n");
    assert!(seen.iter().all(|p| !p.contains('<')), "{seen:?}");
    assert_eq!(response.message.content, "x = 1\n");
    assert_eq!(response.finish, FinishReason::StopSequence);
    assert_eq!(server.requests()[0].json()["stop"], json!(["</code>"]));
}

#[test]
fn max_tokens_is_enforced_when_the_server_ignores_it() {
    let server = FakeServer::start([Reply::text(&["a", " b", " c", " d", " e"])]).unwrap();
    let mut request = ask("count");
    request.params.max_tokens = 2;
    let response = chat(&model(&server), &request).1.unwrap();
    assert_eq!(response.message.content, "a b");
    assert_eq!(response.finish, FinishReason::Length);
}

#[test]
fn sse_lines_split_mid_line_across_http_chunks_still_parse() {
    let mut whole = String::new();
    for e in text_events(&["split ", "lines"], 3) {
        whole.push_str(&format!(": keep-alive\n\ndata: {e}\r\n\r\n"));
    }
    whole.push_str("data: [DONE]\n\n");
    let chunks: Vec<String> =
        whole.as_bytes().chunks(7).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    let reply = Reply::Stream { chunks, gap: Duration::ZERO, then: StreamEnd::Finish };
    let server = FakeServer::start([reply]).unwrap();
    let response = chat(&model(&server), &ask("hi")).1.unwrap();
    assert_eq!(response.message.content, "split lines");
}

#[test]
fn a_stream_cut_midway_is_an_error_that_says_how_much_arrived() {
    let mut chunks: Vec<String> = text_events(&["half an ", "answer"], 3)
        .iter()
        .take(3)
        .map(|e| format!("data: {e}\n\n"))
        .collect();
    chunks.truncate(3);
    let reply = Reply::Stream { chunks, gap: Duration::ZERO, then: StreamEnd::Cut };
    let server = FakeServer::start([reply]).unwrap();
    let (seen, result) = chat(&model(&server), &ask("hi"));
    assert_eq!(seen.concat(), "half an answer");
    let err = result.unwrap_err();
    assert!(matches!(err, LlmError::Protocol(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("ended early") && text.contains("14 characters"), "{text}");
    // Nothing was retried: text had been shown.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_stream_that_closes_cleanly_without_done_or_finish_is_also_incomplete() {
    let chunks = vec![format!("data: {}\n\n", text_events(&["partial"], 1)[1])];
    let reply = Reply::Stream { chunks, gap: Duration::ZERO, then: StreamEnd::Finish };
    let server = FakeServer::start([reply]).unwrap();
    let err = chat(&model(&server), &ask("hi")).1.unwrap_err();
    assert!(err.to_string().contains("ended early, after 7 characters"), "{err}");
}

#[test]
fn a_malformed_chunk_is_a_protocol_error_naming_the_line() {
    let chunks = vec![
        format!("data: {}\n\n", text_events(&["fine"], 1)[1]),
        "data: {\"choices\": [{\"delta\": {\"content\": \"oops\"\n\n".into(),
    ];
    let reply = Reply::Stream { chunks, gap: Duration::ZERO, then: StreamEnd::Finish };
    let server = FakeServer::start([reply]).unwrap();
    let err = chat(&model(&server), &ask("hi")).1.unwrap_err();
    assert!(matches!(err, LlmError::Protocol(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("not JSON") && text.contains(r#"data: {"choices""#), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn an_error_event_in_the_stream_is_reported() {
    let events = [json!({"error": {"message": "the model crashed"}})];
    let server = FakeServer::start([Reply::events(&events)]).unwrap();
    let err = chat(&model(&server), &ask("hi")).1.unwrap_err();
    assert!(err.to_string().contains("the model crashed"), "{err}");
}

#[test]
fn a_server_that_ignores_stream_true_still_works() {
    let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "whole answer"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}});
    let reply = Reply::Status { status: 200, headers: Vec::new(), body: body.to_string() };
    let server = FakeServer::start([reply]).unwrap();
    let (seen, result) = chat(&model(&server), &ask("hi"));
    let response = result.unwrap();
    assert_eq!(seen.concat(), "whole answer");
    assert_eq!(response.usage, Usage { prompt_tokens: 5, completion_tokens: 2 });
}

#[test]
fn rate_limits_are_retried_until_the_server_answers() {
    let mut replies: Vec<Reply> = (0..3).map(|_| Reply::error(429, "slow down")).collect();
    replies.push(Reply::text(&["finally"]));
    let server = FakeServer::start(replies).unwrap();
    let response = chat(&model(&server), &ask("hi")).1.unwrap();
    assert_eq!(response.message.content, "finally");
    assert_eq!(server.requests().len(), 4);
    // Every try sent the same request.
    let bodies: Vec<String> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn a_rate_limit_storm_gives_up_after_the_bounded_attempts_with_a_clear_error() {
    let server = FakeServer::start((0..10).map(|_| Reply::error(429, "slow down"))).unwrap();
    let model = OpenAiModel::new(
        OpenAiConfig { max_attempts: 3, ..config(&server) },
        Some(ApiKey::new("sk-test-0123456789")),
    )
    .unwrap();
    let err = chat(&model, &ask("hi")).1.unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 429, .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("rate limited (slow down)"), "{text}");
    assert!(text.contains("gave up after 3 attempts"), "{text}");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn retry_after_is_honoured() {
    let replies = [Reply::error(429, "wait").with_header("Retry-After", "1"), Reply::text(&["ok"])];
    let server = FakeServer::start(replies).unwrap();
    // The configured backoff is milliseconds; Retry-After asks for a second (capped at 2 s).
    let model = OpenAiModel::new(
        OpenAiConfig { backoff_max: Duration::from_secs(2), ..config(&server) },
        None,
    )
    .unwrap();
    let start = Instant::now();
    let response = chat(&model, &ask("hi")).1.unwrap();
    assert_eq!(response.message.content, "ok");
    assert!(start.elapsed() >= Duration::from_millis(950), "{:?}", start.elapsed());
}

#[test]
fn a_server_error_then_success_succeeds() {
    let replies =
        [Reply::error(500, "internal"), Reply::error(503, "loading"), Reply::text(&["up"])];
    let server = FakeServer::start(replies).unwrap();
    let response = chat(&model(&server), &ask("hi")).1.unwrap();
    assert_eq!(response.message.content, "up");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn client_errors_are_not_retried_and_say_what_to_do() {
    let server =
        FakeServer::start([Reply::error(404, "no such model"), Reply::text(&["no"])]).unwrap();
    let err = chat(&model(&server), &ask("hi")).1.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("404") && text.contains("check base_url"), "{text}");
    assert!(text.contains("no such model") && text.contains("test-model"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_rejected_key_is_named_by_its_variable_and_never_shown() {
    let key = "sk-secret-4242424242";
    // A server that echoes the key back in its error, as some do.
    let server =
        FakeServer::start([Reply::error(401, &format!("Incorrect API key provided: {key}"))])
            .unwrap();
    let model = OpenAiModel::new(config(&server), Some(ApiKey::new(key))).unwrap();
    let err = chat(&model, &ask("hi")).1.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("the API key in $SIFT_TEST_KEY was rejected"), "{text}");
    assert!(!text.contains(key), "{text}");
    assert!(!format!("{err:?}").contains(key));
    assert!(!format!("{model:?}").contains(key), "{model:?}");
    // It was sent, though.
    assert_eq!(server.requests()[0].header("authorization"), Some(&*format!("Bearer {key}")));
}

#[test]
fn a_missing_key_is_named_by_its_variable() {
    let server = FakeServer::start([Reply::error(401, "no key")]).unwrap();
    let model = OpenAiModel::new(config(&server), None).unwrap();
    let err = chat(&model, &ask("hi")).1.unwrap_err();
    assert!(err.to_string().contains("$SIFT_TEST_KEY is not set"), "{err}");
}

#[test]
fn a_refused_connection_names_the_url_and_base_url() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "m".into(),
        max_attempts: 2,
        backoff_initial: Duration::from_millis(1),
        ..OpenAiConfig::default()
    };
    let err = chat(&OpenAiModel::new(config, None).unwrap(), &ask("hi")).1.unwrap_err();
    assert!(matches!(err, LlmError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}/v1/chat/completions")), "{text}");
    assert!(text.contains("connection refused") && text.contains("base_url"), "{text}");
    assert!(text.contains("gave up after 2 attempts"), "{text}");
}

#[test]
fn a_silent_server_times_out_instead_of_hanging() {
    let server = FakeServer::start([Reply::Stall(Duration::from_secs(60))]).unwrap();
    let model = OpenAiModel::new(
        OpenAiConfig { read_timeout: Duration::from_millis(300), ..config(&server) },
        None,
    )
    .unwrap();
    let start = Instant::now();
    let err = chat(&model, &ask("hi")).1.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert!(matches!(err, LlmError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("no answer within 0.3s"), "{err}");
    assert_eq!(server.requests().len(), 1, "a stalled server is not retried");
}

#[test]
fn a_stream_that_stalls_midway_times_out_saying_how_much_arrived() {
    let chunks: Vec<String> =
        text_events(&["so far"], 1).iter().take(2).map(|e| format!("data: {e}\n\n")).collect();
    let reply = Reply::Stream {
        chunks,
        gap: Duration::ZERO,
        then: StreamEnd::Stall(Duration::from_secs(60)),
    };
    let server = FakeServer::start([reply]).unwrap();
    let model = OpenAiModel::new(
        OpenAiConfig { read_timeout: Duration::from_millis(300), ..config(&server) },
        None,
    )
    .unwrap();
    let err = chat(&model, &ask("hi")).1.unwrap_err();
    assert!(
        err.to_string().contains("stalled") && err.to_string().contains("6 characters"),
        "{err}"
    );
}

#[test]
fn cancelling_while_the_server_stalls_returns_promptly() {
    let chunks: Vec<String> =
        text_events(&["partial"], 1).iter().take(2).map(|e| format!("data: {e}\n\n")).collect();
    let reply = Reply::Stream {
        chunks,
        gap: Duration::ZERO,
        then: StreamEnd::Stall(Duration::from_secs(60)),
    };
    let server = FakeServer::start([reply, Reply::Stall(Duration::from_secs(60))]).unwrap();
    let model = OpenAiModel::new(
        OpenAiConfig { read_timeout: Duration::from_secs(60), ..config(&server) },
        None,
    )
    .unwrap();
    for _ in 0..2 {
        let cancel = Cancel::new();
        let canceller = cancel.clone();
        let start = Instant::now();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            canceller.cancel();
        });
        let mut seen = String::new();
        let response = model.chat(&ask("hi"), &cancel, &mut |t| seen.push_str(t)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert_eq!(response.finish, FinishReason::Cancelled);
        assert_eq!(response.message.content, seen);
    }
}

#[test]
fn cancelling_during_a_backoff_returns_promptly() {
    let server =
        FakeServer::start([Reply::error(429, "wait").with_header("Retry-After", "60")]).unwrap();
    let model = OpenAiModel::new(
        OpenAiConfig { backoff_max: Duration::from_secs(60), ..config(&server) },
        None,
    )
    .unwrap();
    let cancel = Cancel::new();
    let canceller = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let start = Instant::now();
    let response = model.chat(&ask("hi"), &cancel, &mut |_| {}).unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert_eq!(response.finish, FinishReason::Cancelled);
}

#[test]
fn bad_configuration_is_refused_up_front() {
    let bad_url = OpenAiConfig {
        base_url: "127.0.0.1:8080".into(),
        model: "m".into(),
        ..OpenAiConfig::default()
    };
    assert!(OpenAiModel::new(bad_url, None).unwrap_err().to_string().contains("http://"));
    let no_name = OpenAiConfig { model: " ".into(), ..OpenAiConfig::default() };
    assert!(OpenAiModel::new(no_name, None).unwrap_err().to_string().contains("SIFT_MODEL_NAME"));
}

#[test]
fn describe_reports_the_configured_window_and_endpoint() {
    let server = FakeServer::start([]).unwrap();
    let model = OpenAiModel::new(OpenAiConfig { context_window: 32768, ..config(&server) }, None);
    let d = model.unwrap().describe();
    assert_eq!(d.backend, "openai");
    assert_eq!(d.name, "test-model");
    assert_eq!(d.device, server.base_url());
    assert_eq!(d.context_window, 32768);
}

#[test]
fn backoff_grows_is_capped_and_jittered() {
    let config = OpenAiConfig {
        model: "m".into(),
        backoff_initial: Duration::from_millis(100),
        backoff_max: Duration::from_millis(1000),
        ..OpenAiConfig::default()
    };
    let model = OpenAiModel::new(config, None).unwrap();
    for attempt in 1..=8 {
        let exp = (100u64 << (attempt - 1)).min(1000);
        let wait = model.backoff(attempt, None).as_millis() as u64;
        assert!(wait >= exp / 2 && wait <= exp, "attempt {attempt}: {wait} ms");
    }
    assert_eq!(model.backoff(1, Some(Duration::from_secs(30))), Duration::from_millis(1000));
}

#[test]
fn loopback_hosts_are_recognised() {
    for url in ["http://127.0.0.1:8080/v1", "http://localhost/v1", "http://[::1]:80/v1"] {
        assert!(is_loopback(url), "{url}");
    }
    for url in ["https://api.openai.com/v1", "http://10.0.0.1:8080"] {
        assert!(!is_loopback(url), "{url}");
    }
}

#[test]
fn messages_to_a_remote_endpoint_are_redacted_and_a_local_one_gets_them_whole() {
    let text =
        "the config says DB_PASSWORD=hunter2hunter2 and key sk-proj-abcdefghijklmnopqrstuvwx";
    let remote = OpenAiModel::new(
        OpenAiConfig {
            base_url: "https://api.example.com/v1".into(),
            model: "m".into(),
            ..OpenAiConfig::default()
        },
        None,
    )
    .unwrap();
    assert!(remote.redacts());
    let mut request = ask(text);
    request.messages.push(Message {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "write".into(),
            arguments: r#"{"text": "password = \"s3cretvalue\""}"#.into(),
        }],
        tool_call_id: None,
    });
    let body = remote.body(&request).to_string();
    for secret in ["hunter2hunter2", "sk-proj-abc", "s3cretvalue"] {
        assert!(!body.contains(secret), "{secret} sent: {body}");
    }
    assert!(body.contains("[REDACTED:password]") && body.contains("[REDACTED:api key]"), "{body}");
    let seen: Vec<&str> = remote.redactions().iter().map(|r| r.kind).collect();
    assert_eq!(seen, ["password", "api key", "password"]);
    // The arguments are still JSON.
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let args = v["messages"][1]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(args).is_ok(), "{args}");

    let server = FakeServer::start(Vec::<Reply>::new()).unwrap();
    let local = model(&server);
    assert!(!local.redacts());
    assert!(local.body(&ask(text)).to_string().contains("hunter2hunter2"));
    assert!(local.redactions().is_empty());
}
