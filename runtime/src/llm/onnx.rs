//! The local language model: a decoder-only transformer in ONNX (written by
//! `runtime/python/llm_convert.py` from a GGUF file; Gemma 3 270M by default) run by
//! onnxruntime through `ort`.
//!
//! A model directory holds `sift-model.toml` (`kind = "decoder"`), `model.onnx` (inputs
//! `input_ids`, `attention_mask`, `position_ids`, `past_key_values.N.key/value`; outputs
//! `logits` for the last position and `present.N.key/value`), `tokenizer.json` and the chat
//! template (Jinja, rendered with minijinja).
//!
//! Generation prefills the whole prompt in one run, then feeds one token per run, handing each
//! run's `present` tensors back as the next run's `past` without copying them. Decoding is
//! greedy at temperature 0, else temperature + nucleus (top-p) sampling from a seeded
//! [`Rng`]. Text is streamed as complete UTF-8 only (byte-fallback tokens are joined first)
//! and passed through [`StopMatcher`]; the end-of-turn tokens, `max_tokens`, the context window
//! and [`Cancel`] end it.
//!
//! Tools: small local models have no native tool calling, so tools are described in the system
//! prompt ([`tool_prompt`]) and a reply's `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
//! blocks are parsed into [`ToolCall`]s ([`parse_tool_calls`]). The streamed text shows those
//! blocks as the model wrote them; the response's message holds the text without them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::session::{Session, SessionInputValue};
use ort::value::{DynValue, Tensor};
use serde::Deserialize;
use tokenizers::Tokenizer;

use super::{
    Cancel, ChatRequest, ChatResponse, FinishReason, GenerationParams, LanguageModel, LlmError,
    Message, ModelDescription, Role, StopMatcher, TokenCount, ToolCall, ToolSpec, Usage,
};
use crate::embed::Device;

/// `sift-model.toml` of a decoder model directory.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct DecoderInfo {
    /// Stable identity of the converted model.
    pub id: String,
    /// Always `decoder`.
    pub kind: String,
    /// The model's name.
    pub name: String,
    /// Prompt and generation together, in tokens.
    pub context_window: usize,
    /// Rows of the logits.
    pub vocab_size: usize,
    /// Decoder layers (one key and one value cache each).
    pub layers: usize,
    /// Key/value heads per layer.
    pub kv_heads: usize,
    /// Size of one head.
    pub head_dim: usize,
    /// The beginning-of-sequence token.
    pub bos_token_id: u32,
    /// Tokens that end the model's turn.
    pub eos_token_ids: Vec<u32>,
    /// The chat template's file name in the model directory.
    pub chat_template: String,
}

/// A decoder model loaded into onnxruntime.
pub struct OnnxModel {
    info: DecoderInfo,
    dir: PathBuf,
    tokenizer: Tokenizer,
    /// Each token's text as bytes (byte-fallback tokens are their byte; special tokens none).
    pieces: Vec<Box<[u8]>>,
    template: String,
    bos_token: String,
    eos_token: String,
    session: Mutex<Session>,
    device: Device,
}

fn load_err(path: &Path, reason: impl std::fmt::Display) -> LlmError {
    LlmError::Load(format!("{}: {reason}", path.display()))
}

