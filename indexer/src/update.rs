//! Bringing the index up to date with the tree: walk, compare with the manifest, re-read what
//! changed, re-chunk what differs, delete what is gone, commit.
//!
//! Work is split so that the expensive part runs in parallel and the index stays consistent:
//! worker threads read, hash and chunk files; one thread (the caller's) owns the tantivy writer
//! and the manifest, applies each result (delete the file's old chunks, add the new ones) and
//! commits every [`UpdateOptions::commit_interval`] and at the end. The manifest written with
//! each commit describes exactly what that commit holds (see [`crate::manifest`]), so an update
//! killed at any moment resumes from its last commit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tantivy::{IndexWriter, TantivyDocument, Term};

use crate::chunk::{Chunk, Chunker};
use crate::config::IndexConfig;
use crate::error::{Error, Result};
use crate::index::{CodeIndex, MAX_KEPT_DEFINITIONS};
use crate::lang::{Language, text_label};
use crate::manifest::content_hash;
use crate::manifest::{CommitPayload, FileRecord, Manifest, Skip};
use crate::schema::Fields;
use crate::walk::{FoundFile, walk, walk_paths};

/// How to run an update.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    /// Which files to index.
    pub config: IndexConfig,
    /// Threads that read and chunk files (the caller's thread writes).
    pub threads: usize,
    /// Commit at least this often, so a killed update keeps its progress.
    pub commit_interval: Duration,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        UpdateOptions {
            config: IndexConfig::default(),
            threads: cores.clamp(1, 8),
            commit_interval: Duration::from_secs(10),
        }
    }
}

/// Receives progress while an update runs. Called from the updating thread only.
pub trait Progress {
    /// A phase starts; `total` is the number of steps when known.
    fn phase(&self, name: &'static str, total: Option<u64>);
    /// `n` more steps of the current phase are done.
    fn advance(&self, n: u64);
    /// A commit made `files` files and `chunks` chunks searchable.
    fn committed(&self, files: u64, chunks: u64) {
        let _ = (files, chunks);
    }
}

/// A [`Progress`] that ignores everything.
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &'static str, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
}

/// Files left out of the index, by reason.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct Skipped {
    /// Files with NUL bytes near the start.
    pub binary: u64,
    /// Files over the size limit.
    pub too_large: u64,
    /// Symbolic links that loop.
    pub symlink_loops: u64,
    /// Files that could not be read.
    pub unreadable: u64,
    /// Symbolic links not followed because their target is outside the root.
    pub outside_links: u64,
    /// Files not indexed because they match the secret patterns.
    pub secrets: u64,
}

/// What an update did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct UpdateReport {
    /// Files indexed for the first time.
    pub added: u64,
    /// Files whose content changed and were re-chunked.
    pub changed: u64,
    /// Files removed from the index (deleted, now ignored, or now too large).
    pub removed: u64,
    /// Files whose size or time changed but whose content did not.
    pub touched: u64,
    /// Files left as they were without reading them.
    pub unchanged: u64,
    /// Chunks written by this update.
    pub chunks_written: u64,
    /// Bytes read from files whose content was examined.
    pub bytes_read: u64,
    /// Files skipped, by reason (whether or not they changed).
    pub skipped: Skipped,
    /// A few unreadable paths with their errors, for the user.
    pub unreadable_examples: Vec<(String, String)>,
    /// Files in the index afterwards.
    pub files_total: u64,
    /// Chunks in the index afterwards.
    pub chunks_total: u64,
    /// Commits made.
    pub commits: u64,
    /// Wall time of the update in milliseconds.
    pub elapsed_ms: u64,
}

impl UpdateReport {
    /// Whether the update changed what the index holds (not counting files whose content was
    /// re-read and found unchanged).
    pub fn changed_anything(&self) -> bool {
        self.added + self.changed + self.removed > 0
    }
}

/// The work planned for one file.
struct Job {
    file: FoundFile,
    old: Option<FileRecord>,
}

/// What a worker made of a job.
enum Outcome {
    Indexed {
        rel: String,
        record: FileRecord,
        docs: Vec<TantivyDocument>,
        was_new: bool,
        /// The file's definitions, when asked for ([`CodeIndex::keep_definitions`]).
        defs: Option<Vec<Chunk>>,
    },
    Touched {
        rel: String,
        record: FileRecord,
    },
    Binary {
        rel: String,
        record: FileRecord,
    },
    Unreadable {
        rel: String,
        error: String,
    },
}

