//! `sift review`: argument parsing, the report's format and the exit status. The review itself
//! (git, rules, configuration, fix history, model reviewer, dismissals) is
//! `sift_engine::review`; the formats and the JSON contract are in
//! `sift_engine::rules::report`.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use sift_engine::github;
use sift_engine::llm::config as llm_config;
use sift_engine::review::{self, Change, ModelChoice, ModelPass, Request, ReviewModel};
use sift_engine::rules::Severity;
use sift_engine::rules::model::ModelReviewConfig;
use sift_engine::rules::report;

use super::RepoArgs;

/// Arguments of `sift review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Review the working tree against the merge-base of REV and HEAD (what a pull request into
    /// REV would change) [default: the working tree against HEAD].
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "diff"])]
    base: Option<String>,
    /// Review what is staged: the index against HEAD.
    #[arg(long, conflicts_with = "diff")]
    staged: bool,
    /// Review the lines added by this unified diff (`-` for stdin); files are read from the
    /// working tree.
    #[arg(long, value_name = "FILE")]
    diff: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Exit with status 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error, value_name = "LEVEL")]
    fail_on: FailOn,
    /// Report at most N findings, the most important first [default: `[review]
    /// max_findings` of .sift/config.toml, else 100].
    #[arg(long, value_name = "N")]
    max_findings: Option<usize>,
    /// Also review with the language model of `[model]` (several passes per hunk; a finding
    /// needs most of them) [default: when `[model]` is set in a configuration file or the
    /// environment].
    #[arg(long, conflicts_with = "no_model")]
    model: bool,
    /// Rules only: skip the model reviewer.
    #[arg(long)]
    no_model: bool,
    /// Passes of the model reviewer over each hunk.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=9))]
    passes: u8,
    /// Also list every finding left out and why: which dismissal (fingerprint, reason) or which
    /// setting of the review rules, in which file at which revision; and where the review's
    /// configuration was read.
    #[arg(long)]
    explain: bool,
    /// Also post the review to the pull request of this CI job: `github`, in a GitHub Actions
    /// job of a pull request (one review, one thread per finding across pushes, replies that
    /// dismiss; see docs/github.md). The change is the pull request's (against its base
    /// commit) unless --base says otherwise; the report is still printed.
    #[arg(long, value_enum, value_name = "WHERE", conflicts_with_all = ["staged", "diff"])]
    post: Option<Post>,
}

/// Where `--post` posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Post {
    /// The pull request of a GitHub Actions job (`GITHUB_EVENT_PATH`, `GITHUB_TOKEN`).
    Github,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For terminals: `path:line:col: severity [rule] message`.
    Text,
    /// A summary comment.
    Markdown,
    /// `{"findings": [...]}` (see the README).
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
    /// The JSON body of a GitHub pull-request review.
    Github,
}

