//! Is the index fresh? A check that does not walk the tree.
//!
//! A full update walks the tree: it lists every directory, matches every entry against the
//! ignore rules and stats every file. On Django that was most of a `sift search` (53 ms of it
//! against 8 ms without). Here, after each full walk, a **tree stamp** records what the walk
//! saw beyond the manifest: every directory it entered with its modification time, the files
//! it skipped for their size, the ignore files that are not indexed, and the ignore sources
//! outside the tree (`.git/info/exclude`, the global excludes file, git's configuration).
//! [`CodeIndex::refresh`] then decides without listing a directory:
//!
//! - a directory's modification time changes whenever an entry in it is created, deleted or
//!   renamed (an editor's save-by-rename included): any directory that differs (or is gone)
//!   means the set of files may have changed, and the full walk runs;
//! - a file's content changes show in its own size and modification time, the same test the
//!   full walk applies ([`crate::update`]): every file of the manifest is stat-ed (in
//!   parallel), and those that differ go to [`CodeIndex::update_paths`], which re-reads only
//!   them; a changed ignore file (`.gitignore`…) means the full walk;
//! - no stamp, a stamp from another commit, other walking rules, a directory or file whose time
//!   is too close to the stamp to trust (coarse clocks), or unreadable entries: the full walk.
//!
//! It still stats every indexed file: without a watcher (which `sift lsp` and `sift index
//! --watch` are), no cheaper signal of an in-place write exists. What it saves is the listing
//! of every directory and the ignore matching of every entry. The stamp is one file in the
//! index folder (`tree-stamp.json`), written atomically after the walk it describes and valid
//! only for the commit whose manifest it names, so a crash or another process's commit makes
//! it stale, never wrong.

use std::path::PathBuf;

use crate::config::IndexConfig;
use crate::error::Result;
use crate::index::CodeIndex;
use crate::stamp::{IGNORE_FILES, rules_of, size_and_time, stat};
pub use crate::stamp::{STAMP_FILE, TreeStamp};
use crate::update::{Progress, UpdateOptions, UpdateReport};
use crate::walk::mtime_of;

/// What the quick check found.
#[derive(Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Nothing changed.
    Fresh,
    /// These files (absolute paths) changed or vanished; nothing else did.
    Changed(Vec<PathBuf>),
    /// The check cannot tell; walk the tree (why, for logs and tests).
    Walk(&'static str),
}

impl CodeIndex {
    fn stamp_path(&self) -> PathBuf {
        self.layout.index_dir.join(STAMP_FILE)
    }

    fn read_stamp(&self) -> Option<TreeStamp> {
        let bytes = std::fs::read(self.stamp_path()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Forgets the stamp: the next search walks.
    pub(crate) fn remove_stamp(&self) {
        let _ = std::fs::remove_file(self.stamp_path());
    }

    /// Writes `stamp` for the commit in force now (best effort: without it the next search
    /// walks).
    pub(crate) fn write_stamp(&self, mut stamp: TreeStamp) {
        let Ok(Some(name)) = self.manifest_name() else { return self.remove_stamp() };
        stamp.manifest = name;
        let Ok(bytes) = serde_json::to_vec(&stamp) else { return };
        if let Err(e) = crate::store::write_atomic(&self.stamp_path(), &bytes) {
            tracing::debug!("cannot write the tree stamp: {e}");
        }
    }

    /// Whether the index is fresh, without walking the tree (see the module doc).
    pub fn quick_check(&self, config: &IndexConfig) -> Result<Freshness> {
        Ok(self.check_counting(config)?.0)
    }

    /// [`CodeIndex::quick_check`], with the manifest's count of records and of indexed files
    /// when it got as far as reading the manifest.
    fn check_counting(&self, config: &IndexConfig) -> Result<(Freshness, u64, u64)> {
        let walk = |why| Ok((Freshness::Walk(why), 0, 0));
        let Some(stamp) = self.read_stamp() else { return walk("no tree stamp") };
        if self.manifest_name()?.as_deref() != Some(stamp.manifest.as_str()) {
            return walk("the tree stamp is of another commit");
        }
        if stamp.rules != rules_of(config) {
            return walk("other walking rules");
        }
        let root = &self.layout.root;
        let follow = config.follow_symlinks;
        for (dir, time) in &stamp.dirs {
            let now = stat(&root.join(dir), true).map(|m| mtime_of(&m));
            if now != Some(*time) {
                return walk("a directory changed");
            }
        }
        for (path, size, time) in &stamp.others {
            if size_and_time(path) != (*size, *time) {
                return walk("an ignore file or a file over the size limit changed");
            }
        }
        let manifest = self.manifest()?;
        let records: Vec<(&String, &crate::manifest::FileRecord)> = manifest.files.iter().collect();
        let total = records.len() as u64;
        let indexed = records.iter().filter(|(_, r)| r.skip.is_none()).count() as u64;
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
        let per = records.len().div_ceil(threads).max(1);
        let mut changed: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = records
                .chunks(per)
                .map(|part| {
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for (rel, rec) in part {
                            let abs = root.join(rel);
                            let same = !rec.racy
                                && stat(&abs, follow).is_some_and(|m| {
                                    m.is_file()
                                        && m.len() == rec.size
                                        && mtime_of(&m) == rec.mtime_ns
                                });
                            if !same {
                                out.push(abs);
                            }
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        });
        if changed.is_empty() {
            return Ok((Freshness::Fresh, total, indexed));
        }
        if changed.iter().any(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| IGNORE_FILES.contains(&n))
        }) {
            return walk("an ignore file changed");
        }
        changed.sort();
        Ok((Freshness::Changed(changed), total, indexed))
    }

    /// Brings the index up to date like [`CodeIndex::update`], but without walking the tree
    /// when the tree stamp shows that no directory changed (see the module doc): then only the
    /// files whose size or time changed are re-read. What `sift search` runs before answering.
    pub fn refresh(&self, opts: &UpdateOptions, progress: &dyn Progress) -> Result<UpdateReport> {
        let started = std::time::Instant::now();
        match self.check_counting(&opts.config)? {
            (Freshness::Fresh, total, indexed) => Ok(UpdateReport {
                unchanged: total,
                files_total: indexed,
                chunks_total: self.num_chunks(),
                elapsed_ms: started.elapsed().as_millis() as u64,
                ..UpdateReport::default()
            }),
            (Freshness::Changed(paths), ..) => {
                let stamp = self.read_stamp();
                let report = self.update_paths(&paths, opts, progress)?;
                // No directory changed, so the stamp still describes the tree: it now goes
                // with the commit that update made (unless that update walked and wrote its own).
                if let Some(stamp) = stamp
                    && self.read_stamp().is_none_or(|now| now.manifest == stamp.manifest)
                {
                    self.write_stamp(stamp);
                }
                Ok(report)
            }
            (Freshness::Walk(why), ..) => {
                tracing::debug!("walking the tree: {why}");
                self.update(opts, progress)
            }
        }
    }
}
