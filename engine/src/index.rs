//! What the front ends may use of the index itself (`sift-indexer`), named here on purpose.
//!
//! The front ends depend on `sift-engine` alone (a test in `tests/tests/architecture.rs` fails
//! when `lsp/` names a lower crate), so whatever of the index they show or pass on is listed
//! here: the index and its layout on disk, progress and update options, the few text helpers
//! the CLI prints with, and the errors. Anything not listed is the engine's business.

pub use sift_indexer::aside::classify_path;
pub use sift_indexer::chunk::looks_generated;
pub use sift_indexer::config::parse_size;
pub use sift_indexer::hybrid::query_identifiers;
pub use sift_indexer::store::{LOGS, write_atomic};
pub use sift_indexer::tokenizer::{CodeTokenizer, tokenize};
pub use sift_indexer::vectors::{VectorIndex, VectorStore};
pub use sift_indexer::walk::walk;
pub use sift_indexer::{
    Aside, Asides, Chunker, CodeIndex, EmbedReport, Error, FORMAT_VERSION, Fusion, Hit,
    IndexConfig, Language, Layout, NoProgress, OpenNotice, Progress, Scope, TextKind,
    UpdateOptions, UpdateReport, WatchGuard,
};
