//! The git plumbing a review needs: the repository's top folder, revisions, the lines a change
//! added (`git diff --unified=0`, untracked files), and files as a revision or the index holds
//! them. The one place in sift that runs git.
//!
//! Every call runs `git -C ROOT -c core.quotePath=false …` without external diff drivers, so the
//! output is parseable whatever the user's configuration.

use std::path::{Path, PathBuf};
use std::process::Command;

use std::collections::BTreeMap;

use sift_runtime::rules::LineFilter;
use sift_runtime::rules::diff::{ChangedFile, parse_unified_diff};

use super::error::{Error, Result};

/// Where the post-image of a changed file is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contents<'a> {
    /// The working tree.
    WorkingTree,
    /// The index (`--staged`).
    Index,
    /// Texts in memory by path (the agent's pending change); other files are not read.
    Memory(&'a BTreeMap<String, String>),
}

/// Runs git in `dir`; its stdout, or an error with git's first line of stderr.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .env_remove("GIT_EXTERNAL_DIFF")
        .output()
        .map_err(|source| Error::GitMissing { source })?;
    finished(dir, args, out)
}

/// git's stdout when it succeeded, else an error with its first line of stderr.
fn finished(dir: &Path, args: &[&str], out: std::process::Output) -> Result<Vec<u8>> {
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed").trim();
        return Err(Error::Git {
            command: args.first().copied().unwrap_or("").to_string(),
            dir: dir.to_path_buf(),
            message: line.to_string(),
        });
    }
    Ok(out.stdout)
}

/// Runs git in `dir` with `env` set and `stdin` written to it; its stdout, as [`git`].
pub(crate) fn git_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &[u8],
) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .env_remove("GIT_EXTERNAL_DIFF")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| Error::GitMissing { source })?;
    if let Some(mut input) = child.stdin.take() {
        // A git that exits early closes its end: its status says why.
        let _ = input.write_all(stdin);
    }
    let out = child.wait_with_output().map_err(|source| Error::GitMissing { source })?;
    finished(dir, args, out)
}

/// A commit of `files` (path, new contents; `None` deletes it) on top of `parent`, made
/// without touching the working tree, the index or any branch: blobs are written, a tree is
/// built in a temporary index under `scratch`, and the commit is returned by its id.
pub(crate) fn commit_files(
    root: &Path,
    parent: &str,
    files: &[(String, Option<String>)],
    message: &str,
    scratch: &Path,
) -> Result<String> {
    let index = scratch.join(format!("sift-index-{}", std::process::id()));
    let index_path = index.to_string_lossy().into_owned();
    let env = [("GIT_INDEX_FILE", index_path.as_str())];
    let text = |out: Vec<u8>| String::from_utf8_lossy(&out).trim().to_string();
    let result = (|| {
        git_with(root, &["read-tree", parent], &env, b"")?;
        for (path, contents) in files {
            match contents {
                Some(contents) => {
                    let blob = text(git_with(
                        root,
                        &["hash-object", "-w", "--stdin"],
                        &env,
                        contents.as_bytes(),
                    )?);
                    // An existing file keeps its mode (an executable stays one).
                    let listed = git(root, &["ls-tree", parent, "--", path]).unwrap_or_default();
                    let mode = String::from_utf8_lossy(&listed)
                        .split_whitespace()
                        .next()
                        .filter(|m| m.starts_with("100"))
                        .unwrap_or("100644")
                        .to_owned();
                    let info = format!("{mode},{blob},{path}");
                    git_with(root, &["update-index", "--add", "--cacheinfo", &info], &env, b"")?;
                }
                None => {
                    git_with(root, &["update-index", "--force-remove", "--", path], &env, b"")?;
                }
            }
        }
        let tree = text(git_with(root, &["write-tree"], &env, b"")?);
        let identity = [
            ("GIT_INDEX_FILE", index_path.as_str()),
            ("GIT_AUTHOR_NAME", "sift"),
            ("GIT_AUTHOR_EMAIL", "sift@users.noreply.github.com"),
            ("GIT_COMMITTER_NAME", "sift"),
            ("GIT_COMMITTER_EMAIL", "sift@users.noreply.github.com"),
        ];
        let commit = git_with(
            root,
            &["commit-tree", &tree, "-p", parent, "-F", "-"],
            &identity,
            message.as_bytes(),
        )?;
        Ok(text(commit))
    })();
    let _ = std::fs::remove_file(&index);
    result
}

