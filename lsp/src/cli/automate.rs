//! `sift automate run`: the team's agent jobs of `.sift/automations.toml` (see
//! `sift_engine::automate`) on this CI job's pull request, or one job by hand; each run's change,
//! when its checks pass, delivered as suggestion comments or a patch.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use sift_engine::automate::{self, Delivery, Job, Jobs};
use sift_engine::github;
use sift_engine::llm::config as llm_config;
use sift_engine::review::{self, Change, Request};
use sift_engine::rules::report;

use super::RepoArgs;

/// Arguments of `sift automate`.
#[derive(Debug, Args)]
pub struct AutomateArgs {
    #[command(subcommand)]
    command: AutomateCommand,
}

#[derive(Debug, Subcommand)]
enum AutomateCommand {
    /// Run the jobs this pull request triggers (in a GitHub Actions job of a pull request), or
    /// the job --job names on the working tree.
    Run(RunArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Run only this job (outside a pull request's job: the working tree's job of that name,
    /// delivered as a patch).
    #[arg(long, value_name = "NAME")]
    job: Option<String>,
    /// Post the suggestions to the pull request (`github`); without it they are printed as a
    /// patch.
    #[arg(long, value_enum, value_name = "WHERE")]
    post: Option<Post>,
    /// Write each job's patch to DIR/<job>.patch instead of printing it.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Post {
    /// The pull request of a GitHub Actions job.
    Github,
}

/// Runs `sift automate`.
#[allow(clippy::print_stdout)]
pub fn run(args: AutomateArgs) -> Result<ExitCode> {
    let AutomateCommand::Run(args) = args.command;
    let root = args.repo.folder()?;
    let in_pull_request = sift_engine::env::get("GITHUB_EVENT_PATH").is_some_and(|v| !v.is_empty());
    let job = match (in_pull_request, &args.post) {
        (true, _) => Some(github::job(&root).map_err(|e| anyhow!("{e}"))?),
        (false, Some(_)) => bail!(
            "--post github runs in a GitHub Actions job of a pull request: GITHUB_EVENT_PATH is not set"
        ),
        (false, None) => None,
    };
    // The change the jobs work on, read once: the pull request's, else the working tree's.
    let base = job.as_ref().map(|ci| ci.pr.base.clone());
    let (diff, mut change) = automate::change(&root, base.as_deref()).map_err(|e| anyhow!(e))?;
    if let Some(ci) = &job {
        change.labels = ci.pr.labels.clone();
    }
    // The jobs: the base revision's on a pull request (its own edits are reported), else the
    // working tree's, by name.
    let jobs: Vec<Job> = match &job {
        Some(ci) => {
            let found = Jobs::for_pull_request(&root, &ci.pr.base).map_err(|e| anyhow!(e))?;
            for name in &found.changed {
                eprintln!(
                    "not run: job {name} is added or changed by this pull request (a job runs once it is in the base branch)"
                );
            }
            found
                .jobs
                .jobs
                .into_iter()
                .filter(|j| args.job.as_ref().is_none_or(|n| *n == j.name))
                .filter(|j| j.matches(&change))
                .collect()
        }
        None => {
            let Some(name) = &args.job else {
                bail!(
                    "outside a pull request's CI job, say which job: sift automate run --job NAME"
                );
            };
            let jobs = Jobs::working_tree(&root).map_err(|e| anyhow!(e))?;
            let job = jobs
                .get(name)
                .cloned()
                .ok_or_else(|| anyhow!("no job {name:?} in {}", automate::AUTOMATIONS))?;
            vec![job]
        }
    };
    if jobs.is_empty() {
        eprintln!("no job to run");
        return Ok(ExitCode::SUCCESS);
    }

    let config = super::load_config(&root, &[])?;
    let model_config = config.model()?;
    if model_config.backend.value == llm_config::Backend::Onnx {
        eprintln!(
            "note: the local base model is a pipeline demo that cannot do agent work; configure an OpenAI-compatible endpoint in [model] (see docs/agent.md)"
        );
    }
    let model = llm_config::open(&model_config)?;
    let (setup, workspace) = super::agent::open_run(&root, &config)?;
    let files = &change.files;
    let findings = findings(&root, base.as_deref())?;
    let cancel = sift_engine::llm::Cancel::new();
    let mut failed = false;
    for j in &jobs {
        let options = sift_engine::agent::Options {
            budget: sift_engine::agent::launch::budget(setup.budget, j.max_steps, None, None),
            ..Default::default()
        };
        let task = automate::task(j, &diff, files, &findings);
        eprintln!("job {}: running the agent", j.name);
        let ran = automate::run(&setup, &workspace, &*model, j, &task, &options, &cancel)
            .map_err(|e| anyhow!("job {}: {e}", j.name))?;
        for c in &ran.checks {
            eprintln!(
                "job {}: check `{}` {}",
                j.name,
                c.command,
                if c.passed { "passed" } else { "failed" }
            );
            if !c.passed {
                eprintln!("{}", c.output.trim_end());
            }
        }
        if ran.changes.changed_paths().is_empty() {
            eprintln!("job {}: no change ({}; run {})", j.name, ran.stop, ran.run);
            continue;
        }
        if !ran.deliverable() {
            eprintln!("job {}: a check failed: nothing delivered (run {})", j.name, ran.run);
            failed = true;
            continue;
        }
        match (&job, &args.post, j.deliver) {
            (Some(ci), Some(Post::Github), Delivery::Suggestions) => {
                let Some(client) = &ci.client else {
                    eprintln!(
                        "job {}: not posted: {}",
                        j.name,
                        ci.why_not.as_deref().unwrap_or("no client")
                    );
                    print!("{}", ran.changes.unified_diff());
                    continue;
                };
                let login =
                    github::login(client, &ci.options.settings).map_err(|e| anyhow!("{e}"))?;
                let suggestions = automate::deliver::suggestions(&j.name, &ran.changes);
                let posted =
                    automate::deliver::post(&root, &ci.pr, client, &login, &j.name, &suggestions)
                        .map_err(|e| anyhow!("job {}: {e}", j.name))?;
                eprintln!(
                    "job {}: {} suggestion(s) posted, {} in the review's body, {} already on the pull request",
                    j.name, posted.inline, posted.in_body, posted.already
                );
            }
            _ => {
                let patch = ran.changes.unified_diff();
                match &args.out {
                    Some(dir) => {
                        std::fs::create_dir_all(dir)
                            .with_context(|| format!("create {}", dir.display()))?;
                        let file = dir.join(format!("{}.patch", j.name));
                        std::fs::write(&file, &patch)
                            .with_context(|| format!("write {}", file.display()))?;
                        eprintln!("job {}: wrote {}", j.name, file.display());
                    }
                    None => print!("{patch}"),
                }
            }
        }
    }
    // The runs were recorded as shown by the agent's launch; what is queued is written now.
    workspace.recorder.flush();
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The review's findings on the change (rules only), as text for a job's `{findings}`.
fn findings(root: &std::path::Path, base: Option<&str>) -> Result<String> {
    let change = base.map_or(Change::WorkingTree, Change::Base);
    let reviewed = review::review(root, &Request { change, ..Request::default() })?;
    let counts = reviewed.suppressed_counts();
    Ok(report::to_text(&reviewed.items, reviewed.total, counts, false))
}
