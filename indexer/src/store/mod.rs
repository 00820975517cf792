//! sift's `.sift/` folder: what may be in it, which subsystem owns each entry, whether the
//! folder is sift's at all, and how files in it are written.
//!
//! ```text
//! .sift/           owner      shared or cache
//!   .gitignore     the store  shared  generated: ignores every cache entry
//!   logs/, tmp/    the store  cache   reserved for log files and scratch space
//!   config.toml    indexer    shared
//!   index/         indexer    cache   marked by index/sift-index.json
//!   index.new-*/   indexer    cache   (and index.old-*/)
//!   vectors/       indexer    cache
//!   watch.lock     indexer    cache
//!   review.toml    review     shared  (and rules/, REVIEW.md, feedback/)
//!   cache/         review     cache
//! ```
//!
//! ## Entries are registered by the subsystem that owns them
//!
//! Each subsystem declares its entries as [`Entry`] constants beside its code and lists them in
//! one `const` slice: the indexer's is [`crate::index::STORE_ENTRIES`], review's is
//! `sift_runtime::rules::STORE_ENTRIES`; memory notes and plugins will add theirs the same way.
//! Whoever opens the store (sift-engine's `store::open`, which every front end calls) passes the
//! slices of the subsystems it links as a [`Registry`]. Adding an entry is one constant in the
//! owning subsystem, and no crate lists another's entries: the indexer knows nothing of review,
//! memory or feedback.
//!
//! Why slices passed to [`Store::open`], and not a registry filled at start-up (a global, or
//! link-time collection such as `inventory`): what `.sift/` may hold would then depend on what
//! ran, or was linked, before the check, and a forgotten registration would surface as a
//! refusal far from its cause. A slice is checked by the compiler, visible at the call, and a
//! test opens a store with exactly the subsystems it exercises.
//!
//! Each entry says whether it is *shared* (committed by users: configuration, rules, review
//! decisions) or a *cache* (rebuilt on demand). The store writes `.sift/.gitignore` from that,
//! so a new cache entry is kept out of git by registering it.
//!
//! ## Is this folder sift's?
//!
//! A `.sift/` is known to be sift's when it holds one of sift's markers: a `.gitignore` that
//! starts with sift's header line ([`GITIGNORE_HEADER`]; sift writes it whenever it creates
//! `.sift/` for an index), or an entry's own marker file (the index's `index/sift-index.json`).
//! Then entries that no subsystem registered (written by a newer sift, or by hand) are
//! *reported* — a warning once per process, and [`Store::unknown`] for callers such as
//! `sift status` — and left alone, never refused: an older sift opens what a newer one wrote.
//!
//! Without a marker, the folder is sift's only when everything in it is registered (a fresh
//! clone that committed `review.toml` and `rules/` but not `.gitignore`). A `.sift` that is a
//! file, or a folder without a marker that holds something sift does not write, belongs to some
//! other tool and is refused with [`Error::Foreign`], before anything is written into it.
//! So that a newer sift's folder stays openable by older ones, a subsystem that creates `.sift/`
//! should do it through [`Store::ensure`], which writes the marker (the index and the
//! fix-history cache do; a first dismissal in a repository without `.sift/` does not yet, which
//! is harmless while `feedback/` is registered by every sift that writes it).
//!
//! ## Writing
//!
//! - [`atomic`]: the one atomic write (temporary file, fsync, rename, fsync of the folder) that
//!   every file sift replaces whole goes through; its temporary files count as their target's.
//! - [`jsonl`]: the one append-only log of typed records (whole lines under a lock, torn lines
//!   skipped and counted on read) that every file sift only ever appends to goes through.

pub mod atomic;
pub mod jsonl;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use atomic::{sync_dir, write_atomic, write_atomic_with};
pub use jsonl::{JsonlLog, Replay};

use crate::error::{Error, Result};

/// The folder's name in a repository.
pub const DIR: &str = ".sift";

/// The first line of the `.gitignore` sift writes; a `.gitignore` that starts with it marks the
/// folder as sift's.
pub const GITIGNORE_HEADER: &str = "# Written by sift.";

/// What an entry is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file.
    File,
    /// A folder.
    Dir,
}

/// One name in `.sift/` that a subsystem owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The name in `.sift/`; a name ending in `*` stands for every name with that prefix
    /// (staging folders such as `index.new-*`).
    pub name: &'static str,
    /// A file or a folder.
    pub kind: Kind,
    /// Committed by users (configuration, rules, review decisions) rather than a cache that
    /// sift rebuilds and keeps out of git.
    pub shared: bool,
    /// The subsystem that writes it (`"indexer"`, `"review"`…), for messages and docs.
    pub owner: &'static str,
    /// A file inside this folder that only sift writes; its presence marks `.sift/` as sift's.
    pub marker: Option<&'static str>,
}

