//! The OpenAI backend against a real server: llama.cpp's `llama-server` serving Gemma 3 270M on
//! 127.0.0.1, both installed by `scripts/llama-server.sh` (a build of about 22 minutes, too long
//! for the test command). So the test is `#[ignore]`d; run it with `cargo test --workspace
//! --test llama_server -- --ignored` after the install. Run so, a missing install is a failure.
//! `SIFT_LLAMA_DIR` says where they are (default `~/.cache/sift/llama-server`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sift_runtime::llm::openai::{OpenAiConfig, OpenAiModel};
use sift_runtime::llm::{
    Cancel, ChatRequest, FinishReason, GenerationParams, LanguageModel, Message,
};

fn install_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SIFT_LLAMA_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    cache.join("sift/llama-server")
}

/// The server binary and the model; the test fails when they are not installed.
fn installed() -> (PathBuf, PathBuf) {
    let dir = install_dir();
    let server = dir.join("bin/llama-server");
    let model = dir.join("gemma-3-270m-q4_k_m.gguf");
    let missing: Vec<String> = [&server, &model]
        .into_iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return (server, model);
    }
    panic!("llama-server is not installed: {} (run scripts/llama-server.sh)", missing.join(", "))
}

/// The running server; killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on 127.0.0.1:port: the status code, if the server answered.
fn get_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

#[test]
#[ignore = "needs llama-server from scripts/llama-server.sh (a 22-minute build): run with --ignored"]
fn a_greedy_chat_with_a_real_llama_server_streams_an_answer_with_usage() {
    let (binary, model_file) = installed();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let started = Instant::now();
    let mut server = Server(
        Command::new(&binary)
            .arg("--model")
            .arg(&model_file)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--ctx-size", "2048"])
            .args(["--parallel", "1", "--threads", "2"])
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display())),
    );
    // Ready when /health answers 200 (503 while the model loads).
    loop {
        if get_status(port, "/health") == Some(200) {
            break;
        }
        if let Some(status) = server.0.try_wait().unwrap() {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("llama-server exited ({status}) before it was ready:\n{text}");
        }
        assert!(started.elapsed() < Duration::from_secs(120), "llama-server not ready in 120 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("llama-server ready in {:.1}s", started.elapsed().as_secs_f32());

    let model = OpenAiModel::new(
        OpenAiConfig {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: "gemma-3-270m".into(),
            context_window: 2048,
            read_timeout: Duration::from_secs(60),
            ..OpenAiConfig::default()
        },
        None,
    )
    .unwrap();
    let request = ChatRequest {
        messages: vec![Message::user("Name three colours of the rainbow.")],
        tools: Vec::new(),
        params: GenerationParams {
            max_tokens: 24,
            temperature: 0.0,
            seed: Some(1),
            ..Default::default()
        },
    };
    let chat = Instant::now();
    let mut pieces = Vec::new();
    let response = model
        .chat(&request, &Cancel::new(), &mut |t| pieces.push(t.to_owned()))
        .unwrap_or_else(|e| {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("{e}\nserver log:\n{text}")
        });
    eprintln!(
        "answer in {:.1}s ({} pieces): {:?}",
        chat.elapsed().as_secs_f32(),
        pieces.len(),
        response.message.content
    );
    assert!(!response.message.content.trim().is_empty(), "an empty answer");
    assert_eq!(pieces.concat(), response.message.content);
    assert!(pieces.len() > 1, "the answer was not streamed: {pieces:?}");
    assert!(matches!(response.finish, FinishReason::Stop | FinishReason::Length), "{response:?}");
    assert!(response.usage.prompt_tokens > 0, "{:?}", response.usage);
    assert!(
        response.usage.completion_tokens > 0 && response.usage.completion_tokens <= 24,
        "{:?}",
        response.usage
    );

    // Greedy decoding is reproducible.
    let again = model.chat(&request, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(again.message.content, response.message.content);
}
