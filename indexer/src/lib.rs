//! sift's code index: walk a tree, chunk its files by symbol, keep a lexical (BM25) index of the
//! chunks fresh and crash-safe, and search it.
//!
//! This crate knows nothing of models or of LSP. It does its own file-system I/O (walking and
//! tantivy's memory-mapped files need real paths); tests use temporary directories.
//!
//! ```no_run
//! use sift_indexer::{CodeIndex, NoProgress, STORE_ENTRIES, SearchOptions, Store, UpdateOptions};
//!
//! # fn main() -> sift_indexer::Result<()> {
//! // `.sift/`, knowing the indexer's entries only (sift itself passes every subsystem's).
//! let store = Store::open(std::path::Path::new("."), &[STORE_ENTRIES])?;
//! let (index, _notice) = CodeIndex::open_or_create(&store)?;
//! let report = index.update(&UpdateOptions::default(), &NoProgress)?;
//! println!("{} files, {} chunks", report.files_total, report.chunks_total);
//! for hit in index.search("parse config", &SearchOptions::default())? {
//!     println!("{}:{} {:?}", hit.path, hit.start_line, hit.symbol);
//! }
//! # Ok(())
//! # }
//! ```

pub mod aside;
pub mod chunk;
pub mod config;
pub mod embed;
pub mod error;
pub mod files;
pub mod fresh;
pub mod hybrid;
pub mod index;
pub mod lang;
pub mod layout;
pub mod manifest;
pub mod overlay;
pub mod schema;
pub mod search;
pub mod secrets;
pub mod sources;
pub mod stamp;
pub mod store;
pub mod tokenizer;
pub mod update;
pub mod vectors;
pub mod walk;

pub use aside::{Aside, Asides};
pub use chunk::{Chunk, ChunkKind, Chunker};
pub use config::IndexConfig;
pub use embed::{EmbedError, Embedder, Scope, TextKind};
pub use error::{Error, Result};
pub use hybrid::{EmbedReport, Fusion, MODEL_LEXICAL_WEIGHTS};
pub use index::{CodeIndex, FORMAT_VERSION, OpenNotice};
pub use lang::Language;
pub use layout::{Layout, STORE_ENTRIES, WatchGuard};
pub use overlay::Overlay;
pub use search::{FILE_POOL, Hit, SearchOptions};
pub use secrets::{DEFAULT_SECRET_PATTERNS, SecretPatterns};
pub use sources::Sources;
pub use store::{Entry, Registry, Store};
pub use update::{NoProgress, Progress, Skipped, UpdateOptions, UpdateReport};
