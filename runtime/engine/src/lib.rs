//! sift's engine: what every front end (the CLI, the language server, the agent's tools, the
//! MCP server) calls, so that a behaviour exists once.
//!
//! - [`workspace`]: one repository being served: its index, its unsaved buffers, its vectors
//!   and model.
//! - [`search`]: the one search entry point ([`search::search`]): a query with a mode and
//!   limits, over one or more workspaces, unsaved buffers merged inside it.
//! - [`config`]: the one layered configuration (defaults, user file, repository file, editor
//!   settings, environment, flags), every value with its source, a typed section per subsystem.
//! - [`semantic`]: a workspace's embeddings: model, vector cache, search matrix and the passes
//!   that fill it.
//!
//! The engine knows nothing of LSP, clap or terminals: front ends convert its types to theirs.
//! Dependencies point one way: front ends → `sift-engine` → `sift-runtime` → `sift-indexer`.

pub mod config;
pub mod error;
pub mod search;
pub mod semantic;
pub mod workspace;

pub use error::{Error, Result};
pub use search::{Found, Mode, Query, Results, search};
pub use workspace::Workspace;
