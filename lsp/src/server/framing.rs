//! Robust LSP framing over a raw byte stream.
//!
//! The LSP base protocol frames every JSON-RPC message as a header section
//! (`Content-Length: N\r\n`, an optional `Content-Type: ...\r\n`, then a blank
//! line) followed by exactly `N` bytes of UTF-8 JSON. tower-lsp's own read loop
//! gives up at the first frame it cannot decode, so sift reads the client's
//! stdin through a [`FrameReader`] first: it validates every frame, hands only
//! well-formed JSON-RPC messages on ([`Incoming::Message`], to be re-[`encode`]d
//! for the LSP library), reports everything else as [`Incoming::Malformed`]
//! (to be answered with [`error_response`]) and re-synchronises on the next
//! frame header, so the client's next valid request is still answered.
//!
//! # Recovery rules
//!
//! * Header names are matched case-insensitively; `Content-Type` and any other
//!   well-formed header (`token: value`) are accepted and ignored. Lines may
//!   end in `\r\n` or a bare `\n`, and blank lines between frames are skipped.
//! * Any broken frame (garbage line, missing/invalid/conflicting
//!   `Content-Length`, header section over [`MAX_HEADER_LEN`] bytes, frame
//!   over `max_len`, body that is not UTF-8 JSON, frame truncated by the end
//!   of the stream) is reported once, then the reader *re-synchronises*: it
//!   discards bytes up to the next case-insensitive `Content-Length:` and
//!   parses a frame from there.
//! * The scan restarts one byte after the `Content-Length` header the broken
//!   frame was using (or one byte after the frame start when it had none).
//!   The broken frame's body is therefore scanned too: when a declared length
//!   was too long and swallowed (part of) the next frame, that frame's header
//!   is found inside the body and the frame is not lost. A declared length
//!   that was too short leaves the tail of the JSON in front of the next
//!   header, where it is skipped as garbage.
//! * While a body is still arriving, the reader does not wait for the full
//!   declared length if the bytes already received contain a line shaped
//!   like a frame header (`Content-Length: <digits>` followed by a raw line
//!   break): no valid JSON text can contain one (a raw line break cannot
//!   occur inside a JSON string, and the header name cannot occur outside
//!   one), so the frame is reported at once and the next frame is answered
//!   without waiting for more input.
//! * A body that is valid JSON but not an acceptable JSON-RPC message (a
//!   batch, a non-object, a missing `"jsonrpc": "2.0"`, no string `method` and
//!   no well-formed response, an `id` that is not a string, an integer or
//!   null) is consumed whole and reported with [`INVALID_REQUEST`] and, where
//!   the object had a usable `id`, that id. Messages that pass are exactly
//!   those tower-lsp can deserialize, so its loop never sees a bad one.
//!
//! A broken body that happens to contain the text `Content-Length:` inside a
//! JSON string (e.g. a `didOpen` of a file mentioning it) can make the
//! re-synchronisation stop there first; that costs an extra `Malformed`
//! report, never a lost frame.
//!
//! Memory is bounded by `max_len` plus [`MAX_HEADER_LEN`] plus one read
//! chunk: a declared length over `max_len` is refused before its body is
//! read, and re-synchronisation keeps only a few bytes of the skipped input.

use std::io;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

/// JSON-RPC 2.0 "Parse error": the frame or its body could not be decoded.
pub const PARSE_ERROR: i64 = -32700;

/// JSON-RPC 2.0 "Invalid Request": valid JSON, but not an acceptable message.
pub const INVALID_REQUEST: i64 = -32600;

/// Longest header section accepted, blank line included; a longer one is
/// treated as garbage.
pub const MAX_HEADER_LEN: usize = 8 * 1024;

/// The header name the re-synchronisation scans for (compared in ASCII lower case).
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// Bytes requested from the underlying reader per read.
const READ_CHUNK: usize = 64 * 1024;

/// Above this capacity the buffer is shrunk back once mostly empty, so one
/// large frame does not pin its memory for the rest of the session.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// One item decoded from the client's byte stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A well-formed message: a JSON object (valid UTF-8 JSON).
    Message(Value),
    /// A malformed frame, to be answered with a JSON-RPC error response when `id` is known or
    /// always with id null for parse errors (per JSON-RPC 2.0: parse error -32700, invalid request -32600).
    Malformed {
        /// The request id to answer, [`Value::Null`] when unknown.
        id: Value,
        /// The JSON-RPC error code: [`PARSE_ERROR`] or [`INVALID_REQUEST`].
        code: i64,
        /// A human-readable description of what was wrong.
        message: String,
    },
}

/// Reads LSP frames (`Content-Length: N\r\n` headers, optional `Content-Type`, blank line, N bytes of JSON).
///
/// See the [module documentation](self) for how malformed input is reported
/// and skipped. [`FrameReader::next`] is cancel-safe (e.g. in `tokio::select!`)
/// as long as the underlying reader's `read` is: dropping its future loses no
/// input.
pub struct FrameReader<R> {
    /// The client's raw byte stream.
    reader: R,
    /// Largest body accepted, in bytes.
    max_len: usize,
    /// Bytes read but not consumed yet are `buf[start..]`; the current frame
    /// (or the bytes being skipped) begins at `buf[start]`.
    buf: Vec<u8>,
    /// Consumed prefix of `buf`, compacted away before the next read.
    start: usize,
    /// While a body is arriving: offset (relative to `start`) before which no
    /// header-shaped line starts, so already received bytes are not rescanned.
    body_scanned: usize,
    /// A malformed frame was reported: skip to the next `Content-Length:` first.
    resync: bool,
    /// The underlying reader reported end of stream.
    eof: bool,
    /// Scratch space for reads.
    chunk: Box<[u8]>,
}

