//! `sift feedback`: the findings people marked as wrong, remembered in
//! `.sift/feedback/dismissed.jsonl` (see `sift_engine::rules::feedback`): list them, dismiss
//! one from the command line, forget a dismissal; and the local record of fates
//! (`sift_engine::fates`): refuse an agent run, export the record as a preference dataset,
//! clear it.

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use sift_engine::agent::launch;
use sift_engine::fates::{self, Front, Recorder};
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
    /// Refuse an agent run's change (recorded in .sift/fates/, with your reason).
    Reject {
        #[command(flatten)]
        repo: RepoArgs,
        /// The run (`sift agent` prints its transcript id).
        run: String,
        /// Why (kept with the record). A reason also proposes a lesson: a memory note citing
        /// the code the change would have touched, which later runs about that code are given.
        #[arg(long)]
        reason: Option<String>,
        /// Keep the proposed lesson as a memory note without asking.
        #[arg(long, requires = "reason", conflicts_with = "no_lesson")]
        lesson: bool,
        /// Propose no lesson.
        #[arg(long)]
        no_lesson: bool,
    },
    /// Keep (or decline) the lesson proposed for an accepted agent run whose code you replaced
    /// with your own (`sift stats` lists them): a memory note citing your lines, which later runs
    /// about that code are given.
    Lesson {
        #[command(flatten)]
        repo: RepoArgs,
        /// The run (`sift stats` lists the runs with a lesson proposed).
        run: String,
        /// Keep it without asking.
        #[arg(long, conflicts_with = "drop")]
        keep: bool,
        /// Decline it: it is no longer proposed.
        #[arg(long)]
        drop: bool,
    },
    /// Propose demotions of the rules this repository keeps dismissing (from the committed
    /// dismissals and this machine's record of fates); --write puts them in .sift/learned.toml,
    /// a committed file the review reads.
    Learn {
        #[command(flatten)]
        repo: RepoArgs,
        /// Write .sift/learned.toml: the proposals, and the entries still in force.
        #[arg(long)]
        write: bool,
        /// Print the proposals and the file's entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the record of fates as a preference dataset (decided agent runs and best-of-N
    /// choices), one JSON object per line, to stdout or FILE.
    Export {
        #[command(flatten)]
        repo: RepoArgs,
        /// The format (jsonl is the one there is).
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl"])]
        format: String,
        /// Write to FILE instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Delete the record of fates (.sift/fates/); dismissals and notes are kept.
    Clear {
        #[command(flatten)]
        repo: RepoArgs,
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
            let recorder = recorder(&root)?;
            let path = dismiss::dismiss(
                &root,
                &recorder,
                &fingerprint,
                &finding.rule,
                &finding.path,
                reason,
                false,
            )?;
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
            if !dismiss::forget(&root, &recorder(&root)?, &fingerprint)? {
                bail!("{fingerprint} is not dismissed: `sift feedback list` shows what is");
            }
            println!("forgot the dismissal of {fingerprint}: it will be raised again");
        }
        FeedbackCommand::Reject { repo, run, reason, lesson, no_lesson } => {
            let root = repo.folder()?;
            let store = sift_engine::store::open(&root)?;
            let transcript = sift_engine::agent::Transcript::open(&store, &run);
            if !transcript.path().exists() {
                bail!(
                    "no agent run {run} in {}: `sift agent` prints each run's id",
                    transcript
                        .path()
                        .parent()
                        .map_or_else(String::new, |p| p.display().to_string())
                );
            }
            let recorder = recorder(&root)?;
            if recorder.is_on() {
                launch::refused(&recorder, &run, reason.as_deref());
                drop(recorder);
                println!("recorded that you refused {run}");
            } else {
                eprintln!(
                    "recording is off ([feedback] record = false): the refusal is not recorded"
                );
            }
            if let Some(reason) = reason.as_deref().filter(|_| !no_lesson) {
                propose_lesson(&repo, &transcript, &run, reason, lesson)?;
            }
        }
        FeedbackCommand::Lesson { repo, run, keep, drop } => {
            let root = repo.folder()?;
            let ctx = super::memory::Ctx::open(&repo)?;
            let proposed = sift_engine::agent::lessons::proposed(&root, &ctx.memory, fates::now());
            let Some(lesson) = proposed.into_iter().find(|l| l.run == run) else {
                bail!(
                    "no lesson is proposed for run {run}: `sift stats` lists the runs with one (an accepted change you replaced with your own code, in the last 14 days, not kept or declined)"
                );
            };
            if drop {
                sift_engine::agent::retention::drop_lesson(&root, &run)
                    .with_context(|| format!("cannot decline the lesson of {run}"))?;
                println!("declined the lesson of {run}: it is no longer proposed");
            } else {
                println!("{}", lesson.text);
                offer_lesson(&ctx, &lesson, keep, "--keep")?;
            }
        }
        FeedbackCommand::Learn { repo, write, json } => {
            let root = repo.folder()?;
            let learning = sift_engine::review::learned::learn(&root, fates::now())?;
            if json {
                let value = serde_json::json!({
                    "proposals": learning.proposals,
                    "current": learning.current.demotions,
                    "next": learning.next.demotions,
                    "dismissals": learning.dismissals,
                });
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print_learning(&learning);
            }
            if write {
                if learning.next == learning.current {
                    eprintln!("{} is up to date", sift_engine::review::learned::LEARNED);
                } else {
                    let path = sift_engine::review::learned::write(&root, &learning.next)?;
                    eprintln!(
                        "wrote {} ({} entr{}): commit it; a pull request's review reads it from its base",
                        path.display(),
                        learning.next.demotions.len(),
                        if learning.next.demotions.len() == 1 { "y" } else { "ies" }
                    );
                }
            }
        }
        FeedbackCommand::Export { repo, format: _, output } => {
            let root = repo.folder()?;
            let store = sift_engine::store::open(&root)?;
            let replay = fates::read(&store)?;
            let features = sift_engine::agent::best::features(&store);
            let lines = fates::export::lines(&replay.records, &features);
            let mut text = String::new();
            for line in &lines {
                text.push_str(&serde_json::to_string(line)?);
                text.push('\n');
            }
            match output {
                Some(file) => {
                    std::fs::write(&file, text)
                        .with_context(|| format!("cannot write {}", file.display()))?;
                    eprintln!("wrote {} line(s) to {}", lines.len(), file.display());
                }
                None => print!("{text}"),
            }
        }
        FeedbackCommand::Clear { repo } => {
            let root = repo.folder()?;
            let store = sift_engine::store::open(&root)?;
            let (dir, _) = fates::usage(&store);
            let bytes = fates::clear(&store)?;
            println!("cleared the record of fates in {} ({bytes} bytes)", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The record of fates of `root`, under its configuration.
fn recorder(root: &std::path::Path) -> Result<Recorder> {
    let config = super::load_config(root, &[])?;
    Ok(Recorder::configured(root, &config, Front::CLI))
}

/// Proposes the lesson of refused run `run` (see `sift_engine::agent::lessons`): written as a
/// memory note when `keep`, else asked on a terminal, else shown with how to keep it.
#[allow(clippy::print_stdout)]
fn propose_lesson(
    repo: &RepoArgs,
    transcript: &sift_engine::agent::Transcript,
    run: &str,
    reason: &str,
    keep: bool,
) -> Result<()> {
    let resumed = transcript.resume().with_context(|| format!("read the run {run}"))?;
    let Some(lesson) =
        sift_engine::agent::lessons::lesson(run, &resumed.task, &resumed.changes, reason)
    else {
        println!("no lesson proposed: the run changed no existing file to cite");
        return Ok(());
    };
    offer_lesson(&super::memory::Ctx::open(repo)?, &lesson, keep, "--lesson")
}

/// Shows `lesson` as the note it would be, and writes it when `keep`, else asks on a terminal,
/// else says how to keep it (`flag`).
#[allow(clippy::print_stdout)]
fn offer_lesson(
    ctx: &super::memory::Ctx,
    lesson: &sift_engine::agent::lessons::Lesson,
    keep: bool,
    flag: &str,
) -> Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    let note = sift_engine::agent::lessons::note(&ctx.memory, &ctx.code()?, lesson)?;
    println!("proposed lesson {:?}", note.front.title);
    for c in &note.front.citations {
        println!("  cites {} (lines {})", c.label(), c.lines.as_deref().unwrap_or("?"));
    }
    let keep = keep
        || (std::io::stdin().is_terminal() && {
            print!("keep it as a memory note (.sift/memory/{}.md)? [y/N] ", note.slug);
            std::io::stdout().flush()?;
            let mut answer = String::new();
            std::io::stdin().lock().read_line(&mut answer)?;
            matches!(answer.trim(), "y" | "Y" | "yes")
        });
    if keep {
        let path = ctx.memory.write(&note)?;
        println!("wrote {} ({}): later runs about that code get it", note.slug, ctx.shown(&path));
    } else {
        println!("not written: pass {flag} to keep it");
    }
    Ok(())
}

/// `sift feedback learn`'s report.
#[allow(clippy::print_stdout)]
fn print_learning(learning: &sift_engine::review::learned::Learning) {
    use sift_engine::review::learned::{LEARNED, MIN_DISMISSED, WINDOW_DAYS};
    println!(
        "{} dismissal(s) in the last {WINDOW_DAYS} days; a rule is demoted from {MIN_DISMISSED} distinct findings dismissed",
        learning.dismissals
    );
    if learning.proposals.is_empty() {
        println!("no demotion proposed");
    }
    for p in &learning.proposals {
        println!("proposed: {} → {} ({})", p.rule, p.to, p.evidence());
    }
    for d in &learning.current.demotions {
        let state = if d.active(&learning.today) { "in force" } else { "lapsed" };
        println!("{LEARNED}: {} → {}, {state} ({})", d.rule, d.to, d.evidence());
    }
    if learning.next != learning.current {
        println!("pass --write to update {LEARNED}");
    }
}
