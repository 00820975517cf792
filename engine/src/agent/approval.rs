//! Leaving the sandbox for one command: only with the user's approval, and always logged.
//!
//! The model can *ask* (the `run` tool's `outside_sandbox`, with a reason); what answers is the
//! front end's [`Approver`], which the user set up: the CLI approves only with
//! `--allow-unsandboxed`, the language server asks the user in the editor each time. No
//! argument, configuration file or rules file changes the answer, and without an approver every
//! request is refused ([`Refuse`]). Every request, approved or not, is appended to
//! `.sift/agent/unsandboxed.jsonl` with its outcome.

use serde::{Deserialize, Serialize};
use sift_indexer::store::Store;
use sift_indexer::store::jsonl::JsonlLog;
use sift_runtime::llm::Cancel;

/// A command the model asked to run outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escape {
    /// The shell command line.
    pub command: String,
    /// Why the model says it must leave the sandbox.
    pub why: String,
    /// The task of the run that asks (its first line).
    pub task: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it outside the sandbox, this once.
    Approved {
        /// How the user approved it (`--allow-unsandboxed`, `the editor's prompt`).
        by: String,
    },
    /// Do not.
    Refused {
        /// Why, for the model (and the log).
        why: String,
    },
}

/// Decides whether one command may run outside the sandbox: the front end's, never the
/// model's.
pub trait Approver: Send + Sync {
    /// The user's decision on `escape` (may block while the user is asked; a run cancelled
    /// meanwhile is a refusal, returned as soon as `cancel` says so).
    fn decide(&self, escape: &Escape, cancel: &Cancel) -> Decision;
}

/// Refuses every request: the default, where the front end gave no approver.
#[derive(Debug, Clone, Copy, Default)]
pub struct Refuse;

impl Approver for Refuse {
    fn decide(&self, _: &Escape, _: &Cancel) -> Decision {
        Decision::Refused {
            why: "commands outside the sandbox are not allowed in this run (only the user can \
                  allow them: `sift agent --allow-unsandboxed`, or the editor's prompt)"
                .into(),
        }
    }
}

/// One line of `.sift/agent/unsandboxed.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Logged {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The run's task (first line).
    pub task: String,
    /// The command line.
    pub command: String,
    /// The model's reason.
    pub why: String,
    /// `approved` or `refused`.
    pub decision: String,
    /// Who approved it, or why it was refused.
    pub detail: String,
    /// Its exit status, when it ran and exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
}

/// The log's file name in `.sift/agent/`.
pub const LOG_FILE: &str = "unsandboxed.jsonl";

/// Appends `record` to the store's log (a failure is logged, never fatal: the decision stands).
pub fn log(store: Option<&Store>, record: &Logged) {
    let Some(store) = store else { return };
    let appended = store.ensure().and_then(|()| {
        JsonlLog::new(store.path(&super::transcript::AGENT_DIR).join(LOG_FILE)).append(record)
    });
    if let Err(e) = appended {
        tracing::warn!("cannot log a command run outside the sandbox: {e}");
    }
}

/// Every request logged in `store`, oldest first.
pub fn logged(store: &Store) -> Vec<Logged> {
    JsonlLog::<Logged>::new(store.path(&super::transcript::AGENT_DIR).join(LOG_FILE))
        .read()
        .map(|r| r.records)
        .unwrap_or_default()
}
