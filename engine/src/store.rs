//! `.sift/` as every front end opens it: the store with the entries of every subsystem sift
//! links (see `sift_indexer::store` for the folder, its markers and the rules).
//!
//! The engine's own entries are declared here, beside the registry (the agent's, memory's and
//! the plugins'; each subsystem re-exports its own), so that the store imports no use case and
//! every use case may open the store. The lower crates' slices are added to [`REGISTRY`] once.

use std::path::Path;

use sift_indexer::store::{Entry, Registry, Store};

/// What the agent keeps in `.sift/`: its transcripts (a cache: not committed) and the choices
/// users made between best-of-N attempts.
pub const AGENT_DIR: Entry = Entry::cache_dir("agent", "agent");
/// Every entry the agent registers with the store.
pub const AGENT_ENTRIES: &[Entry] = &[AGENT_DIR];

/// `.sift/memory/`: the notes (committed).
pub const NOTES_DIR: Entry = Entry::shared_dir("memory", "memory");
/// `.sift/memory-state.json`: every note's last checked state (a cache).
pub const MEMORY_STATE_FILE: Entry = Entry::cache_file("memory", "memory-state.json");
/// Every entry memory registers with the store.
pub const MEMORY_ENTRIES: &[Entry] = &[NOTES_DIR, MEMORY_STATE_FILE];

/// `.sift/plugins/`: the team's plugins (shared, committed), and what they read of their own
/// there.
pub const PLUGIN_ENTRIES: &[Entry] = &[Entry::shared_dir("plugins", "plugins")];

/// `.sift/fates/`: the record of what became of sift's suggestions (a cache: local to this
/// machine, never committed).
pub const FATES_DIR: Entry = Entry::cache_dir("fates", "fates");
/// Every entry the record of fates registers with the store.
pub const FATES_ENTRIES: &[Entry] = &[FATES_DIR];

/// `.sift/learned.toml`: the rules the repository keeps dismissing, demoted (shared,
/// committed; the review's `learned` module).
pub const LEARNED_ENTRIES: &[Entry] = &[Entry::shared_file("learned", "learned.toml")];

/// `.sift/automations.toml`: the team's agent jobs (shared, committed; `automate`).
pub const AUTOMATE_ENTRIES: &[Entry] = &[Entry::shared_file("automate", "automations.toml")];

/// `.sift/models/`: the model tuned on this repository (`sift model tune`), kept out of git
/// like the index it serves (about 12 MB; a team may commit it).
pub const TUNE_ENTRIES: &[Entry] = &[Entry::cache_dir("tune", "models")];

/// The tuned model's folder for the repository at `root` (`.sift/models/tuned`): written by
/// `tune`, served by `config::embed` while `[embed] model` is unset.
pub fn tuned_model_dir(root: &Path) -> std::path::PathBuf {
    root.join(".sift").join("models").join("tuned")
}

/// Every subsystem's entries in `.sift/`.
pub const REGISTRY: Registry = &[
    sift_indexer::STORE_ENTRIES,
    sift_runtime::rules::STORE_ENTRIES,
    AGENT_ENTRIES,
    MEMORY_ENTRIES,
    PLUGIN_ENTRIES,
    FATES_ENTRIES,
    LEARNED_ENTRIES,
    AUTOMATE_ENTRIES,
    TUNE_ENTRIES,
];

/// Opens the `.sift/` store of the repository at `root` (see [`Store::open`]): fails when the
/// root is missing or `.sift/` is another tool's; entries no subsystem registered are reported
/// ([`Store::unknown`]) and left alone. Creates nothing.
pub fn open(root: &Path) -> sift_indexer::Result<Store> {
    Store::open(root, REGISTRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_one_owner_and_the_gitignore_keeps_the_caches_out() {
        let mut names: Vec<&str> = REGISTRY.iter().flat_map(|s| s.iter()).map(|e| e.name).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "an entry registered twice: {names:?}");

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".sift")).unwrap();
        for name in ["review.toml", "config.toml", "REVIEW.md", "rules", "feedback"] {
            let path = dir.path().join(".sift").join(name);
            if name.contains('.') {
                std::fs::write(path, "").unwrap();
            } else {
                std::fs::create_dir(path).unwrap();
            }
        }
        // A fresh clone of shared files only: sift's, though it has no marker yet.
        let store = open(dir.path()).unwrap();
        assert!(store.unknown().is_empty());
        store.ensure().unwrap();
        let gitignore = std::fs::read_to_string(dir.path().join(".sift/.gitignore")).unwrap();
        for cache in ["/index/", "/vectors/", "/cache/", "/watch.lock", "/fates/"] {
            assert!(gitignore.lines().any(|l| l == cache), "{cache} in {gitignore}");
        }
        for shared in ["review.toml", "rules", "feedback", "REVIEW.md", "config.toml"] {
            assert!(!gitignore.lines().any(|l| !l.starts_with('#') && l.contains(shared)));
        }
    }
}