/// What the decoder made of the bytes currently buffered.
enum Step {
    /// An item to return.
    Item(Incoming),
    /// More input is needed (never returned once the stream has ended).
    NeedMore,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// `max_len`: frames declaring more bytes than this are refused (sift will pass 64 MiB).
    pub fn new(reader: R, max_len: usize) -> Self {
        Self {
            reader,
            max_len,
            buf: Vec::new(),
            start: 0,
            body_scanned: 0,
            resync: false,
            eof: false,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
        }
    }

    /// The next item; Ok(None) at a clean end of stream (a partial frame at EOF yields one Malformed first, then None).
    ///
    /// I/O errors of the underlying reader are returned as they are; the
    /// reader may be polled again afterwards.
    pub async fn next(&mut self) -> io::Result<Option<Incoming>> {
        loop {
            if self.resync {
                // Skip to the next `Content-Length:`, wherever it is.
                if let Some(pos) = find_ci(self.data(), CONTENT_LENGTH) {
                    self.consume(pos);
                    self.resync = false;
                } else if self.eof {
                    // The rest of the stream is garbage, already reported.
                    self.consume(self.data().len());
                    return Ok(None);
                } else {
                    // Keep a tail that may be the beginning of a split header name.
                    let keep = CONTENT_LENGTH.len() - 1;
                    self.consume(self.data().len().saturating_sub(keep));
                    self.fill().await?;
                    continue;
                }
            }

            // Blank lines between frames are tolerated silently.
            let blank = self.data().iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
            self.consume(blank);
            if self.data().is_empty() {
                if self.eof {
                    return Ok(None);
                }
                self.fill().await?;
                continue;
            }

            match self.step() {
                Step::Item(item) => return Ok(Some(item)),
                Step::NeedMore => self.fill().await?,
            }
        }
    }

    /// Decodes the frame starting at the beginning of the buffered data, if
    /// enough of it is there (or the stream has ended).
    fn step(&mut self) -> Step {
        let (body_start, content_length, cl_pos) = match parse_header(self.data(), self.max_len) {
            Header::Incomplete { resume } => {
                if self.eof {
                    let message = "truncated frame header at end of stream".to_owned();
                    return self.fail(resume, PARSE_ERROR, message);
                }
                return Step::NeedMore;
            }
            Header::Invalid { resume, code, message } => return self.fail(resume, code, message),
            Header::Complete { body_start, content_length, cl_pos } => {
                (body_start, content_length, cl_pos)
            }
        };
        // After a failure, rescan everything after the `Content-Length` in use.
        let resume = cl_pos + 1;

        // `content_length <= max_len`, but `max_len` may be anything.
        let Some(end) = body_start.checked_add(content_length) else {
            let message = format!("frame too large: Content-Length {content_length} overflows");
            return self.fail(resume, INVALID_REQUEST, message);
        };

        if self.data().len() < end {
            // Body incomplete. Give up early if it visibly runs into a header.
            let from = self.body_scanned.max(body_start);
            match find_header_line(self.data(), from) {
                Ok(_) => {
                    let message = format!(
                        "frame body is not valid JSON: a frame header starts inside its \
                         {content_length} declared bytes (Content-Length too large?)"
                    );
                    return self.fail(resume, PARSE_ERROR, message);
                }
                Err(scanned) => self.body_scanned = scanned,
            }
            if self.eof {
                let got = self.data().len() - body_start;
                let message = format!(
                    "truncated frame at end of stream: Content-Length {content_length}, \
                     only {got} body bytes received"
                );
                return self.fail(resume, PARSE_ERROR, message);
            }
            return Step::NeedMore;
        }

        match classify(&self.data()[body_start..end]) {
            Ok(value) => {
                self.consume(end);
                Step::Item(Incoming::Message(value))
            }
            // Undecodable body: maybe the length was wrong, rescan it.
            Err(Reject::Parse(message)) => self.fail(resume, PARSE_ERROR, message),
            // Valid JSON: the frame boundaries were right, consume it whole.
            Err(Reject::Invalid { id, message }) => {
                self.consume(end);
                Step::Item(Incoming::Malformed { id, code: INVALID_REQUEST, message })
            }
        }
    }

    /// Reports a broken frame: consumes `resume` bytes and re-synchronises.
    fn fail(&mut self, resume: usize, code: i64, message: String) -> Step {
        self.consume(resume.min(self.data().len()));
        self.resync = true;
        Step::Item(Incoming::Malformed { id: Value::Null, code, message })
    }

