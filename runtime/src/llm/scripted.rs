//! A scripted [`LanguageModel`] for tests of its callers (the agent loop, the CLI): it plays back
//! a queue of turns written in advance, one per request, and records every request it received.
//!
//! It behaves like a real backend where callers can tell the difference: text arrives in pieces
//! through `on_text`, stop sequences are cut with [`StopMatcher`] (never shown, even when split
//! across pieces), `max_tokens` counts pieces, the [`Cancel`] token is checked before each piece,
//! and a prompt larger than the context window is refused. A piece stands for a token: a turn
//! written with [`ScriptedTurn::text`] is cut into words (each word keeps the whitespace before
//! it), one with [`ScriptedTurn::pieces`] is played exactly as given.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{
    Cancel, ChatRequest, ChatResponse, FinishReason, LanguageModel, LlmError, Message,
    ModelDescription, Role, StopMatcher, TokenCount, ToolCall, Usage,
};

/// One scripted assistant turn: text pieces, then tool calls (or a failure).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptedTurn {
    /// The text, piece by piece (a piece counts as one token).
    pub pieces: Vec<String>,
    /// The tools called after the text (sent only when generation was not cut short).
    pub tool_calls: Vec<ToolCall>,
    /// Makes the turn fail with [`LlmError::Runtime`] carrying this message, after its pieces.
    pub fail: Option<String>,
}

impl ScriptedTurn {
    /// A turn whose text is played word by word.
    pub fn text(text: &str) -> Self {
        Self { pieces: split_words(text), ..Self::default() }
    }

