//! The coding agent: a loop over a [`LanguageModel`] with tools over sift's own index
//! ([`tools`]), edits held in memory until the user accepts them ([`changes`]), the project's
//! checkers and sift's reviewer in the loop ([`checkers`], the `review` tool), rules files
//! ([`rules`]), commands in the sandbox (the `run` tool; leaving it only with the user's
//! approval, [`approval`]), budgets, cancellation, compaction by self-summary, a resumable transcript
//! ([`transcript`]) and best-of-N ([`best`]).
//!
//! One run ([`run`]):
//!
//! 1. The conversation starts with the *pinned* part: the system prompt (how to work, the
//!    rules files that apply) and the task. It is never summarised.
//! 2. Each step sends the conversation and the tool specs to the model. A turn without tool
//!    calls ends the run: its text is the answer. Each tool call is checked against its
//!    schema (a malformed or unknown call goes back to the model as an error it can correct)
//!    and run; its bounded answer joins the conversation.
//! 3. Before a step whose prompt would pass [`Options::compact_at`] of the context window, the
//!    model summarises the conversation so far; the loop goes on from the pinned part, the
//!    rules applied since, the summary and the pending diff. The transcript keeps everything.
//! 4. The run stops at its budget (steps, tokens, wall-clock time) or when cancelled, between
//!    tokens or inside a tool, keeping the pending change for the user to see.
//!
//! Architecture invariant: nothing here writes the workspace. The pending change leaves memory
//! only through [`changes::Changes::apply`], which front ends call when the user accepts
//! (`--apply` on the CLI, a confirmed `workspace/applyEdit` in the editor). Paths and
//! commands go through the one sandbox policy; the model has no tool that changes it.

use std::time::Instant;

use serde::Serialize;
use sift_runtime::llm::{
    Cancel, ChatRequest, FinishReason, GenerationParams, LanguageModel, Message, Role, ToolCall,
    ToolSpec,
};

pub mod approval;
pub mod best;
pub mod changes;
pub mod checkers;
pub mod launch;
pub mod lessons;
pub mod matcher;
pub mod retention;
pub mod rules;
pub mod setup;
pub mod tools;
pub mod transcript;

pub use changes::{Changes, FileChange};
pub use setup::{PolicyError, Setup, SetupError};
pub use tools::{Session, ToolOutput};
pub use transcript::{STORE_ENTRIES, Transcript};

pub use crate::config::Budget;

/// How a run goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Its budget.
    pub budget: Budget,
    /// Sampling for each turn (best-of-N varies the seed and temperature).
    pub params: GenerationParams,
    /// Compact when the prompt passes this share of the model's context window.
    pub compact_at: f32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            budget: Budget::default(),
            params: GenerationParams { max_tokens: 2048, ..GenerationParams::default() },
            compact_at: 0.75,
        }
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "stop", content = "detail")]
pub enum Stop {
    /// The model answered without calling tools: it is done.
    Done,
    /// The step budget ran out.
    MaxSteps,
    /// The token budget ran out.
    MaxTokens,
    /// The time budget ran out.
    MaxDuration,
    /// The user cancelled.
    Cancelled,
    /// The model failed (after the backend's own retries).
    ModelFailed(String),
}

impl Stop {
    /// Its name, as the transcript and the protocol write it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Stop::Done => "done",
            Stop::MaxSteps => "max_steps",
            Stop::MaxTokens => "max_tokens",
            Stop::MaxDuration => "max_duration",
            Stop::Cancelled => "cancelled",
            Stop::ModelFailed(_) => "model_failed",
        }
    }

    /// A sentence for the user.
    pub fn describe(&self, budget: &Budget) -> String {
        match self {
            Stop::Done => "done".into(),
            Stop::MaxSteps => format!("stopped: the step budget ({}) ran out", budget.max_steps),
            Stop::MaxTokens => {
                format!("stopped: the token budget ({}) ran out", budget.max_tokens)
            }
            Stop::MaxDuration => {
                format!("stopped: the time budget ({} s) ran out", budget.max_duration.as_secs())
            }
            Stop::Cancelled => "cancelled".into(),
            Stop::ModelFailed(why) => format!("stopped: the model failed: {why}"),
        }
    }
}