impl OnnxModel {
    /// Loads the model in `dir` on `device` (falling back to the CPU, with a notice, when CUDA
    /// is unavailable), with `threads` intra-op threads (`None`: onnxruntime's choice).
    pub fn open(dir: &Path, device: Device, threads: Option<usize>) -> Result<Self, LlmError> {
        let info_path = dir.join("sift-model.toml");
        let text = std::fs::read_to_string(&info_path).map_err(|e| {
            load_err(&info_path, format!("{e} (install the model with `sift model install --llm`)"))
        })?;
        let info: DecoderInfo = toml::from_str(&text).map_err(|e| load_err(&info_path, e))?;
        if info.kind != "decoder" {
            return Err(load_err(&info_path, format!("kind is {:?}, not \"decoder\"", info.kind)));
        }
        let tok_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| load_err(&tok_path, e))?;
        let pieces = token_pieces(&tokenizer, info.vocab_size);
        let template_path = dir.join(&info.chat_template);
        let template =
            std::fs::read_to_string(&template_path).map_err(|e| load_err(&template_path, e))?;
        let token_text = |id: u32| tokenizer.id_to_token(id).unwrap_or_default();
        let bos_token = token_text(info.bos_token_id);
        let eos_token = info.eos_token_ids.first().map(|&id| token_text(id)).unwrap_or_default();
        let onnx = dir.join("model.onnx");
        if !onnx.is_file() {
            return Err(load_err(&onnx, "no such file"));
        }
        let env = crate::embed::ort_env().map_err(|e| LlmError::Load(e.to_string()))?;
        let (session, device) = session(env, &onnx, device, threads)?;
        Ok(Self {
            info,
            dir: dir.to_path_buf(),
            tokenizer,
            pieces,
            template,
            bos_token,
            eos_token,
            session: Mutex::new(session),
            device,
        })
    }

    /// What `sift-model.toml` says.
    pub fn info(&self) -> &DecoderInfo {
        &self.info
    }

    /// What runs the model (`cpu` after a CUDA fallback).
    pub fn device(&self) -> Device {
        self.device
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Tokenises `text` as the model sees it (special-token text such as `<start_of_turn>` is
    /// one token; no beginning-of-sequence token is added).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LlmError> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| LlmError::Runtime(format!("tokenizer: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The prompt text for a request: its messages (tools described in the system message,
    /// tool calls and results as text) through the model's chat template.
    pub fn render_prompt(&self, request: &ChatRequest) -> Result<String, LlmError> {
        let messages = template_messages(&request.messages, &request.tools);
        render_template(&self.template, &messages, &self.bos_token, &self.eos_token)
    }

    /// Generates from prompt token ids (the beginning-of-sequence token included), streaming
    /// text to `on_text`. Returns the text (stop sequence excluded), why it ended and the number
    /// of tokens generated.
    pub fn generate(
        &self,
        prompt: &[u32],
        params: &GenerationParams,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(String, FinishReason, usize), LlmError> {
        self.generate_ids(prompt, params, cancel, &mut |_| {}, on_text)
    }

    /// [`OnnxModel::generate`], also reporting each generated token id to `on_token`.
    pub fn generate_ids(
        &self,
        prompt: &[u32],
        params: &GenerationParams,
        cancel: &Cancel,
        on_token: &mut dyn FnMut(u32),
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(String, FinishReason, usize), LlmError> {
        let window = self.info.context_window;
        if prompt.is_empty() {
            return Err(LlmError::Runtime("the prompt has no tokens".into()));
        }
        if prompt.len() >= window {
            return Err(LlmError::ContextOverflow { prompt: prompt.len(), window });
        }
        let budget = (params.max_tokens as usize).min(window - prompt.len());
        let mut sampler = Sampler::new(params);
        let mut stops = StopMatcher::new(&params.stop);
        let mut utf8 = Utf8Stream::default();
        let mut text = String::new();
        let mut emit = |piece: &str, text: &mut String, stops: &mut StopMatcher| -> bool {
            let released = stops.push(piece);
            if !released.text.is_empty() {
                on_text(&released.text);
                text.push_str(&released.text);
            }
            released.stopped
        };
        let mut session =
            self.session.lock().map_err(|_| LlmError::Runtime("the model is poisoned".into()))?;
        let mut cache = KvCache::empty(&self.info)?;
        let mut generated = 0usize;
        let mut input: Vec<i64> = prompt.iter().map(|&t| i64::from(t)).collect();
        let finish = loop {
            if cancel.is_cancelled() {
                break FinishReason::Cancelled;
            }
            if generated >= budget {
                break FinishReason::Length;
            }
            let next = self.step(&mut session, &mut cache, &input, &mut sampler)?;
            generated += 1;
            on_token(next);
            if self.info.eos_token_ids.contains(&next) {
                break FinishReason::Stop;
            }
            let piece = utf8.push(&self.pieces[next as usize]);
            if !piece.is_empty() && emit(&piece, &mut text, &mut stops) {
                break FinishReason::StopSequence;
            }
            input.clear();
            input.push(i64::from(next));
        };
        if finish != FinishReason::StopSequence {
            let rest = utf8.finish();
            if !rest.is_empty() && emit(&rest, &mut text, &mut stops) {
                return Ok((text, FinishReason::StopSequence, generated));
            }
            let held = stops.finish();
            if !held.is_empty() {
                on_text(&held);
                text.push_str(&held);
            }
        }
        Ok((text, finish, generated))
    }

    /// One run: `input` after the cached tokens; returns the chosen next token.
    fn step(
        &self,
        session: &mut Session,
        cache: &mut KvCache,
        input: &[i64],
        sampler: &mut Sampler,
    ) -> Result<u32, LlmError> {
        let rt = |what: &str, e: &dyn std::fmt::Display| LlmError::Runtime(format!("{what}: {e}"));
        let past = cache.len;
        let n = input.len();
        let total = past + n;
        let ids = Tensor::from_array(([1i64, n as i64], input.to_vec()))
            .map_err(|e| rt("input tensor", &e))?;
        let mask = Tensor::from_array(([1i64, total as i64], vec![1i64; total]))
            .map_err(|e| rt("input tensor", &e))?;
        let pos: Vec<i64> = (past as i64..total as i64).collect();
        let pos =
            Tensor::from_array(([1i64, n as i64], pos)).map_err(|e| rt("input tensor", &e))?;
        let mut inputs: Vec<(std::borrow::Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(3 + cache.values.len());
        inputs.push(("input_ids".into(), ids.into()));
        inputs.push(("attention_mask".into(), mask.into()));
        inputs.push(("position_ids".into(), pos.into()));
        for (name, value) in cache.past_names.iter().zip(&cache.values) {
            inputs.push((name.as_str().into(), SessionInputValue::View(value.view())));
        }
        let mut outputs = session.run(inputs).map_err(|e| rt("onnxruntime", &e))?;
        let next = {
            let (shape, logits) =
                outputs["logits"].try_extract_tensor::<f32>().map_err(|e| rt("logits", &e))?;
            let vocab = *shape.last().unwrap_or(&0) as usize;
            if vocab == 0 || logits.len() < vocab {
                return Err(LlmError::Runtime(format!("logits have shape {shape:?}")));
            }
            sampler.pick(&logits[logits.len() - vocab..])
        };
        for (i, name) in cache.present_names.iter().enumerate() {
            cache.values[i] = outputs
                .remove(name)
                .ok_or_else(|| LlmError::Runtime(format!("the model has no output {name}")))?;
        }
        cache.len = total;
        Ok(next)
    }
}

/// The key/value cache between runs: each layer's `present` tensors, fed back as `past`.
struct KvCache {
    past_names: Vec<String>,
    present_names: Vec<String>,
    values: Vec<DynValue>,
    len: usize,
}

impl KvCache {
    fn empty(info: &DecoderInfo) -> Result<Self, LlmError> {
        let mut past_names = Vec::new();
        let mut present_names = Vec::new();
        let mut values = Vec::new();
        for layer in 0..info.layers {
            for kind in ["key", "value"] {
                past_names.push(format!("past_key_values.{layer}.{kind}"));
                present_names.push(format!("present.{layer}.{kind}"));
                let shape = [1i64, info.kv_heads as i64, 0, info.head_dim as i64];
                let t = Tensor::<f32>::from_array((shape, Vec::<f32>::new()))
                    .map_err(|e| LlmError::Runtime(format!("empty cache: {e}")))?;
                values.push(t.into_dyn());
            }
        }
        Ok(Self { past_names, present_names, values, len: 0 })
    }
}

/// Each token's bytes as decoded text: `▁` is a space, `<0xNN>` is byte NN, special (control)
/// tokens are empty.
fn token_pieces(tokenizer: &Tokenizer, vocab: usize) -> Vec<Box<[u8]>> {
    let special: std::collections::HashSet<u32> = tokenizer
        .get_added_tokens_decoder()
        .iter()
        .filter(|(_, t)| t.special)
        .map(|(&id, _)| id)
        .collect();
    let size = vocab.max(tokenizer.get_vocab_size(true));
    (0..size as u32)
        .map(|id| -> Box<[u8]> {
            if special.contains(&id) {
                return Box::default();
            }
            let Some(tok) = tokenizer.id_to_token(id) else { return Box::default() };
            if let Some(hex) = tok.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'))
                && hex.len() == 2
                && let Ok(b) = u8::from_str_radix(hex, 16)
            {
                return Box::new([b]);
            }
            tok.replace('\u{2581}', " ").into_bytes().into_boxed_slice()
        })
        .collect()
}

/// Joins token bytes into text, releasing only complete UTF-8 (invalid bytes become U+FFFD).
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds a token's bytes; returns the text now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).expect("valid"));
                    match e.error_len() {
                        // An incomplete sequence at the end: wait for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// The end of the stream: whatever is left (an incomplete sequence becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// A small deterministic PRNG (SplitMix64): the same seed gives the same samples everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Picks the next token from logits: greedy at temperature 0, else temperature + top-p.
#[derive(Debug, Clone)]
pub struct Sampler {
    temperature: f32,
    top_p: f32,
    rng: Rng,
}

impl Sampler {
    /// A sampler for these settings (unseeded sampling seeds from the clock).
    pub fn new(params: &GenerationParams) -> Self {
        let seed = params.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        });
        Self { temperature: params.temperature, top_p: params.top_p, rng: Rng::new(seed) }
    }

    /// The chosen token id.
    pub fn pick(&mut self, logits: &[f32]) -> u32 {
        if self.temperature <= 0.0 || !self.temperature.is_finite() {
            return argmax(logits);
        }
        let candidates = nucleus(logits, self.temperature, self.top_p);
        let total: f64 = candidates.iter().map(|&(_, p)| p).sum();
        let mut r = self.rng.next_f64() * total;
        for &(id, p) in &candidates {
            if r < p {
                return id;
            }
            r -= p;
        }
        candidates.last().map(|&(id, _)| id).unwrap_or_else(|| argmax(logits))
    }
}

/// The index of the largest logit (the first on ties; NaN never wins).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] || logits[best].is_nan() {
            best = i;
        }
    }
    best as u32
}

