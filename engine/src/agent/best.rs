//! Best-of-N: K independent attempts at one task, each in its own overlay (its own
//! [`Session`]), ranked by what can be checked, shown side by side; the one the user picks is
//! recorded (`.sift/agent/picks.jsonl`) for learning from use.
//!
//! Ranking, most important first: the attempt finished (the model said it was done); it
//! changed something (when any attempt did: an empty diff rarely answers a coding task); fewer
//! checker problems on its changed lines; fewer reviewer findings; more attempts that reached
//! the very same change (agreement between independent samples is evidence); fewer failed tool
//! calls; then the earlier attempt.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sift_indexer::store::Store;
use sift_indexer::store::jsonl::JsonlLog;
use sift_runtime::llm::{Cancel, LanguageModel};

use super::tools::{check, review};
use super::{Event, Options, Outcome, Session, Stop, Task, Transcript, run};

/// What could be checked about one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Score {
    /// The model said it was done (not stopped by a budget or a failure).
    pub finished: bool,
    /// Files changed.
    pub files_changed: usize,
    /// Checker problems on the changed lines (`None`: no checker ran).
    pub checker_problems: Option<usize>,
    /// Reviewer findings on the changed lines (`None`: the review could not run).
    pub review_findings: Option<usize>,
    /// Other attempts that produced the same diff.
    pub agreement: usize,
    /// Failed tool calls.
    pub tool_errors: usize,
}

/// One attempt and its score.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// 0-based, in the order they ran.
    pub index: usize,
    /// What it produced.
    pub outcome: Outcome,
    /// Its unified diff.
    pub diff: String,
    /// Its score.
    pub score: Score,
}

/// Runs `n` attempts: attempt `i` gets session `sessions(i)` (a fresh overlay each), a
/// transcript of its own in `store` when one is given, and for `i > 0` a different seed and a
/// temperature of at least 0.7 (attempt 0 keeps the task's options). Returns them ranked, best
/// first. Events carry the attempt's index.
pub fn run_best_of<'a>(
    n: usize,
    sessions: &mut dyn FnMut(usize) -> crate::Result<Session<'a>>,
    model: &dyn LanguageModel,
    task: &Task<'_>,
    store: Option<&Store>,
    cancel: &Cancel,
    on_event: &mut dyn FnMut(usize, Event),
) -> crate::Result<Vec<Attempt>> {
    let mut attempts = Vec::with_capacity(n);
    for i in 0..n.max(1) {
        if cancel.is_cancelled() && i > 0 {
            break;
        }
        let mut session = sessions(i)?;
        let transcript = store.map(Transcript::create).transpose()?;
        let mut options: Options = task.options.clone();
        if i > 0 {
            options.params.temperature = options.params.temperature.max(0.7);
            options.params.seed = Some(options.params.seed.unwrap_or(0).wrapping_add(i as u64));
        }
        let attempt_task = Task {
            options: &options,
            resumed: Vec::new(),
            transcript: transcript.as_ref(),
            ..task.clone()
        };
        let outcome = run(&mut session, model, attempt_task, cancel, &mut |e| on_event(i, e));
        let checker_problems =
            if outcome.changes.is_empty() { None } else { check::assess(&session, cancel).1 };
        let review_findings = review::assess(&session).1;
        let diff = outcome.changes.unified_diff();
        let score = Score {
            finished: outcome.stop == Stop::Done,
            files_changed: outcome.changes.changed_paths().len(),
            checker_problems,
            review_findings,
            agreement: 0,
            tool_errors: outcome.tool_errors,
        };
        attempts.push(Attempt { index: i, outcome, diff, score });
    }
    rank(&mut attempts);
    Ok(attempts)
}

/// Fills in agreement and sorts best first (see the module doc).
pub fn rank(attempts: &mut [Attempt]) {
    let mut same: HashMap<String, usize> = HashMap::new();
    for a in attempts.iter() {
        *same.entry(a.diff.clone()).or_default() += 1;
    }
    for a in attempts.iter_mut() {
        a.score.agreement = same[&a.diff] - 1;
    }
    let any_change = attempts.iter().any(|a| a.score.files_changed > 0);
    attempts.sort_by_key(|a| {
        let s = &a.score;
        (
            !s.finished,
            any_change && s.files_changed == 0,
            s.checker_problems.unwrap_or(0),
            s.review_findings.unwrap_or(0),
            std::cmp::Reverse(s.agreement),
            s.tool_errors,
            a.index,
        )
    });
}

