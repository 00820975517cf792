//! The on-disk index: its entries in `.sift/`, its format version, its tantivy schema, and
//! opening it safely.
//!
//! ```text
//! .sift/                a Store: see crate::store for the folder and who owns what in it
//!   config.toml         shared configuration (committable; crate::config)
//!   index/              cache: the lexical index
//!     sift-index.json   {"format": N}; written before anything else in index/
//!     meta.json, *.idx… tantivy's files
//!     manifest-*.json   per-file hashes, named by the commit that uses them
//!   index.new-*/        an index being created, renamed to index/ when complete
//!   index.old-*/        a discarded index being deleted
//!   vectors/            cache: vectors per model (crate::vectors)
//!   watch.lock          held (shared) by processes that keep the index fresh
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy};

use crate::chunk::Chunk;
use crate::error::{Error, REBUILD_HINT, Result};
use crate::manifest::{CommitPayload, Manifest};
use crate::store::{Store, sync_dir, write_atomic};
use crate::tokenizer::{CODE_TOKENIZER, CodeTokenizer};

/// The index format this build reads and writes. Bump it whenever the schema, the tokenizer or
/// the chunker changes what is stored: an older index is then rebuilt, with a notice.
pub const FORMAT_VERSION: u32 = 4;

use crate::layout::MARKER;
pub use crate::layout::{
    INDEX, INDEX_DISCARDED, INDEX_STAGING, Layout, STORE_ENTRIES, WATCH_LOCK, WatchGuard,
};
pub use crate::schema::Fields;
use crate::schema::schema;

#[derive(Serialize, Deserialize)]
struct Marker {
    format: u32,
}

/// What [`CodeIndex::open_or_create`] had to do before the index could be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenNotice {
    /// A new, empty index was created.
    Created,
    /// The index had an older format and was replaced by an empty one.
    Rebuilt {
        /// The format that was found.
        old_format: u32,
    },
}

/// A repository's code index.
pub struct CodeIndex {
    pub(crate) layout: Layout,
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    /// The manifest last read by [`CodeIndex::manifest_shared`], with its file name (a commit
    /// writes a new manifest file; a named one never changes).
    manifest_cache: std::sync::Mutex<Option<(String, std::sync::Arc<Manifest>)>>,
    /// The documents of the last searcher asked about grouped by file ([`CodeIndex::file_map`]).
    file_map: std::sync::Mutex<Option<std::sync::Arc<crate::files::FileMap>>>,
    /// Whether updates keep the definitions of the files they index
    /// ([`CodeIndex::keep_definitions`]).
    definitions_wanted: std::sync::atomic::AtomicBool,
    /// The definitions of the files the last update indexed, by path, with their content hash.
    definitions: std::sync::Mutex<Definitions>,
    /// The last update in this process: the manifest before, the one it committed, and every
    /// path it indexed or removed.
    last_change: std::sync::Mutex<Option<(String, String, Vec<String>)>>,
}

/// Definitions by path, each with the content hash of the text they were taken from.
type Definitions = std::collections::HashMap<String, (String, std::sync::Arc<Vec<Chunk>>)>;

/// Updates that index more files than this keep no definitions (a first index of a large tree
/// would hold them all in memory, for a check that reads few of them).
pub(crate) const MAX_KEPT_DEFINITIONS: usize = 1024;

enum Found {
    Missing,
    Outdated(u32),
    Ready(Box<CodeIndex>),
}

impl CodeIndex {
    /// Opens the index in `store` for reading; `Ok(None)` when there is none (or only an
    /// outdated one, which the next update rebuilds). Creates nothing.
    pub fn open(store: &Store) -> Result<Option<CodeIndex>> {
        Ok(match open_existing(Layout::new(store))? {
            Found::Ready(index) => Some(*index),
            Found::Missing | Found::Outdated(_) => None,
        })
    }

