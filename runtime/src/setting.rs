//! A configuration value and where it came from.
//!
//! sift's configuration is layered (defaults, the user file, the repository file, the editor's
//! settings, the environment, command-line flags; `sift_engine::config` reads them) and every
//! value remembers which layer set it, so `sift config show` and `sift model info` can say what
//! is used and why. The sections that carry their sources ([`crate::llm::config::ModelConfig`])
//! hold [`Setting`]s.

use std::fmt;
use std::path::PathBuf;

/// Where a value came from, from the weakest layer to the strongest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Source {
    /// Nothing set it.
    #[default]
    Default,
    /// The per-user configuration file.
    User(PathBuf),
    /// The repository's configuration file.
    Repo(PathBuf),
    /// The editor's settings (the language server's `initializationOptions`).
    Editor,
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
}

impl Source {
    /// The layer's name, as `sift config show --json` writes it: `default`, `user`,
    /// `repository`, `editor`, `environment` or `flag`.
    pub fn layer(&self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::User(_) => "user",
            Source::Repo(_) => "repository",
            Source::Editor => "editor",
            Source::Env(_) => "environment",
            Source::Flag(_) => "flag",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(p) => write!(f, "user config {}", p.display()),
            Source::Repo(p) => write!(f, "repository config {}", p.display()),
            Source::Editor => f.write_str("editor settings (initializationOptions)"),
            Source::Env(var) => write!(f, "environment {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
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
    /// A value nothing set.
    pub fn default_to(value: T) -> Self {
        Self { value, source: Source::Default }
    }

    /// A value from `source`.
    pub fn from(value: T, source: Source) -> Self {
        Self { value, source }
    }
}
