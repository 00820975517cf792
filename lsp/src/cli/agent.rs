//! `sift agent`: runs the engine's agent on a task in a terminal. It streams what the agent
//! does (one line per step and tool call) to stderr, prints the answer and the pending change
//! as a unified diff to stdout, and writes files only with `--apply`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use sift_engine::Workspace;
use sift_engine::agent::launch::{self, Request};
use sift_engine::agent::{self, Budget, Event, Options, Setup, Stop, Transcript};
use sift_engine::fates::{Front, Recorder};
use sift_engine::llm::Cancel;
use sift_engine::llm::config as llm_config;
use sift_engine::open;

use super::{RepoArgs, WalkArgs};

/// Arguments of `sift agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// What to do, in plain words (not needed with --resume).
    #[arg(value_name = "TASK")]
    task: Vec<String>,
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    walk: WalkArgs,
    /// The model to ask for (the endpoint's model name; overrides `[model] name`).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Independent attempts; the best-ranked is shown first (best-of-N).
    #[arg(long = "n", value_name = "K", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=16))]
    n: u16,
    /// Write the change to the files (without it nothing is written).
    #[arg(long)]
    apply: bool,
    /// Most model turns [default: `[agent] max_steps`, 30].
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// Most tokens, prompts and answers summed [default: `[agent] max_tokens`, 400000].
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// Most seconds [default: `[agent] timeout_secs`, 900].
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Sampling seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Continue the run with this transcript id (printed at the end of every run).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Let the agent run the commands it asks to run outside the sandbox (its `run` tool's
    /// `outside_sandbox`), with the network and every file you can reach. Without it every
    /// such request is refused. Each one is printed and logged in .sift/agent/unsandboxed.jsonl.
    #[arg(long)]
    allow_unsandboxed: bool,
    /// Write the memory notes the agent proposes without asking (otherwise each is asked
    /// about on a terminal, and none is written elsewhere).
    #[arg(long)]
    remember: bool,
}

/// Runs `sift agent`.
pub fn run(args: AgentArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    if !root.is_dir() {
        bail!("{} is not a folder", root.display());
    }
    let root = std::fs::canonicalize(&root)
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let task_text = args.task.join(" ");
    if task_text.trim().is_empty() && args.resume.is_none() {
        bail!("say what the agent should do: sift agent \"TASK\" (or --resume ID)");
    }
    if args.resume.is_some() && args.n > 1 {
        bail!("--resume continues one run; it cannot be combined with --n");
    }
    let mut flags = args.walk.flags();
    if let Some(name) = &args.model {
        flags.push(sift_engine::config::Flag {
            section: "model",
            key: "name",
            flag: "--model",
            value: toml::Value::String(name.clone()),
        });
    }
    let config = super::load_config(&root, &flags)?;
    let model_config = config.model()?;
    let model = llm_config::open(&model_config)?;
    let about = model.describe();
    if model_config.backend.value == llm_config::Backend::Onnx {
        eprintln!(
            "note: {} is the local base model, a pipeline demo that cannot do agent work; \
             configure an OpenAI-compatible endpoint in [model] (see docs/agent.md)",
            about.name
        );
    }
    let (mut setup, workspace) = open_run(&root, &config)?;
    if args.allow_unsandboxed {
        setup = setup.with_approver(Box::new(FlagApproval));
    }
    let unsaved = BTreeMap::new();

    let cancel = Cancel::new();
    let on_interrupt = cancel.clone();
    ctrlc::set_handler(move || {
        if on_interrupt.is_cancelled() {
            std::process::exit(130);
        }
        eprintln!("\ncancelling (Ctrl-C again to quit at once)");
        on_interrupt.cancel();
    })
    .context("cannot install the Ctrl-C handler")?;

    let options = Options {
        budget: launch::budget(setup.budget, args.max_steps, args.max_tokens, args.timeout),
        params: sift_engine::llm::GenerationParams {
            temperature: args.temperature,
            seed: args.seed,
            ..Options::default().params
        },
        ..Options::default()
    };

    // A run to continue: its transcript, read back.
    let resume = match &args.resume {
        Some(id) => {
            let t = Transcript::open(&setup.store, id);
            let r = t.resume().with_context(|| format!("cannot resume the run {id}"))?;
            let messages = r.history.len() + usize::from(!task_text.trim().is_empty());
            eprintln!("resuming {} ({messages} messages)", t.id());
            Some((t, r))
        }
        None => None,
    };
    let request = Request {
        task: &task_text,
        attempts: usize::from(args.n),
        resume,
        transcript: None,
        options: &options,
    };
    let mut printer = Printer::new((args.n > 1).then_some(args.n));
    let finished =
        launch::launch(&setup, &workspace, &unsaved, &*model, request, &cancel, &mut |i, e| {
            printer.attempt_event(i, e)
        })?;
    super::report_redactions(&*model);
    if args.n > 1 {
        return best_of(&args, &setup, &workspace.recorder, &finished, &options);
    }
    let recorder = &workspace.recorder;
    let redactions = model.redactions();
    report(&args, &setup, recorder, &about.name, &finished.outcome, &options.budget, &redactions)
}

