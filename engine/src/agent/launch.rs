//! Starting the agent on a request, the same way from every front end: one run (new, or
//! continued from its transcript) or best-of-N attempts, ranked; the ranking recorded once the
//! front end knows which attempt the user took; and the runs whose change waits for the
//! user's answer ([`Pending`], the language server's `sift.agent.apply`). Each run's fate is
//! recorded in its workspace's record ([`crate::fates`]): shown here when it ends, taken or
//! refused by [`applied`] and [`refused`], which every front end calls.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use sift_runtime::llm::{Cancel, LanguageModel, Message};

use super::best::{self, Attempt, Pick};
use super::transcript::Resumed;
use super::{Budget, Changes, Event, Options, Outcome, Setup, Stop, Task, Transcript};
use crate::fates::{self, Fate, Kind, Recorder};
use crate::workspace::Workspace;

/// What to run.
pub struct Request<'a> {
    /// The task in the user's words (for a resumed run: a new request, or empty).
    pub task: &'a str,
    /// Independent attempts (best-of-N); 1 is one run.
    pub attempts: usize,
    /// A run to continue: its transcript and what was read back from it.
    pub resume: Option<(Transcript, Resumed)>,
    /// For a new run: the transcript it writes (made here when `None`; ignored when resuming
    /// or for best-of-N).
    pub transcript: Option<Transcript>,
    /// Budget and sampling.
    pub options: &'a Options,
}

/// What a request produced.
pub struct Finished {
    /// The run's outcome, or the first-ranked attempt's.
    pub outcome: Outcome,
    /// Every attempt, ranked best first (best-of-N only; empty for one run).
    pub attempts: Vec<Attempt>,
    /// The transcript of the run (of the first-ranked attempt).
    pub id: String,
    /// The model's name.
    pub model: String,
    /// The task as it ran (a resumed run's own task).
    pub task: String,
}

/// A budget from `[agent]` (`base`) with a front end's overrides over it (flags, a request's
/// parameters).
pub fn budget(
    base: Budget,
    max_steps: Option<usize>,
    max_tokens: Option<u64>,
    timeout_secs: Option<u64>,
) -> Budget {
    Budget {
        max_steps: max_steps.unwrap_or(base.max_steps),
        max_tokens: max_tokens.unwrap_or(base.max_tokens),
        max_duration: timeout_secs.map_or(base.max_duration, std::time::Duration::from_secs),
    }
}

/// Runs `request` in `workspace` (with the editor's `unsaved` buffers) under `setup`. Events
/// carry the attempt's index (0 for one run).
pub fn launch(
    setup: &Setup,
    workspace: &Workspace,
    unsaved: &BTreeMap<String, String>,
    model: &dyn LanguageModel,
    request: Request<'_>,
    cancel: &Cancel,
    on_event: &mut dyn FnMut(usize, Event),
) -> crate::Result<Finished> {
    let name = model.describe().name;
    let options = request.options;
    if request.attempts > 1 {
        let mut sessions = |_: usize| setup.session(workspace, unsaved);
        let shared = Task { text: request.task, resumed: Vec::new(), options, transcript: None };
        let attempts = best::run_best_of(
            request.attempts,
            &mut sessions,
            model,
            &shared,
            Some(&setup.store),
            cancel,
            on_event,
        )?;
        // At least one attempt always runs.
        let outcome = attempts.first().map_or_else(
            || idle(Stop::Cancelled, Changes::default(), Vec::new(), None),
            |first| first.outcome.clone(),
        );
        let finished = Finished {
            id: outcome.transcript.clone().unwrap_or_default(),
            outcome,
            attempts,
            model: name,
            task: request.task.to_owned(),
        };
        finished.record_shown(&workspace.recorder);
        return Ok(finished);
    }
    let mut session = setup.session(workspace, unsaved)?;
    let mut resumed_options = None;
    let (transcript, task, history, finished_before) = match request.resume {
        Some((transcript, resumed)) => {
            session = session.with_changes(resumed.changes)?;
            let mut history = resumed.history;
            let new_request = !request.task.trim().is_empty();
            if new_request {
                // A new request gets a budget of its own.
                history.push(Message::user(request.task.to_owned()));
            } else {
                // An interrupted run goes on with what is left of its budget.
                let mut left = options.clone();
                left.budget.max_steps = left.budget.max_steps.saturating_sub(resumed.steps);
                left.budget.max_tokens = left.budget.max_tokens.saturating_sub(resumed.tokens);
                resumed_options = Some(left);
            }
            (transcript, resumed.task, history, resumed.ended && !new_request)
        }
        None => {
            let transcript = match request.transcript {
                Some(t) => t,
                None => Transcript::create(&setup.store)?,
            };
            (transcript, request.task.to_owned(), Vec::new(), false)
        }
    };
    let options = resumed_options.as_ref().unwrap_or(options);
    let outcome = if finished_before {
        // A finished run continued without a new request: only its change is wanted.
        idle(
            Stop::Done,
            session.changes.clone(),
            session.rules.applied(),
            Some(transcript.id().to_owned()),
        )
    } else {
        let run = Task { text: &task, resumed: history, options, transcript: Some(&transcript) };
        super::run(&mut session, model, run, cancel, &mut |e| on_event(0, e))
    };
    let finished = Finished {
        outcome,
        attempts: Vec::new(),
        id: transcript.id().to_owned(),
        model: name,
        task,
    };
    finished.record_shown(&workspace.recorder);
    Ok(finished)
}

