//! What can go wrong in a review: each error says what failed, names the path or revision, and
//! where it can, what to do.

use std::path::PathBuf;

use sift_runtime::llm::LlmError;
use sift_runtime::rules::ReviewError;
use sift_runtime::rules::diff::DiffError;

/// Why a review could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The folder to review does not exist or is not a folder.
    #[error("not a directory: {}", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A git change was asked for outside a git repository.
    #[error(
        "not a git repository: {} (review inside a git repository, or give the change as a unified diff)",
        path.display()
    )]
    NotARepository {
        /// The folder given.
        path: PathBuf,
    },
    /// A revision that git does not know.
    #[error("unknown revision `{rev}`")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
    },
    /// `HEAD` does not resolve: nothing was committed yet.
    #[error(
        "unknown revision `HEAD`: the repository has no commit yet ({}; commit once, or give the change as a unified diff)",
        root.display()
    )]
    NoCommit {
        /// The repository.
        root: PathBuf,
    },
    /// git could not be started.
    #[error("cannot run git (is it installed and on PATH?): {source}")]
    GitMissing {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// git ran and failed.
    #[error("git {command} failed in {}: {message}", dir.display())]
    Git {
        /// The subcommand (`diff`, `show`…).
        command: String,
        /// Where it ran.
        dir: PathBuf,
        /// git's first line of stderr.
        message: String,
    },
    /// The diff to review is not a unified diff.
    #[error("cannot read the diff {name}: {source}")]
    Diff {
        /// Where the diff came from (a file, stdin, git).
        name: String,
        /// What is wrong with it.
        #[source]
        source: DiffError,
    },
    /// A rule, the review configuration or the dismissals could not be read.
    #[error(transparent)]
    Config(#[from] ReviewError),
    /// A `[[plugins]]` entry of the configuration is wrong.
    #[error(transparent)]
    Plugin(#[from] sift_plugins::PluginError),
    /// The configuration (its `[model]`, its `[github]`) could not be read.
    #[error("{0}")]
    ModelConfig(String),
    /// The configured language model could not be opened.
    #[error("the model reviewer's language model: {0}")]
    Model(LlmError),
}

/// The result type of reviews.
pub type Result<T, E = Error> = std::result::Result<T, E>;
