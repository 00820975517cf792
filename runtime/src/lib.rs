//! sift's runtime: what runs inside the engine, each behind a trait or a plain data type so the
//! layers above can be tested with fakes:
//! - [`embed`]: the embedding models semantic search uses (the indexer owns the
//!   [`sift_indexer::Embedder`] trait, this crate implements it);
//! - [`llm`]: language models (the [`llm::LanguageModel`] trait, a local ONNX decoder, an
//!   OpenAI-compatible endpoint, a scripted fake);
//! - [`review`]: the bug-finder's rule engine and the model reviewer;
//! - [`edit`]: edits as one type;
//! - [`redact`]: secret-looking strings replaced before text goes to a remote model;
//! - [`sandbox`]: the one policy for every path the agent touches and every command it runs
//!   (path confinement, secrets, Linux confinement of commands, limits).
//!
//! The agent and WebAssembly plugins will live here too. The engine
//! (`sift-engine`) sits above this crate and the front ends above the engine:
//! `lsp → engine → runtime → indexer`.

pub mod edit;
pub mod embed;
pub mod llm;
pub mod redact;
pub mod rules;
pub mod sandbox;
pub mod setting;

pub use sift_indexer as indexer;