/// What happens during a run, for front ends to show as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A model turn starts (1-based).
    Step(usize),
    /// Text the model generates, piece by piece.
    Text(String),
    /// A tool is called: its name and a one-line summary of its arguments.
    ToolCall {
        /// The tool.
        name: String,
        /// Its arguments, shortened.
        summary: String,
    },
    /// A tool answered: the first line of its answer.
    ToolResult {
        /// The tool.
        name: String,
        /// Whether it failed.
        error: bool,
        /// The answer's first line.
        first_line: String,
    },
    /// The conversation was compacted.
    Compacted {
        /// Estimated prompt tokens before.
        before: usize,
        /// After.
        after: usize,
    },
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Why it stopped.
    pub stop: Stop,
    /// The model's last text (its answer when done).
    pub answer: String,
    /// The pending change.
    pub changes: Changes,
    /// Model turns taken.
    pub steps: usize,
    /// Tokens used (prompt + completion, summed).
    pub tokens: u64,
    /// Compactions done.
    pub compactions: usize,
    /// The rules files that applied.
    pub rules: Vec<String>,
    /// Tool calls that failed (bad arguments or a failed tool).
    pub tool_errors: usize,
    /// The transcript's id, when one was written.
    pub transcript: Option<String>,
    /// Memory notes the agent proposed (`remember`): for the user to accept or not.
    pub notes: Vec<crate::memory::Note>,
}

/// How the agent works, for the model. Short: tool descriptions carry the rest.
pub const SYSTEM_PROMPT: &str = "You are sift's coding agent, working in the user's repository \
through tools. Find your way with search, grep, outline and read before changing anything. \
Change files only with edit, create and delete: your changes are shown to the user as a diff \
and written only if they accept. After changing code, run check (and review for risky \
changes) and fix what they report on your lines; run the project's tests with run when it \
has them. Keep changes minimal and in the project's style. When you are done, reply without \
calling a tool: say what you changed and why, or answer the question, citing paths and \
lines.";

/// The instruction for compaction.
const SUMMARY_PROMPT: &str = "Summarise this work session so that you can continue it from \
the summary alone: the goal, what you found (paths, symbols, line numbers, facts), what you \
changed and why, what failed, and what remains to do. Be concise and specific. Do not call \
tools.";

/// A run's state besides the session: the conversation and the counters.
struct Conversation {
    pinned: Vec<Message>,
    history: Vec<Message>,
}

impl Conversation {
    fn request(&self, tools: &[ToolSpec], params: &GenerationParams) -> ChatRequest {
        let mut messages = self.pinned.clone();
        messages.extend(self.history.iter().cloned());
        ChatRequest { messages, tools: tools.to_vec(), params: params.clone() }
    }
}

/// The system prompt with the rules that apply.
fn system_message(session: &Session<'_>) -> Message {
    let rules = session.rules.applied_text();
    if rules.is_empty() {
        Message::system(SYSTEM_PROMPT)
    } else {
        Message::system(format!("{SYSTEM_PROMPT}\n\n{rules}"))
    }
}

/// A task for [`run`].
#[derive(Debug, Clone)]
pub struct Task<'a> {
    /// What the user asked.
    pub text: &'a str,
    /// An earlier run's conversation to continue (its pending change is already in the
    /// session); empty for a new run.
    pub resumed: Vec<Message>,
    /// Budget and sampling.
    pub options: &'a Options,
    /// Where every message is written as it happens.
    pub transcript: Option<&'a Transcript>,
}