    /// Opens the index in `store`, creating `.sift/` ([`Store::ensure`]) and an empty index
    /// when needed and replacing an index of an older format.
    pub fn open_or_create(store: &Store) -> Result<(CodeIndex, Option<OpenNotice>)> {
        let layout = Layout::new(store);
        store.ensure()?;
        remove_old_dirs(&layout.sift_dir);
        match open_existing(layout.clone())? {
            Found::Ready(index) => Ok((*index, None)),
            Found::Missing => Ok((create(layout)?, Some(OpenNotice::Created))),
            Found::Outdated(old_format) => {
                discard(&layout)?;
                Ok((create(layout)?, Some(OpenNotice::Rebuilt { old_format })))
            }
        }
    }

    /// Throws the index in `store` away (whatever state it is in) and creates an empty one.
    pub fn rebuild(store: &Store) -> Result<CodeIndex> {
        let layout = Layout::new(store);
        store.ensure()?;
        discard(&layout)?;
        remove_old_dirs(&layout.sift_dir);
        create(layout)
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.layout.root
    }

    /// Where the index lives.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of chunks in the index.
    pub fn num_chunks(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The manifest of the latest commit.
    pub fn manifest(&self) -> Result<Manifest> {
        let meta =
            self.index.load_metas().map_err(|e| Error::tantivy(&self.layout.index_dir, e))?;
        match meta.payload {
            None => Ok(Manifest::default()),
            Some(payload) => {
                let payload: CommitPayload =
                    serde_json::from_str(&payload).map_err(|e| Error::Corrupt {
                        path: self.layout.index_dir.clone(),
                        reason: format!("unreadable commit payload: {e}"),
                    })?;
                Manifest::load(&self.layout.index_dir, &payload.manifest)
            }
        }
    }

    /// The manifest of the commit in force and its file name (empty: no commit yet), shared:
    /// read from disk only when a commit happened since the last call. For readers that look
    /// it up after every update (memory notes' checks) rather than change it.
    pub fn manifest_shared(&self) -> Result<(std::sync::Arc<Manifest>, String)> {
        let Some(name) = self.manifest_name()? else {
            return Ok((std::sync::Arc::new(Manifest::default()), String::new()));
        };
        let mut cache = self.manifest_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached, manifest)) = cache.as_ref()
            && *cached == name
        {
            return Ok((manifest.clone(), name));
        }
        let manifest = std::sync::Arc::new(Manifest::load(&self.layout.index_dir, &name)?);
        *cache = Some((name.clone(), manifest.clone()));
        Ok((manifest, name))
    }

    /// With `aside` to leave out, the file map that tells, by path, which documents it leaves
    /// out before they are read ([`crate::files::FileMap::leaves_out`]; `None`: nothing to
    /// leave out).
    pub(crate) fn aside_map(
        &self,
        searcher: &tantivy::Searcher,
        aside: crate::Asides,
    ) -> Result<Option<std::sync::Arc<crate::files::FileMap>>> {
        if aside.is_empty() { Ok(None) } else { self.file_map(searcher).map(Some) }
    }

    /// The documents of `searcher` (one of this index's) grouped by file, for file-level
    /// scores: built again only when its segments or their deletions differ from the last
    /// searcher's (a commit), so a server's queries share one.
    pub(crate) fn file_map(
        &self,
        searcher: &tantivy::Searcher,
    ) -> Result<std::sync::Arc<crate::files::FileMap>> {
        let mut cache = self.file_map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = cache.as_ref().filter(|m| m.fits(searcher)) {
            return Ok(map.clone());
        }
        let map = std::sync::Arc::new(crate::files::FileMap::build(
            searcher,
            &self.fields,
            &self.layout.index_dir,
        )?);
        *cache = Some(map.clone());
        Ok(map)
    }

    /// Asks every later update of this index to keep the definitions of the files it indexes
    /// ([`crate::chunk::Chunker::definitions`], from the parse it chunks them with), for
    /// [`CodeIndex::definitions_of`]: what a memory notes' check needs after an update, without
    /// parsing the changed files a second time, and the paths each update changed, for
    /// [`CodeIndex::changed_between`]. Off by default (it costs a walk of each tree and a copy
    /// of the changed paths).
    pub fn keep_definitions(&self, on: bool) {
        self.definitions_wanted.store(on, std::sync::atomic::Ordering::Relaxed);
        if !on {
            self.definitions.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }

    pub(crate) fn definitions_wanted(&self) -> bool {
        self.definitions_wanted.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn remember_definitions(
        &self,
        defs: std::collections::HashMap<String, (String, Vec<Chunk>)>,
    ) {
        let kept = defs.into_iter().map(|(rel, (hash, d))| (rel, (hash, std::sync::Arc::new(d))));
        *self.definitions.lock().unwrap_or_else(|e| e.into_inner()) = kept.collect();
    }

    /// The definitions of `rel` as the last update saw it, if it indexed the file and `text`
    /// is still what it indexed (else `None`: parse it yourself).
    pub fn definitions_of(&self, rel: &str, text: &str) -> Option<std::sync::Arc<Vec<Chunk>>> {
        let kept = self.definitions.lock().unwrap_or_else(|e| e.into_inner());
        let (hash, defs) = kept.get(rel)?;
        (*hash == crate::manifest::content_hash(text.as_bytes())).then(|| defs.clone())
    }

    pub(crate) fn remember_change(&self, change: Option<(String, String, Vec<String>)>) {
        *self.last_change.lock().unwrap_or_else(|e| e.into_inner()) = change;
    }

    /// The paths whose content may differ between the commits whose manifests are named `from`
    /// and `to`, when this process's last update went exactly from one to the other and kept
    /// its paths (it does while [`CodeIndex::keep_definitions`] is on; `None`: unknown, compare
    /// the manifests).
    pub fn changed_between(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let last = self.last_change.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some((f, t, paths)) if f == from && t == to => Some(paths.clone()),
            _ => None,
        }
    }

    /// Keeps `manifest`, just committed as `name`, for [`CodeIndex::manifest_shared`].
    pub(crate) fn remember_manifest(&self, name: String, manifest: Manifest) {
        *self.manifest_cache.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((name, std::sync::Arc::new(manifest)));
    }

    /// The file name of the manifest the commit in force names (`None`: no commit yet).
    pub fn manifest_name(&self) -> Result<Option<String>> {
        let meta =
            self.index.load_metas().map_err(|e| Error::tantivy(&self.layout.index_dir, e))?;
        let Some(payload) = meta.payload else { return Ok(None) };
        let payload: CommitPayload =
            serde_json::from_str(&payload).map_err(|e| Error::Corrupt {
                path: self.layout.index_dir.clone(),
                reason: format!("unreadable commit payload: {e}"),
            })?;
        Ok(Some(payload.manifest))
    }

    /// Takes the single writer lock. Fails with [`Error::Locked`] when another process holds it.
    /// `small`: an update of a few files, for which one thread and tantivy's minimum heap
    /// start faster than a full-size writer.
    pub(crate) fn writer(&self, threads: usize, small: bool) -> Result<IndexWriter> {
        let (threads, per_thread) =
            if small { (1, 15_000_000) } else { (threads.max(1), 48_000_000) };
        self.index
            .writer_with_num_threads(threads, threads * per_thread)
            .map_err(|e| Error::tantivy(&self.layout.index_dir, e))
    }

    /// Reloads the reader to see the latest commit.
    pub fn reload(&self) -> Result<()> {
        self.reader.reload().map_err(|e| Error::tantivy(&self.layout.index_dir, e))
    }
}