/// The severity from which findings fail the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Errors fail.
    Error,
    /// Warnings and errors fail.
    Warning,
    /// Every finding fails.
    Info,
    /// Nothing fails.
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// Runs `sift review`.
#[allow(clippy::print_stdout)]
pub fn run(args: ReviewArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    // The pull request's job first: a job that cannot be read fails before any review work.
    let job = match args.post {
        Some(Post::Github) => Some(github::job(&root).map_err(|e| anyhow::anyhow!("{e}"))?),
        None => None,
    };
    // A merged pull request's last run: what is still open went in untouched (its fate is
    // recorded); there is nothing to review or post.
    if let Some(job) = job.as_ref().filter(|j| j.pr.merged) {
        return merged(&root, job);
    }
    let base = args.base.clone().or_else(|| job.as_ref().map(|j| j.pr.base.clone()));
    let choice = match (args.model, args.no_model) {
        (_, true) => ModelChoice::Off,
        (true, _) => ModelChoice::On,
        _ => ModelChoice::Auto,
    };
    let (model, skipped) = match review::model_for_review(&root, choice, base.as_deref(), &llm_config::process_env)? {
        ReviewModel::Open(model) => (Some(model), None),
        ReviewModel::Off => (None, None),
        ReviewModel::NotConfigured => (
            None,
            Some("model review skipped: no language model is configured (set [model] in .sift/config.toml, or pass --model; --no-model silences this)".to_string()),
        ),
    };
    let pass = model.as_deref().map(|model| ModelPass {
        model,
        config: ModelReviewConfig { passes: usize::from(args.passes), ..Default::default() },
    });
    let diff_text = args.diff.as_deref().map(read_diff).transpose()?;
    let diff_name = args.diff.as_deref().map(|file| {
        if file == Path::new("-") { "from stdin".to_string() } else { file.display().to_string() }
    });
    let change = match (&diff_text, &diff_name) {
        (Some(text), Some(name)) => Change::Diff { text, name },
        _ if args.staged => Change::Staged,
        _ => base.as_deref().map_or(Change::WorkingTree, Change::Base),
    };
    let mut reviewed = review::review(
        &root,
        &Request {
            change,
            // The bot needs every finding, to tell a fixed one from one left out by the cap.
            max_findings: if job.is_some() { Some(usize::MAX) } else { args.max_findings },
            model: pass.as_ref(),
            ..Request::default()
        },
    )?;
    let posted = match &job {
        Some(job) => post(&root, job, &reviewed),
        None => {
            let recorder = sift_engine::fates::Recorder::configured(
                &root,
                &super::load_config(&root, &[])?,
                sift_engine::fates::Front::CLI,
            );
            reviewed.record_shown(&recorder);
            Ok(())
        }
    };
    if job.is_some() {
        let max = args
            .max_findings
            .or(reviewed.pack.max_findings())
            .unwrap_or(review::DEFAULT_MAX_FINDINGS);
        reviewed.items.truncate(max);
    }
    let note = reviewed.model_note.clone().or(skipped);
    if let Some(note) = &note {
        eprintln!("{note}");
    }
    if let Some(model) = model.as_deref() {
        super::report_redactions(model);
    }
    for failure in &reviewed.plugins.failures {
        eprintln!("warning: {failure}");
    }
    let suppressed = reviewed.suppressed_counts();
    let (items, total, pack) = (&reviewed.items, reviewed.total, &reviewed.pack);
    let settings = reviewed.settings.to_string();
    let explanation = args.explain.then(|| report::Explanation {
        settings: &settings,
        suppressed: &reviewed.suppressed,
        rerated: &reviewed.rerated,
    });
    let out = match args.format {
        Format::Text => {
            let color =
                std::io::stdout().is_terminal() && sift_engine::env::get_os("NO_COLOR").is_none();
            let mut text = report::to_text(items, total, suppressed, color);
            if let Some(explanation) = &explanation {
                text.push_str(&report::explain_text(explanation));
            }
            text
        }
        Format::Markdown => {
            let mut md = report::to_markdown(items, total, suppressed);
            if let Some(note) = &note {
                md.push_str(&format!("\n_{note}_\n"));
            }
            for failure in &reviewed.plugins.failures {
                md.push_str(&format!("\n_{failure}_\n"));
            }
            if let Some(explanation) = &explanation {
                md.push_str(&report::explain_markdown(explanation));
            }
            md
        }
        Format::Json => {
            let mut json = report::to_json(items, total, suppressed);
            if let Some(obj) = json.as_object_mut() {
                if let Some(note) = &note {
                    obj.insert("model_review".into(), serde_json::Value::String(note.clone()));
                }
                if !reviewed.plugins.ran.is_empty() || !reviewed.plugins.failures.is_empty() {
                    obj.insert(
                        "plugins".into(),
                        serde_json::json!({
                            "ran": reviewed.plugins.ran,
                            "failures": reviewed.plugins.failures,
                        }),
                    );
                }
                if let Some(serde_json::Value::Object(extra)) =
                    explanation.as_ref().map(report::explain_json)
                {
                    obj.extend(extra);
                }
            }
            pretty(&json)?
        }
        Format::Sarif => {
            let left_out = explanation.as_ref().map_or(&[][..], |e| e.suppressed);
            pretty(&report::to_sarif(items, pack, left_out))?
        }
        Format::Github => {
            let mut body = report::to_github(items, total, suppressed);
            if let (Some(explanation), Some(text)) = (&explanation, body["body"].as_str()) {
                body["body"] = format!("{text}\n{}", report::explain_markdown(explanation)).into();
            }
            pretty(&body)?
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        // A closed pipe (`| head`) is not a failure of the review.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("write the report");
        }
    }
    let failed =
        args.fail_on.threshold().is_some_and(|min| items.iter().any(|i| i.finding.severity >= min));
    if let Err(refused) = posted {
        // The API refused (the token, the network): one line, and a failed job unless the
        // workflow asked never to fail.
        eprintln!("error: {refused}");
        return Ok(if args.fail_on == FailOn::Never {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Records the findings a merged pull request left open as ignored.
fn merged(root: &Path, job: &github::Job) -> Result<ExitCode> {
    let pr = &job.pr;
    let at = format!("{}/{}#{}", pr.owner, pr.repo, pr.number);
    let Some(client) = &job.client else {
        eprintln!(
            "{at} merged; nothing recorded: {}",
            job.why_not.as_deref().unwrap_or("no client")
        );
        return Ok(ExitCode::SUCCESS);
    };
    let recorder = sift_engine::fates::Recorder::configured(
        root,
        &job.config,
        sift_engine::fates::Front::GITHUB,
    );
    let open =
        github::merged(pr, client, &recorder, &job.options).map_err(|e| anyhow::anyhow!("{e}"))?;
    recorder.flush();
    eprintln!(
        "{at} merged with {open} finding{} still open: recorded as ignored (merged with the flagged code untouched)",
        if open == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}

/// Posts `reviewed` to the job's pull request and says what it did on stderr; the report on
/// stdout is printed either way. A job that cannot post (a fork, no token) says why and posts
/// nothing; a refusal of the API is returned.
fn post(root: &Path, job: &github::Job, reviewed: &review::Reviewed) -> Result<(), String> {
    let pr = &job.pr;
    let at = format!("{}/{}#{}", pr.owner, pr.repo, pr.number);
    let recorder = sift_engine::fates::Recorder::configured(
        root,
        &job.config,
        sift_engine::fates::Front::GITHUB,
    );
    let Some(client) = &job.client else {
        let why = job.why_not.as_deref().unwrap_or("no client");
        eprintln!("not posted to {at}: {why}; the review is printed instead");
        return Ok(());
    };
    match github::post(root, pr, client, reviewed, &recorder, &job.options) {
        Ok(done) => {
            for note in &done.notes {
                eprintln!("note: {note}");
            }
            let mut said = match done.review {
                Some(_) => format!(
                    "posted a review to {at}: {} inline comment{}, {} in its body",
                    done.comments,
                    if done.comments == 1 { "" } else { "s" },
                    done.in_body
                ),
                None if done.comments + done.in_body > 0 => format!("posted a review to {at}"),
                None => format!("nothing new to post to {at}"),
            };
            said.push_str(&format!(
                "; {} thread{} still open, {} marked fixed, {} comment{} edited",
                done.still_open,
                if done.still_open == 1 { "" } else { "s" },
                done.fixed,
                done.edited,
                if done.edited == 1 { "" } else { "s" },
            ));
            for (fingerprint, who) in &done.dismissed {
                said.push_str(&format!("; {fingerprint} dismissed by @{who}"));
            }
            eprintln!("{said}");
            Ok(())
        }
        Err(github::Error::Api(github::ApiError::Refused { status: 403, message, .. }))
            if message.contains("not accessible") =>
        {
            eprintln!(
                "not posted to {at}: the token may not write to the pull request ({message}); give the job `permissions: pull-requests: write`"
            );
            Ok(())
        }
        Err(e) => Err(format!("posting to {at}: {e}")),
    }
}

fn pretty(value: &serde_json::Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// Reads the `--diff` argument: a file, or stdin for `-`.
fn read_diff(file: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).context("read the diff from stdin")?;
    } else {
        bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    }
    // A diff of non-UTF-8 files still has readable headers; the lossy text keeps line counts.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
