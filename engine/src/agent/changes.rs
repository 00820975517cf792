//! The agent's pending change: every file it edited, created or deleted, held in memory over
//! the workspace and written nowhere until the user accepts it ([`Changes::apply`]).
//!
//! The change converts to the one edit type ([`crate::edit::FileEdit`], byte ranges over the
//! original text, one per changed hunk of a line diff), so that the CLI prints it as a unified
//! diff and the language server sends it as a `WorkspaceEdit` from the same value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sift_runtime::edit::{Edit, FileEdit};
use sift_runtime::sandbox::Policy;

/// One file's pending state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The text the agent started from (`None`: the file did not exist).
    pub original: Option<String>,
    /// The text now (`None`: deleted).
    pub current: Option<String>,
}

/// What happens to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Edits of an existing file.
    Modify(FileEdit),
    /// A new file and its text.
    Create {
        /// The path, relative to the root.
        path: String,
        /// Its text.
        text: String,
    },
    /// The file is removed.
    Delete {
        /// The path, relative to the root.
        path: String,
    },
}

impl FileChange {
    /// The file it changes.
    pub fn path(&self) -> &str {
        match self {
            FileChange::Modify(edit) => &edit.path,
            FileChange::Create { path, .. } | FileChange::Delete { path } => path,
        }
    }
}

/// Why a change could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The file on disk is no longer what the agent started from: nothing was written.
    #[error(
        "{path} changed on disk since the agent read it; nothing was written (run the task \
         again, or apply the diff by hand)"
    )]
    Conflict {
        /// The file.
        path: String,
    },
    /// The sandbox's policy refuses the path now: nothing was written.
    #[error("{path}: not written: {reason}; nothing was written")]
    Refused {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Writing failed (files before this one were written; the message says which).
    #[error("cannot write {path}: {source} (already written: {written:?})")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
        /// The files written before the failure.
        written: Vec<String>,
    },
}

/// The agent's edits, by path relative to the workspace root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    files: BTreeMap<String, Pending>,
}

impl Changes {
    /// No changes.
    pub fn new() -> Changes {
        Changes::default()
    }

    /// Whether nothing differs from where the agent started.
    pub fn is_empty(&self) -> bool {
        self.files.values().all(|p| p.original == p.current)
    }

    /// The pending state of `rel`, when the agent touched it.
    pub fn get(&self, rel: &str) -> Option<&Pending> {
        self.files.get(rel)
    }

    /// Every touched file (changed or changed back), by path.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Pending)> {
        self.files.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The files that differ from where the agent started.
    pub fn changed_paths(&self) -> Vec<String> {
        self.files.iter().filter(|(_, p)| p.original != p.current).map(|(k, _)| k.clone()).collect()
    }

    /// Sets the text of `rel` (`None`: deleted); `original` is what it was before the agent's
    /// first change to it (ignored after that).
    pub fn set(&mut self, rel: &str, original: Option<String>, current: Option<String>) {
        self.files
            .entry(rel.to_owned())
            .and_modify(|p| p.current = current.clone())
            .or_insert(Pending { original, current });
    }

    /// The change as edits, one entry per changed file, in path order.
    pub fn file_changes(&self) -> Vec<FileChange> {
        let mut out = Vec::new();
        for (path, p) in &self.files {
            match (&p.original, &p.current) {
                (Some(a), Some(b)) if a != b => {
                    out.push(FileChange::Modify(FileEdit { path: path.clone(), edits: diff(a, b) }))
                }
                (None, Some(text)) => {
                    out.push(FileChange::Create { path: path.clone(), text: text.clone() })
                }
                (Some(_), None) => out.push(FileChange::Delete { path: path.clone() }),
                _ => {}
            }
        }
        out
    }

    /// The whole change as a unified diff (`git apply` reads it); empty when nothing changed.
    pub fn unified_diff(&self) -> String {
        let mut out = String::new();
        for change in self.file_changes() {
            let pending = &self.files[change.path()];
            match &change {
                FileChange::Modify(edit) => {
                    let original = pending.original.as_deref().unwrap_or_default();
                    // The edits come from a diff of this very text: they fit.
                    out.push_str(&edit.unified_diff(original, 3).unwrap_or_default());
                }
                FileChange::Create { path, text } => {
                    out.push_str(&whole_file_diff(path, "", text, false));
                }
                FileChange::Delete { path } => {
                    let original = pending.original.as_deref().unwrap_or_default();
                    out.push_str(&whole_file_diff(path, original, "", true));
                }
            }
        }
        out
    }

