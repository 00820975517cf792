//! `sift lsp`: the language server, over stdio.
//!
//! Transport: sift reads the client's bytes itself ([`framing`]) and hands only well-formed
//! JSON-RPC messages to tower-lsp-server through an in-memory pipe; malformed frames are answered
//! here with a JSON-RPC error and the stream re-synchronises. Everything written to stdout goes
//! through one channel as whole frames, so the library's output and sift's error responses never
//! interleave mid-frame.

mod agent;
pub mod backend;
mod commands;
pub mod diagnostics;
pub mod documents;
mod edits;
pub mod framing;
mod guard;
mod lifecycle;
mod memory;
pub mod position;
pub mod protocol;
pub mod review;
mod search;
mod test_hooks;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::{LspService, Server};

use framing::{FrameReader, Incoming, encode, error_response};

/// Frames declaring more than this are refused.
pub const MAX_FRAME: usize = 64 << 20;

/// How the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `exit` after `shutdown`, or the client closed the stream after `shutdown`.
    Clean,
    /// `exit` without `shutdown`, or the stream closed without either.
    Abrupt,
}

/// Serves one client over `input`/`output` until `exit` or the end of input.
pub async fn serve<I, O>(input: I, output: O) -> Ending
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (service, socket) = LspService::build(backend::Backend::new)
        .custom_method(protocol::SEARCH_METHOD, backend::Backend::sift_search)
        .custom_method(protocol::STATS_METHOD, backend::Backend::sift_stats)
        .custom_method(agent::METHOD, backend::Backend::sift_agent)
        .finish();
    let (mut to_library, library_in) = tokio::io::duplex(1 << 20);
    let (library_out, from_library) = tokio::io::duplex(1 << 20);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();

    // One writer owns stdout.
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(frame) = out_rx.recv().await {
            if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });

    // The library's frames, re-framed whole onto the writer.
    let forward_tx = out_tx.clone();
    let forwarder = tokio::spawn(async move {
        let mut frames = FrameReader::new(from_library, MAX_FRAME);
        while let Ok(Some(item)) = frames.next().await {
            if let Incoming::Message(message) = item {
                let _ = forward_tx.send(encode(&message));
            }
        }
    });

    // The client's bytes: checked here, passed on when well-formed, answered when not.
    let shutdown_seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = shutdown_seen.clone();
    let reader = tokio::spawn(async move {
        let mut frames = FrameReader::new(input, MAX_FRAME);
        loop {
            match frames.next().await {
                Ok(Some(Incoming::Message(mut message))) => {
                    let method =
                        message.get("method").and_then(|m| m.as_str()).unwrap_or("").to_string();
                    if method == "shutdown" {
                        seen.store(true, std::sync::atomic::Ordering::SeqCst);
                        // Emacs' eglot sends `"params": null`; the library wants none.
                        if let Some(obj) = message.as_object_mut() {
                            obj.remove("params");
                        }
                    }
                    let is_exit = method == "exit";
                    if to_library.write_all(&encode(&message)).await.is_err() {
                        break;
                    }
                    if is_exit {
                        break;
                    }
                }
                Ok(Some(Incoming::Malformed { id, code, message })) => {
                    tracing::warn!("malformed message from the client: {message}");
                    let _ = out_tx.send(encode(&error_response(id, code, &message)));
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Dropping our end tells the library the input has ended.
        drop(to_library);
    });

    Server::new(library_in, library_out, socket).serve(service).await;
    reader.abort();
    let _ = forwarder.await;
    let _ = writer.await;
    if shutdown_seen.load(std::sync::atomic::Ordering::SeqCst) {
        Ending::Clean
    } else {
        Ending::Abrupt
    }
}
