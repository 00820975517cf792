//! The engine's errors: each says what failed and what to do.

/// What went wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The index (or reading the repository) failed.
    #[error(transparent)]
    Index(#[from] sift_indexer::Error),
    /// The configuration could not be read.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A section of the configuration is invalid.
    #[error(transparent)]
    Invalid(#[from] crate::config::Invalid),
    /// Semantic search was asked for where no workspace has vectors; says why.
    #[error("semantic search is not available: {0}")]
    SemanticUnavailable(String),
    /// The model failed to embed the query.
    #[error("embedding the query failed: {0}")]
    QueryEmbedding(String),
    /// Semantic search was required where `[embed] enabled = false`.
    #[error("embeddings are turned off (`[embed] enabled = false` in .sift/config.toml)")]
    EmbeddingsOff,
    /// The embedding model could not be loaded.
    #[error(transparent)]
    Model(#[from] sift_runtime::embed::ModelError),
    /// A review could not run.
    #[error(transparent)]
    Review(#[from] crate::review::Error),
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