    /// Writes the change into the policy's workspace: first checks every path again with the
    /// policy (and refuses one that now resolves through a symbolic link) and that every file
    /// on disk is still what the agent started from (else nothing is written), then writes each
    /// file atomically (a temporary file renamed over it). Returns the paths written.
    pub fn apply(&self, policy: &Policy) -> Result<Vec<String>, ApplyError> {
        let root = policy.root();
        for (path, p) in &self.files {
            if p.original == p.current {
                continue;
            }
            match policy.resolve_write(path) {
                Ok(resolved) if resolved == root.join(path) => {}
                Ok(_) => {
                    return Err(ApplyError::Refused {
                        path: path.clone(),
                        reason: "it now resolves through a symbolic link".into(),
                    });
                }
                Err(denied) => {
                    return Err(ApplyError::Refused { path: path.clone(), reason: denied.reason });
                }
            }
            let on_disk = match std::fs::read(root.join(path)) {
                Ok(bytes) => Some(String::from_utf8(bytes).ok()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(ApplyError::Io { path: path.clone(), source, written: vec![] });
                }
            };
            let same = match (&on_disk, &p.original) {
                (None, None) => true,
                (Some(Some(disk)), Some(orig)) => disk == orig,
                _ => false,
            };
            if !same {
                return Err(ApplyError::Conflict { path: path.clone() });
            }
        }
        let mut written = Vec::new();
        for (path, p) in &self.files {
            if p.original == p.current {
                continue;
            }
            let target: PathBuf = root.join(path);
            let result = match &p.current {
                Some(text) => write_atomic(&target, text.as_bytes()),
                None => std::fs::remove_file(&target),
            };
            if let Err(source) = result {
                return Err(ApplyError::Io { path: path.clone(), source, written });
            }
            written.push(path.clone());
        }
        Ok(written)
    }
}

fn write_atomic(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    sift_indexer::store::atomic::write_atomic(target, bytes).map_err(std::io::Error::other)
}

/// The edits that turn `old` into `new`: one per changed region of a line diff, as byte ranges
/// of `old`.
pub fn diff(old: &str, new: &str) -> Vec<Edit> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let old_starts = offsets(&old_lines);
    let new_starts = offsets(&new_lines);
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
    let mut edits = Vec::new();
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        edits.push(Edit {
            start_byte: old_starts[old_range.start],
            end_byte: old_starts[old_range.end],
            replacement: new[new_starts[new_range.start]..new_starts[new_range.end]].to_owned(),
        });
    }
    edits
}

/// The byte offset of each line's start, and the end.
fn offsets(lines: &[&str]) -> Vec<usize> {
    let mut out = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    out.push(0);
    for l in lines {
        at += l.len();
        out.push(at);
    }
    out
}

/// A creation (`deleted: false`, `old` empty) or deletion as a unified diff.
fn whole_file_diff(path: &str, old: &str, new: &str, deleted: bool) -> String {
    let body = if deleted { old } else { new };
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let mut out = if deleted {
        format!("--- a/{path}\n+++ /dev/null\n@@ -1,{} +0,0 @@\n", lines.len())
    } else {
        format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n", lines.len())
    };
    let sign = if deleted { '-' } else { '+' };
    for line in lines {
        out.push(sign);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(root: &Path) -> Policy {
        Policy::for_workspace(root, &sift_runtime::sandbox::SandboxSettings::default()).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_turned_into_a_link_out_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let mut changes = Changes::new();
        changes.set("sub/new.txt", None, Some("x\n".into()));
        // After the agent's edit, `sub` is swapped for a link out of the workspace.
        std::fs::remove_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("sub")).unwrap();
        let err = changes.apply(&policy(dir.path())).unwrap_err();
        assert!(matches!(err, ApplyError::Refused { .. }), "{err}");
        assert!(!outside.path().join("new.txt").exists());
    }

    #[test]
    fn diff_edits_rebuild_the_new_text_hunk_by_hunk() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\nI\nj\nk\n";
        let edits = diff(old, new);
        assert_eq!(edits.len(), 3, "{edits:?}");
        let file = FileEdit { path: "x".into(), edits };
        assert_eq!(file.apply(old).unwrap(), new);
    }

    #[test]
    fn changes_show_as_one_diff_and_nothing_is_written_until_apply() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(dir.path().join("gone.txt"), "bye\n").unwrap();
        let mut changes = Changes::new();
        changes.set("a.txt", Some("one\ntwo\n".into()), Some("one\n2\n".into()));
        changes.set("new/b.txt", None, Some("fresh\n".into()));
        changes.set("gone.txt", Some("bye\n".into()), None);
        let diff = changes.unified_diff();
        assert!(diff.contains("--- a/a.txt\n+++ b/a.txt\n"), "{diff}");
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        assert!(diff.contains("--- /dev/null\n+++ b/new/b.txt\n@@ -0,0 +1,1 @@\n+fresh\n"));
        assert!(diff.contains("--- a/gone.txt\n+++ /dev/null\n"));
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\ntwo\n");

        let written = changes.apply(&policy(dir.path())).unwrap();
        assert_eq!(written, ["a.txt", "gone.txt", "new/b.txt"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n2\n");
        assert!(!dir.path().join("gone.txt").exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("new/b.txt")).unwrap(), "fresh\n");
    }

    #[test]
    fn a_file_changed_on_disk_meanwhile_stops_the_whole_apply() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "user's edit\n").unwrap();
        let mut changes = Changes::new();
        changes.set("a.txt", Some("one\n".into()), Some("1\n".into()));
        changes.set("b.txt", Some("two\n".into()), Some("2\n".into()));
        let err = changes.apply(&policy(dir.path())).unwrap_err();
        assert!(matches!(&err, ApplyError::Conflict { path } if path == "b.txt"), "{err}");
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n");
    }

    #[test]
    fn a_change_undone_is_no_change() {
        let mut changes = Changes::new();
        changes.set("a", Some("x".into()), Some("y".into()));
        changes.set("a", Some("ignored".into()), Some("x".into()));
        assert!(changes.is_empty());
        assert_eq!(changes.unified_diff(), "");
    }
}
