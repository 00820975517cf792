//! MCP's stdio framing (one JSON-RPC message per line), checked before the SDK sees it.
//!
//! The SDK reads lines without a length limit and drops a line that is not JSON without a
//! word. Here a line longer than [`MAX_LINE`] is discarded up to its newline and a line that is
//! not UTF-8 JSON is answered with a JSON-RPC parse error (`id: null`), so the client learns
//! what went wrong and the server reads on. Everything written to stdout goes through one
//! writer as whole lines, so the SDK's output and these answers never interleave.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Lines longer than this are refused (a request is a few hundred bytes; a diff for `review`
/// can be large, hence megabytes).
pub const MAX_LINE: usize = 16 << 20;

/// What one line of input is.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A JSON value: passed on to the SDK.
    Message(Vec<u8>),
    /// Blank: skipped.
    Blank,
    /// Not a JSON value: answered with this error.
    Malformed(String),
}

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Line {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Line::Malformed("the message is not UTF-8".into());
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Line::Message(line.to_vec()),
        // Batches were removed from MCP (2025-06-18); the SDK answers other shapes itself.
        Ok(serde_json::Value::Array(_)) => {
            Line::Malformed("JSON-RPC batches are not supported".into())
        }
        Ok(_) => Line::Message(line.to_vec()),
        Err(e) => Line::Malformed(format!("the message is not JSON: {e}")),
    }
}

/// The JSON-RPC answer to a line that could not be parsed.
pub fn parse_error(message: &str) -> Vec<u8> {
    let mut out = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": message},
    }))
    .unwrap_or_default();
    out.push(b'\n');
    out
}

/// Copies the client's lines from `input` to `to_sdk`, answering the bad ones on `out`; ends
/// (dropping `to_sdk`, which tells the SDK the input ended) when `input` ends.
pub async fn read_client<I, W>(input: I, mut to_sdk: W, out: mpsc::UnboundedSender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line).await {
            Ok(Read::End) => break,
            Ok(Read::TooLong) => {
                tracing::warn!("mcp: a message longer than {MAX_LINE} bytes was discarded");
                let _ = out.send(parse_error(&format!(
                    "the message is longer than {MAX_LINE} bytes and was discarded"
                )));
            }
            Ok(Read::Line) => match classify(&line) {
                Line::Blank => {}
                Line::Message(mut message) => {
                    message.push(b'\n');
                    if to_sdk.write_all(&message).await.is_err() || to_sdk.flush().await.is_err() {
                        break;
                    }
                }
                Line::Malformed(why) => {
                    tracing::warn!("mcp: malformed message from the client: {why}");
                    let _ = out.send(parse_error(&why));
                }
            },
            Err(e) => {
                tracing::warn!("mcp: cannot read stdin: {e}");
                break;
            }
        }
    }
}

/// Copies the SDK's output to `out` line by line.
pub async fn read_sdk<R: AsyncRead + Unpin>(from_sdk: R, out: mpsc::UnboundedSender<Vec<u8>>) {
    let mut from_sdk = BufReader::new(from_sdk);
    loop {
        let mut line = Vec::new();
        match from_sdk.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if out.send(line).is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes whole lines from `lines` to `output` until every sender is gone.
pub async fn write_lines<O: AsyncWrite + Unpin>(
    mut output: O,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

enum Read {
    Line,
    TooLong,
    End,
}

/// Reads one line into `line` (without its newline), discarding the rest of a line longer
/// than [`MAX_LINE`].
async fn read_line<R: AsyncBufReadExt + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Read> {
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if too_long {
                Read::TooLong
            } else if line.is_empty() {
                Read::End
            } else {
                Read::Line
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let ended = done > chunk.len();
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        input.consume(done);
        if ended {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart() {
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","method":"x"}"#), Line::Message(_)));
        assert!(matches!(classify(b"{\"a\":1}\r"), Line::Message(m) if m == b"{\"a\":1}"));
        assert_eq!(classify(b"  \r"), Line::Blank);
        assert!(matches!(classify(b"{not json"), Line::Malformed(m) if m.contains("not JSON")));
        assert!(matches!(classify(b"\xff\xfe{}"), Line::Malformed(m) if m.contains("UTF-8")));
        assert!(matches!(classify(b"[{}]"), Line::Malformed(m) if m.contains("batches")));
    }

    #[tokio::test]
    async fn an_overlong_line_is_refused_and_the_next_one_read() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"id\":1}\n");
        let (to_sdk, mut sdk_side) = tokio::io::duplex(1 << 10);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_client(std::io::Cursor::new(input), to_sdk, tx));
        let mut got = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut sdk_side, &mut got).await.unwrap();
        reader.await.unwrap();
        assert_eq!(got, "{\"id\":1}\n");
        let answer = String::from_utf8(rx.recv().await.unwrap()).unwrap();
        assert!(answer.contains("-32700") && answer.contains("longer than"), "{answer}");
    }
}
