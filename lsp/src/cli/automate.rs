//! `sift automate run | resume | status`: the team's agent jobs of `.sift/automations.toml`
//! (see `sift_engine::automate`) on this CI job's pull request, on a schedule, or one job by
//! hand; each run's change, when its checks pass, delivered as suggestion comments or a patch;
//! a run cut off resumed from its checkpoint.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use sift_engine::automate::{self, Delivery, Job, Jobs, runs};
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
    /// Run the jobs this pull request triggers (in a GitHub Actions job of a pull request), the
    /// schedule's jobs (`--schedule`), or the job --job names on the working tree. A run of
    /// the same job on the same commit that was cut off (killed, or the model failed) is
    /// resumed instead of started again.
    Run(RunArgs),
    /// Go on with a run that was cut off, from its checkpoint (finished tool calls are not run
    /// again), then check and deliver it as `run` would.
    Resume(ResumeArgs),
    /// List the runs: job, state, steps and tokens.
    Status(StatusArgs),
}

#[derive(Debug, Args)]
struct Deliver {
    /// Post the suggestions to the pull request (`github`); without it they are printed as a
    /// patch.
    #[arg(long, value_enum, value_name = "WHERE")]
    post: Option<Post>,
    /// Write each job's patch to DIR/<job>.patch instead of printing it.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Run only this job (outside a pull request's job: the working tree's job of that name).
    #[arg(long, value_name = "NAME")]
    job: Option<String>,
    /// Run the jobs whose trigger is `schedule` (a scheduled CI run, on the default branch).
    #[arg(long, conflicts_with = "job")]
    schedule: bool,
    #[command(flatten)]
    deliver: Deliver,
}

#[derive(Debug, Args)]
struct ResumeArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// The run (`sift automate status` lists them).
    id: String,
    #[command(flatten)]
    deliver: Deliver,
}

#[derive(Debug, Args)]
struct StatusArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// One JSON object per run.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Post {
    /// The pull request of a GitHub Actions job.
    Github,
}

/// Runs `sift automate`.
pub fn run(args: AutomateArgs) -> Result<ExitCode> {
    match args.command {
        AutomateCommand::Run(args) => run_jobs(args),
        AutomateCommand::Resume(args) => resume(args),
        AutomateCommand::Status(args) => status(args),
    }
}

/// This process's pull request, when it is a pull request's CI job.
fn ci_job(root: &std::path::Path, post: Option<Post>) -> Result<Option<github::Job>> {
    let in_pull_request = sift_engine::env::get("GITHUB_EVENT_PATH").is_some_and(|v| !v.is_empty())
        && sift_engine::env::get("GITHUB_EVENT_NAME").is_none_or(|e| e.starts_with("pull_request"));
    match (in_pull_request, post) {
        (true, _) => Ok(Some(github::job(root).map_err(|e| anyhow!("{e}"))?)),
        (false, Some(_)) => bail!(
            "--post github runs in a GitHub Actions job of a pull request: GITHUB_EVENT_PATH is not set"
        ),
        (false, None) => Ok(None),
    }
}

/// What every job of one invocation shares.
struct Runner {
    root: PathBuf,
    ci: Option<github::Job>,
    deliver: Deliver,
    config: sift_engine::config::Config,
    setup: sift_engine::agent::Setup,
    workspace: sift_engine::workspace::Workspace,
    model: Box<dyn sift_engine::llm::LanguageModel>,
    cancel: sift_engine::llm::Cancel,
}

impl Runner {
    fn open(root: PathBuf, ci: Option<github::Job>, deliver: Deliver) -> Result<Runner> {
        // On a pull request, the base revision's configuration (as the review bot's): a pull
        // request cannot change the model, the sandbox or the checkers its jobs run with.
        let config = match &ci {
            Some(ci) => ci.config.clone(),
            None => super::load_config(&root, &[])?,
        };
        let model_config = config.model()?;
        if model_config.backend.value == llm_config::Backend::Onnx {
            eprintln!(
                "note: the local base model is a pipeline demo that cannot do agent work; configure an OpenAI-compatible endpoint in [model] (see docs/agent.md)"
            );
        }
        let model = llm_config::open(&model_config)?;
        let (setup, workspace) = super::agent::open_run(&root, &config)?;
        let cancel = sift_engine::llm::Cancel::new();
        Ok(Runner { root, ci, deliver, config, setup, workspace, model, cancel })
    }
}