/// The agent's setup and workspace for a run at `root` (canonical) under `config`: the setup
/// first, so that a bad `[sandbox]` fails before any indexing; then the index brought up to
/// date and the model serving it (`sift agent`, `sift automate`).
pub(super) fn open_run(
    root: &std::path::Path,
    config: &sift_engine::config::Config,
) -> Result<(Setup, Workspace)> {
    let setup = Setup::new(root, config)?;
    // The configuration is read once per run: the index and the model come from this one.
    let every = sift_engine::index::UpdateOptions::default().commit_interval;
    let console = super::progress::Terminal;
    let index = open::index(root, false, || Ok(config.update_options(every)?), &console)?;
    let semantic = open::for_search_with(&index, config.embed()?, false, false, None, &console)?;
    let workspace = Workspace::new(index, semantic)?.configured(config, Front::CLI)?;
    Ok((setup, workspace))
}

/// Prints the outcome, applies it with `--apply`, and picks the exit code.
fn report(
    args: &AgentArgs,
    setup: &Setup,
    recorder: &Recorder,
    model: &str,
    outcome: &agent::Outcome,
    budget: &Budget,
    redactions: &[sift_engine::redact::Redaction],
) -> Result<ExitCode> {
    let diff = outcome.changes.unified_diff();
    let mut stdout = std::io::stdout().lock();
    let id = outcome.transcript.clone().unwrap_or_default();
    if args.json {
        let value = serde_json::json!({
            "stop": outcome.stop.as_str(),
            "detail": outcome.stop.describe(budget),
            "answer": outcome.answer,
            "diff": diff,
            "files": outcome.changes.changed_paths(),
            "steps": outcome.steps,
            "tokens": outcome.tokens,
            "compactions": outcome.compactions,
            "rules": outcome.rules,
            "model": model,
            "transcript": id,
            "applied": args.apply && !diff.is_empty(),
            "redactions": redactions,
            "notes": outcome.notes.iter().map(|n| serde_json::json!({
                "slug": n.slug,
                "title": n.front.title,
                "text": n.body,
                "cites": n.front.citations.iter().map(|c| c.label()).collect::<Vec<_>>(),
                "written": args.remember,
            })).collect::<Vec<_>>(),
        });
        writeln!(stdout, "{value}")?;
    } else {
        if !outcome.answer.trim().is_empty() {
            writeln!(stdout, "{}\n", outcome.answer.trim())?;
        }
        if diff.is_empty() {
            eprintln!("no files changed");
        } else {
            write!(stdout, "{diff}")?;
        }
    }
    stdout.flush()?;
    eprintln!(
        "{} after {} steps, {} tokens ({model}); transcript {id}",
        outcome.stop.describe(budget),
        outcome.steps,
        outcome.tokens
    );
    if !outcome.rules.is_empty() {
        eprintln!("rules files applied: {}", outcome.rules.join(", "));
    }
    remember(args, setup, &outcome.notes)?;
    if !diff.is_empty() {
        if args.apply {
            let written = outcome.changes.apply(&setup.policy)?;
            launch::applied(recorder, setup.root(), &id, model, &outcome.changes, None);
            eprintln!("applied: wrote {}", written.join(", "));
        } else {
            eprintln!(
                "nothing was written: run again with --apply, or `sift agent --resume {id} --apply`"
            );
        }
    }
    Ok(match outcome.stop {
        Stop::Done => ExitCode::SUCCESS,
        Stop::Cancelled => ExitCode::from(130),
        _ => ExitCode::from(2),
    })
}