/// Runs the agent on `task` (see the module doc). Events go to `on_event` as they happen.
pub fn run(
    session: &mut Session<'_>,
    model: &dyn LanguageModel,
    task: Task<'_>,
    cancel: &Cancel,
    on_event: &mut dyn FnMut(Event),
) -> Outcome {
    let Task { text: task, resumed, options, transcript } = task;
    let started = Instant::now();
    let specs = session.specs();
    let window = model.describe().context_window.max(1);
    session.task = task.to_owned();
    // The project's fresh notes about the task go with it, pinned (never summarised away).
    let notes = session.notes_for(task);
    let opening = if notes.is_empty() {
        task.to_owned()
    } else {
        format!(
            "{task}\n\nFrom the project's memory notes (checked against the current code):\n{notes}"
        )
    };
    let mut convo = Conversation {
        pinned: vec![system_message(session), Message::user(opening)],
        history: resumed,
    };
    let log = |record: transcript::Record| {
        if let Some(t) = transcript {
            t.write(&record);
        }
    };
    if convo.history.is_empty() {
        log(transcript::Record::Start {
            task: task.to_owned(),
            model: model.describe().name,
            time: transcript::now(),
        });
    }
    let mut outcome = Outcome {
        stop: Stop::Done,
        answer: String::new(),
        changes: Changes::new(),
        steps: 0,
        tokens: 0,
        compactions: 0,
        rules: Vec::new(),
        tool_errors: 0,
        transcript: transcript.map(|t| t.id().to_owned()),
        notes: Vec::new(),
    };
    // A run killed between the model's step and the answers to its calls: the calls that got
    // no answer run now (those that did are never run again), before the next step.
    let last = convo.history.iter().rposition(|m| m.role == Role::Assistant);
    if let Some(last) =
        last.filter(|&i| convo.history[i + 1..].iter().all(|m| m.role == Role::Tool))
    {
        let answered: Vec<String> =
            convo.history[last + 1..].iter().filter_map(|m| m.tool_call_id.clone()).collect();
        let unanswered: Vec<ToolCall> = convo.history[last]
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .cloned()
            .collect();
        if !unanswered.is_empty() {
            answer_calls(
                session,
                &specs,
                &unanswered,
                &mut convo,
                &mut outcome,
                cancel,
                &log,
                on_event,
            );
        }
    }
    let budget = &options.budget;
    let stop = loop {
        if cancel.is_cancelled() {
            break Stop::Cancelled;
        }
        if outcome.steps >= budget.max_steps {
            break Stop::MaxSteps;
        }
        if outcome.tokens >= budget.max_tokens {
            break Stop::MaxTokens;
        }
        if started.elapsed() >= budget.max_duration {
            break Stop::MaxDuration;
        }
        // Compact before a prompt that would crowd the window.
        let mut request = convo.request(&specs, &options.params);
        let mut estimate = request.estimated_prompt_tokens();
        let room = window.saturating_sub(options.params.max_tokens as usize);
        // (A conversation of the pinned part and a turn or two has nothing to summarise.)
        let crowded = estimate as f32 > options.compact_at * window as f32 || estimate > room;
        if crowded && convo.history.len() >= 2 {
            match compact(session, model, &mut convo, options, cancel) {
                Ok((summary, tokens)) => {
                    outcome.compactions += 1;
                    outcome.tokens += tokens;
                    request = convo.request(&specs, &options.params);
                    let after = request.estimated_prompt_tokens();
                    log(transcript::Record::Compacted {
                        summary,
                        tokens_before: estimate,
                        tokens_after: after,
                    });
                    on_event(Event::Compacted { before: estimate, after });
                    estimate = after;
                }
                Err(stop) => break stop,
            }
        }
        outcome.steps += 1;
        on_event(Event::Step(outcome.steps));
        let response = {
            let mut on_text = |t: &str| on_event(Event::Text(t.to_owned()));
            model.chat(&request, cancel, &mut on_text)
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => break Stop::ModelFailed(e.to_string()),
        };
        let used = u64::from(response.usage.prompt_tokens + response.usage.completion_tokens);
        let tokens_before = outcome.tokens;
        outcome.tokens += if used > 0 {
            used
        } else {
            estimate as u64 + model.count_tokens(&response.message.content).tokens as u64
        };
        let message = response.message;
        outcome.answer = message.content.clone();
        convo.history.push(message.clone());
        log(transcript::Record::Message {
            message: message.clone(),
            tokens: Some(outcome.tokens - tokens_before),
            changes: None,
        });
        if response.finish == FinishReason::Cancelled {
            break Stop::Cancelled;
        }
        if message.tool_calls.is_empty() {
            if response.finish == FinishReason::Length && message.content.trim().is_empty() {
                // Cut off before saying anything: ask again rather than end with nothing.
                let nudge = Message::user("Your reply was cut off. Continue, more briefly.");
                convo.history.push(nudge.clone());
                log(transcript::Record::message(nudge));
                continue;
            }
            break Stop::Done;
        }
        answer_calls(
            session,
            &specs,
            &message.tool_calls,
            &mut convo,
            &mut outcome,
            cancel,
            &log,
            on_event,
        );
    };
    log(transcript::Record::End { stop: stop.as_str().to_owned() });
    outcome.stop = stop;
    outcome.changes = session.changes.clone();
    outcome.rules = session.rules.applied();
    outcome.notes = session.proposed.clone();
    outcome
}