/// The first commit of a long update comes this soon (at the latest).
const FIRST_COMMIT_AFTER: Duration = Duration::from_millis(100);

/// How long before the start of an update a modification time must be for the manifest to
/// trust it next time (file systems with coarse timestamps can hide a later edit).
const RACY_WINDOW_NS: i64 = 2_000_000_000;

struct Plan {
    jobs: Vec<Job>,
    /// Paths in the index that must go (deleted, ignored, too large).
    removed: Vec<String>,
    /// The manifest with unchanged records kept and removed paths dropped.
    base: Manifest,
    unchanged: u64,
    skipped_binary_unchanged: u64,
}

/// Whether a file's record can be trusted without reading the file: same size, same
/// modification time, and that time was not too close to the update that recorded it.
fn trusted(rec: &FileRecord, file: &FoundFile) -> bool {
    !rec.racy && rec.size == file.size && rec.mtime_ns == file.mtime_ns
}

/// Decides what to do, consuming the old manifest: records move into the new one, so a no-op
/// update on a large tree allocates almost nothing.
fn plan(files: &[FoundFile], mut old: Manifest) -> Plan {
    let mut base = Manifest::default();
    base.files.reserve(files.len());
    let mut jobs = Vec::new();
    let mut unchanged = 0;
    let mut skipped_binary_unchanged = 0;
    for file in files {
        match old.files.remove_entry(&file.rel) {
            Some((rel, rec)) if trusted(&rec, file) => {
                unchanged += 1;
                if rec.skip == Some(Skip::Binary) {
                    skipped_binary_unchanged += 1;
                }
                base.files.insert(rel, rec);
            }
            Some((rel, rec)) => {
                // Its old chunks stay in the index until the job replaces them.
                jobs.push(Job { file: file.clone(), old: Some(rec.clone()) });
                base.files.insert(rel, rec);
            }
            None => jobs.push(Job { file: file.clone(), old: None }),
        }
    }
    // What is left was not found (deleted, now ignored) or is now too large.
    let mut removed: Vec<String> = old.files.into_keys().collect();
    removed.sort();
    Plan { jobs, removed, base, unchanged, skipped_binary_unchanged }
}

/// Decides what to do for a few named files (a watcher's report), leaving every other record of
/// the old manifest as it is. `gone` are paths that no longer exist or are no longer indexable.
fn plan_subset(found: &[FoundFile], gone: &[String], old: Manifest) -> Plan {
    let mut base = old;
    let mut jobs = Vec::new();
    let mut unchanged = 0;
    let mut skipped_binary_unchanged = 0;
    for file in found {
        match base.files.get(&file.rel) {
            Some(rec) if trusted(rec, file) => {
                unchanged += 1;
                if rec.skip == Some(Skip::Binary) {
                    skipped_binary_unchanged += 1;
                }
            }
            Some(rec) => jobs.push(Job { file: file.clone(), old: Some(rec.clone()) }),
            None => jobs.push(Job { file: file.clone(), old: None }),
        }
    }
    let removed = gone.iter().filter(|rel| base.files.remove(*rel).is_some()).cloned().collect();
    Plan { jobs, removed, base, unchanged, skipped_binary_unchanged }
}

/// Which part of the tree an update looks at.
enum Scope<'a> {
    /// Walk everything.
    Tree,
    /// Only these absolute paths (files that changed, appeared or vanished).
    Paths(&'a [PathBuf]),
}

/// Updates with fewer files to process than this use a small, quick-to-start writer.
const SMALL_UPDATE: usize = 64;

/// More named paths than this and a targeted update walks the whole tree instead.
const MAX_TARGETED_PATHS: usize = 256;

impl CodeIndex {
    /// Brings the index up to date with the files under the root.
    ///
    /// Takes the writer lock only when something changed; fails with [`Error::Locked`] when
    /// another process is updating the same index.
    pub fn update(&self, opts: &UpdateOptions, progress: &dyn Progress) -> Result<UpdateReport> {
        self.run_update(opts, progress, Scope::Tree)
    }