/// Registers the code tokenizer on `index`.
pub(crate) fn register_tokenizer(index: &Index) {
    index.tokenizers().register(CODE_TOKENIZER, TextAnalyzer::from(CodeTokenizer::default()));
}

fn open_existing(layout: Layout) -> Result<Found> {
    let dir = &layout.index_dir;
    if !dir.exists() {
        return Ok(Found::Missing);
    }
    let marker = dir.join(MARKER);
    let bytes = match std::fs::read(&marker) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let empty =
                std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))?.next().is_none();
            if empty {
                return Ok(Found::Missing);
            }
            return Err(Error::Foreign {
                path: dir.clone(),
                reason: format!("it has no {MARKER}"),
                hint: REBUILD_HINT,
            });
        }
        Err(e) => return Err(Error::io("read", &marker, e)),
    };
    let found: Marker = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
        path: dir.clone(),
        reason: format!("unreadable {MARKER}: {e}"),
    })?;
    if found.format > FORMAT_VERSION {
        return Err(Error::NewerFormat {
            path: dir.clone(),
            found: found.format,
            supported: FORMAT_VERSION,
        });
    }
    if found.format < FORMAT_VERSION {
        return Ok(Found::Outdated(found.format));
    }
    let directory = tantivy::directory::MmapDirectory::open(dir)
        .map_err(|e| Error::Corrupt { path: dir.clone(), reason: e.to_string() })?;
    let exists = Index::exists(&directory)
        .map_err(|e| Error::Corrupt { path: dir.clone(), reason: e.to_string() })?;
    let index = if exists {
        Index::open(directory)
            .map_err(|e| Error::Corrupt { path: dir.clone(), reason: e.to_string() })?
    } else {
        // The marker was written but the process died before tantivy's first commit.
        let (schema, _) = schema();
        Index::create(directory, schema, tantivy::IndexSettings::default())
            .map_err(|e| Error::tantivy(dir, e))?
    };
    let (expected, fields) = schema();
    if index.schema() != expected {
        return Err(Error::Foreign {
            path: dir.clone(),
            reason: "its schema is not the one this sift writes".into(),
            hint: REBUILD_HINT,
        });
    }
    finish(layout, index, fields).map(|i| Found::Ready(Box::new(i)))
}