/// The smallest set of most likely tokens whose probability (at `temperature`) reaches
/// `top_p`, most likely first, with their unnormalised probabilities (every token, unsorted,
/// at `top_p` 1). Only the head of the
/// distribution is sorted: candidates are taken in growing top-k slices until they cover
/// `top_p`.
pub fn nucleus(logits: &[f32], temperature: f32, top_p: f32) -> Vec<(u32, f64)> {
    let max = logits.iter().copied().filter(|x| x.is_finite()).fold(f32::NEG_INFINITY, f32::max);
    let t = f64::from(temperature);
    let mut probs: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let p = if x.is_finite() { ((f64::from(x) - f64::from(max)) / t).exp() } else { 0.0 };
            (i as u32, p)
        })
        .collect();
    if top_p >= 1.0 {
        return probs;
    }
    let total: f64 = probs.iter().map(|&(_, p)| p).sum();
    let want = f64::from(top_p.clamp(0.0, 1.0)) * total;
    let by_p = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut k = 64.min(probs.len());
    loop {
        if k < probs.len() {
            probs.select_nth_unstable_by(k - 1, by_p);
        }
        let head = &mut probs[..k];
        head.sort_unstable_by(by_p);
        let mut sum = 0.0;
        for (n, &(_, p)) in head.iter().enumerate() {
            sum += p;
            if sum >= want {
                probs.truncate(n + 1);
                return probs;
            }
        }
        if k == probs.len() {
            return probs;
        }
        k = (k * 4).min(probs.len());
    }
}

