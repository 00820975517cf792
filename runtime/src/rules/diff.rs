//! The lines a change added, read from a unified diff (`git diff --unified=0` or any `diff -u`).
//!
//! Pure text parsing: running git is the caller's business. Only the post-image matters: for
//! each file the diff leaves in place, the 1-based line numbers (in the new file) of the lines
//! it added. Deleted files (`+++ /dev/null`), binary files and files whose hunks only delete
//! lines have no added lines and are left out.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// One file of a diff that gained lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// The path of the new file, `/`-separated, without the `b/` prefix.
    pub path: String,
    /// The added lines of the new file, 1-based inclusive ranges, sorted and merged.
    pub added: Vec<RangeInclusive<usize>>,
}

/// Why a text is not a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a unified diff: {0}")]
pub struct DiffError(pub String);

/// Parses a unified diff into the files it adds lines to, in path order; a path that appears
/// more than once (concatenated diffs) is merged. An empty text is an empty change; a text with
/// content but no file header (`+++ …`) is an error. Git's `b/` prefix is removed from new paths
/// (as `patch -p1` would).
pub fn parse_unified_diff(text: &str) -> Result<Vec<ChangedFile>, DiffError> {
    let mut files: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    let mut saw_header = false;
    let mut current: Option<String> = None;
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if let Some(rest) = line.strip_prefix("+++ ") {
            saw_header = true;
            current = new_path(rest);
            continue;
        }
        if line.starts_with("diff ") {
            current = None;
            continue;
        }
        let Some(header) = line.strip_prefix("@@ ") else { continue };
        let (old_count, mut new_line, new_count) = parse_hunk_header(header)
            .ok_or_else(|| DiffError(format!("line {}: bad hunk header `{line}`", n + 1)))?;
        if !saw_header {
            return Err(DiffError(format!("line {}: a hunk before any `+++` header", n + 1)));
        }
        // With `--unified=0`, a hunk adding lines has exactly them; in general, walk its body.
        let (mut old_left, mut new_left) = (old_count, new_count);
        while old_left > 0 || new_left > 0 {
            let Some((_, body)) = lines.peek() else { break };
            match body.as_bytes().first() {
                Some(b'+') => {
                    if let Some(path) = &current {
                        push_line(files.entry(path.clone()).or_default(), new_line);
                    }
                    new_line += 1;
                    new_left = new_left.saturating_sub(1);
                }
                Some(b'-') => old_left = old_left.saturating_sub(1),
                Some(b' ') | None => {
                    new_line += 1;
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
                Some(b'\\') => {}
                Some(_) => break,
            }
            lines.next();
        }
    }
    if !text.trim().is_empty() && !saw_header && !text.lines().any(|l| l.starts_with("diff --git "))
    {
        return Err(DiffError("no file header (`+++ …`) found".into()));
    }
    Ok(files
        .into_iter()
        .filter(|(_, ranges)| !ranges.is_empty())
        .map(|(path, ranges)| ChangedFile {
            path,
            added: ranges.into_iter().map(|(a, b)| a..=b).collect(),
        })
        .collect())
}

/// Adds `line` to sorted ranges built in ascending order (merging runs).
fn push_line(ranges: &mut Vec<(usize, usize)>, line: usize) {
    match ranges.last_mut() {
        Some(last) if (last.0..=last.1).contains(&line) => {}
        Some(last) if line == last.1 + 1 => last.1 = line,
        _ => {
            ranges.push((line, line));
            ranges.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
            for &(a, b) in ranges.iter() {
                match merged.last_mut() {
                    Some(m) if a <= m.1 + 1 => m.1 = m.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            *ranges = merged;
        }
    }
}

/// `-a,b +c,d @@…` → (b, c, d); a missing count is 1.
fn parse_hunk_header(header: &str) -> Option<(usize, usize, usize)> {
    let mut parts = header.split_whitespace();
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let count = |spec: &str| -> Option<(usize, usize)> {
        match spec.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((spec.parse().ok()?, 1)),
        }
    };
    let (_, old_count) = count(old)?;
    let (new_start, new_count) = count(new)?;
    Some((old_count, new_start, new_count))
}

/// The path of a `+++` line: `None` for `/dev/null`; `b/` stripped; a trailing tab and
/// timestamp (`diff -u`) dropped; git's C-style quoting undone.
fn new_path(rest: &str) -> Option<String> {
    let rest = rest.split('\t').next().unwrap_or(rest).trim_end_matches('\r');
    let path = if rest.starts_with('"') { unquote(rest)? } else { rest.to_string() };
    if path == "/dev/null" {
        return None;
    }
    let path = path.strip_prefix("b/").map(str::to_string).unwrap_or(path);
    let path = path.strip_prefix("./").map(str::to_string).unwrap_or(path);
    (!path.is_empty()).then_some(path)
}

/// Undoes git's quoting of a path (`"a\tb\303\251"`).
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next()? {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'a' => bytes.push(7),
            b'b' => bytes.push(8),
            b'f' => bytes.push(12),
            b'v' => bytes.push(11),
            d @ b'0'..=b'7' => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    match chars.peek() {
                        Some(&o @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(o - b'0');
                            chars.next();
                        }
                        _ => break,
                    }
                }
                bytes.push(u8::try_from(value).ok()?);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_added_lines_of_zero_context_git_diff() {
        let diff = "\
diff --git a/src/a.py b/src/a.py
index 1..2 100644
--- a/src/a.py
+++ b/src/a.py
@@ -3,0 +4,2 @@ def f():
+x = 1
+y = 2
@@ -10 +12 @@
-old
+new
@@ -20,2 +21,0 @@
-gone
-gone
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git a/img.png b/img.png
Binary files a/img.png and b/img.png differ
diff --git a/x.py b/y.py
similarity index 90%
rename from x.py
rename to y.py
--- a/x.py
+++ b/y.py
@@ -2 +2 @@
-a = 1
+a = 2
";
        let files = parse_unified_diff(diff).unwrap();
        assert_eq!(
            files,
            vec![
                ChangedFile { path: "src/a.py".into(), added: vec![4..=5, 12..=12] },
                ChangedFile { path: "y.py".into(), added: vec![2..=2] },
            ]
        );
    }

    #[test]
    fn reads_context_diffs_and_odd_paths() {
        let diff = "\
--- a.py\t2020-01-01
+++ \"b/caf\\303\\251 x.py\"\t2020-01-02
@@ -1,3 +1,4 @@
 keep
-old
+new
+more
 keep
\\ No newline at end of file
";
        let files = parse_unified_diff(diff).unwrap();
        assert_eq!(files, vec![ChangedFile { path: "café x.py".into(), added: vec![2..=3] }]);
    }

    #[test]
    fn empty_is_no_change_and_prose_is_an_error() {
        assert_eq!(parse_unified_diff("").unwrap(), vec![]);
        assert!(parse_unified_diff("hello\nworld\n").is_err());
        assert!(parse_unified_diff("+++ b/a\n@@ nonsense @@\n").is_err());
    }
}
