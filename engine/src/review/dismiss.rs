//! What people say of findings, recorded once for every front end: a finding dismissed as
//! wrong (or its dismissal forgotten), and a rule silenced in one file. The CLI (`sift
//! feedback`) and the language server (`sift.dismiss`, `sift.silence`) both call these, so a
//! dismissal means the same whoever made it.
//!
//! Dismissals are appended to `.sift/feedback/dismissed.jsonl` (the rules engine's log, see
//! `sift_runtime::rules::feedback`); a silence is an entry of `[rules.per_path_disable]` in
//! `.sift/review.toml`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sift_runtime::rules::config::silence_rule_in;
use sift_runtime::rules::feedback::{self, Dismissal, Feedback, Record};

use super::Result;
use super::settings::REVIEW_CONFIG;

/// The dismissals of the repository at `root` (its working tree's file).
pub fn dismissed(root: &Path) -> Result<Feedback> {
    Ok(Feedback::load(&feedback::dismissed_path(root))?)
}

/// Records that the finding `fingerprint` (of `rule`, in `path`) is wrong, with the user's
/// `reason`; returns the file it was recorded in.
pub fn dismiss(
    root: &Path,
    fingerprint: &str,
    rule: &str,
    path: &str,
    reason: Option<String>,
) -> Result<PathBuf> {
    let file = feedback::dismissed_path(root);
    let record = Record::Dismiss(Dismissal {
        fingerprint: fingerprint.to_owned(),
        rule: rule.to_owned(),
        path: path.to_owned(),
        time: feedback::rfc3339(SystemTime::now()),
        reason,
    });
    feedback::append(&file, &record)?;
    Ok(file)
}

/// Forgets the dismissal of `fingerprint`, so the finding is raised again. `false` when it was
/// not dismissed (nothing is written then).
pub fn forget(root: &Path, fingerprint: &str) -> Result<bool> {
    let file = feedback::dismissed_path(root);
    if !Feedback::load(&file)?.is_dismissed(fingerprint) {
        return Ok(false);
    }
    let record = Record::Forget {
        fingerprint: fingerprint.to_owned(),
        time: feedback::rfc3339(SystemTime::now()),
    };
    feedback::append(&file, &record)?;
    Ok(true)
}

/// Turns `rule` off for the file `path` in the repository's `.sift/review.toml`; `false` when
/// it was off there already.
pub fn silence(root: &Path, path: &str, rule: &str) -> Result<bool> {
    Ok(silence_rule_in(&root.join(REVIEW_CONFIG), path, rule)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dismissal_is_recorded_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!forget(root, "abc").unwrap(), "nothing to forget yet");
        let file = dismiss(root, "abc", "python/x", "a.py", Some("noise".into())).unwrap();
        assert!(file.ends_with(".sift/feedback/dismissed.jsonl"));
        let found = dismissed(root).unwrap();
        assert!(found.is_dismissed("abc"));
        assert_eq!(found.dismissed().next().unwrap().reason.as_deref(), Some("noise"));
        assert!(forget(root, "abc").unwrap());
        assert!(!dismissed(root).unwrap().is_dismissed("abc"));
    }

    #[test]
    fn a_silence_goes_to_review_toml_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(silence(dir.path(), "src/a.py", "python/x").unwrap());
        assert!(!silence(dir.path(), "src/a.py", "python/x").unwrap());
        let text = std::fs::read_to_string(dir.path().join(".sift/review.toml")).unwrap();
        assert!(text.contains("python/x") && text.contains("src/a.py"), "{text}");
    }
}