/// A message as the chat template sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TemplateMessage {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// The system-prompt text that describes `tools` and how to call them.
pub fn tool_prompt(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "You can call tools. To call one, reply with only\n\
         <tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}</tool_call>\n\
         and wait for its result. The tools:\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- {}: {} Arguments (JSON schema): {}\n",
            t.name, t.description, t.parameters
        ));
    }
    s
}

/// Turns a conversation into what a plain chat template accepts: one system message first
/// (with the tools described), tool calls and tool results as text, and consecutive messages
/// of one role merged, so user and assistant alternate.
pub fn template_messages(messages: &[Message], tools: &[ToolSpec]) -> Vec<TemplateMessage> {
    let mut system: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.is_empty())
        .map(|m| m.content.clone())
        .collect();
    if !tools.is_empty() {
        system.push(tool_prompt(tools));
    }
    let mut out: Vec<TemplateMessage> = Vec::new();
    if !system.is_empty() {
        out.push(TemplateMessage { role: "system", content: system.join("\n\n") });
    }
    for m in messages {
        let (role, content) = match m.role {
            Role::System => continue,
            Role::User => ("user", m.content.clone()),
            Role::Assistant => {
                let mut text = m.content.clone();
                for call in &m.tool_calls {
                    let args: serde_json::Value = serde_json::from_str(&call.arguments)
                        .unwrap_or(serde_json::Value::String(call.arguments.clone()));
                    let json = serde_json::json!({ "name": call.name, "arguments": args });
                    text.push_str(&format!("<tool_call>{json}</tool_call>"));
                }
                ("assistant", text)
            }
            Role::Tool => (
                "user",
                format!(
                    "<tool_response id=\"{}\">\n{}\n</tool_response>",
                    m.tool_call_id.as_deref().unwrap_or(""),
                    m.content
                ),
            ),
        };
        match out.last_mut() {
            Some(last) if last.role == role => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => out.push(TemplateMessage { role, content }),
        }
    }
    out
}

