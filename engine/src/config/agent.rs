//! `[agent]` of the configuration file: the checkers the agent's `check` tool runs, and the
//! default budget of a run (the CLI's flags and the editor's request override it).

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};
use crate::agent::Budget;
use crate::agent::checkers::Checker;

/// The `[agent]` section's keys.
pub const SECTION: Section = Section {
    name: "agent",
    doc: "The coding agent: the checkers its check tool runs and the default budget of a run.",
    strict: true,
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