/// Records that the user took run `id`'s change as proposed (`attempt`: which best-of-N
/// attempt), and keeps what it wrote for measuring its retention (`retention::snapshot`).
pub fn applied(
    recorder: &Recorder,
    root: &std::path::Path,
    id: &str,
    model: &str,
    changes: &Changes,
    attempt: Option<usize>,
) {
    let files = changes.changed_paths().len();
    recorder
        .record(fates::Event::new(Kind::AgentRun, id, Fate::Accepted).model(model).count(files));
    super::retention::snapshot(root, recorder, id, changes, fates::now());
    if let Some(attempt) = attempt {
        recorder.record(
            fates::Event::new(Kind::Attempt, format!("{id}#{attempt}"), Fate::Accepted)
                .model(model),
        );
    }
}

/// Records that the user refused run `id`'s change, with their `reason` when they gave one.
pub fn refused(recorder: &Recorder, id: &str, reason: Option<&str>) {
    recorder.record(fates::Event::new(Kind::AgentRun, id, Fate::Rejected).reason(reason));
}

/// The outcome of a run that took no step.
fn idle(stop: Stop, changes: Changes, rules: Vec<String>, transcript: Option<String>) -> Outcome {
    Outcome {
        stop,
        answer: String::new(),
        changes,
        steps: 0,
        tokens: 0,
        compactions: 0,
        rules,
        tool_errors: 0,
        transcript,
        notes: Vec::new(),
    }
}

impl Finished {
    /// Records the run (and each best-of-N attempt) as shown to the user, with how many files
    /// it changes. A run that changes nothing proposes nothing: it is not recorded.
    fn record_shown(&self, recorder: &Recorder) {
        let files = self.outcome.changes.file_changes().len();
        if files == 0 && self.attempts.iter().all(|a| a.diff.is_empty()) {
            return;
        }
        recorder.record(
            fates::Event::new(Kind::AgentRun, &self.id, Fate::Shown)
                .model(&self.model)
                .count(files),
        );
        for attempt in &self.attempts {
            let id = format!("{}#{}", self.id, attempt.index);
            recorder.record(fates::Event::new(Kind::Attempt, id, Fate::Shown).model(&self.model));
        }
    }

    /// Records a best-of-N ranking and the attempt the user `picked` (its index; `None` when
    /// not known yet) in `.sift/agent/`; nothing for one run. A failure is a warning: the run
    /// is not lost for it.
    pub fn record_pick(&self, setup: &Setup, picked: Option<usize>) {
        if self.attempts.is_empty() {
            return;
        }
        let pick = Pick::of(&self.id, &self.task, &self.model, &self.attempts, picked);
        if let Err(e) = best::record_pick(&setup.store, &pick) {
            tracing::warn!("cannot record the ranking: {e}");
        }
    }
}

/// A run whose change waits for the user.
#[derive(Debug, Clone)]
pub struct PendingRun {
    /// The workspace it ran in.
    pub root: PathBuf,
    /// Its task.
    pub task: String,
    /// The model that made it.
    pub model: String,
    /// The change it proposes.
    pub changes: Changes,
}

/// The runs whose change waits for the user, by id, until applied or discarded.
#[derive(Default)]
pub struct Pending {
    runs: Mutex<HashMap<String, PendingRun>>,
}

impl Pending {
    /// Keeps `run` under `id` until it is taken or discarded.
    pub fn insert(&self, id: String, run: PendingRun) {
        self.lock().insert(id, run);
    }

    /// The run `id`, left pending.
    pub fn get(&self, id: &str) -> Option<PendingRun> {
        self.lock().get(id).cloned()
    }

    /// Removes the run `id`: applied or discarded. `None` when it was not pending.
    pub fn remove(&self, id: &str) -> Option<PendingRun> {
        self.lock().remove(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PendingRun>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
