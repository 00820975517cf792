//! Which language model to use: the `[model]` section, as [`ModelConfig`], and [`open`], which
//! builds the configured backend.
//!
//! ```toml
//! [model]
//! backend = "openai"                      # or "onnx" (the default: the local model)
//! base_url = "http://127.0.0.1:8080/v1"   # openai: the endpoint, up to the version
//! name = "gpt-4o-mini"                    # openai: the model name to ask for
//! api_key_env = "OPENAI_API_KEY"          # openai: the variable that holds the key
//! path = "models/decoder"                 # onnx: a model directory (default: the embedded one)
//! device = "cpu"                          # onnx: "cpu" or "cuda"
//! context_window = 8192                   # tokens, prompt and answer together
//! timeout_secs = 120                      # how long the endpoint may stay silent
//! connect_timeout_secs = 10
//! max_attempts = 4                        # tries for rate limits and server errors
//! ```
//!
//! The values come from sift's layered configuration (`sift_engine::config`: the user file, the
//! repository file, the editor's settings, `SIFT_MODEL_*`), each with its [`Source`], so `sift
//! model info` can say what would be used and why. This crate only holds the section's type;
//! it reads no file. The API key itself is never configuration: only the name of the variable
//! that holds it ([`ModelConfig::api_key_env`]), read when the model is opened.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::openai::{ApiKey, OpenAiConfig, OpenAiModel};
use super::{LanguageModel, LlmError};
use crate::embed::Device;

/// The context window assumed when none is configured.
pub const DEFAULT_CONTEXT_WINDOW: usize = 8192;

/// The endpoint assumed when none is configured (`llama-server`'s default port).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080/v1";

/// What runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The local ONNX decoder (the default).
    #[default]
    Onnx,
    /// An OpenAI-compatible endpoint.
    OpenAi,
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Backend, String> {
        match text {
            "onnx" => Ok(Backend::Onnx),
            "openai" => Ok(Backend::OpenAi),
            other => Err(format!("{other:?} is not a backend: use \"onnx\" or \"openai\"")),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Onnx => "onnx",
            Backend::OpenAi => "openai",
        })
    }
}

pub use crate::setting::{Setting, Source};

/// The effective `[model]` configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// `onnx` or `openai`.
    pub backend: Setting<Backend>,
    /// openai: the model name to ask for; onnx: unused (the model is `path`).
    pub name: Setting<Option<String>>,
    /// onnx: the model directory (none: the embedded default model).
    pub path: Setting<Option<PathBuf>>,
    /// onnx: where to run it.
    pub device: Setting<Device>,
    /// openai: the endpoint's base URL, up to the version (`…/v1`).
    pub base_url: Setting<String>,
    /// openai: the environment variable that holds the API key.
    pub api_key_env: Setting<Option<String>>,
    /// The context window in tokens.
    pub context_window: Setting<usize>,
    /// openai: how long the endpoint may stay silent, in seconds.
    pub timeout_secs: Setting<u64>,
    /// openai: how long to wait for a connection, in seconds.
    pub connect_timeout_secs: Setting<u64>,
    /// openai: tries per request for rate limits, server errors and failed connections.
    pub max_attempts: Setting<u32>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            backend: Setting::default(),
            name: Setting::default(),
            path: Setting::default(),
            device: Setting::default(),
            base_url: Setting::default_to(DEFAULT_BASE_URL.to_owned()),
            api_key_env: Setting::default(),
            context_window: Setting::default_to(DEFAULT_CONTEXT_WINDOW),
            timeout_secs: Setting::default_to(120),
            connect_timeout_secs: Setting::default_to(10),
            max_attempts: Setting::default_to(4),
        }
    }
}

/// The process environment, as a lookup function (for [`open_with_env`] and the configuration
/// loader).
pub fn process_env(name: &str) -> Option<String> {
    sift_env::named(name)
}

/// The `[model]` table of a configuration file's text (`path` names it in messages); `None`
/// when there is none.
pub fn model_table(text: &str, path: &Path) -> Result<Option<toml::Table>, LlmError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        LlmError::Config(format!("{}: {}", path.display(), e.message()))
    })?;
    match table.remove("model") {
        None => Ok(None),
        Some(toml::Value::Table(t)) => Ok(Some(t)),
        Some(other) => Err(LlmError::Config(format!(
            "{}: model must be a table ([model]), not a {}",
            path.display(),
            other.type_str()
        ))),
    }
}

impl ModelConfig {
    /// The OpenAI backend's settings.
    pub fn openai(&self) -> OpenAiConfig {
        OpenAiConfig {
            base_url: self.base_url.value.clone(),
            model: self.name.value.clone().unwrap_or_default(),
            api_key_env: self.api_key_env.value.clone(),
            context_window: self.context_window.value,
            connect_timeout: Duration::from_secs(self.connect_timeout_secs.value),
            read_timeout: Duration::from_secs(self.timeout_secs.value),
            max_attempts: self.max_attempts.value,
            ..OpenAiConfig::default()
        }
    }
}

/// Opens the configured model, reading the API key from the process environment.
pub fn open(config: &ModelConfig) -> Result<Box<dyn LanguageModel>, LlmError> {
    open_with_env(config, &process_env)
}

/// Opens the configured model, reading the API key through `env`.
pub fn open_with_env(
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn LanguageModel>, LlmError> {
    match config.backend.value {
        Backend::Onnx => {
            let dir = config.path.value.clone().unwrap_or_else(super::install::llm_dir);
            if config.path.value.is_none() && !dir.join("model.onnx").is_file() {
                return Err(LlmError::Load(format!(
                    "the local model is not installed in {}: run `sift model install --llm`, or use an OpenAI-compatible endpoint (backend = \"openai\" in [model])",
                    dir.display()
                )));
            }
            Ok(Box::new(super::onnx::OnnxModel::open(&dir, config.device.value, None)?))
        }
        Backend::OpenAi => {
            let openai = config.openai();
            let key = openai
                .api_key_env
                .as_deref()
                .and_then(env)
                .filter(|k| !k.is_empty())
                .map(ApiKey::new);
            Ok(Box::new(OpenAiModel::new(openai, key)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn open_builds_the_openai_backend_with_the_key_from_the_named_variable() {
        let mut config = ModelConfig::default();
        config.backend.value = Backend::OpenAi;
        config.name.value = Some("m".into());
        config.context_window.value = 2048;
        config.api_key_env.value = Some("MY_KEY".into());
        let model = open_with_env(&config, &env_of(&[("MY_KEY", "sk-abcdef")])).unwrap();
        let d = model.describe();
        assert_eq!((d.backend.as_str(), d.context_window), ("openai", 2048));
        // Without a name the endpoint cannot be asked.
        config.name.value = None;
        let err = open_with_env(&config, &env_of(&[])).err().unwrap().to_string();
        assert!(err.contains("SIFT_MODEL_NAME"), "{err}");
    }

    #[test]
    fn the_onnx_backend_without_its_model_says_how_to_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ModelConfig::default();
        config.path.value = Some(dir.path().join("no-model-here"));
        let err = open_with_env(&config, &env_of(&[])).err().unwrap();
        assert!(
            matches!(&err, LlmError::Load(m) if m.contains("sift model install --llm")),
            "{err}"
        );
    }
}
