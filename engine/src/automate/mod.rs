//! Automations: the team's own agent jobs, committed in `.sift/automations.toml`, run on a pull
//! request, a schedule or by hand with the agent in the sandbox, and delivered as something a
//! person reviews (see `docs/automate.md`).
//!
//! - Jobs are data ([`Jobs`]); on a pull request they are read **from the base revision only**
//!   ([`Jobs::for_pull_request`]): a pull request cannot add or change a job that runs on itself,
//!   and each job it adds or changes is reported instead.
//! - [`Job::matches`] decides whether a pull request triggers a job (paths, labels, size).
//! - [`task`] fills a job's template with the change (`{diff}`, `{files}`, `{findings}`).
//! - [`run`]: the agent (one run, or best-of-N with the checks picking the attempt), then the
//!   job's checks in the sandbox.
//! - [`deliver`]: the run's change as suggestion comments (one thread per suggestion across
//!   pushes, through the review bot's client), a branch and pull request, a report, or a patch.
//! - [`runs`]: the log of runs; with the agent's transcript as the checkpoint, a run cut off
//!   (killed, the model failed) resumes without running a finished tool call again.

pub mod deliver;
pub mod runs;

use std::path::Path;

use globset::{Glob, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// The jobs' file, relative to the repository root.
pub const AUTOMATIONS: &str = ".sift/automations.toml";

/// When a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// On every push to a pull request that matches its filters.
    PullRequest,
    /// On a scheduled CI run (`sift automate run --schedule`, from the workflow's `cron`).
    Schedule,
    /// Only when asked by name (`sift automate run --job NAME`).
    Manual,
}

/// Where a job's change goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Suggestion comments on the pull request's changed lines (the rest in the review body).
    #[default]
    Suggestions,
    /// A patch file (`sift automate run --out DIR`).
    Patch,
    /// The agent's answer, as a report: one review comment on the pull request (a new one only
    /// when the report changed), else `DIR/<job>.md` or the terminal. Nothing the agent changed
    /// is delivered, and no check runs: a report job never edits.
    Report,
    /// A branch `sift/<job>/<pr-or-date>` and a pull request from it: against the pull
    /// request's own branch on a pull request, else against the default branch. Never a push to
    /// the pull request's branch or the default branch.
    Branch,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Its name (letters, digits, `-`, `_`).
    pub name: String,
    /// When it runs.
    pub on: Trigger,
    /// Path globs: a pull request triggers it when it changes a matching file (empty: any).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Labels: a pull request triggers it when it has one of them (empty: any).
    #[serde(default)]
    pub labels: Vec<String>,
    /// A pull request that changes more lines than this does not trigger it.
    #[serde(default)]
    pub max_changed_lines: Option<usize>,
    /// The task for the agent: `{diff}`, `{files}` and `{findings}` are filled in.
    pub task: String,
    /// Commands that decide success, run in the sandbox on the change (`{files}`: the files it
    /// changed); all must exit 0, else nothing is delivered.
    #[serde(default)]
    pub checks: Vec<String>,
    /// Where the change goes.
    #[serde(default)]
    pub deliver: Delivery,
    /// The agent's steps at most (default: `[agent] max_steps`).
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// Independent attempts (best-of-N): the first-ranked attempt whose checks pass is
    /// delivered. Attempts are not checkpointed: a killed best-of-N run starts again.
    #[serde(default)]
    pub attempts: Option<usize>,
    /// Hosts the job's commands and checks may reach, besides `[sandbox] allow_net` (the same
    /// forms: `host`, `host:port`, `*.domain`): through the sandbox's checking proxy, on a
    /// machine with network namespaces (elsewhere the job fails to start rather than opening
    /// the network). The model's endpoint is sift's to reach, not the job's.
    #[serde(default)]
    pub allow_net: Vec<String>,
}

/// The file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jobs {
    /// The jobs, in the file's order.
    #[serde(default, rename = "job")]
    pub jobs: Vec<Job>,
}

/// What a pull request is, for matching.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// The files it changes.
    pub files: Vec<String>,
    /// Its labels.
    pub labels: Vec<String>,
    /// Lines it adds and removes.
    pub changed_lines: usize,
}