    /// Brings the index up to date for the files at `paths` only (absolute paths reported by a
    /// file watcher): files that changed or appeared are indexed, files that vanished or are now
    /// ignored or too large leave the index, and nothing else is looked at. Falls back to
    /// [`CodeIndex::update`] when a path is a directory (a folder created, moved or deleted) or
    /// there are many paths.
    pub fn update_paths(
        &self,
        paths: &[PathBuf],
        opts: &UpdateOptions,
        progress: &dyn Progress,
    ) -> Result<UpdateReport> {
        let root = &self.layout.root;
        let missing: Vec<&PathBuf> = paths.iter().filter(|p| !p.exists()).collect();
        // A path that vanished may have been a folder: the manifest (read once) knows its files.
        let vanished_dir = !missing.is_empty() && {
            let manifest = self.manifest()?;
            missing.iter().any(|p| {
                let Ok(rel) = p.strip_prefix(root) else { return false };
                let prefix = format!("{}/", crate::walk::relative(Path::new(""), rel));
                manifest.files.keys().any(|k| k.starts_with(&prefix))
            })
        };
        let needs_walk =
            paths.len() > MAX_TARGETED_PATHS || vanished_dir || paths.iter().any(|p| p.is_dir());
        if needs_walk {
            return self.update(opts, progress);
        }
        self.run_update(opts, progress, Scope::Paths(paths))
    }

    fn run_update(
        &self,
        opts: &UpdateOptions,
        progress: &dyn Progress,
        scope: Scope<'_>,
    ) -> Result<UpdateReport> {
        let started = Instant::now();
        let scan_start_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64);
        progress.phase("scanning", None);
        let (walked, gone) = match scope {
            Scope::Tree => (walk(&self.layout.root, &opts.config), Vec::new()),
            Scope::Paths(paths) => walk_paths(&self.layout.root, paths, &opts.config),
        };
        let planner = |old: Manifest| match scope {
            Scope::Tree => plan(&walked.files, old),
            Scope::Paths(_) => plan_subset(&walked.files, &gone, old),
        };
        let mut report = UpdateReport {
            skipped: Skipped {
                too_large: walked.too_large.len() as u64,
                symlink_loops: walked.symlink_loops.len() as u64,
                unreadable: walked.unreadable.len() as u64,
                outside_links: walked.outside_links.len() as u64,
                secrets: walked.secrets.len() as u64,
                binary: 0,
            },
            unreadable_examples: walked.unreadable.iter().take(5).cloned().collect(),
            ..UpdateReport::default()
        };

        let mut planned = planner(self.manifest()?);
        let mut writer: Option<IndexWriter> = None;
        if !planned.jobs.is_empty() || !planned.removed.is_empty() {
            // Re-plan under the lock: another process may have committed since we looked.
            let small = planned.jobs.len() < SMALL_UPDATE;
            writer = Some(self.writer(opts.threads.div_ceil(2), small)?);
            planned = planner(self.manifest()?);
        }
        report.unchanged = planned.unchanged;
        report.skipped.binary = planned.skipped_binary_unchanged;