    /// The buffered, not yet consumed bytes.
    fn data(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Marks the first `n` buffered bytes as consumed.
    fn consume(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.start += n;
        self.body_scanned = 0;
        if self.start >= self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Reads one chunk from the underlying reader (sets `eof` at its end).
    async fn fill(&mut self) -> io::Result<()> {
        if self.eof {
            return Ok(());
        }
        // Compact first; what is left is at most a partial frame.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.capacity() > SHRINK_ABOVE && self.buf.len() < self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(READ_CHUNK));
        }
        let n = loop {
            match self.reader.read(&mut self.chunk).await {
                Ok(n) => break n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
        };
        if n == 0 {
            self.eof = true;
        } else {
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
        Ok(())
    }
}

/// Encodes one message as an LSP frame.
pub fn encode(message: &Value) -> Vec<u8> {
    // `Value`'s `Display` is its compact JSON serialization, which cannot fail.
    let body = message.to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// The JSON-RPC error response for a malformed frame (`{"jsonrpc":"2.0","id":...,"error":{"code":..,"message":..}}`).
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
}

// ---------------------------------------------------------------------------
// Header section

/// Result of parsing the header section at the start of the buffered data.
enum Header {
    /// No complete header section yet; `resume` is where to re-synchronise
    /// from if the stream ends now.
    Incomplete { resume: usize },
    /// Not a valid header section: report it and re-synchronise from `resume`.
    Invalid { resume: usize, code: i64, message: String },
    /// A valid header section.
    Complete {
        /// Offset of the first body byte (just past the blank line).
        body_start: usize,
        /// The declared body length, at most `max_len`.
        content_length: usize,
        /// Offset of the `Content-Length` header line.
        cl_pos: usize,
    },
}

/// One header line, as far as framing cares.
enum HeaderLine {
    /// `Content-Length`; `None` when the value does not fit in a `usize`.
    ContentLength(Option<usize>),
    /// Any other well-formed header (`Content-Type` included), ignored; also
    /// an incomplete line that can still become a well-formed header.
    Other,
}

/// Parses the header section at the start of `data` (which does not start
/// with a line break). Only the first [`MAX_HEADER_LEN`] bytes are examined.
fn parse_header(data: &[u8], max_len: usize) -> Header {
    let window = &data[..data.len().min(MAX_HEADER_LEN)];
    // The first `Content-Length` header: (line offset, value).
    let mut length: Option<(usize, Option<usize>)> = None;
    let mut pos = 0;
    loop {
        let first_cl = length.map(|(at, _)| at);
        let rest = &window[pos..];
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            // Partial line: refuse it now if it can no longer become a header.
            let partial = rest.strip_suffix(b"\r").unwrap_or(rest);
            let resume = resume_after(first_cl, pos, partial);
            if let Err(reason) = parse_header_line(partial, true) {
                return garbage(resume, &reason);
            }
            if data.len() >= MAX_HEADER_LEN {
                let reason = format!("header section longer than {MAX_HEADER_LEN} bytes");
                return garbage(resume, &reason);
            }
            return Header::Incomplete { resume };
        };
        let line_start = pos;
        let line = &rest[..newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        pos += newline + 1;
        let resume = resume_after(first_cl, line_start, line);

        if line.is_empty() {
            // End of the header section.
            return match length {
                None => Header::Invalid {
                    resume,
                    code: PARSE_ERROR,
                    message: "frame header has no Content-Length".to_owned(),
                },
                Some((cl_pos, Some(n))) if n <= max_len => {
                    Header::Complete { body_start: pos, content_length: n, cl_pos }
                }
                Some((_, n)) => {
                    let declared = n.map_or_else(|| "beyond usize".to_owned(), |n| n.to_string());
                    Header::Invalid {
                        resume,
                        code: INVALID_REQUEST,
                        message: format!(
                            "frame too large: Content-Length {declared} exceeds the limit \
                             of {max_len} bytes"
                        ),
                    }
                }
            };
        }

        match parse_header_line(line, false) {
            Err(reason) => return garbage(resume, &reason),
            Ok(HeaderLine::Other) => {}
            Ok(HeaderLine::ContentLength(value)) => match length {
                None => length = Some((line_start, value)),
                Some((_, first)) if first == value => {}
                Some(_) => {
                    return Header::Invalid {
                        resume,
                        code: PARSE_ERROR,
                        message: "frame header has conflicting Content-Length values".to_owned(),
                    };
                }
            },
        }
    }
}

/// Where to re-synchronise from when the header section fails at the line
/// starting at `line_start`: one byte after the frame's first `Content-Length`
/// header (`first_cl`, else this line if it is one), or after the frame start.
///
/// Nothing after that header is skipped, so a frame header glued onto a
/// broken one is still found, while the header itself is not reported twice.
fn resume_after(first_cl: Option<usize>, line_start: usize, line: &[u8]) -> usize {
    let is_cl_line = line
        .get(..CONTENT_LENGTH.len())
        .is_some_and(|name| name.eq_ignore_ascii_case(CONTENT_LENGTH));
    let first_cl = first_cl.or(is_cl_line.then_some(line_start));
    first_cl.unwrap_or(0) + 1
}

/// The report for a header section that is not one.
fn garbage(resume: usize, reason: &str) -> Header {
    Header::Invalid {
        resume,
        code: PARSE_ERROR,
        message: format!("skipped garbage instead of a frame header: {reason}"),
    }
}

/// Parses one header line (without its line break). With `partial`, the line
/// is still incomplete and is only refused if no continuation can make it a
/// valid header line.
fn parse_header_line(line: &[u8], partial: bool) -> Result<HeaderLine, String> {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        if partial && line.iter().all(|&b| is_token_byte(b)) {
            return Ok(HeaderLine::Other); // a header name still arriving
        }
        return Err(format!("expected `Name: value`, got {}", quoted(line)));
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
        return Err(format!("invalid header name {}", quoted(name)));
    }
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(HeaderLine::Other);
    }
    let digits = value.trim_ascii();
    if digits.is_empty() && partial {
        return Ok(HeaderLine::Other);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "invalid Content-Length value {} (expected a non-negative decimal integer)",
            quoted(value.trim_ascii())
        ));
    }
    if partial {
        return Ok(HeaderLine::Other);
    }
    let n = digits
        .iter()
        .try_fold(0usize, |n, &d| n.checked_mul(10)?.checked_add(usize::from(d - b'0')));
    Ok(HeaderLine::ContentLength(n))
}