fn run_jobs(args: RunArgs) -> Result<ExitCode> {
    let root = args.repo.folder()?;
    let ci = if args.schedule { None } else { ci_job(&root, args.deliver.post)? };
    if args.schedule && args.deliver.post.is_some() {
        bail!("--post github posts on a pull request; a scheduled job delivers a patch (--out)");
    }
    // The change the jobs work on, read once: the pull request's, else the working tree's.
    let base = ci.as_ref().map(|ci| ci.pr.base.clone());
    let (diff, mut change) = automate::change(&root, base.as_deref()).map_err(|e| anyhow!(e))?;
    if let Some(ci) = &ci {
        change.labels = ci.pr.labels.clone();
    }
    // The jobs: the base revision's on a pull request (its own edits are reported), else the
    // working tree's (on a schedule, the default branch's checkout), by name or by trigger.
    let jobs: Vec<Job> = match &ci {
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
        None if args.schedule => {
            let jobs = Jobs::working_tree(&root).map_err(|e| anyhow!(e))?;
            jobs.jobs.into_iter().filter(|j| j.on == automate::Trigger::Schedule).collect()
        }
        None => {
            let Some(name) = &args.job else {
                bail!(
                    "outside a pull request's CI job, say which job: sift automate run --job NAME (or --schedule)"
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
    let head = automate::head(&root).map_err(|e| anyhow!(e))?;
    let key = match (&ci, args.schedule) {
        (Some(ci), _) => format!("{}/{}#{}@{head}", ci.pr.owner, ci.pr.repo, ci.pr.number),
        (None, true) => format!("schedule@{head}"),
        (None, false) => format!("manual@{head}"),
    };
    // The review runs only for the jobs whose task asks for its findings.
    let findings = if jobs.iter().any(|j| j.task.contains("{findings}")) {
        findings(&root, base.as_deref())?
    } else {
        String::new()
    };
    let cx = Runner::open(root, ci, args.deliver)?;
    let mut failed = false;
    for j in &jobs {
        let resume = runs::unfinished(&cx.setup.store, j, &key);
        let task = automate::task(j, &diff, &change.files, &findings);
        failed |= !run_job(&cx, j, &task, &key, resume.as_ref())?;
    }
    // The runs were recorded as shown by the agent's launch; what is queued is written now.
    cx.workspace.recorder.flush();
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn resume(args: ResumeArgs) -> Result<ExitCode> {
    let root = args.repo.folder()?;
    let store = sift_engine::store::open(&root)?;
    let Some(record) = runs::get(&store, &args.id) else {
        bail!("no automation run {} (sift automate status lists them)", args.id);
    };
    if !record.state.resumable() {
        bail!("run {} is {}: nothing to resume", args.id, record.state.as_str());
    }
    let ci = ci_job(&root, args.deliver.post)?;
    let cx = Runner::open(root, ci, args.deliver)?;
    let job = record.job.clone();
    let ok = run_job(&cx, &job, "", &record.key, Some(&record))?;
    cx.workspace.recorder.flush();
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[allow(clippy::print_stdout)]
fn status(args: StatusArgs) -> Result<ExitCode> {
    let root = args.repo.folder()?;
    let store = sift_engine::store::open(&root)?;
    let all = runs::all(&store);
    let mut stdout = std::io::stdout().lock();
    if all.is_empty() && !args.json {
        writeln!(stdout, "no automation runs yet")?;
    }
    for r in &all {
        let used =
            sift_engine::agent::Transcript::open(&store, &r.run).resume().unwrap_or_default();
        if args.json {
            let value = serde_json::json!({
                "run": r.run, "job": r.job.name, "state": r.state.as_str(), "key": r.key,
                "started": r.started, "time": r.time, "steps": used.steps, "tokens": used.tokens,
                "detail": r.detail,
            });
            writeln!(stdout, "{value}")?;
        } else {
            writeln!(
                stdout,
                "{}  {:<16} {:<14} {:>3} steps {:>7} tokens  {}{}",
                r.run,
                r.job.name,
                r.state.as_str(),
                used.steps,
                used.tokens,
                r.key,
                if r.detail.is_empty() { String::new() } else { format!("  ({})", r.detail) }
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs (or resumes) one job and delivers its change; `false` when it failed (a check, the
/// budget, the model, a delivery).
#[allow(clippy::print_stdout)]
fn run_job(
    cx: &Runner,
    j: &Job,
    task: &str,
    key: &str,
    resume: Option<&runs::RunRecord>,
) -> Result<bool> {
    let options = sift_engine::agent::Options {
        budget: sift_engine::agent::launch::budget(cx.setup.budget, j.max_steps, None, None),
        ..Default::default()
    };
    match resume {
        Some(r) => {
            let used = sift_engine::agent::Transcript::open(&cx.setup.store, &r.run).resume()?;
            eprintln!("job {}: resuming run {} ({} steps done)", j.name, r.run, used.steps);
        }
        None => eprintln!("job {}: running the agent", j.name),
    }
    // A job that names hosts runs under its own policy; the others under the configuration's.
    let own;
    let setup = if j.allow_net.is_empty() {
        &cx.setup
    } else {
        let policy = automate::policy(&cx.root, &cx.config, j).map_err(|e| anyhow!(e))?;
        own = sift_engine::agent::Setup::new(&cx.root, &cx.config)?.with_policy(policy);
        &own
    };
    let mut ran =
        automate::run(setup, &cx.workspace, &*cx.model, j, task, &options, &cx.cancel, key, resume)
            .map_err(|e| anyhow!("job {}: {e}", j.name))?;
    if resume.is_none() {
        eprintln!(
            "job {}: run {} (sift automate resume {} goes on with it if it is cut off)",
            j.name, ran.run, ran.run
        );
    }
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
    if !ran.done {
        eprintln!(
            "job {}: {}: nothing delivered (run {}, {} steps)",
            j.name, ran.stop, ran.run, ran.steps
        );
        return Ok(false);
    }
    if ran.changes.changed_paths().is_empty() && j.deliver != Delivery::Report {
        eprintln!("job {}: no change (run {})", j.name, ran.run);
        return Ok(true);
    }
    if !ran.deliverable() {
        eprintln!("job {}: a check failed: nothing delivered (run {})", j.name, ran.run);
        return Ok(false);
    }
    let store = &cx.setup.store;
    let recorder = &cx.workspace.recorder;
    let target = if j.deliver == Delivery::Branch { branch_target(cx)? } else { None };
    match (&cx.ci, cx.deliver.post, j.deliver, target) {
        (Some(ci), Some(Post::Github), Delivery::Suggestions, _) => {
            let Some(client) = &ci.client else {
                let why = ci.why_not.as_deref().unwrap_or("no client");
                eprintln!("job {}: not posted: {why}", j.name);
                print!("{}", ran.changes.unified_diff());
                ran.finish(store, runs::State::NotDelivered, why);
                return Ok(true);
            };
            let login = github::login(client, &ci.options.settings).map_err(|e| anyhow!("{e}"))?;
            let suggestions = automate::deliver::suggestions(&j.name, &ran.changes);
            let posted = automate::deliver::post(
                &cx.root,
                &ci.pr,
                client,
                &login,
                &j.name,
                &suggestions,
                recorder,
            )
            .map_err(|e| anyhow!("job {}: {e}", j.name))?;
            let said = format!(
                "{} suggestion(s) posted, {} in the review's body, {} already on the pull request",
                posted.inline, posted.in_body, posted.already
            );
            eprintln!("job {}: {said}", j.name);
            ran.finish(store, runs::State::Delivered, &said);
        }
        (
            Some(ci @ github::Job { client: Some(client), .. }),
            Some(Post::Github),
            Delivery::Report,
            _,
        ) => {
            let login = github::login(client, &ci.options.settings).map_err(|e| anyhow!("{e}"))?;
            let posted =
                automate::deliver::report(&ci.pr, client, &login, &j.name, &ran.answer, recorder)
                    .map_err(|e| anyhow!("job {}: {e}", j.name))?;
            let said = if posted {
                "report posted"
            } else {
                "the same report is on the pull request already"
            };
            eprintln!("job {}: {said}", j.name);
            ran.finish(store, runs::State::Delivered, said);
        }
        (_, _, Delivery::Report, _) => {
            let said = match &cx.deliver.out {
                Some(dir) => {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("create {}", dir.display()))?;
                    let file = dir.join(format!("{}.md", j.name));
                    std::fs::write(&file, format!("{}\n", ran.answer.trim()))
                        .with_context(|| format!("write {}", file.display()))?;
                    eprintln!("job {}: wrote {}", j.name, file.display());
                    format!("report {}", file.display())
                }
                None => {
                    println!("{}", ran.answer.trim());
                    "report printed".to_owned()
                }
            };
            ran.finish(store, runs::State::Delivered, &said);
        }
        (_, _, Delivery::Branch, Some(target)) => {
            let done = automate::deliver::branch(
                &cx.root,
                &target,
                &j.name,
                &ran.run,
                &ran.changes,
                recorder,
            )
            .map_err(|e| anyhow!("job {}: {e}", j.name))?;
            let said = format!(
                "{} pull request #{} from {} ({})",
                if done.opened { "opened" } else { "updated" },
                done.number,
                done.branch,
                done.url
            );
            eprintln!("job {}: {said}", j.name);
            ran.finish(store, runs::State::Delivered, &said);
        }
        _ => {
            if j.deliver == Delivery::Branch {
                eprintln!(
                    "job {}: deliver = \"branch\" needs a CI job's GITHUB_REPOSITORY and GITHUB_TOKEN: here it is a patch",
                    j.name
                );
            }
            let patch = ran.changes.unified_diff();
            let said = match &cx.deliver.out {
                Some(dir) => {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("create {}", dir.display()))?;
                    let file = dir.join(format!("{}.patch", j.name));
                    std::fs::write(&file, &patch)
                        .with_context(|| format!("write {}", file.display()))?;
                    eprintln!("job {}: wrote {}", j.name, file.display());
                    format!("patch {}", file.display())
                }
                None => {
                    print!("{patch}");
                    "patch printed".to_owned()
                }
            };
            automate::deliver::patch_shown(
                recorder,
                &j.name,
                &ran.run,
                ran.changes.changed_paths().len(),
            );
            ran.finish(store, runs::State::Delivered, &said);
        }
    }
    Ok(true)
}

/// Where a branch delivery goes, with the client it needs: the pull request's repository and
/// its head branch, or (a scheduled or manual CI run) the repository's default branch; `None`
/// outside a CI job or without a token.
fn branch_target(cx: &Runner) -> Result<Option<automate::deliver::Target>> {
    let head = automate::head(&cx.root).map_err(|e| anyhow!(e))?;
    if let Some(ci) = &cx.ci {
        let (Some(client), Some(head_ref)) = (&ci.client, &ci.pr.head_ref) else {
            return Ok(None);
        };
        let target = automate::deliver::Target {
            client: client.clone(),
            owner: ci.pr.owner.clone(),
            repo: ci.pr.repo.clone(),
            base: head_ref.clone(),
            head,
            protected: [Some(head_ref.clone()), ci.pr.default_branch.clone()]
                .into_iter()
                .flatten()
                .collect(),
            pull_request: Some(ci.pr.number),
            remote: "origin".into(),
        };
        return Ok(Some(target));
    }
    let Some(repo) = github::repository_job().map_err(|e| anyhow!("{e}"))? else {
        return Ok(None);
    };
    let (Some(client), Some(base)) = (repo.client, repo.default_branch) else {
        return Ok(None);
    };
    let target = automate::deliver::Target {
        client,
        owner: repo.owner,
        repo: repo.repo,
        base: base.clone(),
        head,
        protected: vec![base],
        pull_request: None,
        remote: "origin".into(),
    };
    Ok(Some(target))
}

/// The review's findings on the change (rules only), as text for a job's `{findings}`.
fn findings(root: &std::path::Path, base: Option<&str>) -> Result<String> {
    let change = base.map_or(Change::WorkingTree, Change::Base);
    let reviewed = review::review(root, &Request { change, ..Request::default() })?;
    let counts = reviewed.suppressed_counts();
    Ok(report::to_text(&reviewed.items, reviewed.total, counts, false))
}
