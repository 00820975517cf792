//! A tiny scripted HTTP server on `127.0.0.1` that plays an OpenAI-compatible endpoint, for
//! tests of sift's OpenAI-compatible backend (`sift_runtime::llm::openai`) and of the `sift model chat` command: each connection gets
//! the next scripted [`Reply`], and every request is recorded. Standard library only; nothing
//! here reaches beyond this machine.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One scripted answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `200` event stream, written as these HTTP chunks, one after the other with `gap`
    /// between them, then ended as `then` says.
    Stream {
        /// The chunks' text (SSE lines, cut anywhere).
        chunks: Vec<String>,
        /// The pause before each chunk.
        gap: Duration,
        /// How the stream ends.
        then: StreamEnd,
    },
    /// A complete answer with this status, extra headers and body.
    Status {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// Read the request, then send nothing for this long, then close.
    Stall(Duration),
}

/// How a [`Reply::Stream`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Properly (the terminating empty chunk).
    Finish,
    /// The connection is closed without the terminating chunk.
    Cut,
    /// Nothing more is sent for this long, then the connection closes.
    Stall(Duration),
}

impl Reply {
    /// A stream of these SSE events (`data: …` each), ended by `data: [DONE]`, one HTTP chunk
    /// per event.
    pub fn events(events: &[Value]) -> Reply {
        let mut chunks: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        chunks.push("data: [DONE]\n\n".into());
        Reply::Stream { chunks, gap: Duration::ZERO, then: StreamEnd::Finish }
    }

    /// An OpenAI-style streamed answer: a role chunk, one chunk per text piece, a chunk with
    /// `finish_reason: "stop"`, a usage chunk, `[DONE]`.
    pub fn text(pieces: &[&str]) -> Reply {
        Reply::events(&text_events(pieces, 11))
    }

    /// An OpenAI-style streamed turn that calls tools: `(id, name, arguments JSON)` each,
    /// then `finish_reason: "tool_calls"`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fixture",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut events = vec![chunk(json!({"role": "assistant", "content": null}), Value::Null)];
        for (i, (id, name, args)) in calls.iter().enumerate() {
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": args}}]}),
                Value::Null,
            ));
        }
        events.push(chunk(json!({}), json!("tool_calls")));
        Reply::events(&events)
    }

    /// An error status with a JSON error body (`{"error": {"message": …}}`).
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": message}}).to_string(),
        }
    }

    /// Adds a header (to a [`Reply::Status`]).
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// The events of an OpenAI-style streamed text answer (see [`Reply::text`]), with
/// `prompt_tokens` in its usage chunk.
pub fn text_events(pieces: &[&str], prompt_tokens: u32) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fixture",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    events.extend(pieces.iter().map(|p| chunk(json!({"content": p}), Value::Null)));
    events.push(chunk(json!({}), json!("stop")));
    events.push(json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": pieces.len(),
                  "total_tokens": prompt_tokens as usize + pieces.len()}}));
    events
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// `POST` and so on.
    pub method: String,
    /// The path (`/v1/chat/completions`).
    pub path: String,
    /// The headers, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Recorded {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// The server; it stops (and closes its connections soon after) when dropped.
#[derive(Debug)]
pub struct FakeServer {
    port: u16,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    /// Starts a server on a free port of `127.0.0.1` that answers requests with `replies` in
    /// order (a request with none left gets a 500).
    pub fn start(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let replies: Arc<Mutex<VecDeque<Reply>>> =
            Arc::new(Mutex::new(replies.into_iter().collect()));
        let (rec, halt) = (recorded.clone(), stop.clone());
        std::thread::Builder::new().name("fake-openai".into()).spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let reply = replies.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                        let (rec, halt) = (rec.clone(), halt.clone());
                        std::thread::spawn(move || serve(stream, reply, &rec, &halt));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        })?;
        Ok(FakeServer { port, recorded, stop })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The base URL to configure (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Sleeps `d` unless the server stops first.
fn pause(d: Duration, halt: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !halt.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn serve(
    stream: TcpStream,
    reply: Option<Reply>,
    recorded: &Mutex<Vec<Recorded>>,
    halt: &AtomicBool,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let Some(request) = read_request(&mut reader) else { return };
    recorded.lock().unwrap_or_else(|e| e.into_inner()).push(request);
    let mut out = stream;
    let reply = reply.unwrap_or_else(|| Reply::error(500, "the fixture has no reply left"));
    let _ = write_reply(&mut out, reply, halt);
    let _ = out.flush();
    let _ = out.shutdown(std::net::Shutdown::Both);
}

fn write_reply(out: &mut TcpStream, reply: Reply, halt: &AtomicBool) -> std::io::Result<()> {
    match reply {
        Reply::Status { status, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} Fixture\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            out.write_all(format!("{head}\r\n{body}").as_bytes())
        }
        Reply::Stall(d) => {
            pause(d, halt);
            Ok(())
        }
        Reply::Stream { chunks, gap, then } => {
            out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            )?;
            out.flush()?;
            for chunk in chunks {
                pause(gap, halt);
                out.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())?;
                out.flush()?;
            }
            match then {
                StreamEnd::Finish => out.write_all(b"0\r\n\r\n"),
                StreamEnd::Cut => Ok(()),
                StreamEnd::Stall(d) => {
                    pause(d, halt);
                    Ok(())
                }
            }
        }
    }
}

pub(crate) fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
}
