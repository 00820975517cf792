//! sift's runtime: where models (through `ort`), the WebAssembly plugin sandbox, the agent and
//! the bug-finder will live, each behind a trait so the layers above can be tested with fakes.
//!
//! Nothing is implemented here yet: the code index (`sift-indexer`) is the only engine so far.
//! The crate exists so that the dependency direction `lsp → runtime → indexer` is fixed from the
//! start; it re-exports the indexer for the layers above.

pub use sift_indexer as indexer;
