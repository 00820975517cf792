//! The one atomic write: every file sift replaces whole goes through [`write_atomic`].
//!
//! Readers see the old content or the new, never a mix, and once the call returns the new
//! content survives a crash or a power cut:
//!
//! 1. the bytes go to a temporary file of its own in the same folder (`NAME.PID.N.tmp`, created
//!    with `create_new`, so two writers of the same file never share one, and in the same folder,
//!    so the rename never crosses file systems);
//! 2. the temporary file is fsynced: its data is on disk before it has the final name (without
//!    this, ext4 and XFS may persist the rename before the data and leave an empty file);
//! 3. it is renamed over `NAME`, which POSIX makes atomic;
//! 4. the folder is fsynced, so the rename itself is on disk.
//!
//! A process killed before step 3 leaves the old file and a stray `NAME.*.tmp`, which
//! [`Store`](super::Store) counts as sift's own (it never reports it as an unknown entry).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Replaces `path` with `bytes` atomically and durably (see the [module docs](self)).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Like [`write_atomic`], with the content written by `write` into the temporary file (for
/// content streamed from a serializer rather than held in memory). `write` need not flush or
/// sync: that is done here.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<()> {
    let (tmp, mut file) = create_temporary(path).map_err(|e| Error::io("write", path, e))?;
    let result = write(&mut file)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, path)
        })
        .and_then(|()| sync_dir(parent(path)));
    result.map_err(|e| {
        // After a successful rename this finds nothing to remove, which is fine.
        let _ = std::fs::remove_file(&tmp);
        Error::io("write", path, e)
    })
}

/// Makes the entries of `dir` (files created, renamed or removed in it) durable. A no-op where
/// folders cannot be opened as files (Windows), whose file systems order these updates anyway.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Whether `name` is a temporary file [`write_atomic`] makes for the file `target` in the same
/// folder (`target.PID.N.tmp`; `target.PID.tmp` from sifts before this write existed).
pub(crate) fn is_temporary_of(name: &str, target: &str) -> bool {
    name.strip_prefix(target)
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|middle| {
            let parts: Vec<&str> = middle.split('.').collect();
            parts.len() <= 2
                && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A new temporary file beside `path`, named `NAME.PID.N.tmp` with `N` unique in this process.
fn create_temporary(path: &Path) -> io::Result<(std::path::PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?
        .to_string_lossy()
        .into_owned();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_file_name(format!("{name}.{}.{n}.tmp", std::process::id()));
        // A file of that name left by a dead process that had this pid: take the next number.
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["config.toml"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("review.toml");
        write_atomic(&path, b"old").unwrap();
        let err = write_atomic_with(&path, |file| {
            file.write_all(b"half")?;
            Err(io::Error::other("serializer failed"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("review.toml"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["review.toml"]);
    }

    #[test]
    fn a_missing_folder_is_an_error_that_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope/file.json");
        let err = write_atomic(&path, b"x").unwrap_err();
        assert!(err.to_string().contains("nope/file.json"), "{err}");
    }

    #[test]
    fn concurrent_writers_never_share_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.json");
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..5 {
                        write_atomic(path, &[t; 4096]).unwrap();
                    }
                });
            }
        });
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert!(bytes.iter().all(|&b| b == bytes[0]), "one writer's content, whole");
        assert_eq!(names(dir.path()), ["shared.json"]);
    }

    #[test]
    fn temporaries_are_recognised_by_their_target() {
        assert!(is_temporary_of(".gitignore.123.0.tmp", ".gitignore"));
        assert!(is_temporary_of("review.toml.9.17.tmp", "review.toml"));
        assert!(is_temporary_of("review.toml.9.tmp", "review.toml"));
        assert!(!is_temporary_of("review.toml.tmp", "review.toml"));
        assert!(!is_temporary_of("review.toml.1.2.3.tmp", "review.toml"));
        assert!(!is_temporary_of("review.toml.x.1.tmp", "review.toml"));
        assert!(!is_temporary_of("index.1.2.tmp", "review.toml"));
        assert!(!is_temporary_of("indexes.1.2.tmp", "index"));
    }
}
