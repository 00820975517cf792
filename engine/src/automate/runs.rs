//! The automations' runs: `.sift/agent/automations.jsonl`, one line each time a run changes
//! state (started, interrupted, out of budget, checks failed, delivered…), beside the agent's
//! transcripts. The transcript is the checkpoint (every message, the pending change after each
//! tool call, the tokens of each step, on one line each); this log says which job a transcript
//! belongs to, on what it was triggered, and how it ended. A run left `running` (its runner was
//! killed) or `interrupted` (the model failed, or it was cancelled) is resumed by the next
//! trigger of the same job on the same commit, or by `sift automate resume ID`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sift_indexer::store::Store;
use sift_indexer::store::jsonl::JsonlLog;

use super::Job;

/// The log's file name, in the store's `agent/` folder.
pub const RUNS_FILE: &str = "automations.jsonl";

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Started and not ended: running, or its runner was killed (resumable).
    Running,
    /// Stopped by a model failure or a cancellation (resumable).
    Interrupted,
    /// The budget ran out: nothing is delivered.
    OutOfBudget,
    /// The agent changed nothing.
    NoChange,
    /// A check failed: nothing is delivered.
    ChecksFailed,
    /// Its change was delivered.
    Delivered,
    /// Its change passed the checks but could not be delivered (the detail says why).
    NotDelivered,
}

impl State {
    /// Whether a later trigger (or `sift automate resume`) goes on with it.
    pub fn resumable(self) -> bool {
        matches!(self, State::Running | State::Interrupted)
    }

    /// Its name, as the log and `sift automate status` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Interrupted => "interrupted",
            State::OutOfBudget => "out_of_budget",
            State::NoChange => "no_change",
            State::ChecksFailed => "checks_failed",
            State::Delivered => "delivered",
            State::NotDelivered => "not_delivered",
        }
    }
}

/// One line of the log: a run's state from then on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id: its transcript's (`.sift/agent/<run>.jsonl`).
    pub run: String,
    /// The job as it runs (a resumed run keeps the job it started with).
    pub job: Job,
    /// What triggered it, and on which commit: `o/r#3@<head>`, `manual@<head>`,
    /// `schedule@<head>`. A later trigger with the same key resumes it.
    pub key: String,
    /// Its state.
    pub state: State,
    /// Seconds since the Unix epoch, when the run started.
    pub started: u64,
    /// Seconds since the Unix epoch, of this line.
    pub time: u64,
    /// In words: why it stopped, what was delivered where.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

fn log(store: &Store) -> JsonlLog<RunRecord> {
    JsonlLog::new(store.path(&crate::store::AGENT_DIR).join(RUNS_FILE))
}

/// Appends `record` (the run's new state).
pub fn record(store: &Store, record: &RunRecord) -> Result<(), String> {
    store.ensure().map_err(|e| e.to_string())?;
    let dir = store.path(&crate::store::AGENT_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    log(store).append(record).map_err(|e| e.to_string())
}

/// Every run, in its latest state, oldest first.
pub fn all(store: &Store) -> Vec<RunRecord> {
    let Ok(replay) = log(store).read() else { return Vec::new() };
    let mut order = Vec::new();
    let mut latest: BTreeMap<String, RunRecord> = BTreeMap::new();
    for r in replay.records {
        if !latest.contains_key(&r.run) {
            order.push(r.run.clone());
        }
        latest.insert(r.run.clone(), r);
    }
    order.into_iter().filter_map(|id| latest.remove(&id)).collect()
}

/// The run `id`, in its latest state.
pub fn get(store: &Store, id: &str) -> Option<RunRecord> {
    all(store).into_iter().find(|r| r.run == id)
}

/// The newest resumable run of `job` (the same definition) triggered by `key`.
pub fn unfinished(store: &Store, job: &Job, key: &str) -> Option<RunRecord> {
    all(store).into_iter().rev().find(|r| r.key == key && r.job == *job && r.state.resumable())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> Job {
        super::super::Jobs::parse(
            &format!("[[job]]\nname = \"{name}\"\non = \"manual\"\ntask = \"t\"\n"),
            "f",
        )
        .unwrap()
        .jobs
        .remove(0)
    }

    #[test]
    fn the_latest_state_wins_and_only_unfinished_runs_of_the_same_job_resume() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(dir.path()).unwrap();
        let at = |run: &str, name: &str, state, time| RunRecord {
            run: run.into(),
            job: job(name),
            key: "manual@abc".into(),
            state,
            started: 1,
            time,
            detail: String::new(),
        };
        record(&store, &at("r1", "a", State::Running, 1)).unwrap();
        record(&store, &at("r2", "a", State::Running, 2)).unwrap();
        record(&store, &at("r1", "a", State::Delivered, 3)).unwrap();
        let runs = all(&store);
        assert_eq!(
            runs.iter().map(|r| (r.run.as_str(), r.state)).collect::<Vec<_>>(),
            [("r1", State::Delivered), ("r2", State::Running)]
        );
        assert_eq!(unfinished(&store, &job("a"), "manual@abc").unwrap().run, "r2");
        assert!(unfinished(&store, &job("a"), "manual@other").is_none(), "another commit");
        assert!(unfinished(&store, &job("b"), "manual@abc").is_none(), "another job");
        record(&store, &at("r2", "a", State::OutOfBudget, 4)).unwrap();
        assert!(unfinished(&store, &job("a"), "manual@abc").is_none(), "ended");
    }
}