/// The jobs of a pull request: the base revision's, and the names of the jobs the pull
/// request itself adds or changes (reported, never run).
#[derive(Debug, Clone, Default)]
pub struct ForPullRequest {
    /// The jobs in force (the base revision's).
    pub jobs: Jobs,
    /// Jobs the pull request adds or changes: not run.
    pub changed: Vec<String>,
}

impl Jobs {
    /// Parses the file's text (`origin` names it in errors) and checks the names.
    pub fn parse(text: &str, origin: &str) -> Result<Jobs, String> {
        let jobs: Jobs = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        for job in &jobs.jobs {
            let ok = !job.name.is_empty()
                && job.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(format!(
                    "{origin}: job name {:?}: use letters, digits, `-` and `_`",
                    job.name
                ));
            }
            for glob in &job.paths {
                Glob::new(glob).map_err(|e| format!("{origin}: job {}: {e}", job.name))?;
            }
        }
        Ok(jobs)
    }

    /// The working tree's jobs (none without the file).
    pub fn working_tree(root: &Path) -> Result<Jobs, String> {
        match std::fs::read_to_string(root.join(AUTOMATIONS)) {
            Ok(text) => Jobs::parse(&text, AUTOMATIONS),
            Err(_) => Ok(Jobs::default()),
        }
    }

    /// The jobs of a pull request whose base commit is `base` (see [`ForPullRequest`]).
    pub fn for_pull_request(root: &Path, base: &str) -> Result<ForPullRequest, String> {
        let at = |commit: &str| -> Result<Jobs, String> {
            match crate::review::settings::file_at(root, commit, AUTOMATIONS) {
                Ok(Some(text)) => Jobs::parse(&text, &format!("{}:{AUTOMATIONS}", short(commit))),
                Ok(None) => Ok(Jobs::default()),
                Err(e) => Err(e.to_string()),
            }
        };
        let jobs = at(base)?;
        // The head's file, as the pull request would have it (a broken one changes nothing).
        let head = Jobs::working_tree(root).unwrap_or_default();
        let changed = head
            .jobs
            .iter()
            .filter(|h| !jobs.jobs.iter().any(|b| b == *h))
            .map(|h| h.name.clone())
            .collect();
        Ok(ForPullRequest { jobs, changed })
    }

    /// The job called `name`.
    pub fn get(&self, name: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.name == name)
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

impl Job {
    /// Whether `change` (a pull request) triggers this job.
    pub fn matches(&self, change: &Change) -> bool {
        if self.on != Trigger::PullRequest {
            return false;
        }
        if self.max_changed_lines.is_some_and(|max| change.changed_lines > max) {
            return false;
        }
        if !self.labels.is_empty() && !self.labels.iter().any(|l| change.labels.contains(l)) {
            return false;
        }
        if self.paths.is_empty() {
            return !change.files.is_empty();
        }
        let mut set = GlobSetBuilder::new();
        for glob in &self.paths {
            if let Ok(g) = Glob::new(glob) {
                set.add(g);
            }
        }
        let Ok(set) = set.build() else { return false };
        change.files.iter().any(|f| set.is_match(f))
    }
}

/// The sandbox policy `job` runs under: the configuration's, with the job's `allow_net` hosts
/// added.
pub fn policy(
    root: &Path,
    config: &crate::config::Config,
    job: &Job,
) -> Result<crate::sandbox::Policy, String> {
    let mut settings = config.sandbox().map_err(|e| e.to_string())?;
    for host in &job.allow_net {
        if !settings.allow_net.contains(host) {
            settings.allow_net.push(host.clone());
        }
    }
    crate::sandbox::Policy::for_workspace(root, &settings)
        .map_err(|e| format!("job {}: the sandbox: {e}", job.name))
}

/// `HEAD`'s commit at `root`.
pub fn head(root: &Path) -> Result<String, String> {
    crate::review::git::head(root).map_err(|e| e.to_string())
}

/// The change a job works on, and its diff: the head against the merge-base with `base` (a
/// pull request's), else the working tree against `HEAD`. Labels are the caller's to add.
pub fn change(root: &Path, base: Option<&str>) -> Result<(String, Change), String> {
    use crate::review::git;
    let from = match base {
        Some(base) => {
            let head = git::head(root).map_err(|e| e.to_string())?;
            git::merge_base(root, base, &head).map_err(|e| e.to_string())?
        }
        None => "HEAD".to_owned(),
    };
    let run = |args: &[&str]| -> Result<String, String> {
        git::git(root, args)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| e.to_string())
    };
    let diff = run(&["diff", "--no-color", "--no-ext-diff", &from])?;
    let files =
        run(&["diff", "--name-only", "--no-color", &from])?.lines().map(str::to_owned).collect();
    let changed_lines = diff
        .lines()
        .filter(|l| {
            (l.starts_with('+') && !l.starts_with("+++"))
                || (l.starts_with('-') && !l.starts_with("---"))
        })
        .count();
    Ok((diff, Change { files, labels: Vec::new(), changed_lines }))
}