/// Renders a chat template (Hugging Face conventions: `messages`, `bos_token`, `eos_token`,
/// `add_generation_prompt`, `raise_exception`) for a new assistant turn.
pub fn render_template(
    template: &str,
    messages: &[TemplateMessage],
    bos_token: &str,
    eos_token: &str,
) -> Result<String, LlmError> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.add_function("raise_exception", |msg: String| -> Result<String, minijinja::Error> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| LlmError::Load(format!("the chat template does not parse: {e}")))?;
    let tmpl = env.get_template("chat").expect("just added");
    tmpl.render(minijinja::context! {
        messages => messages,
        bos_token => bos_token,
        eos_token => eos_token,
        add_generation_prompt => true,
    })
    .map_err(|e| LlmError::Runtime(format!("the chat template rejected the conversation: {e}")))
}

/// Splits a reply into its text and the `<tool_call>{…}</tool_call>` blocks in it. A block
/// whose JSON is not `{"name": …, "arguments": …}` stays in the text; arguments are kept as
/// the model wrote them (JSON text) for [`ToolCall::checked`].
pub fn parse_tool_calls(reply: &str) -> (String, Vec<ToolCall>) {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut rest = reply;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find(CLOSE) else { break };
        let body = after[..end].trim();
        let parsed: Option<(String, String)> =
            serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| {
                let name = v.get("name")?.as_str()?.to_string();
                let args = match v.get("arguments") {
                    None => "{}".to_string(),
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                Some((name, args))
            });
        match parsed {
            Some((name, arguments)) => {
                text.push_str(&rest[..start]);
                calls.push(ToolCall { id: format!("call_{}", calls.len()), name, arguments });
            }
            None => text.push_str(&rest[..start + OPEN.len() + end + CLOSE.len()]),
        }
        rest = &after[end + CLOSE.len()..];
    }
    text.push_str(rest);
    (text.trim().to_string(), calls)
}

impl LanguageModel for OnnxModel {
    fn describe(&self) -> ModelDescription {
        ModelDescription {
            backend: "onnx".into(),
            name: self.info.name.clone(),
            device: self.device.to_string(),
            context_window: self.info.context_window,
        }
    }

