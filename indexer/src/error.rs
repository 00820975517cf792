//! The indexer's errors: each says what failed, where, and what to do about it.

use std::path::PathBuf;

/// The indexer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while indexing or searching.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path given to work on does not exist.
    #[error("path does not exist: {0}")]
    MissingPath(PathBuf),
    /// The path given to work on is not a directory.
    #[error("not a directory: {0}")]
    NotADirectory(PathBuf),
    /// A file-system operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`"read"`, `"create"`…).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The disk filled up while writing the index.
    #[error(
        "disk full while writing the index in {path}: free some space and run again (the last complete index is kept)"
    )]
    DiskFull {
        /// The index directory.
        path: PathBuf,
    },
    /// `.sift/` or its index holds something sift did not write.
    #[error("{path} does not look like sift's ({reason}): {hint}")]
    Foreign {
        /// The offending path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// What to do.
        hint: &'static str,
    },
    /// The index is damaged beyond what the next update can repair.
    #[error("the index in {path} is corrupt ({reason}): run `sift index --rebuild` to rebuild it")]
    Corrupt {
        /// The index directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The index was written by a newer sift with a format this one cannot read.
    #[error(
        "the index in {path} has format {found}, newer than this sift reads ({supported}): upgrade sift, or run `sift index --rebuild`"
    )]
    NewerFormat {
        /// The index directory.
        path: PathBuf,
        /// The format found on disk.
        found: u32,
        /// The format this build reads and writes.
        supported: u32,
    },
    /// Another process holds the index writer.
    #[error("another sift process is updating the index in {path}: try again when it has finished")]
    Locked {
        /// The index directory.
        path: PathBuf,
    },
    /// Another process is computing vectors for the same model in this repository.
    #[error(
        "another sift process is embedding chunks in {path}: its vectors will be used when it has finished"
    )]
    VectorsLocked {
        /// The lock file.
        path: PathBuf,
    },
    /// The embedding model failed, or gave something unusable.
    #[error("embedding failed: {0}")]
    Embedding(String),
    /// There is no index yet.
    #[error("no index in {path}: run `sift index` first")]
    NoIndex {
        /// Where the index was expected.
        path: PathBuf,
    },
    /// The query has nothing the index can match.
    #[error("the query {0:?} has no words to search for (letters, digits or `_`)")]
    EmptyQuery(String),
    /// Another error from the search engine.
    #[error("index error in {path}: {message}")]
    Index {
        /// The index directory.
        path: PathBuf,
        /// The engine's message.
        message: String,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done and where.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        let path = path.into();
        if is_disk_full(&source) {
            return Error::DiskFull { path };
        }
        Error::Io { action, path, source }
    }

    /// Maps a tantivy error raised while working on the index in `path`.
    pub fn tantivy(path: impl Into<PathBuf>, err: tantivy::TantivyError) -> Error {
        let path = path.into();
        let message = err.to_string();
        if message.contains("os error 28") || message.contains("No space left on device") {
            return Error::DiskFull { path };
        }
        // tantivy's indexing threads report a failed write only as "an index writer was killed":
        // find out whether the disk is what failed.
        let write_failed = matches!(
            err,
            tantivy::TantivyError::ErrorInThread(_)
                | tantivy::TantivyError::IoError(_)
                | tantivy::TantivyError::OpenWriteError(_)
        );
        if write_failed && no_room_in(&path) {
            return Error::DiskFull { path };
        }
        match err {
            tantivy::TantivyError::LockFailure(..) => Error::Locked { path },
            tantivy::TantivyError::DataCorruption(c) => {
                Error::Corrupt { path, reason: format!("{c:?}") }
            }
            tantivy::TantivyError::SchemaError(reason) => {
                Error::Foreign { path, reason, hint: REBUILD_HINT }
            }
            _ => Error::Index { path, message },
        }
    }
}

/// The advice given for a foreign index directory.
pub const REBUILD_HINT: &str = "move it away, or run `sift index --rebuild` to replace it";

/// Whether `dir` has no room for another megabyte (checked by writing one).
fn no_room_in(dir: &std::path::Path) -> bool {
    use std::io::Write;
    let probe = dir.join(format!(".space-probe-{}", std::process::id()));
    let result = std::fs::File::create(&probe).and_then(|mut f| {
        f.write_all(&vec![0u8; 1 << 20])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    matches!(result, Err(e) if is_disk_full(&e))
}

fn is_disk_full(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::StorageFull || err.raw_os_error() == Some(28)
}