/// HTTP token characters (RFC 9110), allowed in header names.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Shows (the start of) some raw bytes in a diagnostic message.
fn quoted(bytes: &[u8]) -> String {
    const SHOWN: usize = 40;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN)]);
    let more = if bytes.len() > SHOWN { "..." } else { "" };
    format!("{text:?}{more}")
}

// ---------------------------------------------------------------------------
// Scanning

/// Offset of the first ASCII-case-insensitive occurrence of `needle`
/// (given in lower case) in `haystack`.
fn find_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window.eq_ignore_ascii_case(needle))
}

/// Whether the bytes after a `Content-Length:` make it a header line.
enum Shape {
    /// `[ \t]* digits [ \t]* \r? \n`: a header line, impossible in JSON.
    Header,
    /// Not (or no longer possibly) a header line.
    Not,
    /// A prefix of a header line; more bytes are needed to tell.
    Maybe,
}

/// Classifies the bytes following a `Content-Length:` (see [`Shape`]).
fn header_shape(rest: &[u8]) -> Shape {
    // Longer than any sane header line: treat as not one.
    const LIMIT: usize = 64;
    // 0: leading blanks, 1: digits, 2: trailing blanks, 3: after `\r`.
    let mut state = 0;
    for &b in rest.iter().take(LIMIT) {
        state = match (state, b) {
            (0, b' ' | b'\t') => 0,
            (0 | 1, b'0'..=b'9') => 1,
            (1 | 2, b' ' | b'\t') => 2,
            (1 | 2, b'\r') => 3,
            (1..=3, b'\n') => return Shape::Header,
            _ => return Shape::Not,
        };
    }
    if rest.len() >= LIMIT { Shape::Not } else { Shape::Maybe }
}

/// Finds, at or after `from`, the first header-shaped `Content-Length` line in
/// `data`: `Ok(offset)`, or `Err(offset)` before which none can start (where
/// the next scan of the same, grown, data may begin).
fn find_header_line(data: &[u8], from: usize) -> Result<usize, usize> {
    let mut at = from.min(data.len());
    while let Some(found) = find_ci(&data[at..], CONTENT_LENGTH) {
        let pos = at + found;
        match header_shape(&data[pos + CONTENT_LENGTH.len()..]) {
            Shape::Header => return Ok(pos),
            Shape::Maybe => return Err(pos),
            Shape::Not => at = pos + 1,
        }
    }
    // A match may still straddle the end of the data.
    Err(data.len().saturating_sub(CONTENT_LENGTH.len() - 1).max(at))
}

// ---------------------------------------------------------------------------
// Body validation

/// Why a frame body was refused.
enum Reject {
    /// Not UTF-8 JSON at all ([`PARSE_ERROR`]).
    Parse(String),
    /// Valid JSON but not an acceptable message ([`INVALID_REQUEST`]); `id`
    /// is the request id to answer, or null.
    Invalid { id: Value, message: String },
}

