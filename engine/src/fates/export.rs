//! `sift feedback export --format jsonl`: the record of fates as a preference dataset, for
//! training elsewhere (the schema is in `docs/feedback.md`). Nothing is sent anywhere: the
//! lines go where the user writes them.
//!
//! Two kinds of line, oldest first:
//!
//! - `run`: an agent run the user decided on: the run, its transcript (the prompt's context, in
//!   `.sift/agent/`), the model, the decision and the user's reason;
//! - `pair`: a best-of-N run whose attempt the user took: the attempt chosen and those shown
//!   with it and not taken, and the ranking's features of each (from the agent's record of
//!   picks, handed in by the caller: this module reads only the record of fates).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Event, Fate, Kind};

/// One line of the export.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// A decided agent run.
    Run {
        /// The export's schema version (1).
        v: u32,
        /// The run (its transcript's id).
        run: String,
        /// Its transcript, relative to the repository.
        transcript: String,
        /// The model.
        model: Option<String>,
        /// `accepted`, `edited` or `rejected`.
        fate: Fate,
        /// The user's reason.
        reason: Option<String>,
        /// When it was decided (seconds since the Unix epoch).
        at: u64,
    },
    /// A best-of-N choice.
    Pair {
        /// The export's schema version (1).
        v: u32,
        /// The run (its first-ranked attempt's transcript id).
        run: String,
        /// That transcript, relative to the repository.
        transcript: String,
        /// The model.
        model: Option<String>,
        /// The attempt taken.
        chosen: usize,
        /// The attempts shown and not taken.
        rejected: Vec<usize>,
        /// The ranking's features of each attempt, in the order shown (best-ranked first), each
        /// with its `attempt` index; empty when the ranking was not recorded.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        features: Vec<serde_json::Value>,
        /// When it was taken.
        at: u64,
    },
}

/// The export of `events`, with the ranking's `features` of each best-of-N run (by run).
pub fn lines(events: &[Event], features: &BTreeMap<String, Vec<serde_json::Value>>) -> Vec<Line> {
    let transcript = |run: &str| format!(".sift/agent/{run}.jsonl");
    let mut models: BTreeMap<&str, &str> = BTreeMap::new();
    let mut shown: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match (e.kind, e.fate) {
            (Kind::AgentRun, Fate::Shown) => {
                if let Some(model) = &e.model {
                    models.insert(&e.id, model);
                }
            }
            (Kind::AgentRun, Fate::Accepted | Fate::Edited | Fate::Rejected) => {
                out.push(Line::Run {
                    v: 1,
                    run: e.id.clone(),
                    transcript: transcript(&e.id),
                    model: e
                        .model
                        .clone()
                        .or_else(|| models.get(e.id.as_str()).map(|m| m.to_string())),
                    fate: e.fate,
                    reason: e.reason.clone(),
                    at: e.at,
                });
            }
            (Kind::Attempt, fate) => {
                let Some((run, n)) = e.id.rsplit_once('#') else { continue };
                let Ok(n) = n.parse::<usize>() else { continue };
                match fate {
                    Fate::Shown => shown.entry(run).or_default().push(n),
                    Fate::Accepted => out.push(Line::Pair {
                        v: 1,
                        run: run.to_owned(),
                        transcript: transcript(run),
                        model: e.model.clone(),
                        chosen: n,
                        rejected: shown
                            .get(run)
                            .map(|all| all.iter().copied().filter(|&a| a != n).collect())
                            .unwrap_or_default(),
                        features: features.get(run).cloned().unwrap_or_default(),
                        at: e.at,
                    }),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decided_runs_and_best_of_n_choices_are_exported() {
        let e = |kind, id: &str, fate| Event { at: 7, ..Event::new(kind, id, fate) };
        let events = vec![
            e(Kind::AgentRun, "r1", Fate::Shown).model("m"),
            e(Kind::AgentRun, "r2", Fate::Shown).model("m"), // undecided: not exported
            e(Kind::AgentRun, "r1", Fate::Rejected).reason(Some("touches the wrong module")),
            e(Kind::Attempt, "r3#0", Fate::Shown),
            e(Kind::Attempt, "r3#1", Fate::Shown),
            e(Kind::Attempt, "r3#2", Fate::Shown),
            e(Kind::Attempt, "r3#1", Fate::Accepted).model("m"),
        ];
        let ranking = vec![
            serde_json::json!({"attempt": 1, "finished": true}),
            serde_json::json!({"attempt": 0, "finished": false}),
        ];
        let features = BTreeMap::from([("r3".to_owned(), ranking.clone())]);
        let out: Vec<serde_json::Value> =
            lines(&events, &features).iter().map(|l| serde_json::to_value(l).unwrap()).collect();
        assert_eq!(
            out,
            [
                serde_json::json!({"kind": "run", "v": 1, "run": "r1",
                    "transcript": ".sift/agent/r1.jsonl", "model": "m", "fate": "rejected",
                    "reason": "touches the wrong module", "at": 7}),
                serde_json::json!({"kind": "pair", "v": 1, "run": "r3",
                    "transcript": ".sift/agent/r3.jsonl", "model": "m", "chosen": 1,
                    "rejected": [0, 2], "features": ranking, "at": 7}),
            ]
        );
        let without = serde_json::to_value(&lines(&events, &BTreeMap::new())[1]).unwrap();
        assert!(without.get("features").is_none(), "no ranking recorded: no features");
    }
}