/// The most characters of the diff a task is given.
const MAX_DIFF: usize = 20_000;

/// `job`'s task with `{diff}`, `{files}` and `{findings}` filled in.
pub fn task(job: &Job, diff: &str, files: &[String], findings: &str) -> String {
    let diff = if diff.len() > MAX_DIFF {
        let cut = (0..=MAX_DIFF).rev().find(|&i| diff.is_char_boundary(i)).unwrap_or(0);
        format!("{}\n[… the diff goes on]", &diff[..cut])
    } else {
        diff.to_owned()
    };
    job.task
        .replace("{diff}", &diff)
        .replace("{files}", &files.join(" "))
        .replace("{findings}", if findings.trim().is_empty() { "(none)" } else { findings })
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The command line as run.
    pub command: String,
    /// Whether it exited 0.
    pub passed: bool,
    /// The end of its output, for the log.
    pub output: String,
}

/// A job's run: its agent run and change, and its checks.
#[derive(Debug)]
pub struct Ran {
    /// The agent run (its transcript's id).
    pub run: String,
    /// Why the agent stopped, in words.
    pub stop: String,
    /// Whether the agent finished its task (not stopped by its budget, a failure or a cancel).
    pub done: bool,
    /// The agent's last answer (a report job's report).
    pub answer: String,
    /// The change it proposes.
    pub changes: crate::agent::Changes,
    /// The checks, in order (none when the change is empty or the agent did not finish).
    pub checks: Vec<Checked>,
    /// The steps and tokens the run took, over every resumption.
    pub steps: usize,
    /// Tokens.
    pub tokens: u64,
    /// The run's line in the log, in the state the run and its checks left it.
    pub record: runs::RunRecord,
}

impl Ran {
    /// Whether the agent finished, there is a change and every check passed: only then is
    /// anything delivered.
    pub fn deliverable(&self) -> bool {
        let report = self.record.job.deliver == Delivery::Report;
        self.done
            && (report || !self.changes.changed_paths().is_empty())
            && self.checks.iter().all(|c| c.passed)
    }

    /// Records how the run ended after [`run`] (delivered or not, and where).
    pub fn finish(&mut self, store: &sift_indexer::store::Store, state: runs::State, detail: &str) {
        self.record.state = state;
        self.record.time = crate::agent::transcript::now();
        self.record.detail = detail.to_owned();
        if let Err(e) = runs::record(store, &self.record) {
            tracing::warn!("automate: cannot record run {}: {e}", self.run);
        }
    }
}

