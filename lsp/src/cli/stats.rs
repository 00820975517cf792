//! `sift stats`: what became of sift's suggestions in this repository, from the local record
//! of fates (`sift_engine::fates::stats`): a table with sparklines, or `--json`; `--png FILE`
//! also draws the figures as a chart (`super::chart`).

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use clap::Args;
use sift_engine::fates::{self, stats};

use super::RepoArgs;

/// Arguments of `sift stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Only what happened since: a span (7d, 24h, 30m, 2w) or a date (YYYY-MM-DD, UTC)
    /// [default: 30d].
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Count the whole record.
    #[arg(long, conflicts_with = "since")]
    all: bool,
    /// One JSON object: the figures, where the record lives and its size.
    #[arg(long)]
    json: bool,
    /// Also draw the figures as a chart into this PNG file (records per day, agent runs, review
    /// rules).
    #[arg(long, value_name = "FILE")]
    png: Option<std::path::PathBuf>,
}

/// Runs `sift stats`.
pub fn run(args: StatsArgs) -> Result<ExitCode> {
    let root = args.repo.folder()?;
    let now = fates::now();
    let since =
        sift_engine::stats::period(args.since.as_deref(), args.all, now).map_err(|e| anyhow!(e))?;
    let recorder =
        fates::Recorder::configured(&root, &super::load_config(&root, &[])?, fates::Front::CLI);
    let report = sift_engine::stats::report(&root, &recorder, since, now)?;
    drop(recorder);
    let period = match since {
        Some(s) => format!("since {}", sift_engine::rules::feedback::rfc3339(at(s))),
        None => "the whole record".to_owned(),
    };
    if let Some(png) = &args.png {
        super::chart::write_png(png, &report.stats, &period)?;
        eprintln!("chart written to {}", png.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let figures = &report.stats;
    writeln!(out, "{period}: {} record(s)  {}", figures.events, stats::sparkline(&figures.daily))?;
    let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{:.0} %", r * 100.0));
    let a = &figures.agent;
    writeln!(out, "\nagent runs      shown  taken  edited  refused  undecided  taken of shown")?;
    let mut row = |name: &str, d: &stats::Decisions| {
        writeln!(
            out,
            "  {name:<13} {:>5}  {:>5}  {:>6}  {:>7}  {:>9}  {:>14}",
            d.shown,
            d.accepted,
            d.edited,
            d.rejected,
            d.undecided,
            rate(d.acceptance)
        )
    };
    row("all", a)?;
    for (model, d) in &figures.models {
        row(model, d)?;
    }
    if !figures.retention.is_empty() {
        let at: Vec<String> = ["1h", "1d", "7d", "commit"]
            .iter()
            .filter_map(|label| {
                let r = figures.retention.get(*label)?;
                let name = if *label == "commit" { "latest commit" } else { label };
                Some(format!(
                    "{name} {:.0} % ({} run{})",
                    r.mean_percent,
                    r.runs,
                    if r.runs == 1 { "" } else { "s" }
                ))
            })
            .collect();
        writeln!(out, "  code kept of accepted runs: {}", at.join(", "))?;
    }
    if figures.attempts.shown > 0 {
        writeln!(
            out,
            "  best-of-N: {} attempt(s) shown, {} taken",
            figures.attempts.shown, figures.attempts.taken
        )?;
    }
    let width = figures.rules.keys().map(String::len).max().unwrap_or(0).max(13);
    writeln!(
        out,
        "\n{:<w$}   {:>7}  dismissed (wrong/noise)  forgotten  silenced  fixed  ignored  resolved",
        "review rules",
        "shown",
        w = width
    )?;
    if figures.rules.is_empty() {
        writeln!(out, "  (none recorded)")?;
    }
    for (rule, r) in &figures.rules {
        writeln!(
            out,
            "  {rule:<width$} {:>7}  {:>10} / {:<10}  {:>9}  {:>8}  {:>5}  {:>7}  {:>8}",
            r.shown,
            r.dismissed_wrong,
            r.dismissed_noise,
            r.forgotten,
            r.silenced,
            r.fixed,
            r.ignored,
            r.resolution.map_or("-".to_owned(), |x| format!("{:.0} %", x * 100.0))
        )?;
    }
    let searches: usize = figures.searches.values().sum();
    let fronts: Vec<String> = figures.searches.iter().map(|(f, n)| format!("{f} {n}")).collect();
    writeln!(
        out,
        "\nsearch lists shown: {searches}{}",
        match fronts.is_empty() {
            true => String::new(),
            false => format!(" ({})", fronts.join(", ")),
        }
    )?;
    let n = &figures.notes;
    if n.shown > 0 {
        writeln!(
            out,
            "memory notes proposed: {}, accepted {}, refused {}",
            n.shown, n.accepted, n.rejected
        )?;
    }
    for (job, d) in &figures.automations {
        writeln!(
            out,
            "automation {job}: {} change(s) delivered, {} taken, {} not decided{}",
            d.shown,
            d.accepted + d.edited,
            d.undecided,
            d.acceptance.map_or(String::new(), |a| format!(" ({:.0} % taken)", a * 100.0))
        )?;
    }
    if !report.lessons.is_empty() {
        writeln!(
            out,
            "\nlessons proposed (accepted agent changes you replaced with your own code):"
        )?;
        for lesson in &report.lessons {
            writeln!(out, "  run {}: {}", lesson.run, lesson.cites.join(", "))?;
        }
        writeln!(
            out,
            "  `sift feedback lesson RUN` shows one and keeps it as a memory note; --drop declines it"
        )?;
    }
    writeln!(
        out,
        "\nthe record: {} ({} bytes, {} record(s){}; on this machine only; `sift feedback clear` deletes it)",
        report.record.path.display(),
        report.record.bytes,
        report.record.events,
        if report.record.skipped > 0 {
            format!(", {} unreadable line(s) skipped", report.record.skipped)
        } else {
            String::new()
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

fn at(secs: u64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)
}
