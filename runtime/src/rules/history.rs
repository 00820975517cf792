//! Learning from history: lines that the repository's own fix commits removed, and a change that
//! brings one of them back (`history/reintroduced-fix`, citing the fix).
//!
//! Pure text in, findings out: the caller runs `git log` (see [`LOG_ARGS`]) and hands its output
//! to [`FixHistory::from_git_log`]. A commit counts as a fix when its subject says so
//! ([`is_fix_subject`]: fix, bug, regression, crash…). Of what it removed, only lines that say
//! something are kept ([`normalize`]: whitespace collapsed, at least [`MIN_CHARS`] characters, an
//! identifier and an operator or call; no comments, imports or lone brackets), and a line the same
//! commit also added back unchanged (code that moved) is not a fix's removal. The history is
//! small enough to cache as JSON (`.sift/cache/history-<HEAD>.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::finding::Finding;
use super::rule::Severity;

/// The rule id of findings from history.
pub const RULE_ID: &str = "history/reintroduced-fix";

/// The `git log` arguments whose output [`FixHistory::from_git_log`] reads (of the newest
/// [`MAX_COMMITS`] non-merge commits that may be fixes, the lines their patches removed).
pub const LOG_ARGS: &[&str] = &[
    "log",
    "--no-merges",
    "-n",
    "5000",
    // Only commits whose message may announce a fix get their patches read (OR of the patterns;
    // `is_fix_subject` then checks the subject itself).
    "-i",
    "--grep=fix",
    "--grep=bug",
    "--grep=regression",
    "--grep=crash",
    "--grep=incorrect",
    "--grep=wrong",
    "--format=%x00commit %H %s",
    "-p",
    "--unified=0",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
];

/// How many commits are mined (see [`LOG_ARGS`]).
pub const MAX_COMMITS: usize = 5000;

/// Normalised lines shorter than this are too common to mean anything.
pub const MIN_CHARS: usize = 16;

/// A fix commit, as cited by findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixCommit {
    /// The full commit id.
    pub id: String,
    /// Its subject line.
    pub subject: String,
}

/// What the repository's fix commits removed: normalised line → the newest fix that removed it
/// (index into `commits`) and the file it was removed from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixHistory {
    /// The fix commits that removed at least one kept line.
    pub commits: Vec<FixCommit>,
    /// Normalised removed line → (commit index, path).
    pub removed: BTreeMap<String, (usize, String)>,
}

/// Whether a commit subject announces a fix.
pub fn is_fix_subject(subject: &str) -> bool {
    let lower = subject.to_lowercase();
    lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        matches!(
            w,
            "fix"
                | "fixes"
                | "fixed"
                | "fixing"
                | "bug"
                | "bugs"
                | "bugfix"
                | "hotfix"
                | "regression"
                | "crash"
                | "crashes"
                | "incorrect"
                | "wrong"
        )
    })
}

/// A line as history compares it: whitespace collapsed; `None` for lines that say too little to
/// be recognised (short, comments, imports, brackets, no identifier or no operator or call).
pub fn normalize(line: &str) -> Option<String> {
    let collapsed = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() < MIN_CHARS {
        return None;
    }
    let comment = ["#", "//", "/*", "*", "--", "\"\"\"", "'''"];
    let import = ["import ", "from ", "use ", "package ", "#include", "require("];
    if comment.iter().any(|c| collapsed.starts_with(c))
        || import.iter().any(|c| collapsed.starts_with(c))
    {
        return None;
    }
    let has_identifier = collapsed.chars().any(|c| c.is_alphabetic());
    let has_logic = collapsed.chars().any(|c| "=<>!+-*/%&|^(".contains(c));
    (has_identifier && has_logic).then_some(collapsed)
}

impl FixHistory {
    /// Reads the output of `git log` with [`LOG_ARGS`] (newest first).
    pub fn from_git_log(text: &str) -> FixHistory {
        let mut history = FixHistory::default();
        for commit in text.split('\0').filter(|c| !c.trim().is_empty()) {
            let (header, body) = commit.split_once('\n').unwrap_or((commit, ""));
            let Some(rest) = header.strip_prefix("commit ") else { continue };
            let (id, subject) = rest.split_once(' ').unwrap_or((rest, ""));
            if !is_fix_subject(subject) {
                continue;
            }
            let mut removed: Vec<(String, String)> = Vec::new();
            let mut added: std::collections::HashSet<String> = Default::default();
            let mut path: Option<String> = None;
            for line in body.lines() {
                if let Some(p) = line.strip_prefix("--- ") {
                    path = p.strip_prefix("a/").map(str::to_string);
                } else if line.starts_with("+++ ") || line.starts_with("@@") {
                } else if let Some(old) = line.strip_prefix('-') {
                    if let (Some(p), Some(n)) = (&path, normalize(old)) {
                        removed.push((n, p.clone()));
                    }
                } else if let Some(new) = line.strip_prefix('+')
                    && let Some(n) = normalize(new)
                {
                    added.insert(n);
                }
            }
            let mut index = None;
            for (line, path) in removed.into_iter().filter(|(l, _)| !added.contains(l)) {
                // Newest first: an older fix of the same line keeps the newer citation.
                if history.removed.contains_key(&line) {
                    continue;
                }
                let i = *index.get_or_insert_with(|| {
                    history
                        .commits
                        .push(FixCommit { id: id.to_string(), subject: subject.to_string() });
                    history.commits.len() - 1
                });
                history.removed.insert(line, (i, path));
            }
        }
        history
    }

