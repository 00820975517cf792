//! Helpers for the end-to-end tests in `tests/tests/`: find the real `sift` binary, run it, make
//! corpora.
//!
//! The binary must be built before the tests run (`cargo build -p sift-lsp`, which the README's
//! test command and `.ci/run` do); set `SIFT_BIN` to test another build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `sift` binary under test.
pub fn sift_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("SIFT_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let bin = target.join("debug").join(format!("sift{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build -p sift-lsp` (or set SIFT_BIN)",
        bin.display()
    );
    bin
}

/// A `sift` command with a clean environment for sift's own variables.
pub fn sift() -> Command {
    let mut cmd = Command::new(sift_bin());
    for var in ["SIFT_LOG", "SIFT_THREADS", "SIFT_COMMIT_INTERVAL_MS"] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `sift ARGS` and returns its output.
pub fn run(args: &[&str]) -> Output {
    sift().args(args).output().expect("sift runs")
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Parses every stdout line as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Writes `text` to `root/rel`, creating folders.
pub fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A synthetic source tree of `files` Rust files spread over folders, each with a few functions
/// whose names are unique (`fn_<file>_<n>`) and a shared word (`common_helper`).
pub fn rust_corpus(root: &Path, files: usize) {
    for f in 0..files {
        let mut text = format!("//! Module {f}.\nuse std::collections::HashMap;\n\n");
        for n in 0..6 {
            text.push_str(&format!(
                "/// Does step {n} of file {f}.\npub fn fn_{f}_{n}(input: &str) -> usize {{\n    let mut map = HashMap::new();\n    map.insert(input, {n});\n    common_helper(input.len() + {f})\n}}\n\n"
            ));
        }
        write(root, &format!("src/m{}/f{f}.rs", f % 17), text);
    }
}