    fn count_tokens(&self, text: &str) -> TokenCount {
        match self.tokenizer.encode(text, false) {
            Ok(enc) => TokenCount { tokens: enc.len(), exact: true },
            Err(_) => TokenCount::estimate(text),
        }
    }

    fn chat(
        &self,
        request: &ChatRequest,
        cancel: &Cancel,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, LlmError> {
        let prompt = self.render_prompt(request)?;
        let ids = self.encode(&prompt)?;
        let (text, finish, generated) = self.generate(&ids, &request.params, cancel, on_text)?;
        let usage = Usage { prompt_tokens: ids.len() as u32, completion_tokens: generated as u32 };
        let (content, tool_calls) =
            if request.tools.is_empty() { (text, Vec::new()) } else { parse_tool_calls(&text) };
        let finish = if !tool_calls.is_empty() && finish != FinishReason::Cancelled {
            FinishReason::ToolCalls
        } else {
            finish
        };
        let message = Message { tool_calls, ..Message::assistant(content) };
        Ok(ChatResponse { message, finish, usage })
    }
}

fn session(
    env: &ort::environment::Environment,
    onnx: &Path,
    device: Device,
    threads: Option<usize>,
) -> Result<(Session, Device), LlmError> {
    let builder = |cuda: bool| -> Result<Session, LlmError> {
        let err = |e: &dyn std::fmt::Display| load_err(onnx, e);
        let mut b = Session::builder(env).map_err(|e| err(&e))?;
        if let Some(n) = threads.filter(|&n| n > 0) {
            b = b.with_intra_threads(n).map_err(|e| err(&e))?;
        }
        b = b.with_inter_threads(1).map_err(|e| err(&e))?;
        if cuda {
            b = crate::embed::transformer::cuda_provider(b).map_err(|e| err(&e))?;
        }
        b.commit_from_file(onnx).map_err(|e| err(&e))
    };
    crate::embed::with_cuda_fallback(device, "language model", builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_waits_for_complete_characters() {
        let mut s = Utf8Stream::default();
        // "é" is C3 A9, "🤖" is F0 9F A4 96: byte-fallback tokens arrive one byte at a time.
        assert_eq!(s.push(b"caf"), "caf");
        assert_eq!(s.push(&[0xC3]), "");
        assert_eq!(s.push(&[0xA9, b' ']), "é ");
        assert_eq!(s.push(&[0xF0, 0x9F]), "");
        assert_eq!(s.push(&[0xA4]), "");
        assert_eq!(s.push(&[0x96]), "🤖");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn utf8_stream_replaces_invalid_bytes_and_a_truncated_end() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(&[b'a', 0xFF, b'b']), "a\u{FFFD}b");
        assert_eq!(s.push(&[0xE6, 0x97]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    fn params(temperature: f32, top_p: f32, seed: u64) -> GenerationParams {
        GenerationParams { temperature, top_p, seed: Some(seed), ..GenerationParams::default() }
    }

    #[test]
    fn greedy_takes_the_largest_logit() {
        let mut s = Sampler::new(&params(0.0, 1.0, 1));
        assert_eq!(s.pick(&[0.1, 3.0, -1.0, 2.9]), 1);
        assert_eq!(argmax(&[f32::NAN, 1.0, 0.5]), 1);
    }

    #[test]
    fn seeded_sampling_is_reproducible_and_seeds_differ() {
        let logits: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 101) as f32 / 20.0).collect();
        let run = |seed| {
            let mut s = Sampler::new(&params(1.0, 1.0, seed));
            (0..50).map(|_| s.pick(&logits)).collect::<Vec<u32>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }

    #[test]
    fn top_p_keeps_the_smallest_set_reaching_the_mass() {
        // Probabilities 0.5, 0.25, 0.125, … (logits ln 2 apart).
        let logits: Vec<f32> = (0..300).map(|i| -(i as f32) * std::f32::consts::LN_2).collect();
        let ids = |p| nucleus(&logits, 1.0, p).iter().map(|&(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(0.5), vec![0]);
        assert_eq!(ids(0.7), vec![0, 1]);
        assert_eq!(ids(0.8), vec![0, 1, 2]);
        // Every candidate survives at top_p = 1, and at 0.99999 the growing slices go past 64.
        assert_eq!(nucleus(&logits, 1.0, 1.0).len(), 300);
        let flat = vec![0.0f32; 1000];
        assert_eq!(nucleus(&flat, 1.0, 0.5).len(), 500);
        // Sampling with top_p 0.7 never leaves the nucleus.
        let mut s = Sampler::new(&params(1.0, 0.7, 7));
        assert!((0..500).all(|_| s.pick(&logits) <= 1));
    }

    #[test]
    fn low_temperature_sharpens_towards_greedy() {
        let logits = [1.0f32, 1.5, 0.5];
        let mut s = Sampler::new(&params(0.01, 1.0, 3));
        assert!((0..100).all(|_| s.pick(&logits) == 1));
    }

    const GEMMA: &str = include_str!("testdata/gemma3_chat_template.jinja");

    #[test]
    fn gemma_template_puts_the_system_prompt_in_the_first_user_turn() {
        let msgs = template_messages(
            &[
                Message::system("Be brief."),
                Message::user("Hi"),
                Message::assistant("Hello."),
                Message::user("Bye"),
            ],
            &[],
        );
        let text = render_template(GEMMA, &msgs, "<bos>", "<eos>").unwrap();
        assert_eq!(
            text,
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n\
             <start_of_turn>model\nHello.<end_of_turn>\n\
             <start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn tool_results_and_calls_become_alternating_text_turns() {
        let call = ToolCall {
            id: "call_0".into(),
            name: "read".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        };
        let msgs = template_messages(
            &[
                Message::user("Open a.rs"),
                Message { tool_calls: vec![call], ..Message::assistant("") },
                Message::tool_result("call_0", "fn main() {}"),
                Message::user("And?"),
            ],
            &[ToolSpec {
                name: "read".into(),
                description: "Reads a file.".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
        );
        let roles: Vec<&str> = msgs.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert!(msgs[0].content.contains("- read: Reads a file."));
        assert_eq!(
            msgs[2].content,
            r#"<tool_call>{"arguments":{"path":"a.rs"},"name":"read"}</tool_call>"#
        );
        assert!(
            msgs[3].content.starts_with(
                "<tool_response id=\"call_0\">\nfn main() {}\n</tool_response>\n\nAnd?"
            )
        );
        // Gemma's template accepts it (it rejects turns that do not alternate).
        render_template(GEMMA, &msgs, "<bos>", "<eos>").unwrap();
    }

    #[test]
    fn a_template_that_raises_is_a_clear_error() {
        let msgs = vec![TemplateMessage { role: "assistant", content: "first".into() }];
        let err = render_template(GEMMA, &msgs, "<bos>", "<eos>").unwrap_err();
        assert!(err.to_string().contains("roles must alternate"), "{err}");
    }

    #[test]
    fn tool_calls_are_parsed_out_of_the_reply() {
        let (text, calls) = parse_tool_calls(
            "Let me look.\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call>\
             <tool_call> {\"name\": \"grep\", \"arguments\": \"{\\\"q\\\": 1}\"} </tool_call>",
        );
        assert_eq!(text, "Let me look.");
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_0", "read"));
        assert_eq!(calls[0].arguments, r#"{"path":"a.rs"}"#);
        assert_eq!((calls[1].name.as_str(), calls[1].arguments.as_str()), ("grep", r#"{"q": 1}"#));
    }

    #[test]
    fn malformed_or_unclosed_tool_calls_stay_text() {
        let (text, calls) =
            parse_tool_calls("a <tool_call>not json</tool_call> b <tool_call>{\"name\":");
        assert!(calls.is_empty());
        assert_eq!(text, "a <tool_call>not json</tool_call> b <tool_call>{\"name\":");
        let (_, calls) = parse_tool_calls("<tool_call>{\"name\": \"x\"}</tool_call>");
        assert_eq!(calls[0].arguments, "{}");
    }
}
