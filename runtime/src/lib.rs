//! sift's runtime: the models (through `ort`), and later the WebAssembly plugin sandbox, the
//! agent and the bug-finder, each behind a trait so the layers above can be tested with fakes.
//!
//! Today it holds the embedding models that semantic search uses ([`embed`]): the indexer owns
//! the [`sift_indexer::Embedder`] trait, this crate implements it. It re-exports the indexer for
//! the layers above, keeping the dependency direction `lsp → runtime → indexer`.

pub mod embed;
pub mod llm;
pub mod review;
pub mod setting;

pub use sift_indexer as indexer;