/// Runs `job` with `task` (from [`task`]) by the agent of `setup` in `workspace`, then its
/// checks on the change: the change is written to the working tree for them (the checks see
/// the files as they would be), each check runs in the sandbox, and the files are put back as
/// they were, whatever the checks did.
///
/// `key` says what triggered it (see [`runs::RunRecord::key`]); `resume` is an unfinished run
/// to go on with (its transcript is the checkpoint: finished tool calls are not run again, the
/// budget goes on from what it used). The run's states are written to the log as it goes
/// ([`runs`]); the caller records the delivery with [`Ran::finish`].
#[allow(clippy::too_many_arguments)]
pub fn run(
    setup: &crate::agent::Setup,
    workspace: &crate::workspace::Workspace,
    model: &dyn crate::llm::LanguageModel,
    job: &Job,
    task: &str,
    options: &crate::agent::Options,
    cancel: &crate::llm::Cancel,
    key: &str,
    resume: Option<&runs::RunRecord>,
) -> Result<Ran, String> {
    use crate::agent::Transcript;
    use crate::agent::launch::{self, Request};
    let store = &setup.store;
    let unsaved = std::collections::BTreeMap::new();
    let attempts = job.attempts.unwrap_or(1).max(1);
    let (request, mut record) = match resume {
        Some(record) => {
            let transcript = Transcript::open(store, &record.run);
            let resumed = transcript.resume().map_err(|e| e.to_string())?;
            let request = Request {
                task: "",
                attempts: 1,
                resume: Some((transcript, resumed)),
                transcript: None,
                options,
            };
            (request, record.clone())
        }
        None => {
            let now = crate::agent::transcript::now();
            let mut record = runs::RunRecord {
                run: String::new(),
                job: job.clone(),
                key: key.to_owned(),
                state: runs::State::Running,
                started: now,
                time: now,
                detail: String::new(),
            };
            // One run is checkpointed from its first step; best-of-N attempts are not (a
            // killed one starts again).
            let transcript = if attempts == 1 {
                let transcript = Transcript::create(store).map_err(|e| e.to_string())?;
                record.run = transcript.id().to_owned();
                runs::record(store, &record)?;
                Some(transcript)
            } else {
                None
            };
            (Request { task, attempts, resume: None, transcript, options }, record)
        }
    };
    let finished =
        launch::launch(setup, workspace, &unsaved, model, request, cancel, &mut |_, _| {})
            .map_err(|e| e.to_string())?;
    // Best-of-N: the first-ranked attempt whose checks pass (the ranking's first otherwise).
    let mut chosen = finished.outcome.clone();
    let mut checks = Vec::new();
    let mut picked = None;
    if !finished.attempts.is_empty() && job.deliver != Delivery::Report {
        for attempt in &finished.attempts {
            let outcome = &attempt.outcome;
            if outcome.stop != crate::agent::Stop::Done
                || outcome.changes.changed_paths().is_empty()
            {
                continue;
            }
            let checked = check(setup, job, &outcome.changes, cancel)?;
            let passed = checked.iter().all(|c| c.passed);
            if passed || picked.is_none() {
                chosen = outcome.clone();
                checks = checked;
                picked = Some(attempt.index);
            }
            if passed {
                break;
            }
        }
        finished.record_pick(setup, picked);
    }
    let outcome = chosen;
    let id = outcome.transcript.clone().unwrap_or_else(|| finished.id.clone());
    if record.run.is_empty() {
        record.run = id.clone();
    }
    let stop = outcome.stop.describe(&options.budget);
    let done = outcome.stop == crate::agent::Stop::Done;
    let used = Transcript::open(store, &id).resume().unwrap_or_default();
    record.time = crate::agent::transcript::now();
    record.state = match &outcome.stop {
        crate::agent::Stop::Done => runs::State::Running,
        crate::agent::Stop::Cancelled | crate::agent::Stop::ModelFailed(_) => {
            runs::State::Interrupted
        }
        _ => runs::State::OutOfBudget,
    };
    record.detail = stop.clone();
    let mut ran = Ran {
        run: id,
        stop,
        done,
        answer: outcome.answer,
        changes: outcome.changes,
        checks,
        steps: used.steps,
        tokens: used.tokens,
        record,
    };
    if !done {
        runs::record(store, &ran.record)?;
        return Ok(ran);
    }
    if job.deliver == Delivery::Report {
        // A report changes nothing: whatever the agent edited in memory is dropped.
        ran.changes = crate::agent::Changes::new();
        return Ok(ran);
    }
    if ran.changes.changed_paths().is_empty() {
        ran.finish(store, runs::State::NoChange, "no change");
        return Ok(ran);
    }
    if picked.is_none() {
        ran.checks = check(setup, job, &ran.changes, cancel)?;
    }
    if let Some(failed) = ran.checks.iter().find(|c| !c.passed) {
        let detail = format!("check `{}` failed", failed.command);
        ran.finish(store, runs::State::ChecksFailed, &detail);
    }
    Ok(ran)
}

