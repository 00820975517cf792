//! `[agent]` of the configuration file: the checkers the agent's `check` tool runs, and the
//! default budget of a run (the CLI's flags and the editor's request override it).

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `[agent]` section's keys.
pub const SECTION: Section = Section {
    name: "agent",
    doc: "The coding agent: the checkers its check tool runs and the default budget of a run.",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[
        Key {
            name: "checkers",
            kind: Kind::List { item: "a command line" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "The project's checkers, each a command line run in the sandbox on a copy of the agent's change (`cargo clippy --message-format=json`, `ruff check --output-format=json .`, `mypy .`); findings are read as cargo's or ruff's JSON, tsc's format, or PATH:LINE: message lines. Empty: detected from the project (cargo check, ruff, tsc, go vet).",
        },
        Key {
            name: "max_steps",
            kind: Kind::Count { min: 1, max: 1000 },
            default: Default::Count(30),
            env: None,
            in_files: true,
            doc: "Model turns a run may take (sift agent --max-steps, sift/agent maxSteps override it).",
        },
        Key {
            name: "max_tokens",
            kind: Kind::Count { min: 1000, max: u64::MAX },
            default: Default::Count(400_000),
            env: None,
            in_files: true,
            doc: "Tokens a run may use, prompts and answers summed (sift agent --max-tokens overrides it).",
        },
        Key {
            name: "timeout_secs",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(900),
            env: None,
            in_files: true,
            doc: "Seconds a run may take (sift agent --timeout overrides it).",
        },
    ],
};

/// The `[agent]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// The configured checkers (`None`: detect them from the project).
    pub checkers: Option<Vec<Checker>>,
    /// The default budget of a run.
    pub budget: Budget,
}

impl Config {
    /// `[agent]`.
    pub fn agent(&self) -> Result<AgentSettings, Invalid> {
        let s = self.section(&SECTION)?;
        let lines = s.list("checkers");
        let checkers = (!lines.is_empty())
            .then(|| lines.iter().map(|line| Checker::from_command_line(line)).collect());
        Ok(AgentSettings {
            checkers,
            budget: Budget {
                max_steps: s.count("max_steps") as usize,
                max_tokens: s.count("max_tokens"),
                max_duration: std::time::Duration::from_secs(s.count("timeout_secs")),
            },
        })
    }
}

/// How far a run may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Model turns.
    pub max_steps: usize,
    /// Tokens, prompt and completion, summed over the turns.
    pub max_tokens: u64,
    /// Wall-clock time.
    pub max_duration: Duration,
}

impl std::default::Default for Budget {
    fn default() -> Self {
        Budget { max_steps: 30, max_tokens: 400_000, max_duration: Duration::from_secs(15 * 60) }
    }
}

/// How a checker prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `cargo check --message-format=json`.
    CargoJson,
    /// `ruff check --output-format=json`.
    RuffJson,
    /// `PATH:LINE:COL: message` or `PATH:LINE: message` (go vet, mypy, eslint's unix format,
    /// most compilers).
    Lines,
    /// `PATH(LINE,COL): message` (tsc).
    Tsc,
}

/// A checker: a command run in the workspace (its scratch copy) and how to read its output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checker {
    /// A short name (`cargo`, `ruff`…).
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// How it reports.
    pub format: Format,
    /// How long it may run.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

/// How long a checker may run unless it says (seconds).
pub(crate) fn default_timeout() -> u64 {
    120
}

impl Checker {
    /// A configured checker (`[agent] checkers`): the command line runs through `sh -c`, and
    /// its format is told by the program and flags it names: cargo or ruff with JSON output,
    /// tsc, else `PATH:LINE: message` lines. Named after its program.
    pub fn from_command_line(line: &str) -> Checker {
        let words: Vec<&str> = line.split_whitespace().collect();
        let program = words.first().map_or("", |w| w.rsplit('/').next().unwrap_or(w));
        let has = |flag: &str| words.iter().any(|w| w.starts_with(flag));
        let json = |flag: &str| {
            words.windows(2).any(|w| w[0] == flag && w[1] == "json")
                || words.iter().any(|w| *w == format!("{flag}=json"))
        };
        let format = match program {
            "cargo" if json("--message-format") || has("--message-format=json") => {
                Format::CargoJson
            }
            "ruff" if json("--output-format") => Format::RuffJson,
            "tsc" => Format::Tsc,
            _ => Format::Lines,
        };
        Checker {
            name: if program.is_empty() { "checker".into() } else { program.to_owned() },
            command: vec!["sh".into(), "-c".into(), line.to_owned()],
            format,
            timeout_secs: default_timeout(),
        }
    }
}