        let mut files_total = indexed_count(&planned.base);
        if let Some(mut writer) = writer {
            files_total =
                self.apply(&mut writer, planned, opts, scan_start_ns, progress, &mut report)?;
            progress.phase("merging", None);
            writer.wait_merging_threads().map_err(|e| Error::tantivy(&self.layout.index_dir, e))?;
        }
        // Also when nothing changed here: another process may have committed since we looked.
        self.reload()?;
        if let Scope::Tree = scope {
            // What this walk saw, for the next search's quick check (crate::fresh).
            let stamp = crate::stamp::stamp_of(
                &self.layout.root,
                &walked,
                &self.manifest()?,
                &opts.config,
                scan_start_ns,
            );
            match stamp {
                Some(stamp) => self.write_stamp(stamp),
                None => self.remove_stamp(),
            }
        }
        report.files_total = files_total;
        report.chunks_total = self.num_chunks();
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    fn apply(
        &self,
        writer: &mut IndexWriter,
        planned: Plan,
        opts: &UpdateOptions,
        scan_start_ns: i64,
        progress: &dyn Progress,
        report: &mut UpdateReport,
    ) -> Result<u64> {
        let fields = self.fields;
        // What this update changes, from which commit, when someone re-checks what depends on
        // these files afterwards (memory notes: CodeIndex::keep_definitions, changed_between).
        let change = match self.definitions_wanted() {
            true => {
                let from = self.manifest_name()?.unwrap_or_default();
                let mut touched: Vec<String> = planned.removed.clone();
                touched.extend(planned.jobs.iter().map(|j| j.file.rel.clone()));
                Some((from, touched))
            }
            false => None,
        };
        let mut current = planned.base;
        for path in &planned.removed {
            writer.delete_term(Term::from_field_text(fields.path, path));
            report.removed += 1;
        }
        let jobs = planned.jobs;
        progress.phase("indexing", Some(jobs.len() as u64));
        let mut last_commit = Instant::now();
        let next = AtomicUsize::new(0);
        let (tx, rx) = crossbeam_channel::bounded::<Outcome>(64);
        let threads = opts.threads.max(1).min(jobs.len().max(1));
        // Definitions for whoever checks citations after the update (memory notes), from the
        // parse the chunks come from; only for updates small enough to keep them all.
        let define = self.definitions_wanted() && jobs.len() <= MAX_KEPT_DEFINITIONS;
        let mut defined = std::collections::HashMap::new();
        std::thread::scope(|scope| -> Result<()> {
            for _ in 0..threads {
                let tx = tx.clone();
                let (jobs, next) = (&jobs, &next);
                scope.spawn(move || {
                    let mut chunker = Chunker::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        let outcome = process(job, &fields, &mut chunker, scan_start_ns, define);
                        if tx.send(outcome).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut failure = None;
            for outcome in rx.iter() {
                if failure.is_some() {
                    continue; // drain so workers finish
                }
                progress.advance(1);
                match outcome {
                    Outcome::Indexed { rel, record, docs, was_new, defs } => {
                        if let Some(defs) = defs {
                            defined.insert(rel.clone(), (record.hash.clone(), defs));
                        }
                        writer.delete_term(Term::from_field_text(fields.path, &rel));
                        report.chunks_written += docs.len() as u64;
                        report.bytes_read += record.size;
                        for doc in docs {
                            if let Err(e) = writer.add_document(doc) {
                                failure = Some(Error::tantivy(&self.layout.index_dir, e));
                                break;
                            }
                        }
                        if was_new {
                            report.added += 1
                        } else {
                            report.changed += 1
                        }
                        current.files.insert(rel, record);
                    }
                    Outcome::Touched { rel, record } => {
                        report.touched += 1;
                        report.bytes_read += record.size;
                        current.files.insert(rel, record);
                    }
                    Outcome::Binary { rel, record } => {
                        writer.delete_term(Term::from_field_text(fields.path, &rel));
                        report.skipped.binary += 1;
                        current.files.insert(rel, record);
                    }
                    Outcome::Unreadable { rel, error } => {
                        writer.delete_term(Term::from_field_text(fields.path, &rel));
                        if current.files.remove(&rel).is_some() {
                            report.removed += 1;
                        }
                        report.skipped.unreadable += 1;
                        if report.unreadable_examples.len() < 5 {
                            report.unreadable_examples.push((rel, error));
                        }
                    }
                }
                // The first commit comes early and small, so searches answer soon after a
                // cold start; later ones every `commit_interval`.
                let due = if report.commits == 0 {
                    opts.commit_interval.min(FIRST_COMMIT_AFTER)
                } else {
                    opts.commit_interval
                };
                if failure.is_none() && last_commit.elapsed() >= due {
                    match self.commit(writer, &current) {
                        Ok(_) => progress.committed(indexed_count(&current), self.num_chunks()),
                        Err(e) => failure = Some(e),
                    }
                    report.commits += 1;
                    last_commit = Instant::now();
                }
            }
            match failure {
                Some(e) => Err(e),
                None => Ok(()),
            }
        })?;
        progress.phase("committing", None);
        let name = self.commit(writer, &current)?;
        report.commits += 1;
        let count = indexed_count(&current);
        // Readers in this process that look the manifest up after every update (memory notes'
        // checks) take it from here instead of reading back what was just written.
        self.remember_change(change.map(|(from, touched)| (from, name.clone(), touched)));
        self.remember_manifest(name, current);
        self.remember_definitions(defined);
        Ok(count)
    }

    /// Writes the manifest, then commits the writer with a payload naming it; the name.
    fn commit(&self, writer: &mut IndexWriter, manifest: &Manifest) -> Result<String> {
        let dir = &self.layout.index_dir;
        let name = manifest.store(dir)?;
        let payload = serde_json::to_string(&CommitPayload { manifest: name.clone() })
            .map_err(|e| Error::Index { path: dir.clone(), message: e.to_string() })?;
        let mut prepared = writer.prepare_commit().map_err(|e| Error::tantivy(dir, e))?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(|e| Error::tantivy(dir, e))?;
        Manifest::remove_others(dir, &name);
        // Searches in this process see each commit at once (a language server answers while
        // the first index is still being built).
        self.reload()?;
        Ok(name)
    }
}

/// Files in `manifest` that hold chunks (binary files are recorded but not indexed).
fn indexed_count(manifest: &Manifest) -> u64 {
    manifest.files.values().filter(|r| r.skip.is_none()).count() as u64
}

/// Bytes examined for NUL when deciding whether a file is binary (the same rule as git's).
const BINARY_SNIFF: usize = 8000;

fn process(
    job: &Job,
    fields: &Fields,
    chunker: &mut Chunker,
    scan_start_ns: i64,
    define: bool,
) -> Outcome {
    let rel = job.file.rel.clone();
    let bytes = match std::fs::read(&job.file.abs) {
        Ok(bytes) => bytes,
        Err(e) => return Outcome::Unreadable { rel, error: e.to_string() },
    };
    let hash = content_hash(&bytes);
    let path = Path::new(&rel);
    let lang = lang_label(path);
    let mut record = FileRecord {
        hash,
        size: bytes.len() as u64,
        mtime_ns: job.file.mtime_ns,
        racy: job.file.mtime_ns >= scan_start_ns - RACY_WINDOW_NS,
        chunks: 0,
        lang: lang.to_string(),
        skip: None,
    };
    if memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF)]).is_some() {
        record.skip = Some(Skip::Binary);
        return Outcome::Binary { rel, record };
    }
    if let Some(old) = &job.old
        && old.hash == record.hash
        && old.skip.is_none()
    {
        record.chunks = old.chunks;
        return Outcome::Touched { rel, record };
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let (docs, defs) = chunk_docs_and_define(fields, chunker, &rel, lang, &text, define);
    record.chunks = docs.len() as u32;
    let defs = define.then_some(defs);
    Outcome::Indexed { rel, record, docs, was_new: job.old.is_none(), defs }
}

/// Chunks `text` (the content of `rel`) and makes one tantivy document per chunk.
pub(crate) fn chunk_docs(
    fields: &Fields,
    chunker: &mut Chunker,
    rel: &str,
    lang: &str,
    text: &str,
) -> Vec<TantivyDocument> {
    chunk_docs_and_define(fields, chunker, rel, lang, text, false).0
}

/// [`chunk_docs`], and the file's definitions from the same parse when `define`.
fn chunk_docs_and_define(
    fields: &Fields,
    chunker: &mut Chunker,
    rel: &str,
    lang: &str,
    text: &str,
    define: bool,
) -> (Vec<TantivyDocument>, Vec<Chunk>) {
    let (chunked, defs) = chunker.chunk_and_define(Path::new(rel), text, define);
    let mut docs = Vec::with_capacity(chunked.chunks.len());
    for chunk in &chunked.chunks {
        let mut doc = TantivyDocument::default();
        doc.add_text(fields.path, rel);
        doc.add_text(fields.path_words, rel);
        doc.add_text(fields.lang, lang);
        doc.add_text(fields.kind, chunk.kind.as_str());
        if let Some(symbol) = &chunk.symbol {
            doc.add_text(fields.symbol, symbol);
        }
        if let Some(container) = &chunk.container {
            doc.add_text(fields.container, container);
        }
        if let Some(kind) = chunk.container_kind {
            doc.add_text(fields.container_kind, kind.as_str());
        }
        let content = chunked.text_of(text, chunk);
        let key = crate::embed::chunk_key(
            rel,
            chunk.symbol.as_deref(),
            chunk.container.as_deref(),
            content,
        );
        doc.add_u64(fields.key, key);
        doc.add_text(fields.content, content);
        doc.add_u64(fields.start_line, chunk.start_row as u64 + 1);
        doc.add_u64(fields.end_line, chunk.end_row as u64 + 1);
        docs.push(doc);
    }
    (docs, defs)
}

/// The language name or text label of a path.
pub(crate) fn lang_label(path: &Path) -> &'static str {
    Language::from_path(path).map_or_else(|| text_label(path), Language::name)
}