impl Entry {
    const fn new(owner: &'static str, name: &'static str, kind: Kind, shared: bool) -> Entry {
        Entry { name, kind, shared, owner, marker: None }
    }

    /// A file that users commit.
    pub const fn shared_file(owner: &'static str, name: &'static str) -> Entry {
        Entry::new(owner, name, Kind::File, true)
    }

    /// A folder that users commit.
    pub const fn shared_dir(owner: &'static str, name: &'static str) -> Entry {
        Entry::new(owner, name, Kind::Dir, true)
    }

    /// A file that sift rebuilds on demand (kept out of git).
    pub const fn cache_file(owner: &'static str, name: &'static str) -> Entry {
        Entry::new(owner, name, Kind::File, false)
    }

    /// A folder that sift rebuilds on demand (kept out of git).
    pub const fn cache_dir(owner: &'static str, name: &'static str) -> Entry {
        Entry::new(owner, name, Kind::Dir, false)
    }

    /// This folder, with `file` inside it as a marker that `.sift/` is sift's.
    pub const fn marked_by(self, file: &'static str) -> Entry {
        Entry { marker: Some(file), ..self }
    }

    /// The entry's path in the repository at `root` (for readers that need no opened store,
    /// such as one reading a file from another revision).
    pub fn path_in(&self, root: &Path) -> PathBuf {
        root.join(DIR).join(self.name)
    }

    /// Whether `name`, found in `.sift/`, is this entry (or, for a file, a temporary file of an
    /// interrupted [`write_atomic`] of it).
    pub fn matches(&self, name: &str) -> bool {
        match self.name.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => {
                name == self.name
                    || (self.kind == Kind::File && atomic::is_temporary_of(name, self.name))
            }
        }
    }

    /// Its line in `.sift/.gitignore` (`/index/`, `/index.new-*/`, `/watch.lock`).
    fn gitignore_pattern(&self) -> String {
        match self.kind {
            Kind::Dir => format!("/{}/", self.name),
            Kind::File => format!("/{}", self.name),
        }
    }
}

/// The entries of every subsystem a program links, one slice per subsystem.
pub type Registry = &'static [&'static [Entry]];

/// `.sift/.gitignore`: the store's own.
pub const GITIGNORE: Entry = Entry::shared_file("store", ".gitignore");
/// `.sift/logs/`: reserved for log files (`sift lsp --log-file .sift/logs/…`).
pub const LOGS: Entry = Entry::cache_dir("store", "logs");
/// `.sift/tmp/`: reserved for scratch files.
pub const TMP: Entry = Entry::cache_dir("store", "tmp");
/// The store's own entries, part of every store whatever the registry.
pub const ENTRIES: &[Entry] = &[GITIGNORE, LOGS, TMP];

/// A repository's `.sift/` folder, checked to be sift's (see the [module docs](self)). The
/// folder itself may not exist yet: [`Store::ensure`] creates it.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    dir: PathBuf,
    registry: Registry,
    unknown: Vec<String>,
}