/// Creates an empty index in a staging folder and renames it into place, so a process killed
/// half-way never leaves a half-made `index/`, and of two processes creating it at once one wins
/// and the other opens the winner's.
fn create(layout: Layout) -> Result<CodeIndex> {
    let staging =
        layout.sift_dir.join(format!("index.new-{}-{:x}", std::process::id(), now_nanos()));
    std::fs::create_dir_all(&staging).map_err(|e| Error::io("create", &staging, e))?;
    let made = (|| {
        let marker = serde_json::to_vec(&Marker { format: FORMAT_VERSION }).unwrap_or_default();
        write_atomic(&staging.join(MARKER), &marker)?;
        let (schema, _) = schema();
        Index::create_in_dir(&staging, schema).map_err(|e| Error::tantivy(&staging, e))?;
        Ok(())
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    match std::fs::rename(&staging, &layout.index_dir) {
        // The new folder's name on disk too, so a power cut cannot take a built index away.
        Ok(()) => {
            sync_dir(&layout.sift_dir).map_err(|e| Error::io("create", &layout.index_dir, e))?
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            if !layout.index_dir.join(MARKER).exists() {
                return Err(Error::io("create", &layout.index_dir, e));
            }
            // Another process created it first: use theirs.
        }
    }
    match open_existing(layout.clone())? {
        Found::Ready(index) => Ok(*index),
        Found::Missing | Found::Outdated(_) => Err(Error::Corrupt {
            path: layout.index_dir,
            reason: "it vanished while being created".into(),
        }),
    }
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn finish(layout: Layout, index: Index, fields: Fields) -> Result<CodeIndex> {
    register_tokenizer(&index);
    let reader =
        index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(|e| {
            Error::Corrupt { path: layout.index_dir.clone(), reason: format!("{e}") }
        })?;
    Ok(CodeIndex {
        layout,
        index,
        reader,
        fields,
        manifest_cache: Default::default(),
        file_map: Default::default(),
        definitions_wanted: Default::default(),
        definitions: Default::default(),
        last_change: Default::default(),
    })
}

/// Moves the index directory aside (one atomic rename), then deletes it.
fn discard(layout: &Layout) -> Result<()> {
    if !layout.index_dir.exists() {
        return Ok(());
    }
    let aside = layout.sift_dir.join(format!("index.old-{:x}", now_nanos()));
    std::fs::rename(&layout.index_dir, &aside)
        .map_err(|e| Error::io("move aside", &layout.index_dir, e))?;
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// Deletes folders left by an interrupted [`discard`] and, once they are clearly abandoned, by an
/// interrupted [`create`].
fn remove_old_dirs(sift_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(sift_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let abandoned = INDEX_DISCARDED.matches(&name)
            || (INDEX_STAGING.matches(&name)
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 600)));
        if abandoned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
