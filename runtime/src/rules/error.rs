//! What can go wrong while loading rules and review configuration.

use std::path::PathBuf;

/// An error from loading a rule pack or a review configuration, or from recording a review
/// decision in `.sift/`.
///
/// Every variant names the file it is about; rule errors also name the line, so a message can be
/// shown as it is (`.sift/rules/x.toml:7: …`).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A rule file is malformed: bad TOML, a missing field, a query that does not compile for one of
    /// its languages, a check or template that names an unknown capture…
    #[error("{origin}:{line}: {message}")]
    Rule {
        /// Where the rule came from: a path, or `builtin:<file>`.
        origin: String,
        /// The 1-based line in that file the problem is on (1 when unknown).
        line: usize,
        /// What is wrong and, where possible, how to fix it.
        message: String,
    },
    /// `.sift/review.toml` is malformed or names something that does not exist.
    #[error("{origin}: {message}")]
    Config {
        /// Where the configuration came from (usually the path of `review.toml`).
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// Writing to `.sift/` failed (the store's message says what and where).
    #[error(transparent)]
    Store(#[from] sift_indexer::Error),
}

/// The result type of this module.
pub type Result<T> = std::result::Result<T, ReviewError>;
