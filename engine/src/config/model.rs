//! `[model]`: the language model (`sift_runtime::llm::config::ModelConfig`), each value with its
//! source. The API key is never configuration: only the name of the variable that holds it.

use sift_runtime::llm::config::{DEFAULT_BASE_URL, DEFAULT_CONTEXT_WINDOW, ModelConfig};

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[model]` section's keys.
pub const SECTION: Section = Section {
    name: "model",
    doc: "The language model that the model reviewer and chat use: the local ONNX model or an OpenAI-compatible endpoint.",
    strict: true,
    elsewhere: &[],
    refused: &[(
        "api_key",
        "sift never reads an API key from configuration: put the key in an environment variable and set api_key_env to that variable's name",
    )],
    keys: &[
        Key {
            name: "backend",
            kind: Kind::Choice { noun: "a backend", values: &["onnx", "openai"] },
            default: Default::Text("onnx"),
            env: Some("SIFT_MODEL_BACKEND"),
            in_files: true,
            doc: "onnx: the local model run by onnxruntime; openai: an OpenAI-compatible endpoint.",
        },
        Key {
            name: "base_url",
            kind: Kind::Url,
            default: Default::Text(DEFAULT_BASE_URL),
            env: Some("SIFT_MODEL_BASE_URL"),
            in_files: true,
            doc: "openai: the endpoint, up to the version (…/v1).",
        },
        Key {
            name: "name",
            kind: Kind::Text,
            default: Default::Unset,
            env: Some("SIFT_MODEL_NAME"),
            in_files: true,
            doc: "openai: the model to ask for (required there).",
        },
        Key {
            name: "api_key_env",
            kind: Kind::EnvName,
            default: Default::Unset,
            env: None,
            in_files: true,
            doc: "openai: the name of the environment variable that holds the API key (unset: no key is sent). Never the key itself.",
        },
        Key {
            name: "path",
            kind: Kind::Path,
            default: Default::Unset,
            env: Some("SIFT_MODEL_PATH"),
            in_files: true,
            doc: "onnx: a model directory (unset: the one `sift model install --llm` installs).",
        },
        Key {
            name: "device",
            kind: Kind::Choice { noun: "a device", values: &["cpu", "cuda"] },
            default: Default::Text("cpu"),
            env: Some("SIFT_MODEL_DEVICE"),
            in_files: true,
            doc: "onnx: where the model runs.",
        },
        Key {
            name: "context_window",
            kind: Kind::Count { min: 256, max: u64::MAX },
            default: Default::Count(DEFAULT_CONTEXT_WINDOW as u64),
            env: None,
            in_files: true,
            doc: "Tokens, prompt and answer together.",
        },
        Key {
            name: "timeout_secs",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(120),
            env: None,
            in_files: true,
            doc: "openai: how long the endpoint may stay silent, in seconds.",
        },
        Key {
            name: "connect_timeout_secs",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(10),
            env: None,
            in_files: true,
            doc: "openai: how long to wait for a connection, in seconds.",
        },
        Key {
            name: "max_attempts",
            kind: Kind::Count { min: 1, max: 100 },
            default: Default::Count(4),
            env: None,
            in_files: true,
            doc: "openai: tries per request on rate limits (429), server errors (5xx) and refused connections.",
        },
    ],
};

impl Config {
    /// `[model]`, every value with where it came from.
    pub fn model(&self) -> Result<ModelConfig, Invalid> {
        let s = self.section(&SECTION)?;
        Ok(ModelConfig {
            backend: s.with("backend", s.parsed("backend")?),
            name: s.with("name", s.opt_text("name")),
            path: s.with("path", s.opt_path("path")),
            device: s.with("device", s.parsed("device")?),
            base_url: s.with("base_url", s.text("base_url")),
            api_key_env: s.with("api_key_env", s.opt_text("api_key_env")),
            context_window: s.with("context_window", s.count("context_window") as usize),
            timeout_secs: s.with("timeout_secs", s.count("timeout_secs")),
            connect_timeout_secs: s.with("connect_timeout_secs", s.count("connect_timeout_secs")),
            max_attempts: s.with("max_attempts", s.count("max_attempts") as u32),
        })
    }
}
