//! Which language model to use: the `[model]` table of the per-user configuration
//! (`$XDG_CONFIG_HOME/sift/config.toml`, default `~/.config/sift/config.toml`) and of the
//! repository's (`ROOT/.sift/config.toml`), then the environment (`SIFT_MODEL_BACKEND`,
//! `SIFT_MODEL_BASE_URL`, `SIFT_MODEL_NAME`, `SIFT_MODEL_PATH`, `SIFT_MODEL_DEVICE`). Later
//! layers override earlier ones key by key, and every value remembers where it came from
//! ([`Source`]), so `sift model info` can say what would be used and why.
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
//! The loader reads the environment through a lookup function, so tests pass a map and never
//! touch the process environment. Relative paths in a file are resolved against the
//! repository root (repository file) or the file's folder (user file).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::openai::{ApiKey, OpenAiConfig, OpenAiModel};
use super::{LanguageModel, LlmError};
use crate::embed::Device;

/// The environment variables that override the files.
pub const ENV_VARS: [&str; 5] = [
    "SIFT_MODEL_BACKEND",
    "SIFT_MODEL_BASE_URL",
    "SIFT_MODEL_NAME",
    "SIFT_MODEL_PATH",
    "SIFT_MODEL_DEVICE",
];

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

impl Backend {
    fn parse(text: &str) -> Result<Backend, String> {
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

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Source {
    /// Nothing set it.
    #[default]
    Default,
    /// The per-user configuration file.
    User(PathBuf),
    /// The repository's configuration file.
    Repo(PathBuf),
    /// An environment variable.
    Env(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(p) => write!(f, "user config {}", p.display()),
            Source::Repo(p) => write!(f, "repository config {}", p.display()),
            Source::Env(var) => write!(f, "environment {var}"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Setting<T> {
    fn default_to(value: T) -> Self {
        Self { value, source: Source::Default }
    }

    fn set(&mut self, value: T, source: &Source) {
        self.value = value;
        self.source = source.clone();
    }
}

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

/// The per-user configuration file: `$XDG_CONFIG_HOME/sift/config.toml`, else
/// `$HOME/.config/sift/config.toml` (none without either).
pub fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(xdg) = set("XDG_CONFIG_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Some(PathBuf::from(xdg).join("sift/config.toml"));
    }
    set("HOME").map(|home| PathBuf::from(home).join(".config/sift/config.toml"))
}

/// The process environment, as a lookup function for [`load`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The configuration for the repository at `root` (none: the user file and the environment
/// only), reading the environment through `env`.
pub fn load(
    root: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelConfig, LlmError> {
    let user = user_config_path(env);
    let repo = root.map(|r| r.join(".sift").join("config.toml"));
    load_files(user.as_deref(), repo.as_deref(), env)
}

/// The configuration from these files (missing files are skipped) and `env`.
pub fn load_files(
    user: Option<&Path>,
    repo: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelConfig, LlmError> {
    let mut config = ModelConfig::default();
    if let Some(path) = user
        && let Some(table) = read_table(path)?
    {
        let base = path.parent().unwrap_or(Path::new("."));
        config.apply_table(&table, &Source::User(path.to_path_buf()), base)?;
    }
    if let Some(path) = repo
        && let Some(table) = read_table(path)?
    {
        // ROOT/.sift/config.toml: relative paths are the repository's.
        let base = path.parent().and_then(Path::parent).unwrap_or(Path::new("."));
        config.apply_table(&table, &Source::Repo(path.to_path_buf()), base)?;
    }
    config.apply_env(env)?;
    Ok(config)
}

/// The configuration with the repository's file given as text, not read from disk: the
/// repository's `.sift/config.toml` as a revision holds it (a review of a branch uses its base's
/// `[model]`, so that a change cannot redirect or turn off its own review). `name` names it in
/// messages and in [`Source::Repo`] (`<commit>:.sift/config.toml`); `root` resolves relative
/// paths; `text` is `None` when the revision has no such file. The user file and `env` apply as
/// in [`load`].
pub fn load_with_repo_text(
    root: &Path,
    name: &Path,
    text: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelConfig, LlmError> {
    let mut config = ModelConfig::default();
    if let Some(path) = user_config_path(env)
        && let Some(table) = read_table(&path)?
    {
        let base = path.parent().unwrap_or(Path::new("."));
        config.apply_table(&table, &Source::User(path.to_path_buf()), base)?;
    }
    if let Some(text) = text
        && let Some(table) = model_table(text, name)?
    {
        config.apply_table(&table, &Source::Repo(name.to_path_buf()), root)?;
    }
    config.apply_env(env)?;
    Ok(config)
}

/// A file's `[model]` table; `None` when the file or the table is absent.
fn read_table(path: &Path) -> Result<Option<toml::Table>, LlmError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LlmError::Config(format!("cannot read {}: {e}", path.display()))),
    };
    model_table(&text, path)
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
    fn apply_table(
        &mut self,
        table: &toml::Table,
        source: &Source,
        base: &Path,
    ) -> Result<(), LlmError> {
        let file = match source {
            Source::User(p) | Source::Repo(p) => p.display().to_string(),
            _ => String::new(),
        };
        for (key, value) in table {
            let bad = |reason: String| LlmError::Config(format!("{file}: [model] {key}: {reason}"));
            let text = || {
                value
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad(format!("expected a string, found {}", value.type_str())))
            };
            let number = |min: i64| match value.as_integer() {
                Some(n) if n >= min => Ok(n as u64),
                _ => Err(bad(format!("expected a whole number of at least {min}, found {value}"))),
            };
            match key.as_str() {
                "backend" => self.backend.set(Backend::parse(&text()?).map_err(bad)?, source),
                "name" => self.name.set(Some(text()?), source),
                "path" => {
                    let path = PathBuf::from(text()?);
                    let path = if path.is_relative() { base.join(path) } else { path };
                    self.path.set(Some(path), source);
                }
                "device" => self.device.set(parse_device(&text()?).map_err(bad)?, source),
                "base_url" => self.base_url.set(check_url(&text()?).map_err(bad)?, source),
                "api_key_env" => {
                    let var = text()?;
                    if var.is_empty() || var.contains(['=', '\0']) || var.starts_with('$') {
                        return Err(bad(format!(
                            "{var:?} is not an environment variable's name (write OPENAI_API_KEY, not the key or $OPENAI_API_KEY)"
                        )));
                    }
                    self.api_key_env.set(Some(var), source);
                }
                "context_window" => self.context_window.set(number(256)? as usize, source),
                "timeout_secs" => self.timeout_secs.set(number(1)?, source),
                "connect_timeout_secs" => self.connect_timeout_secs.set(number(1)?, source),
                "max_attempts" => self.max_attempts.set(number(1)?.min(100) as u32, source),
                _ => {
                    return Err(bad(
                        "unknown key (known: backend, name, path, device, base_url, api_key_env, context_window, timeout_secs, connect_timeout_secs, max_attempts)"
                            .into(),
                    ));
                }
            }
        }
        Ok(())
    }

    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), LlmError> {
        for var in ENV_VARS {
            let Some(value) = env(var).filter(|v| !v.trim().is_empty()) else { continue };
            let value = value.trim().to_owned();
            let source = Source::Env(var);
            let bad = |reason: String| LlmError::Config(format!("{var}: {reason}"));
            match var {
                "SIFT_MODEL_BACKEND" => {
                    self.backend.set(Backend::parse(&value).map_err(bad)?, &source)
                }
                "SIFT_MODEL_BASE_URL" => {
                    self.base_url.set(check_url(&value).map_err(bad)?, &source)
                }
                "SIFT_MODEL_NAME" => self.name.set(Some(value), &source),
                "SIFT_MODEL_PATH" => self.path.set(Some(PathBuf::from(value)), &source),
                "SIFT_MODEL_DEVICE" => self.device.set(parse_device(&value).map_err(bad)?, &source),
                _ => unreachable!("every variable of ENV_VARS is handled"),
            }
        }
        Ok(())
    }

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

fn parse_device(text: &str) -> Result<Device, String> {
    match text {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::Cuda),
        other => Err(format!("{other:?} is not a device: use \"cpu\" or \"cuda\"")),
    }
}

fn check_url(text: &str) -> Result<String, String> {
    let url = text.trim();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.trim_end_matches('/').to_owned())
    } else {
        Err(format!(
            "{url:?} is not an http:// or https:// URL (for example http://127.0.0.1:8080/v1)"
        ))
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

    /// A home with a user file and a repository with a repo file.
    fn setup(user: &str, repo: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let config_home = dir.path().join("xdg");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(config_home.join("sift")).unwrap();
        std::fs::create_dir_all(root.join(".sift")).unwrap();
        std::fs::write(config_home.join("sift/config.toml"), user).unwrap();
        std::fs::write(root.join(".sift/config.toml"), repo).unwrap();
        (dir, config_home, root)
    }

    #[test]
    fn the_repository_file_can_come_as_text_from_a_revision() {
        // The working tree's file says one thing; the revision's text another: the text wins.
        let (_dir, xdg, root) = setup(
            "[model]\nbackend = \"openai\"\n",
            "[model]\nbase_url = \"http://attacker.invalid/v1\"\n",
        );
        let env = env_of(&[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        let name = Path::new("0123456789ab:.sift/config.toml");
        let text = "[model]\nname = \"team-model\"\npath = \"models/d\"\n";
        let config = load_with_repo_text(&root, name, Some(text), &env).unwrap();
        assert_eq!(config.backend.value, Backend::OpenAi, "the user file still applies");
        assert_eq!(config.base_url.source, Source::Default);
        assert_eq!(config.name.source, Source::Repo(name.to_path_buf()));
        assert_eq!(config.path.value, Some(root.join("models/d")));
        let none = load_with_repo_text(&root, name, None, &env).unwrap();
        assert_eq!(none.name.source, Source::Default);
        let err = load_with_repo_text(&root, name, Some("[model]\nnope = 1\n"), &env).unwrap_err();
        assert!(err.to_string().contains("0123456789ab:.sift/config.toml: [model] nope"), "{err}");
    }

    #[test]
    fn nothing_configured_means_the_local_default_model() {
        let dir = tempfile::tempdir().unwrap();
        let config = load(Some(dir.path()), &env_of(&[])).unwrap();
        assert_eq!(config, ModelConfig::default());
        assert_eq!(config.backend.value, Backend::Onnx);
        assert_eq!(config.context_window.value, DEFAULT_CONTEXT_WINDOW);
        assert_eq!(config.context_window.source, Source::Default);
    }

    #[test]
    fn repository_overrides_user_and_environment_overrides_both_key_by_key() {
        let (_dir, xdg, root) = setup(
            "[model]\nbackend = \"openai\"\nname = \"user-model\"\napi_key_env = \"USER_KEY\"\ncontext_window = 4096\n",
            "[index]\nmax_file_size = 10\n[model]\nname = \"repo-model\"\ncontext_window = 16384\n",
        );
        let xdg_s = xdg.to_str().unwrap();
        let env = env_of(&[("XDG_CONFIG_HOME", xdg_s), ("SIFT_MODEL_NAME", "env-model")]);
        let config = load(Some(&root), &env).unwrap();
        let user_file = Source::User(xdg.join("sift/config.toml"));
        let repo_file = Source::Repo(root.join(".sift/config.toml"));
        assert_eq!(config.backend, Setting { value: Backend::OpenAi, source: user_file.clone() });
        assert_eq!(config.api_key_env.value.as_deref(), Some("USER_KEY"));
        assert_eq!(config.api_key_env.source, user_file);
        assert_eq!(config.context_window, Setting { value: 16384, source: repo_file });
        assert_eq!(
            config.name,
            Setting { value: Some("env-model".into()), source: Source::Env("SIFT_MODEL_NAME") }
        );
        assert_eq!(config.base_url.source, Source::Default);
        // Without the environment, the repository's name wins over the user's.
        let config = load(Some(&root), &env_of(&[("XDG_CONFIG_HOME", xdg_s)])).unwrap();
        assert_eq!(config.name.value.as_deref(), Some("repo-model"));
    }

    #[test]
    fn every_environment_variable_overrides() {
        let (_dir, xdg, root) = setup(
            "[model]\nbackend = \"openai\"\nbase_url = \"http://a/v1\"\ndevice = \"cpu\"\n",
            "",
        );
        let env = env_of(&[
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
            ("SIFT_MODEL_BACKEND", "onnx"),
            ("SIFT_MODEL_BASE_URL", "http://127.0.0.1:9/v1/"),
            ("SIFT_MODEL_PATH", "/models/decoder"),
            ("SIFT_MODEL_DEVICE", "cuda"),
        ]);
        let config = load(Some(&root), &env).unwrap();
        assert_eq!(config.backend.value, Backend::Onnx);
        assert_eq!(config.base_url.value, "http://127.0.0.1:9/v1");
        assert_eq!(config.path.value.as_deref(), Some(Path::new("/models/decoder")));
        assert_eq!(config.device.value, Device::Cuda);
        assert_eq!(config.device.source, Source::Env("SIFT_MODEL_DEVICE"));
    }

    #[test]
    fn the_user_file_is_under_xdg_config_home_else_home() {
        let p = user_config_path(&env_of(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]));
        assert_eq!(p, Some(PathBuf::from("/x/sift/config.toml")));
        let p = user_config_path(&env_of(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")]));
        assert_eq!(p, Some(PathBuf::from("/h/.config/sift/config.toml")));
        assert_eq!(user_config_path(&env_of(&[])), None);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_file_and_key() {
        let cases = [
            ("[model]\nbakend = \"openai\"\n", "[model] bakend: unknown key"),
            ("[model]\nbackend = \"llama\"\n", "[model] backend: \"llama\" is not a backend"),
            ("[model]\ndevice = \"tpu\"\n", "[model] device: \"tpu\" is not a device"),
            (
                "[model]\ncontext_window = \"big\"\n",
                "[model] context_window: expected a whole number",
            ),
            (
                "[model]\ntimeout_secs = 0\n",
                "[model] timeout_secs: expected a whole number of at least 1",
            ),
            (
                "[model]\nbase_url = \"localhost:8080\"\n",
                "[model] base_url: \"localhost:8080\" is not an http",
            ),
            ("[model]\nname = 3\n", "[model] name: expected a string, found integer"),
            (
                "[model]\napi_key_env = \"$OPENAI_API_KEY\"\n",
                "[model] api_key_env: \"$OPENAI_API_KEY\" is not",
            ),
            ("model = 1\n", "model must be a table"),
            ("[model\n", "config.toml: "),
        ];
        for (text, wanted) in cases {
            let (_dir, _xdg, root) = setup("", text);
            let err = load(Some(&root), &env_of(&[])).unwrap_err().to_string();
            assert!(err.contains(wanted), "{text:?}: {err}");
            assert!(err.contains(&root.join(".sift/config.toml").display().to_string()), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let err = load(Some(dir.path()), &env_of(&[("SIFT_MODEL_BACKEND", "gpt")])).unwrap_err();
        assert!(err.to_string().contains("SIFT_MODEL_BACKEND: \"gpt\" is not a backend"), "{err}");
    }

    #[test]
    fn relative_paths_resolve_against_the_repository_or_the_user_config_folder() {
        let (_dir, xdg, root) = setup("[model]\npath = \"user-model\"\n", "");
        let env = env_of(&[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        let config = load(Some(&root), &env).unwrap();
        assert_eq!(config.path.value, Some(xdg.join("sift/user-model")));
        std::fs::write(root.join(".sift/config.toml"), "[model]\npath = \"models/d\"\n").unwrap();
        let config = load(Some(&root), &env).unwrap();
        assert_eq!(config.path.value, Some(root.join("models/d")));
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