/// Decodes and validates one frame body.
fn classify(body: &[u8]) -> Result<Value, Reject> {
    let text = std::str::from_utf8(body)
        .map_err(|err| Reject::Parse(format!("frame body is not valid UTF-8: {err}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|err| Reject::Parse(format!("frame body is not valid JSON: {err}")))?;
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(invalid(Value::Null, "batch requests are not supported")),
        other => {
            let message = format!("a message must be a JSON object, not {}", json_kind(other));
            return Err(invalid(Value::Null, &message));
        }
    };
    check_object(object)?;
    Ok(value)
}

/// Checks that a JSON object is a message tower-lsp accepts: a request or
/// notification (string `method`) or a response (`id` plus exactly one of
/// `result` and a well-formed `error`), with `"jsonrpc": "2.0"` and an id (if
/// any) that is a string, an `i64` or null.
fn check_object(object: &Map<String, Value>) -> Result<(), Reject> {
    let id = match object.get("id") {
        None => Value::Null,
        Some(id) if is_valid_id(id) => id.clone(),
        Some(_) => {
            let message = "invalid \"id\": expected a string, an integer or null";
            return Err(invalid(Value::Null, message));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let message = "missing or invalid \"jsonrpc\" member: expected \"2.0\"";
        return Err(invalid(id, message));
    }
    if object.get("method").is_some_and(Value::is_string) {
        return Ok(()); // a request or a notification
    }

    // Otherwise it must be a response.
    let has_result = object.contains_key("result");
    let error = object.get("error");
    if !has_result && error.is_none() {
        let message = if object.contains_key("method") {
            "\"method\" must be a string"
        } else {
            "missing \"method\": not a request, notification or response"
        };
        return Err(invalid(id, message));
    }
    if has_result && error.is_some() {
        let message = "a response must not have both \"result\" and \"error\"";
        return Err(invalid(id, message));
    }
    if !object.contains_key("id") {
        return Err(invalid(id, "a response must have an \"id\""));
    }
    if let Some(error) = error {
        let well_formed = error.get("code").is_some_and(|code| code.as_i64().is_some())
            && error.get("message").is_some_and(Value::is_string);
        if !well_formed {
            let message = "invalid \"error\": expected an object with an integer \"code\" \
                           and a string \"message\"";
            return Err(invalid(id, message));
        }
    }
    Ok(())
}

/// A JSON-RPC id sift (and tower-lsp) accepts: a string, an `i64` or null.
fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::Null | Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some(),
        _ => false,
    }
}

/// An [`Reject::Invalid`] with the given id and message.
fn invalid(id: Value, message: &str) -> Reject {
    Reject::Invalid { id, message: message.to_owned() }
}

/// The kind of a JSON value, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tokio::io::{AsyncWriteExt, ReadBuf};

    use super::*;

    const MAX: usize = 64 * 1024 * 1024;

    /// An in-memory reader that hands out at most `step` bytes per read.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self.step.min(buf.remaining()).min(self.data.len() - self.pos);
            let pos = self.pos;
            buf.put_slice(&self.data[pos..pos + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    /// A frame with the given body, declaring its true length.
    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    /// Reads everything, asserting termination.
    async fn read_all<R: AsyncRead + Unpin>(reader: R, max_len: usize) -> Vec<Incoming> {
        let mut reader = FrameReader::new(reader, max_len);
        let mut items = Vec::new();
        while let Some(item) = reader.next().await.expect("in-memory reads do not fail") {
            items.push(item);
            assert!(items.len() < 100_000, "reader does not terminate");
        }
        // Stays at end of stream.
        assert_eq!(reader.next().await.unwrap(), None);
        items
    }

    /// Items without their messages (which may say more or less depending on
    /// how much input was available when the frame was judged).
    fn shape(items: &[Incoming]) -> Vec<(Option<Value>, Value, i64)> {
        items
            .iter()
            .map(|item| match item {
                Incoming::Message(value) => (Some(value.clone()), Value::Null, 0),
                Incoming::Malformed { id, code, .. } => (None, id.clone(), *code),
            })
            .collect()
    }

    /// Reads `input` whole and in chunks of 1, 2, 3 and 7 bytes; all readings
    /// must agree. Returns the whole-input reading.
    async fn decode(input: &[u8], max_len: usize) -> Vec<Incoming> {
        let whole = read_all(input, max_len).await;
        for step in [1, 2, 3, 7] {
            let trickle = Trickle { data: input.to_vec(), pos: 0, step };
            let chunked = read_all(trickle, max_len).await;
            assert_eq!(shape(&chunked), shape(&whole), "chunks of {step} bytes");
        }
        whole
    }

    fn msg(value: Value) -> Incoming {
        Incoming::Message(value)
    }

    /// Asserts a malformed item with the given id and code whose message
    /// contains `needle`.
    #[track_caller]
    fn assert_malformed(item: &Incoming, want_id: Value, want_code: i64, needle: &str) {
        match item {
            Incoming::Malformed { id, code, message } => {
                assert_eq!((id, *code), (&want_id, want_code), "{message}");
                assert!(
                    message.to_lowercase().contains(&needle.to_lowercase()),
                    "{message:?} does not mention {needle:?}"
                );
            }
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    fn request(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/hover", "params": {"x": id}})
    }

    fn sentinel() -> Value {
        json!({"jsonrpc": "2.0", "id": 999, "method": "sentinel"})
    }

    #[tokio::test]
    async fn valid_frames_in_sequence() {
        let notification = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
        let response = json!({"jsonrpc": "2.0", "id": 3, "result": null});
        let unicode = json!({"jsonrpc": "2.0", "id": "ü", "method": "x", "params": ["héllo ✓ 🦀"]});
        let mut input = encode(&request(1));
        input.extend(encode(&notification));
        input.extend(encode(&response));
        input.extend(encode(&unicode));
        let items = decode(&input, MAX).await;
        assert_eq!(items, [msg(request(1)), msg(notification), msg(response), msg(unicode)]);
    }

    #[tokio::test]
    async fn header_names_are_case_insensitive_and_content_type_is_ignored() {
        let body = request(1).to_string();
        let n = body.len();
        let input = format!(
            "content-length: {n}\r\n\r\n{body}\
             CONTENT-LENGTH:{n}\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}\
             Content-Type: application/vscode-jsonrpc; charset=utf8\r\nCoNtEnT-LeNgTh: \t{n} \r\n\r\n{body}"
        );
        let items = decode(input.as_bytes(), MAX).await;
        assert_eq!(items, vec![msg(request(1)); 3]);
    }

    #[tokio::test]
    async fn bare_newlines_and_blank_lines_between_frames_are_tolerated() {
        let body = request(1).to_string();
        let n = body.len();
        let input = format!(
            "Content-Length: {n}\n\n{body}\r\n\r\n\n\
             Content-Type: x\nContent-Length: {n}\r\n\n{body}\n"
        );
        let items = decode(input.as_bytes(), MAX).await;
        assert_eq!(items, vec![msg(request(1)); 2]);
    }

    #[tokio::test]
    async fn frames_split_across_a_duplex_pipe() {
        let mut input = encode(&request(1));
        input.extend(encode(&request(2)));
        let (mut client, server) = tokio::io::duplex(16);
        let writer = tokio::spawn(async move {
            for piece in input.chunks(5) {
                client.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let items = read_all(server, MAX).await;
        writer.await.unwrap();
        assert_eq!(items, [msg(request(1)), msg(request(2))]);
    }

    #[tokio::test]
    async fn garbage_line_before_a_header_is_skipped_once() {
        let mut input = b"hello\r\n".to_vec();
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "garbage");
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn random_garbage_bytes_are_skipped_once() {
        let mut rng = XorShift(0x1234_5678);
        let mut input: Vec<u8> = (0..5000).map(|_| rng.byte()).collect();
        // Glued straight onto the header, no line break in between.
        input.extend(encode(&request(1)));
        input.extend(encode(&request(2)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 3, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "garbage");
        assert_eq!(items[1..], [msg(request(1)), msg(request(2))]);
    }

    #[tokio::test]
    async fn long_garbage_is_skipped_in_bounded_memory() {
        // 4 MiB without a header, fed in small reads.
        let mut data = vec![b'x'; 4 * 1024 * 1024];
        data.extend(encode(&request(1)));
        let trickle = Trickle { data, pos: 0, step: 4096 };
        let mut reader = FrameReader::new(trickle, MAX);
        let first = reader.next().await.unwrap().unwrap();
        assert_malformed(&first, Value::Null, PARSE_ERROR, "garbage");
        assert_eq!(reader.next().await.unwrap(), Some(msg(request(1))));
        assert!(reader.buf.capacity() <= MAX_HEADER_LEN + READ_CHUNK);
        assert_eq!(reader.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn missing_content_length_is_a_parse_error() {
        let mut input = b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\"}".to_vec();
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "no Content-Length");
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn non_numeric_content_length_is_a_parse_error() {
        let mut input = b"Content-Length: twelve\r\n\r\n{\"a\":1}".to_vec();
        input.extend(encode(&request(1)));
        input.extend(b"Content-Type: x\r\nContent-Length: 0x10\r\n\r\n{}");
        input.extend(encode(&request(2)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 4, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "invalid Content-Length");
        assert_eq!(items[1], msg(request(1)));
        assert_malformed(&items[2], Value::Null, PARSE_ERROR, "invalid Content-Length");
        assert_eq!(items[3], msg(request(2)));
    }

    #[tokio::test]
    async fn negative_content_length_is_a_parse_error() {
        let mut input = b"Content-Length: -5\r\n\r\n{}".to_vec();
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "\"-5\"");
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn conflicting_content_lengths_are_a_parse_error() {
        let body = request(1).to_string();
        let n = body.len();
        let input = format!(
            "Content-Length: {n}\r\nContent-Length: {n}\r\n\r\n{body}Content-Length: 3\r\nContent-Length: {n}\r\n\r\n{body}"
        );
        let items = decode(input.as_bytes(), MAX).await;
        // Equal duplicates are fine; conflicting ones are reported, and the
        // second header is then parsed as a frame of its own.
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(items[0], msg(request(1)));
        assert_malformed(&items[1], Value::Null, PARSE_ERROR, "conflicting");
        assert_eq!(items[2], msg(request(1)));
    }

    #[tokio::test]
    async fn header_glued_onto_a_broken_header_is_found() {
        let body = request(1).to_string();
        let n = body.len();
        // The real header is glued onto a junk header value; the section then
        // ends without a header `Content-Length` of its own.
        let input =
            format!("Content-Type: junkContent-Length: {n}\r\nContent-Type: x\r\n\r\n{body}");
        let items = decode(input.as_bytes(), MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "no Content-Length");
        assert_eq!(items[1], msg(request(1)));
        // Glued onto a garbage line after a valid `Content-Length`.
        let input = format!("Content-Length: 5\r\nnot a header Content-Length: {n}\r\n\r\n{body}");
        let items = decode(input.as_bytes(), MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "garbage");
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn oversized_frame_is_refused_and_skipped() {
        let big =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":"{}"}}"#, "a".repeat(500));
        let mut input = frame(&big);
        input.extend(b"Content-Length: 123456789012345678901234567890\r\n\r\n{}");
        input.extend(encode(&request(2)));
        let items = decode(&input, 100).await;
        assert_eq!(items.len(), 3, "{items:?}");
        assert_malformed(&items[0], Value::Null, INVALID_REQUEST, "too large");
        assert_malformed(&items[0], Value::Null, INVALID_REQUEST, "limit of 100 bytes");
        assert_malformed(&items[1], Value::Null, INVALID_REQUEST, "too large");
        assert_eq!(items[2], msg(request(2)));
    }

    #[tokio::test]
    async fn oversized_frame_is_refused_before_its_body_arrives() {
        // The declared body never comes: the refusal must not wait for it.
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(b"Content-Length: 1000000000\r\n\r\n{\"jsonrpc\":").await.unwrap();
        let mut reader = FrameReader::new(server, 1024 * 1024);
        let first = tokio::time::timeout(Duration::from_secs(5), reader.next())
            .await
            .expect("refused without waiting")
            .unwrap()
            .unwrap();
        assert_malformed(&first, Value::Null, INVALID_REQUEST, "limit of 1048576 bytes");
        client.write_all(&encode(&request(1))).await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(5), reader.next()).await;
        assert_eq!(second.unwrap().unwrap(), Some(msg(request(1))));
        assert!(reader.buf.capacity() <= MAX_HEADER_LEN + READ_CHUNK);
    }

    #[tokio::test]
    async fn invalid_utf8_body_is_a_parse_error() {
        let mut input = b"Content-Length: 6\r\n\r\n\"\xff\xfe\"  ".to_vec();
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "UTF-8");
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn invalid_json_body_is_a_parse_error() {
        let mut input = frame(r#"{"jsonrpc":"2.0","id":1,"method":}"#);
        input.extend(frame(""));
        input.extend(frame("{\"a\":1} x"));
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 4, "{items:?}");
        for item in &items[..3] {
            assert_malformed(item, Value::Null, PARSE_ERROR, "not valid JSON");
        }
        assert_eq!(items[3], msg(request(1)));
    }

    #[tokio::test]
    async fn too_long_content_length_does_not_lose_the_next_frame() {
        let body = request(1).to_string();
        let next = encode(&request(2));
        // Swallows part of the next header, all of it, or the next frame and
        // more (then the stream ends inside the declared body).
        for extra in [5, 30, next.len() - 3, next.len() + 40] {
            let mut input =
                format!("Content-Length: {}\r\n\r\n{body}", body.len() + extra).into_bytes();
            input.extend(&next);
            input.extend(encode(&request(3)));
            let items = decode(&input, MAX).await;
            assert_eq!(items.len(), 3, "extra {extra}: {items:?}");
            assert_malformed(&items[0], Value::Null, PARSE_ERROR, "");
            assert_eq!(items[1..], [msg(request(2)), msg(request(3))], "extra {extra}");
        }
    }

    #[tokio::test]
    async fn too_long_content_length_recovers_without_waiting_for_more_input() {
        let body = request(1).to_string();
        let (mut client, server) = tokio::io::duplex(4096);
        let mut input = format!("Content-Length: {}\r\n\r\n{body}", body.len() + 1000).into_bytes();
        input.extend(encode(&request(2)));
        client.write_all(&input).await.unwrap();
        // The client keeps the stream open and waits for its answer.
        let mut reader = FrameReader::new(server, MAX);
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(5), reader.next())
                .await
                .expect("answered without more input")
                .unwrap()
        };
        let first = next().await.unwrap();
        assert_malformed(&first, Value::Null, PARSE_ERROR, "frame header starts inside");
        assert_eq!(next().await, Some(msg(request(2))));
        drop(client);
        assert_eq!(next().await, None);
    }

    #[tokio::test]
    async fn too_short_content_length_leaves_garbage_that_is_skipped() {
        let body = request(1).to_string();
        let mut input = format!("Content-Length: {}\r\n\r\n{body}", body.len() - 7).into_bytes();
        input.extend(encode(&request(2)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "not valid JSON");
        assert_eq!(items[1], msg(request(2)));
    }

    #[tokio::test]
    async fn batch_is_an_invalid_request() {
        let mut input = frame(r#"[{"jsonrpc":"2.0","id":1,"method":"a"}]"#);
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_malformed(
            &items[0],
            Value::Null,
            INVALID_REQUEST,
            "batch requests are not supported",
        );
        assert_eq!(items[1], msg(request(1)));
    }

    #[tokio::test]
    async fn non_object_json_is_an_invalid_request() {
        for body in ["42", "\"hi\"", "null", "true", "  1.5 "] {
            let mut input = frame(body);
            input.extend(encode(&request(1)));
            let items = decode(&input, MAX).await;
            assert_eq!(items.len(), 2, "{body}: {items:?}");
            assert_malformed(&items[0], Value::Null, INVALID_REQUEST, "JSON object");
            assert_eq!(items[1], msg(request(1)));
        }
    }

    #[tokio::test]
    async fn invalid_objects_are_answered_with_their_id() {
        let cases = [
            (json!({"id": 7, "method": "a"}), json!(7), "jsonrpc"),
            (json!({"jsonrpc": "1.0", "id": "s", "method": "a"}), json!("s"), "jsonrpc"),
            (json!({"jsonrpc": 2.0, "id": 1, "method": "a"}), json!(1), "jsonrpc"),
            (json!({"jsonrpc": "2.0", "id": 8, "method": 5}), json!(8), "method"),
            (json!({"jsonrpc": "2.0", "id": 9}), json!(9), "method"),
            (json!({"jsonrpc": "2.0"}), Value::Null, "method"),
            (json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "a"}), Value::Null, "id"),
            (json!({"jsonrpc": "2.0", "id": 1.5, "method": "a"}), Value::Null, "id"),
            (json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "a"}), Value::Null, "id"),
            (json!({"jsonrpc": "2.0", "result": 1}), Value::Null, "id"),
            (
                json!({"jsonrpc": "2.0", "id": 2, "result": 1, "error": {"code": 1, "message": "m"}}),
                json!(2),
                "both",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": "x", "message": "m"}}),
                json!(3),
                "error",
            ),
            (json!({"jsonrpc": "2.0", "id": 4, "error": "boom"}), json!(4), "error"),
        ];
        for (object, id, needle) in cases {
            let mut input = encode(&object);
            input.extend(encode(&request(1)));
            let items = decode(&input, MAX).await;
            assert_eq!(items.len(), 2, "{object}: {items:?}");
            assert_malformed(&items[0], id, INVALID_REQUEST, needle);
            assert_eq!(items[1], msg(request(1)), "{object}");
        }
    }

    #[tokio::test]
    async fn well_formed_messages_are_accepted() {
        let messages = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
            json!({"jsonrpc": "2.0", "id": "abc", "method": "shutdown"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}),
            json!({"jsonrpc": "2.0", "method": "exit"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "odd-but-valid"}),
            json!({"jsonrpc": "2.0", "id": 5, "result": {"applied": true}}),
            json!({"jsonrpc": "2.0", "id": 6, "result": null}),
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "no", "data": [1]}}),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse"}}),
            json!({"jsonrpc": "2.0", "id": 8, "method": 3, "result": 1}),
        ];
        let input: Vec<u8> = messages.iter().flat_map(encode).collect();
        let items = decode(&input, MAX).await;
        let expected: Vec<_> = messages.into_iter().map(msg).collect();
        assert_eq!(items, expected);
    }

    #[tokio::test]
    async fn partial_frame_at_end_of_stream_yields_one_malformed_then_none() {
        let whole = encode(&request(1));
        for cut in [3, 15, 18, 20, whole.len() - 1] {
            let mut input = encode(&request(2));
            input.extend(&whole[..cut]);
            let items = decode(&input, MAX).await;
            assert_eq!(items.len(), 2, "cut at {cut}: {items:?}");
            assert_eq!(items[0], msg(request(2)));
            assert_malformed(&items[1], Value::Null, PARSE_ERROR, "end of stream");
        }
        // Garbage without a line break at the end.
        let items = decode(b"hello", MAX).await;
        assert_eq!(items.len(), 1, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "end of stream");
    }

    #[tokio::test]
    async fn clean_end_of_stream_returns_none() {
        assert_eq!(decode(b"", MAX).await, []);
        assert_eq!(decode(b"\r\n\n", MAX).await, []);
        let mut input = encode(&request(1));
        input.extend(b"\r\n");
        assert_eq!(decode(&input, MAX).await, [msg(request(1))]);
    }

    #[tokio::test]
    async fn overlong_header_section_is_garbage() {
        // Well-formed but endless headers.
        let mut input = b"Content-Length: 2\r\n".to_vec();
        while input.len() <= MAX_HEADER_LEN {
            input.extend(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        input.extend(b"\r\n{}");
        input.extend(encode(&request(1)));
        // One endless line.
        input.extend(b"Content-Type: ");
        input.extend(vec![b'a'; 3 * MAX_HEADER_LEN]);
        input.extend(encode(&request(2)));
        let items = decode(&input, MAX).await;
        assert_eq!(items.len(), 4, "{items:?}");
        assert_malformed(&items[0], Value::Null, PARSE_ERROR, "longer than 8192 bytes");
        assert_eq!(items[1], msg(request(1)));
        assert_malformed(&items[2], Value::Null, PARSE_ERROR, "longer than 8192 bytes");
        assert_eq!(items[3], msg(request(2)));
    }

    #[tokio::test]
    async fn content_length_inside_a_valid_body_is_just_text() {
        let open = json!({
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {"text": "Content-Length: 12\r\n\r\nContent-Length: 3\n"},
        });
        let mut input = encode(&open);
        input.extend(encode(&request(1)));
        let items = decode(&input, MAX).await;
        assert_eq!(items, [msg(open), msg(request(1))]);
    }

    #[tokio::test]
    async fn encode_round_trips() {
        let value = json!({"jsonrpc": "2.0", "id": 1, "result": {"s": "ü\n\"✓\""}});
        let framed = encode(&value);
        let text = String::from_utf8(framed.clone()).unwrap();
        let body = value.to_string();
        assert_eq!(text, format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        assert_eq!(decode(&framed, MAX).await, [msg(value)]);
    }

    #[test]
    fn error_response_shape() {
        assert_eq!(
            error_response(json!(4), INVALID_REQUEST, "bad"),
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32600, "message": "bad"}})
        );
        assert_eq!(error_response(Value::Null, PARSE_ERROR, "x")["id"], Value::Null);
    }

    /// A tiny deterministic PRNG (xorshift64).
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn byte(&mut self) -> u8 {
            self.next().to_le_bytes()[0]
        }
    }

    /// Applies one random edit to `data`.
    fn mutate(data: &mut Vec<u8>, rng: &mut XorShift) {
        // Bytes that matter to framing and JSON, inserted more often.
        const INTERESTING: &[u8] = b"\r\n:{}\"0123456789 ";
        if data.is_empty() {
            data.push(rng.byte());
            return;
        }
        let at = rng.below(data.len());
        match rng.below(6) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = rng.byte(),
            2 => data.insert(at, rng.byte()),
            3 => data.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            4 => {
                data.remove(at);
            }
            _ => {
                // Delete or duplicate a short range.
                let end = (at + 1 + rng.below(24)).min(data.len());
                if rng.below(2) == 0 {
                    data.drain(at..end);
                } else {
                    let copy = data[at..end].to_vec();
                    data.splice(at..at, copy);
                }
            }
        }
    }

    #[tokio::test]
    async fn mutated_streams_always_recover_the_sentinel() {
        let open = json!({
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": "file:///a.rs", "text": "// Content-Length: 12\r\n\r\nfn main() {}\n"}},
        });
        let mut base = encode(&request(1));
        base.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        base.extend(encode(&open));
        base.extend(encode(&json!({"jsonrpc": "2.0", "id": 2, "result": ["héllo ✓"]})));
        base.extend(encode(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})));
        let sentinel_frame = encode(&sentinel());

        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut malformed = 0;
        for case in 0..500 {
            let mut input = base.clone();
            for _ in 0..1 + rng.below(4) {
                mutate(&mut input, &mut rng);
            }
            input.extend(&sentinel_frame);
            // Small limits now and then, to exercise oversized frames too.
            let max_len = if case % 5 == 0 { 64 } else { MAX };
            let trickle = Trickle { data: input.clone(), pos: 0, step: 1 + rng.below(17) };
            let items = read_all(trickle, max_len).await;
            malformed +=
                items.iter().filter(|item| matches!(item, Incoming::Malformed { .. })).count();
            assert!(
                items.contains(&msg(sentinel())),
                "case {case}: sentinel lost in {:?}\n{items:#?}",
                String::from_utf8_lossy(&input)
            );
        }
        // The mutations did break frames.
        assert!(malformed > 100, "only {malformed} malformed frames");
    }

    #[tokio::test]
    async fn random_streams_always_recover_the_sentinel() {
        let mut rng = XorShift(42);
        for case in 0..200 {
            let len = rng.below(600);
            let mut input: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
            // Sprinkle in framing fragments.
            for _ in 0..rng.below(4) {
                let at = rng.below(input.len() + 1);
                let fragment: &[u8] = match rng.below(3) {
                    0 => b"Content-Length: 10\r\n",
                    1 => b"\r\n\r\n",
                    _ => b"content-length:99999999999999999999\n\n",
                };
                input.splice(at..at, fragment.iter().copied());
            }
            input.extend(encode(&sentinel()));
            let items = decode(&input, 1000).await;
            assert!(items.contains(&msg(sentinel())), "case {case}: {items:?}");
        }
    }
}
