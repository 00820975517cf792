//! `sift feedback`: the findings people marked as wrong, remembered in
//! `.sift/feedback/dismissed.jsonl` (see `sift_engine::rules::feedback`): list them, dismiss
//! one from the command line, forget a dismissal.

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};
use sift_engine::review::{Change, Request, dismiss, repository_root, review};
use sift_engine::rules::feedback::Record;

use super::RepoArgs;

/// Arguments of `sift feedback`.
#[derive(Debug, Args)]
pub struct FeedbackArgs {
    #[command(subcommand)]
    command: FeedbackCommand,
}

#[derive(Debug, Subcommand)]
enum FeedbackCommand {
    /// List the dismissed findings in force.
    List {
        #[command(flatten)]
        repo: RepoArgs,
        /// One JSON object per line (the records of .sift/feedback/dismissed.jsonl).
        #[arg(long)]
        json: bool,
    },
    /// Mark a finding of the current change as wrong: `sift review` and the editor stop raising it
    /// for that code.
    Dismiss {
        #[command(flatten)]
        repo: RepoArgs,
        /// The finding's fingerprint (`sift review` prints it; `fingerprint` in JSON,
        /// `partialFingerprints` in SARIF).
        fingerprint: String,
        /// Why it is wrong (kept with the record).
        #[arg(long)]
        reason: Option<String>,
        /// Look for the finding in the change since the merge-base with REV [default: the working
        /// tree against HEAD].
        #[arg(long, value_name = "REV")]
        base: Option<String>,
    },
    /// Forget a dismissal: the finding is raised again.
    Forget {
        #[command(flatten)]
        repo: RepoArgs,
        /// The fingerprint of the dismissed finding.
        fingerprint: String,
    },
}

/// Runs `sift feedback`.
#[allow(clippy::print_stdout)]
pub fn run(args: FeedbackArgs) -> Result<ExitCode> {
    match args.command {
        FeedbackCommand::List { repo, json } => {
            let root = repository_root(&repo.root())?;
            let found = dismiss::dismissed(&root)?;
            for d in found.dismissed() {
                if json {
                    println!("{}", serde_json::to_string(&Record::Dismiss(d.clone()))?);
                } else {
                    let reason = d.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                    println!("{}  {}  {}  {}{reason}", d.fingerprint, d.time, d.rule, d.path);
                }
            }
            if !json {
                println!(
                    "{} dismissed finding{}",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" }
                );
            }
        }
        FeedbackCommand::Dismiss { repo, fingerprint, reason, base } => {
            let root = repository_root(&repo.root())?;
            if dismiss::dismissed(&root)?.is_dismissed(&fingerprint) {
                println!("{fingerprint} is already dismissed");
                return Ok(ExitCode::SUCCESS);
            }
            let request = Request {
                change: base.as_deref().map_or(Change::WorkingTree, Change::Base),
                max_findings: Some(usize::MAX),
                keep_dismissed: true,
                ..Request::default()
            };
            let reviewed = review(&root, &request)?;
            let finding = reviewed
                .items
                .iter()
                .map(|i| &i.finding)
                .find(|f| f.fingerprint == fingerprint)
                .ok_or_else(|| {
                    anyhow!(
                        "no finding {fingerprint} in the change under review: run `sift review` to see the fingerprints (add --base REV for a branch's change)"
                    )
                })?;
            let path = dismiss::dismiss(&root, &fingerprint, &finding.rule, &finding.path, reason)?;
            println!(
                "dismissed {fingerprint} ({} in {}); recorded in {}",
                finding.rule,
                finding.path,
                path.display()
            );
            if let Some(rev) = &base {
                // A `--base` review reads dismissals from the base revision (see
                // `sift_engine::review::settings`): a change cannot dismiss its own findings.
                println!(
                    "a review with --base {rev} applies it once it is committed and merged into {rev}"
                );
            }
        }
        FeedbackCommand::Forget { repo, fingerprint } => {
            let root = repository_root(&repo.root())?;
            if !dismiss::forget(&root, &fingerprint)? {
                bail!("{fingerprint} is not dismissed: `sift feedback list` shows what is");
            }
            println!("forgot the dismissal of {fingerprint}: it will be raised again");
        }
    }
    Ok(ExitCode::SUCCESS)
}
