//! Automations: the team's own agent jobs, committed in `.sift/automations.toml`, run on a pull
//! request (or by hand) with the agent in the sandbox, and delivered as something a person
//! reviews: suggestion comments on the pull request, or a patch file.
//!
//! - Jobs are data ([`Jobs`]); on a pull request they are read **from the base revision only**
//!   ([`Jobs::for_pull_request`]): a pull request cannot add or change a job that runs on itself,
//!   and each job it adds or changes is reported instead.
//! - [`Job::matches`] decides whether a pull request triggers a job (paths, labels, size).
//! - [`task`] fills a job's template with the change (`{diff}`, `{files}`, `{findings}`).
//! - [`deliver`]: the run's change as suggestion comments (one thread per suggestion across
//!   pushes, through the review bot's client) or a patch.
//!
//! Not built yet: `schedule` triggers, branch-and-pull-request delivery, checkpointed runs that
//! resume after a kill (`sift automate resume`), `sift automate status`.

pub mod deliver;

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
    /// The change it proposes.
    pub changes: crate::agent::Changes,
    /// The checks, in order (none when the change is empty).
    pub checks: Vec<Checked>,
}

impl Ran {
    /// Whether there is a change and every check passed: only then is anything delivered.
    pub fn deliverable(&self) -> bool {
        !self.changes.changed_paths().is_empty() && self.checks.iter().all(|c| c.passed)
    }
}

/// Runs `job` with `task` (from [`task`]) by the agent of `setup` in `workspace`, then its
/// checks on the change: the change is written to the working tree for them (the checks see
/// the files as they would be), each check runs in the sandbox, and the files are put back as
/// they were, whatever the checks did.
pub fn run(
    setup: &crate::agent::Setup,
    workspace: &crate::workspace::Workspace,
    model: &dyn crate::llm::LanguageModel,
    job: &Job,
    task: &str,
    options: &crate::agent::Options,
    cancel: &crate::llm::Cancel,
) -> Result<Ran, String> {
    use crate::agent::launch::{self, Request};
    let request = Request { task, attempts: 1, resume: None, options };
    let unsaved = std::collections::BTreeMap::new();
    let finished =
        launch::launch(setup, workspace, &unsaved, model, request, cancel, &mut |_, _| {})
            .map_err(|e| e.to_string())?;
    let outcome = finished.outcome;
    let stop = outcome.stop.describe(&options.budget);
    let mut ran = Ran { run: finished.id, stop, changes: outcome.changes, checks: Vec::new() };
    let files = ran.changes.changed_paths();
    if files.is_empty() || job.checks.is_empty() {
        return Ok(ran);
    }
    ran.changes
        .apply(&setup.policy)
        .map_err(|e| format!("write the change for the checks: {e}"))?;
    let quoted: Vec<String> =
        files.iter().map(|f| format!("'{}'", f.replace('\'', "'\\''"))).collect();
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
        ran.checks.push(Checked { command, passed, output });
        if !passed {
            break;
        }
    }
    // Back as they were: the reverse change.
    let mut back = crate::agent::Changes::new();
    for (path, pending) in ran.changes.iter() {
        back.set(path, pending.current.clone(), pending.original.clone());
    }
    back.apply(&setup.policy).map_err(|e| format!("put the files back after the checks: {e}"))?;
    Ok(ran)
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
    fn the_template_is_filled() {
        let jobs = Jobs::parse(FILE, AUTOMATIONS).unwrap();
        let text =
            task(jobs.get("fix-findings").unwrap(), "d", &["a.py".into(), "b.py".into()], "");
        assert_eq!(text, "Fix these findings:\n(none)\nin a.py b.py");
    }
}