/// Runs `job`'s checks on `changes`: the change written to the working tree, each check in the
/// sandbox (`{files}`: the changed files, quoted) until one fails, then the files put back as
/// they were, whatever the checks did.
fn check(
    setup: &crate::agent::Setup,
    job: &Job,
    changes: &crate::agent::Changes,
    cancel: &crate::llm::Cancel,
) -> Result<Vec<Checked>, String> {
    if job.checks.is_empty() {
        return Ok(Vec::new());
    }
    let files = changes.changed_paths();
    changes.apply(&setup.policy).map_err(|e| format!("write the change for the checks: {e}"))?;
    let quoted: Vec<String> =
        files.iter().map(|f| format!("'{}'", f.replace('\'', "'\\''"))).collect();
    let mut checks = Vec::new();
    for check in &job.checks {
        let command = check.replace("{files}", &quoted.join(" "));
        let sandboxed = crate::sandbox::Command::new("sh", ["-c", command.as_str()]);
        let out = crate::sandbox::run(&setup.policy, &sandboxed, &|| cancel.is_cancelled());
        let (passed, output) = match out {
            Ok(out) => {
                let text = format!("{}{}", out.stdout, out.stderr);
                let tail: String =
                    text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
                (out.success(), tail)
            }
            Err(e) => (false, e.to_string()),
        };
        checks.push(Checked { command, passed, output });
        if !passed {
            break;
        }
    }
    // Back as they were: the reverse change.
    let mut back = crate::agent::Changes::new();
    for (path, pending) in changes.iter() {
        back.set(path, pending.current.clone(), pending.original.clone());
    }
    back.apply(&setup.policy).map_err(|e| format!("put the files back after the checks: {e}"))?;
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[[job]]
name = "fix-findings"
on = "pull_request"
paths = ["src/**/*.py"]
labels = ["bot-ok"]
max_changed_lines = 100
task = "Fix these findings:\n{findings}\nin {files}"
checks = ["python3 -m py_compile {files}"]

[[job]]
name = "docs"
on = "manual"
task = "Update the docs for {files}"
deliver = "patch"
"#;

    #[test]
    fn jobs_parse_and_match_paths_labels_and_size() {
        let jobs = Jobs::parse(FILE, AUTOMATIONS).unwrap();
        assert_eq!(jobs.jobs.len(), 2);
        let job = jobs.get("fix-findings").unwrap();
        assert_eq!(job.deliver, Delivery::Suggestions);
        let pr = |files: &[&str], labels: &[&str], lines| Change {
            files: files.iter().map(|f| f.to_string()).collect(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            changed_lines: lines,
        };
        assert!(job.matches(&pr(&["src/a/b.py"], &["bot-ok"], 10)));
        assert!(!job.matches(&pr(&["docs/x.md"], &["bot-ok"], 10)), "no path matches");
        assert!(!job.matches(&pr(&["src/a/b.py"], &[], 10)), "no label");
        assert!(!job.matches(&pr(&["src/a/b.py"], &["bot-ok"], 101)), "too large");
        assert!(!jobs.get("docs").unwrap().matches(&pr(&["src/a.py"], &["bot-ok"], 1)), "manual");
    }

    #[test]
    fn bad_files_say_where() {
        let err = Jobs::parse("[[job]]\nname = \"x y\"\non = \"manual\"\ntask = \"t\"\n", "f")
            .unwrap_err();
        assert!(err.contains("job name \"x y\""), "{err}");
        let err = Jobs::parse("[[job]]\nname = \"x\"\non = \"sometimes\"\ntask = \"t\"\n", "f")
            .unwrap_err();
        assert!(err.starts_with("f:"), "{err}");
    }

    #[test]
    fn a_job_s_hosts_join_the_sandbox_s() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::parse(
            "[[job]]\nname = \"up\"\non = \"manual\"\ntask = \"t\"\nallow_net = [\"pypi.org\"]\n",
            "f",
        )
        .unwrap();
        let no_env = |_: &str| None;
        let config =
            crate::config::Config::load(&crate::config::Inputs::new(Some(dir.path()), &no_env))
                .unwrap();
        let open = policy(dir.path(), &config, &jobs.jobs[0]).unwrap();
        assert!(open.allow_net().allows("pypi.org", 443));
        assert!(!open.allow_net().allows("example.com", 443));
        let none = Jobs::parse(FILE, AUTOMATIONS).unwrap();
        let closed = policy(dir.path(), &config, &none.jobs[0]).unwrap();
        assert!(closed.allow_net().is_empty(), "no host unless the job names one");
    }

    #[test]
    fn the_template_is_filled() {
        let jobs = Jobs::parse(FILE, AUTOMATIONS).unwrap();
        let text =
            task(jobs.get("fix-findings").unwrap(), "d", &["a.py".into(), "b.py".into()], "");
        assert_eq!(text, "Fix these findings:\n(none)\nin a.py b.py");
    }
}