/// A recorded choice between attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The run (its first-ranked attempt's transcript id); absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The task.
    pub task: String,
    /// The model.
    pub model: String,
    /// The attempts' scores (the ranking's features) in the order shown, best first, as JSON,
    /// each with its `attempt` index.
    pub scores: Vec<serde_json::Value>,
    /// Which was ranked first.
    pub ranked_first: usize,
    /// Which the user took (`None`: none of them).
    pub picked: Option<usize>,
}

impl Pick {
    /// The record of run `run`'s `attempts` (ranked, best first) for `task` on `model`, with
    /// the index of the attempt the user took, if any.
    pub fn of(
        run: &str,
        task: &str,
        model: &str,
        attempts: &[Attempt],
        picked: Option<usize>,
    ) -> Pick {
        Pick {
            time: super::transcript::now(),
            run: Some(run.to_owned()),
            task: task.to_owned(),
            model: model.to_owned(),
            scores: attempts
                .iter()
                .map(|a| {
                    let mut score = serde_json::to_value(&a.score).unwrap_or_default();
                    if let Some(map) = score.as_object_mut() {
                        map.insert("attempt".into(), a.index.into());
                    }
                    score
                })
                .collect(),
            ranked_first: attempts.first().map_or(0, |a| a.index),
            picked,
        }
    }
}

/// Appends a pick to `.sift/agent/picks.jsonl`.
pub fn record_pick(store: &Store, pick: &Pick) -> sift_indexer::Result<()> {
    store.ensure()?;
    JsonlLog::new(picks_file(store)).append(pick)
}

fn picks_file(store: &Store) -> std::path::PathBuf {
    store.path(&super::transcript::AGENT_DIR).join("picks.jsonl")
}

/// The ranking's features of each best-of-N run recorded in `.sift/agent/picks.jsonl`, by run
/// (the latest record of a run wins: a pick recorded when shown, again when taken), for
/// `sift feedback export`'s pairs. Unreadable lines and records without a run are skipped.
pub fn features(store: &Store) -> std::collections::BTreeMap<String, Vec<serde_json::Value>> {
    let records = JsonlLog::<Pick>::new(picks_file(store)).read().map(|r| r.records);
    records.unwrap_or_default().into_iter().filter_map(|p| Some((p.run?, p.scores))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(index: usize, diff: &str, finished: bool, problems: Option<usize>) -> Attempt {
        Attempt {
            index,
            outcome: Outcome {
                stop: if finished { Stop::Done } else { Stop::MaxSteps },
                answer: String::new(),
                changes: super::super::Changes::new(),
                steps: 1,
                tokens: 0,
                compactions: 0,
                rules: Vec::new(),
                tool_errors: 0,
                transcript: None,
                notes: Vec::new(),
            },
            diff: diff.into(),
            score: Score {
                finished,
                files_changed: usize::from(!diff.is_empty()),
                checker_problems: problems,
                review_findings: Some(0),
                agreement: 0,
                tool_errors: 0,
            },
        }
    }

    #[test]
    fn clean_checks_beat_agreement_and_unfinished_attempts_come_last() {
        let mut attempts = vec![
            attempt(0, "diff A", true, Some(2)),
            attempt(1, "diff B", true, Some(0)),
            attempt(2, "diff A", true, Some(2)),
            attempt(3, "diff C", false, Some(0)),
            attempt(4, "", true, None),
        ];
        rank(&mut attempts);
        let order: Vec<usize> = attempts.iter().map(|a| a.index).collect();
        assert_eq!(order, [1, 0, 2, 4, 3]);
        assert_eq!(attempts[1].score.agreement, 1);
    }

    #[test]
    fn agreement_breaks_ties() {
        let mut attempts = vec![
            attempt(0, "diff X", true, Some(0)),
            attempt(1, "diff Y", true, Some(0)),
            attempt(2, "diff Y", true, Some(0)),
        ];
        rank(&mut attempts);
        assert_eq!(attempts[0].index, 1);
    }
}