/// Runs the model's tool `calls`, in order, each answer joining the conversation and the
/// transcript (with the pending change when the call changed it, on the same line).
#[allow(clippy::too_many_arguments)]
fn answer_calls(
    session: &mut Session<'_>,
    specs: &[ToolSpec],
    calls: &[ToolCall],
    convo: &mut Conversation,
    outcome: &mut Outcome,
    cancel: &Cancel,
    log: &dyn Fn(transcript::Record),
    on_event: &mut dyn FnMut(Event),
) {
    for call in calls {
        if cancel.is_cancelled() {
            // Every call gets an answer, so a resumed conversation stays well formed.
            let reply = Message::tool_result(&call.id, "error: cancelled by the user");
            convo.history.push(reply.clone());
            log(transcript::Record::message(reply));
            continue;
        }
        let before = session.changes.clone();
        let reply = match call.checked(specs) {
            Err(err) => {
                outcome.tool_errors += 1;
                on_event(Event::ToolCall {
                    name: call.name.clone(),
                    summary: shorten(&call.arguments, 80),
                });
                on_event(Event::ToolResult {
                    name: call.name.clone(),
                    error: true,
                    first_line: err.reason.clone(),
                });
                err.to_message()
            }
            Ok(args) => {
                on_event(Event::ToolCall {
                    name: call.name.clone(),
                    summary: summarize_args(&args),
                });
                let out = session.call(&call.name, &args, cancel);
                if out.error {
                    outcome.tool_errors += 1;
                }
                on_event(Event::ToolResult {
                    name: call.name.clone(),
                    error: out.error,
                    first_line: out.text.lines().next().unwrap_or("").to_owned(),
                });
                Message::tool_result(&call.id, out.text)
            }
        };
        convo.history.push(reply.clone());
        let changes = (session.changes != before).then(|| session.changes.clone());
        log(transcript::Record::Message { message: reply, tokens: None, changes });
    }
}

/// Replaces the conversation after the pinned part by the model's summary of it (plus the
/// pending diff). Returns the summary message and the tokens the summary cost.
fn compact(
    session: &Session<'_>,
    model: &dyn LanguageModel,
    convo: &mut Conversation,
    options: &Options,
    cancel: &Cancel,
) -> Result<(Message, u64), Stop> {
    let mut text = String::new();
    for m in &convo.history {
        let who = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "you",
            Role::Tool => "tool result",
        };
        text.push_str(&format!("[{who}] {}\n", m.content));
        for call in &m.tool_calls {
            text.push_str(&format!("[you called {}] {}\n", call.name, call.arguments));
        }
    }
    // Keep the material under the window (the summary's own 1024 tokens and the prompt
    // aside, at about three characters a token): the most recent part matters most.
    let window = model.describe().context_window;
    let keep_chars = window.saturating_sub(1024 + 256) * 3;
    if text.len() > keep_chars {
        let mut cut = text.len() - keep_chars;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = format!("[earlier part left out]\n{}", &text[cut..]);
    }
    let task = convo.pinned.get(1).map(|m| m.content.clone()).unwrap_or_default();
    let request = ChatRequest {
        messages: vec![
            Message::system(SUMMARY_PROMPT),
            Message::user(format!("The task: {task}\n\nThe session so far:\n{text}")),
        ],
        tools: Vec::new(),
        params: GenerationParams { max_tokens: 1024, ..options.params.clone() },
    };
    let response = model
        .chat(&request, cancel, &mut |_| {})
        .map_err(|e| Stop::ModelFailed(format!("while summarising the conversation: {e}")))?;
    if response.finish == FinishReason::Cancelled {
        return Err(Stop::Cancelled);
    }
    let diff = session.changes.unified_diff();
    let diff = if diff.is_empty() {
        "You have not changed any file yet.".to_owned()
    } else if diff.len() > 6000 {
        format!("Your pending change (cut):\n{}\n[…]", &diff[..floor_boundary(&diff, 6000)])
    } else {
        format!("Your pending change:\n{diff}")
    };
    let summary = Message::user(format!(
        "The conversation so far was summarised to fit the context window (the user keeps the \
         full transcript). Your summary:\n{}\n\n{diff}\n\nContinue the task.",
        response.message.content.trim()
    ));
    // The rules applied since the start are pinned from now on.
    convo.pinned[0] = system_message(session);
    convo.history = vec![summary.clone()];
    let used = u64::from(response.usage.prompt_tokens + response.usage.completion_tokens);
    Ok((summary, used))
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}

/// A tool call's arguments in one short line (`path`, `query` or `pattern` first).
fn summarize_args(args: &serde_json::Value) -> String {
    let Some(map) = args.as_object() else { return String::new() };
    let mut parts = Vec::new();
    for key in ["path", "query", "pattern", "command", "start_line", "end_line"] {
        if let Some(v) = map.get(key) {
            let v = match v {
                serde_json::Value::String(s) => shorten(s, 60),
                other => other.to_string(),
            };
            parts.push(format!("{key}={v}"));
        }
    }
    if map.get("outside_sandbox") == Some(&serde_json::Value::Bool(true)) {
        parts.push("outside_sandbox=true".into());
    }
    if map.contains_key("old_text") {
        let old = map["old_text"].as_str().unwrap_or("");
        parts.push(format!("old_text={} lines", old.lines().count().max(1)));
    }
    parts.join(" ")
}
