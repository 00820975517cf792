//! Language models behind one trait, [`LanguageModel`]: chat messages in, streamed text out,
//! tool calls parsed and checked against each tool's JSON schema, stop sequences, sampling
//! settings, prompt cancellation, and token counting against a context window so callers can
//! budget.
//!
//! The trait is synchronous on purpose: the local backend is CPU/GPU-bound and the HTTP one
//! blocks on a socket; async callers (the language server) run it under `spawn_blocking` and
//! cancel it through a [`Cancel`] token, which every backend checks between tokens.

pub mod config;
pub mod install;
pub mod onnx;
pub mod openai;
pub mod scripted;
pub mod stop;
pub mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

pub use stop::StopMatcher;
pub use tools::{ToolError, validate_arguments};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or the program acting for them).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call, answering [`Message::tool_call_id`].
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (may be empty for an assistant message that only calls tools).
    pub content: String,
    /// The tools an assistant message called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`]: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message with text only.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// The answer to tool call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(id.into()), ..Self::new(Role::Tool, content) }
    }
}

/// A tool the model may call: a name, what it does, and a JSON schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON schema (an `object` schema) for its arguments.
    pub parameters: serde_json::Value,
}

/// A tool call the model made, as the model wrote it. Use [`ToolCall::checked`] before running
/// it: the arguments may be malformed JSON or break the tool's schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id (backends make one up when the model gives none).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

impl ToolCall {
    /// Parses the arguments and checks them against the named tool's schema. The error, turned
    /// into a message with [`ToolError::to_message`], goes back to the model so it can retry.
    pub fn checked(&self, tools: &[ToolSpec]) -> Result<serde_json::Value, ToolError> {
        tools::check_call(self, tools)
    }
}

/// Gives the calls the model left without an id one (`call_0`, `call_1`…, by position).
pub(crate) fn name_calls(calls: impl IntoIterator<Item = ToolCall>) -> Vec<ToolCall> {
    calls
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            if c.id.is_empty() {
                c.id = format!("call_{i}");
            }
            c
        })
        .collect()
}

/// How to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationParams {
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// 0 means greedy.
    pub temperature: f32,
    /// Nucleus sampling: keep the smallest set of tokens whose probability reaches this.
    pub top_p: f32,
    /// A seed for reproducible sampling.
    pub seed: Option<u64>,
    /// Generation stops before the first of these strings (which is not returned).
    pub stop: Vec<String>,
}

impl Default for GenerationParams {
    fn default() -> Self {
        Self { max_tokens: 512, temperature: 0.0, top_p: 1.0, seed: None, stop: Vec::new() }
    }
}

/// One request: the conversation so far, the tools on offer, and how to generate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call (empty: none).
    pub tools: Vec<ToolSpec>,
    /// How to generate.
    pub params: GenerationParams,
}

impl ChatRequest {
    /// The prompt's size estimated with [`TokenCount::estimate`]: messages (with a few tokens
    /// of overhead each), the tool calls they carry, and the tool specs. For budgeting where
    /// the backend reports no exact count.
    pub fn estimated_prompt_tokens(&self) -> usize {
        let est = |t: &str| TokenCount::estimate(t).tokens;
        let messages: usize = self
            .messages
            .iter()
            .map(|m| {
                est(&m.content)
                    + 4
                    + m.tool_calls.iter().map(|c| est(&c.name) + est(&c.arguments)).sum::<usize>()
            })
            .sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| est(&t.name) + est(&t.description) + est(&t.parameters.to_string()))
            .sum();
        messages + tools
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// A stop sequence was reached.
    StopSequence,
    /// `max_tokens` was reached.
    Length,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// [`Cancel::cancel`] was called; the text so far is returned.
    Cancelled,
}

/// Tokens used by one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
}

/// A finished turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant's message: its text (stop sequence excluded) and tool calls.
    pub message: Message,
    /// Why generation ended.
    pub finish: FinishReason,
    /// Token counts (from the backend when it reports them).
    pub usage: Usage,
}

/// A token count: exact when the backend has the model's tokenizer, else an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCount {
    /// The count.
    pub tokens: usize,
    /// False when estimated (about four characters a token).
    pub exact: bool,
}

impl TokenCount {
    /// The estimate used when no tokenizer is at hand.
    pub fn estimate(text: &str) -> Self {
        Self { tokens: text.chars().count().div_ceil(4), exact: false }
    }
}

/// What a model is and where it runs, for `sift model info` and budgeting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelDescription {
    /// `onnx`, `openai` or `scripted`.
    pub backend: String,
    /// The model's name.
    pub name: String,
    /// What runs it (`cpu`, `cuda`, or the endpoint's URL).
    pub device: String,
    /// The context window in tokens (prompt and generation together).
    pub context_window: usize,
}

/// A cancellation token shared between the caller and a running generation. Backends check it
/// between tokens (and while waiting on the network), so generation stops promptly.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the generation to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Why a model could not answer.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The `[model]` configuration is invalid or incomplete.
    #[error("model configuration: {0}")]
    Config(String),
    /// The model (or its runtime) failed to load.
    #[error("cannot load the model: {0}")]
    Load(String),
    /// The model failed while running.
    #[error("the model failed: {0}")]
    Runtime(String),
    /// The endpoint answered with an error status (after retries where they apply).
    #[error("{url} answered {status}: {message}")]
    Http {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The body's error message, or the body.
        message: String,
    },
    /// The endpoint could not be reached or timed out.
    #[error("cannot reach {url}: {reason}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The endpoint's answer broke the protocol (a malformed stream, say).
    #[error("malformed answer from the model: {0}")]
    Protocol(String),
    /// The prompt does not fit the context window.
    #[error("the prompt has {prompt} tokens; the model's context window is {window}")]
    ContextOverflow {
        /// Tokens in the prompt.
        prompt: usize,
        /// The window.
        window: usize,
    },
}

/// A chat model: the local ONNX decoder, an OpenAI-compatible endpoint, or a scripted fake.
pub trait LanguageModel: Send + Sync {
    /// What it is and where it runs.
    fn describe(&self) -> ModelDescription;

    /// Counts the tokens of `text` (exact where the backend has the tokenizer).
    fn count_tokens(&self, text: &str) -> TokenCount;

    /// Runs one assistant turn. `on_text` receives the text as it is generated (never any part
    /// of a stop sequence); the response holds the whole turn. Cancelling returns what was
    /// generated so far with [`FinishReason::Cancelled`].
    fn chat(
        &self,
        request: &ChatRequest,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError>;

    /// What was redacted from the messages before they left the machine, oldest first, for
    /// the user to see (a remote endpoint's; nothing for local backends, which send nothing).
    fn redactions(&self) -> Vec<crate::redact::Redaction> {
        Vec::new()
    }
}
