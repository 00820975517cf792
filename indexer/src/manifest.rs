//! The manifest: what the index holds for each file (content hash, size, modification time,
//! chunk count), so an update re-reads only files whose size or time changed and re-chunks only
//! files whose content changed.
//!
//! Crash safety: a manifest is written to a new file (`manifest-<id>.json`, by the store's atomic
//! write) *before* the tantivy commit that names it in its payload. The commit is atomic (tantivy
//! replaces `meta.json` by rename), so the index and the manifest it names always agree: a crash
//! before the commit leaves the previous commit and its manifest in force, and the orphaned new
//! manifest is deleted by the next update.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Why a file is in the manifest without chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Skip {
    /// It holds NUL bytes in its first 8 KiB.
    Binary,
}

/// What the index holds for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// BLAKE3 of the content, first 16 bytes in hex.
    pub hash: String,
    /// Size in bytes when indexed.
    pub size: u64,
    /// Modification time (ns since the epoch) when indexed.
    pub mtime_ns: i64,
    /// The modification time was too close to the update to trust: re-hash next time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub racy: bool,
    /// Number of chunks indexed.
    pub chunks: u32,
    /// Language or text label.
    pub lang: String,
    /// Set when the file was skipped for its content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<Skip>,
}

/// Records by path. FxHash: the keys are paths from our own walk, and hashing them with SipHash
/// was the largest single cost of a no-op update on a large tree.
pub type FileMap = std::collections::HashMap<String, FileRecord, rustc_hash::FxBuildHasher>;

/// The manifest for a whole index.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Records by path (relative, `/`-separated).
    pub files: FileMap,
}

/// The payload sift stores in each tantivy commit.
#[derive(Debug, Serialize, Deserialize)]
pub struct CommitPayload {
    /// File name of the manifest for this commit, inside the index directory.
    pub manifest: String,
}

impl Manifest {
    /// Loads the manifest named `name` from `dir`.
    pub fn load(dir: &Path, name: &str) -> Result<Manifest> {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| Error::Corrupt {
            path: dir.to_path_buf(),
            reason: format!("cannot read the manifest {name}: {e}"),
        })?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: dir.to_path_buf(),
            reason: format!("unreadable manifest {name}: {e}"),
        })
    }

    /// Writes the manifest durably to a fresh file in `dir` (through
    /// [`write_atomic_with`](crate::store::write_atomic_with)); returns its name.
    pub fn store(&self, dir: &Path) -> Result<String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("manifest-{nanos:x}-{:x}.json", std::process::id());
        crate::store::write_atomic_with(&dir.join(&name), |file| {
            let mut buf = std::io::BufWriter::new(file);
            serde_json::to_writer(&mut buf, self)?;
            buf.flush()
        })?;
        Ok(name)
    }

    /// Deletes manifests in `dir` other than `keep` (left over by earlier commits or crashes).
    pub fn remove_others(dir: &Path, keep: &str) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with("manifest-") && name != keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The content hash a file's record carries: the first 16 bytes of its BLAKE3 hash, in hex.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    hex16(blake3::hash(bytes).as_bytes())
}

fn hex16(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(32);
    for b in &bytes[..16] {
        let _ = write!(out, "{b:02x}");
    }
    out
}
