//! `sift ci init github`: writes the pull-request bot's workflow (the text is
//! `sift_engine::github::workflow`) and says what the repository must allow.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use sift_engine::github::workflow;

use super::RepoArgs;

/// Arguments of `sift ci`.
#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(subcommand)]
    command: CiCommand,
}

#[derive(Debug, Subcommand)]
enum CiCommand {
    /// Write the CI workflow that reviews every pull request and posts the review
    /// (`github`: .github/workflows/sift-review.yml).
    Init(InitArgs),
}

#[derive(Debug, Args)]
struct InitArgs {
    /// The CI system.
    #[arg(value_enum)]
    system: System,
    #[command(flatten)]
    repo: RepoArgs,
    /// The workflow step's command that installs sift [default: `cargo install` from the git
    /// URL in the repository variable SIFT_REPOSITORY].
    #[arg(long, value_name = "COMMAND")]
    install: Option<String>,
    /// Replace the workflow file when it exists.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum System {
    /// GitHub Actions.
    Github,
}

/// Runs `sift ci`.
#[allow(clippy::print_stdout)]
pub fn run(args: CiArgs) -> Result<ExitCode> {
    let CiCommand::Init(init) = args.command;
    let System::Github = init.system;
    let root = init.repo.folder()?;
    let file = root.join(workflow::PATH);
    if file.exists() && !init.force {
        anyhow::bail!(
            "{} exists; pass --force to replace it (your version is not kept)",
            file.display()
        );
    }
    let text = workflow::text(init.install.as_deref().unwrap_or(workflow::DEFAULT_INSTALL));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(&file, text).with_context(|| format!("write {}", file.display()))?;
    println!("wrote {}", workflow::PATH);
    println!("commit it; then the repository must allow:");
    for need in workflow::NEEDS {
        println!("- {need}");
    }
    Ok(ExitCode::SUCCESS)
}