    /// A turn played in exactly these pieces.
    pub fn pieces<S: Into<String>>(pieces: impl IntoIterator<Item = S>) -> Self {
        Self { pieces: pieces.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// Adds a tool call (`arguments` is JSON text, sent as written, malformed or not). An empty
    /// `id` is replaced by `call_N` when played.
    pub fn tool_call(mut self, id: &str, name: &str, arguments: &str) -> Self {
        self.tool_calls.push(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        });
        self
    }

    /// Makes the turn fail after its pieces.
    pub fn failing(mut self, message: &str) -> Self {
        self.fail = Some(message.to_owned());
        self
    }
}

/// Cuts text into words, each keeping the whitespace before it.
fn split_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    for c in text.chars() {
        if c.is_whitespace() && in_word {
            out.push(std::mem::take(&mut current));
            in_word = false;
        } else if !c.is_whitespace() {
            in_word = true;
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A [`LanguageModel`] that plays back [`ScriptedTurn`]s, one per [`LanguageModel::chat`] call,
/// in order; a call with no turn left fails with a message saying so.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<ChatRequest>>,
    context_window: usize,
    calls: Mutex<usize>,
}

impl ScriptedModel {
    /// A model that plays these turns (context window: 8192 tokens).
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        Self {
            turns: Mutex::new(turns.into_iter().collect()),
            context_window: 8192,
            ..Self::default()
        }
    }

    /// Sets the context window (prompts estimated larger are refused with
    /// [`LlmError::ContextOverflow`]).
    pub fn with_context_window(mut self, tokens: usize) -> Self {
        self.context_window = tokens;
        self
    }

    /// Queues another turn.
    pub fn push(&self, turn: ScriptedTurn) {
        lock(&self.turns).push_back(turn);
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }

    /// How many turns are left to play.
    pub fn remaining(&self) -> usize {
        lock(&self.turns).len()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide its own failure behind ours.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LanguageModel for ScriptedModel {
    fn describe(&self) -> ModelDescription {
        ModelDescription {
            backend: "scripted".into(),
            name: "scripted".into(),
            device: "none".into(),
            context_window: self.context_window,
        }
    }

    fn count_tokens(&self, text: &str) -> TokenCount {
        TokenCount::estimate(text)
    }

    fn chat(
        &self,
        request: &ChatRequest,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError> {
        lock(&self.requests).push(request.clone());
        let call = {
            let mut calls = lock(&self.calls);
            *calls += 1;
            *calls
        };
        let prompt = request.estimated_prompt_tokens();
        if prompt > self.context_window {
            return Err(LlmError::ContextOverflow { prompt, window: self.context_window });
        }
        let Some(turn) = lock(&self.turns).pop_front() else {
            return Err(LlmError::Runtime(format!(
                "the scripted model has no turn left for request {call}"
            )));
        };
        let mut matcher = StopMatcher::new(&request.params.stop);
        let mut text = String::new();
        let mut generated = 0u32;
        let mut finish = None;
        for piece in &turn.pieces {
            if cancel.is_cancelled() {
                finish = Some(FinishReason::Cancelled);
                break;
            }
            if generated >= request.params.max_tokens {
                finish = Some(FinishReason::Length);
                break;
            }
            generated += 1;
            let released = matcher.push(piece);
            if !released.text.is_empty() {
                on_text(&released.text);
                text.push_str(&released.text);
            }
            if released.stopped {
                finish = Some(FinishReason::StopSequence);
                break;
            }
        }
        if finish.is_none() {
            let rest = matcher.finish();
            if !rest.is_empty() {
                on_text(&rest);
                text.push_str(&rest);
            }
            if let Some(message) = turn.fail {
                return Err(LlmError::Runtime(message));
            }
        }
        let tool_calls =
            if finish.is_none() { super::name_calls(turn.tool_calls) } else { Vec::new() };
        let finish = finish.unwrap_or(if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        Ok(ChatResponse {
            message: Message { tool_calls, ..Message::new(Role::Assistant, text) },
            finish,
            usage: Usage { prompt_tokens: prompt as u32, completion_tokens: generated },
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::{GenerationParams, ToolSpec};

    fn ask(text: &str) -> ChatRequest {
        ChatRequest { messages: vec![Message::user(text)], ..ChatRequest::default() }
    }

    fn run(model: &ScriptedModel, request: &ChatRequest) -> (Vec<String>, ChatResponse) {
        let mut seen = Vec::new();
        let response =
            model.chat(request, &Cancel::new(), &mut |t| seen.push(t.to_owned())).unwrap();
        (seen, response)
    }

    #[test]
    fn text_streams_word_by_word_and_the_whole_turn_comes_back() {
        let model = ScriptedModel::new([ScriptedTurn::text("the index is  in .sift")]);
        let (seen, response) = run(&model, &ask("where is the index?"));
        assert_eq!(seen, ["the", " index", " is", "  in", " .sift"]);
        assert_eq!(response.message.content, "the index is  in .sift");
        assert_eq!(response.message.role, Role::Assistant);
        assert_eq!(response.finish, FinishReason::Stop);
        assert_eq!(response.usage.completion_tokens, 5);
        assert!(response.usage.prompt_tokens > 0);
    }

    #[test]
    fn requests_are_recorded_in_order_and_turns_are_consumed() {
        let model = ScriptedModel::new([ScriptedTurn::text("one"), ScriptedTurn::text("two")]);
        let first = ask("first");
        let mut second = ask("second");
        second.params.temperature = 0.7;
        assert_eq!(run(&model, &first).1.message.content, "one");
        assert_eq!(run(&model, &second).1.message.content, "two");
        assert_eq!(model.requests(), vec![first, second]);
        assert_eq!(model.remaining(), 0);
        let err = model.chat(&ask("third"), &Cancel::new(), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("no turn left for request 3"), "{err}");
    }

    #[test]
    fn a_stop_sequence_split_across_pieces_is_never_shown() {
        let model =
            ScriptedModel::new([ScriptedTurn::pieces(["answer: 4", "2\n<", "/ans", "wer> tail"])
                .tool_call("", "search", "{}")]);
        let mut request = ask("q");
        request.params.stop = vec!["</answer>".into()];
        let (seen, response) = run(&model, &request);
        assert_eq!(seen.concat(), "answer: 42\n");
        assert!(seen.iter().all(|p| !p.contains('<')), "{seen:?}");
        assert_eq!(response.message.content, "answer: 42\n");
        assert_eq!(response.finish, FinishReason::StopSequence);
        // Generation ended at the stop: the tool call after it was never made.
        assert!(response.message.tool_calls.is_empty());
    }

    #[test]
    fn max_tokens_cuts_the_turn_with_length() {
        let model = ScriptedModel::new([ScriptedTurn::text("a b c d e f")]);
        let mut request = ask("q");
        request.params = GenerationParams { max_tokens: 3, ..GenerationParams::default() };
        let (seen, response) = run(&model, &request);
        assert_eq!(seen.concat(), "a b c");
        assert_eq!(response.finish, FinishReason::Length);
        assert_eq!(response.usage.completion_tokens, 3);
    }

    #[test]
    fn cancelling_mid_turn_returns_the_text_so_far() {
        let model = ScriptedModel::new([ScriptedTurn::text("one two three four")]);
        let cancel = Cancel::new();
        let mut seen = String::new();
        let response = model
            .chat(&ask("q"), &cancel, &mut |t| {
                seen.push_str(t);
                if seen.contains("two") {
                    cancel.cancel();
                }
            })
            .unwrap();
        assert_eq!(response.finish, FinishReason::Cancelled);
        assert_eq!(response.message.content, "one two");
    }

    #[test]
    fn tool_calls_come_back_as_written_and_are_checked_by_the_caller() {
        let tool = ToolSpec {
            name: "search".into(),
            description: "search the code".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}},
                "required": ["query"]}),
        };
        let model = ScriptedModel::new([ScriptedTurn::text("let me look")
            .tool_call("", "search", r#"{"query": "chunk"}"#)
            .tool_call("c9", "search", r#"{"query": "#)]);
        let request = ChatRequest { tools: vec![tool.clone()], ..ask("q") };
        let (_, response) = run(&model, &request);
        assert_eq!(response.finish, FinishReason::ToolCalls);
        let calls = &response.message.tool_calls;
        assert_eq!(calls[0].id, "call_0");
        assert_eq!(calls[0].checked(std::slice::from_ref(&tool)).unwrap()["query"], "chunk");
        assert_eq!(calls[1].id, "c9");
        let err = calls[1].checked(&[tool]).unwrap_err();
        assert!(err.reason.contains("not valid JSON"), "{}", err.reason);
    }

    #[test]
    fn a_failing_turn_streams_its_text_then_errors() {
        let model = ScriptedModel::new([ScriptedTurn::text("partial").failing("server went away")]);
        let mut seen = String::new();
        let err = model.chat(&ask("q"), &Cancel::new(), &mut |t| seen.push_str(t)).unwrap_err();
        assert_eq!(seen, "partial");
        assert!(matches!(err, LlmError::Runtime(m) if m == "server went away"));
    }

    #[test]
    fn a_prompt_over_the_context_window_is_refused_before_any_turn_is_used() {
        let model = ScriptedModel::new([ScriptedTurn::text("never")]).with_context_window(10);
        let err = model.chat(&ask(&"word ".repeat(40)), &Cancel::new(), &mut |_| {}).unwrap_err();
        assert!(matches!(err, LlmError::ContextOverflow { window: 10, .. }), "{err}");
        assert_eq!(model.remaining(), 1);
        assert_eq!(model.describe().context_window, 10);
    }
}
