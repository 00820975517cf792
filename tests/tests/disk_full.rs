//! A full disk while indexing: one clear error, exit status 1, and the last complete index kept.
//! Needs to mount a small tmpfs, which only root can: the test is `#[ignore]`d for a plain
//! `cargo test`, and `scripts/test.sh` runs it (`--ignored`) when it runs as root, as CI does.
//! Run explicitly, a mount that fails is a failure, not a skip.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use sift_tests::{json_lines, run, stderr, write};

/// A tmpfs of `size` mounted on a temporary folder, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Fills the disk to the last few KiB with a file outside the repository.
fn fill(disk: &Path) -> PathBuf {
    use std::io::Write;
    let filler = disk.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let block = vec![b'x'; 4096];
    while file.write_all(&block).is_ok() {}
    drop(file);
    filler
}

#[test]
#[ignore = "mounts a tmpfs, so it needs root: scripts/test.sh runs it with --ignored as root"]
fn a_full_disk_is_one_clear_error_and_the_last_index_survives() {
    let Some(disk) = SmallDisk::mount("4m") else {
        panic!("cannot mount a tmpfs here (needs root): the disk-full path cannot be tested");
    };
    let repo = disk.path().join("repo");
    write(&repo, "src/first.rs", "pub fn first_function_kept() {}\n");
    let r = repo.to_str().unwrap();
    assert!(run(&["index", r, "--quiet"]).status.success());

    // New code, then no room left for the index to grow.
    for i in 0..40 {
        let body: String =
            (0..400).map(|n| format!("pub fn generated_{i}_{n}() -> usize {{ {n} }}\n")).collect();
        write(&repo, &format!("src/gen{i}.rs"), body);
    }
    let filler = fill(disk.path());
    let out = run(&["index", r, "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: disk full"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // The last complete index still answers.
    let out = run(&["search", "--path", r, "--no-refresh", "--json", "first_function_kept"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["path"], "src/first.rs");

    // With room again, the next run catches up.
    std::fs::remove_file(filler).unwrap();
    let out = run(&["index", r, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(sift_tests::stdout(&out).trim()).unwrap();
    assert_eq!(report["files_total"], 41);
    let out = run(&["search", "--path", r, "--no-refresh", "--json", "generated_39_399"]);
    assert_eq!(json_lines(&out)[0]["path"], "src/gen39.rs");
}
