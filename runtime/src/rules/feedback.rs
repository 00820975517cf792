//! Remembered dismissals: `.sift/feedback/dismissed.jsonl`, what people said was wrong.
//!
//! One JSON object per line, appended and never rewritten:
//!
//! ```json
//! {"kind":"dismiss","fingerprint":"0123456789abcdef","rule":"python/is-literal","path":"src/a.py","time":"2025-01-31T12:00:00Z","reason":"checked: interned"}
//! {"kind":"forget","fingerprint":"0123456789abcdef","time":"2025-02-01T09:30:00Z"}
//! ```
//!
//! A `dismiss` record hides every finding with that [fingerprint](super::Finding::fingerprint)
//! (the rule, the path and the flagged code, not its line): the same finding is not raised again
//! for that code, while a change to the code (or a move to another file) is reviewed afresh. A
//! later `forget` record undoes it. The file is committed with the repository, so that a
//! dismissal made in one editor holds in CI and for the whole team; `.sift/feedback/.gitattributes`
//! asks git to merge it as a union of lines, so concurrent dismissals on two branches never
//! conflict.
//!
//! Crash safety is the store's append-only log's ([`sift_indexer::store::jsonl`]): a record is one
//! `write` of a whole line under an exclusive lock, then `fsync`. A process killed mid-write
//! leaves at most one torn last line; readers skip lines that do not parse, and the next writer
//! starts on a fresh line, so a torn line never swallows a good one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sift_indexer::store::{JsonlLog, Replay, jsonl};

use super::error::{Result, ReviewError};

/// The folder under `.sift/` that holds feedback.
pub const FEEDBACK_DIR: &str = "feedback";
/// The file of dismissal records, in [`FEEDBACK_DIR`].
pub const DISMISSED_FILE: &str = "dismissed.jsonl";
/// What sift writes to `.sift/feedback/.gitattributes`: append-only files merge as a union.
pub const GITATTRIBUTES: &str = "# Written by sift: feedback files are append-only; merge them as a union of lines.\n*.jsonl merge=union\n";

/// The path of the dismissals file of the repository at `root`.
pub fn dismissed_path(root: &Path) -> PathBuf {
    super::FEEDBACK.path_in(root).join(DISMISSED_FILE)
}

/// One dismissed finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dismissal {
    /// The finding's fingerprint (16 hex digits).
    pub fingerprint: String,
    /// The rule that raised it.
    pub rule: String,
    /// Its file, relative to the repository root.
    pub path: String,
    /// When it was dismissed, RFC 3339 in UTC.
    pub time: String,
    /// Why, when someone said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One line of the feedback file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Record {
    /// A finding marked wrong: do not raise it again for that code.
    Dismiss(Dismissal),
    /// Undo an earlier dismissal of `fingerprint`.
    Forget {
        /// The fingerprint whose dismissal is forgotten.
        fingerprint: String,
        /// When, RFC 3339 in UTC.
        time: String,
    },
}

/// The dismissals in force: the records replayed in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Feedback {
    dismissed: BTreeMap<String, Dismissal>,
    /// Lines that did not parse (a torn write, a hand edit), skipped.
    pub skipped_lines: usize,
}

impl Feedback {
    /// Replays the lines of a feedback file; lines that do not parse are counted and skipped.
    pub fn parse(text: &str) -> Feedback {
        Feedback::replay(jsonl::parse(text.as_bytes()))
    }

    /// Reads the feedback file at `path`; a missing file holds no dismissal.
    pub fn load(path: &Path) -> Result<Feedback> {
        Ok(Feedback::replay(JsonlLog::<Record>::new(path).read()?))
    }

    fn replay(replay: Replay<Record>) -> Feedback {
        let mut feedback = Feedback { skipped_lines: replay.skipped, ..Feedback::default() };
        for record in replay.records {
            feedback.apply(record);
        }
        feedback
    }

    /// Applies one record, as [`Feedback::parse`] does for each line.
    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Dismiss(d) => {
                self.dismissed.insert(d.fingerprint.clone(), d);
            }
            Record::Forget { fingerprint, .. } => {
                self.dismissed.remove(&fingerprint);
            }
        }
    }

    /// Whether findings with `fingerprint` are dismissed.
    pub fn is_dismissed(&self, fingerprint: &str) -> bool {
        self.dismissed.contains_key(fingerprint)
    }

    /// The dismissal of `fingerprint`, when there is one.
    pub fn get(&self, fingerprint: &str) -> Option<&Dismissal> {
        self.dismissed.get(fingerprint)
    }

    /// The dismissals in force, by fingerprint.
    pub fn dismissed(&self) -> impl Iterator<Item = &Dismissal> {
        self.dismissed.values()
    }

    /// How many dismissals are in force.
    pub fn len(&self) -> usize {
        self.dismissed.len()
    }

    /// Whether no dismissal is in force.
    pub fn is_empty(&self) -> bool {
        self.dismissed.is_empty()
    }
}

/// Appends `record` to the feedback file at `path` (creating it, its folder and the folder's
/// `.gitattributes` when missing): one whole line, written under an exclusive lock and synced.
pub fn append(path: &Path, record: &Record) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|source| ReviewError::Io { path: dir.to_path_buf(), source })?;
        let attributes = dir.join(".gitattributes");
        if !attributes.exists() {
            sift_indexer::store::write_atomic(&attributes, GITATTRIBUTES.as_bytes())?;
        }
    }
    Ok(JsonlLog::new(path).append(record)?)
}

/// `time` as RFC 3339 in UTC, to the second (`2025-01-31T12:00:00Z`).
pub fn rfc3339(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dismissal(fp: &str) -> Record {
        Record::Dismiss(Dismissal {
            fingerprint: fp.into(),
            rule: "python/is-literal".into(),
            path: "a.py".into(),
            time: "2025-01-31T12:00:00Z".into(),
            reason: Some("fine here".into()),
        })
    }

    #[test]
    fn records_replay_in_order_and_forget_undoes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dismissed_path(dir.path());
        assert!(Feedback::load(&path).unwrap().is_empty());
        append(&path, &dismissal("aa")).unwrap();
        append(&path, &dismissal("bb")).unwrap();
        append(&path, &Record::Forget { fingerprint: "aa".into(), time: "t".into() }).unwrap();
        let feedback = Feedback::load(&path).unwrap();
        assert!(!feedback.is_dismissed("aa"));
        assert!(feedback.is_dismissed("bb"));
        assert_eq!(feedback.get("bb").unwrap().reason.as_deref(), Some("fine here"));
        let attributes = path.parent().unwrap().join(".gitattributes");
        assert!(std::fs::read_to_string(attributes).unwrap().contains("merge=union"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.starts_with("{\"kind\":\"dismiss\",\"fingerprint\":\"aa\""), "{text}");
    }

    #[test]
    fn a_torn_line_is_skipped_and_does_not_swallow_the_next_record() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dismissed_path(dir.path());
        append(&path, &dismissal("aa")).unwrap();
        // A writer killed mid-line.
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"kind\":\"dismiss\",\"finger").unwrap();
        drop(file);
        append(&path, &dismissal("cc")).unwrap();
        let feedback = Feedback::load(&path).unwrap();
        assert_eq!(feedback.skipped_lines, 1);
        assert!(feedback.is_dismissed("aa") && feedback.is_dismissed("cc"));
        assert_eq!(feedback.len(), 2);
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_738_324_800 + 3661);
        assert_eq!(rfc3339(t), "2025-01-31T13:01:01Z");
        let leap = UNIX_EPOCH + std::time::Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
