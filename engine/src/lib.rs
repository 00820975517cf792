//! sift's engine: what every front end (the CLI, the language server, the agent's tools, the
//! MCP server) calls, so that a behaviour exists once.
//!
//! - [`workspace`]: one repository: its index, its unsaved buffers, its vectors and model.
//! - [`live`]: a workspace being served (by `sift lsp` and `sift mcp` alike), kept fresh by its
//!   update task and its [`watch`]er, with its memory notes rechecked after every update.
//! - [`open`]: a workspace opened for one command: the index brought up to date, the
//!   embeddings a search uses chosen (the upgrade's once complete), notices through a console.
//! - [`search`]: the one search entry point ([`search::search`]): a query with a mode and
//!   limits, over one or more workspaces, unsaved buffers merged inside it.
//! - [`config`]: the one layered configuration (defaults, user file, repository file, editor
//!   settings, environment, flags), every value with its source, a typed section per subsystem.
//! - [`store`]: `.sift/`, opened with every subsystem's entries.
//! - [`embeddings`]: a workspace's embeddings: model, vector cache, search matrix and the passes
//!   that fill it.
//! - [`index`]: what the front ends may use of the index itself, listed on purpose.
//! - [`agent`]: the coding agent: its loop, its tools over this engine, its pending change,
//!   checkers, rules files, transcripts and best-of-N.
//! - [`memory`]: memory notes in `.sift/memory/`: their format, citations checked against the
//!   code (stale when the cited code changed or vanished), and their retrieval.
//! - [`fates`]: the local record of what became of every suggestion (shown, accepted,
//!   refused, dismissed…), written through one [`fates::Recorder`] by every front end.
//! - [`review`]: the review use case: a change from git or a diff, the rules and their
//!   configuration, the fix history, the model reviewer and the remembered dismissals.
//!
//! The engine knows nothing of LSP, clap or terminals: front ends convert its types to theirs.
//! Dependencies point one way: front ends → `sift-engine` → `sift-runtime` → `sift-indexer`.

pub mod agent;
pub mod automate;
pub mod config;
pub mod embeddings;
pub mod error;
pub mod fates;
pub mod github;
pub mod index;
pub mod live;
pub mod memory;
pub mod open;
pub mod review;
pub mod search;
pub mod stats;
pub mod store;
pub mod tune;
pub mod watch;
pub mod workspace;

pub use error::{Error, Result};
pub use search::{Found, Mode, Query, Results, search};
/// Every environment variable sift reads, in one table (`sift_env`).
pub use sift_env as env;
/// Edits as one type (byte ranges + text; to unified diffs here, to LSP edits in the server).
pub use sift_runtime::edit;
/// Embedding models: configuration, loading, installation (`sift_runtime::embed`).
pub use sift_runtime::embed;
/// Language models: the trait, messages, backends and their configuration (`sift_runtime::llm`).
pub use sift_runtime::llm;
/// What redaction took out of a prompt, for the front ends to show (`sift_runtime::redact`).
pub use sift_runtime::redact;
/// The rules engine: findings, severities, reports, dismissals (`sift_runtime::rules`).
pub use sift_runtime::rules;
/// The sandbox: the one policy for the agent's paths and commands (`sift_runtime::sandbox`).
pub use sift_runtime::sandbox;
pub use workspace::Workspace;