impl Store {
    /// Opens the store of the repository at `root` with the entries of `registry`. Fails when
    /// `root` is not a directory, or when `.sift/` belongs to another tool; reports entries
    /// that no subsystem registered (see [`Store::unknown`]). Creates nothing.
    pub fn open(root: &Path, registry: Registry) -> Result<Store> {
        let meta = std::fs::metadata(root).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::MissingPath(root.to_path_buf()),
            _ => Error::io("open", root, e),
        })?;
        if !meta.is_dir() {
            return Err(Error::NotADirectory(root.to_path_buf()));
        }
        let root = std::fs::canonicalize(root).map_err(|e| Error::io("resolve", root, e))?;
        let dir = root.join(DIR);
        let mut store = Store { root, dir, registry, unknown: Vec::new() };
        match std::fs::symlink_metadata(&store.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(e) => return Err(Error::io("read", &store.dir, e)),
            Ok(meta) if !meta.is_dir() => {
                return Err(Error::Foreign {
                    path: store.dir,
                    reason: "it is a file, not a directory".into(),
                    hint: "move it away",
                });
            }
            Ok(_) => {}
        }
        let entries =
            std::fs::read_dir(&store.dir).map_err(|e| Error::io("read", &store.dir, e))?;
        let mut unknown: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| store.entry(name).is_none())
            .collect();
        unknown.sort();
        if let Some(first) = unknown.first()
            && !store.is_marked()
        {
            return Err(Error::Foreign {
                path: store.dir,
                reason: format!("it holds {first:?}, which sift does not write"),
                hint: "move it away if another tool owns it",
            });
        }
        store.unknown = unknown;
        store.report_unknown();
        Ok(store)
    }

    /// The repository root (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/.sift`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `entry` in this store.
    pub fn path(&self, entry: &Entry) -> PathBuf {
        debug_assert!(!entry.name.ends_with('*'), "{} names many paths", entry.name);
        self.dir.join(entry.name)
    }

    /// Names in `.sift/` that no registered subsystem owns (written by a newer sift, or by
    /// hand), sorted. sift leaves them alone.
    pub fn unknown(&self) -> &[String] {
        &self.unknown
    }

    /// Every entry this store knows: the registry's, then its own.
    pub fn entries(&self) -> impl Iterator<Item = &'static Entry> + use<> {
        let registry: Registry = self.registry;
        registry.iter().flat_map(|s| s.iter()).chain(ENTRIES)
    }

    /// The registered entry `name` (found in `.sift/`) is, if any.
    pub fn entry(&self, name: &str) -> Option<&'static Entry> {
        self.entries().find(|e| e.matches(name))
    }

    /// Creates `.sift/` when missing, with a `.gitignore` that keeps every registered cache
    /// entry out of git. A `.gitignore` sift wrote is completed when an entry is missing from
    /// it (lines it has are kept, so an older sift never drops a newer one's); one the user
    /// wrote (without [`GITIGNORE_HEADER`]) is left alone.
    pub fn ensure(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io("create", &self.dir, e))?;
        let path = self.path(&GITIGNORE);
        let current = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        if current.as_deref().is_some_and(|t| !t.starts_with(GITIGNORE_HEADER)) {
            return Ok(());
        }
        if let Some(text) = self.gitignore(current.as_deref()) {
            write_atomic(&path, text.as_bytes())?;
        }
        Ok(())
    }

    /// The `.gitignore` to write over `current` (sift's, or none), or `None` when `current`
    /// already ignores every cache entry.
    fn gitignore(&self, current: Option<&str>) -> Option<String> {
        let has: BTreeSet<&str> = current
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        let mut patterns: Vec<String> = Vec::new();
        for entry in self.entries().filter(|e| !e.shared) {
            let pattern = entry.gitignore_pattern();
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
        }
        if current.is_some() && patterns.iter().all(|p| has.contains(p.as_str())) {
            return None;
        }
        let mut shared: Vec<String> = Vec::new();
        for entry in self.entries().filter(|e| e.shared && e.name != GITIGNORE.name) {
            let name = match entry.kind {
                Kind::Dir => format!("{}/", entry.name),
                Kind::File => entry.name.to_string(),
            };
            if !shared.contains(&name) {
                shared.push(name);
            }
        }
        let mut text = format!(
            "{GITIGNORE_HEADER} Caches are rebuilt on demand and never committed;\n\
             # shared files ({}) stay committable.\n",
            shared.join(", ")
        );
        for line in &patterns {
            text.push_str(line);
            text.push('\n');
        }
        for line in has.iter().filter(|l| !patterns.iter().any(|p| p == *l)) {
            text.push_str(line);
            text.push('\n');
        }
        Some(text)
    }

    /// Whether the folder holds one of sift's markers.
    fn is_marked(&self) -> bool {
        let ours = std::fs::read_to_string(self.path(&GITIGNORE))
            .is_ok_and(|t| t.starts_with(GITIGNORE_HEADER));
        ours || self.entries().any(|e| e.marker.is_some_and(|m| self.path(e).join(m).is_file()))
    }

    /// Warns about unknown entries, once per folder and set of names in this process.
    fn report_unknown(&self) {
        static REPORTED: Mutex<BTreeSet<(PathBuf, Vec<String>)>> = Mutex::new(BTreeSet::new());
        if self.unknown.is_empty() {
            return;
        }
        let key = (self.dir.clone(), self.unknown.clone());
        if REPORTED.lock().map(|mut seen| seen.insert(key)).unwrap_or(true) {
            tracing::warn!(
                "{} holds {}, which this sift does not know (written by a newer sift, or by hand): left alone",
                self.dir.display(),
                self.unknown.join(", ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEXER: &[Entry] = &[
        Entry::cache_dir("indexer", "index").marked_by("sift-index.json"),
        Entry::cache_dir("indexer", "index.new-*"),
        Entry::cache_file("indexer", "watch.lock"),
        Entry::shared_file("indexer", "config.toml"),
    ];
    const REVIEW: &[Entry] =
        &[Entry::shared_file("review", "review.toml"), Entry::cache_dir("review", "cache")];
    const BOTH: Registry = &[INDEXER, REVIEW];

    fn repo(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            if name.ends_with('/') {
                std::fs::create_dir_all(&path).unwrap();
            } else {
                std::fs::write(&path, "x").unwrap();
            }
        }
        dir
    }

    fn gitignore(dir: &Path) -> String {
        std::fs::read_to_string(dir.join(".sift/.gitignore")).unwrap()
    }

    #[test]
    fn no_folder_yet_is_fine_and_ensure_writes_a_gitignore_of_the_caches() {
        let dir = repo(&[]);
        let store = Store::open(dir.path(), BOTH).unwrap();
        assert!(!store.dir().exists(), "opening creates nothing");
        store.ensure().unwrap();
        let text = gitignore(dir.path());
        assert!(text.starts_with(GITIGNORE_HEADER), "{text}");
        let patterns: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            patterns,
            ["/index/", "/index.new-*/", "/watch.lock", "/cache/", "/logs/", "/tmp/"]
        );
        assert!(text.contains("config.toml, review.toml"), "{text}");
        assert_eq!(store.path(&REVIEW[0]), store.dir().join("review.toml"));
    }

    #[test]
    fn a_marked_folder_reports_unknown_entries_and_opens() {
        let dir = repo(&[".sift/index/sift-index.json", ".sift/memory-v9/", ".sift/notes.db"]);
        let store = Store::open(dir.path(), BOTH).unwrap();
        assert_eq!(store.unknown(), ["memory-v9", "notes.db"]);
        store.ensure().unwrap();
        assert!(dir.path().join(".sift/notes.db").exists(), "left alone");
        // Marked by sift's .gitignore alone, too.
        std::fs::remove_dir_all(dir.path().join(".sift/index")).unwrap();
        assert_eq!(Store::open(dir.path(), BOTH).unwrap().unknown(), ["memory-v9", "notes.db"]);
    }

    #[test]
    fn an_unmarked_folder_is_sifts_only_when_everything_in_it_is_registered() {
        let dir = repo(&[".sift/review.toml", ".sift/config.toml", ".sift/review.toml.12.3.tmp"]);
        assert!(Store::open(dir.path(), BOTH).unwrap().unknown().is_empty());
        // Without review's entries, review.toml is not known to be sift's.
        let err = Store::open(dir.path(), &[INDEXER]).unwrap_err();
        assert!(err.to_string().contains("\"review.toml\""), "{err}");
        std::fs::write(dir.path().join(".sift/other-tool.db"), "x").unwrap();
        let err = Store::open(dir.path(), BOTH).unwrap_err();
        assert!(matches!(err, Error::Foreign { .. }), "{err}");
        assert!(err.to_string().contains("other-tool.db"), "{err}");
        // A .gitignore that is not sift's marks nothing.
        std::fs::write(dir.path().join(".sift/.gitignore"), "*\n").unwrap();
        assert!(Store::open(dir.path(), BOTH).is_err());
    }

    #[test]
    fn a_sift_file_is_refused() {
        let dir = repo(&[".sift"]);
        let err = Store::open(dir.path(), BOTH).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn sifts_gitignore_is_completed_never_trimmed_and_the_users_left_alone() {
        let dir = repo(&[]);
        std::fs::create_dir_all(dir.path().join(".sift")).unwrap();
        // An older sift's, without `/cache/`, and a line of a newer sift this one does not know.
        let older = format!("{GITIGNORE_HEADER} old words\n/index/\n/plugins-cache/\n");
        std::fs::write(dir.path().join(".sift/.gitignore"), &older).unwrap();
        let store = Store::open(dir.path(), BOTH).unwrap();
        store.ensure().unwrap();
        let text = gitignore(dir.path());
        assert!(text.lines().any(|l| l == "/cache/") && text.contains("/plugins-cache/"), "{text}");
        // Complete: not rewritten again.
        let before = std::fs::metadata(dir.path().join(".sift/.gitignore")).unwrap().modified();
        store.ensure().unwrap();
        let after = std::fs::metadata(dir.path().join(".sift/.gitignore")).unwrap().modified();
        assert_eq!(before.unwrap(), after.unwrap());
        assert_eq!(gitignore(dir.path()), text);
        // The user's own is never touched.
        std::fs::write(dir.path().join(".sift/.gitignore"), "/index/\n").unwrap();
        store.ensure().unwrap();
        assert_eq!(gitignore(dir.path()), "/index/\n");
    }

    #[test]
    fn entries_match_names_prefixes_and_temporaries() {
        let index_new = Entry::cache_dir("indexer", "index.new-*");
        assert!(index_new.matches("index.new-12-ab"));
        assert!(!index_new.matches("index"));
        let config = Entry::shared_file("indexer", "config.toml");
        assert!(config.matches("config.toml") && config.matches("config.toml.1.2.tmp"));
        assert!(!config.matches("config.toml.bak"));
        let rules = Entry::shared_dir("review", "rules");
        assert!(!rules.matches("rules.1.2.tmp"), "folders are not written atomically");
        assert_eq!(config.path_in(Path::new("/r")), Path::new("/r/.sift/config.toml"));
    }
}