/// The repository's top folder, or `None` outside a git repository.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    let out = git(dir, &["rev-parse", "--show-toplevel"]).ok()?;
    let text = String::from_utf8(out).ok()?;
    let path = text.trim_end_matches(['\n', '\r']);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// Resolves `rev` to a commit id, or says it is unknown.
pub(crate) fn resolve(root: &Path, rev: &str) -> Result<String> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(root, &["rev-parse", "--verify", "--quiet", &spec])
        .map_err(|_| Error::UnknownRevision { rev: rev.to_string() })?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// `HEAD`'s commit id; an error that says so when nothing was committed yet.
pub(crate) fn head(root: &Path) -> Result<String> {
    resolve(root, "HEAD").map_err(|_| Error::NoCommit { root: root.to_path_buf() })
}

/// The commit a `--base REV` review compares with: the merge-base of `REV` and `HEAD`, or `REV`
/// itself when they share no history.
pub(crate) fn merge_base(root: &Path, rev: &str, head: &str) -> Result<String> {
    let commit = resolve(root, rev)?;
    Ok(match git(root, &["merge-base", &commit, head]) {
        Ok(out) => String::from_utf8_lossy(&out).trim().to_string(),
        Err(_) => commit,
    })
}

/// Per changed file, the line filter of its added lines.
pub(crate) fn into_filters(changes: Vec<ChangedFile>) -> Vec<(String, LineFilter)> {
    changes.into_iter().map(|c| (c.path, LineFilter::new(c.added))).collect()
}

/// The files a git change added lines to: the working tree (with untracked files, whose lines
/// are all new) against `from`, or with `staged` the index against `from`. With `only`, just
/// those paths (relative to `root`).
pub(crate) fn changes(
    root: &Path,
    from: &str,
    staged: bool,
    only: Option<&[String]>,
) -> Result<(Vec<(String, LineFilter)>, Contents<'static>)> {
    // Literal pathspecs: a file named `a*.py` is that file, not a pattern.
    let pathspecs: Vec<String> =
        only.unwrap_or_default().iter().map(|p| format!(":(literal){p}")).collect();
    let mut cmd = vec![
        "diff",
        "--unified=0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "-M",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    ];
    if staged {
        cmd.push("--cached");
    }
    cmd.push(from);
    cmd.push("--");
    cmd.extend(pathspecs.iter().map(String::as_str));
    let diff = git(root, &cmd)?;
    let changes = parse_unified_diff(&String::from_utf8_lossy(&diff))
        .map_err(|source| Error::Diff { name: "from git".into(), source })?;
    let mut filters = into_filters(changes);
    if staged {
        return Ok((filters, Contents::Index));
    }
    for path in untracked(root, &pathspecs)? {
        filters.push((path, LineFilter::new([1..=usize::MAX])));
    }
    filters.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((filters, Contents::WorkingTree))
}

/// Untracked files that are not ignored, under `pathspecs` (all when empty).
pub(crate) fn untracked(root: &Path, pathspecs: &[String]) -> Result<Vec<String>> {
    let mut ls = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
    ls.extend(pathspecs.iter().map(String::as_str));
    Ok(nul_separated(&git(root, &ls)?))
}

/// NUL-separated UTF-8 paths (others are skipped).
pub(crate) fn nul_separated(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_string))
        .collect()
}

/// The new text of `path`: `None` when it is gone, not a file, binary or not UTF-8.
pub(crate) fn read_source(root: &Path, path: &str, contents: Contents<'_>) -> Option<String> {
    let bytes = match contents {
        Contents::Memory(texts) => return texts.get(path).cloned(),
        Contents::WorkingTree => std::fs::read(root.join(path)).ok()?,
        Contents::Index => git(root, &["show", &format!(":{path}")]).ok()?,
    };
    text_of(bytes)
}

/// `bytes` as text: `None` when binary (a NUL byte) or not UTF-8.
pub(crate) fn text_of(bytes: Vec<u8>) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}