/// `--n K`: the attempts, ranked, each with its score and diff; `--apply` writes the first.
fn best_of(
    args: &AgentArgs,
    setup: &Setup,
    recorder: &Recorder,
    finished: &launch::Finished,
    options: &Options,
) -> Result<ExitCode> {
    let attempts = &finished.attempts;
    let mut stdout = std::io::stdout().lock();
    for (rank, a) in attempts.iter().enumerate() {
        let s = &a.score;
        let checks = s
            .checker_problems
            .map_or("no checker ran".to_owned(), |n| format!("{n} checker problems"));
        let review = s
            .review_findings
            .map_or("review did not run".to_owned(), |n| format!("{n} review findings"));
        writeln!(
            stdout,
            "=== #{} attempt {}: {}, {} files, {checks}, {review}, agrees with {} other(s) ===",
            rank + 1,
            a.index + 1,
            a.outcome.stop.describe(&options.budget),
            s.files_changed,
            s.agreement,
        )?;
        if !a.outcome.answer.trim().is_empty() {
            writeln!(stdout, "{}", a.outcome.answer.trim())?;
        }
        write!(stdout, "{}", if a.diff.is_empty() { "(no change)\n" } else { &a.diff })?;
    }
    stdout.flush()?;
    finished.record_pick(setup, attempts.first().filter(|_| args.apply).map(|a| a.index));
    if let Some(first) = attempts.first() {
        if args.apply && !first.diff.is_empty() {
            let written = first.outcome.changes.apply(&setup.policy)?;
            let (id, model) = (&finished.id, &finished.model);
            launch::applied(
                recorder,
                setup.root(),
                id,
                model,
                &first.outcome.changes,
                Some(first.index),
            );
            eprintln!("applied attempt {}: wrote {}", first.index + 1, written.join(", "));
        } else if !args.apply {
            eprintln!(
                "nothing was written: run again with --apply to write the first-ranked attempt"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--allow-unsandboxed`: the user approved, for this run, the commands the agent asks to run
/// outside the sandbox; each is announced on stderr before it runs.
struct FlagApproval;

impl agent::approval::Approver for FlagApproval {
    fn decide(&self, escape: &agent::approval::Escape, _: &Cancel) -> agent::approval::Decision {
        eprintln!(
            "  running outside the sandbox (--allow-unsandboxed): {}\n    because: {}",
            escape.command, escape.why
        );
        agent::approval::Decision::Approved { by: "--allow-unsandboxed".into() }
    }
}

/// Progress on stderr: one line per step and tool call.
struct Printer {
    attempts: Option<u16>,
}

impl Printer {
    fn new(attempts: Option<u16>) -> Printer {
        Printer { attempts }
    }

    fn attempt_event(&mut self, attempt: usize, event: Event) {
        let prefix = match self.attempts {
            Some(_) => format!("[{}] ", attempt + 1),
            None => String::new(),
        };
        self.line(&prefix, event);
    }

    fn line(&mut self, prefix: &str, event: Event) {
        match event {
            Event::Step(n) => eprintln!("{prefix}step {n}"),
            Event::Text(_) => {}
            Event::ToolCall { name, summary } => eprintln!("{prefix}  {name} {summary}"),
            Event::ToolResult { error: true, first_line, .. } => {
                eprintln!("{prefix}    ✗ {first_line}")
            }
            Event::ToolResult { first_line, .. } => eprintln!("{prefix}    {first_line}"),
            Event::Compacted { before, after } => {
                eprintln!("{prefix}  (conversation compacted: ~{before} → ~{after} tokens)")
            }
        }
    }
}

/// The memory notes the agent proposed: written with `--remember`, else each asked about on a
/// terminal; never written without the user's yes.
fn remember(args: &AgentArgs, setup: &Setup, notes: &[sift_engine::memory::Note]) -> Result<()> {
    use std::io::IsTerminal as _;
    if notes.is_empty() {
        return Ok(());
    }
    let memory = sift_engine::memory::Memory::open(&setup.store);
    let ask = !args.remember && !args.json && std::io::stdin().is_terminal();
    let mut kept = 0;
    for note in notes {
        let cites: Vec<String> = note.front.citations.iter().map(|c| c.label()).collect();
        eprintln!(
            "\nthe agent proposes a memory note: {}\n  {}{}",
            note.front.title,
            note.body.replace('\n', "\n  "),
            if cites.is_empty() {
                String::new()
            } else {
                format!("\n  cites {}", cites.join(", "))
            }
        );
        let yes = if args.remember {
            true
        } else if ask {
            eprint!("keep it in .sift/memory/? [y/N] ");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            matches!(line.trim(), "y" | "Y" | "yes")
        } else {
            false
        };
        if yes {
            let mut note = note.clone();
            note.slug = memory.free_slug(&note.front.title);
            memory.write(&note)?;
            eprintln!("wrote .sift/memory/{}.md", note.slug);
            kept += 1;
        }
    }
    if kept < notes.len() && !args.remember && !ask {
        eprintln!("the proposed notes were not written: run with --remember to keep them");
    }
    Ok(())
}