    /// The fix that removed a line like `line`, and the file it removed it from.
    pub fn fix_for(&self, line: &str) -> Option<(&FixCommit, &str)> {
        let (i, path) = self.removed.get(&normalize(line)?)?;
        Some((&self.commits[*i], path.as_str()))
    }

    /// Findings for the lines of `source` (1-based `lines`, the ones a change added) that a past
    /// fix removed.
    pub fn check(&self, path: &str, source: &str, lines: impl Fn(usize) -> bool) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut offset = 0;
        for (i, line) in source.split_inclusive('\n').enumerate() {
            let start = offset;
            offset += line.len();
            if !lines(i + 1) {
                continue;
            }
            let text = line.trim_end_matches(['\n', '\r']);
            let Some((fix, fixed_path)) = self.fix_for(text) else { continue };
            let indent = text.len() - text.trim_start().len();
            let short = &fix.id[..fix.id.len().min(10)];
            findings.push(Finding {
                rule: RULE_ID.to_string(),
                severity: Severity::Warning,
                confidence: 0.6,
                path: path.to_string(),
                start_line: i + 1,
                end_line: i + 1,
                start_col: text[..indent].chars().count() + 1,
                end_col: text.chars().count() + 1,
                start_byte: start + indent,
                end_byte: start + text.len(),
                message: format!(
                    "this line was removed by fix {short} (\"{}\") in {fixed_path}; is the bug back?",
                    fix.subject
                ),
                rationale: "The repository's own history: a commit that fixed a bug removed this \
                            code. Bringing it back often brings the bug back."
                    .to_string(),
                fix: None,
                fingerprint: super::finding::fingerprint(
                    RULE_ID,
                    path,
                    normalize(text).as_deref().unwrap_or(text),
                ),
            });
        }
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\0commit bbbb2222 Fix off-by-one in pagination\n\
diff --git a/app/page.py b/app/page.py\n\
--- a/app/page.py\n\
+++ b/app/page.py\n\
@@ -3 +3 @@\n\
-    last = first + size + 1\n\
+    last = first + size\n\
@@ -9 +9 @@\n\
-    moved_line = compute(a, b)\n\
+    moved_line = compute(a, b)\n\
\0commit aaaa1111 Add pagination\n\
diff --git a/app/page.py b/app/page.py\n\
--- a/app/page.py\n\
+++ b/app/page.py\n\
@@ -1 +1 @@\n\
-    total = count_rows(table) * 2\n\
+    total = count_rows(table)\n";

    #[test]
    fn fix_commits_are_mined_and_cited() {
        let h = FixHistory::from_git_log(LOG);
        assert_eq!(h.commits.len(), 1, "only the fix commit: {h:?}");
        assert_eq!(h.removed.len(), 1, "moved lines are not a fix's removal: {h:?}");
        let (fix, path) = h.fix_for("  last   = first + size + 1").unwrap();
        assert_eq!((fix.id.as_str(), path), ("bbbb2222", "app/page.py"));
        assert!(h.fix_for("    total = count_rows(table) * 2").is_none(), "not a fix commit");

        let source = "def page(first, size):\n    last = first + size + 1\n    return last\n";
        let found = h.check("app/page.py", source, |l| l == 2);
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!((f.rule.as_str(), f.start_line, f.start_col), (RULE_ID, 2, 5));
        assert_eq!(&source[f.start_byte..f.end_byte], "last = first + size + 1");
        assert!(
            f.message.contains("bbbb2222") && f.message.contains("off-by-one"),
            "{}",
            f.message
        );
        assert!(h.check("app/page.py", source, |l| l != 2).is_empty(), "only added lines");
    }

    #[test]
    fn subjects_and_lines_that_count() {
        assert!(is_fix_subject("Fixed #123 -- crash on empty input"));
        assert!(is_fix_subject("regression: sort order"));
        assert!(!is_fix_subject("Add prefix handling"));
        assert!(!is_fix_subject("Refactor the suffix table"));
        assert_eq!(normalize("  a  = b +  c * d_value "), Some("a = b + c * d_value".into()));
        for boring in ["}", "return x", "# x = compute(a, b) + 1", "import os.path as p_x", "else:"]
        {
            assert_eq!(normalize(boring), None, "{boring}");
        }
    }
}
