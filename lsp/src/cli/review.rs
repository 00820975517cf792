//! `sift review`: argument parsing, the report's format and the exit status. The review itself
//! (git, rules, configuration, fix history, model reviewer, dismissals) is
//! `sift_engine::review`; the formats and the JSON contract are in
//! `sift_engine::rules::report`.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
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
    let choice = match (args.model, args.no_model) {
        (_, true) => ModelChoice::Off,
        (true, _) => ModelChoice::On,
        _ => ModelChoice::Auto,
    };
    let (model, skipped) = match review::model_for_review(&root, choice, args.base.as_deref(), &llm_config::process_env)? {
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
        _ => args.base.as_deref().map_or(Change::WorkingTree, Change::Base),
    };
    let reviewed = review::review(
        &root,
        &Request {
            change,
            max_findings: args.max_findings,
            model: pass.as_ref(),
            ..Request::default()
        },
    )?;
    let recorder = sift_engine::fates::Recorder::configured(
        &root,
        &super::load_config(&root, &[])?,
        sift_engine::fates::Front::CLI,
    );
    reviewed.record_shown(&recorder);
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
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
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
